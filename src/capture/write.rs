//! One recorded launch as a workspace: the user's file and kernel, the launch as its one size,
//! the recorded inputs as `init: {npy: …}`, Triton's own outputs as the reference, and
//! Triton's time as the version's baseline. Pure: text in, text out, so the layout is a golden.

use super::record::{Arg, ArgKind, Launch, Start, Tensor};
use crate::workspace::DType;
use std::fmt::Write as _;

/// Why a launch cannot become a workspace: every reason, each naming the argument.
pub type Problems = Vec<String>;

/// kwb's dtype for a torch dtype name; `None` for those kwb buffers cannot hold (fp8, complex,
/// unsigned beyond 8 bits).
pub fn dtype_of(torch: &str) -> Option<DType> {
    Some(match torch.trim_start_matches("torch.") {
        "float32" => DType::F32,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "float64" => DType::F64,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "int16" => DType::I16,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "bool" => DType::Bool,
        _ => return None,
    })
}

/// What the workspace says about where the launch came from.
pub struct Origin<'a> {
    /// The program, as the user ran it.
    pub command: &'a str,
    pub start: &'a Start,
}

/// A workspace's text, and whether it checks anything (a launch that changed none of its
/// tensors has no outputs kwb can tell).
#[derive(Debug)]
pub struct Text {
    pub text: String,
    pub checked: bool,
}

/// The workspace text for `launch`, or every reason it cannot be one.
pub fn workspace(launch: &Launch, origin: &Origin) -> Result<Text, Problems> {
    let mut problems = launch.problems.clone();
    let mut buffers = String::new();
    let mut reference = String::new();
    let mut args = Vec::new();
    for (i, a) in launch.args.iter().enumerate() {
        let at = || format!("argument {i} (`{}`)", a.name);
        match &a.kind {
            ArgKind::Tensor(Tensor {
                alias_of: Some(j), ..
            }) => match launch.args.get(*j) {
                Some(first) if *j < i => args.push(first.name.clone()),
                _ => problems.push(format!("{}: the same memory as argument {j}", at())),
            },
            ArgKind::Tensor(t) => match buffer(a, t) {
                Ok((line, out)) => {
                    buffers += &line;
                    if let Some(out) = out {
                        let _ = writeln!(reference, "    {}: {}", a.name, quoted(&out));
                    }
                    args.push(a.name.clone());
                }
                Err(why) => problems.push(format!("{}: {why}", at())),
            },
            ArgKind::Int { value } => args.push(value.to_string()),
            ArgKind::Bool { value } => args.push(u8::from(*value).to_string()),
            ArgKind::Float { value } => match float_literal(value) {
                Some(f) => args.push(f),
                None => problems.push(format!(
                    "{}: the float {value}, which kwb cannot pass",
                    at()
                )),
            },
            ArgKind::None => args.push("None".into()),
            ArgKind::Other { type_name } => {
                problems.push(format!("{}: a `{type_name}`, which kwb cannot pass", at()))
            }
        }
    }
    let mut constexprs = Vec::new();
    for (name, v) in &launch.constexprs {
        match constexpr_literal(v) {
            Some(text) => constexprs.push(format!("{name}: {text}")),
            None => problems.push(format!("constexpr `{name}`: {v}, which kwb cannot take")),
        }
    }
    if !problems.is_empty() {
        problems.sort();
        problems.dedup();
        return Err(problems);
    }

    let mut y = String::new();
    let line = launch.line.map(|l| format!(":{l}")).unwrap_or_default();
    let _ = writeln!(
        y,
        "# Recorded by `kwb capture` from `{}`: launch {} of `{}` ({}{line}).",
        origin.command.replace('\n', " "),
        launch.launch_index,
        launch.kernel,
        launch.file.display()
    );
    let _ = writeln!(
        y,
        "# The inputs are the program's own; the reference is what Triton's kernel wrote."
    );
    if let Some(s) = launch.num_stages.filter(|&s| s != 3) {
        let _ = writeln!(
            y,
            "# Triton launched it with num_stages={s}; kwb pipelines loops 3 deep unless \
             `tl.range(..., num_stages=)` says otherwise."
        );
    }
    let _ = writeln!(y, "name: {}", quoted(&launch.kernel));
    let _ = writeln!(y, "sizes:\n  - {{name: {}}}", quoted(&size_name(launch)));
    let _ = writeln!(y, "buffers:\n{buffers}");
    if reference.is_empty() {
        y += "# The launch changed none of its tensors: there is nothing to check.\n";
        if let Some(e) = &launch.probe_error {
            let _ = writeln!(y, "# A replay to find its outputs failed: {e}");
        }
    } else {
        if !launch.probed.is_empty() {
            let _ = writeln!(
                y,
                "# Every tensor already held what this launch wrote (an earlier identical launch \
                 left it there); replays with each tensor filled with 0xff bytes found the \
                 outputs: {}.",
                launch.probed.join(", ")
            );
        }
        let _ = writeln!(y, "reference:\n  npy:\n{reference}");
        if !launch.spread.is_empty() {
            let each: Vec<String> = (launch.spread.iter())
                .map(|(name, d)| format!("{name} by up to {d:e}"))
                .collect();
            let _ = writeln!(
                y,
                "# Triton's own replay of this launch differed from its first run ({}): float \
                 atomics add in no fixed order. The tolerance allows four times that.",
                each.join(", ")
            );
        }
        if let Some((rtol, atol)) = tolerance(launch) {
            let _ = writeln!(
                y,
                "# fp32 sums and atomics round by the order of their additions, which kwb's \
                 code and Triton's need not share; one tolerance serves every output, the \
                 loosest of their dtypes'.\ntolerance: {{rtol: {rtol:e}, atol: {atol:e}}}\n"
            );
        }
    }
    let _ = writeln!(y, "versions:\n  triton:");
    let _ = writeln!(
        y,
        "    file: {}",
        quoted(&launch.file.display().to_string())
    );
    let _ = writeln!(y, "    entry: {}", launch.kernel);
    let grid: Vec<String> = (0..3)
        .map(|d| launch.grid.get(d).copied().unwrap_or(1).to_string())
        .collect();
    let _ = writeln!(y, "    grid: [{}]", grid.join(", "));
    let _ = writeln!(y, "    num_warps: {}", launch.num_warps);
    if !launch.sys_path.is_empty() {
        let dirs: Vec<String> = (launch.sys_path.iter())
            .map(|p| quoted(&p.display().to_string()))
            .collect();
        let _ = writeln!(y, "    python_path: [{}]", dirs.join(", "));
    }
    if !launch.python_globals.is_empty() {
        let _ = writeln!(y, "    python_globals:");
        for (name, dotted) in &launch.python_globals {
            let _ = writeln!(y, "      {}: {}", quoted(name), quoted(dotted));
        }
    }
    match &origin.start.triton_version {
        // Compiled Triton's float sums add in an order its releases changed (3.8): follow the
        // release that made the reference.
        Some(v) if !origin.start.interpret && crate::workspace::triton_release(v).is_some() => {
            let _ = writeln!(y, "    triton: {}", quoted(v));
        }
        _ => {}
    }
    if !constexprs.is_empty() {
        let _ = writeln!(y, "    constexprs:");
        for c in &constexprs {
            let _ = writeln!(y, "      {c}");
        }
    }
    let _ = writeln!(y, "    args: [{}]", args.join(", "));
    if let Some(us) = launch.triton_us.filter(|u| u.is_finite() && *u > 0.0) {
        let name = match &origin.start.triton_version {
            Some(v) => format!("Triton {v}"),
            None => "Triton".into(),
        };
        let note = format!(
            "CUPTI kernel records through torch.profiler, L2 flushed before each of {} samples{}",
            launch.triton_samples.unwrap_or(0),
            origin
                .start
                .device
                .as_ref()
                .map(|d| format!(", {d}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            y,
            "    baseline: {{name: {}, us: {us}, note: {}}}",
            quoted(&name),
            quoted(&note)
        );
    }
    Ok(Text {
        text: y,
        checked: !reference.is_empty(),
    })
}

/// A buffer's YAML line, and the file of its expected contents when the launch changed it.
fn buffer(a: &Arg, t: &Tensor) -> Result<(String, Option<String>), String> {
    let dtype = dtype_of(&t.dtype).ok_or_else(|| format!("a {} tensor", t.dtype))?;
    if t.span == 0 {
        return Err("an empty tensor".into());
    }
    let input = t
        .input
        .as_ref()
        .ok_or("its contents were not recorded (see the capture's messages)")?;
    let output = match (t.changed, &t.output) {
        (true, None) => return Err("its contents after the launch were not recorded".into()),
        (true, Some(o)) => Some(o.clone()),
        (false, _) => None,
    };
    let line = format!(
        "  {}: {{dtype: {dtype}, shape: [{}], init: {{npy: {}}}{}}}\n",
        a.name,
        t.span,
        quoted(input),
        if output.is_some() {
            ", output: true"
        } else {
            ""
        }
    );
    Ok((line, output))
}

/// The workspace's tolerance, when the outputs' own defaults will not do: an fp32 (or fp64)
/// output gets rtol 1e-3 (Triton's sums in another order), and with outputs of several dtypes
/// the loosest of each bound, since a workspace has one tolerance for all its outputs.
fn tolerance(launch: &Launch) -> Option<(f64, f64)> {
    let outs: Vec<DType> = (launch.args.iter())
        .filter_map(|a| match &a.kind {
            ArgKind::Tensor(t) if t.changed => dtype_of(&t.dtype),
            _ => None,
        })
        .collect();
    let wide = outs.iter().any(|d| matches!(d, DType::F32 | DType::F64));
    let mixed = outs.windows(2).any(|w| w[0] != w[1]);
    // Triton's own spread between two runs, four times over: kwb's order of atomic additions
    // is another draw from the same spread.
    let spread = (launch.spread.values().copied())
        .filter(|s| s.is_finite())
        .fold(0.0f64, f64::max)
        * 4.0;
    if !wide && !mixed && spread == 0.0 {
        return None;
    }
    let spread_atol = |t: (f64, f64)| (t.0, t.1.max(spread));
    outs.iter()
        .map(|&d| {
            let t = crate::run::host::check::default_tolerance(d);
            let rtol = if matches!(d, DType::F32 | DType::F64) {
                t.rtol.max(1e-3)
            } else {
                t.rtol
            };
            (rtol, t.atol)
        })
        .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1)))
        .map(spread_atol)
}

/// The size's name: the first tensor's shape and dtype, `x 4096x8192 bf16`.
fn size_name(launch: &Launch) -> String {
    let first = launch.args.iter().find_map(|a| match &a.kind {
        ArgKind::Tensor(t) => Some((a, t)),
        _ => None,
    });
    match first {
        Some((a, t)) => {
            let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
            let dtype = dtype_of(&t.dtype).map_or(t.dtype.clone(), |d| d.to_string());
            format!("{} {} {dtype}", a.name, dims.join("x"))
        }
        None => "captured".into(),
    }
}

/// A float argument as an expression kwb types as a float (`2.0`, not `2`); `None` for inf and
/// NaN, which a workspace cannot write.
fn float_literal(v: &serde_json::Value) -> Option<String> {
    let f = v.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    let s = format!("{f:?}");
    Some(if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    })
}

/// A recorded constexpr as the workspace writes it: a number, a quoted Python string, a dtype
/// or `None`.
fn constexpr_literal(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    Some(match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Number(n) if n.is_f64() => float_literal(v)?,
        Value::Number(n) => n.to_string(),
        Value::Object(o) => match (o.get("str"), o.get("dtype")) {
            (Some(Value::String(s)), None) if !s.contains('\'') => quoted(&format!("'{s}'")),
            (Some(Value::String(s)), None) if !s.contains('"') => quoted(&format!("\"{s}\"")),
            (None, Some(Value::String(d))) => format!("tl.{}", triton_dtype(d)),
            _ => return None,
        },
        _ => return None,
    })
}

/// `tl.`'s name for a Triton dtype the hook records by its short name (`fp16`, `bf16`).
fn triton_dtype(short: &str) -> &str {
    match short {
        "fp16" => "float16",
        "bf16" => "bfloat16",
        "fp32" => "float32",
        "fp64" => "float64",
        other => other,
    }
}

/// A YAML double-quoted scalar (JSON's escaping is YAML's).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::Record;

    fn launch(args: &str) -> Launch {
        let line = format!(
            r#"{{"type": "launch", "kernel": "k", "file": "/p/k.py", "line": 7, "num_warps": 8,
            "num_stages": 4, "grid": [12, 3], "launch_index": 2, "triton_us": 12.5,
            "triton_samples": 20, "constexprs": {{"BLOCK": 1024, "ACT": {{"str": "gelu"}},
            "DT": {{"dtype": "bf16"}}, "B": null, "EPS": 1e-6}}, "args": [{args}]}}"#
        );
        match serde_json::from_str::<Record>(&line.replace('\n', " ")).unwrap() {
            Record::Launch(l) => *l,
            _ => panic!("not a launch"),
        }
    }

    fn tensor(name: &str, dtype: &str, changed: bool) -> String {
        let out = if changed {
            format!("\"{name}.out.npy\"")
        } else {
            "null".into()
        };
        format!(
            r#"{{"name": "{name}", "kind": "tensor", "dtype": "{dtype}", "shape": [4, 8],
            "strides": [8, 1], "span": 32, "input": "{name}.npy", "output": {out},
            "changed": {changed}}}"#
        )
    }

    fn start() -> Start {
        Start {
            triton_version: Some("3.6.0".into()),
            device: Some("NVIDIA H100 80GB HBM3".into()),
            ..Start::default()
        }
    }

    #[test]
    fn a_launch_becomes_a_workspace_with_its_inputs_reference_and_baseline() {
        let args = [
            tensor("x", "bfloat16", false),
            tensor("y", "bfloat16", true),
            tensor("m", "float32", true),
            r#"{"name": "n", "kind": "int", "value": 32}"#.into(),
            r#"{"name": "s", "kind": "float", "value": 2}"#.into(),
            r#"{"name": "f", "kind": "bool", "value": true}"#.into(),
            r#"{"name": "b", "kind": "none"}"#.into(),
            r#"{"name": "y2", "kind": "tensor", "dtype": "bfloat16", "span": 32, "alias_of": 1}"#
                .into(),
        ];
        let start = start();
        let origin = Origin {
            command: "python3 train.py",
            start: &start,
        };
        let y = workspace(&launch(&args.join(", ")), &origin).unwrap().text;
        for want in [
            "from `python3 train.py`: launch 2 of `k` (/p/k.py:7)",
            "num_stages=4",
            "  - {name: \"x 4x8 bf16\"}",
            "  x: {dtype: bf16, shape: [32], init: {npy: \"x.npy\"}}\n",
            "  y: {dtype: bf16, shape: [32], init: {npy: \"y.npy\"}, output: true}\n",
            "    y: \"y.out.npy\"\n    m: \"m.out.npy\"\n",
            // bf16 and fp32 outputs: the loosest bound of each.
            "tolerance: {rtol: 1.6e-2, atol: 1e-2}",
            "    grid: [12, 3, 1]\n    num_warps: 8\n    triton: \"3.6.0\"\n",
            // in name order (the record's JSON object keeps no order)
            "      ACT: \"'gelu'\"\n      B: None\n      BLOCK: 1024\n      DT: tl.bfloat16\n      EPS: 1e-6\n",
            "    args: [x, y, m, 32, 2.0, 1, None, y]\n",
            "baseline: {name: \"Triton 3.6.0\", us: 12.5, note: \"CUPTI kernel records through \
             torch.profiler, L2 flushed before each of 20 samples, NVIDIA H100 80GB HBM3\"}",
        ] {
            assert!(y.contains(want), "no `{want}` in\n{y}");
        }
        let only_bf16 = workspace(&launch(&tensor("y", "bfloat16", true)), &origin)
            .unwrap()
            .text;
        assert!(!only_bf16.contains("tolerance:"), "{only_bf16}");
        let f32 = workspace(&launch(&tensor("y", "float32", true)), &origin)
            .unwrap()
            .text;
        assert!(f32.contains("tolerance: {rtol: 1e-3, atol: 1e-5}"), "{f32}");
        // Triton's own run-to-run spread (float atomics) widens the bound: four times it.
        let mut spread = launch(&tensor("y", "bfloat16", true));
        spread.spread.insert("y".into(), 0.25);
        let y = workspace(&spread, &origin).unwrap().text;
        assert!(
            y.contains("differed from its first run (y by up to 2.5e-1)")
                && y.contains("tolerance: {rtol: 1.6e-2, atol: 1e0}"),
            "{y}"
        );
        // The interpreter's reference follows no compiled release's order of additions.
        let interpreted = Start {
            interpret: true,
            ..start.clone()
        };
        let origin = Origin {
            command: "python3 train.py",
            start: &interpreted,
        };
        let y = workspace(&launch(&tensor("y", "float32", true)), &origin)
            .unwrap()
            .text;
        assert!(!y.contains("    triton: \""), "{y}");
    }

    #[test]
    fn what_kwb_cannot_take_is_every_reason_named() {
        let args = [
            tensor("q", "float8_e4m3fn", false),
            r#"{"name": "d", "kind": "other", "type": "TensorDescriptor"}"#.into(),
            r#"{"name": "s", "kind": "float", "value": "inf"}"#.into(),
        ];
        let start = start();
        let origin = Origin {
            command: "p",
            start: &start,
        };
        let e = workspace(&launch(&args.join(", ")), &origin).unwrap_err();
        assert_eq!(
            e,
            [
                "argument 0 (`q`): a float8_e4m3fn tensor",
                "argument 1 (`d`): a `TensorDescriptor`, which kwb cannot pass",
                "argument 2 (`s`): the float \"inf\", which kwb cannot pass",
            ]
        );
    }
}
