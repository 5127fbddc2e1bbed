//! Tests of the run planner on the shipped workspaces, compiled for sm_90 with NVRTC, and on
//! copies of them broken one field at a time.

use super::*;
use crate::compile::{Arch, Cache, Compiler};
use crate::run::protocol::{ArgSpec, BenchMode};
use crate::run::stats::StopRule;
use crate::workspace::{Arg, DType, Init, Tolerance};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub(super) const MI: usize = 1 << 20;

pub(super) struct Compiled {
    pub(super) ws: Workspace,
    pub(super) versions: Vec<CompiledVersion>,
}

pub(super) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn compiler() -> &'static Compiler {
    static C: OnceLock<Compiler> = OnceLock::new();
    C.get_or_init(|| Compiler::new(Arch::parse("sm_90").unwrap(), Cache::disabled()).unwrap())
}

/// A shipped workspace and its compiled versions, compiled once per test run.
pub(super) fn shipped(name: &str) -> &'static Compiled {
    static ALL: OnceLock<Vec<Compiled>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        ["elementwise-add", "gelu", "softmax"]
            .map(|n| {
                let path = repo().join(format!("workspaces/{n}.yaml"));
                let ws = crate::workspace::load(&path).unwrap();
                let versions = compiler().compile_workspace(&ws);
                assert!(versions.iter().all(|c| c.ok), "{n} compiles");
                Compiled { ws, versions }
            })
            .into()
    });
    all.iter().find(|c| c.ws.name == name).unwrap()
}

pub(super) fn opts() -> PlanOptions {
    PlanOptions {
        seed: 7,
        bench: BenchSpec {
            check: true,
            benchmark: true,
            mode: BenchMode::Cold,
            warmup_ms: 10.0,
            stop: StopRule::default(),
            watchdog_ms: 1000,
            rtol: None,
            atol: None,
            guard_bytes: None,
        },
    }
}

pub(super) fn arch() -> &'static ArchSpec {
    Arch::parse("sm_90").unwrap().spec()
}

/// Plans `version` at `size` in `ws`, with `version` edited by `edit` first.
pub(super) fn plan_edited(
    c: &Compiled,
    ws: &Workspace,
    version: &str,
    size: &str,
    edit: impl FnOnce(&mut Version),
) -> Result<RunJob, PlanError> {
    let i = ws.versions.iter().position(|v| v.name == version).unwrap();
    let mut v = ws.versions[i].clone();
    edit(&mut v);
    let size = ws.sizes.iter().find(|s| s.name == size).unwrap();
    let reference = match &ws.reference {
        Reference::Version(r) => ws.versions.iter().position(|v| &v.name == r),
        _ => None,
    }
    .map(|r| (&ws.versions[r], &c.versions[r]));
    plan_job(ws, &v, &c.versions[i], size, arch(), reference, 1, &opts())
}

pub(super) fn plan(ws: &str, version: &str, size: &str) -> Result<RunJob, PlanError> {
    let c = shipped(ws);
    plan_edited(c, &c.ws, version, size, |_| {})
}

pub(super) fn f(text: &str) -> Formula {
    Formula::parse(text).unwrap()
}

/// The launch problem of a failed plan, with the whole message checked for its context.
pub(super) fn launch_problem(r: Result<RunJob, PlanError>, context: &[&str]) -> LaunchProblem {
    let e = r.unwrap_err();
    let msg = e.to_string();
    for c in context {
        assert!(msg.contains(c), "`{c}` missing from: {msg}");
    }
    match e {
        PlanError::Launch { problem, .. } => *problem,
        other => panic!("not a launch error: {other}"),
    }
}

pub(super) fn bufs(names: &[&str]) -> Vec<ArgSpec> {
    names
        .iter()
        .map(|n| ArgSpec::Buffer(n.to_string()))
        .collect()
}

#[test]
fn plans_elementwise_add_v2_at_256mi() {
    let job = plan("elementwise-add", "v2", "256Mi").unwrap();
    assert_eq!(
        (job.id, job.version.as_str(), job.size.as_str(), job.seed),
        (1, "v2", "256Mi", 7)
    );
    let [l] = &job.program.launches[..] else {
        panic!()
    };
    assert_eq!(
        (l.entry.as_str(), l.grid, l.block),
        ("add_f32x4", [1048576, 1, 1], [64, 1, 1])
    );
    assert_eq!(l.dynamic_shared_bytes, 0);
    let mut args = bufs(&["a", "b", "c"]);
    args.push(ArgSpec::U32(268435456));
    assert_eq!(l.args, args);
    assert!(job.program.cubin.0.starts_with(b"\x7fELF"));
    let roles: Vec<_> = job
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.role, b.dtype))
        .collect();
    assert_eq!(
        roles,
        [
            ("a", Role::Input, DType::F32),
            ("b", Role::Input, DType::F32),
            ("c", Role::Output, DType::F32)
        ]
    );
    assert!(job.buffers.iter().all(|b| b.shape == [256 * MI]));
    assert_eq!(
        job.buffers[0].init,
        Init::Randn {
            mean: 0.0,
            std: 1.0
        }
    );
    assert_eq!(
        job.reference,
        ReferenceSpec::Expr {
            outputs: vec![("c".into(), "a + b".into())],
            vars: vec![("N".into(), 256 << 20)],
        }
    );
    assert_eq!((job.bench.rtol, job.bench.atol), (None, None));
    assert_eq!(device_bytes(&job), 3 << 30);
}

#[test]
fn plans_gelu_v1_nine_launches_with_scratch_and_f32_scalars() {
    let job = plan("gelu", "v1", "1Mi").unwrap();
    let entries: Vec<&str> = job
        .program
        .launches
        .iter()
        .map(|l| l.entry.as_str())
        .collect();
    assert_eq!(
        entries,
        [
            "mul",
            "mul",
            "mul_scalar",
            "add",
            "mul_scalar",
            "tanh_k",
            "add_scalar",
            "mul_scalar",
            "mul"
        ]
    );
    assert!(job
        .program
        .launches
        .iter()
        .all(|l| l.grid == [4096, 1, 1] && l.block == [256, 1, 1]));
    let scalars: Vec<&ArgSpec> = job.program.launches.iter().map(|l| &l.args[1]).collect();
    assert_eq!(scalars[2], &ArgSpec::F32(0.044715));
    assert_eq!(scalars[4], &ArgSpec::F32(0.79788456_f64 as f32));
    assert_eq!(scalars[6], &ArgSpec::F32(1.0));
    assert_eq!(scalars[7], &ArgSpec::F32(0.5));
    let mut tanh = bufs(&["t1", "t1"]);
    tanh.push(ArgSpec::U32(1 << 20));
    assert_eq!(job.program.launches[5].args, tanh);
    let roles: Vec<_> = job
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.role))
        .collect();
    let (i, o, s) = (Role::Input, Role::Output, Role::Scratch);
    assert_eq!(roles, [("x", i), ("y", o), ("t1", s), ("t2", s)]);
    assert_eq!(device_bytes(&job), (4 * 4) << 20);
    // The workspace's tolerance fills what the caller left open.
    assert_eq!((job.bench.rtol, job.bench.atol), (Some(1e-5), Some(1e-5)));
}

#[test]
fn plans_softmax_v1_with_scratch_rows() {
    let job = plan("softmax", "v1", "4096x1024").unwrap();
    let l = &job.program.launches[1];
    assert_eq!(
        (l.entry.as_str(), l.grid, l.block),
        ("exp_sum", [16, 1, 1], [256, 1, 1])
    );
    let mut args = bufs(&["x", "row_max", "y", "row_sum"]);
    args.extend([ArgSpec::U32(4096), ArgSpec::U32(1024)]);
    assert_eq!(l.args, args);
    let scratch: Vec<_> = (job.buffers.iter())
        .filter(|b| b.role == Role::Scratch)
        .map(|b| (b.name.as_str(), b.shape.clone()))
        .collect();
    assert_eq!(scratch, [("row_max", vec![4096]), ("row_sum", vec![4096])]);
    assert_eq!(job.buffers[0].shape, [4096, 1024]);
    let v2 = plan("softmax", "v2", "8192x4096").unwrap();
    assert_eq!(v2.program.launches[0].grid, [8192, 1, 1]);
    assert_eq!((v2.bench.rtol, v2.bench.atol), (Some(1e-5), Some(1e-6)));
}

#[test]
fn work_counts_bytes_with_each_versions_dtypes() {
    let c = shipped("elementwise-add");
    let (v1, v3) = (&c.ws.versions[0], &c.ws.versions[2]);
    let n = &c.ws.sizes[0];
    assert_eq!(
        work(&c.ws, v1, n).unwrap(),
        (Some(3 * MI as u64 * 4), Some(MI as u64))
    );
    assert_eq!(
        work(&c.ws, v3, n).unwrap(),
        (Some(3 * MI as u64 * 2), Some(MI as u64))
    );
    // Without a `bytes` formula, every non-scratch buffer once: gelu v1's t1 and t2 do not count.
    let g = shipped("gelu");
    let mut ws = g.ws.clone();
    ws.bytes = None;
    let (bytes, flops) = work(&ws, &ws.versions[0], &ws.sizes[1]).unwrap();
    assert_eq!(
        (bytes, flops),
        (Some(2 * 4 * 16 * MI as u64), Some(10 * 16 * MI as u64))
    );
    ws.flops = Some(f("N - 2 * N"));
    let e = work(&ws, &ws.versions[0], &ws.sizes[1]).unwrap_err();
    assert_eq!(e.field(), "flops");
    assert!(e.to_string().contains("expected a count from 0"), "{e}");
}

#[test]
fn reference_versions_share_the_buffers_and_tolerances_fall_back() {
    let c = shipped("elementwise-add");
    let mut ws = c.ws.clone();
    ws.reference = Reference::Version("v1".into());
    let job = plan_edited(c, &ws, "v2", "1Mi", |_| {}).unwrap();
    let ReferenceSpec::Version { name, program } = &job.reference else {
        panic!()
    };
    assert_eq!(
        (name.as_str(), program.launches[0].entry.as_str()),
        ("v1", "add_f32")
    );
    assert_eq!(program.launches[0].grid, [4096, 1, 1]);
    assert_eq!(
        device_bytes(&job),
        (4 * 4) << 20,
        "a, b, c and the reference's c"
    );
    let own = plan_edited(c, &ws, "v1", "1Mi", |_| {}).unwrap();
    assert_eq!(own.reference, ReferenceSpec::None);
    let e = plan_edited(c, &ws, "v3", "1Mi", |_| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains("sees buffer `a` as f32[1048576], this version as f16"),
        "{e}"
    );
    assert_eq!(e.field(), "reference");
    let size = &ws.sizes[0];
    let e = plan_job(
        &ws,
        &ws.versions[1],
        &c.versions[1],
        size,
        arch(),
        None,
        1,
        &opts(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("reference version `v1`: it was not given"),
        "{e}"
    );
    // Tolerances: the caller's, then the version's, then the workspace's, per field.
    ws.tolerance = Some(Tolerance {
        rtol: Some(1e-4),
        atol: Some(1e-4),
    });
    let edit = |v: &mut Version| {
        v.tolerance = Some(Tolerance {
            rtol: Some(1e-2),
            atol: None,
        })
    };
    let job = plan_edited(c, &ws, "v2", "1Mi", edit).unwrap();
    assert_eq!((job.bench.rtol, job.bench.atol), (Some(1e-2), Some(1e-4)));
    ws.reference = Reference::Npy(vec![("c".into(), PathBuf::from("/data/c.npy"))]);
    let job = plan_edited(c, &ws, "v2", "1Mi", |_| {}).unwrap();
    let outputs = vec![("c".to_string(), "/data/c.npy".to_string())];
    assert_eq!(job.reference, ReferenceSpec::Npy { outputs });
}

#[test]
fn errors_locate_themselves_in_the_workspace_file() {
    let c = shipped("gelu");
    let r = plan_edited(c, &c.ws, "v1", "1Mi", |v| {
        v.launches[2].args[1] = Arg::Buffer("x".into())
    });
    let e = r.unwrap_err();
    assert_eq!(e.field(), "versions.v1.launches[2].args[1]");
    let d = e.to_diagnostic(&c.ws);
    assert_eq!(d.file.as_deref(), Some(c.ws.path.as_path()));
    assert!(d.line.is_some(), "{d:?}");
    let mut broken = c.versions[1].clone();
    broken.ok = false;
    let v2 = &c.ws.versions[1];
    let e = plan_job(&c.ws, v2, &broken, &c.ws.sizes[0], arch(), None, 1, &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "version `v2`, size `1Mi`: it did not compile, so it cannot run"
    );
}
