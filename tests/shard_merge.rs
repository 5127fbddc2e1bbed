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

/// The shard reports of `count` shards, written into `dir`.
fn shards(dir: &std::path::Path, count: u32) -> Vec<String> {
    (0..count)
        .map(|k| {
            let (code, report, err) =
                support::cpu_batch_json(&[WS, "--shard", &format!("{k}/{count}")]);
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

#[test]
fn merged_shards_are_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let (code, whole, err) = support::cpu_batch_json(&[WS]);
    assert_eq!(code, kwb::exit::OK, "{err}");
    let files = shards(dir.path(), 3);
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
        "the shards cover every job once"
    );
    let mut args = vec!["merge", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let (code, out, err) = support::run_kwb(&args);
    assert_eq!(code, kwb::exit::OK, "{err}");
    let merged = kwb::report::json::from_json(&out).unwrap();
    assert!(merged.shard.is_none());
    assert_eq!(rows(&merged), rows(&whole));
    let parents = |r: &BatchReport| -> Vec<String> {
        r.sweeps
            .iter()
            .map(|s| format!("{} @ {}", s.parent, s.size))
            .collect()
    };
    assert_eq!(parents(&merged), parents(&whole));
}

#[test]
fn a_missing_or_repeated_shard_is_an_error_that_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let files = shards(dir.path(), 3);
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
