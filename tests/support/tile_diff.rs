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
        for arg in &p.args {
            if let Arg::Buffer {
                name,
                dtype: d,
                shape,
                data,
            } = arg
            {
                kwb::run::npy::write(&dir.join(format!("{name}.npy")), shape, dtype(*d), data)
                    .unwrap();
            }
        }
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

    /// The workspace that runs `p` in kwb: every buffer an output starting from its inputs.
    pub fn workspace(p: &Program, dir: &Path) -> String {
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
            "versions:\n  k:\n    file: {}\n    entry: kernel\n    constexprs: {{{}}}\n    num_warps: {}\n    grid: {}\n    args: [{}]\n",
            dir.join("k.py").display(),
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
        }
    }

    /// Runs `p` in its own folder `dir/TAG/`.
    pub fn run(&mut self, p: &Program, tag: &str) -> Outcome {
        let (dir, src) = self.write(p, tag);
        if let Err(e) = self.triton.run(&self.triton_request(p, &dir)) {
            return Outcome::TritonRejects(e);
        }
        // Layouts: the same program split and joined differently compiles to the same IR.
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
        let yaml = Self::workspace(p, &dir);
        let case = Case {
            yaml: &yaml,
            version: "k",
            size: "s",
            seed: p.seed,
            code: |c| CpuCode::Tile(c.tile_kernels.clone()),
            tolerance: None,
        };
        let (job, compiled) = match planned(&dir, self.arch, &case) {
            Ok(x) => x,
            Err(e) => return Outcome::KwbRejects(e),
        };
        let want: BTreeMap<String, Vec<f64>> = p
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Buffer { name, .. } => {
                    let f = dir.join(format!("{name}.triton.npy"));
                    Some((name.clone(), kwb::run::npy::read_f64(&f).ok()?.1))
                }
                _ => None,
            })
            .collect();
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
        for (engine, code) in engines {
            let got = match run_outputs(&job, &code, &CpuOptions::default()) {
                Ok(g) => g,
                Err(e) => return Outcome::Mismatch(format!("{engine}: {e}")),
            };
            let outputs = job.buffers.iter().filter(|b| b.role == Role::Output);
            for (b, g) in outputs.zip(&got) {
                let Some(w) = want.get(&b.name) else {
                    return Outcome::Mismatch(format!("Triton wrote no `{}`", b.name));
                };
                let exact = p.exact || b.dtype == DType::I32;
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

    /// Removes statements from a mismatching program while it still mismatches; the smallest
    /// one is left in `dir/seed-N-reduced/` with its inputs and Triton's outputs.
    pub fn reduce(&mut self, mut p: Program) -> (Program, String) {
        let tag = format!("seed-{}-reduced", p.seed);
        let mut k = p.body.len();
        while k > 0 {
            k -= 1;
            if let Some(q) = tilegen::without(&p, k) {
                if matches!(self.run(&q, &tag), Outcome::Mismatch(_)) {
                    p = q;
                }
            }
        }
        let why = match self.run(&p, &tag) {
            Outcome::Mismatch(e) => e,
            other => format!("{other:?}"),
        };
        (p, why)
    }
}

/// A count or seed from the environment, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
