//! The PTX emulator's findings, end to end through `kwb batch --cpu`: one faulty kernel per
//! kind of bug (tests/emu/faults.cu), each reported with the right kind at the source line
//! marked `FAULT`, with its CTA, thread and PTX line; and the version with an unwritten tail
//! caught by the check.

mod support;

use kwb::report::{json::from_json, Status};

/// The line of `faults.cu`, in kernel `entry`, whose comment says `FAULT <kind>`.
fn fault_line(entry: &str, kind: &str) -> u32 {
    let text = std::fs::read_to_string(support::repo().join("tests/emu/faults.cu")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&format!("void {entry}(")))
        .unwrap_or_else(|| panic!("no kernel {entry}"));
    let at = (start..lines.len())
        .find(|&i| lines[i].contains(&format!("// FAULT {kind}")))
        .unwrap_or_else(|| panic!("no FAULT {kind} marker in {entry}"));
    at as u32 + 1
}

#[test]
fn each_fault_is_reported_with_its_kind_and_source_line() {
    support::provision_nvrtc();
    let (code, out, err) = support::run_kwb(&[
        "batch",
        "--cpu",
        "tests/emu/faults.yaml",
        "--format",
        "json",
        "--seed",
        "3",
    ]);
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let report = from_json(&out).unwrap_or_else(|e| panic!("{e}:\n{out}\n{err}"));
    let cases = [
        (
            "past_end",
            "out-of-bounds",
            "write of 4 bytes at byte 4000 of `c`, just past its end",
        ),
        (
            "before_start",
            "out-of-bounds",
            "read of 4 bytes at 4 bytes before the start of `a`",
        ),
        ("misaligned", "misaligned", "read of 16 bytes at address"),
        ("shared_race", "shared-race", "shared memory"),
        (
            "uninit_shared",
            "uninit-shared",
            "that no thread has written since the launch",
        ),
        (
            "divergent_barrier",
            "divergent-barrier",
            "reached by 128 of 256 threads",
        ),
        (
            "partial_mask",
            "shuffle-mask",
            "is not in its member mask 0x0000ffff",
        ),
    ];
    for (version, kind, words) in cases {
        let r = report
            .results
            .iter()
            .find(|r| r.version == version)
            .unwrap_or_else(|| panic!("no result for {version}"));
        assert_eq!(r.status, Status::CheckFailed, "{version}: {:?}", r.message);
        let line = fault_line(version, kind);
        let f = r
            .findings
            .iter()
            .find(|f| f.kind == kind && f.line == Some(line))
            .unwrap_or_else(|| {
                panic!(
                    "{version}: no {kind} finding at line {line}: {:#?}",
                    r.findings
                )
            });
        assert!(f.message.contains(words), "{version}: {}", f.message);
        assert!(
            f.file
                .as_deref()
                .is_some_and(|p| p.ends_with("tests/emu/faults.cu")),
            "{f}"
        );
        assert!(
            f.cta.is_some() && f.thread.is_some() && f.ptx_line.is_some(),
            "{f}"
        );
    }
    let tail = report
        .results
        .iter()
        .find(|r| r.version == "unwritten_tail")
        .unwrap();
    assert_eq!(tail.status, Status::CheckFailed);
    assert!(tail.findings.is_empty(), "{:?}", tail.findings);
    assert!(
        tail.message
            .as_deref()
            .unwrap_or("")
            .contains("5 of 1000 elements were never written"),
        "{:?}",
        tail.message
    );
}
