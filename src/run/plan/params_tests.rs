//! Tests of the PTX parameter reader, on PTX NVRTC produced (tests/fixtures/ptx, compiled with
//! `kwb inspect … --ptx` for sm_90) and on hand-written forms NVRTC does not emit today.

use super::*;

const ADD_F32: &str = include_str!("../../../tests/fixtures/ptx/add_f32.ptx");
const GELU_V1: &str = include_str!("../../../tests/fixtures/ptx/gelu_v1_manual.ptx");
const MIX: &str = include_str!("../../../tests/fixtures/ptx/params_mix.ptx");

const U8: ParamType = ParamType::Int {
    signed: false,
    bits: 8,
};
const U16: ParamType = ParamType::Int {
    signed: false,
    bits: 16,
};
const U32: ParamType = ParamType::Int {
    signed: false,
    bits: 32,
};
const U64: ParamType = ParamType::Int {
    signed: false,
    bits: 64,
};
const F32: ParamType = ParamType::Float { bits: 32 };
const F64: ParamType = ParamType::Float { bits: 64 };

/// `(type, bytes, align)` of each parameter.
fn shapes(ps: &[Param]) -> Vec<(ParamType, u32, u32)> {
    ps.iter().map(|p| (p.ty, p.bytes, p.align)).collect()
}

fn syntax_message(ptx: &str, entry: &str) -> String {
    match entry_params(ptx, entry) {
        Err(ParamError::Syntax { message, .. }) => message,
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn reads_add_f32() {
    let ps = entry_params(ADD_F32, "add_f32").unwrap();
    let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add_f32_param_0",
            "add_f32_param_1",
            "add_f32_param_2",
            "add_f32_param_3"
        ]
    );
    assert_eq!(
        shapes(&ps),
        [(U64, 8, 8), (U64, 8, 8), (U64, 8, 8), (U32, 4, 4)]
    );
    assert!(ps[0].ty.holds_pointer() && !ps[3].ty.holds_pointer());
    assert_eq!(ps[3].to_string(), ".u32 add_f32_param_3");
}

#[test]
fn reads_each_entry_of_a_multi_kernel_module() {
    let ms = entry_params(GELU_V1, "mul_scalar").unwrap();
    assert_eq!(
        shapes(&ms),
        [(U64, 8, 8), (F32, 4, 4), (U64, 8, 8), (U32, 4, 4)]
    );
    assert_eq!(ms[1].name, "mul_scalar_param_1");
    assert_eq!(entry_params(GELU_V1, "tanh_k").unwrap().len(), 3);
    assert_eq!(entry_params(GELU_V1, "add").unwrap().len(), 4);
}

#[test]
fn a_missing_entry_lists_the_entries_found() {
    let e = entry_params(GELU_V1, "gelu").unwrap_err();
    let ParamError::NoEntry { entry, found } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(entry, "gelu");
    assert_eq!(found, &["mul", "mul_scalar", "add", "add_scalar", "tanh_k"]);
    assert_eq!(
        e.to_string(),
        "no kernel entry `gelu` in the PTX; entries there: mul, mul_scalar, add, add_scalar, tanh_k"
    );
    let none = entry_params("// nothing\n.version 9.0\n", "k").unwrap_err();
    assert!(none.to_string().ends_with("entries there: none"), "{none}");
}

#[test]
fn reads_mangled_narrow_and_aggregate_parameters() {
    let f = entry_params(MIX, "_Z5scaleIfEvPT_PKS0_S0_x").unwrap();
    assert_eq!(
        shapes(&f),
        [(U64, 8, 8), (U64, 8, 8), (F32, 4, 4), (U64, 8, 8)]
    );
    let d = entry_params(MIX, "_Z5scaleIdEvPT_PKS0_S0_x").unwrap();
    assert_eq!(d[2].ty, F64);
    let agg = ParamType::Aggregate;
    let m = entry_params(MIX, "mixed").unwrap();
    assert_eq!(
        shapes(&m),
        [
            (U64, 8, 8),
            (U8, 1, 1),
            (U8, 1, 1),
            (U16, 2, 2),
            (U32, 4, 4),
            (U64, 8, 8),
            (agg, 2, 2),
            (agg, 16, 8),
            (agg, 16, 16),
        ]
    );
    assert_eq!(m[7].to_string(), ".align 8 .b8 mixed_param_7[16]");
    assert_eq!(m[7].ty.bits(), None);
    // `()` followed by `.maxntid`, and a __grid_constant__ struct.
    assert_eq!(entry_params(MIX, "no_params").unwrap(), []);
    let g = entry_params(MIX, "grid_const").unwrap();
    assert_eq!(shapes(&g), [(agg, 16, 16), (U64, 8, 8)]);
}

#[test]
fn reads_pointer_attributes_comments_and_odd_layouts() {
    let ptx = r#"
        .file 1 "a /* not a comment */ .entry fake(" // .entry fake2(
        /* .entry fake3( */
        .visible .entry k$1 (   // a comment after the paren
            .param .u64 .ptr .global .align 16 k_p0 ,
            .param .u64 .ptr .align 1 k_p1,   /* pointee alignment, not ours */
            .param .b32 k_p2
            , .param .s64 k_p3,
            .param .u32 k_arr[0x4],
            .param .align 16 .b8 k_s[32]
        )
        .maxntid 256, 1, 1
        { .reg .b64 %rd<3>; { .entry not_top_level; } }
        .entry bare
        { ret; }
    "#;
    let ps = entry_params(ptx, "k$1").unwrap();
    let s64 = ParamType::Int {
        signed: true,
        bits: 64,
    };
    let b32 = ParamType::Bits { bits: 32 };
    let agg = ParamType::Aggregate;
    assert_eq!(
        shapes(&ps),
        [
            (U64, 8, 8),
            (U64, 8, 8),
            (b32, 4, 4),
            (s64, 8, 8),
            (agg, 16, 4),
            (agg, 32, 16)
        ]
    );
    assert_eq!(ps[0].name, "k_p0");
    assert!(!ps[2].ty.holds_pointer() && ps[1].ty.holds_pointer());
    assert_eq!(entry_params(ptx, "bare").unwrap(), []);
    let e = entry_params(ptx, "fake").unwrap_err().to_string();
    assert!(e.ends_with("entries there: k$1, bare"), "{e}");
}

#[test]
fn malformed_lists_are_errors_with_a_line() {
    let e = entry_params(".entry k(\n .param .u32 a,\n .param .u128 b\n)", "k").unwrap_err();
    assert_eq!(
        e,
        ParamError::Syntax {
            entry: "k".into(),
            line: 4,
            message: "`.u128` is not a parameter type or attribute kwb knows".into()
        }
    );
    assert!(e
        .to_string()
        .starts_with("cannot read the parameters of `k` at PTX line 4"));
    let m = syntax_message(".entry k(.param .u32 a", "k");
    assert!(m.contains("not closed"), "{m}");
    let m = syntax_message(".entry k(.param .u32)", "k");
    assert!(m.contains("needs a type and a name"), "{m}");
    let m = syntax_message(".entry k(.param .align 3 .b8 s[4])", "k");
    assert!(m.contains("not a power of two"), "{m}");
    let m = syntax_message(".entry k(.param .u32 a b)", "k");
    assert!(m.contains("unexpected `b`"), "{m}");
    let m = syntax_message(".entry k(.reg .u32 a)", "k");
    assert!(m.contains("expected `.param"), "{m}");
    let m = syntax_message(".entry k(.param .global .u64 p)", "k");
    assert!(
        m.contains("unexpected `.u64`") || m.contains("`.global`"),
        "{m}"
    );
    let m = syntax_message(".entry k(.param .b8 s[])", "k");
    assert!(m.contains("expected a number"), "{m}");
}
