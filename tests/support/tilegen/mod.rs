//! A generator of random, valid Triton kernels with their launches and inputs, in the manner
//! of Csmith and YARPGen: each program is well defined (no division by zero, no shift past the
//! width, no out-of-bounds access: every load and store is masked), so two correct compilers
//! must agree on it. Seeded and reproducible: `generate(seed)` is the same program on every
//! machine.
//!
//! Float inputs are small dyadic numbers (k/8, |k| <= 32) so that sums, products, maxima and
//! reductions over them are exact in fp32 whatever the order: a program that uses only those
//! operations is compared bit for bit ([`Program::exact`]); one that divides or calls `exp` or
//! `sqrt` is compared within a few ulp.
//!
//! [`print`] writes a program as Python source in a chosen layout: lines split inside brackets
//! at random columns, comments at their ends, trailing commas in calls, backslash
//! continuations. Every layout is the same program.

use super::rng::Rng;

/// An expression, printed with every binary operation in parentheses (so there is always a
/// bracket to split a line in).
#[derive(Clone, Debug)]
pub enum E {
    Atom(String),
    Call(String, Vec<E>, Vec<(String, E)>),
    Bin(&'static str, Box<E>, Box<E>),
    Neg(Box<E>),
    /// `recv.name(args)`, e.g. `x.to(tl.float32)`.
    Method(Box<E>, &'static str, Vec<E>),
    /// `x[idx]`, e.g. `[:, None]`.
    Index(Box<E>, &'static str),
    /// `(then if cond else other)`, its condition on constexprs only.
    IfExp(Box<E>, Box<E>, Box<E>),
}

fn a(s: impl Into<String>) -> E {
    E::Atom(s.into())
}

fn call(f: &str, args: Vec<E>) -> E {
    E::Call(f.to_string(), args, Vec::new())
}

fn bin(op: &'static str, l: E, r: E) -> E {
    E::Bin(op, Box::new(l), Box::new(r))
}

/// A statement of the kernel body.
#[derive(Clone, Debug)]
pub enum S {
    Assign(String, E),
    AugAdd(String, E),
    Expr(E),
    If(E, Vec<S>, Vec<S>),
    For(String, E, Vec<S>),
    While(E, Vec<S>),
    Return,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D {
    F32,
    F16,
    I32,
}

impl D {
    pub fn tl(self) -> &'static str {
        match self {
            D::F32 => "tl.float32",
            D::F16 => "tl.float16",
            D::I32 => "tl.int32",
        }
    }
}

/// A launch argument.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A buffer and its initial contents (every buffer may be written; all are compared).
    Buffer {
        name: String,
        dtype: D,
        shape: Vec<usize>,
        data: Vec<f64>,
    },
    Int(String, i64),
}

#[derive(Clone, Debug)]
pub struct Program {
    pub seed: u64,
    /// `@triton.jit` helpers, each `(name, params, body)`.
    pub helpers: Vec<(String, Vec<String>, Vec<S>)>,
    pub params: Vec<String>,
    pub body: Vec<S>,
    pub args: Vec<Arg>,
    pub constexprs: Vec<(String, i64)>,
    pub grid: u32,
    pub num_warps: u32,
    /// Only exact operations: the results must agree bit for bit.
    pub exact: bool,
    /// Features used, for the coverage report.
    pub features: Vec<&'static str>,
}

/// Values in scope while generating: name and dtype, all tiles of the kernel's shape.
struct Gen<'r> {
    r: &'r mut Rng,
    /// Name, dtype, and the significant bits its float values may need ([`Gen::bits`]).
    vars: Vec<(String, D, u32)>,
    exact: bool,
    /// No inexact value may be used here: what decides an integer or a choice (`.to(tl.int32)`
    /// of a float, a comparison) must be exact, or a last-bit difference allowed between two
    /// correct compilers would become a large one.
    strict: bool,
    features: Vec<&'static str>,
    fresh: u32,
    /// The 2-D kernel: tiles are `[R, C]`.
    two_d: bool,
    /// Generating a helper's body: the kernel's names (`s`) are not in scope.
    in_helper: bool,
}

impl Gen<'_> {
    fn feature(&mut self, f: &'static str) {
        if !self.features.contains(&f) {
            self.features.push(f);
        }
    }

    fn var_of(&mut self, d: D) -> Option<String> {
        let strict = self.strict;
        let names: Vec<String> = self
            .vars
            .iter()
            .filter(|(_, t, bits)| *t == d && !(strict && *t != D::I32 && *bits > EXACT))
            .map(|(n, _, _)| n.clone())
            .collect();
        if names.is_empty() {
            return None;
        }
        Some(names[self.r.below(names.len())].clone())
    }

    fn literal(&mut self, d: D) -> E {
        match d {
            D::I32 => a(self.r.pick(&["3", "-7", "1", "2", "-1", "5"])),
            _ => a(self.r.pick(&["0.5", "1.25", "-2.0", "3.0", "0.125"])),
        }
    }

    /// A leaf of dtype `d`: a variable, a literal, or another dtype's variable converted.
    fn leaf(&mut self, d: D) -> E {
        match self.r.below(6) {
            0 => self.literal(d),
            1 => {
                let other = [D::F32, D::F16, D::I32][self.r.below(3)];
                let was = self.strict;
                self.strict |= d == D::I32;
                let v = self.var_of(other);
                self.strict = was;
                match v {
                    Some(v) if other != d => {
                        self.feature("cast");
                        let x = self.tile(a(v), other);
                        E::Method(Box::new(x), "to", vec![a(d.tl())])
                    }
                    _ => self.var_of(d).map_or_else(|| self.literal(d), a),
                }
            }
            2 if d == D::I32 && !self.in_helper => {
                self.feature("scalar-arg");
                a("s")
            }
            _ => self.var_of(d).map_or_else(|| self.literal(d), a),
        }
    }

    /// An expression of dtype `d`, at most `depth` operations deep.
    fn expr(&mut self, d: D, depth: u32) -> E {
        if depth == 0 || self.r.below(5) == 0 {
            return self.leaf(d);
        }
        let sub = |g: &mut Self| g.expr(d, depth - 1);
        if d == D::I32 {
            return match self.r.below(13) {
                0..=2 => {
                    let op = self.r.pick(&["+", "-", "*"]);
                    let op: &'static str = match op {
                        "+" => "+",
                        "-" => "-",
                        _ => "*",
                    };
                    self.feature("int-arith");
                    bin(op, sub(self), sub(self))
                }
                3 => {
                    // C-style `//` and `%` by a nonzero literal, negative ones included.
                    self.feature("int-div-rem");
                    let op = if self.r.below(2) == 0 { "//" } else { "%" };
                    bin(op, sub(self), a(self.r.pick(&["3", "-4", "7", "-2", "2"])))
                }
                4 => {
                    self.feature("int-div-rem");
                    let den = sub(self);
                    let den = self.tile(den, D::I32);
                    let safe = call(
                        "tl.where",
                        vec![bin("==", den.clone(), a("0")), a("1"), den],
                    );
                    let op = if self.r.below(2) == 0 { "//" } else { "%" };
                    bin(op, sub(self), safe)
                }
                5 => {
                    self.feature("bitwise");
                    let op = self.r.pick(&["&", "|", "^"]);
                    let op: &'static str = match op {
                        "&" => "&",
                        "|" => "|",
                        _ => "^",
                    };
                    bin(op, sub(self), sub(self))
                }
                6 => {
                    self.feature("shift");
                    let op = if self.r.below(2) == 0 { "<<" } else { ">>" };
                    bin(op, sub(self), a(self.r.pick(&["0", "1", "3", "7"])))
                }
                7 => {
                    self.feature("min-max");
                    let f = if self.r.below(2) == 0 {
                        "tl.maximum"
                    } else {
                        "tl.minimum"
                    };
                    call(f, vec![sub(self), sub(self)])
                }
                8 => self.select(D::I32, depth),
                9 => {
                    // A comparison's result as an integer.
                    self.feature("compare");
                    let c = self.compare(depth - 1);
                    E::Method(Box::new(c), "to", vec![a("tl.int32")])
                }
                10 => {
                    // A float truncated toward zero (values are small: no overflow, no NaN).
                    self.feature("float-to-int");
                    let was = std::mem::replace(&mut self.strict, true);
                    let f = self.exact_expr(D::F32, depth - 1);
                    let f = self.tile(f, D::F32);
                    self.strict = was;
                    E::Method(Box::new(f), "to", vec![a("tl.int32")])
                }
                12 if !self.in_helper => self.if_exp(d, depth),
                _ => E::Neg(Box::new(sub(self))),
            };
        }
        match self.r.below(15) {
            0..=3 => {
                self.feature("float-arith");
                let op = self.r.pick(&["+", "-", "*"]);
                let op: &'static str = match op {
                    "+" => "+",
                    "-" => "-",
                    _ => "*",
                };
                bin(op, sub(self), sub(self))
            }
            4 => {
                self.feature("min-max");
                let f = if self.r.below(2) == 0 {
                    "tl.maximum"
                } else {
                    "tl.minimum"
                };
                let (x, y) = (sub(self), sub(self));
                // Triton 3.6 makes a Python float a float32 tensor before `maximum`/`minimum`
                // (an fp16 tensor then computes in fp32); 3.9 leaves it a weak scalar (fp16).
                // kwb follows 3.9; the GPU hosts run 3.6. So an fp16 min/max gets tensors only
                // (docs/differential.md, "Triton versions").
                let weak = |g: &mut Self, e: E| match e {
                    E::Atom(lit) if d == D::F16 && lit.contains('.') => g.tile(a(lit), d),
                    e => e,
                };
                let (x, y) = (weak(self, x), weak(self, y));
                call(f, vec![x, y])
            }
            5 => self.select(d, depth),
            6 => {
                self.feature("abs");
                call("tl.abs", vec![sub(self)])
            }
            7 => E::Neg(Box::new(sub(self))),
            8 if !self.strict => {
                self.feature("division");
                self.exact = false;
                bin(
                    "/",
                    sub(self),
                    bin("+", call("tl.abs", vec![sub(self)]), a("1.0")),
                )
            }
            9 if d == D::F32 && !self.strict => {
                self.feature("transcendental");
                self.exact = false;
                let f = self.r.pick(&["tl.exp", "tl.sqrt", "tl.sigmoid"]);
                let x = sub(self);
                match f {
                    "tl.exp" => call("tl.exp", vec![call("tl.minimum", vec![x, a("4.0")])]),
                    "tl.sqrt" => call("tl.sqrt", vec![call("tl.abs", vec![x])]),
                    _ => call("tl.sigmoid", vec![x]),
                }
            }
            10 => {
                // Another dtype's expression converted (f16 rounding, int to float).
                self.feature("cast");
                let other = if d == D::F16 { D::F32 } else { D::F16 };
                let other = if self.r.below(2) == 0 { D::I32 } else { other };
                let x = self.expr(other, depth - 1);
                let x = self.tile(x, other);
                E::Method(Box::new(x), "to", vec![a(d.tl())])
            }
            13 if d == D::F32 => {
                // Rounded once when compiled, twice in Triton's interpreter: exact only while
                // the bits fit (`bits`).
                // Operands of at most 10, 10 and 20 bits: the product and the sum are exact,
                // so fused and unfused agree (a cancelling `fma(a, b, c) - a * b` over wide
                // values exposed the product's rounding, seed 356858).
                self.feature("fma");
                let narrow = |g: &mut Self, bits: u32| {
                    let e = g.expr(d, depth - 1);
                    if g.bits(&e) <= bits {
                        return e;
                    }
                    g.literal(d)
                };
                let (x, y, z) = (narrow(self, 10), narrow(self, 10), narrow(self, 20));
                let (x, y, z) = (self.tile(x, d), self.tile(y, d), self.tile(z, d));
                call("tl.fma", vec![x, y, z])
            }
            14 if !self.in_helper => self.if_exp(d, depth),
            _ => bin("*", sub(self), self.literal(d)),
        }
    }

    /// `(x if COND else y)` on the kernel's constexprs: `and`/`or` of comparisons, folded at
    /// compile time (Triton folds it too), so either side may be of the other branch's dtype.
    fn if_exp(&mut self, d: D, depth: u32) -> E {
        self.feature("if-expression");
        let names: &[&str] = if self.two_d { &["R", "C"] } else { &["BLOCK"] };
        let cmp = |g: &mut Self| {
            let n = names[g.r.below(names.len())];
            let op = g.r.pick(&["<", ">=", "=="]);
            let op: &'static str = match op {
                "<" => "<",
                ">=" => ">=",
                _ => "==",
            };
            bin(op, a(n), a(g.r.pick(&["16", "32", "64"])))
        };
        let mut c = cmp(self);
        if self.r.below(2) == 0 {
            self.feature("constexpr-logic");
            let op = if self.r.below(2) == 0 { "and" } else { "or" };
            c = bin(op, c, cmp(self));
        }
        let (x, y) = (self.expr(d, depth - 1), self.expr(d, depth - 1));
        E::IfExp(Box::new(c), Box::new(x), Box::new(y))
    }

    fn compare(&mut self, depth: u32) -> E {
        let was = std::mem::replace(&mut self.strict, true);
        let c = self.compare_of(depth);
        self.strict = was;
        c
    }

    fn compare_of(&mut self, depth: u32) -> E {
        let d = [D::F32, D::I32, D::F16][self.r.below(3)];
        let op = self.r.pick(&["<", "<=", ">", ">=", "==", "!="]);
        let op: &'static str = match op {
            "<" => "<",
            "<=" => "<=",
            ">" => ">",
            ">=" => ">=",
            "==" => "==",
            _ => "!=",
        };
        // The left side a tile, so the comparison is one (two literals would fold to a
        // Python bool, which has no `.to`).
        let lhs = self.exact_expr(d, depth);
        let lhs = self.tile(lhs, d);
        let rhs = self.exact_expr(d, depth);
        bin(op, lhs, rhs)
    }

    /// An expression of dtype `d` whose value is exact ([`EXACT`] bits at most): a random one
    /// if it is, else a variable or literal that is.
    fn exact_expr(&mut self, d: D, depth: u32) -> E {
        let e = self.expr(d, depth);
        if d == D::I32 || self.bits(&e) <= EXACT {
            return e;
        }
        match self.var_of(d) {
            Some(v) => a(v),
            None => self.literal(d),
        }
    }

    /// How many significant bits the float value of `e` may need, counting from the inputs'
    /// k/8 grid: a load or literal needs 6 (|v| <= 4, 3 fraction bits), a sum one more than
    /// its widest operand, a product the sum of its operands'. Anything over [`EXACT`] may be
    /// rounded in fp32 (and then depend on the order or on FMA contraction); integers turned
    /// into floats (they may be as large as 2^31) and division and `exp`/`sqrt`/`sigmoid`
    /// count as [`INEXACT`]. Integer values themselves are always exact.
    fn bits(&self, e: &E) -> u32 {
        let max = |x: u32, y: u32| x.max(y).min(INEXACT);
        match e {
            E::Atom(s) => {
                if let Some((_, d, b)) = self.vars.iter().find(|(n, _, _)| n == s) {
                    return if *d == D::I32 { INT } else { *b };
                }
                match s.as_str() {
                    "zf" | "zh" => 0,
                    "bm" => 6,
                    "zi" | "s" | "pid" | "offs" | "i" => INT,
                    _ if s.contains('.') => 6,
                    _ => INT,
                }
            }
            E::Neg(x) | E::Index(x, _) => self.bits(x),
            E::IfExp(_, x, y) => max(self.bits(x), self.bits(y)),
            E::Bin(op, x, y) => {
                let (bx, by) = (self.bits(x), self.bits(y));
                if bx >= INT && by >= INT && !matches!(&**y, E::Atom(z) if z == "zf" || z == "zh") {
                    // Integer arithmetic (or floats already inexact).
                    return INT;
                }
                match *op {
                    "+" | "-" => max(bx, by).saturating_add(1).min(INEXACT),
                    "*" => bx.saturating_add(by).min(INEXACT),
                    "/" => INEXACT,
                    "<" | "<=" | ">" | ">=" | "==" | "!=" => INT,
                    _ => INT,
                }
            }
            E::Call(f, args, kwargs) => {
                let b = |k: usize| args.get(k).map_or(0, |x| self.bits(x));
                match f.as_str() {
                    "tl.exp" | "tl.sqrt" | "tl.sigmoid" => INEXACT,
                    "tl.abs" => b(0),
                    "tl.maximum" | "tl.minimum" => max(b(0), b(1)),
                    "tl.fma" => max(b(0).saturating_add(b(1)), b(2)).saturating_add(1),
                    "tl.where" => max(b(1), b(2)),
                    "tl.sum" | "tl.cumsum" => b(0).saturating_add(7).min(INEXACT),
                    "tl.max" | "tl.min" => b(0),
                    "tl.dot" => b(0).saturating_add(b(1)).saturating_add(4).min(INEXACT),
                    "tl.load" => {
                        if kwargs
                            .iter()
                            .any(|(_, v)| matches!(v, E::Atom(o) if !o.contains('.')))
                        {
                            INT
                        } else {
                            6
                        }
                    }
                    "tl.zeros" | "tl.program_id" | "tl.arange" => INT,
                    _ => INEXACT,
                }
            }
            E::Method(x, _, args) => {
                let to_float = args
                    .iter()
                    .any(|t| matches!(t, E::Atom(t) if t != "tl.int32"));
                let from = self.bits(x);
                match (to_float, self.is_int(x)) {
                    // An integer as a float: it may be as large as 2^31.
                    (true, true) => INEXACT,
                    (true, false) => from,
                    (false, _) => INT,
                }
            }
        }
    }

    /// Whether `e` is an integer tile: `(e + zi)` or a `.to(tl.int32)`, as `tile` writes them.
    fn is_int(&self, e: &E) -> bool {
        match e {
            E::Bin(_, _, z) if matches!(&**z, E::Atom(z) if z == "zi") => true,
            E::Method(_, _, args) => args
                .iter()
                .any(|t| matches!(t, E::Atom(t) if t == "tl.int32")),
            E::Atom(v) => self.vars.iter().any(|(n, d, _)| n == v && *d == D::I32),
            _ => false,
        }
    }

    /// Records the exactness of `e`, of dtype `d`, for the program; gives its bits for the
    /// variable it defines.
    fn note(&mut self, e: &E, d: D) -> u32 {
        if d == D::I32 {
            return INT;
        }
        let b = self.bits(e);
        if b > EXACT {
            self.exact = false;
        }
        b
    }

    /// `bits` of a float that a loop grew, recorded for the program.
    fn grown(&mut self, bits: u32, d: D) -> u32 {
        if d == D::I32 {
            return INT;
        }
        if bits > EXACT {
            self.exact = false;
        }
        bits.min(INEXACT)
    }

    fn select(&mut self, d: D, depth: u32) -> E {
        self.feature("where");
        let c = self.compare(depth - 1);
        let (x, y) = (self.expr(d, depth - 1), self.expr(d, depth - 1));
        call("tl.where", vec![c, x, y])
    }

    /// `e` as a tile of dtype `d` (a literal alone would be a scalar, or of another dtype):
    /// `(e + zeros).to(d)`, with the kernel's zero tiles `zf`, `zh`, `zi`.
    fn tile(&mut self, e: E, d: D) -> E {
        let z = match d {
            D::F32 => "zf",
            D::F16 => "zh",
            D::I32 => "zi",
        };
        E::Method(Box::new(bin("+", e, a(z))), "to", vec![a(d.tl())])
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// A few statements that define new variables, with control flow.
    fn statements(&mut self, body: &mut Vec<S>, n: usize) {
        for _ in 0..n {
            let d = [D::F32, D::F32, D::I32, D::F16][self.r.below(4)];
            match self.r.below(9) {
                0 => {
                    // A runtime `if` on a scalar, assigning the same name in both branches.
                    self.feature("runtime-if");
                    let v = self.name("c");
                    let cond = bin(">", a("s"), a(self.r.pick(&["0", "3", "-2"])));
                    let (t, e) = (self.expr(d, 2), self.expr(d, 2));
                    let (t, e) = (self.tile(t, d), self.tile(e, d));
                    let bits = self.note(&t, d).max(self.note(&e, d));
                    body.push(S::If(
                        cond,
                        vec![S::Assign(v.clone(), t)],
                        vec![S::Assign(v.clone(), e)],
                    ));
                    self.vars.push((v, d, bits));
                }
                1 => {
                    // A loop with a runtime bound carrying an accumulator.
                    self.feature("for-runtime");
                    let v = self.name("acc");
                    let init = self.expr(d, 1);
                    let init = self.tile(init, d);
                    let init_bits = self.note(&init, d);
                    body.push(S::Assign(v.clone(), init));
                    let step = self.expr(d, 2);
                    let bound = bin("+", bin("%", a("s"), a("3")), a("1"));
                    let j = self.name("j");
                    let inc = if d == D::I32 {
                        bin("+", step, a(j.as_str()))
                    } else {
                        step
                    };
                    let inc = self.tile(inc, d);
                    // At most three iterations: two bits more than either part.
                    let bits = init_bits.max(self.note(&inc, d)) + 2;
                    body.push(S::For(
                        j.clone(),
                        call("range", vec![a("0"), bound]),
                        vec![S::AugAdd(v.clone(), inc)],
                    ));
                    let bits = self.grown(bits, d);
                    self.vars.push((v, d, bits));
                }
                2 => {
                    self.feature("static-range");
                    let v = self.name("u");
                    let init = self.expr(d, 1);
                    let init = self.tile(init, d);
                    let init_bits = self.note(&init, d);
                    body.push(S::Assign(v.clone(), init));
                    let step = self.expr(d, 1);
                    let step = self.tile(step, d);
                    let bits = init_bits.max(self.note(&step, d)) + 2;
                    let j = self.name("j");
                    body.push(S::For(
                        j,
                        call("tl.static_range", vec![a("2")]),
                        vec![S::Assign(v.clone(), bin("+", a(v.as_str()), step))],
                    ));
                    let bits = self.grown(bits, d);
                    self.vars.push((v, d, bits));
                }
                3 => {
                    self.feature("while");
                    let v = self.name("w");
                    let init = self.expr(D::I32, 1);
                    let init = self.tile(init, D::I32);
                    body.push(S::Assign(v.clone(), init));
                    let j = self.name("k");
                    body.push(S::Assign(j.clone(), a("0")));
                    let step = self.expr(D::I32, 1);
                    let step = self.tile(step, D::I32);
                    body.push(S::While(
                        bin("<", a(j.as_str()), bin("%", a("s"), a("4"))),
                        vec![S::AugAdd(v.clone(), step), S::AugAdd(j.clone(), a("1"))],
                    ));
                    self.vars.push((v, D::I32, INT));
                }
                4 if !self.two_d && self.r.below(3) == 0 => {
                    // A prefix sum along the tile, in fp32 or int32 (which wraps as Triton's).
                    self.feature("scan");
                    let d = if self.r.below(2) == 0 { D::F32 } else { D::I32 };
                    let v = self.name("c");
                    let x = self.expr(d, 2);
                    let x = self.tile(x, d);
                    let e = E::Call("tl.cumsum".into(), vec![x], vec![("axis".into(), a("0"))]);
                    let bits = self.note(&e, d);
                    body.push(S::Assign(v.clone(), e));
                    self.vars.push((v, d, bits));
                }
                4 if !self.vars.iter().any(|(n, _, _)| n == "red") && !self.two_d => {
                    // A reduction to a scalar, then used by later expressions (broadcast).
                    self.feature("reduction");
                    let f = self.r.pick(&["tl.sum", "tl.max", "tl.min"]);
                    let x = self.expr(D::F32, 2);
                    let x = self.tile(x, D::F32);
                    let e = E::Call(f.into(), vec![x], vec![("axis".into(), a("0"))]);
                    let bits = self.note(&e, D::F32);
                    body.push(S::Assign("red".into(), e));
                    self.vars.push(("red".into(), D::F32, bits));
                }
                _ => {
                    let v = self.name("t");
                    let e = self.expr(d, 3);
                    let bits = self.note(&e, d);
                    body.push(S::Assign(v.clone(), e));
                    self.vars.push((v, d, bits));
                }
            }
        }
    }
}

/// Significant bits an fp32 value holds exactly.
const EXACT: u32 = 24;
/// The bits of a value that may have been rounded already.
const INEXACT: u32 = 1000;
/// The "bits" of an integer value (exact as an integer; inexact once made a float).
const INT: u32 = 999;

/// `zf`, `zh`, `zi`: zero tiles of `shape` in fp32, fp16 and int32.
fn zeros(body: &mut Vec<S>, shape: &str) {
    for (v, d) in [("zf", D::F32), ("zh", D::F16), ("zi", D::I32)] {
        body.push(S::Assign(
            v.into(),
            E::Call(
                "tl.zeros".into(),
                vec![a(shape)],
                vec![("dtype".into(), a(d.tl()))],
            ),
        ));
    }
}

/// Float data: k/8 with |k| <= 32; ints: small and large (wraparound), both signs.
fn data(r: &mut Rng, d: D, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| match d {
            D::I32 => {
                let v = (r.next() % 2001) as i64 - 1000;
                if r.below(8) == 0 {
                    (v * 2_000_003) as i32 as f64
                } else {
                    v as f64
                }
            }
            _ => ((r.next() % 65) as i64 - 32) as f64 / 8.0,
        })
        .collect()
}

fn buffer(r: &mut Rng, name: &str, d: D, shape: Vec<usize>) -> Arg {
    let n = shape.iter().product();
    Arg::Buffer {
        name: name.into(),
        dtype: d,
        shape,
        data: data(r, d, n),
    }
}

/// Program `seed`: a 1-D kernel over blocks of a vector, or a 2-D one over rows of a matrix
/// (with row reductions broadcast back and, sometimes, an fp16 `tl.dot`).
pub fn generate(seed: u64) -> Program {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed);
    let two_d = r.below(3) == 0;
    // Not 1: compiled Triton (and kwb) specialise an argument equal to 1 as a constexpr, which
    // folds `s // -2` with Python's floor, while Triton's interpreter keeps it a tensor
    // (docs/differential.md; tests/tile_interp.rs holds kwb to compiled Triton there).
    let s_val = match (r.next() % 11) as i64 - 3 {
        1 => 2,
        v => v,
    };
    let mut g = Gen {
        r: &mut r,
        vars: Vec::new(),
        exact: true,
        strict: false,
        features: Vec::new(),
        fresh: 0,
        two_d,
        in_helper: false,
    };
    let mut body = Vec::new();
    let mut helpers = Vec::new();
    let (params, args, constexprs, grid, num_warps);
    if !two_d {
        let block = [16i64, 32, 64, 128][g.r.below(4)];
        let n = (g.r.next() % (3 * block as u64)) as usize + 1;
        let programs = n.div_ceil(block as usize) as u32;
        body.push(S::Assign("pid".into(), call("tl.program_id", vec![a("0")])));
        body.push(S::Assign(
            "offs".into(),
            bin(
                "+",
                bin("*", a("pid"), a("BLOCK")),
                call("tl.arange", vec![a("0"), a("BLOCK")]),
            ),
        ));
        body.push(S::Assign("mask".into(), bin("<", a("offs"), a("n"))));
        zeros(&mut body, "[BLOCK]");
        for (v, p, d, other) in [
            ("x", "x_ptr", D::F32, "0.5"),
            ("h", "h_ptr", D::F16, "1.0"),
            ("i", "i_ptr", D::I32, "-3"),
        ] {
            body.push(S::Assign(
                v.into(),
                E::Call(
                    "tl.load".into(),
                    vec![bin("+", a(p), a("offs"))],
                    vec![("mask".into(), a("mask")), ("other".into(), a(other))],
                ),
            ));
            g.vars
                .push((v.into(), d, if d == D::I32 { INT } else { 6 }));
        }
        if g.r.below(3) == 0 {
            g.feature("helper-function");
            // Tiles: a literal argument is a constexpr in compiled Triton (and in kwb) but a
            // tensor in Triton's interpreter (docs/differential.md).
            let (p, q) = (g.expr(D::F32, 1), g.expr(D::F32, 1));
            let (p, q) = (g.tile(p, D::F32), g.tile(q, D::F32));
            let (bp, bq) = (g.note(&p, D::F32), g.note(&q, D::F32));
            let (e, bits) = {
                let saved = std::mem::take(&mut g.vars);
                g.vars = vec![("p".into(), D::F32, bp), ("q".into(), D::F32, bq)];
                g.in_helper = true;
                let e = g.expr(D::F32, 3);
                g.in_helper = false;
                let bits = g.note(&e, D::F32);
                g.vars = saved;
                (e, bits)
            };
            helpers.push((
                "helper".to_string(),
                vec!["p".to_string(), "q".to_string()],
                vec![
                    // The helper's zero tiles, for `tile()`, from its fp32 parameter: from a
                    // comparison, as `p * 0.0` is NaN for an infinite `p`, and NaN's int32 is
                    // undefined (INT_MIN in numpy, 0 on the GPU; seed 381275).
                    S::Assign(
                        "zf".into(),
                        bin(
                            "*",
                            E::Method(
                                Box::new(bin("!=", a("p"), a("p"))),
                                "to",
                                vec![a("tl.float32")],
                            ),
                            a("0.0"),
                        ),
                    ),
                    S::Assign(
                        "zh".into(),
                        E::Method(Box::new(a("zf")), "to", vec![a("tl.float16")]),
                    ),
                    S::Assign(
                        "zi".into(),
                        E::Method(Box::new(a("zf")), "to", vec![a("tl.int32")]),
                    ),
                    S::Expr(E::Call("return".into(), vec![e], Vec::new())),
                ],
            ));
            body.push(S::Assign("hv".into(), call("helper", vec![p, q])));
            g.vars.push(("hv".into(), D::F32, bits));
        }
        let count = 1 + g.r.below(4);
        g.statements(&mut body, count);
        if g.r.below(6) == 0 {
            g.feature("early-return");
            body.push(S::If(
                bin("==", a("pid"), a("1")),
                vec![S::Return],
                Vec::new(),
            ));
        }
        let yf = g.expr(D::F32, 3);
        let yi = g.expr(D::I32, 3);
        let yh = g.expr(D::F16, 2);
        let (yf, yi, yh) = (g.tile(yf, D::F32), g.tile(yi, D::I32), g.tile(yh, D::F16));
        g.note(&yf, D::F32);
        g.note(&yh, D::F16);
        for (p, e) in [("yf_ptr", yf), ("yi_ptr", yi), ("yh_ptr", yh)] {
            body.push(S::Expr(E::Call(
                "tl.store".into(),
                vec![bin("+", a(p), a("offs")), e],
                vec![("mask".into(), a("mask"))],
            )));
        }
        if g.r.below(4) == 0 {
            g.feature("atomic-add");
            let v = g.expr(D::I32, 2);
            let v = g.tile(v, D::I32);
            body.push(S::Expr(E::Call(
                "tl.atomic_add".into(),
                vec![bin("+", a("acc_ptr"), bin("%", a("offs"), a("4"))), v],
                vec![("mask".into(), a("mask"))],
            )));
        }
        let r = &mut *g.r;
        args = vec![
            buffer(r, "x", D::F32, vec![n]),
            buffer(r, "h", D::F16, vec![n]),
            buffer(r, "i", D::I32, vec![n]),
            buffer(r, "yf", D::F32, vec![n]),
            buffer(r, "yi", D::I32, vec![n]),
            buffer(r, "yh", D::F16, vec![n]),
            buffer(r, "acc", D::I32, vec![4]),
            Arg::Int("n".into(), n as i64),
            Arg::Int("s".into(), s_val),
        ];
        params = [
            "x_ptr", "h_ptr", "i_ptr", "yf_ptr", "yi_ptr", "yh_ptr", "acc_ptr", "n", "s",
        ]
        .map(String::from)
        .to_vec();
        constexprs = vec![("BLOCK".to_string(), block)];
        grid = programs;
        num_warps = [1u32, 2, 4][g.r.below(3)];
    } else {
        // Rows of R, C = 16 columns; an fp16 dot of the row block with a 16x16 matrix.
        let rows = [16i64, 32][g.r.below(2)];
        let m = (g.r.next() % (2 * rows as u64)) as usize + 1;
        let ncols = 9 + g.r.below(8); // 9..=16 valid columns of 16
        body.push(S::Assign("pid".into(), call("tl.program_id", vec![a("0")])));
        body.push(S::Assign(
            "rows".into(),
            bin(
                "+",
                bin("*", a("pid"), a("R")),
                call("tl.arange", vec![a("0"), a("R")]),
            ),
        ));
        body.push(S::Assign(
            "cols".into(),
            call("tl.arange", vec![a("0"), a("C")]),
        ));
        body.push(S::Assign(
            "m2".into(),
            bin(
                "&",
                bin("<", E::Index(Box::new(a("rows")), "[:, None]"), a("M")),
                bin("<", E::Index(Box::new(a("cols")), "[None, :]"), a("N")),
            ),
        ));
        let at = |p: &str| {
            bin(
                "+",
                a(p),
                bin(
                    "+",
                    bin("*", E::Index(Box::new(a("rows")), "[:, None]"), a("N")),
                    E::Index(Box::new(a("cols")), "[None, :]"),
                ),
            )
        };
        body.push(S::Assign(
            "x".into(),
            E::Call(
                "tl.load".into(),
                vec![at("x_ptr")],
                vec![("mask".into(), a("m2")), ("other".into(), a("0.0"))],
            ),
        ));
        body.push(S::Assign(
            "wrow".into(),
            E::Call(
                "tl.load".into(),
                vec![bin("+", a("w_ptr"), a("cols"))],
                vec![
                    ("mask".into(), bin("<", a("cols"), a("N"))),
                    ("other".into(), a("1.0")),
                ],
            ),
        ));
        body.push(S::Assign(
            "w".into(),
            E::Index(Box::new(a("wrow")), "[None, :]"),
        ));
        zeros(&mut body, "[R, C]");
        g.vars.push(("x".into(), D::F32, 6));
        g.vars.push(("w".into(), D::F32, 6));
        // A row reduction broadcast back along the columns, or a prefix sum along either axis.
        let f = g.r.pick(&["tl.sum", "tl.max", "tl.min", "tl.cumsum"]);
        let axis = g.r.below(2);
        let xe = g.expr(D::F32, 2);
        let xe = g.tile(xe, D::F32);
        let idx = if axis == 1 { "[:, None]" } else { "[None, :]" };
        let along = E::Call(
            f.into(),
            vec![xe],
            vec![("axis".into(), a(axis.to_string()))],
        );
        let rr = if f == "tl.cumsum" {
            g.feature(if axis == 1 {
                "scan-axis1"
            } else {
                "scan-axis0"
            });
            along
        } else {
            g.feature(if axis == 1 {
                "reduce-axis1"
            } else {
                "reduce-axis0"
            });
            E::Index(Box::new(along), idx)
        };
        let bits = g.note(&rr, D::F32);
        body.push(S::Assign("rr".into(), rr));
        g.vars.push(("rr".into(), D::F32, bits));
        if g.r.below(3) == 0 {
            g.feature("dot");
            body.push(S::Assign(
                "bm".into(),
                call(
                    "tl.load",
                    vec![bin(
                        "+",
                        a("b_ptr"),
                        bin(
                            "+",
                            bin("*", E::Index(Box::new(a("cols")), "[:, None]"), a("C")),
                            E::Index(Box::new(a("cols")), "[None, :]"),
                        ),
                    )],
                ),
            ));
            let lhs = E::Method(Box::new(a("x")), "to", vec![a("tl.float16")]);
            let dd = call("tl.dot", vec![lhs, a("bm")]);
            let bits = g.note(&dd, D::F32);
            body.push(S::Assign("dd".into(), dd));
            g.vars.push(("dd".into(), D::F32, bits));
        }
        let count = 1 + g.r.below(3);
        g.statements(&mut body, count);
        let y = g.expr(D::F32, 3);
        let y = g.tile(y, D::F32);
        g.note(&y, D::F32);
        body.push(S::Expr(E::Call(
            "tl.store".into(),
            vec![at("y_ptr"), y],
            vec![("mask".into(), a("m2"))],
        )));
        let y2 = g.expr(D::F32, 2);
        let y2 = g.tile(y2, D::F32);
        g.note(
            &E::Call("tl.sum".into(), vec![y2.clone()], Vec::new()),
            D::F32,
        );
        body.push(S::Expr(E::Call(
            "tl.store".into(),
            vec![
                bin("+", a("z_ptr"), a("rows")),
                E::Call("tl.sum".into(), vec![y2], vec![("axis".into(), a("1"))]),
            ],
            vec![("mask".into(), bin("<", a("rows"), a("M")))],
        )));
        let r = &mut *g.r;
        args = vec![
            buffer(r, "x", D::F32, vec![m, ncols]),
            buffer(r, "w", D::F32, vec![ncols]),
            buffer(r, "b", D::F16, vec![16, 16]),
            buffer(r, "y", D::F32, vec![m, ncols]),
            buffer(r, "z", D::F32, vec![m]),
            Arg::Int("M".into(), m as i64),
            Arg::Int("N".into(), ncols as i64),
            Arg::Int("s".into(), s_val),
        ];
        params = ["x_ptr", "w_ptr", "b_ptr", "y_ptr", "z_ptr", "M", "N", "s"]
            .map(String::from)
            .to_vec();
        constexprs = vec![("R".to_string(), rows), ("C".to_string(), 16)];
        grid = m.div_ceil(rows as usize) as u32;
        num_warps = [2u32, 4][g.r.below(2)];
    }
    // The dot's sums of products reach beyond fp32's exact range only with large values; the
    // inputs are k/8 so 16 products stay exact, but kwb may multiply fp16 in another order:
    // still exact. Reductions of exact values are exact too.
    Program {
        seed,
        helpers,
        params,
        body,
        args,
        constexprs,
        grid,
        num_warps,
        exact: g.exact,
        features: g.features,
    }
}

mod print;
mod reduce;
pub use print::{print, Layout};
pub use reduce::smaller;
