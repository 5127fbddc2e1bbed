//! The names a kernel can use without defining them: `tl.*` built-ins and dtypes, the math
//! modules (`tl.math`, `libdevice`), Python's built-ins, tile methods (`x.to`, `x.sum`), and
//! "did you mean" suggestions by edit distance over whatever is known.

use super::value::Val;
use crate::tile::ir::Scalar;

/// Functions under `tl.` (canonical names: a method or math alias maps onto one of these).
pub(super) const TL_FUNCS: &[&str] = &[
    "program_id",
    "num_programs",
    "arange",
    "zeros",
    "zeros_like",
    "full",
    "load",
    "store",
    "cdiv",
    "fdiv",
    "where",
    "maximum",
    "minimum",
    "fma",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "abs",
    "sigmoid",
    "erf",
    "sin",
    "cos",
    "tanh",
    "floor",
    "ceil",
    "sum",
    "max",
    "min",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "associative_scan",
    "reduce",
    "sort",
    "philox",
    "philox_impl",
    "randint",
    "randint4x",
    "rand",
    "rand4x",
    "randn",
    "randn4x",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
    "umulhi",
    "join",
    "split",
    "interleave",
    "flip",
    "ravel",
    "clamp",
    "swizzle2d",
    "reshape",
    "view",
    "broadcast_to",
    "broadcast",
    "trans",
    "permute",
    "expand_dims",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_xchg",
    "atomic_cas",
    "multiple_of",
    "max_contiguous",
    "debug_barrier",
    "assume",
    "range",
    "static_range",
    "static_assert",
    "static_print",
    "device_print",
    "device_assert",
    "dot",
    "cast",
    "next_power_of_2",
    "make_tensor_descriptor",
    "make_block_ptr",
    "advance",
    "pointer_type",
];

/// `tl.random.*` (also under `tl.`).
const RANDOM: &[&str] = &[
    "philox",
    "philox_impl",
    "randint",
    "randint4x",
    "rand",
    "rand4x",
    "randn",
    "randn4x",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
];

pub(super) const DTYPES: &[(&str, Scalar)] = &[
    ("int1", Scalar::I1),
    ("int8", Scalar::I8),
    ("int16", Scalar::I16),
    ("int32", Scalar::I32),
    ("int64", Scalar::I64),
    ("uint8", Scalar::U8),
    ("uint16", Scalar::U16),
    ("uint32", Scalar::U32),
    ("uint64", Scalar::U64),
    ("float16", Scalar::F16),
    ("bfloat16", Scalar::BF16),
    ("float32", Scalar::F32),
    ("float64", Scalar::F64),
];

/// Triton's 8-bit float dtypes. kwb knows them by name, so that a kernel may compare a
/// pointer's element type with them (`if c_ptr.dtype.element_ty == tl.float8e4nv:`), but it
/// does not compute in them: any other use is an error at its line.
pub(super) const FP8: &[&str] = &[
    "float8e4nv",
    "float8e5",
    "float8e4b15",
    "float8e4b8",
    "float8e5b16",
];

/// `tl.math.*` and `libdevice.*`, as `(name, canonical)`.
const MATH: &[(&str, &str)] = &[
    ("fdiv", "fdiv"),
    ("exp", "exp"),
    ("exp2", "exp2"),
    ("log", "log"),
    ("log2", "log2"),
    ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"),
    ("abs", "abs"),
    ("fabs", "abs"),
    ("sigmoid", "sigmoid"),
    ("erf", "erf"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tanh", "tanh"),
    ("floor", "floor"),
    ("ceil", "ceil"),
    ("fma", "fma"),
    ("umulhi", "umulhi"),
    ("max", "maximum"),
    ("min", "minimum"),
    ("fmax", "maximum"),
    ("fmin", "minimum"),
];

/// Python built-ins a kernel may call.
pub(super) const PYTHON_BUILTINS: &[(&str, &str)] = &[
    ("range", "py.range"),
    ("float", "py.float"),
    ("int", "py.int"),
    ("bool", "py.bool"),
    ("min", "py.min"),
    ("max", "py.max"),
    ("len", "py.len"),
    ("print", "py.print"),
    ("abs", "abs"),
];

/// Methods of a runtime value, as `(attribute, built-in)`: `x.f(args)` is `tl.f(x, args)`.
pub(super) const METHODS: &[(&str, &str)] = &[
    ("to", "cast"),
    ("cast", "cast"),
    ("sum", "sum"),
    ("max", "max"),
    ("min", "min"),
    ("argmax", "argmax"),
    ("argmin", "argmin"),
    ("cumsum", "cumsum"),
    ("cumprod", "cumprod"),
    ("associative_scan", "associative_scan"),
    ("reduce", "reduce"),
    ("sort", "sort"),
    ("split", "split"),
    ("flip", "flip"),
    ("ravel", "ravel"),
    ("reshape", "reshape"),
    ("view", "reshape"),
    ("broadcast_to", "broadcast_to"),
    ("trans", "trans"),
    ("permute", "permute"),
    ("expand_dims", "expand_dims"),
    ("exp", "exp"),
    ("exp2", "exp2"),
    ("log", "log"),
    ("log2", "log2"),
    ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"),
    ("abs", "abs"),
    ("sigmoid", "sigmoid"),
    ("erf", "erf"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tanh", "tanh"),
    ("floor", "floor"),
    ("ceil", "ceil"),
    ("logical_and", "logical_and"),
    ("logical_or", "logical_or"),
];

pub(super) fn python_builtin(name: &str) -> Option<Val> {
    PYTHON_BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| Val::Builtin(c))
}

pub(super) fn method(name: &str) -> Option<&'static str> {
    METHODS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

/// Whether a module (by the checker's name for it) has names kernels can use.
pub(super) fn is_kernel_module(m: &str) -> bool {
    matches!(
        m,
        "triton"
            | "tl"
            | "tl.math"
            | "tl.extra"
            | "tl.extra.cuda"
            | "libdevice"
            | "tl.PropagateNan"
            | "tl.random"
    )
}

/// `m.attr`, for the kernel modules.
pub(super) fn module_attr(m: &str, attr: &str) -> Option<Val> {
    let math = || {
        MATH.iter()
            .find(|(n, _)| *n == attr)
            .map(|(_, c)| Val::Builtin(c))
    };
    match m {
        "triton" => match attr {
            "language" => Some(Val::Module("tl".into())),
            "cdiv" => Some(Val::Builtin("cdiv")),
            "next_power_of_2" => Some(Val::Builtin("next_power_of_2")),
            _ => None,
        },
        "tl" => match attr {
            "math" => Some(Val::Module("tl.math".into())),
            "extra" => Some(Val::Module("tl.extra".into())),
            "constexpr" => Some(Val::ConstexprMarker),
            "PropagateNan" => Some(Val::Module("tl.PropagateNan".into())),
            "random" => Some(Val::Module("tl.random".into())),
            _ => DTYPES
                .iter()
                .find(|(n, _)| *n == attr)
                .map(|(_, s)| Val::DType(*s))
                .or_else(|| FP8.iter().find(|n| **n == attr).map(|n| Val::Fp8(n)))
                .or_else(|| {
                    TL_FUNCS
                        .iter()
                        .find(|n| **n == attr)
                        .map(|n| Val::Builtin(n))
                }),
        },
        "tl.math" => math(),
        "libdevice" => math().or_else(|| {
            (super::libdevice::NAMES.iter())
                .find(|(n, _)| *n == attr)
                .map(|(_, c)| Val::Builtin(c))
        }),
        "tl.extra" => match attr {
            "cuda" => Some(Val::Module("tl.extra.cuda".into())),
            "libdevice" => Some(Val::Module("libdevice".into())),
            _ => None,
        },
        "tl.extra.cuda" => match attr {
            "libdevice" => Some(Val::Module("libdevice".into())),
            "gdc_wait" => Some(Val::Builtin("gdc_wait")),
            "gdc_launch_dependents" => Some(Val::Builtin("gdc_launch_dependents")),
            _ => None,
        },
        "tl.random" => RANDOM.iter().find(|n| **n == attr).map(|n| Val::Builtin(n)),
        // Python's `math` module: its constants, which Triton folds as any global's.
        "math" => match attr {
            "pi" => Some(Val::Float(std::f64::consts::PI)),
            "e" => Some(Val::Float(std::f64::consts::E)),
            "tau" => Some(Val::Float(std::f64::consts::TAU)),
            "inf" => Some(Val::Float(f64::INFINITY)),
            "nan" => Some(Val::Float(f64::NAN)),
            _ => None,
        },
        "tl.PropagateNan" => match attr {
            "NONE" => Some(Val::Int(0)),
            "ALL" => Some(Val::Int(super::standard::PROPAGATE_ALL)),
            _ => None,
        },
        _ => None,
    }
}

/// The names of a kernel module, for suggestions.
pub(super) fn module_names(m: &str) -> Vec<&'static str> {
    match m {
        "triton" => vec!["language", "cdiv", "next_power_of_2"],
        "tl" => {
            let mut v: Vec<&str> = TL_FUNCS.to_vec();
            v.extend(DTYPES.iter().map(|(n, _)| *n));
            v.extend(FP8);
            v.extend(["math", "extra", "constexpr", "PropagateNan", "random"]);
            v
        }
        "tl.math" => MATH.iter().map(|(n, _)| *n).collect(),
        "libdevice" => (MATH.iter().map(|(n, _)| *n))
            .chain(super::libdevice::NAMES.iter().map(|(n, _)| *n))
            .collect(),
        "tl.extra" => vec!["cuda", "libdevice"],
        "tl.extra.cuda" => vec!["libdevice", "gdc_wait", "gdc_launch_dependents"],
        "tl.PropagateNan" => vec!["NONE", "ALL"],
        "tl.random" => RANDOM.to_vec(),
        _ => Vec::new(),
    }
}

/// The value an import path names: `triton.language` → the `tl` module, and so on.
pub(super) fn resolve_path(path: &[String]) -> Val {
    let full = path.join(".");
    let Some(root) = path.first() else {
        return Val::Module(full);
    };
    if root != "triton" {
        return Val::Module(full);
    }
    let mut cur = Val::Module("triton".into());
    for seg in &path[1..] {
        cur = match &cur {
            Val::Module(m) => match module_attr(m, seg) {
                Some(v) => v,
                None => return Val::Module(full),
            },
            _ => return Val::Module(full),
        };
    }
    cur
}

/// The closest known name to `name`, when one is close enough to be a likely typo.
pub(super) fn suggest<'n>(name: &str, known: impl IntoIterator<Item = &'n str>) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        if k == name {
            continue;
        }
        let d = distance(name, k);
        let limit = (name.chars().count() / 3).max(1);
        if d > limit {
            continue;
        }
        if best.is_none_or(|(bd, bk)| d < bd || (d == bd && k < bk)) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k.to_string())
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        assert_eq!(
            suggest("arrange", module_names("tl")),
            Some("arange".into())
        );
        assert_eq!(suggest("offz", ["offs", "mask"]), Some("offs".into()));
        assert_eq!(suggest("zzzzzz", ["offs", "mask"]), None);
    }

    #[test]
    fn import_paths_resolve() {
        let p = |s: &str| resolve_path(&s.split('.').map(String::from).collect::<Vec<_>>());
        assert_eq!(p("triton.language"), Val::Module("tl".into()));
        assert_eq!(
            p("triton.language.extra.cuda.libdevice"),
            Val::Module("libdevice".into())
        );
        assert_eq!(p("triton.language.load"), Val::Builtin("load"));
        assert_eq!(p("torch"), Val::Module("torch".into()));
    }
}
