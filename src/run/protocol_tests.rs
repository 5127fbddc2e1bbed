//! Tests of the worker protocol: framing, every message round-tripping, the version check, and
//! the ways a stream can break (cut short, oversized, garbage, a worker that dies mid-job).

use super::*;
use std::io::Cursor;

pub(crate) fn job() -> RunJob {
    RunJob {
        id: 7,
        version: "v2".into(),
        size: "16Mi".into(),
        program: Program {
            cubin: Blob(vec![0x7f, b'E', b'L', b'F', 0, 255]),
            launches: vec![LaunchSpec {
                entry: "add_f32x4".into(),
                grid: [65536, 1, 1],
                block: [64, 1, 1],
                dynamic_shared_bytes: 0,
                args: vec![
                    ArgSpec::Buffer("a".into()),
                    ArgSpec::I32(16 << 20),
                    ArgSpec::F32(0.5),
                    ArgSpec::U64(u64::MAX),
                ],
                programs: Some(4096),
                tensor_maps: vec![TensorMapSpec {
                    buffer: "a".into(),
                    elem_bytes: 2,
                    dims: vec![4096, 4096],
                    strides: vec![8192],
                    box_dims: vec![64, 128],
                    swizzle: 128,
                }],
            }],
        },
        buffers: vec![BufferSpec {
            name: "a".into(),
            dtype: DType::F16,
            shape: vec![16 << 20],
            init: Init::Uniform {
                low: -1.0,
                high: 1.0,
            },
            role: Role::Input,
            initialized: false,
        }],
        reference: ReferenceSpec::Expr {
            outputs: vec![("c".into(), "a + b".into())],
            vars: vec![("N".into(), 16 << 20)],
        },
        seed: 42,
        bench: BenchSpec {
            check: true,
            benchmark: true,
            mode: BenchMode::Cold,
            warmup_ms: 25.0,
            stop: StopRule::default(),
            watchdog_ms: 10_000,
            rtol: None,
            atol: Some(1e-3),
            guard_bytes: Some(4096),
        },
    }
}

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(msg: &T) {
    let mut buf = Vec::new();
    write_frame(&mut buf, msg).unwrap();
    let len = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
    assert_eq!(len, buf.len() - 4, "length prefix counts the body");
    let back: T = read_frame(&mut Cursor::new(buf)).unwrap();
    assert_eq!(&back, msg);
}

#[test]
fn every_message_round_trips() {
    round_trip(&Request::Hello { protocol: PROTOCOL });
    round_trip(&Request::Device { ordinal: 1 });
    round_trip(&Request::Run(Box::new(job())));
    round_trip(&Request::Shutdown);
    round_trip(&Reply::Hello {
        protocol: PROTOCOL,
        kwb_version: "0.1.0".into(),
    });
    round_trip(&Reply::Phase {
        id: 7,
        phase: Phase::Benchmarking,
    });
    round_trip(&Reply::Heartbeat { id: 7 });
    round_trip(&Reply::Fault {
        id: 7,
        error: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
    });
    round_trip(&Reply::Error {
        id: Some(7),
        message: "out of memory: needs 3.0 GiB, 1.2 GiB free".into(),
    });
    round_trip(&Reply::Done(Box::new(JobOutcome {
        samples_us: vec![1.5, 2.5],
        id: 7,
        check: None,
        timing: None,
        stop: None,
        error: None,
    })));
}

#[test]
fn a_job_from_an_older_supervisor_has_no_guard_field_and_still_decodes() {
    let mut old = serde_json::to_value(Request::Run(Box::new(job()))).unwrap();
    let bench = old["bench"].as_object_mut().unwrap();
    assert_eq!(bench.remove("guard_bytes"), Some(serde_json::json!(4096)));
    let Request::Run(back) = serde_json::from_value(old).unwrap() else {
        panic!("not a run request");
    };
    assert_eq!(back.bench.guard_bytes, None);
    let mut default = job();
    default.bench.guard_bytes = None;
    let text = serde_json::to_string(&Request::Run(Box::new(default))).unwrap();
    assert!(!text.contains("guard_bytes"), "{text}");
}

#[test]
fn frames_follow_each_other_on_one_stream() {
    let mut buf = Vec::new();
    write_frame(&mut buf, &Request::Hello { protocol: PROTOCOL }).unwrap();
    write_frame(&mut buf, &Request::Shutdown).unwrap();
    let mut r = Cursor::new(buf);
    assert_eq!(
        read_frame::<_, Request>(&mut r).unwrap(),
        Request::Hello { protocol: PROTOCOL }
    );
    assert_eq!(read_frame::<_, Request>(&mut r).unwrap(), Request::Shutdown);
    assert!(matches!(
        read_frame::<_, Request>(&mut r),
        Err(ProtocolError::Closed)
    ));
}

#[test]
fn handshake_accepts_the_same_version_and_names_a_mismatch() {
    let mut reply = Vec::new();
    write_frame(
        &mut reply,
        &Reply::Hello {
            protocol: PROTOCOL,
            kwb_version: "9.9.9".into(),
        },
    )
    .unwrap();
    let mut sent = Vec::new();
    assert_eq!(
        handshake(&mut Cursor::new(reply), &mut sent).unwrap(),
        "9.9.9"
    );
    let hello: Request = read_frame(&mut Cursor::new(sent)).unwrap();
    assert_eq!(hello, Request::Hello { protocol: PROTOCOL });

    let mut reply = Vec::new();
    write_frame(
        &mut reply,
        &Reply::Hello {
            protocol: PROTOCOL + 1,
            kwb_version: "2.0.0".into(),
        },
    )
    .unwrap();
    let err = handshake(&mut Cursor::new(reply), &mut Vec::new()).unwrap_err();
    assert!(
        matches!(err, ProtocolError::VersionMismatch { ours: PROTOCOL, theirs } if theirs == PROTOCOL + 1)
    );
    assert!(err.to_string().contains("protocol 2"), "{err}");
}

#[test]
fn broken_streams_are_errors_not_panics() {
    // Cut inside the length prefix, inside the body, an absurd length, and a body of garbage.
    let mut full = Vec::new();
    write_frame(&mut full, &Request::Run(Box::new(job()))).unwrap();
    let cut = |n: usize| read_frame::<_, Request>(&mut Cursor::new(full[..n].to_vec()));
    assert!(matches!(
        cut(2),
        Err(ProtocolError::Truncated {
            expected: 4,
            got: 2
        })
    ));
    assert!(matches!(
        cut(40),
        Err(ProtocolError::Truncated { got: 36, .. })
    ));
    let huge = (u32::MAX).to_le_bytes().to_vec();
    assert!(matches!(
        read_frame::<_, Request>(&mut Cursor::new(huge)),
        Err(ProtocolError::TooLarge(_))
    ));
    let mut garbage = 5u32.to_le_bytes().to_vec();
    garbage.extend_from_slice(b"{nope");
    assert!(matches!(
        read_frame::<_, Request>(&mut Cursor::new(garbage)),
        Err(ProtocolError::Decode(_))
    ));
}

#[test]
fn a_worker_that_dies_mid_job_reads_as_closed_or_truncated() {
    // A real child process that answers hello, starts a reply frame and dies.
    let mut hello = Vec::new();
    write_frame(
        &mut hello,
        &Reply::Hello {
            protocol: PROTOCOL,
            kwb_version: "x".into(),
        },
    )
    .unwrap();
    // POSIX printf takes octal escapes.
    let octal: String = hello.iter().map(|b| format!("\\{b:03o}")).collect();
    let script = format!("dd bs=1 count=4 of=/dev/null 2>/dev/null; printf '{octal}'; printf '\\020\\000\\000\\000{{\"type\"'; exit 3");
    let mut child = std::process::Command::new("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let mut out = child.stdout.take().unwrap();
    let mut inp = child.stdin.take().unwrap();
    assert_eq!(handshake(&mut out, &mut inp).unwrap(), "x");
    let err = read_frame::<_, Reply>(&mut out).unwrap_err();
    assert!(
        matches!(
            err,
            ProtocolError::Truncated {
                expected: 16,
                got: 7
            }
        ),
        "{err}"
    );
    assert!(matches!(
        read_frame::<_, Reply>(&mut out),
        Err(ProtocolError::Closed)
    ));
    assert_eq!(child.wait().unwrap().code(), Some(3));
}
