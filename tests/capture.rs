//! `kwb capture` end to end, on the CPU: a real Python program with Triton kernels runs under
//! Triton's interpreter (`TRITON_INTERPRET=1`), kwb records its launches, and every workspace
//! it writes passes `kwb batch --cpu` against Triton's own outputs. Then the failures: a
//! program that fails, one with no launches, an argument kwb cannot take, the byte cap, and a
//! folder kwb did not make. torch and triton come from the package index into kwb's cache
//! (as the differential tests get them); without them the test says why and, in CI, fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = r#"
import sys
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs,
                mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def pick_rows(x_ptr, lab_ptr, out_ptr, keep_ptr, stride, n_cols, scale,
              ACT: tl.constexpr, OUT_DTYPE: tl.constexpr, BIAS, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    lab = tl.load(lab_ptr + row)
    keep = tl.load(keep_ptr + row)
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    y = x * scale + lab.to(tl.float32)
    if BIAS is not None:
        y += 1.0
    y = tl.where(keep, y, 0.0)
    tl.store(out_ptr + row * stride + cols, y.to(OUT_DTYPE), mask=m)


@triton.heuristics({"BLOCK": lambda args: 128 if args["n"] > 200 else 64})
@triton.jit
def scale_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def double_into(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def strided_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=m) + 1.0, mask=m)


@triton.jit
def filled_in(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _shim.exp(tl.load(x_ptr + offs)))


# Bound at run time, not in the text: as a library fills a generated module's namespace.
globals()["_shim"] = tl.math


class Strided:
    """A tensor's memory seen with a shape, strides and offset of its own, not a torch.Tensor:
    what flag-gems' StridedBuffer is (Triton takes any object with data_ptr() and dtype)."""

    def __init__(self, base, shape, strides, offset):
        self._base, self.dtype, self.shape = base, base.dtype, tuple(shape)
        self._strides, self._offset = tuple(strides), offset

    def data_ptr(self):
        return self._base.data_ptr() + self._offset * self.dtype.itemsize

    def stride(self):
        return self._strides

    def size(self):
        return self.shape

    def untyped_storage(self):
        return self._base.untyped_storage()

    def storage_offset(self):  # Triton's interpreter rebuilds the view from these
        return self._base.storage_offset() + self._offset

    def new_empty(self, *args, **kwargs):
        return self._base.new_empty(*args, **kwargs)


torch.manual_seed(0)
n = 1000
x, y = torch.randn(n), torch.randn(n)
out = torch.empty(n)
add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)  # the same specialisation again
assert torch.allclose(out, x + y)

a = torch.randn(7, 48, dtype=torch.bfloat16)[:, :33]  # a view: rows 48 apart
lab = torch.randint(0, 100, (7,))
keep = torch.rand(7) > 0.3
o = torch.empty(7, 48, dtype=torch.float16)
pick_rows[(7,)](a, lab, o, keep, a.stride(0), 33, 0.5, ACT="relu", OUT_DTYPE=tl.float16,
                BIAS=None, BLOCK=64)

z = torch.randn(300)
scale_in_place[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](z, 300)
d = z[:64] * 2.0  # already what the kernel writes: capture must find the output by replaying
double_into[(1,)](z, d, 64, BLOCK=64)
w = torch.randn(200)
s_out = torch.empty(50)
strided_copy[(1,)](Strided(w, (50,), (3,), 7), Strided(s_out, (50,), (1,), 0), 50, 3, BLOCK=64)
assert torch.equal(s_out, w[7:157:3] + 1.0)
e_out = torch.empty(32)
filled_in[(1,)](w, e_out, BLOCK=32)
if "--alias" in sys.argv:
    add_kernel[(1,)](x, x, x, 16, BLOCK=16)  # in place: one buffer, passed three times
    add_kernel[(1,)](x[:32], x[16:48], out, 32, BLOCK=32)  # views that overlap in part
if "--fail" in sys.argv:
    raise RuntimeError("the program's own failure")
if "--hang" in sys.argv:
    import time
    print("launches done", flush=True)
    time.sleep(600)
print("program done")
"#;

struct Setup {
    dir: tempfile::TempDir,
    site: PathBuf,
}

fn setup() -> Option<Setup> {
    match support::triton::provision() {
        Ok(site) => Some(Setup {
            dir: tempfile::tempdir().unwrap(),
            site,
        }),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the capture test: {e}"
            );
            println!("SKIPPED: torch and triton are unavailable: {e}");
            None
        }
    }
}

impl Setup {
    fn program(&self, source: &str) -> PathBuf {
        let p = self.dir.path().join("prog.py");
        std::fs::write(&p, source).unwrap();
        p
    }

    fn capture(&self, out: &str, extra: &[&str], argv: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kwb"))
            .current_dir(self.dir.path())
            .env("TRITON_INTERPRET", "1")
            .env("PYTHONPATH", &self.site)
            .args(["capture", "--out", out])
            .args(extra)
            .arg("--")
            .args(argv)
            .output()
            .unwrap()
    }
}

fn batch_cpu(workspace: &Path, engine: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kwb"))
        .args(["batch", "--cpu", "--cpu-engine", engine, "--format", "json"])
        .arg(workspace)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_programs_launches_become_workspaces_that_pass_against_tritons_outputs() {
    let Some(s) = setup() else { return };
    let prog = s.program(PROGRAM);
    let out = s.capture("cap", &[], &["python3", "prog.py"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("program done"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&prog).unwrap(), PROGRAM);
    let dir = s.dir.path().join("cap");
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    written.sort();
    // One workspace per kernel: the repeated launch of add_kernel is the same specialisation.
    // (Autotuned kernels need a GPU driver even under the interpreter: not tried here.)
    assert_eq!(
        written,
        [
            "add_kernel.yaml",
            "double_into.yaml",
            "filled_in.yaml",
            "pick_rows.yaml",
            "scale_in_place.yaml",
            "strided_copy.yaml"
        ]
    );
    // A name the file's text never binds, filled in at run time: recorded, so kwb resolves it.
    let filled = std::fs::read_to_string(dir.join("filled_in.yaml")).unwrap();
    assert!(
        filled.contains("\"_shim\": \"triton.language.math\""),
        "{filled}"
    );
    assert!(filled.contains("python_path: ["), "{filled}");
    // Objects that stand for a tensor view: recorded as the memory they reach (7 + 49 * 3 + 1).
    let strided = std::fs::read_to_string(dir.join("strided_copy.yaml")).unwrap();
    assert!(
        strided.contains("x_ptr: {dtype: f32, shape: [148]")
            && strided.contains("out_ptr: {dtype: f32, shape: [50]"),
        "{strided}"
    );
    let double = std::fs::read_to_string(dir.join("double_into.yaml")).unwrap();
    assert!(
        double.contains("found the outputs: out_ptr.")
            && double.contains("  out_ptr: {dtype: f32, shape: [64], init: {npy:")
            && double.contains("output: true"),
        "{double}"
    );

    let pick = std::fs::read_to_string(dir.join("pick_rows.yaml")).unwrap();
    for want in [
        "shape: [321]", // 6 rows 48 apart and 33 columns: the view's reach, not its storage
        "dtype: bf16",
        "dtype: i64",
        "dtype: bool",
        "ACT: \"'relu'\"",
        "OUT_DTYPE: tl.float16",
        "args: [x_ptr, lab_ptr, out_ptr, keep_ptr, 48, 33, 0.5, None]",
    ] {
        assert!(pick.contains(want), "no `{want}` in\n{pick}");
    }
    let scale = std::fs::read_to_string(dir.join("scale_in_place.yaml")).unwrap();
    assert!(scale.contains("output: true"), "{scale}");

    for w in &written {
        for engine in ["auto", "emulator"] {
            let r = batch_cpu(&dir.join(w), engine);
            let json = text(&r.stdout);
            assert_eq!(
                r.status.code(),
                Some(0),
                "{w} ({engine}): {json}\n{}",
                text(&r.stderr)
            );
            assert!(json.contains("\"passed\": true"), "{w} ({engine}): {json}");
        }
    }

    // The user edits the kernel: the check against Triton's outputs catches the change.
    let edited = s.dir.path().join("edited.py");
    std::fs::write(
        &edited,
        PROGRAM.replace("x + tl.load(y_ptr", "x - tl.load(y_ptr"),
    )
    .unwrap();
    let ws = std::fs::read_to_string(dir.join("add_kernel.yaml")).unwrap();
    let ws = ws.replace(&prog.display().to_string(), &edited.display().to_string());
    std::fs::write(dir.join("edited.yaml"), ws).unwrap();
    let r = batch_cpu(&dir.join("edited.yaml"), "auto");
    assert_eq!(r.status.code(), Some(1), "{}", text(&r.stdout));
    assert!(
        text(&r.stdout).contains("check_failed"),
        "{}",
        text(&r.stdout)
    );
}

/// A program stopped by Ctrl-C or a `timeout` (SIGINT, SIGTERM to kwb): the signal goes to the
/// program, and kwb still writes what it recorded before.
#[test]
fn an_interrupted_program_keeps_what_it_recorded() {
    use std::io::{BufRead, BufReader};
    let Some(s) = setup() else { return };
    s.program(PROGRAM);
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwb"))
            .current_dir(s.dir.path())
            .env("TRITON_INTERPRET", "1")
            .env("PYTHONPATH", &s.site)
            .args([
                "capture", "--out", name, "--", "python3", "prog.py", "--hang",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            lines.any(|l| l.is_ok_and(|l| l == "launches done")),
            "the program never got to its sleep"
        );
        // SAFETY: the pid is our own child's, not yet reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{name}: {err}");
        assert!(
            err.contains(&format!("was stopped by signal {sig}")),
            "{name}: {err}"
        );
        for w in ["add_kernel", "pick_rows", "scale_in_place", "strided_copy"] {
            let ws = s.dir.path().join(name).join(format!("{w}.yaml"));
            assert!(ws.exists(), "{name}: no {}\n{err}", ws.display());
        }
    }
}

#[test]
fn failures_are_reported_and_nothing_of_the_users_is_touched() {
    let Some(s) = setup() else { return };
    s.program(PROGRAM);

    // The program fails: its exit code and the end of its stderr; what it launched is kept.
    let out = s.capture("fail", &[], &["python3", "prog.py", "--fail"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("error: the program exited with code 1"),
        "{err}"
    );
    assert!(
        err.contains("| RuntimeError: the program's own failure"),
        "{err}"
    );
    assert!(s.dir.path().join("fail/add_kernel.yaml").exists());

    // The same memory passed twice is one buffer passed twice; views that overlap in part
    // cannot be separate kwb buffers: said, with where.
    let out = s.capture(
        "alias",
        &["--max-per-kernel", "3"],
        &["python3", "prog.py", "--alias"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`add_kernel` was not written as a workspace"),
        "{err}"
    );
    assert!(
        err.contains("arguments 0 (`x_ptr`) and 1 (`y_ptr`) share memory"),
        "{err}"
    );
    let in_place = s.dir.path().join("alias/add_kernel-2.yaml");
    let ws = std::fs::read_to_string(&in_place).unwrap();
    assert!(ws.contains("args: [x_ptr, x_ptr, x_ptr, 16]"), "{ws}");
    let r = batch_cpu(&in_place, "auto");
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stdout));

    // No launches at all, and launches all over the byte cap.
    std::fs::write(
        s.dir.path().join("none.py"),
        "import triton\nprint('no kernels')\n",
    )
    .unwrap();
    let out = s.capture("none", &[], &["python3", "none.py"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("made no Triton launches"),
        "{}",
        text(&out.stderr)
    );
    let out = s.capture("tiny", &["--max-bytes", "100"], &["python3", "prog.py"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("reached --max-bytes"), "{err}");

    // A folder kwb did not make is refused, untouched; its own earlier capture is replaced.
    let mine = s.dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    let out = s.capture("mine", &[], &["python3", "prog.py"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("was not written by `kwb capture`"));
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "mine"
    );
    let again = s.capture("fail", &[], &["python3", "prog.py"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));

    // Only the kernels a pattern names are recorded; the others still run.
    let out = s.capture(
        "picked",
        &["--kernels", "pick*,nothing"],
        &["python3", "prog.py"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("program done"));
    let names: Vec<String> = std::fs::read_dir(s.dir.path().join("picked"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    assert_eq!(names, ["pick_rows.yaml"]);

    // A program that cannot start.
    let out = s.capture("nope", &[], &["/nonexistent/python9"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("cannot run `/nonexistent/python9`"));
}
