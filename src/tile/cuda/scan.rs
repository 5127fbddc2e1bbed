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
use crate::tile::ir::{Combine, Elem, VarId};

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
    pub src: VarId,
    /// `None`: every dimension (a full reduction).
    pub axis: Option<u32>,
    pub reverse: bool,
    pub combine: &'c Combine,
    /// A scan (the result has the source's shape), or else a reduction.
    pub scan: bool,
}

impl Writer<'_> {
    pub fn scan(&mut self, dst: VarId, site: &ScanSite, line: u32) {
        let src = site.src;
        if matches!(self.k.ty(src).elem, Elem::Ptr(_)) || !self.is_tile(src) {
            self.unsupported("a scan or reduction of pointers or of a scalar", line);
            return;
        }
        let s = elem_scalar(self.k, src);
        let t = c_scalar(s);
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
        let size = u64::from(s.size()).max(1);
        let warp_off = (numel * size).div_ceil(8) * 8;
        let bytes = if per_line > 32 {
            warp_off + 32 * 8
        } else {
            numel * size
        };
        self.scratch_bytes = self.scratch_bytes.max(bytes);
        let ls = self.layout(src);
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
        self.line(&format!(
            "{t}* kwb_s = reinterpret_cast<{t}*>(kwb_scratch);"
        ));
        let c = site.combine;
        self.open(&format!("auto kwb_f = [&]({t} kwb_l, {t} kwb_r) -> {t} {{"));
        self.line(&format!(
            "{} = kwb_l; {} = kwb_r;",
            self.name(c.lhs),
            self.name(c.rhs)
        ));
        self.block(&c.body);
        self.line(&format!("return {};", self.name(c.result)));
        self.close("};");
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {}; ++e) {}kwb_s[{}] = {};",
            ls.ept,
            ls.owner_if(),
            ls.flat_expr("e"),
            self.at(src, "e")
        ));
        self.line("__syncthreads();");
        // Idle threads (a tile smaller than the program) still take part in the shuffles.
        self.line(&format!("{t} kwb_acc = {};", self.at(src, "0")));
        let guard = if active < threads {
            format!("if (kwb_tid < {active}) ")
        } else {
            String::new()
        };
        // Each thread's run, in place.
        self.open(&format!("{guard}for (int j = 0; j < {chunk}; ++j) {{"));
        self.line(&format!("const int p = kwb_tid * {chunk} + j;"));
        self.line(&format!("const int a = {};", pos("p")));
        self.line(&format!(
            "kwb_acc = (j == 0 || p % {len} == 0) ? kwb_s[a] : kwb_f(kwb_acc, kwb_s[a]);"
        ));
        self.line("kwb_s[a] = kwb_acc;");
        self.close("}");
        if per_line > 1 {
            self.line(&format!(
                "// each line's {per_line} runs: a scan of their totals, {width} lanes a segment"
            ));
            self.line(&format!("{t} kwb_x = kwb_acc;"));
            self.line("#pragma unroll");
            self.open(&format!("for (int d = 1; d < {width}; d <<= 1) {{"));
            self.line(&format!(
                "const {t} kwb_y = kwb_shfl_up(kwb_x, d, {width});"
            ));
            self.line(&format!(
                "if ((kwb_tid & {}) >= d) kwb_x = kwb_f(kwb_y, kwb_x);",
                width - 1
            ));
            self.close("}");
            self.line(&format!("{t} kwb_prev = kwb_shfl_up(kwb_x, 1, {width});"));
            self.line(&format!("bool kwb_has = (kwb_tid & {}) != 0;", width - 1));
            if per_line > 32 {
                let warps = per_line / 32;
                self.line(&format!(
                    "{t}* kwb_w = reinterpret_cast<{t}*>(kwb_scratch + {warp_off});"
                ));
                self.line("if ((kwb_tid & 31) == 31) kwb_w[kwb_tid >> 5] = kwb_x;");
                self.line("__syncthreads();");
                self.line(&format!(
                    "const int kwb_fw = (kwb_tid >> 5) & ~{};",
                    warps - 1
                ));
                self.open("if ((kwb_tid >> 5) > kwb_fw) {");
                self.line(&format!("{t} kwb_pre = kwb_w[kwb_fw];"));
                self.line(
                    "for (int w = kwb_fw + 1; w < (kwb_tid >> 5); ++w) kwb_pre = kwb_f(kwb_pre, kwb_w[w]);",
                );
                self.line("kwb_prev = kwb_has ? kwb_f(kwb_pre, kwb_prev) : kwb_pre;");
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
            self.line("kwb_s[a] = kwb_f(kwb_prev, kwb_s[a]);");
            self.close("}");
        }
        self.line("__syncthreads();");
        if site.scan {
            let ld = self.layout(dst);
            let value = format!("kwb_s[{}]", ld.flat_expr("e"));
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
                "{} = kwb_s[((g / {inner}) * {len} + {}) * {inner} + g % {inner}];",
                self.at(dst, "e"),
                len - 1
            ));
            self.close("}");
        } else {
            self.line(&format!("{} = kwb_s[{}];", self.name(dst), numel - 1));
        }
        self.line("__syncthreads();");
        self.close("}");
    }
}
