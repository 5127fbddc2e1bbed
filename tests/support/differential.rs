//! Differential runs for GPU tests: a version's outputs computed on the CPU (the PTX emulator
//! or the tile interpreter) become the `.npy` reference of a `kwb batch` GPU run with the same
//! seed, so the GPU's output is checked against the CPU's with kwb's own comparison.

use kwb::compile::{Arch, CompiledVersion};
use kwb::report::{json::from_json, Status};
use kwb::run::cpu::{run_outputs, CpuCode, CpuOptions};
use kwb::run::plan::{plan_job, PlanOptions};
use kwb::run::protocol::{BenchMode, BenchSpec, Role, RunJob};
use std::path::Path;

/// One CPU-vs-GPU comparison: the workspace text `yaml` (kernel paths absolute), one version
/// and size, the seed, the CPU engine, and the tolerance (`None`: the workspace's).
pub struct Case<'a> {
    pub yaml: &'a str,
    pub version: &'a str,
    pub size: &'a str,
    pub seed: u64,
    pub code: fn(&CompiledVersion) -> CpuCode,
    pub tolerance: Option<(f64, f64)>,
}

/// The job of `case`, planned as `kwb batch` plans it (same seed derivation), with its compile.
pub fn planned(dir: &Path, arch: Arch, case: &Case) -> Result<(RunJob, CompiledVersion), String> {
    let tag = tag(case);
    let path = dir.join(format!("{tag}.yaml"));
    std::fs::write(&path, case.yaml).unwrap();
    let mut ws = kwb::workspace::load(&path).map_err(|e| e.to_string())?;
    ws.sizes.retain(|s| s.name == case.size);
    ws.versions.retain(|v| v.name == case.version);
    if ws.sizes.is_empty() || ws.versions.is_empty() {
        return Err(format!(
            "no {} @ {} in the workspace",
            case.version, case.size
        ));
    }
    let compiler = kwb::compile::Compiler::new(arch, kwb::compile::Cache::disabled())
        .map_err(|e| e.to_string())?;
    let compiled = compiler.compile_workspace(&ws);
    let c = compiled[0].for_size(case.size);
    if !c.ok {
        return Err(format!(
            "compile: {}",
            kwb::diag::render_all(&c.diagnostics)
        ));
    }
    let bench = BenchSpec {
        check: true,
        benchmark: false,
        mode: BenchMode::Cold,
        warmup_ms: 0.0,
        stop: Default::default(),
        watchdog_ms: 10_000,
        rtol: None,
        atol: None,
        guard_bytes: None,
    };
    // `kwb batch --sizes S` keeps only S, so its seed is that of size index 0.
    let plan = PlanOptions {
        seed: kwb::engine::plan::size_seed(case.seed, 0),
        bench,
    };
    let job = plan_job(
        &ws,
        &ws.versions[0],
        c,
        &ws.sizes[0],
        arch.spec(),
        None,
        1,
        &plan,
    )
    .map_err(|e| e.to_string())?;
    Ok((job, c.clone()))
}

fn tag(case: &Case) -> String {
    format!("{}-{}", case.version, case.size).replace(['/', ' '], "_")
}

/// Runs `case` on both CPU engines: `case.code` (the tile interpreter) and the PTX emulator
/// running the CUDA kwb generated. No GPU needed; Err says where they differ beyond
/// `case.tolerance` (default rtol 1e-5, atol 1e-5).
pub fn cpu_vs_emulator(dir: &Path, arch: Arch, case: &Case) -> Result<(), String> {
    let (rtol, atol) = case.tolerance.unwrap_or((1e-5, 1e-5));
    both_engines(dir, arch, case, |w, g| {
        let same_nan = w.is_nan() && g.is_nan();
        let close = (w - g).abs() <= atol + rtol * w.abs();
        same_nan || close
    })
}

/// [`cpu_vs_emulator`] where every output element must be the same bit for bit, as kwb
/// carries it (an `f64`: `-0.0` is not `0.0`; a NaN matches any NaN, since a buffer's NaN
/// payload does not survive the conversion); `case.tolerance` is not used.
pub fn cpu_vs_emulator_exact(dir: &Path, arch: Arch, case: &Case) -> Result<(), String> {
    both_engines(dir, arch, case, |w, g| {
        (w.is_nan() && g.is_nan()) || w.to_bits() == g.to_bits()
    })
}

/// The outputs of `case` on the interpreter (`case.code`) and on the emulator, compared
/// element by element with `same(interpreter, emulator)`.
fn both_engines(
    dir: &Path,
    arch: Arch,
    case: &Case,
    same: impl Fn(f64, f64) -> bool,
) -> Result<(), String> {
    let (job, c) = planned(dir, arch, case)?;
    let want = run_outputs(&job, &(case.code)(&c), &CpuOptions::default())?;
    let module = kwb::emu::Module::parse(&c.ptx)
        .map_err(|e| format!("the emulator cannot read the PTX: {:?}", e.first()))?;
    let got = run_outputs(
        &job,
        &CpuCode::Ptx(std::sync::Arc::new(module)),
        &CpuOptions::default(),
    )?;
    let outputs = job.buffers.iter().filter(|b| b.role == Role::Output);
    for ((b, w), g) in outputs.zip(&want).zip(&got) {
        let bad = (w.data.iter().zip(&g.data).enumerate()).find(|(_, (w, g))| !same(**w, **g));
        if let Some((i, (w, g))) = bad {
            return Err(format!(
                "`{}`[{i}]: the interpreter gives {w:?}, the emulator {g:?}",
                b.name
            ));
        }
    }
    Ok(())
}

/// Runs `case`; Err says how the GPU's output differed from the CPU's (or what failed).
pub fn cpu_vs_gpu(dir: &Path, arch: Arch, case: &Case) -> Result<(), String> {
    let tag = tag(case);
    let (job, c) = planned(dir, arch, case)?;
    let outs = run_outputs(&job, &(case.code)(&c), &CpuOptions::default())?;
    let mut npy = String::from("reference:\n  npy:\n");
    let outputs = job.buffers.iter().filter(|b| b.role == Role::Output);
    for (b, t) in outputs.zip(&outs) {
        let file = dir.join(format!("{tag}-{}.npy", b.name));
        kwb::run::host::npy::write(&file, &t.shape, kwb::workspace::DType::F64, &t.data)
            .map_err(|e| e.to_string())?;
        npy.push_str(&format!("    {}: {}\n", b.name, file.display()));
    }
    // The CPU's outputs replace the workspace's reference (and its tolerance, when given).
    let yaml = case.yaml;
    let start = yaml
        .find("\nreference:")
        .ok_or("the workspace has no reference")?
        + 1;
    // The block runs to the first line that is not indented.
    let mut end = yaml.len();
    let mut at = start
        + yaml[start..]
            .find('\n')
            .map_or(yaml.len() - start, |n| n + 1);
    while at < yaml.len() {
        let line_end = yaml[at..].find('\n').map_or(yaml.len(), |n| at + n + 1);
        if !yaml[at..].starts_with(' ') && !yaml[at..].starts_with('\n') {
            end = at;
            break;
        }
        at = line_end;
    }
    let rest = &yaml[end..];
    let mut gpu_yaml = format!("{}{}{}", &yaml[..start], npy, rest);
    if let Some((rtol, atol)) = case.tolerance {
        gpu_yaml = gpu_yaml
            .lines()
            .filter(|l| !l.starts_with("tolerance:"))
            .collect::<Vec<_>>()
            .join("\n");
        gpu_yaml.push_str(&format!(
            "\ntolerance: {{rtol: {rtol:e}, atol: {atol:e}}}\n"
        ));
    }
    let gpu_path = dir.join(format!("{tag}-gpu.yaml"));
    std::fs::write(&gpu_path, &gpu_yaml).unwrap();
    let out = std::process::Command::new(super::kwb_bin())
        .arg("batch")
        .arg(&gpu_path)
        .args(["--versions", case.version, "--sizes", case.size])
        .args(["--seed", &case.seed.to_string(), "--format", "json"])
        .args([
            "--min-time",
            "0.01",
            "--max-time",
            "0.05",
            "--min-samples",
            "3",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let report =
        from_json(&text).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    let r = report.results.first().ok_or("no result")?;
    if r.status != Status::Ok {
        return Err(format!(
            "{:?}: {}",
            r.status,
            r.message.clone().unwrap_or_default()
        ));
    }
    Ok(())
}

/// A shipped workspace with its kernel paths made absolute, so a copy can live elsewhere.
pub fn shipped(name: &str) -> String {
    let repo = super::repo();
    std::fs::read_to_string(repo.join("workspaces").join(name))
        .unwrap()
        .replace("file: ../", &format!("file: {}/", repo.display()))
}
