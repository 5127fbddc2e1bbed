//! Module-scope `.global` variables (a CUDA `__device__` variable) in the PTX emulator: each
//! is a buffer of the emulated memory, zeros or its initialiser at first, that keeps its value
//! from one launch to the next, as on the GPU.

use kwb::emu::{self, InitState, Launch, Memory, Module, Options};

/// Each thread takes a ticket from a `__device__` counter (an atomic add) and writes it, plus a
/// value from an initialised table, at its own index.
const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.global .align 4 .u32 counter;
.global .align 4 .b8 table[8] = {7, 0, 0, 0, 9, 0, 0, 0};

.visible .entry take(.param .u64 take_param_0)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [take_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    atom.global.add.u32 %r2, [counter], 1;
    ld.global.u32 %r3, [table+4];
    mul.lo.u32 %r4, %r3, 1000;
    add.s32 %r5, %r2, %r4;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
}
"#;

#[test]
fn a_device_variable_starts_at_its_initialiser_and_keeps_its_value_between_launches() {
    let module = Module::parse(PTX).unwrap_or_else(|e| panic!("{e:?}"));
    let mut mem = Memory::new();
    let out = mem.alloc("out", &[0u8; 4 * 32], InitState::Initialized);
    let launch = |mem: &mut Memory| {
        let params = [emu::ParamValue::Word(out)];
        let l = Launch {
            entry: "take",
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared: 0,
            params: &params,
        };
        let report = emu::run(&module, &l, mem, &Options::default()).unwrap();
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        let bytes = mem.read(out, 4 * 32);
        let mut tickets: Vec<u32> = bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()) - 9000)
            .collect();
        tickets.sort_unstable();
        tickets
    };
    // The counter starts at zero and `table[1]` at 9: tickets 0..32, each plus 9000.
    assert_eq!(launch(&mut mem), (0..32).collect::<Vec<u32>>());
    // The next launch sees the counter where the first left it.
    assert_eq!(launch(&mut mem), (32..64).collect::<Vec<u32>>());
}
