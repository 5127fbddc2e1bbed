//! Scans and reductions with a combine function (`tl.associative_scan`, `tl.cumsum`,
//! `tl.cumprod`, `tl.reduce`). Whatever the tile's register layout, the tile goes through the
//! shared scratch buffer, seen as `lines` lines of `len` elements (one line per position of
//! the other dimensions; a full reduction is one line of every element), laid end to end in
//! scan order. Each of the first `min(numel, threads)` threads takes a run of `chunk =
//! numel / threads` (at least 1) consecutive positions of that order and scans it in place,
//! restarting at each line's first element. When a line is longer than a run, its `len /
//! chunk` threads are consecutive: their run totals are scanned with `__shfl_up_sync` inside
//! the warp (segments of at most 32 lanes), then, for a line longer than a warp, across its
//! warps through a small array of warp totals after the tile in the scratch buffer (one
//! barrier), and each thread folds the total of the threads before it into its run. The
//! combine is a lambda around the combine function's statements, always called with the
//! earlier elements on the left, so only associativity is assumed, never commutativity.
//! Any power-of-two length, any axis and any number of warps take this path.

use super::names::{c_scalar, elem_scalar};
use super::writer::Writer;
use crate::tile::ir::{Combine, Elem, Scalar, VarId};

/// `__shfl_up_sync` of any element type, through its bits (the library's `__half` and
/// `__nv_bfloat16` versions name `WARP_SZ`, which kwb's PTX emulator does not know).
pub const HELPERS: &[(&str, &str)] = &[(
    "kwb_shfl_up",
    r#"template <typename T> static __device__ __forceinline__ T kwb_shfl_up(T v, unsigned d, int w) {
    if (sizeof(T) == 8) {
        unsigned long long u;
        memcpy(&u, &v, 8);
        u = __shfl_up_sync(0xffffffffu, u, d, w);
        memcpy(&v, &u, 8);
    } else {
        unsigned u = 0;
        memcpy(&u, &v, sizeof(T));
        u = __shfl_up_sync(0xffffffffu, u, d, w);
        memcpy(&v, &u, sizeof(T));
    }
    return v;
}
"#,
)];

/// One scan or reduction with a combine function.
pub struct ScanSite<'c> {
    /// The tiles scanned together (one shape), and the one whose result this site gives.
    pub srcs: &'c [VarId],
    pub part: usize,
    /// `None`: every dimension (a full reduction).
    pub axis: Option<u32>,
    pub reverse: bool,
    pub combine: &'c Combine,
    /// A scan (the result has the source's shape), or else a reduction.
    pub scan: bool,
}

/// `kwb_f(a0.., b0.., o0..)`: the combine of two tuples of C expressions into `outs`.
fn call(a: &[String], b: &[String], outs: &[String]) -> String {
    let all: Vec<&str> = (a.iter().chain(b).chain(outs))
        .map(String::as_str)
        .collect();
    format!("kwb_f({});", all.join(", "))
}

/// `name{k}` for each component.
fn each(name: &str, n: usize) -> Vec<String> {
    (0..n).map(|k| format!("{name}{k}")).collect()
}

/// `name{k}[index]` for each component.
fn each_at(name: &str, n: usize, index: &str) -> Vec<String> {
    (0..n).map(|k| format!("{name}{k}[{index}]")).collect()
}

impl Writer<'_> {
    pub fn scan(&mut self, dst: VarId, site: &ScanSite, line: u32) {
        let srcs = site.srcs;
        let n = srcs.len();
        let bad = |w: &Self, v: VarId| matches!(w.k.ty(v).elem, Elem::Ptr(_)) || !w.is_tile(v);
        if n == 0 || srcs.iter().any(|&v| bad(self, v)) || site.part >= n {
            self.unsupported("a scan or reduction of pointers or of a scalar", line);
            return;
        }
        let types: Vec<Scalar> = srcs.iter().map(|&v| elem_scalar(self.k, v)).collect();
        let ts: Vec<&str> = types.iter().map(|&s| c_scalar(s)).collect();
        let src = srcs[0];
        let shape = self.k.ty(src).shape.clone();
        let numel = self.k.ty(src).numel();
        let (len, inner) = match site.axis {
            None => (numel, 1),
            Some(a) => {
                let a = a as usize;
                let inner: u64 = shape[a + 1..].iter().map(|&d| u64::from(d)).product();
                (u64::from(shape[a]), inner)
            }
        };
        let threads = u64::from(self.k.threads());
        let chunk = (numel / threads).max(1);
        let active = numel / chunk;
        // Threads per line, and lanes per shuffle segment.
        let per_line = (len / chunk).max(1);
        let width = per_line.min(32);
        // Each component's array in the scratch buffer, then (for lines longer than a warp's
        // runs) each one's warp totals.
        let mut offsets = Vec::new();
        let mut bytes = 0;
        for s in &types {
            offsets.push(bytes);
            bytes += (numel * u64::from(s.size().max(1))).div_ceil(8) * 8;
        }
        let warp_off = bytes;
        if per_line > 32 {
            bytes += 32 * 8 * n as u64;
        }
        self.scratch_bytes = self.scratch_bytes.max(bytes);
        // The scratch address of scan position `p` (a C expression).
        let pos = |p: &str| {
            let k = if site.reverse {
                format!("{} - {p} % {len}", len - 1)
            } else {
                format!("{p} % {len}")
            };
            format!("(({p} / {len}) / {inner} * {len} + ({k})) * {inner} + ({p} / {len}) % {inner}")
        };
        self.open("{");
        for k in 0..n {
            self.line(&format!(
                "{t}* kwb_s{k} = reinterpret_cast<{t}*>(kwb_scratch + {});",
                offsets[k],
                t = ts[k]
            ));
        }
        let c = site.combine;
        let params: Vec<String> = (ts.iter().enumerate())
            .map(|(k, t)| format!("{t} kwb_l{k}"))
            .chain(ts.iter().enumerate().map(|(k, t)| format!("{t} kwb_r{k}")))
            .chain(ts.iter().enumerate().map(|(k, t)| format!("{t}& kwb_o{k}")))
            .collect();
        self.open(&format!("auto kwb_f = [&]({}) {{", params.join(", ")));
        for k in 0..n {
            self.line(&format!(
                "{} = kwb_l{k}; {} = kwb_r{k};",
                self.name(c.lhs[k]),
                self.name(c.rhs[k])
            ));
        }
        self.block(&c.body);
        for k in 0..n {
            self.line(&format!("kwb_o{k} = {};", self.name(c.results[k])));
        }
        self.close("};");
        for (k, &v) in srcs.iter().enumerate() {
            let l = self.layout(v);
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int e = 0; e < {}; ++e) {}kwb_s{k}[{}] = {};",
                l.ept,
                l.owner_if(),
                l.flat_expr("e"),
                self.at(v, "e")
            ));
        }
        self.line("__syncthreads();");
        // Idle threads (a tile smaller than the program) still take part in the shuffles.
        for (k, &v) in srcs.iter().enumerate() {
            self.line(&format!("{} kwb_acc{k} = {};", ts[k], self.at(v, "0")));
        }
        let guard = if active < threads {
            format!("if (kwb_tid < {active}) ")
        } else {
            String::new()
        };
        let acc = each("kwb_acc", n);
        let at_a = each_at("kwb_s", n, "a");
        // Each thread's run, in place.
        self.open(&format!("{guard}for (int j = 0; j < {chunk}; ++j) {{"));
        self.line(&format!("const int p = kwb_tid * {chunk} + j;"));
        self.line(&format!("const int a = {};", pos("p")));
        self.open(&format!("if (j == 0 || p % {len} == 0) {{"));
        for k in 0..n {
            self.line(&format!("kwb_acc{k} = kwb_s{k}[a];"));
        }
        self.close("} else {");
        self.indent_in();
        self.line(&call(&acc, &at_a, &acc));
        self.close("}");
        for k in 0..n {
            self.line(&format!("kwb_s{k}[a] = kwb_acc{k};"));
        }
        self.close("}");
        if per_line > 1 {
            self.line(&format!(
                "// each line's {per_line} runs: a scan of their totals, {width} lanes a segment"
            ));
            let (x, y, prev) = (each("kwb_x", n), each("kwb_y", n), each("kwb_prev", n));
            for (k, t) in ts.iter().enumerate() {
                self.line(&format!("{} kwb_x{k} = kwb_acc{k};", t));
            }
            self.line("#pragma unroll");
            self.open(&format!("for (int d = 1; d < {width}; d <<= 1) {{"));
            for (k, t) in ts.iter().enumerate() {
                self.line(&format!(
                    "const {} kwb_y{k} = kwb_shfl_up(kwb_x{k}, d, {width});",
                    t
                ));
            }
            self.line(&format!(
                "if ((kwb_tid & {}) >= d) {}",
                width - 1,
                call(&y, &x, &x)
            ));
            self.close("}");
            for (k, t) in ts.iter().enumerate() {
                self.line(&format!(
                    "{} kwb_prev{k} = kwb_shfl_up(kwb_x{k}, 1, {width});",
                    t
                ));
            }
            self.line(&format!("bool kwb_has = (kwb_tid & {}) != 0;", width - 1));
            if per_line > 32 {
                let warps = per_line / 32;
                for (k, t) in ts.iter().enumerate() {
                    self.line(&format!(
                        "{t}* kwb_w{k} = reinterpret_cast<{t}*>(kwb_scratch + {});",
                        warp_off + 32 * 8 * k as u64,
                    ));
                }
                let store: Vec<String> = (0..n)
                    .map(|k| format!("kwb_w{k}[kwb_tid >> 5] = kwb_x{k};"))
                    .collect();
                self.line(&format!(
                    "if ((kwb_tid & 31) == 31) {{ {} }}",
                    store.join(" ")
                ));
                self.line("__syncthreads();");
                self.line(&format!(
                    "const int kwb_fw = (kwb_tid >> 5) & ~{};",
                    warps - 1
                ));
                self.open("if ((kwb_tid >> 5) > kwb_fw) {");
                let pre = each("kwb_pre", n);
                for (k, t) in ts.iter().enumerate() {
                    self.line(&format!("{} kwb_pre{k} = kwb_w{k}[kwb_fw];", t));
                }
                self.line(&format!(
                    "for (int w = kwb_fw + 1; w < (kwb_tid >> 5); ++w) {}",
                    call(&pre, &each_at("kwb_w", n, "w"), &pre)
                ));
                self.open("if (kwb_has) {");
                self.line(&call(&pre, &prev, &prev));
                self.close("} else {");
                self.indent_in();
                for k in 0..n {
                    self.line(&format!("kwb_prev{k} = kwb_pre{k};"));
                }
                self.close("}");
                self.line("kwb_has = true;");
                self.close("}");
            }
            let guard = if active < threads {
                format!(" && kwb_tid < {active}")
            } else {
                String::new()
            };
            self.open(&format!(
                "if (kwb_has{guard}) for (int j = 0; j < {chunk}; ++j) {{"
            ));
            self.line(&format!(
                "const int a = {};",
                pos(&format!("(kwb_tid * {chunk} + j)"))
            ));
            self.line(&call(&prev, &at_a, &at_a));
            self.close("}");
        }
        self.line("__syncthreads();");
        let out = format!("kwb_s{}", site.part);
        if site.scan {
            let ld = self.layout(dst);
            let value = format!("{out}[{}]", ld.flat_expr("e"));
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int e = 0; e < {}; ++e) {} = {value};",
                ld.ept,
                self.at(dst, "e")
            ));
        } else if self.is_tile(dst) {
            // Output element g is line g; its total is the line's last position.
            let ld = self.layout(dst);
            self.line("#pragma unroll");
            self.open(&format!("for (int e = 0; e < {}; ++e) {{", ld.ept));
            self.line(&format!("const int g = {};", ld.flat_expr("e")));
            self.line(&format!(
                "{} = {out}[((g / {inner}) * {len} + {}) * {inner} + g % {inner}];",
                self.at(dst, "e"),
                len - 1
            ));
            self.close("}");
        } else {
            self.line(&format!("{} = {out}[{}];", self.name(dst), numel - 1));
        }
        self.line("__syncthreads();");
        self.close("}");
    }
}
