//! Hopper's warpgroup MMA in the emulator against direct computation. Hand-written PTX kernels
//! in which one or two warpgroups copy A (64x16 per K slice, per warpgroup) and B (16xN per
//! slice) into shared memory at the addresses of the PTX ISA's canonical layouts (K-major and
//! MN-major; no swizzle, 32-, 64- and 128-byte swizzles), build the matrix descriptors, run
//! `wgmma.mma_async` once or twice (the second accumulating the next K slice, as a K = 32
//! product does), and store D by its fragment layout. The layouts are written here as CuTe
//! layouts, (size, stride) modes evaluated directly, not by the emulator's formulas. Then the
//! failures: a descriptor past shared memory, a base offset, an f16 accumulator, a partial warp.

mod support;

use half::{bf16, f16};
use kwb::emu::{EmuError, Module, Report};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// Runs the kernel `wg` of `ptx` on one block of `threads` threads, each buffer a parameter.
fn try_run(ptx: &str, threads: u32, bufs: &[Vec<u8>]) -> Result<(Vec<Vec<u8>>, Report), EmuError> {
    support::emu_block::run_block(ptx, "wg", threads, bufs)
}

use support::emu_block::eighths as values;

/// How an operand lies in shared memory: MN-major or K-major, and the swizzle's row width in
/// bytes (0: none, else 32, 64 or 128).
#[derive(Debug, Clone, Copy)]
struct Layout {
    mn_major: bool,
    swizzle: u64,
}

const fn k_major(swizzle: u64) -> Layout {
    Layout {
        mn_major: false,
        swizzle,
    }
}

const fn mn_major(swizzle: u64) -> Layout {
    Layout {
        mn_major: true,
        swizzle,
    }
}

/// An operand of `x_extent` (M or N) by `k_extent` elements placed in a layout: CuTe modes
/// (size, stride) in elements for x and for k (the last mode of each unbounded), and the
/// descriptor's LBO and SBO in bytes.
struct Placement {
    layout: Layout,
    x_modes: Vec<(u64, u64)>,
    k_modes: Vec<(u64, u64)>,
    lbo: u64,
    sbo: u64,
}

/// The PTX ISA's canonical layouts (T = 8 elements = 16 bytes), e.g. K-major SW128 is
/// ((8,m),(T,2k)):((8T,SBO),(1,T)) and MN-major SW128 ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)).
fn place(layout: Layout, x_extent: u64, k_extent: u64) -> Placement {
    let w = layout.swizzle;
    let e = w / 2; // elements per swizzled row
    let (x_modes, k_modes, lbo, sbo) = match (layout.mn_major, w) {
        // Core matrices of 8 rows of 16 bytes; k-cores next to each other (LBO), row groups after
        // all of them (SBO).
        (false, 0) => {
            let sbo = 16 * k_extent;
            (vec![(8, 8), (0, sbo / 2)], vec![(8, 1), (0, 64)], 128, sbo)
        }
        // Rows of W bytes, 8-row groups SBO = 8W apart; K past W/2 elements in the next atom,
        // after all the row groups. LBO is unused (set to 16).
        (false, _) => (
            vec![(8, e), (0, 8 * e)],
            vec![(8, 1), (e / 8, 8), (0, x_extent * e)],
            16,
            8 * w,
        ),
        // x-cores of 8 elements next to each other (SBO = 128), k groups after them (LBO).
        (true, 0) => {
            let lbo = 16 * x_extent;
            (vec![(8, 1), (0, 64)], vec![(8, 8), (0, lbo / 2)], lbo, 128)
        }
        // Rows of W/2 elements along x, 8 k-rows an atom; k groups SBO = 8W apart, the next
        // W/2 of x after all of them (LBO).
        (true, _) => {
            let lbo = w * k_extent;
            (
                vec![(e, 1), (0, lbo / 2)],
                vec![(8, e), (0, 4 * w)],
                lbo,
                8 * w,
            )
        }
    };
    Placement {
        layout,
        x_modes,
        k_modes,
        lbo,
        sbo,
    }
}

/// A CuTe layout's offset of coordinate `c`, colexicographic, the last mode unbounded.
fn eval(modes: &[(u64, u64)], mut c: u64) -> u64 {
    let mut off = 0;
    for (i, &(size, stride)) in modes.iter().enumerate() {
        if i + 1 == modes.len() {
            return off + c * stride;
        }
        off += (c % size) * stride;
        c /= size;
    }
    off
}

impl Placement {
    /// Byte offset of element (x, k) before the swizzle.
    fn offset(&self, x: u64, k: u64) -> u64 {
        2 * (eval(&self.x_modes, x) + eval(&self.k_modes, k))
    }

    /// The descriptor, less its start address, for this placement.
    fn descriptor(&self) -> u64 {
        let mode = match self.layout.swizzle {
            128 => 1,
            64 => 2,
            32 => 3,
            _ => 0,
        };
        (((self.lbo >> 4) & 0x3FFF) << 16) | (((self.sbo >> 4) & 0x3FFF) << 32) | (mode << 62)
    }
}

/// Swizzle<B,4,3> on a shared byte address: bits 4.. XOR bits 7.., B bits of them.
fn swizzle(addr: u64, width: u64) -> u64 {
    if width == 0 {
        addr
    } else {
        addr ^ (((addr >> 7) & (width / 16 - 1)) << 4)
    }
}

/// One product to check.
#[derive(Debug, Clone, Copy)]
struct Case {
    bf16: bool,
    n: u64,
    a: Layout,
    b: Layout,
    /// K slices of 16 (1 or 2 wgmma instructions).
    slices: u64,
    /// The first wgmma's scale-d (the second always accumulates).
    scale_d: bool,
    negate_a: bool,
    warpgroups: u64,
    /// Only lanes 0-15 issue the first wgmma.
    half_warp: bool,
}

const BASE: Case = Case {
    bf16: false,
    n: 64,
    a: k_major(128),
    b: mn_major(128),
    slices: 2,
    scale_d: true,
    negate_a: false,
    warpgroups: 1,
    half_warp: false,
};

/// Everything a case's kernel is given.
struct Staged {
    ptx: String,
    threads: u32,
    /// A (`warpgroups` x 64 rows by K) and B (K by N), row-major.
    a: Vec<f64>,
    b: Vec<f64>,
    d_init: Vec<f64>,
    /// src (16-bit elements), lut (their shared offsets), descs (u64 pairs: descriptor bits
    /// without the start, start offset from `smem`), d_init, d_out.
    bufs: Vec<Vec<u8>>,
    shared_bytes: u64,
}

fn stage(c: &Case) -> Staged {
    let k = 16 * c.slices;
    let rows = 64 * c.warpgroups;
    let a = values((rows * k) as usize, 1 + c.n);
    let b = values((k * c.n) as usize, 2 + c.n);
    let d_init = values((rows * c.n) as usize, 3 + c.n);
    let (pa, pb) = (place(c.a, 64, k), place(c.b, c.n, k));
    let size = |p: &Placement, x: u64| {
        let end = (0..x)
            .flat_map(|x| (0..k).map(move |kk| (x, kk)))
            .map(|(x, kk)| p.offset(x, kk) + 2)
            .max()
            .unwrap_or(0);
        end.div_ceil(1024) * 1024
    };
    let (a_size, b_size) = (size(&pa, 64), size(&pb, c.n));
    let b_region = a_size * c.warpgroups;
    let shared_bytes = b_region + b_size;
    let half = |x: f64| {
        if c.bf16 {
            bf16::from_f64(x).to_bits()
        } else {
            f16::from_f64(x).to_bits()
        }
    };
    let (mut src, mut lut) = (Vec::new(), Vec::new());
    for g in 0..c.warpgroups {
        for r in 0..64 {
            for kk in 0..k {
                src.push(half(a[((64 * g + r) * k + kk) as usize]));
                let at = swizzle(g * a_size + pa.offset(r, kk), c.a.swizzle);
                lut.push(at as u32);
            }
        }
    }
    for kk in 0..k {
        for n in 0..c.n {
            src.push(half(b[(kk * c.n + n) as usize]));
            lut.push(swizzle(b_region + pb.offset(n, kk), c.b.swizzle) as u32);
        }
    }
    let mut sorted = lut.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), lut.len(), "the test's layouts overlap");
    // Per slice: each warpgroup's A, then B; the start of slice s is where (x 0, k 16s) lies.
    let mut descs = Vec::new();
    for s in 0..c.slices {
        for g in 0..c.warpgroups {
            descs.extend([pa.descriptor(), g * a_size + pa.offset(0, 16 * s)]);
        }
        descs.extend([pb.descriptor(), b_region + pb.offset(0, 16 * s)]);
    }
    let f32s =
        |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect() };
    let bufs = vec![
        src.iter().flat_map(|h| h.to_le_bytes()).collect(),
        lut.iter().flat_map(|o| o.to_le_bytes()).collect(),
        descs.iter().flat_map(|d| d.to_le_bytes()).collect(),
        f32s(&d_init),
        vec![0; (rows * c.n * 4) as usize],
    ];
    Staged {
        ptx: kernel(c, src.len(), shared_bytes),
        threads: (128 * c.warpgroups) as u32,
        a,
        b,
        d_init,
        bufs,
        shared_bytes,
    }
}

/// The kernel: copy every element to its shared offset, build the descriptors, load D's
/// fragment, run the wgmma(s), store D's fragment.
fn kernel(c: &Case, elements: usize, shared_bytes: u64) -> String {
    let (n, threads) = (c.n, 128 * c.warpgroups);
    let ty = if c.bf16 { "bf16" } else { "f16" };
    let regs = n / 2;
    let d = (0..regs)
        .map(|i| format!("%f{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    // Register i of lane l: row l/4 + 8(c/2), column 8j + 2(l%4) + c%2, j = i/4, c = i%4.
    let frag = |i: u64| 4 * (8 * (i % 4 / 2) * n + 8 * (i / 4) + i % 2);
    let loads: String = (0..regs)
        .map(|i| format!("  ld.global.f32 %f{i}, [%rd11+{}];\n", frag(i)))
        .collect();
    let stores: String = (0..regs)
        .map(|i| format!("  st.global.f32 [%rd12+{}], %f{i};\n", frag(i)))
        .collect();
    let entry = 16 * (c.warpgroups + 1);
    let descs: String = (0..c.slices)
        .map(|s| {
            let (a_off, b_off) = (entry * s, entry * s + 16 * c.warpgroups);
            format!(
                "  ld.global.u64 %rd16, [%rd14+{a_off}];
  ld.global.u64 %rd17, [%rd14+{}];
  add.s64 %rd18, %rd15, %rd17;
  shr.u64 %rd18, %rd18, 4;
  and.b64 %rd18, %rd18, 16383;
  or.b64 %rd{}, %rd16, %rd18;
  ld.global.u64 %rd16, [%rd3+{b_off}];
  ld.global.u64 %rd17, [%rd3+{}];
  add.s64 %rd18, %rd15, %rd17;
  shr.u64 %rd18, %rd18, 4;
  and.b64 %rd18, %rd18, 16383;
  or.b64 %rd{}, %rd16, %rd18;
",
                a_off + 8,
                20 + s,
                b_off + 8,
                30 + s
            )
        })
        .collect();
    let (sa, ta, tb) = (
        if c.negate_a { -1 } else { 1 },
        u8::from(c.a.mn_major),
        u8::from(c.b.mn_major),
    );
    let wgmma = format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{d}}}");
    let guard = if c.half_warp { "@%p2 " } else { "" };
    let second = if c.slices == 2 {
        format!("  {wgmma}, %rd21, %rd31, 1, {sa}, 1, {ta}, {tb};\n")
    } else {
        String::new()
    };
    format!(
        "{HEADER}
.visible .entry wg(.param .u64 wg_param_0, .param .u64 wg_param_1, .param .u64 wg_param_2, .param .u64 wg_param_3, .param .u64 wg_param_4)
{{
  .reg .b16 %h<2>;
  .reg .b32 %r<40>;
  .reg .f32 %f<130>;
  .reg .b64 %rd<40>;
  .reg .pred %p<4>;
  .shared .align 1024 .b8 smem[{shared_bytes}];
  ld.param.u64 %rd1, [wg_param_0];
  ld.param.u64 %rd2, [wg_param_1];
  ld.param.u64 %rd3, [wg_param_2];
  ld.param.u64 %rd4, [wg_param_3];
  ld.param.u64 %rd5, [wg_param_4];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  mov.u32 %r3, %r1;
COPY:
  setp.ge.u32 %p1, %r3, {elements};
  @%p1 bra COPIED;
  mul.wide.u32 %rd6, %r3, 2;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u16 %h1, [%rd7];
  mul.wide.u32 %rd8, %r3, 4;
  add.s64 %rd9, %rd2, %rd8;
  ld.global.u32 %r4, [%rd9];
  add.s32 %r5, %r2, %r4;
  st.shared.b16 [%r5], %h1;
  add.s32 %r3, %r3, {threads};
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  bar.sync 0;
  // Lane l of warp w: D row 16w + l/4, column 2(l%4).
  shr.u32 %r6, %r1, 5;
  and.b32 %r7, %r1, 31;
  setp.lt.u32 %p2, %r7, 16;
  shr.u32 %r8, %r7, 2;
  shl.b32 %r9, %r6, 4;
  add.s32 %r10, %r9, %r8;
  and.b32 %r11, %r7, 3;
  shl.b32 %r12, %r11, 1;
  mul.lo.s32 %r13, %r10, {n};
  add.s32 %r14, %r13, %r12;
  mul.wide.u32 %rd10, %r14, 4;
  add.s64 %rd11, %rd4, %rd10;
  add.s64 %rd12, %rd5, %rd10;
{loads}  // Descriptors of warpgroup tid / 128: start = (smem + offset) >> 4.
  shr.u32 %r15, %r1, 7;
  mul.wide.u32 %rd13, %r15, 16;
  add.s64 %rd14, %rd3, %rd13;
  cvt.u64.u32 %rd15, %r2;
{descs}  mov.u32 %r20, {scale_d};
  wgmma.fence.sync.aligned;
  {{
  .reg .pred p;
  setp.ne.b32 p, %r20, 0;
  {guard}{wgmma}, %rd20, %rd30, p, {sa}, 1, {ta}, {tb};
  }}
{second}  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{stores}  ret;
}}
",
        scale_d = u8::from(c.scale_d),
    )
}

/// Runs a case and compares D with sa · A·B (+ D when scale-d) computed directly, exactly.
fn check(c: Case) {
    let s = stage(&c);
    let (out, report) = try_run(&s.ptx, s.threads, &s.bufs).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.findings.is_empty(), "{c:?}: {:?}", report.findings);
    assert!(
        report.approx.iter().any(|a| a.starts_with("wgmma")),
        "{:?}",
        report.approx
    );
    let k = (16 * c.slices) as usize;
    let n = c.n as usize;
    let sa = if c.negate_a { -1.0 } else { 1.0 };
    let got: Vec<f32> = out[4]
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for r in 0..(64 * c.warpgroups) as usize {
        for col in 0..n {
            let dot: f64 = (0..k).map(|kk| s.a[r * k + kk] * s.b[kk * n + col]).sum();
            let acc = if c.scale_d {
                s.d_init[r * n + col]
            } else {
                0.0
            };
            let want = sa * dot + acc;
            assert_eq!(
                f64::from(got[r * n + col]),
                want,
                "{c:?}: D[{r}][{col}] ({} bytes of shared memory)",
                s.shared_bytes
            );
        }
    }
}

#[test]
fn f16_n128_with_128_byte_swizzles_overwrites_d_when_scale_d_is_false() {
    check(Case {
        n: 128,
        scale_d: false,
        ..BASE
    });
}

#[test]
fn bf16_n64_with_64_byte_swizzles_accumulates_onto_d() {
    check(Case {
        bf16: true,
        a: k_major(64),
        b: mn_major(64),
        ..BASE
    });
}

#[test]
fn f16_n8_with_32_byte_swizzles_and_a_k_major_b() {
    check(Case {
        n: 8,
        a: k_major(32),
        b: k_major(32),
        slices: 1,
        ..BASE
    });
}

#[test]
fn bf16_n256_without_swizzle_and_a_negated() {
    check(Case {
        bf16: true,
        n: 256,
        a: k_major(0),
        b: mn_major(0),
        negate_a: true,
        ..BASE
    });
}

#[test]
fn two_warpgroups_each_multiply_their_own_rows_of_a() {
    check(Case {
        warpgroups: 2,
        b: k_major(128),
        ..BASE
    });
}

#[test]
fn k_major_b_without_swizzle_and_mn_major_b_128_at_n8() {
    check(Case {
        n: 8,
        a: k_major(0),
        b: k_major(0),
        ..BASE
    });
    check(Case {
        n: 8,
        b: mn_major(128),
        ..BASE
    });
}

/// Rewrites a staged case's descriptor table: `f(slice entry index, [bits, start offset])`.
fn with_descs(s: &mut Staged, f: impl Fn(usize, &mut [u64; 2])) {
    let mut words: Vec<u64> = s.bufs[2]
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    for (i, e) in words.chunks_mut(2).enumerate() {
        let mut pair = [e[0], e[1]];
        f(i, &mut pair);
        e.copy_from_slice(&pair);
    }
    s.bufs[2] = words.iter().flat_map(|w| w.to_le_bytes()).collect();
}

#[test]
fn a_descriptor_past_shared_memory_is_an_out_of_bounds_finding() {
    let mut s = stage(&BASE);
    let end = s.shared_bytes;
    // Entry 0: slice 0's A.
    with_descs(&mut s, |i, e| {
        if i == 0 {
            e[1] = end;
        }
    });
    let (_, report) = try_run(&s.ptx, s.threads, &s.bufs).unwrap_or_else(|e| panic!("{e}"));
    let f = report
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "out-of-bounds")
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        f.message.contains("wgmma operand A") && f.message.contains(&format!("offset {end}")),
        "{}",
        f.message
    );
    assert!(f.ptx_line > 0);
}

#[test]
fn a_descriptor_base_offset_is_unsupported() {
    let mut s = stage(&BASE);
    // Entry 1: slice 0's B.
    with_descs(&mut s, |i, e| {
        if i == 1 {
            e[0] |= 2 << 49;
        }
    });
    match try_run(&s.ptx, s.threads, &s.bufs) {
        Err(e @ EmuError::Unsupported { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("wgmma.mma_async") && text.contains("B descriptor base offset 2"),
                "{text}"
            );
        }
        other => panic!("{:?}", other.map(|(_, r)| r.findings)),
    }
}

#[test]
fn an_f16_accumulator_is_unsupported() {
    let ptx = format!(
        "{HEADER}.visible .entry wg()\n{{\n  .reg .b32 %r<9>;\n  .reg .b64 %rd<3>;\n  \
         wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {{%r1, %r2}}, %rd1, %rd2, 1, 1, 1, 0, 0;\n  ret;\n}}\n"
    );
    let errs = Module::parse(&ptx).expect_err("f16 D");
    assert!(
        errs.iter()
            .any(|e| e.message.contains("unsupported instruction")
                && e.message
                    .contains("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16")
                && e.message.contains("D type `.f16`")),
        "{errs:?}"
    );
}

/// The report's partial-warp finding.
fn partial_warp(report: &Report) -> &kwb::emu::Finding {
    report
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "partial-warp")
        .unwrap_or_else(|| panic!("{:?}", report.findings))
}

#[test]
fn a_wgmma_of_half_a_warp_is_a_partial_warp_finding() {
    let s = stage(&Case {
        half_warp: true,
        ..BASE
    });
    let (_, report) = try_run(&s.ptx, s.threads, &s.bufs).unwrap_or_else(|e| panic!("{e}"));
    let f = partial_warp(&report);
    assert!(
        f.message.contains("wgmma") && f.message.contains("16 of the warp's 32 lanes"),
        "{}",
        f.message
    );
}

#[test]
fn hopper_fences_and_wait_counts_parse() {
    let ptx = format!(
        "{HEADER}.visible .entry wg()\n{{\n  fence.proxy.async;\n  fence.proxy.async.global;\n  \
         fence.proxy.async.shared::cluster;\n  fence.proxy.async.shared::cta;\n  \
         wgmma.fence.sync.aligned;\n  wgmma.commit_group.sync.aligned;\n  \
         wgmma.wait_group.sync.aligned 1;\n  ret;\n}}\n"
    );
    let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(module.entries(), ["wg"]);
    let bad = format!("{HEADER}.visible .entry wg()\n{{\n  fence.proxy.async.local;\n  ret;\n}}\n");
    assert!(Module::parse(&bad).is_err());
}

#[test]
fn a_wgmma_in_a_block_smaller_than_a_warpgroup_is_a_finding() {
    let s = stage(&BASE);
    let (_, report) = try_run(&s.ptx, 32, &s.bufs).unwrap_or_else(|e| panic!("{e}"));
    let f = partial_warp(&report);
    assert!(
        f.message.contains("warpgroup") && f.message.contains("block of 32 threads"),
        "{}",
        f.message
    );
}
