//! One fixture per failure mode: each bad workspace in tests/fixtures/workspaces/ must give the
//! diagnostics in its golden `.expected` file (file, line, column, field and message), and the
//! command line must map it to the documented exit code. `KWB_BLESS=1` rewrites the goldens.

mod support;

use kwb::diag::render_all;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    support::repo().join("tests/fixtures/workspaces")
}

/// Diagnostics with the machine-specific folder replaced, so goldens are portable.
fn portable(text: &str) -> String {
    let repo = support::repo().display().to_string();
    text.replace(
        &format!("{repo}/tests/fixtures/workspaces/../../../"),
        "$REPO/",
    )
    .replace(&format!("{repo}/tests/fixtures/workspaces/"), "$FIXTURES/")
    .replace(&repo, "$REPO")
}

fn diagnostics_of(name: &str) -> String {
    let path = fixtures().join(format!("{name}.yaml"));
    match kwb::workspace::load(&path) {
        Err(e) => render_all(&e.diagnostics),
        Ok(ws) => {
            let c = support::compiler("sm_90");
            let out = c.compile_workspace(&ws);
            let diags: Vec<_> = out
                .into_iter()
                .flat_map(|c| c.diagnostics)
                .filter(|d| d.is_error())
                .collect();
            assert!(!diags.is_empty(), "{name}: expected an error");
            render_all(&diags)
        }
    }
}

fn check(name: &str) {
    let text = portable(&diagnostics_of(name));
    support::assert_golden(&fixtures().join(format!("{name}.expected")), &text);
}

#[test]
fn malformed_yaml() {
    check("malformed_yaml");
}

#[test]
fn unknown_field() {
    check("unknown_field");
}

#[test]
fn wrong_type() {
    check("wrong_type");
}

#[test]
fn missing_kernel_file() {
    check("missing_kernel_file");
}

#[test]
fn bad_size_expression() {
    check("bad_size_expression");
}

#[test]
fn unsupported_arch() {
    check("unsupported_arch");
}

#[test]
fn bad_dtype_and_init() {
    check("bad_dtype_and_init");
}

#[test]
fn entry_not_in_file() {
    check("entry_not_in_file");
}

#[test]
fn zero_size() {
    check("zero_size");
    // And on the command line, before anything is compiled or run: a usage error.
    let ws = fixtures().join("zero_size.yaml").display().to_string();
    let (code, _, err) = kwb(&["batch", "--cpu", &ws]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("zero_size.yaml:3:"), "{err}");
    assert!(err.contains("size `empty`: `N` is 0"), "{err}");
}

/// A symbolic-link loop cannot be committed as a fixture (it trips tools that walk the tree),
/// so this one is made in a temporary folder: a workspace whose kernel file is a link loop.
#[test]
fn kernel_file_is_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::os::unix::fs::symlink("b.cu", p("a.cu")).unwrap();
    std::os::unix::fs::symlink("a.cu", p("b.cu")).unwrap();
    let yaml = std::fs::read_to_string(fixtures().join("zero_size.yaml")).unwrap();
    let yaml = yaml
        .replace("../../../kernels/elementwise-add/v1_f32.cu", "a.cu")
        .replace("  - {name: empty, N: 0}\n  - {N: 4 - 4}\n", "");
    std::fs::write(p("ws.yaml"), yaml).unwrap();
    let loop_msg = "is a symbolic link loop";
    let e = kwb::workspace::load(&p("ws.yaml")).expect_err("a link loop");
    let text = render_all(&e.diagnostics);
    assert!(
        text.contains("error: versions.v1.file: kernel file "),
        "{text}"
    );
    assert!(text.contains(loop_msg), "{text}");
    assert!(!text.contains("not found"), "{text}");
    // The bare file, on the command line: the same words, and a usage error.
    let (code, _, err) = kwb(&["inspect", &p("a.cu").display().to_string()]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains(loop_msg), "{err}");
}

#[test]
fn compile_error() {
    check("compile_error");
}

fn kwb(args: &[&str]) -> (i32, String, String) {
    support::run_kwb(args)
}

#[test]
fn the_command_line_maps_failures_to_exit_codes() {
    support::provision_nvrtc();
    let f = |n: &str| fixtures().join(format!("{n}.yaml")).display().to_string();
    let (code, _, err) = kwb(&["inspect", &f("unknown_field")]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("unknown field `grdi`"), "{err}");
    let (code, out, _) = kwb(&["inspect", &f("compile_error")]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR);
    assert!(out.contains("broken_syntax.cu:7:"), "{out}");
    let (code, _, err) = kwb(&["inspect", &f("missing_kernel_file"), "--arch", "sm_90"]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    let ws = support::repo().join("workspaces/elementwise-add.yaml");
    let (code, _, err) = kwb(&["inspect", &ws.display().to_string(), "--arch", "sm_13"]);
    assert_eq!(code, kwb::exit::USAGE);
    assert!(err.contains("unsupported arch"), "{err}");
    let (code, _, err) = kwb(&["inspect", "no/such/workspace.yaml"]);
    assert_eq!(code, kwb::exit::USAGE);
    assert!(err.contains("no/such/workspace.yaml"), "{err}");
}

#[test]
fn a_kernel_file_where_a_workspace_goes_is_named_as_such() {
    // `kwb batch` and `kwb watch` take a workspace; a kernel file there says what to do.
    let py = support::repo().join("kernels/softmax/fused_softmax.py");
    let (code, _, err) = kwb(&["batch", "--cpu", &py.display().to_string()]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("this is not a workspace"), "{err}");
    assert!(err.contains("`kwb inspect "), "{err}");
    assert!(!err.contains("RawWorkspace"), "{err}");
    // Any other file whose top level is not a mapping: the same, without the kernel advice.
    let ws = kwb::workspace::load_str(std::path::Path::new("w.yaml"), "- 1\n- 2\n");
    let msg = render_all(&ws.err().unwrap().diagnostics);
    assert!(msg.contains("this is not a workspace"), "{msg}");
    assert!(!msg.contains("kwb inspect"), "{msg}");
}

#[test]
fn bad_constexpr_values() {
    check("bad_constexpr_values");
}

#[test]
fn none_arg_to_cuda() {
    check("none_arg_to_cuda");
}
