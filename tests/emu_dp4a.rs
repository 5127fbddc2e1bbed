//! `dp4a` in the PTX emulator (NVRTC writes it for an int8 `tl.dot`): the accumulator plus the
//! four byte products, each byte sign- or zero-extended by its operand's type, wrapping at 32
//! bits.

use kwb::emu::{self, InitState, Launch, Memory, Module, Options};

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry dots(.param .u64 dots_param_0)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [dots_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0x80FF7F02;
    mov.u32 %r2, 0x02FE0381;
    mov.u32 %r3, 2147483000;
    dp4a.s32.s32 %r4, %r1, %r2, %r3;
    dp4a.u32.u32 %r5, %r1, %r2, %r3;
    dp4a.s32.u32 %r6, %r1, %r2, %r3;
    dp4a.u32.s32 %r7, %r1, %r2, %r3;
    st.global.u32 [%rd2], %r4;
    st.global.u32 [%rd2+4], %r5;
    st.global.u32 [%rd2+8], %r6;
    st.global.u32 [%rd2+12], %r7;
    ret;
}
"#;

/// The four products worked out from the bytes, low byte first.
fn expected(a_signed: bool, b_signed: bool) -> u32 {
    let a = 0x80FF7F02u32.to_le_bytes();
    let b = 0x02FE0381u32.to_le_bytes();
    let ext = |x: u8, s: bool| if s { i64::from(x as i8) } else { i64::from(x) };
    let dot: i64 = (0..4)
        .map(|k| ext(a[k], a_signed) * ext(b[k], b_signed))
        .sum();
    (2147483000i64 + dot) as u32
}

#[test]
fn dp4a_extends_each_byte_by_its_operands_type_and_wraps() {
    let module = Module::parse(PTX).unwrap_or_else(|e| panic!("{e:?}"));
    let mut mem = Memory::new();
    let out = mem.alloc("out", &[0u8; 16], InitState::Initialized);
    let params = [emu::ParamValue::Word(out)];
    let l = Launch {
        entry: "dots",
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared: 0,
        params: &params,
    };
    let report = emu::run(&module, &l, &mut mem, &Options::default()).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let got: Vec<u32> = (mem.read(out, 16).chunks(4))
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want = [
        expected(true, true),
        expected(false, false),
        expected(true, false),
        expected(false, true),
    ];
    assert_eq!(got, want);
    // s32 x s32: 2*(-127) + 127*3 + (-1)*(-2) + (-128)*2 = -127.
    assert_eq!(got[0], 2147482873);
    // u32 x u32: 2*129 + 127*3 + 255*254 + 128*2 = 65665, which carries the sum past
    // i32::MAX: read as an int32 it has wrapped to a negative number.
    assert_eq!(got[1], 2147548665);
    assert!((got[1] as i32) < 0);
}
