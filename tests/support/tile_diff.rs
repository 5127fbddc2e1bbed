//! The differential runner shared by `tests/tile_differential.rs` (kwb on the CPU against
//! Triton's interpreter) and `tests/gpu_triton_diff.rs` (kwb on the GPU against Triton's
//! compiled kernels): writes a generated program and its inputs, runs Triton on them, runs kwb,
//! compares, and reduces a mismatch.

use super::differential::{planned, Case};
use super::tilegen::{self, Arg, Layout, Program, D};
use super::triton::Interpreter;
use kwb::compile::Arch;
use kwb::run::cpu::{run_outputs, CpuCode, CpuOptions};
use kwb::run::protocol::Role;
use kwb::tile::{ArgKind, ConstValue, DType, KernelRequest};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub fn dtype(d: D) -> DType {
    match d {
        D::F32 => DType::F32,
        D::F16 => DType::F16,
        D::I32 => DType::I32,
    }
}

/// What became of one program.
#[derive(Debug)]
pub enum Outcome {
    Agree,
    /// Triton refused it: the generator made an invalid program (counted, not a kwb bug).
    TritonRejects(String),
    /// kwb refused a program Triton runs: a gap in the language, reported, not a wrong answer.
    KwbRejects(String),
    /// A wrong answer, or layouts that differ: a kwb bug.
    Mismatch(String),
}

pub struct Runner {
    pub triton: Interpreter,
    pub arch: Arch,
    pub dir: PathBuf,
}

impl Runner {
    /// Writes program `p` (plain layout) and its inputs into `dir/TAG/`.
    pub fn write(&self, p: &Program, tag: &str) -> (PathBuf, String) {
        let dir = self.dir.join(tag);
        std::fs::create_dir_all(&dir).unwrap();
        let src = tilegen::print(p, &mut Layout::plain());
        std::fs::write(dir.join("k.py"), &src).unwrap();
        write_inputs(p, &dir);
        (dir, src)
    }

    pub fn triton_request(&self, p: &Program, dir: &Path) -> String {
        let args: Vec<String> = p
            .args
            .iter()
            .map(|a| match a {
                Arg::Buffer { name, .. } => format!(
                    "{{\"npy\": \"{}\", \"out\": \"{}\"}}",
                    dir.join(format!("{name}.npy")).display(),
                    dir.join(format!("{name}.triton.npy")).display()
                ),
                Arg::Int(_, v) => format!("{{\"int\": {v}}}"),
            })
            .collect();
        let constexprs: Vec<String> = p
            .constexprs
            .iter()
            .map(|(n, v)| format!("\"{n}\": {v}"))
            .collect();
        format!(
            "{{\"file\": \"{}\", \"kernel\": \"kernel\", \"grid\": [{}, 1, 1], \"num_warps\": {}, \"args\": [{}], \"constexprs\": {{{}}}}}",
            dir.join("k.py").display(),
            p.grid,
            p.num_warps,
            args.join(", "),
            constexprs.join(", ")
        )
    }

    /// The workspace that runs `p` (from `kernel`, a file in `dir`) in kwb: every buffer an
    /// output starting from its inputs. `dir` may be empty: paths relative to the workspace.
    pub fn workspace(p: &Program, dir: &Path, kernel: &str) -> String {
        let mut y = format!(
            "name: diff-{}\nsizes:\n  - {{name: s, Z: 1}}\nbuffers:\n",
            p.seed
        );
        for a in &p.args {
            if let Arg::Buffer {
                name,
                dtype: d,
                shape,
                ..
            } = a
            {
                let shape: Vec<String> = shape.iter().map(usize::to_string).collect();
                let _ = writeln!(
                    y,
                    "  {name}: {{dtype: {}, shape: [{}], init: {{npy: {}}}, output: true}}",
                    dtype(*d).name(),
                    shape.join(", "),
                    dir.join(format!("{name}.npy")).display()
                );
            }
        }
        let args: Vec<String> = p
            .args
            .iter()
            .map(|a| match a {
                Arg::Buffer { name, .. } => name.clone(),
                Arg::Int(_, v) => format!("\"{v}\""),
            })
            .collect();
        let constexprs: Vec<String> = p
            .constexprs
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        let _ = write!(
            y,
            "versions:\n  k:\n    file: {}\n    entry: kernel\n    constexprs: {{{}}}\n    num_warps: {}\n    enable_fp_fusion: false\n    grid: {}\n    args: [{}]\n",
            dir.join(kernel).display(),
            constexprs.join(", "),
            p.num_warps,
            p.grid,
            args.join(", ")
        );
        y
    }

    /// The request kwb's front end is given for `p`, for comparing layouts' IR.
    pub fn request(p: &Program) -> KernelRequest {
        KernelRequest {
            name: "kernel".into(),
            args: p
                .args
                .iter()
                .map(|a| match a {
                    Arg::Buffer { dtype: d, .. } => ArgKind::Pointer(dtype(*d)),
                    Arg::Int(_, v) => ArgKind::Int {
                        fits_i32: true,
                        divisibility: 1 << v.unsigned_abs().trailing_zeros().min(4),
                        non_negative: *v >= 0,
                        one: *v == 1,
                    },
                })
                .collect(),
            constexprs: p
                .constexprs
                .iter()
                .map(|(n, v)| (n.clone(), ConstValue::Int(*v)))
                .collect(),
            num_warps: p.num_warps,
            sums: Default::default(),
        }
    }

    /// Runs `p` in its own folder `dir/TAG/`: Triton runs the plain layout (`k.py`), kwb a
    /// layout split inside brackets (`k.split.py`), so that code a front end drops from a
    /// split layout shows as a wrong value; two more layouts must compile to the plain one's IR.
    pub fn run(&mut self, p: &Program, tag: &str) -> Outcome {
        let (dir, src) = self.write(p, tag);
        if let Err(e) = self.triton.run(&self.triton_request(p, &dir)) {
            return Outcome::TritonRejects(e);
        }
        let req = Self::request(p);
        let path = dir.join("k.py");
        let plain = kwb::tile::compile(&path, &src, std::slice::from_ref(&req));
        for l in 1..=2u64 {
            let other = tilegen::print(p, &mut Layout::seeded(p.seed * 7 + l));
            let c = kwb::tile::compile(&path, &other, std::slice::from_ref(&req));
            let same = match (plain.kernels.first(), c.kernels.first()) {
                (Some(a), Some(b)) => a.without_locs() == b.without_locs(),
                (None, None) => true,
                _ => false,
            };
            if !same {
                let _ = std::fs::write(dir.join(format!("k.layout{l}.py")), &other);
                let why = kwb::diag::render_all(&c.diagnostics);
                return Outcome::Mismatch(format!(
                    "layout {l} compiles differently from the plain layout:\n{why}\n{other}"
                ));
            }
        }
        let split = tilegen::print(p, &mut Layout::seeded(p.seed * 7 + 3));
        std::fs::write(dir.join("k.split.py"), split).unwrap();
        let yaml = Self::workspace(p, &dir, "k.split.py");
        let want = triton_outputs(p, &dir);
        check(self.arch, &dir, &yaml, p.seed, p.exact, &want)
    }
}

impl super::tile_campaign::Differential for Runner {
    fn check(&mut self, p: &Program, tag: &str) -> Outcome {
        self.run(p, tag)
    }

    fn folder(&self, tag: &str) -> PathBuf {
        self.dir.join(tag)
    }
}

/// Runs the workspace `yaml` (written into `dir`) on both of kwb's CPU engines and holds every
/// buffer to `want`, Triton's outputs: bit for bit for int32 buffers and, when `exact` (a
/// program of exact operations only), for all; within 2e-3 (about an fp16 ulp) otherwise.
pub fn check(
    arch: Arch,
    dir: &Path,
    yaml: &str,
    seed: u64,
    exact: bool,
    want: &BTreeMap<String, Vec<f64>>,
) -> Outcome {
    let case = Case {
        yaml,
        version: "k",
        size: "s",
        seed,
        code: |c| CpuCode::Tile(c.tile_kernels.clone()),
        tolerance: None,
    };
    let (job, compiled) = match planned(dir, arch, &case) {
        Ok(x) => x,
        Err(e) => return Outcome::KwbRejects(e),
    };
    let module = match kwb::emu::Module::parse(&compiled.ptx) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::Mismatch(format!(
                "the emulator cannot read kwb's PTX: {:?}",
                e.first()
            ))
        }
    };
    let engines = [
        (
            "kwb's interpreter",
            CpuCode::Tile(compiled.tile_kernels.clone()),
        ),
        (
            "kwb's PTX in the emulator",
            CpuCode::Ptx(std::sync::Arc::new(module)),
        ),
    ];
    // One thread per engine run: campaigns run many programs side by side.
    let opts = CpuOptions {
        threads: 1,
        ..CpuOptions::default()
    };
    for (engine, code) in engines {
        let got = match run_outputs(&job, &code, &opts) {
            Ok(g) => g,
            Err(e) => return Outcome::Mismatch(format!("{engine}: {e}")),
        };
        let outputs = job.buffers.iter().filter(|b| b.role == Role::Output);
        for (b, g) in outputs.zip(&got) {
            let Some(w) = want.get(&b.name) else {
                return Outcome::Mismatch(format!("Triton wrote no `{}`", b.name));
            };
            let exact = exact || b.dtype == DType::I32;
            // An fp32 difference in the last bit can flip a later rounding to fp16 (one fp16 ulp,
            // about 1e-3): inexact programs get fp16's tolerance throughout.
            let tol = 2e-3;
            let bad = w.iter().zip(&g.data).position(|(w, g)| {
                let same = (w.is_nan() && g.is_nan()) || w == g;
                !same && (exact || (w - g).abs() > tol * (1.0 + w.abs()))
            });
            if let Some(i) = bad {
                return Outcome::Mismatch(format!(
                    "`{}`[{i}]: Triton gives {}, {engine} {} ({})",
                    b.name,
                    w[i],
                    g.data[i],
                    if exact {
                        "compared bit for bit"
                    } else {
                        "compared within tolerance"
                    }
                ));
            }
        }
    }
    Outcome::Agree
}

/// Writes `p`'s buffers' initial contents as `dir/NAME.npy`.
pub fn write_inputs(p: &Program, dir: &Path) {
    for arg in &p.args {
        if let Arg::Buffer {
            name,
            dtype: d,
            shape,
            data,
        } = arg
        {
            kwb::run::host::npy::write(&dir.join(format!("{name}.npy")), shape, dtype(*d), data)
                .unwrap();
        }
    }
}

/// Triton's outputs of `p`, as its run left them in `dir` (`NAME.triton.npy`).
pub fn triton_outputs(p: &Program, dir: &Path) -> BTreeMap<String, Vec<f64>> {
    p.args
        .iter()
        .filter_map(|a| match a {
            Arg::Buffer { name, .. } => {
                let f = dir.join(format!("{name}.triton.npy"));
                Some((name.clone(), kwb::run::host::npy::read_f64(&f).ok()?.1))
            }
            _ => None,
        })
        .collect()
}

/// A count or seed from the environment, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
