//! The CPU side keeps the GPU's limits: under `kwb batch --cpu`, a launch that never ends (a
//! CUDA kernel of 391 CTAs in the PTX emulator, a tile kernel in the interpreter) is stopped by
//! the per-launch wall-clock watchdog (`--watchdog-ms`) and reported with the timeout status,
//! as a hung kernel on a GPU is; the run goes on to the next version.

mod support;

use kwb::report::Status;

#[test]
fn endless_kernels_time_out_on_both_cpu_engines() {
    let start = std::time::Instant::now();
    let (code, report, err) =
        support::cpu_batch_json(&["tests/fixtures/hang/hang.yaml", "--watchdog-ms", "1500"]);
    let took = start.elapsed();
    assert_eq!(report.results.len(), 2, "{err}");
    for r in &report.results {
        assert_eq!(
            r.status,
            Status::Timeout,
            "{}: {:?}\n{err}",
            r.version,
            r.message
        );
        let message = r.message.as_deref().unwrap_or("");
        assert!(
            message.contains("ran past its watchdog of 1500 ms"),
            "{}: {message}",
            r.version
        );
    }
    let tile = report.results.iter().find(|r| r.version == "tile").unwrap();
    assert!(
        tile.message.as_deref().unwrap_or("").contains("spin.py:10"),
        "the interpreter names the loop's line: {:?}",
        tile.message
    );
    assert_ne!(code, kwb::exit::OK, "{err}");
    // Not a timing assertion (CI machines are noisy): what it took, for the log. Before the
    // watchdog, the emulator's per-CTA budget let this launch run for minutes.
    println!("two endless launches with a 1.5 s watchdog took {took:?} in all");
}
