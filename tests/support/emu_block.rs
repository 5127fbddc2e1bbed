//! Hand-written PTX in the emulator: one block over buffers given as bytes, and values whose
//! tensor-core products and sums are exact, so results compare exactly.

use kwb::emu::{self, EmuError, InitState, Launch, Memory, Module, Options, ParamValue, Report};

/// Runs `entry` of `ptx` on one block of `threads` threads, each buffer (initialised) a
/// parameter in order: every buffer's bytes afterwards and the emulator's report.
pub fn run_block(
    ptx: &str,
    entry: &str,
    threads: u32,
    bufs: &[Vec<u8>],
) -> Result<(Vec<Vec<u8>>, Report), EmuError> {
    run_block_with(ptx, entry, threads, bufs, ParamValue::words)
}

/// [`run_block`] with the parameters made by `params` from the buffers' addresses (a tensor
/// map names its buffer, a scalar sits beside the pointers).
pub fn run_block_with(
    ptx: &str,
    entry: &str,
    threads: u32,
    bufs: &[Vec<u8>],
    params: impl FnOnce(&[u64]) -> Vec<ParamValue>,
) -> Result<(Vec<Vec<u8>>, Report), EmuError> {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("{e:?}\n{ptx}"));
    let mut mem = Memory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.alloc(&format!("buf{i}"), b, InitState::Initialized))
        .collect();
    let values = params(&addrs);
    let launch = Launch {
        entry,
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared: 0,
        params: &values,
    };
    let report = emu::run(&module, &launch, &mut mem, &Options::default())?;
    let out = addrs
        .iter()
        .zip(bufs)
        .map(|(&a, b)| mem.read(a, b.len()))
        .collect();
    Ok((out, report))
}

/// Deterministic multiples of 1/8 in [-2, 2]: every product, and every sum of up to 32 of
/// them, is exact in f32.
pub fn eighths(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 33) as f64 / 8.0 - 2.0
        })
        .collect()
}
