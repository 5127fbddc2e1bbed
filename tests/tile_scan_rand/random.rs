//! `tl.randint`, `tl.rand`, `tl.randn`, `tl.randint4x`, `tl.philox` and `tl.umulhi`.

use super::{buf, emulator_case, errors, int, interp, EmuBuf, A};
use kwb::tile::DType;

const RANDOM: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(seed, out_i, out_u, out_n, out_4, out_p, BLOCK: tl.constexpr, NORMAL: tl.constexpr = True):
    offs = tl.arange(0, BLOCK)
    r = tl.randint(seed, offs)
    tl.static_assert(r.dtype == tl.uint32)
    tl.store(out_i + offs, r.to(tl.int32))
    tl.store(out_u + offs, tl.rand(seed, offs))
    if NORMAL:
        tl.store(out_n + offs, tl.randn(seed, offs))
    a, b, c, d = tl.randint4x(seed, offs + 1000, n_rounds=7)
    tl.store(out_4 + offs, a.to(tl.int32))
    tl.store(out_4 + BLOCK + offs, b.to(tl.int32))
    tl.store(out_4 + 2 * BLOCK + offs, c.to(tl.int32))
    tl.store(out_4 + 3 * BLOCK + offs, d.to(tl.int32))
    p0, p1, p2, p3 = tl.philox(seed, offs, offs * 3, 5, 0, n_rounds=3)
    tl.store(out_p + offs, p0.to(tl.int32))
    tl.store(out_p + BLOCK + offs, p3.to(tl.int32))
    h = tl.umulhi(offs * 123456789, 987654321 + offs)
    tl.store(out_p + 2 * BLOCK + offs, h)
"#;

fn run(seed: i64) -> Vec<Vec<f64>> {
    let args = [
        A::Int(seed),
        buf(DType::I32, &[0.0; 8]),
        buf(DType::F32, &[0.0; 8]),
        buf(DType::F32, &[0.0; 8]),
        buf(DType::I32, &[0.0; 32]),
        buf(DType::I32, &[0.0; 24]),
    ];
    interp(RANDOM, &[("BLOCK", int(8))], 1, &args).unwrap()
}

fn ints(v: &[i64]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// The exact f32 values of hexadecimal float literals (`0x1.0485980000000p-2`).
fn hex(v: &[&str]) -> Vec<f64> {
    v.iter()
        .map(|h| {
            let (m, e) = h.trim_start_matches("0x1.").split_once("p").unwrap();
            let frac = u64::from_str_radix(m, 16).unwrap() as f64 / 2f64.powi(4 * m.len() as i32);
            (1.0 + frac) * 2f64.powi(e.parse().unwrap())
        })
        .collect()
}

/// Expected values from Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) running this kernel
/// with BLOCK = 8 and seed 1234 (the uniforms printed as `float.hex()`).
#[test]
fn philox_gives_tritons_bits() {
    let out = run(1234);
    let randint = [
        546353992,
        -1628512715,
        1070188760,
        -1238984130,
        346514135,
        -903274039,
        -49503714,
        -1290919251,
    ];
    assert_eq!(out[0], ints(&randint));
    let rand = hex(&[
        "0x1.0485980000000p-2",
        "0x1.8444860000000p-1",
        "0x1.fe4e440000000p-2",
        "0x1.2765960000000p-1",
        "0x1.4a762c0000000p-3",
        "0x1.aeb6f00000000p-2",
        "0x1.79aeee0000000p-6",
        "0x1.33c7740000000p-1",
    ]);
    assert_eq!(out[1], rand);
    let randn = [
        -0.44222745299339294,
        0.11843180656433105,
        1.157851219177246,
        -0.19024240970611572,
        0.9828140735626221,
        -1.0670596361160278,
        -1.3068912029266357,
        0.6667479872703552,
    ];
    for (got, want) in out[2].iter().zip(randn) {
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{got} vs {want}"
        );
    }
    let four = [
        -1949641102,
        -268594736,
        -1014240231,
        636972112,
        1867539229,
        519274058,
        1768145594,
        -799856597,
        1550734044,
        675353910,
        1202864961,
        1868831472,
        -1550881446,
        1210892594,
        -187589035,
        1068658951,
        -201259243,
        1042329645,
        216366655,
        1054516827,
        -1323830950,
        -899292152,
        1419813852,
        -1465567574,
        -1867166964,
        -1105194917,
        -1277919742,
        1805509887,
        -857749535,
        -1238922599,
        442343332,
        1749682079,
    ];
    assert_eq!(out[3], ints(&four));
    let philox = [
        -1427575003,
        1760497347,
        -395013684,
        38567797,
        -1765149243,
        -1957597872,
        1332625298,
        1534981291,
        1123864104,
        1123864104,
        1123864104,
        357428603,
        -409006898,
        -1175442399,
        -1175442399,
        -1941877900,
        0,
        28389653,
        56779306,
        85168959,
        113558612,
        141948265,
        170337918,
        198727572,
    ];
    assert_eq!(out[4], ints(&philox));
}

/// A negative seed is sign-extended to 64 bits, as Triton's `seed.to(tl.uint64)` does
/// (Triton 3.9.0's interpreter, seed -7).
#[test]
fn a_negative_seed_fills_the_keys_high_word() {
    let out = run(-7);
    let randint = [
        459167936,
        2012679833,
        2094867916,
        -679808687,
        -1760572383,
        2132393555,
        1143769991,
        719251796,
    ];
    assert_eq!(out[0], ints(&randint));
    let p3 = [
        1938827061, 1938827061, -56833732, -823269233, 1476037270, 709601769, 709601769, 709601769,
    ];
    assert_eq!(out[4][8..16], ints(&p3));
}

/// Triton 3.9.0's interpreter, seed 42: 64-bit offsets give the counter's high word, a
/// scalar offset gives one number, and `tl.random.*` names the same functions.
#[test]
fn sixty_four_bit_and_scalar_offsets_give_tritons_bits() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(seed, out_i, out_u):
    offs = tl.arange(0, 4).to(tl.int64) + 8589934595
    r = tl.random.randint(seed, offs)
    tl.store(out_i + tl.arange(0, 4), r.to(tl.int32))
    pid = tl.program_id(0)
    tl.store(out_u, tl.rand(seed, pid + 3))
"#;
    let args = [
        A::Int(42),
        buf(DType::I32, &[0.0; 4]),
        buf(DType::F32, &[0.0]),
    ];
    let out = interp(src, &[], 1, &args).unwrap();
    assert_eq!(
        out[0],
        ints(&[-1737250604, -98432748, -1029429511, 275166437])
    );
    assert_eq!(out[1], hex(&["0x1.14e3ec0000000p-1"]));
}

#[test]
fn random_numbers_agree_with_the_emulator() {
    // The integer and uniform outputs are exact on both sides; the normals go through the
    // approximate `lg2`, `sqrt`, `sin` and `cos` in the generated code.
    for (block, warps) in [(8, 1), (256, 2), (1024, 4)] {
        let bufs = [
            EmuBuf("oi", "i32", block, true, ""),
            EmuBuf("ou", "f32", block, true, ""),
            EmuBuf("on", "f32", block, true, ""),
            EmuBuf("o4", "i32", 4 * block, true, ""),
            EmuBuf("op", "i32", 3 * block, true, ""),
        ];
        for seed in ["1234", "-7"] {
            let args = format!("{seed}, oi, ou, on, o4, op");
            let cx = format!("BLOCK: {block}, NORMAL: false");
            emulator_case(RANDOM, &cx, warps, &bufs, &args, (0.0, 0.0));
            let cx = format!("BLOCK: {block}");
            emulator_case(RANDOM, &cx, warps, &bufs, &args, (2e-6, 2e-6));
        }
    }
}

#[test]
fn sixty_four_bit_philox_counters_are_errors() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    o = tl.arange(0, 4).to(tl.int64)
    a, b, c, d = tl.philox(1, o, o, o, o)
    tl.store(y_ptr + tl.arange(0, 4), a.to(tl.float32))
"#;
    let e = errors(src, &[]);
    assert!(
        e.contains("k.py:8:") && e.contains("64-bit counters are not supported"),
        "{e}"
    );
}
