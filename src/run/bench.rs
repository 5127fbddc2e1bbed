//! Timing a program on the GPU the way a kernel author can trust: CUDA events around the timed
//! region only, a warm-up by time, L2 flushed outside the timed region in cold mode, CUDA graphs
//! to take launch overhead out in graph mode, and a stopping rule on the standard error.

use super::device::{DevBuf, Event, Graph, Stream};
use super::program::Loaded;
use super::protocol::{BenchMode, BenchSpec};
use super::stats::{summarize, Running, Stats, StopReason};
use cudarc::driver::result::DriverError as CuError;
use std::time::Instant;

/// Launches captured per graph replay: enough that a replay lasts about this long.
const GRAPH_TARGET_MS: f64 = 1.0;
const GRAPH_MAX_LAUNCHES: usize = 1000;
/// Kernel time one sample should cover, and the most timed runs averaged into one sample.
const SAMPLE_TARGET_MS: f64 = 0.25;
const MAX_RUNS_PER_SAMPLE: usize = 32;

pub struct Timing {
    pub stats: Stats,
    pub stop: StopReason,
    /// Every sample, µs per run.
    pub samples: Vec<f64>,
}

/// Runs `program` until the stopping rule is met and returns per-run statistics in µs.
/// `flush` must be at least twice the L2 size for cold mode. `beat` is called often, so the
/// caller can tell the supervisor it is alive.
pub fn benchmark(
    program: &mut Loaded,
    s: &Stream,
    flush: &DevBuf,
    spec: &BenchSpec,
    beat: &mut dyn FnMut(),
) -> Result<Timing, CuError> {
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
        beat();
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
    let mut samples = Vec::new();
    let mut running = Running::new();
    let began = Instant::now();
    let mut flip = 0u8;
    let stop = loop {
        let us = match &graph {
            Some((g, per)) => {
                start.record(s)?;
                g.launch(s)?;
                end.record(s)?;
                start.elapsed_ms(&end)? * 1e3 / *per as f64
            }
            None => {
                for (a, b) in &pairs {
                    if spec.mode == BenchMode::Cold {
                        // Overwrite L2 with other data before the timed region, not inside it.
                        flip = flip.wrapping_add(1);
                        s.memset(flush, flip)?;
                    }
                    a.record(s)?;
                    program.enqueue(s)?;
                    b.record(s)?;
                }
                let mut runs = Vec::with_capacity(per_sample);
                for (a, b) in &pairs {
                    runs.push(a.elapsed_ms(b)? * 1e3);
                }
                interquartile_mean(&mut runs)
            }
        };
        samples.push(us);
        running.push(us);
        beat();
        if let Some(reason) = spec
            .stop
            .should_stop(&running, began.elapsed().as_secs_f64())
        {
            break reason;
        }
    };
    let stats = summarize(&samples).ok_or(CuError(
        cudarc::driver::sys::cudaError_enum::CUDA_ERROR_UNKNOWN,
    ))?;
    Ok(Timing {
        stats,
        stop,
        samples,
    })
}

/// The device's copy bandwidth: a large device-to-device copy, bytes read plus written, in
/// GB/s (median of several copies after a warm-up).
pub fn measure_copy_peak(s: &Stream, bytes: usize) -> Result<f64, CuError> {
    let a = DevBuf::alloc(bytes)?;
    let b = DevBuf::alloc(bytes)?;
    s.memset(&a, 1)?;
    let (start, end) = (Event::new()?, Event::new()?);
    let mut times = Vec::new();
    for i in 0..23 {
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
