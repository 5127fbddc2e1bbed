//! Tests of launch planning: argument binding against real PTX parameter lists, and every
//! launch limit, on the shipped workspaces broken one field at a time and on one-file
//! workspaces around kernels/tests and tests/fixtures/ptx/params_mix.cu (mangled, narrow and
//! struct parameters). Helpers come from the planner's own tests (src/run/plan/plan_tests.rs).

use super::{ArgProblem, LaunchProblem};
use crate::run::plan::tests::{
    arch, compiler, f, launch_problem, opts, plan_edited, repo, shipped,
};
use crate::run::plan::{plan_job, PlanError};
use crate::run::protocol::{ArgSpec, ReferenceSpec, RunJob};
use crate::workspace::{Arg, Buffer, DType, Init, Launch, ProblemSize, Workspace};

#[test]
fn wrong_argument_count_lists_the_parameters() {
    let c = shipped("elementwise-add");
    let r = plan_edited(c, &c.ws, "v1", "1Mi", |v| {
        v.launches[0].args.pop();
    });
    let ctx = [
        "version `v1`",
        "size `1Mi`",
        "launch 0 `add_f32`",
        "(versions.v1.args)",
    ];
    let p = launch_problem(r, &ctx);
    assert!(matches!(p, LaunchProblem::ArgCount { given: 3, ref params } if params.len() == 4));
    assert_eq!(
        p.to_string(),
        "3 arguments given, but the kernel takes 4: (.u64 add_f32_param_0, .u64 add_f32_param_1, \
         .u64 add_f32_param_2, .u32 add_f32_param_3)"
    );
}

#[test]
fn arguments_are_checked_against_parameter_types() {
    let c = shipped("elementwise-add");
    let with_n = |arg: Arg| plan_edited(c, &c.ws, "v1", "1Mi", |v| v.launches[0].args[3] = arg);
    let arg_problem = |r, ctx: &[&str]| match launch_problem(r, ctx) {
        LaunchProblem::Arg {
            index: 3, problem, ..
        } => problem,
        other => panic!("{other}"),
    };
    let ctx = [
        "(versions.v1.args[3])",
        "argument `a` for parameter 3 (`.u32 add_f32_param_3`)",
    ];
    assert_eq!(
        arg_problem(with_n(Arg::Buffer("a".into())), &ctx),
        ArgProblem::BufferNeedsPointer
    );
    let ctx = ["0.5 is not a whole number"];
    assert_eq!(
        arg_problem(with_n(Arg::Scalar(f("N / N / 2"))), &ctx),
        ArgProblem::NotIntegral(0.5)
    );
    let big = arg_problem(with_n(Arg::Scalar(f("4 * 1Gi"))), &["4294967296 is out of"]);
    assert!(matches!(big, ArgProblem::OutOfRange { range, .. } if range.ends_with(" 4294967295")));
    // `.u32` is what NVRTC makes of C `int`: negative values pass, as I32.
    let neg = with_n(Arg::Scalar(f("-1"))).unwrap();
    assert_eq!(neg.program.launches[0].args[3], ArgSpec::I32(-1));
    let whole = with_n(Arg::Scalar(f("N / 4"))).unwrap();
    assert_eq!(whole.program.launches[0].args[3], ArgSpec::U32(1 << 18));
    // A buffer where a pointer goes is fine; so is a number in a 64-bit slot.
    let r = plan_edited(c, &c.ws, "v1", "1Mi", |v| {
        v.launches[0].args[2] = Arg::Scalar(f("N"))
    });
    assert_eq!(
        r.unwrap().program.launches[0].args[2],
        ArgSpec::U64(1 << 20)
    );
}

#[test]
fn launch_configurations_are_held_to_the_limits() {
    let c = shipped("elementwise-add");
    let with =
        |edit: fn(&mut Launch)| plan_edited(c, &c.ws, "v1", "1Mi", |v| edit(&mut v.launches[0]));
    let p = launch_problem(
        with(|l| l.block[0] = f("2048")),
        &["(versions.v1.block)", "1 to 1024"],
    );
    assert!(matches!(
        p,
        LaunchProblem::TooManyThreads {
            threads: 2048,
            limit: 1024,
            ..
        }
    ));
    let p = launch_problem(
        with(|l| l.grid[0] = f("N - N")),
        &["grid.x is 0", "at least 1"],
    );
    assert!(matches!(p, LaunchProblem::ZeroDim { ref what } if what == "grid.x"));
    let p = launch_problem(
        with(|l| l.grid[1] = f("65536")),
        &["grid.y is 65536, above the limit of 65535"],
    );
    assert!(matches!(
        p,
        LaunchProblem::DimTooLarge {
            value: 65536,
            limit: 65535,
            ..
        }
    ));
    let p = launch_problem(
        with(|l| l.block = [f("1"), f("1"), f("128")]),
        &["block.z is 128"],
    );
    assert!(matches!(p, LaunchProblem::DimTooLarge { limit: 64, .. }));
    let p = launch_problem(with(|l| l.grid[0] = f("M")), &["cannot evaluate grid.x"]);
    assert!(matches!(p, LaunchProblem::Eval { .. }));
    let p = launch_problem(
        with(|l| l.shared = f("227Ki + 1")),
        &["above sm_90's limit of 232448 bytes"],
    );
    assert!(matches!(
        p,
        LaunchProblem::SharedMemory {
            dynamic: 232449,
            static_bytes: 0,
            ..
        }
    ));
    assert_eq!(
        with(|l| l.shared = f("227Ki")).unwrap().program.launches[0].dynamic_shared_bytes,
        232448
    );
    let p = launch_problem(
        with(|l| l.entry = "nope".into()),
        &["entries there: add_f32"],
    );
    assert!(matches!(p, LaunchProblem::Params(_)));
}

/// A one-file workspace around tests/fixtures/ptx/params_mix.cu or kernels/tests/*.cu.
fn kernel_file(file: &str, launch: (&str, &str, &str, Vec<Arg>)) -> Result<RunJob, PlanError> {
    kernel_file_needing(file, launch, &[])
}

/// `kernel_file`, its compile saying (as a tile version's does) that kernels need this much
/// dynamic shared memory.
fn kernel_file_needing(
    file: &str,
    launch: (&str, &str, &str, Vec<Arg>),
    tile_dynamic: &[(&str, u64)],
) -> Result<RunJob, PlanError> {
    let ws = Workspace::for_kernel_file(&repo().join(file)).unwrap();
    let mut v = ws.versions[0].clone();
    let mut compiled = compiler().compile_version(Some(&ws), &v);
    compiled.tile_dynamic_shared = (tile_dynamic.iter())
        .map(|(k, b)| (k.to_string(), *b))
        .collect();
    assert!(compiled.ok, "{:?}", compiled.diagnostics);
    let x = Buffer {
        name: "x".into(),
        dtype: DType::F32,
        shape: vec![f("N")],
        init: Init::DEFAULT,
        output: true,
        init_given: false,
    };
    v.buffers.push(x);
    let (entry, block, shared, args) = launch;
    v.launches.push(Launch {
        entry: entry.into(),
        grid: [f("1"), f("1"), f("1")],
        block: [f(block), f("1"), f("1")],
        shared: f(shared),
        args,
        field: "versions.k".into(),
    });
    let size = ProblemSize {
        name: "1Ki".into(),
        vars: vec![("N".into(), 1024)],
        emulate: false,
    };
    plan_job(&ws, &v, &compiled, &size, arch(), None, 2, &opts())
}

#[test]
fn static_shared_memory_and_launch_bounds_count() {
    let file = "kernels/tests/shared_and_barriers.cu";
    let args = || vec![Arg::Buffer("x".into()), Arg::Scalar(f("N"))];
    let ok = kernel_file(file, ("smem_user", "256", "227Ki - 4Ki", args())).unwrap();
    assert_eq!(ok.reference, ReferenceSpec::None);
    let e = kernel_file(file, ("smem_user", "256", "227Ki - 4Ki + 1", args())).unwrap_err();
    assert!(
        e.to_string()
            .contains("228353 bytes of dynamic plus 4096 of static"),
        "{e}"
    );
    let e = kernel_file(file, ("bounded", "256", "0", args())).unwrap_err();
    assert!(
        e.to_string()
            .contains("the kernel's `__launch_bounds__` allows 1 to 128"),
        "{e}"
    );
    assert!(kernel_file(file, ("bounded", "128", "0", args())).is_ok());
}

#[test]
fn a_tile_kernels_ring_bytes_raise_the_dynamic_shared_memory() {
    let file = "kernels/tests/shared_and_barriers.cu";
    let args = || vec![Arg::Buffer("x".into()), Arg::Scalar(f("N"))];
    let need = [("smem_user", 96 * 1024)];
    let dynamic = |shared: &str| {
        let job = kernel_file_needing(file, ("smem_user", "256", shared, args()), &need).unwrap();
        job.program.launches[0].dynamic_shared_bytes
    };
    // The larger of what `shared:` says and what the kernel's rings need.
    assert_eq!(dynamic("0"), 96 * 1024);
    assert_eq!(dynamic("100Ki"), 100 * 1024);
    // The need counts against the opt-in limit like any dynamic shared memory.
    let too_much = [("smem_user", 227 * 1024)];
    let e = kernel_file_needing(file, ("smem_user", "256", "0", args()), &too_much).unwrap_err();
    assert!(e.to_string().contains("232448 bytes of dynamic"), "{e}");
    // Another kernel's need does not count.
    let other = [("bounded", 96 * 1024)];
    let job = kernel_file_needing(file, ("smem_user", "256", "0", args()), &other).unwrap();
    assert_eq!(job.program.launches[0].dynamic_shared_bytes, 0);
}

#[test]
fn mangled_narrow_and_struct_parameters() {
    let file = "tests/fixtures/ptx/params_mix.cu";
    let x = || Arg::Buffer("x".into());
    let scale = "_Z5scaleIfEvPT_PKS0_S0_x";
    let job = kernel_file(
        file,
        (
            scale,
            "32",
            "0",
            vec![x(), x(), Arg::Scalar(f("2.5")), Arg::Scalar(f("N"))],
        ),
    );
    let args = &job.unwrap().program.launches[0].args;
    assert_eq!(args[2..], [ArgSpec::F32(2.5), ArgSpec::U64(1024)]);
    let mut nine = vec![x()];
    nine.extend((0..8).map(|_| Arg::Scalar(f("1"))));
    let e = kernel_file(file, ("mixed", "32", "0", nine)).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("8- and 16-bit parameters are not supported yet"),
        "{e}"
    );
    let e = kernel_file(
        file,
        ("grid_const", "32", "0", vec![Arg::Scalar(f("1")), x()]),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("struct (by-value aggregate) parameters are not supported yet"),
        "{e}"
    );
}

#[test]
fn tensor_maps_take_their_extents_from_the_arguments_and_refuse_unaligned_rows() {
    use super::tensor_map;
    use crate::tile::{Extent, TensorMapParam};
    // a, b, M, N, K as the launch binds them; the map reads B (K x N) by 64 x 64 boxes.
    let args = [
        ArgSpec::Buffer("a".into()),
        ArgSpec::Buffer("b".into()),
        ArgSpec::I32(1000),
        ArgSpec::I32(1000),
        ArgSpec::U32(72),
    ];
    let m = TensorMapParam {
        base: 1,
        elem_bytes: 2,
        dims: vec![Extent::Arg(3), Extent::Arg(4)],
        strides: vec![Extent::Arg(3)],
        box_dims: vec![64, 64],
        swizzle: 128,
    };
    let spec = tensor_map(&m, &args).unwrap();
    assert_eq!(spec.buffer, "b");
    assert_eq!(spec.dims, vec![1000, 72]);
    assert_eq!(spec.strides, vec![2000]);
    assert_eq!((spec.box_dims.clone(), spec.swizzle), (vec![64, 64], 128));
    // N = 45: rows 90 bytes apart, which TMA cannot address.
    let mut odd = args.clone();
    odd[3] = ArgSpec::I32(45);
    let e = tensor_map(&m, &odd).unwrap_err().to_string();
    assert_eq!(
        e,
        "the tensor descriptor on `b` (a TMA copy): a row stride of 90 bytes; TMA needs a \
         positive multiple of 16 below 2^40"
    );
    // An extent of 0, and a base that is not a buffer.
    let mut empty = args.clone();
    empty[4] = ArgSpec::I32(0);
    let e = tensor_map(&m, &empty).unwrap_err().to_string();
    assert!(e.contains("an extent of 0"), "{e}");
    let not_buffer = TensorMapParam { base: 2, ..m };
    let e = tensor_map(&not_buffer, &args).unwrap_err().to_string();
    assert!(e.contains("its base is not a buffer"), "{e}");
}
