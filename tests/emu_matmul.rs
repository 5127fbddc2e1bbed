//! The emulator's tensor-core instructions against direct computation: small hand-written PTX
//! kernels run through `kwb::emu` check `mma.sync.m16n8k16` (f16 and bf16 inputs, f32 and f16
//! accumulators), `ldmatrix` (x1, x2, x4, with and without `.trans`), the two together on
//! row-major tiles, and `cp.async` (zero fill, and the checks it goes through); then the
//! matmul workspace end to end with `kwb batch --cpu`.

mod support;

use half::{bf16, f16};
use kwb::emu::{Module, Report};
use kwb::report::{json::from_json, Status};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs `entry` of `ptx` on one block of `threads` threads; each buffer is a parameter.
/// Returns every buffer's bytes afterwards and the emulator's report.
fn run(ptx: &str, entry: &str, threads: u32, bufs: &[Vec<u8>]) -> (Vec<Vec<u8>>, Report) {
    support::emu_block::run_block(ptx, entry, threads, bufs)
        .unwrap_or_else(|e| panic!("{e}\n{ptx}"))
}

use support::emu_block::eighths as values;

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes_of(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The 16-bit pattern of `x` in the input type.
fn h(x: f64, bf: bool) -> u32 {
    u32::from(if bf {
        bf16::from_f64(x).to_bits()
    } else {
        f16::from_f64(x).to_bits()
    })
}

/// A kernel in which lane `l` loads its A (4 words), B (2) and C fragments from per-lane slots,
/// runs one mma, and stores its D fragment.
fn mma_kernel(ab: &str, acc: &str) -> String {
    let n = if acc == "f32" { 4 } else { 2 };
    let regs = |p: &str, from: usize| {
        (from..from + n)
            .map(|i| format!("%{p}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (acc_reg, vty) = if acc == "f32" {
        ("f", "f32")
    } else {
        ("r", "b32")
    };
    let vec = if n == 4 { "v4" } else { "v2" };
    format!(
        "{HEADER}
.visible .entry mma(.param .u64 mma_param_0, .param .u64 mma_param_1, .param .u64 mma_param_2, .param .u64 mma_param_3)
{{
  .reg .b32 %r<40>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [mma_param_0];
  ld.param.u64 %rd2, [mma_param_1];
  ld.param.u64 %rd3, [mma_param_2];
  ld.param.u64 %rd4, [mma_param_3];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 16;
  mul.wide.u32 %rd6, %r1, 8;
  mul.wide.u32 %rd7, %r1, {cbytes};
  add.s64 %rd8, %rd1, %rd5;
  ld.global.v4.b32 {{%r2, %r3, %r4, %r5}}, [%rd8];
  add.s64 %rd9, %rd2, %rd6;
  ld.global.v2.b32 {{%r6, %r7}}, [%rd9];
  add.s64 %rd10, %rd3, %rd7;
  ld.global.{vec}.{vty} {{{c}}}, [%rd10];
  mma.sync.aligned.m16n8k16.row.col.{acc}.{ab}.{ab}.{acc} {{{d}}}, {{%r2, %r3, %r4, %r5}}, {{%r6, %r7}}, {{{c}}};
  add.s64 %rd11, %rd4, %rd7;
  st.global.{vec}.{vty} [%rd11], {{{d}}};
  ret;
}}
",
        cbytes = n * 4,
        c = regs(acc_reg, 20),
        d = regs(acc_reg, 30),
    )
}

/// Runs one m16n8k16 through the emulator with fragments packed as the PTX ISA lays them out,
/// and compares D with A·B + C computed directly.
fn check_mma(ab: &str, acc: &str) {
    let bf = ab == "bf16";
    let a = values(16 * 16, 1); // a[r][k]
    let b = values(16 * 8, 2); // b[k][n]
    let c = values(16 * 8, 3); // c[r][n]
    let (mut af, mut bfr, mut cf) = (Vec::new(), Vec::new(), Vec::new());
    for lane in 0..32 {
        let (g, q) = (lane / 4, lane % 4);
        for reg in 0..4 {
            let (row, col) = (g + 8 * (reg % 2), 2 * q + 8 * (reg / 2));
            af.push(h(a[row * 16 + col], bf) | (h(a[row * 16 + col + 1], bf) << 16));
        }
        for reg in 0..2 {
            let k = 2 * q + 8 * reg;
            bfr.push(h(b[k * 8 + g], bf) | (h(b[(k + 1) * 8 + g], bf) << 16));
        }
        for e in 0..4 {
            let (row, col) = (g + 8 * (e / 2), 2 * q + e % 2);
            let x = c[row * 8 + col];
            if acc == "f32" {
                cf.push((x as f32).to_bits());
            } else if e % 2 == 0 {
                cf.push(h(x, false));
            } else {
                let last = cf.last_mut().unwrap();
                *last |= h(x, false) << 16;
            }
        }
    }
    let dlen = cf.len();
    let (out, report) = run(
        &mma_kernel(ab, acc),
        "mma",
        32,
        &[
            bytes_of(&af),
            bytes_of(&bfr),
            bytes_of(&cf),
            vec![0; dlen * 4],
        ],
    );
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let d = u32s(&out[3]);
    for lane in 0..32 {
        let (g, q) = (lane / 4, lane % 4);
        for e in 0..4 {
            let (row, col) = (g + 8 * (e / 2), 2 * q + e % 2);
            let want: f64 = c[row * 8 + col]
                + (0..16)
                    .map(|k| a[row * 16 + k] * b[k * 8 + col])
                    .sum::<f64>();
            let got = if acc == "f32" {
                f64::from(f32::from_bits(d[lane * 4 + e]))
            } else {
                let w = d[lane * 2 + e / 2] >> (16 * (e % 2));
                f16::from_bits(w as u16).to_f64()
            };
            // The inputs are exact in f16 and bf16 and the sums exact in f32; an f16 result
            // is rounded to 11 bits.
            let tol = if acc == "f32" {
                0.0
            } else {
                want.abs() * 2f64.powi(-11)
            };
            assert!(
                (got - want).abs() <= tol,
                "{ab}/{acc}: lane {lane}, D[{row}][{col}] = {got}, expected {want}"
            );
        }
    }
}

#[test]
fn mma_f16_inputs_f32_accumulators_match_a_direct_product() {
    check_mma("f16", "f32");
}

#[test]
fn mma_bf16_inputs_match_a_direct_product() {
    check_mma("bf16", "f32");
}

#[test]
fn mma_f16_accumulators_match_a_direct_product() {
    check_mma("f16", "f16");
}

/// A kernel in which 32 threads copy `rows` rows of 16 bytes into shared memory (unless
/// `skip_copy`), then each lane gives the address of row `lane % rows` to one `ldmatrix`, and
/// stores the registers it received.
fn ldmatrix_kernel(shape: &str, regs: usize, skip_copy: bool) -> String {
    let d = (0..regs)
        .map(|i| format!("%r{}", 20 + i))
        .collect::<Vec<_>>()
        .join(", ");
    let copy = if skip_copy {
        String::new()
    } else {
        "  ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd4];\n  st.shared.v4.b32 [%r7], {%r2, %r3, %r4, %r5};\n"
            .to_string()
    };
    let stores: String = (0..regs)
        .map(|i| format!("  st.global.b32 [%rd6+{}], %r{};\n", 4 * i, 20 + i))
        .collect();
    format!(
        "{HEADER}
.visible .entry ldm(.param .u64 ldm_param_0, .param .u64 ldm_param_1)
{{
  .reg .b32 %r<40>;
  .reg .b64 %rd<20>;
  .shared .align 16 .b8 tile[512];
  ld.param.u64 %rd1, [ldm_param_0];
  ld.param.u64 %rd2, [ldm_param_1];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r6, tile;
  shl.b32 %r8, %r1, 4;
  add.s32 %r7, %r6, %r8;
{copy}  bar.sync 0;
  ldmatrix.sync.aligned.{shape}.shared.b16 {{{d}}}, [%r7];
  mul.wide.u32 %rd5, %r1, {stride};
  add.s64 %rd6, %rd2, %rd5;
{stores}  ret;
}}
",
        stride = 4 * regs,
    )
}

#[test]
fn ldmatrix_gives_each_lane_its_fragment() {
    // 32 rows of 8 halves: row i (lane i's address) holds 100 * i + column.
    let src: Vec<u8> = (0..32u16)
        .flat_map(|r| (0..8u16).map(move |c| 100 * r + c))
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for (x, regs) in [("x1", 1), ("x2", 2), ("x4", 4)] {
        for trans in [false, true] {
            let shape = format!("m8n8.{x}{}", if trans { ".trans" } else { "" });
            let (out, report) = run(
                &ldmatrix_kernel(&shape, regs, false),
                "ldm",
                32,
                &[src.clone(), vec![0; 32 * 4 * regs]],
            );
            assert!(report.findings.is_empty(), "{shape}: {:?}", report.findings);
            let got = u32s(&out[1]);
            for lane in 0..32 {
                for j in 0..regs {
                    // Tile j is rows 8j..8j+7; lane l gets row l/4, columns 2(l%4), +1
                    // (transposed: column l/4, rows 2(l%4), +1).
                    let (r, c) = (lane / 4, 2 * (lane % 4));
                    let at = |row: usize, col: usize| 100 * (8 * j + row) as u32 + col as u32;
                    let (x0, x1) = if trans {
                        (at(c, r), at(c + 1, r))
                    } else {
                        (at(r, c), at(r, c + 1))
                    };
                    assert_eq!(
                        got[lane * regs + j],
                        x0 | (x1 << 16),
                        "{shape}: lane {lane}, register {j}"
                    );
                }
            }
        }
    }
}

#[test]
fn ldmatrix_then_mma_multiplies_row_major_tiles() {
    // A (16x16, row-major) and B (16x8, row-major: k-major) staged in shared memory; A's four
    // 8x8 tiles through ldmatrix.x4, B's two through ldmatrix.x2.trans, then one mma.
    let a = values(256, 7);
    let b = values(128, 8);
    let ptx = format!(
        "{HEADER}
.visible .entry mm(.param .u64 mm_param_0, .param .u64 mm_param_1, .param .u64 mm_param_2)
{{
  .reg .b32 %r<60>;
  .reg .f32 %f<20>;
  .reg .b64 %rd<20>;
  .reg .pred %p<4>;
  .shared .align 16 .b8 sa[512];
  .shared .align 16 .b8 sb[256];
  ld.param.u64 %rd1, [mm_param_0];
  ld.param.u64 %rd2, [mm_param_1];
  ld.param.u64 %rd3, [mm_param_2];
  mov.u32 %r1, %tid.x;
  // A: 32 chunks of 16 bytes, one per lane; B: 16 chunks, lanes 0-15.
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.v4.b32 {{%r2, %r3, %r4, %r5}}, [%rd5];
  mov.u32 %r6, sa;
  shl.b32 %r7, %r1, 4;
  add.s32 %r8, %r6, %r7;
  st.shared.v4.b32 [%r8], {{%r2, %r3, %r4, %r5}};
  setp.lt.u32 %p1, %r1, 16;
  @!%p1 bra SKIP;
  add.s64 %rd6, %rd2, %rd4;
  ld.global.v4.b32 {{%r2, %r3, %r4, %r5}}, [%rd6];
  mov.u32 %r9, sb;
  add.s32 %r10, %r9, %r7;
  st.shared.v4.b32 [%r10], {{%r2, %r3, %r4, %r5}};
SKIP:
  bar.sync 0;
  // A: lane l addresses row (l % 16), column 8 * (l / 16): 32 bytes a row.
  and.b32 %r11, %r1, 15;
  shl.b32 %r12, %r11, 5;
  shr.u32 %r13, %r1, 4;
  shl.b32 %r14, %r13, 4;
  add.s32 %r15, %r12, %r14;
  add.s32 %r16, %r6, %r15;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r20, %r21, %r22, %r23}}, [%r16];
  // B: lane l (of 0-15) addresses k-row (l % 16): 16 bytes a row.
  mov.u32 %r9, sb;
  shl.b32 %r17, %r11, 4;
  add.s32 %r18, %r9, %r17;
  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{%r24, %r25}}, [%r18];
  mov.f32 %f1, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{%f2, %f3, %f4, %f5}}, {{%r20, %r21, %r22, %r23}}, {{%r24, %r25}}, {{%f1, %f1, %f1, %f1}};
  add.s64 %rd7, %rd3, %rd4;
  st.global.v4.f32 [%rd7], {{%f2, %f3, %f4, %f5}};
  ret;
}}
"
    );
    let to_bytes = |m: &[f64]| -> Vec<u8> {
        m.iter()
            .flat_map(|&x| f16::from_f64(x).to_bits().to_le_bytes())
            .collect()
    };
    let (out, report) = run(&ptx, "mm", 32, &[to_bytes(&a), to_bytes(&b), vec![0; 512]]);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let d = u32s(&out[2]);
    for lane in 0..32 {
        let (g, q) = (lane / 4, lane % 4);
        for e in 0..4 {
            let (row, col) = (g + 8 * (e / 2), 2 * q + e % 2);
            let want: f64 = (0..16).map(|k| a[row * 16 + k] * b[k * 8 + col]).sum();
            let got = f64::from(f32::from_bits(d[lane * 4 + e]));
            assert_eq!(got, want, "C[{row}][{col}] (lane {lane})");
        }
    }
}

#[test]
fn ldmatrix_of_unwritten_shared_memory_is_a_finding() {
    let (_, report) = run(
        &ldmatrix_kernel("m8n8.x4", 4, true),
        "ldm",
        32,
        &[vec![0; 512], vec![0; 512]],
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind.as_str() == "uninit-shared"),
        "{:?}",
        report.findings
    );
}

#[test]
fn ldmatrix_by_half_a_warp_is_a_finding() {
    let (_, report) = run(
        &ldmatrix_kernel("m8n8.x2", 2, false),
        "ldm",
        16,
        &[vec![0; 512], vec![0; 512]],
    );
    let f = report
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "partial-warp")
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        f.message.contains("16 of the warp's 32 lanes"),
        "{}",
        f.message
    );
}

/// Thread 0 copies 16 bytes with cp.async (with `src_size` of them read); thread `reader`
/// then reads the first word from shared memory, with or without a barrier in between.
fn cp_async_kernel(src_size: u32, reader: u32, barrier: bool) -> String {
    let bar = if barrier { "  bar.sync 0;\n" } else { "" };
    format!(
        "{HEADER}
.visible .entry cp(.param .u64 cp_param_0, .param .u64 cp_param_1)
{{
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .reg .pred %p<4>;
  .shared .align 16 .b8 buf[16];
  ld.param.u64 %rd1, [cp_param_0];
  ld.param.u64 %rd2, [cp_param_1];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  mov.u32 %r3, {src_size};
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra AFTER;
  cp.async.cg.shared.global [%r2], [%rd1], 16, %r3;
  cp.async.commit_group;
  cp.async.wait_group 0;
AFTER:
{bar}  setp.ne.u32 %p2, %r1, {reader};
  @%p2 bra DONE;
  ld.shared.v4.b32 {{%r4, %r5, %r6, %r7}}, [%r2];
  st.global.v4.b32 [%rd2], {{%r4, %r5, %r6, %r7}};
DONE:
  ret;
}}
"
    )
}

#[test]
fn cp_async_copies_and_zero_fills() {
    let src: Vec<u8> = (1..=16).collect();
    for (size, want) in [
        (16, src.clone()),
        (0, vec![0; 16]),
        (5, [&src[..5], &[0; 11][..]].concat()),
    ] {
        let (out, report) = run(
            &cp_async_kernel(size, 0, true),
            "cp",
            32,
            &[src.clone(), vec![9; 16]],
        );
        assert!(report.findings.is_empty(), "{size}: {:?}", report.findings);
        assert_eq!(out[1], want, "src-size {size}");
    }
}

#[test]
fn cp_async_is_a_shared_write_for_the_race_check() {
    let src = vec![1u8; 16];
    let (_, report) = run(
        &cp_async_kernel(16, 1, false),
        "cp",
        32,
        &[src.clone(), vec![0; 16]],
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind.as_str() == "shared-race"),
        "{:?}",
        report.findings
    );
    let (_, report) = run(&cp_async_kernel(16, 1, true), "cp", 32, &[src, vec![0; 16]]);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[test]
fn cp_async_past_a_buffer_is_out_of_bounds_unless_nothing_is_read() {
    // An 8-byte source: a 16-byte copy runs past it; with src-size 8 it does not.
    let (_, report) = run(
        &cp_async_kernel(16, 0, true),
        "cp",
        32,
        &[vec![1; 8], vec![0; 16]],
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind.as_str() == "out-of-bounds"),
        "{:?}",
        report.findings
    );
    let (_, report) = run(
        &cp_async_kernel(8, 0, true),
        "cp",
        32,
        &[vec![1; 8], vec![0; 16]],
    );
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[test]
fn other_mma_shapes_and_bulk_copies_are_named_as_unsupported() {
    for (inst, words) in [
        (
            "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, {%r1, %r2}, {%r3, %r4}, {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};",
            "m8n8k4",
        ),
        (
            "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r3, %r4}, {%r1, %r2, %r3, %r4};",
            "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32",
        ),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];",
            "cp.async.bulk",
        ),
    ] {
        let ptx = format!(
            "{HEADER}.visible .entry k()\n{{\n  .reg .b32 %r<9>;\n  .reg .f32 %f<9>;\n  .reg .b64 %rd<3>;\n  {inst}\n  ret;\n}}\n"
        );
        let errs = Module::parse(&ptx).expect_err(inst);
        assert!(
            errs.iter()
                .any(|e| e.message.contains("unsupported instruction") && e.message.contains(words)),
            "{inst}: {errs:?}"
        );
    }
}

#[test]
fn matmul_workspace_passes_on_the_cpu_with_no_finding() {
    support::provision_nvrtc();
    let (code, out, err) = support::run_kwb(&[
        "batch",
        "--cpu",
        "workspaces/matmul.yaml",
        "--format",
        "json",
        "--seed",
        "1",
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    let report = from_json(&out).unwrap_or_else(|e| panic!("{e}:\n{out}\n{err}"));
    // v1-v4, v5 swept over 32 configurations, v6 over 4 (persistent or not) and v7 over 8
    // (TMA copies at odd8, where N and K are multiples of 8; cp.async at odd).
    assert_eq!(report.results.len(), 96, "48 versions at 2 sizes: {out}");
    for r in &report.results {
        assert_eq!(
            r.status,
            Status::Ok,
            "{} @ {}: {:?}",
            r.version,
            r.size,
            r.message
        );
        assert!(r.findings.is_empty(), "{}: {:?}", r.version, r.findings);
    }
}

#[test]
fn cvt_to_f16x2_puts_the_first_source_in_the_upper_half() {
    // `__floats2half2_rn(x, y)` (the mma kernels' epilogue) is `cvt.rn.f16x2.f32 d, y, x`.
    let ptx = format!(
        "{HEADER}
.visible .entry pack(.param .u64 pack_param_0)
{{
  .reg .b32 %r<4>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pack_param_0];
  mov.f32 %f1, 0f40000000;
  mov.f32 %f2, 0f3F800000;
  cvt.rn.f16x2.f32 %r1, %f1, %f2;
  st.global.b32 [%rd1], %r1;
  ret;
}}
"
    );
    let (out, _) = run(&ptx, "pack", 1, &[vec![0; 4]]);
    let w = u32s(&out[0])[0];
    assert_eq!(f16::from_bits((w >> 16) as u16).to_f64(), 2.0, "upper: a");
    assert_eq!(f16::from_bits(w as u16).to_f64(), 1.0, "lower: b");
}
