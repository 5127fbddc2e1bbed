//! Shards for a cluster: `kwb batch --shard K/N` runs a fixed part of the jobs, and `kwb merge`
//! of every shard's JSON report gives the report of one whole run (every job once, in plan
//! order, the sweeps' best worked out over the whole). Real runs on the CPU backend.

mod support;

use kwb::report::BatchReport;

const WS: &str = "workspaces/elementwise-add.yaml";

/// (version, size, status, check passed) of each result, in order.
fn rows(r: &BatchReport) -> Vec<(String, String, String, Option<bool>)> {
    r.results
        .iter()
        .map(|x| {
            (
                x.version.clone(),
                x.size.clone(),
                format!("{:?}", x.status),
                x.check.as_ref().map(|c| c.passed),
            )
        })
        .collect()
}

/// A batch's JSON report: on the CPU, or on the GPU with `gpu`.
fn batch(gpu: bool, args: &[&str]) -> (i32, BatchReport, String) {
    if !gpu {
        return support::cpu_batch_json(args);
    }
    let mut all = vec!["batch", "--format", "json", "--seed", "7"];
    all.extend_from_slice(args);
    let (code, out, err) = support::run_kwb(&all);
    let report = kwb::report::json::from_json(&out)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{out}\n{err}"));
    (code, report, err)
}

/// The shard reports of `count` shards, written into `dir`.
fn shards(dir: &std::path::Path, count: u32, gpu: bool, args: &[&str]) -> Vec<String> {
    (0..count)
        .map(|k| {
            let shard = format!("{k}/{count}");
            let mut all = vec![WS, "--shard", &shard];
            all.extend_from_slice(args);
            let (code, report, err) = batch(gpu, &all);
            assert_eq!(code, kwb::exit::OK, "{err}");
            let mark = report
                .shard
                .as_ref()
                .expect("a shard report says which shard");
            assert_eq!((mark.index, mark.count), (k, count));
            let path = dir.join(format!("shard-{k}.json"));
            std::fs::write(&path, kwb::report::json::to_json(&report)).unwrap();
            path.display().to_string()
        })
        .collect()
}

/// For N = 1, 2, 3 and 8: the N shards together run every job once, and `kwb merge` of their
/// reports gives the whole run's (version, size, status, check) in plan order, and its sweeps.
fn merged_shards_are_the_whole_run_on(gpu: bool, args: &[&str]) {
    let mut whole_args = vec![WS];
    whole_args.extend_from_slice(args);
    let (code, whole, err) = batch(gpu, &whole_args);
    assert_eq!(code, kwb::exit::OK, "{err}");
    for count in [1, 2, 3, 8] {
        let dir = tempfile::tempdir().unwrap();
        let files = shards(dir.path(), count, gpu, args);
        let parts: usize = files
            .iter()
            .map(|f| {
                kwb::report::json::from_json(&std::fs::read_to_string(f).unwrap())
                    .unwrap()
                    .results
                    .len()
            })
            .sum();
        assert_eq!(
            parts,
            whole.results.len(),
            "{count} shards cover every job once"
        );
        let mut merge = vec!["merge", "--format", "json"];
        merge.extend(files.iter().map(String::as_str));
        let (code, out, err) = support::run_kwb(&merge);
        assert_eq!(code, kwb::exit::OK, "{err}");
        let merged = kwb::report::json::from_json(&out).unwrap();
        assert!(merged.shard.is_none());
        assert_eq!(rows(&merged), rows(&whole), "{count} shards");
        let parents = |r: &BatchReport| -> Vec<String> {
            r.sweeps
                .iter()
                .map(|s| format!("{} @ {}", s.parent, s.size))
                .collect()
        };
        assert_eq!(parents(&merged), parents(&whole), "{count} shards");
        println!("{count} shards merged: {} results, as one run", parts);
    }
}

#[test]
fn merged_shards_are_the_whole_run() {
    merged_shards_are_the_whole_run_on(false, &[]);
}

#[test]
#[ignore = "needs an NVIDIA GPU: the shards run on it"]
fn merged_shards_are_the_whole_run_on_a_gpu() {
    if kwb::run::gpu::open::gpu_or_skip("merged_shards_are_the_whole_run_on_a_gpu").is_none() {
        return;
    }
    merged_shards_are_the_whole_run_on(true, &["--sizes", "1Mi", "--max-time", "0.05"]);
}

#[test]
fn a_missing_or_repeated_shard_is_an_error_that_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let files = shards(dir.path(), 3, false, &[]);
    let (code, _, err) = support::run_kwb(&["merge", &files[0], &files[1]]);
    assert_eq!(code, kwb::exit::USAGE);
    assert!(err.contains("shard 2 of 3 is missing"), "{err}");
    let (code, _, err) = support::run_kwb(&["merge", &files[0], &files[1], &files[1], &files[2]]);
    assert_eq!(code, kwb::exit::USAGE);
    assert!(err.contains("are both shard 1"), "{err}");
    let (code, _, err) = support::run_kwb(&["batch", WS, "--cpu", "--shard", "3/3"]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("0 <= K < N"), "{err}");
}
