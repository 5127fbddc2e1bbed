//! Timing a program on the GPU the way a kernel author can trust: the kernels' own GPU
//! timestamps from CUPTI (CUDA events where CUPTI is missing, labelled so), events kept as a
//! second figure, a warm-up by time, L2 flushed outside the timed region in cold mode, CUDA
//! graphs to take launch overhead out in graph mode, and a stopping rule on the standard error.

use super::cupti::{cupti, Trace};
use super::device::{DevBuf, Event, Graph, Stream};
use super::kernel_span::{run_spans, KernelRecord, RunTags, RunTime, NOT_TIMED};
use super::program::Loaded;
use crate::common::stats::{summarize, Running, Stats, StopReason, Timer};
use crate::run::protocol::{BenchMode, BenchSpec};
use cudarc::driver::result::DriverError as CuError;
use std::time::{Duration, Instant};

/// Launches captured per graph replay: enough that a replay lasts about this long.
const GRAPH_TARGET_MS: f64 = 1.0;
const GRAPH_MAX_LAUNCHES: usize = 1000;
/// Kernel time one sample should cover, and the most timed runs averaged into one sample.
const SAMPLE_TARGET_MS: f64 = 0.25;
const MAX_RUNS_PER_SAMPLE: usize = 32;

pub struct Timing {
    /// With `timer`, `event_median_us` and (with CUPTI) `busy_median_us` filled in.
    pub stats: Stats,
    pub stop: StopReason,
    /// Every sample, µs per run, as timed by `stats.timer`.
    pub samples: Vec<f64>,
    /// Why CUPTI did not time this benchmark, when it did not.
    pub fallback: Option<String>,
}

/// The kernels' clock: a CUPTI trace while it works; once it fails (or when there is no
/// CUPTI) the reason, and the benchmark goes on with events.
struct KernelClock {
    trace: Option<Trace>,
    why_not: Option<String>,
}

impl KernelClock {
    fn start() -> KernelClock {
        match cupti().and_then(|c| c.start()) {
            Ok(t) => KernelClock {
                trace: Some(t),
                why_not: None,
            },
            Err(why) => KernelClock {
                trace: None,
                why_not: Some(why),
            },
        }
    }

    /// The correlation id of the launch just made (0 when unknown or not tracing).
    fn tag(&self) -> u32 {
        self.trace.as_ref().map_or(0, Trace::last_correlation)
    }

    /// Each run's GPU time, once the runs have finished; `None` (and events from now on) when
    /// the records do not account for every launch.
    fn runs(&mut self, tags: &[RunTags]) -> Option<Vec<RunTime>> {
        let trace = self.trace.as_ref()?;
        let mut records: Vec<KernelRecord> = Vec::new();
        let mut result = Err(String::new());
        // Records can trail the synchronize by a moment: one more look before giving up.
        for attempt in 0..3 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
            match trace.collect() {
                Ok(more) => records.extend(more),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            result = run_spans(tags, &records).map_err(|e| e.to_string());
            if result.is_ok() {
                break;
            }
        }
        match result {
            Ok(times) => Some(times),
            Err(why) => {
                self.trace = None;
                self.why_not = Some(format!("CUPTI records unusable: {why}"));
                None
            }
        }
    }
}

/// Runs `program` until the stopping rule is met and returns per-run statistics in µs.
/// `flush` clears L2 before each run in cold mode. `beat` is called often, so the
/// caller can tell the supervisor it is alive; when it returns false (the job was cancelled)
/// the benchmark stops and returns `None`.
pub fn benchmark(
    program: &mut Loaded<'_>,
    s: &Stream,
    flush: &crate::run::gpu::flush::L2Flush,
    spec: &BenchSpec,
    beat: &mut dyn FnMut() -> bool,
) -> Result<Option<Timing>, CuError> {
    let (start, end) = (Event::new()?, Event::new()?);
    // Warm-up by time: caches, clocks and lazy module loading settle before anything counts.
    let warm = Instant::now();
    let mut warm_runs = 0usize;
    let mut last_ms = 0.0;
    while warm_runs == 0 || warm.elapsed().as_secs_f64() * 1e3 < spec.warmup_ms {
        start.record(s)?;
        program.enqueue(s)?;
        end.record(s)?;
        last_ms = start.elapsed_ms(&end)?;
        warm_runs += 1;
        if !beat() {
            return Ok(None);
        }
    }

    let graph = match spec.mode {
        BenchMode::Graph => {
            let per = ((GRAPH_TARGET_MS / last_ms.max(1e-6)).ceil() as usize)
                .clamp(1, GRAPH_MAX_LAUNCHES);
            let g = Graph::capture(s, || {
                for _ in 0..per {
                    program.enqueue(s)?;
                }
                Ok(())
            })?;
            Some((g, per))
        }
        _ => None,
    };

    // Events resolve about half a microsecond, a few percent of a 30 µs kernel. So a sample is
    // the mean of `per_sample` timed runs (each with its own events, and in cold mode its own
    // flush), sized so a sample covers at least SAMPLE_TARGET_MS of kernel time.
    let per_sample =
        ((SAMPLE_TARGET_MS / last_ms.max(1e-6)).ceil() as usize).clamp(1, MAX_RUNS_PER_SAMPLE);
    let pairs: Vec<(Event, Event)> = (0..per_sample)
        .map(|_| Ok((Event::new()?, Event::new()?)))
        .collect::<Result<_, CuError>>()?;
    let launches = program.launches();
    let mut clock = KernelClock::start();
    let mut event_samples = Vec::new();
    let mut gpu_samples = Vec::new();
    let mut busy_samples = Vec::new();
    let mut running = Running::new();
    let began = Instant::now();
    let stop = loop {
        let (event_us, gpu) = match &graph {
            Some((g, per)) => {
                start.record(s)?;
                g.launch(s)?;
                let tag = clock.tag();
                end.record(s)?;
                // A replay is one run: its own id, or (matched by order) all its kernels.
                let run = if tag == 0 {
                    vec![0; per * launches]
                } else {
                    vec![tag]
                };
                let per = *per as f64;
                let event_us = start.elapsed_ms(&end)? * 1e3 / per;
                let gpu = clock.runs(&[run]).and_then(|t| {
                    let t = t.first()?;
                    Some((t.span_us / per, t.busy_us / per))
                });
                (event_us, gpu)
            }
            None => {
                let mut tags: Vec<RunTags> = Vec::with_capacity(per_sample);
                for (a, b) in &pairs {
                    let mut run = Vec::with_capacity(launches + 1);
                    if spec.mode == BenchMode::Cold {
                        // Fill L2 with other data before the timed region, not inside it. The
                        // flush is a kernel CUPTI records too: its slot is marked untimed.
                        flush.run(s)?;
                        if flush.reads() {
                            run.push(NOT_TIMED);
                        }
                    }
                    a.record(s)?;
                    program.enqueue_each(s, || run.push(clock.tag()))?;
                    b.record(s)?;
                    tags.push(run);
                }
                let mut runs = Vec::with_capacity(per_sample);
                for (a, b) in &pairs {
                    runs.push(a.elapsed_ms(b)? * 1e3);
                }
                let gpu = clock.runs(&tags).map(|t| {
                    let mut spans: Vec<f64> = t.iter().map(|r| r.span_us).collect();
                    let mut busy: Vec<f64> = t.iter().map(|r| r.busy_us).collect();
                    (
                        interquartile_mean(&mut spans),
                        interquartile_mean(&mut busy),
                    )
                });
                (interquartile_mean(&mut runs), gpu)
            }
        };
        event_samples.push(event_us);
        match gpu {
            Some((span, busy)) => {
                gpu_samples.push(span);
                busy_samples.push(busy);
                running.push(span);
            }
            None if !gpu_samples.is_empty() => {
                // CUPTI failed part-way: the whole benchmark is events from here on.
                gpu_samples.clear();
                busy_samples.clear();
                running = event_samples.iter().copied().collect();
            }
            None => running.push(event_us),
        }
        if !beat() {
            return Ok(None);
        }
        if let Some(reason) = spec
            .stop
            .should_stop(&running, began.elapsed().as_secs_f64())
        {
            break reason;
        }
    };
    drop(clock.trace.take());
    let unknown = || CuError(cudarc::driver::sys::cudaError_enum::CUDA_ERROR_UNKNOWN);
    let events = summarize(&event_samples).ok_or_else(unknown)?;
    let (timer, samples) = if gpu_samples.is_empty() {
        (Timer::Events, event_samples)
    } else {
        (Timer::Cupti, gpu_samples)
    };
    let mut stats = summarize(&samples).ok_or_else(unknown)?;
    stats.timer = Some(timer);
    stats.event_median_us = Some(events.median_us);
    stats.busy_median_us = summarize(&busy_samples).map(|b| b.median_us);
    Ok(Some(Timing {
        stats,
        stop,
        samples,
        fallback: clock.why_not,
    }))
}

/// The device's copy bandwidth: a large device-to-device copy, bytes read plus written, in
/// GB/s (median of several copies after a warm-up), each from a cold L2 where `flush` is given.
pub fn measure_copy_peak(
    s: &Stream,
    bytes: usize,
    flush: Option<&crate::run::gpu::flush::L2Flush>,
) -> Result<f64, CuError> {
    let a = DevBuf::alloc(bytes)?;
    let b = DevBuf::alloc(bytes)?;
    s.memset(&a, 1)?;
    let (start, end) = (Event::new()?, Event::new()?);
    let mut times = Vec::new();
    for i in 0..23 {
        if let Some(f) = flush {
            f.run(s)?;
        }
        start.record(s)?;
        s.copy(&b, &a, bytes)?;
        end.record(s)?;
        let ms = start.elapsed_ms(&end)?;
        if i >= 3 {
            times.push(ms);
        }
    }
    times.sort_by(f64::total_cmp);
    let median_s = times[times.len() / 2] / 1e3;
    Ok(2.0 * bytes as f64 / median_s / 1e9)
}

/// The mean of the middle half of `runs` (all of them when there are fewer than four): it
/// averages away the events' half-microsecond resolution like a mean, and leaves out the
/// occasional slow launch like a median, so a sample estimates the typical run.
fn interquartile_mean(runs: &mut [f64]) -> f64 {
    runs.sort_by(f64::total_cmp);
    let n = runs.len();
    let (lo, hi) = if n >= 4 { (n / 4, n - n / 4) } else { (0, n) };
    let mid = &runs[lo..hi];
    mid.iter().sum::<f64>() / mid.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::interquartile_mean;

    #[test]
    fn the_interquartile_mean_drops_the_tails_and_averages_the_rest() {
        let mut runs = vec![7.0, 7.5, 7.0, 30.0, 7.5, 6.0, 7.0, 7.5];
        // Sorted: 6, 7, 7, 7, 7.5, 7.5, 7.5, 30; the middle half is 7, 7, 7.5, 7.5.
        assert_eq!(interquartile_mean(&mut runs), 7.25);
        assert_eq!(interquartile_mean(&mut [2.0, 4.0]), 3.0);
        assert_eq!(interquartile_mean(&mut [5.0]), 5.0);
    }
}
