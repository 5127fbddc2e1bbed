//! Layout changes: `Broadcast`, `ExpandDims`, `Reshape`, `Permute`. Each destination element
//! reads one source element (an index map). When every thread already holds, in a register
//! whose number does not depend on the thread, each source element its destination registers
//! need, the change is a register copy (always the case for `ExpandDims` and `Reshape`, since
//! layouts are keyed by element count); otherwise the source goes through shared memory.

use super::layout::Layout;
use super::writer::Writer;
use crate::tile::ir::{Elem, Op, VarId};

/// One element of a tile, as C expressions: its flat (row-major) index, or, for a 2-D tile
/// whose layout knows them, its row and column.
#[derive(Debug, Clone)]
pub enum Idx {
    Flat(String),
    Coords { row: String, col: String, cols: u64 },
}

impl Idx {
    /// Register `e` of layout `l` in thread `kwb_tid`, by name: `g`, or `kwb_r` and `kwb_c`
    /// for a layout that knows rows and columns. [`Idx::define`] writes the names.
    pub fn named(l: &Layout) -> Idx {
        match &l.mma {
            Some(m) => Idx::Coords {
                row: "kwb_r".into(),
                col: "kwb_c".into(),
                cols: m.n,
            },
            None => Idx::Flat("g".into()),
        }
    }

    /// The C declarations of [`Idx::named`]'s names for register `e` (a C expression).
    pub fn define(l: &Layout, e: &str) -> Vec<String> {
        match &l.mma {
            Some(m) => {
                let (row, col) = m.coord_expr(e);
                // A use may need only one of the two (NVCC would warn of the other).
                vec![
                    format!("[[maybe_unused]] const int kwb_r = {row};"),
                    format!("[[maybe_unused]] const int kwb_c = {col};"),
                ]
            }
            None => vec![format!("const int g = {};", l.flat_expr(e))],
        }
    }

    pub fn flat(&self) -> String {
        match self {
            Idx::Flat(g) => g.clone(),
            Idx::Coords { row, col, cols } => format!("({row} * {cols} + {col})"),
        }
    }
}

/// Source index of destination flat index `g`, as `sum(((g / stride) % size) * weight)`.
pub struct IndexMap {
    terms: Vec<(u64, u64, u64)>,
    numel: u64,
}

impl IndexMap {
    pub fn new(dst: &[u32], src: &[u32], op: &Op) -> IndexMap {
        let strides = |shape: &[u32]| {
            let mut s = vec![1u64; shape.len()];
            for i in (0..shape.len().saturating_sub(1)).rev() {
                s[i] = s[i + 1] * u64::from(shape[i + 1]);
            }
            s
        };
        let (ds, ss) = (strides(dst), strides(src));
        let numel: u64 = dst.iter().map(|&d| u64::from(d)).product();
        let terms = match op {
            Op::Broadcast(_) => (0..dst.len())
                .map(|i| {
                    let w = match src.get(i) {
                        Some(1) | None => 0,
                        Some(_) => ss[i],
                    };
                    (ds[i], u64::from(dst[i]), w)
                })
                .collect(),
            Op::Permute { perm, .. } => (0..dst.len())
                .map(|i| {
                    let p = perm.get(i).copied().unwrap_or(0) as usize;
                    (ds[i], u64::from(dst[i]), ss.get(p).copied().unwrap_or(0))
                })
                .collect(),
            // ExpandDims and Reshape keep the row-major order.
            _ => vec![(1, numel.max(1), 1)],
        };
        IndexMap { terms, numel }
    }

    fn index(&self, g: u64) -> u64 {
        self.terms
            .iter()
            .map(|&(stride, size, w)| ((g / stride) % size.max(1)) * w)
            .sum()
    }

    /// The source index of destination element `idx`: as [`IndexMap::expr`], but a 2-D
    /// destination element given by its row and column maps them straight to the source, with
    /// no division of a flat index (which the compiler cannot simplify).
    pub fn expr_idx(&self, idx: &Idx) -> String {
        let Idx::Coords { row, col, cols } = idx else {
            return self.expr(&idx.flat());
        };
        let [(rs, _, rw), (1, cs, cw)] = self.terms[..] else {
            return self.expr(&idx.flat());
        };
        if rs != *cols || cs != *cols {
            return self.expr(&idx.flat());
        }
        let term = |x: &str, w: u64| match w {
            0 => None,
            1 => Some(x.to_string()),
            _ => Some(format!("{x} * {w}")),
        };
        let parts: Vec<String> = [term(row, rw), term(col, cw)]
            .into_iter()
            .flatten()
            .collect();
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(" + ")
        }
    }

    pub fn expr(&self, g: &str) -> String {
        let parts: Vec<String> = self
            .terms
            .iter()
            .filter(|t| t.2 != 0 && t.1 > 1)
            .map(|&(stride, size, w)| {
                let mut x = if stride == 1 {
                    g.to_string()
                } else {
                    format!("({g} / {stride})")
                };
                if stride * size < self.numel {
                    x = format!("({x} % {size})");
                }
                if w != 1 {
                    x = format!("{x} * {w}");
                }
                x
            })
            .collect();
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(" + ")
        }
    }
}

impl Writer<'_> {
    /// For each destination register, the source register that holds its element in every
    /// thread, or None when the threads disagree (then shared memory is needed).
    pub fn register_map(&self, dst: VarId, src: VarId, op: &Op) -> Option<Vec<u64>> {
        let (ld, ls) = (self.layout(dst), self.layout(src));
        let map = IndexMap::new(&self.k.ty(dst).shape, &self.k.ty(src).shape, op);
        let mut out = Vec::with_capacity(ld.ept as usize);
        for e in 0..ld.ept {
            let mut reg = None;
            for t in 0..ld.threads {
                let g = map.index(ld.flat(t, e));
                let r = ls.holds(t, g)?;
                match reg {
                    None => reg = Some(r),
                    Some(x) if x != r => return None,
                    Some(_) => {}
                }
            }
            out.push(reg.unwrap_or(0));
        }
        Some(out)
    }

    pub fn relayout(&mut self, dst: VarId, op: &Op, _line: u32) {
        let src = match op {
            Op::Broadcast(s) | Op::Reshape(s) => *s,
            Op::ExpandDims { src, .. } | Op::Permute { src, .. } => *src,
            _ => return,
        };
        if !self.is_tile(src) {
            self.each(dst, |w, e| w.at(src, e));
            return;
        }
        if let Some(regs) = self.register_map(dst, src, op) {
            let identity = regs.iter().enumerate().all(|(i, &r)| i as u64 == r);
            if identity {
                self.each(dst, |w, e| w.at(src, e));
            } else {
                // Compile-time register moves: the pattern repeats, so name each one.
                let (d, s) = (self.name(dst).to_string(), self.name(src).to_string());
                let moves: Vec<String> = regs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| format!("{d}[{i}] = {s}[{r}];"))
                    .collect();
                for chunk in moves.chunks(8) {
                    self.line(&chunk.join(" "));
                }
            }
            return;
        }
        let (ld, ls) = (self.layout(dst), self.layout(src));
        let map = IndexMap::new(&self.k.ty(dst).shape, &self.k.ty(src).shape, op);
        let at = Idx::Flat(format!("({})", map.expr_idx(&Idx::named(&ld))));
        if let Some(x) = self.remat(src, &at) {
            self.line(super::remat::MARK);
            self.line("#pragma unroll");
            self.open(&format!("for (int e = 0; e < {}; ++e) {{", ld.ept));
            for d in Idx::define(&ld, "e") {
                self.line(&d);
            }
            self.line(&format!("{} = {x};", self.at(dst, "e")));
            self.close("}");
            return;
        }
        self.through_scratch(dst, src, ld, ls, &map.expr("g"));
    }

    /// Whether the layout change `dst = op(src)` goes through shared memory.
    pub fn relayout_needs_scratch(&self, dst: VarId, src: VarId, op: &Op) -> bool {
        if !self.is_tile(src) || self.register_map(dst, src, op).is_some() {
            return false;
        }
        let map = IndexMap::new(&self.k.ty(dst).shape, &self.k.ty(src).shape, op);
        self.remat(src, &Idx::Flat(format!("({})", map.expr("g"))))
            .is_none()
    }

    fn through_scratch(&mut self, dst: VarId, src: VarId, ld: Layout, ls: Layout, idx: &str) {
        let elem = self.k.ty(src).elem;
        let size = match elem {
            Elem::Ptr(_) => 8,
            Elem::Scalar(s) => u64::from(s.size()),
        };
        self.scratch_bytes = self.scratch_bytes.max(ls.numel * size);
        let t = super::names::c_elem(elem);
        self.open("{");
        self.line(&format!(
            "{t}* kwb_s = reinterpret_cast<{t}*>(kwb_scratch);"
        ));
        let owner = ls.owner_if();
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int e = 0; e < {}; ++e) {owner}kwb_s[{}] = {};",
            ls.ept,
            ls.flat_expr("e"),
            self.at(src, "e")
        ));
        self.line("__syncthreads();");
        self.line("#pragma unroll");
        self.open(&format!("for (int e = 0; e < {}; ++e) {{", ld.ept));
        self.line(&format!("const int g = {};", ld.flat_expr("e")));
        self.line(&format!("{} = kwb_s[{idx}];", self.at(dst, "e")));
        self.close("}");
        self.line("__syncthreads();");
        self.close("}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_maps_of_broadcast_and_permute() {
        let b = IndexMap::new(&[4, 8], &[1, 8], &Op::Broadcast(VarId(0)));
        assert_eq!(b.index(8 + 3), 3);
        assert_eq!(b.expr("g"), "(g % 8)");
        let c = IndexMap::new(&[4, 8], &[4, 1], &Op::Broadcast(VarId(0)));
        assert_eq!(c.index(2 * 8 + 5), 2);
        assert_eq!(c.expr("g"), "(g / 8)");
        let p = IndexMap::new(
            &[8, 4],
            &[4, 8],
            &Op::Permute {
                src: VarId(0),
                perm: vec![1, 0],
            },
        );
        // dst (i, j) = src (j, i): dst flat 1*4 + 2 = src flat 2*8 + 1.
        assert_eq!(p.index(6), 17);
        assert_eq!(p.expr("g"), "(g / 4) + (g % 4) * 8");
    }
}
