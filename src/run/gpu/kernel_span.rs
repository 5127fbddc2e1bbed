//! From CUPTI's kernel records to the time of each timed run, without a GPU.
//!
//! One timed run of a version is one or more kernel launches. CUPTI reports each kernel with
//! the GPU's own start and end timestamps (the clock Nsight Compute reads) and the correlation
//! id of the API call that launched it. A run's time is its span: the first kernel's start to
//! the last kernel's end, so the gaps between the kernels of an unfused version count, and
//! nothing else enqueued between runs (the cold-mode L2 flush, a memset) does, because only
//! the run's own launches are matched. The matching is here, apart from the FFI, so it is
//! tested with made-up records.

/// One kernel as CUPTI saw it. Timestamps are nanoseconds on the GPU's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRecord {
    /// The launching API call's correlation id (for a graph: the graph launch's).
    pub correlation: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The launches of one timed run: each launch's correlation id, 0 where it is unknown.
pub type RunTags = Vec<u32>;

/// One run as the GPU saw it, in µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunTime {
    /// First kernel's start to last kernel's end: the run's time.
    pub span_us: f64,
    /// The kernels' own durations, summed: the span less the gaps between kernels.
    pub busy_us: f64,
}

/// Why records could not be matched to runs; the caller falls back to events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("no kernel record for launch {launch} of run {run} (correlation id {correlation})")]
    Missing {
        run: usize,
        launch: usize,
        correlation: u32,
    },
    #[error("{got} kernel records for {expected} launches")]
    Count { expected: usize, got: usize },
    #[error("a kernel record ends before it starts")]
    Backwards,
}

/// Each run's span (and busy time), in the order of `runs`. With every correlation id known, records are
/// matched by id (others are ignored, and one id may own several kernels: a graph replay);
/// otherwise by order: the records, sorted by start, must be exactly the runs' launches.
/// A launch of a run that is not part of its time (the cold-L2 flush kernel before it): its
/// record is matched by position, like the others, and left out.
pub const NOT_TIMED: u32 = u32::MAX;

pub fn run_spans(runs: &[RunTags], records: &[KernelRecord]) -> Result<Vec<RunTime>, MatchError> {
    if records.iter().any(|r| r.end_ns < r.start_ns) {
        return Err(MatchError::Backwards);
    }
    let by_id = (runs.iter().flatten())
        .filter(|id| **id != NOT_TIMED)
        .all(|id| *id != 0);
    if by_id {
        runs.iter()
            .enumerate()
            .map(|(run, tags)| {
                let mut own = Vec::new();
                for (launch, id) in tags.iter().enumerate() {
                    if *id == NOT_TIMED {
                        continue;
                    }
                    let before = own.len();
                    own.extend(records.iter().filter(|r| r.correlation == *id).copied());
                    if own.len() == before {
                        return Err(MatchError::Missing {
                            run,
                            launch,
                            correlation: *id,
                        });
                    }
                }
                Ok(time_of(&own))
            })
            .collect()
    } else {
        let expected: usize = runs.iter().map(Vec::len).sum();
        if records.len() != expected {
            return Err(MatchError::Count {
                expected,
                got: records.len(),
            });
        }
        let mut sorted = records.to_vec();
        sorted.sort_by_key(|r| (r.start_ns, r.end_ns));
        let mut at = 0;
        Ok(runs
            .iter()
            .map(|tags| {
                let all = sorted.get(at..at + tags.len()).unwrap_or(&[]);
                at += tags.len();
                let own: Vec<KernelRecord> = (all.iter().zip(tags))
                    .filter(|(_, t)| **t != NOT_TIMED)
                    .map(|(r, _)| *r)
                    .collect();
                time_of(&own)
            })
            .collect())
    }
}

/// The span and busy time of one run's kernel records.
fn time_of(own: &[KernelRecord]) -> RunTime {
    let start = own.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end = own.iter().map(|r| r.end_ns).max().unwrap_or(start);
    RunTime {
        span_us: end.saturating_sub(start) as f64 / 1e3,
        busy_us: own
            .iter()
            .map(|r| r.end_ns.saturating_sub(r.start_ns) as f64 / 1e3)
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(correlation: u32, start_ns: u64, end_ns: u64) -> KernelRecord {
        KernelRecord {
            correlation,
            start_ns,
            end_ns,
        }
    }

    fn spans(runs: &[RunTags], records: &[KernelRecord]) -> Result<Vec<f64>, MatchError> {
        run_spans(runs, records).map(|v| v.iter().map(|t| t.span_us).collect())
    }

    #[test]
    fn a_single_launch_run_is_its_kernels_duration() {
        let runs = vec![vec![11], vec![13]];
        let records = [rec(13, 20_000, 24_580), rec(11, 10_000, 14_500)];
        assert_eq!(spans(&runs, &records), Ok(vec![4.5, 4.58]));
    }

    #[test]
    fn a_multi_launch_run_spans_first_start_to_last_end_gaps_included() {
        // Two unfused kernels of 3 µs each with a 1 µs gap: the run took 7 µs, not 6.
        let runs = vec![vec![5, 6]];
        let records = [rec(5, 1_000, 4_000), rec(6, 5_000, 8_000)];
        assert_eq!(
            run_spans(&runs, &records),
            Ok(vec![RunTime {
                span_us: 7.0,
                busy_us: 6.0
            }])
        );
    }

    #[test]
    fn records_of_other_calls_do_not_count() {
        // Correlation 9 is something else on the stream (say a flush kernel between runs).
        let runs = vec![vec![5], vec![7]];
        let records = [
            rec(5, 1_000, 2_000),
            rec(9, 2_100, 90_000),
            rec(7, 90_100, 91_100),
        ];
        assert_eq!(spans(&runs, &records), Ok(vec![1.0, 1.0]));
    }

    #[test]
    fn a_graph_replay_owns_every_kernel_with_its_id() {
        let runs = vec![vec![40]];
        let records = [
            rec(40, 0, 1_000),
            rec(40, 1_200, 2_000),
            rec(40, 2_100, 3_000),
        ];
        assert_eq!(spans(&runs, &records), Ok(vec![3.0]));
    }

    #[test]
    fn a_missing_record_is_an_error_not_a_short_time() {
        let runs = vec![vec![5, 6]];
        let err = spans(&runs, &[rec(5, 0, 1_000)]).unwrap_err();
        assert_eq!(
            err,
            MatchError::Missing {
                run: 0,
                launch: 1,
                correlation: 6
            }
        );
        assert_eq!(
            err.to_string(),
            "no kernel record for launch 1 of run 0 (correlation id 6)"
        );
    }

    #[test]
    fn a_flush_kernel_before_each_run_is_matched_and_left_out() {
        // Cold mode: flush, then one timed kernel, twice; by order and by id.
        let by_order = vec![vec![NOT_TIMED, 0], vec![NOT_TIMED, 0]];
        let records = [
            rec(0, 0, 5_000),       // flush
            rec(0, 6_000, 8_000),   // kernel: 2 µs
            rec(0, 9_000, 14_000),  // flush
            rec(0, 15_000, 18_000), // kernel: 3 µs
        ];
        assert_eq!(spans(&by_order, &records), Ok(vec![2.0, 3.0]));
        let by_id = vec![vec![NOT_TIMED, 7], vec![NOT_TIMED, 9]];
        let records = [
            rec(6, 0, 5_000),
            rec(7, 6_000, 8_000),
            rec(8, 9_000, 14_000),
            rec(9, 15_000, 18_000),
        ];
        assert_eq!(spans(&by_id, &records), Ok(vec![2.0, 3.0]));
    }

    #[test]
    fn without_ids_records_are_matched_by_order() {
        let runs = vec![vec![0, 0], vec![0, 0]];
        let records = [
            rec(0, 10_000, 12_000),
            rec(0, 0, 1_000),
            rec(0, 2_000, 3_000),
            rec(0, 12_500, 13_000),
        ];
        assert_eq!(spans(&runs, &records), Ok(vec![3.0, 3.0]));
        assert_eq!(
            spans(&runs, &records[..3]),
            Err(MatchError::Count {
                expected: 4,
                got: 3
            })
        );
    }

    #[test]
    fn backwards_records_are_refused() {
        assert_eq!(
            spans(&[vec![1]], &[rec(1, 5, 4)]),
            Err(MatchError::Backwards)
        );
    }
}
