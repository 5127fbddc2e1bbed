//! Printing a generated program as Python source, in a chosen layout: lines split inside
//! brackets at random columns, comments at their ends, trailing commas in calls, backslash
//! continuations. Every layout is the same program.

use super::super::rng::Rng;
use super::{Program, E, S};

/// How a program is laid out: `0` is the plain layout (one line per statement); other values
/// seed random splits, comments, trailing commas and backslashes.
pub struct Layout {
    r: Option<Rng>,
}

impl Layout {
    pub fn plain() -> Layout {
        Layout { r: None }
    }

    pub fn seeded(seed: u64) -> Layout {
        Layout {
            r: Some(Rng(seed ^ 0x1a70_0757)),
        }
    }

    fn roll(&mut self, one_in: usize) -> bool {
        self.r.as_mut().is_some_and(|r| r.below(one_in) == 0)
    }

    /// A break inside brackets: a newline (sometimes after a comment) and any indentation.
    fn brk(&mut self) -> String {
        let Some(r) = self.r.as_mut() else {
            return String::new();
        };
        let comment = if r.below(3) == 0 { "  # note" } else { "" };
        let pad = " ".repeat(r.below(14));
        format!("{comment}\n{pad}")
    }

    fn maybe_brk(&mut self) -> String {
        if self.roll(3) {
            self.brk()
        } else {
            String::new()
        }
    }
}

fn print_e(e: &E, l: &mut Layout) -> String {
    match e {
        E::Atom(s) => s.clone(),
        E::Bin(op, x, y) => {
            let (x, y) = (print_e(x, l), print_e(y, l));
            let (b0, b1, b2) = (l.maybe_brk(), l.maybe_brk(), l.maybe_brk());
            format!("({b0}{x} {op}{b1} {y}{b2})")
        }
        E::Neg(x) => format!("-{}", print_e(x, l)),
        E::IfExp(c, x, y) => {
            let (c, x, y) = (print_e(c, l), print_e(x, l), print_e(y, l));
            let (b0, b1) = (l.maybe_brk(), l.maybe_brk());
            format!("({b0}{x} if {c}{b1} else {y})")
        }
        E::Index(x, idx) => format!("{}{idx}", print_e(x, l)),
        E::Call(f, args, kwargs) => {
            let mut parts: Vec<String> = args.iter().map(|x| print_e(x, l)).collect();
            parts.extend(kwargs.iter().map(|(k, v)| format!("{k}={}", print_e(v, l))));
            let mut s = format!("{f}(");
            for (i, p) in parts.iter().enumerate() {
                s.push_str(&l.maybe_brk());
                s.push_str(p);
                if i + 1 < parts.len() {
                    s.push(',');
                    s.push_str(if l.roll(3) { "" } else { " " });
                }
            }
            if !parts.is_empty() && l.roll(4) {
                s.push(',');
            }
            s.push_str(&l.maybe_brk());
            s.push(')');
            s
        }
        E::Method(x, name, args) => {
            let recv = print_e(x, l);
            let args: Vec<String> = args.iter().map(|x| print_e(x, l)).collect();
            // The receiver in parentheses: `(x).to(...)`, so a split inside it makes the
            // `).to(` continuation line that kwb once dropped.
            let b = l.maybe_brk();
            format!("({recv}{b}).{name}({})", args.join(", "))
        }
    }
}

fn print_s(s: &S, indent: usize, l: &mut Layout, out: &mut String) {
    let pad = " ".repeat(indent);
    let cont = |l: &mut Layout| if l.roll(8) { " \\\n        " } else { " " };
    match s {
        S::Assign(v, e) => {
            let e = print_e(e, l);
            let c = cont(l);
            out.push_str(&format!("{pad}{v} ={c}{e}\n"));
        }
        S::AugAdd(v, e) => {
            let e = print_e(e, l);
            out.push_str(&format!("{pad}{v} += {e}\n"));
        }
        S::Expr(E::Call(f, args, _)) if f == "return" => {
            let e = print_e(&args[0], l);
            out.push_str(&format!("{pad}return {e}\n"));
        }
        S::Expr(e) => {
            let e = print_e(e, l);
            out.push_str(&format!("{pad}{e}\n"));
        }
        S::Return => out.push_str(&format!("{pad}return\n")),
        S::If(c, t, e) => {
            let c = print_e(c, l);
            out.push_str(&format!("{pad}if {c}:\n"));
            for s in t {
                print_s(s, indent + 4, l, out);
            }
            if !e.is_empty() {
                out.push_str(&format!("{pad}else:\n"));
                for s in e {
                    print_s(s, indent + 4, l, out);
                }
            }
        }
        S::For(v, it, body) => {
            let it = print_e(it, l);
            out.push_str(&format!("{pad}for {v} in {it}:\n"));
            for s in body {
                print_s(s, indent + 4, l, out);
            }
        }
        S::While(c, body) => {
            let c = print_e(c, l);
            out.push_str(&format!("{pad}while {c}:\n"));
            for s in body {
                print_s(s, indent + 4, l, out);
            }
        }
    }
}

/// The program as a Python module, in layout `l`.
pub fn print(p: &Program, l: &mut Layout) -> String {
    let mut out = format!(
        "# kwb differential test program, seed {}\nimport triton\nimport triton.language as tl\n\n",
        p.seed
    );
    for (name, params, body) in &p.helpers {
        out.push_str(&format!(
            "\n@triton.jit\ndef {name}({}):\n",
            params.join(", ")
        ));
        for s in body {
            print_s(s, 4, l, &mut out);
        }
    }
    let mut params = p.params.clone();
    params.extend(
        p.constexprs
            .iter()
            .map(|(n, _)| format!("{n}: tl.constexpr")),
    );
    out.push_str(&format!(
        "\n\n@triton.jit\ndef kernel({}):\n",
        params.join(", ")
    ));
    for s in &p.body {
        print_s(s, 4, l, &mut out);
    }
    out
}
