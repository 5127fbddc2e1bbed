//! The kernel function around the body: the `extern "C" __global__` signature (arguments,
//! tensor maps, a persistent kernel's program count), the declarations, the shared memory
//! the body's parts asked for, and the body itself.

use super::names::c_elem;
use super::writer::{ring_slack, Writer, WrittenKernel, SMEM_LIMIT, SMEM_OPTIN_LIMIT};
use crate::tile::ir::VarId;
use std::fmt::Write as _;

impl Writer<'_> {
    /// The kernel: signature, declarations, body.
    pub fn kernel(mut self) -> WrittenKernel {
        let k = self.k;
        let body_stmts = k.body.clone();
        if self.target.persistent {
            self.persistent_body(&body_stmts);
        } else {
            match self.tail_plan(&body_stmts) {
                _ if self.huge_streaming(&body_stmts) => self.element_loop(&body_stmts),
                Some(plan) => self.tail_split(&body_stmts, &plan),
                None => self.block(&body_stmts),
            }
        }
        // The single-copy dots' shared region follows the double-buffered ones' regions.
        let single_at = self.dot_bytes;
        self.dot_bytes += self.dot_single;
        // Static: everything but the rings. The rings join it while the total fits 48 KiB,
        // else they go to dynamic shared memory, up to the opt-in limit.
        let fixed = self.scratch_bytes + self.site_bytes + self.dot_bytes;
        // wgmma's operands must sit on 1024-byte boundaries of the shared window: the rings
        // get 1024 bytes more and start at the first such boundary inside.
        let slack = ring_slack(self.ring_align);
        // Above 48 KiB in all, everything goes to dynamic shared memory (up to the opt-in
        // limit, 227 KiB on sm_90), as Triton places it: the rings first, then the rest.
        let dynamic = fixed + self.ring_bytes + slack > SMEM_LIMIT;
        if fixed > SMEM_LIMIT && self.dot_sites.iter().any(|d| *d) {
            // The dots' second copies took too much: write it again with one copy each.
            let mut again = Writer::new(k, self.target);
            again.allow_double = false;
            again.stage_cap = self.stage_cap;
            return again.kernel();
        }
        if fixed + self.ring_bytes + slack > SMEM_OPTIN_LIMIT && self.ring_bytes > 0 {
            // The rings took too much: write it again with a buffer fewer (none below two).
            let mut again = Writer::new(k, self.target);
            again.allow_double = self.allow_double;
            again.stage_cap = self.max_stages.saturating_sub(1);
            return again.kernel();
        }
        let mut head = String::new();
        // "divisible by 16: a, n; by 8: K": each divisor with the parameters it divides.
        let mut facts = Vec::new();
        for d in [16, 8, 4, 2] {
            let names: Vec<&str> = (k.params.iter())
                .filter(|p| p.divisibility == d)
                .map(|p| p.name.as_str())
                .collect();
            if !names.is_empty() {
                let by = if facts.is_empty() {
                    "divisible by"
                } else {
                    "by"
                };
                facts.push(format!("{by} {d}: {}", names.join(", ")));
            }
        }
        let _ = writeln!(
            head,
            "// kernel `{}` from {}:{}, specialised for num_warps = {} ({} threads){}",
            k.name,
            k.file.display(),
            k.loc.line,
            k.num_warps,
            k.threads(),
            if facts.is_empty() {
                String::new()
            } else {
                format!("; {}", facts.join("; "))
            }
        );
        let mut params: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("{} {}", c_elem(k.ty(p.var).elem), self.name(p.var)))
            .collect();
        if self.target.persistent {
            params.push("int kwb_programs".into());
        }
        for i in 0..self.tensor_maps.len() {
            params.push(format!(
                "const __grid_constant__ kwb_tensor_map kwb_tmap{i}"
            ));
        }
        let _ = writeln!(
            head,
            "extern \"C\" __global__ void __launch_bounds__({}) {}({})\n{{",
            self.launch_bounds(),
            k.name,
            params.join(", ")
        );
        head.push_str("    const int kwb_tid = threadIdx.x;\n");
        if self.uses_warpgroup {
            head.push_str("    const int kwb_wg = kwb_warpgroup();\n");
        }
        if fixed > SMEM_OPTIN_LIMIT {
            let _ = writeln!(
                head,
                "#error \"kwb tile: kernel `{}` needs {} bytes of shared memory for dots, layout \
                 changes and reductions, above the {} KiB a program may have (use smaller tiles)\"",
                k.name,
                fixed,
                SMEM_OPTIN_LIMIT / 1024
            );
        }
        let ring_decl = |head: &mut String, base: &str| {
            if slack > 0 {
                let _ = writeln!(
                    head,
                    "    unsigned char* const kwb_ring = {base} + ((0u - kwb_smem({base})) & {}u);",
                    slack - 1
                );
            } else if base != "kwb_ring" {
                let _ = writeln!(head, "    unsigned char* const kwb_ring = {base};");
            }
        };
        // In dynamic shared memory, the other buffers follow the rings at 16-byte boundaries.
        let mut dynamic_bytes = self.ring_bytes + slack;
        let mut carve = |head: &mut String, name: &str, bytes: u64| {
            let off = dynamic_bytes.next_multiple_of(16);
            let _ = writeln!(head, "    unsigned char* const {name} = kwb_dyn + {off};");
            dynamic_bytes = off + bytes;
        };
        if dynamic {
            let _ = writeln!(
                head,
                "    // {} bytes in dynamic shared memory (rings {}, dots {}, layout changes {}, \
                 reductions {}): the launch passes that size",
                (self.ring_bytes + slack).next_multiple_of(16)
                    + self.dot_bytes.next_multiple_of(16)
                    + self.scratch_bytes.next_multiple_of(16)
                    + self.site_bytes,
                self.ring_bytes + slack,
                self.dot_bytes,
                self.scratch_bytes,
                self.site_bytes
            );
            head.push_str("    extern __shared__ __align__(128) unsigned char kwb_dyn[];\n");
            if self.ring_bytes > 0 {
                ring_decl(&mut head, "kwb_dyn");
            }
            for (name, bytes) in [
                ("kwb_dot", self.dot_bytes),
                ("kwb_scratch", self.scratch_bytes),
                ("kwb_red", self.site_bytes),
            ] {
                if bytes > 0 {
                    carve(&mut head, name, bytes);
                }
            }
        } else if self.ring_bytes > 0 {
            let name = if slack > 0 {
                "kwb_ring_raw"
            } else {
                "kwb_ring"
            };
            let _ = writeln!(
                head,
                "    __shared__ __align__(128) unsigned char {name}[{}];",
                self.ring_bytes + slack
            );
            ring_decl(&mut head, name);
        }
        if self.dot_bytes > 0 && !dynamic {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_dot[{}];",
                self.dot_bytes
            );
        }
        if self.dot_single > 0 {
            let _ = writeln!(
                head,
                "    unsigned char* const kwb_dot1 = kwb_dot + {single_at};"
            );
        }
        for (i, double) in self.dot_sites.iter().enumerate() {
            if *double {
                let _ = writeln!(head, "    int kwb_dotbuf_{i} = 0;");
            }
        }
        if self.scratch_bytes > 0 && !dynamic {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_scratch[{}];",
                self.scratch_bytes
            );
        }
        if self.site_bytes > 0 && !dynamic {
            let _ = writeln!(
                head,
                "    __shared__ __align__(16) unsigned char kwb_red[{}];",
                self.site_bytes
            );
        }
        for i in 0..k.vars.len() {
            if let Some(d) = self.declaration(VarId(i as u32)) {
                let _ = writeln!(head, "    {d}");
            }
        }
        for d in self.hoisted.iter().flatten() {
            let _ = writeln!(head, "    {d}");
        }
        head.push_str(&self.out);
        head.push_str("}\n");
        WrittenKernel {
            cuda: head,
            dynamic_shared: if dynamic { dynamic_bytes } else { 0 },
            arch_specific: self.arch_specific,
            helpers: self.helpers,
            tensor_maps: self.tensor_maps,
        }
    }
}
