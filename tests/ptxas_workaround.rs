//! ptxas (seen here in NVRTC 13.0 for sm_90; reported for 12.8 to 13.3 on sm_100) miscompiles
//! signed integer `max`/`min`: it fuses two of them into one three-input VIMNMX3 and drops a
//! negation it had folded into the second operand of the inner one, so `max(max(z, -x), y)` runs as `max(z, x, y)` (pytorch/pytorch
//! issue 190973). The GPU differential campaign found it as wrong results (seeds 507942 and
//! 508227). kwb's generated CUDA passes each operand of a signed `max`/`min` through an
//! identity `prmt` (`kwb_smax`, `kwb_smin`), so no negation can be folded into it.
//!
//! These tests compile kernels of that shape with the real NVRTC to a real sm_90 CUBIN and read
//! its SASS with nvdisasm (installed from the package index into kwb's cache when missing, as
//! CI does): the negation must still be there. No GPU needed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// nvdisasm, installing the `nvidia-cuda-nvdisasm` wheel into kwb's cache if it is not found.
fn nvdisasm() -> kwb::ui::sass::Disassembler {
    if let Some(d) = kwb::ui::sass::find_disassembler() {
        return d;
    }
    let target = kwb::cache_dir()
        .expect("a cache folder (HOME or KWB_CACHE_DIR)")
        .join("nvdisasm-wheel");
    kwb::compile::provision::pip_install(&target, &["nvidia-cuda-nvdisasm>=13.2,<14"])
        .unwrap_or_else(|e| panic!("nvdisasm is needed and could not be installed: {e}"));
    kwb::ui::sass::find_disassembler().expect("nvdisasm after installing its wheel")
}

/// The SASS of `body` (the statements after the loads of `x`, `y`, `z`, int32 each), compiled
/// by `kwb inspect --cubin-dir` as a one-version tile workspace.
fn sass(name: &str, body: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ptxas-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let py = format!(
        "import triton\nimport triton.language as tl\n\n@triton.jit\n\
         def kernel(x_ptr, y_ptr, z_ptr, o_ptr, BLOCK: tl.constexpr):\n    \
         offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    \
         y = tl.load(y_ptr + offs)\n    z = tl.load(z_ptr + offs)\n{body}"
    );
    std::fs::write(dir.join("k.py"), py).unwrap();
    let buffer = |n: &str| {
        let out = if n == "o" { ", output: true" } else { "" };
        format!("  {n}: {{dtype: i32, shape: [128]{out}}}\n")
    };
    let yaml = format!(
        "name: ptxas\nsizes:\n  - {{name: s, N: 128}}\nbuffers:\n{}{}{}{}versions:\n  k:\n    \
         file: k.py\n    entry: kernel\n    constexprs: {{BLOCK: 128}}\n    grid: 1\n    \
         args: [x, y, z, o]\n",
        buffer("x"),
        buffer("y"),
        buffer("z"),
        buffer("o")
    );
    std::fs::write(dir.join("w.yaml"), yaml).unwrap();
    let cubins = dir.join("cubin");
    let out = Command::new(env!("CARGO_BIN_EXE_kwb"))
        .args(["inspect", "w.yaml", "--no-cache"])
        .arg("--cubin-dir")
        .arg(&cubins)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kwb inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cubin = std::fs::read_dir(&cubins)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "cubin"))
        .expect("a CUBIN");
    disassemble(&cubin)
}

fn disassemble(cubin: &Path) -> String {
    nvdisasm()
        .disassemble(&std::fs::read(cubin).unwrap())
        .expect("nvdisasm reads the CUBIN")
}

/// Whether some instruction negates a register: `-R7` as an operand (IADD3, IMAD.MOV, ...).
fn negates(sass: &str) -> bool {
    sass.lines()
        .any(|l| l.contains(", -R") || l.contains(" -R"))
}

#[test]
fn a_negated_operand_of_nested_signed_max_survives_ptxas() {
    // Seed 508227, reduced: max(max(-x, x), y), the negation as the inner second operand
    // once NVVM has ordered it.
    let s = sass(
        "abs-max",
        "    tl.store(o_ptr + offs, tl.maximum(tl.maximum(-x, x), y))\n",
    );
    assert!(negates(&s), "no negation left in the SASS:\n{s}");
    let s = sass(
        "max-max",
        "    tl.store(o_ptr + offs, tl.maximum(tl.maximum(z, -x), y))\n",
    );
    assert!(negates(&s), "no negation left in the SASS:\n{s}");
}

#[test]
fn a_negated_operand_of_nested_signed_min_survives_ptxas() {
    let s = sass(
        "min-min",
        "    tl.store(o_ptr + offs, tl.minimum(y, tl.minimum(z, -x)))\n",
    );
    assert!(negates(&s), "no negation left in the SASS:\n{s}");
}
