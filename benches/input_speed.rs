//! How fast the host draws a job's inputs, as a benchmark rather than a timed test:
//!
//!     cargo bench --bench input_speed
//!
//! draws 16Mi elements of each dtype by the default `randn` and by `uniform` on this machine's
//! cores (rayon), three times each, and prints the best wall time and the nanoseconds per
//! element per core. The GPU worker draws the same bits on the device (`run::devgen`); the
//! host's draw is what the reference and the CPU backends wait for on a fresh seed.

use kwb::run::host::inputs::generate;
use kwb::workspace::{DType, Init};
use std::time::Instant;

fn main() {
    const N: usize = 16 << 20;
    let cores = rayon::current_num_threads();
    let uniform = Init::Uniform {
        low: -1.0,
        high: 1.0,
    };
    for (name, init) in [("randn", Init::DEFAULT), ("uniform", uniform)] {
        for dtype in DType::ALL {
            let mut best = f64::MAX;
            for seed in 0..3 {
                let t = Instant::now();
                let b = generate(dtype, N, &init, &[N], seed).expect("draw");
                best = best.min(t.elapsed().as_secs_f64());
                assert_eq!(b.values.len(), N);
            }
            println!(
                "{name:>7} {dtype:>4} 16Mi: {:7.1} ms, {:5.1} ns per element per core ({cores} cores)",
                best * 1e3,
                best * 1e9 * cores as f64 / N as f64
            );
        }
    }
}
