//! Sweeps at load time: a swept version expands into one version per combination, named after
//! its values in axis order (first axis slowest); bad sweeps are errors that point at their
//! field, line and column.

mod support;

use kwb::workspace::{load_str, AxisKind, ProblemSize, Workspace, WorkspaceError};

const HEAD: &str = "\
name: t
sizes:
  - {name: small, N: 1000, emulate: true}
  - {name: mid, N: 1Mi}
  - {name: big, N: 16Mi}
buffers:
  a: {dtype: f32, shape: [N]}
  c: {dtype: f32, shape: [N], output: true}
reference:
  expr: {c: a}
versions:
";

fn load(versions: &str) -> Result<Workspace, WorkspaceError> {
    // Relative kernel paths resolve against workspaces/, like a shipped workspace's.
    let path = support::repo().join("workspaces/sweep-test.yaml");
    load_str(&path, &format!("{HEAD}{versions}"))
}

fn errors(versions: &str) -> Vec<String> {
    load(versions)
        .expect_err("expected errors")
        .diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}:{} {} {}",
                d.line.unwrap_or(0),
                d.column.unwrap_or(0),
                d.field.clone().unwrap_or_default(),
                d.message
            )
        })
        .collect()
}

fn names(ws: &Workspace) -> Vec<&str> {
    ws.versions.iter().map(|v| v.name.as_str()).collect()
}

const TILE: &str = "  s:
    file: ../kernels/softmax/v8_chunked.tile
    entry: softmax_chunked
    constexprs: {BLOCK: 1024}
    num_warps: 4
    grid: N // 100
    args: [a, c, 10, N]
";

#[test]
fn two_axes_expand_in_axis_order_with_the_values_put_in() {
    let ws = load(&format!(
        "{TILE}    sweep: {{num_warps: [4, 8, 16], BLOCK: [1024, 2048]}}\n  plain:\n    file: ../kernels/softmax/v5.tile\n    entry: softmax_row\n    constexprs: {{BLOCK: 1024}}\n    grid: 1\n    args: [a, c, 1, N]\n"
    ))
    .unwrap();
    assert_eq!(
        names(&ws),
        [
            "s[num_warps=4,BLOCK=1024]",
            "s[num_warps=4,BLOCK=2048]",
            "s[num_warps=8,BLOCK=1024]",
            "s[num_warps=8,BLOCK=2048]",
            "s[num_warps=16,BLOCK=1024]",
            "s[num_warps=16,BLOCK=2048]",
            "plain",
        ]
    );
    let v = &ws.versions[3];
    assert_eq!(v.num_warps.as_ref().unwrap().text, "8");
    assert_eq!(v.constexprs[0].1.formula().unwrap().text, "2048");
    assert_eq!(v.field, "versions.s");
    assert_eq!(v.family(), "s");
    let point = v.sweep.as_ref().unwrap();
    assert_eq!(point.parent, "s");
    assert_eq!(
        point.values,
        [
            ("num_warps".into(), "8".into()),
            ("BLOCK".into(), "2048".into())
        ]
    );
    assert_eq!(ws.versions[6].sweep, None);
    assert_eq!(ws.versions[6].family(), "plain");
    let sweep = ws.sweep("s").unwrap();
    assert_eq!(sweep.configs.len(), 6);
    assert_eq!(sweep.axes[0].kind, AxisKind::NumWarps);
    assert_eq!(sweep.axes[1].kind, AxisKind::Constexpr);
    assert_eq!(sweep.axes[1].default.as_deref(), Some("1024"));
    // The version's own values are a configuration: the default at every size.
    let small = &ws.sizes[0];
    assert_eq!(sweep.default_at(small), Some(0));
    assert!(ws.sweep("plain").is_none());
}

const ADD: &str = "  add:
    file: ../kernels/elementwise-add/v1_f32.cu
    entry: add_f32
    block: 256 * (1 + int(N > 64Ki)) * (1 + int(N > 4Mi))
    grid: cdiv(N, block)
    args: [a, a, c, N]
";

#[test]
fn a_block_sweep_puts_the_block_into_the_grid_and_the_rule_picks_by_size() {
    let ws = load(&format!(
        "{ADD}    sweep: {{block: [128, 256, 512, 1024, 2048]}}\n"
    ))
    .unwrap();
    assert_eq!(
        names(&ws),
        [
            "add[block=128]",
            "add[block=256]",
            "add[block=512]",
            "add[block=1024]",
            "add[block=2048]"
        ]
    );
    let l = &ws.versions[2].launches[0];
    assert_eq!(l.block[0].text, "512");
    assert_eq!(l.grid[0].text, "cdiv(N, (512))");
    let vars = [("N".to_string(), 1024)];
    let env = kwb::workspace::SizeEnv::vars(&vars);
    assert_eq!(l.grid[0].eval_int(&env).unwrap(), 2);
    // The guide's rule as the version's own block: 256 up to 64Ki elements, 512 up to 4Mi.
    let sweep = ws.sweep("add").unwrap();
    let at = |i: usize| sweep.default_at(&ws.sizes[i]).map(|c| &sweep.configs[c]);
    assert_eq!(at(0).map(String::as_str), Some("add[block=256]"));
    assert_eq!(at(1).map(String::as_str), Some("add[block=512]"));
    assert_eq!(at(2).map(String::as_str), Some("add[block=1024]"));
    // A rule that picks a value that is not swept marks no configuration.
    let narrow = load(&format!("{ADD}    sweep: {{block: [128]}}\n")).unwrap();
    let s = narrow.sweep("add").unwrap();
    assert_eq!(s.default_at(&narrow.sizes[2]), None);
    assert_eq!(
        s.default_values_at(&narrow.sizes[2]),
        [("block".to_string(), "1024".to_string())]
    );
}

#[test]
fn a_single_value_axis_is_one_configuration() {
    let ws = load(&format!("{ADD}    sweep: {{block: [256]}}\n")).unwrap();
    assert_eq!(names(&ws), ["add[block=256]"]);
}

#[test]
fn a_variable_of_the_expressions_and_a_define_can_be_swept() {
    let ws = load(
        "  add:
    file: ../kernels/elementwise-add/v1_f32.cu
    entry: add_f32
    defines: {UNROLL: 1}
    block: TPB
    grid: cdiv(N, TPB * PER)
    args: [a, a, c, N]
    sweep: {TPB: [128, 256], PER: [1], UNROLL: [1, 4]}
",
    )
    .unwrap();
    assert_eq!(ws.versions.len(), 4);
    assert_eq!(ws.versions[3].name, "add[TPB=256,PER=1,UNROLL=4]");
    assert_eq!(
        ws.versions[3].launches[0].grid[0].text,
        "cdiv(N, (256) * (1))"
    );
    assert_eq!(ws.versions[3].defines, [("UNROLL".into(), "4".into())]);
    let kinds: Vec<AxisKind> = ws.sweeps[0].axes.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, [AxisKind::Var, AxisKind::Var, AxisKind::Define]);
    // A variable has no default of the version's own, so no configuration is the rule's.
    let size = ProblemSize {
        name: "x".into(),
        vars: vec![("N".into(), 4)],
        emulate: false,
    };
    assert_eq!(ws.sweeps[0].default_at(&size), None);
}

#[test]
fn an_empty_axis_is_an_error_at_its_field() {
    let e = errors(&format!("{ADD}    sweep: {{block: []}}\n"));
    assert_eq!(
        e,
        ["18:20 versions.add.sweep.block `block` has no values to sweep; give a list such as `[128, 256]`"]
    );
}

#[test]
fn an_unknown_axis_is_an_error_with_a_suggestion() {
    let e = errors(&format!("{ADD}    sweep: {{blokc: [128]}}\n"));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("18:20 versions.add.sweep.blokc unknown sweep name `blokc`"),
        "{e:?}"
    );
    assert!(e[0].ends_with("did you mean `block`?"), "{e:?}");
    let e = errors(&format!("{TILE}    sweep: {{BLOKC: [1024]}}\n"));
    assert!(e[0].ends_with("did you mean `BLOCK`?"), "{e:?}");
    // Nothing close: the names it could sweep are listed.
    let e = errors(&format!("{TILE}    sweep: {{zzz: [1]}}\n"));
    assert!(
        e[0].ends_with("it can sweep: num_warps, persistent, BLOCK"),
        "{e:?}"
    );
}

#[test]
fn bad_values_and_misplaced_axes_are_errors() {
    let e = errors(&format!("{TILE}    sweep: {{num_warps: [4, 3, 4]}}\n"));
    assert_eq!(
        e,
        [
            "19:28 versions.s.sweep.num_warps[1] `num_warps` must be a power of two from 1 to 32, got 3",
            "19:31 versions.s.sweep.num_warps[2] `4` is listed twice in `num_warps`",
        ]
    );
    let e = errors(&format!("{ADD}    sweep: {{N: [1, 2]}}\n"));
    assert!(e[0].contains("`N` is a size variable"), "{e:?}");
    let e = errors(&format!("{ADD}    sweep: {{num_warps: [4]}}\n"));
    assert!(e[0].contains("a CUDA version sweeps `block`"), "{e:?}");
    let e = errors(&format!("{TILE}    sweep: {{block: [128]}}\n"));
    assert!(e[0].contains("sweep `num_warps`"), "{e:?}");
    let e = errors(&format!("{ADD}    sweep: {{block: [M]}}\n"));
    assert!(e[0].contains("unknown name `M`"), "{e:?}");
}

#[test]
fn a_problem_of_the_version_itself_is_reported_once() {
    let e = errors(
        "  add:
    file: ../kernels/elementwise-add/v1_f32.cu
    entry: add_f32
    block: block
    grid: cdiv(M, block)
    args: [a, a, c, N]
    sweep: {block: [128, 256, 512]}
",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("unknown name `M`"), "{e:?}");
}

#[test]
fn the_reference_cannot_be_a_whole_sweep() {
    let src = format!("{ADD}    sweep: {{block: [128, 256]}}\n");
    let path = support::repo().join("workspaces/sweep-test.yaml");
    let text = format!("{HEAD}{src}").replace(
        "reference:\n  expr: {c: a}\n",
        "reference:\n  version: add\n",
    );
    let e = load_str(&path, &text).unwrap_err();
    assert!(
        e.diagnostics[0]
            .message
            .contains("`add` is swept; the reference must be one version, e.g. one of its configurations such as `add[block=128]`"),
        "{e}"
    );
    let ok = text.replace("version: add\n", "version: \"add[block=128]\"\n");
    assert!(load_str(&path, &ok).is_ok());
}

#[test]
fn persistent_is_an_axis_of_tile_versions_alone_and_takes_true_or_false() {
    let ws = load(&format!("{TILE}    sweep: {{persistent: [false, true]}}\n")).unwrap();
    assert_eq!(names(&ws), ["s[persistent=false]", "s[persistent=true]"]);
    assert!(!ws.versions[0].persistent);
    assert!(ws.versions[1].persistent);
    let sweep = ws.sweep("s").unwrap();
    assert_eq!(sweep.axes[0].kind, AxisKind::Persistent);
    // The version's own value (not persistent) is the rule's choice.
    assert_eq!(sweep.default_at(&ws.sizes[0]), Some(0));
    let errs = errors(&format!("{TILE}    sweep: {{persistent: [yes]}}\n"));
    assert!(
        errs.iter().any(
            |e| e.contains("versions.s.sweep.persistent[0]") && e.contains("`true` or `false`")
        ),
        "{errs:?}"
    );
    let errs = errors(&format!("{ADD}    sweep: {{persistent: [false, true]}}\n"));
    assert!(
        errs.iter().any(|e| e.contains("tile-language versions")),
        "{errs:?}"
    );
}
