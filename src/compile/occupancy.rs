//! Theoretical occupancy: how many blocks of a kernel can be resident on one SM.
//!
//! kwb shows this next to a kernel's compile results so that its author sees what the
//! register, shared-memory and barrier usage costs without a GPU, a driver, or the
//! target architecture at hand. The answer is meant to equal what the CUDA driver's
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` returns with `flags = 0` and the
//! kernel's default carveout preference, so the rules below follow NVIDIA's documented
//! calculator (`cuda_occupancy.h`, CUDA 12/13) and the programming guide's
//! compute-capability tables. This is our own implementation of those rules.
//!
//! The limit of each factor is a number of blocks per SM; the occupancy is their minimum:
//! * warps: `max_warps_per_sm / ceil(threads / warp_size)`;
//! * registers: each warp gets `regs × warp_size` rounded up to 256 registers, carved from
//!   one of 4 sub-partitions of the register file (`registers_per_sm / 4` each); a block
//!   whose warps, rounded up to a multiple of 4, would exceed the per-block register file
//!   fits 0 times;
//! * shared memory: `static + dynamic + reserved`, rounded up to the allocation unit,
//!   divided into the carveout. With the default preference the driver's calculator
//!   assumes the largest carveout (`shared_per_sm`); at launch the driver may configure a
//!   smaller step that still fits as many blocks (see [`Occupancy::min_carveout_bytes`]);
//! * blocks: the per-SM block slots;
//! * barriers (cc 9.0 and later only): `barriers_per_sm / barriers_used`.
//!
//! Checked on an H200 (cc 9.0, driver 580) against the real driver query for 33 compiled
//! kernels (24..255 registers, 0..48 KB static shared memory, 0..16 barriers) × 33 block
//! sizes × 17 dynamic sizes: every case the driver accepts agrees. The other tables come
//! from the programming guide and the CUDA 13.0 header alone. Not modeled: thread-block
//! clusters, and the per-kernel "virtual resource" limit that header adds for cc 10+.

use serde::Serialize;

pub use crate::common::gpu_spec::{arch_spec, supported_archs, AllocationGranularity, ArchSpec};

const KIB: u32 = 1024;

/// A kernel's resource use and launch shape. `registers_per_thread == 0` means unknown and
/// is treated as no registers; `barriers` is the cubin's barrier count (`__syncthreads`
/// alone is 1; 0 means none and imposes no limit). Dynamic shared memory above 48 KB
/// assumes the kernel raised its `MAX_DYNAMIC_SHARED_SIZE_BYTES` attribute (without that
/// the driver answers 0 blocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelUsage {
    pub threads_per_block: u32,
    pub registers_per_thread: u32,
    pub static_shared_bytes: u32,
    pub dynamic_shared_bytes: u32,
    pub barriers: u32,
}

/// Builders for the TUI's what-ifs: each returns a copy with one input changed.
impl KernelUsage {
    pub const fn new(threads_per_block: u32) -> Self {
        Self {
            threads_per_block,
            registers_per_thread: 0,
            static_shared_bytes: 0,
            dynamic_shared_bytes: 0,
            barriers: 0,
        }
    }
    pub const fn with_block_size(mut self, threads: u32) -> Self {
        self.threads_per_block = threads;
        self
    }
    pub const fn with_registers(mut self, registers: u32) -> Self {
        self.registers_per_thread = registers;
        self
    }
    pub const fn with_static_shared(mut self, bytes: u32) -> Self {
        self.static_shared_bytes = bytes;
        self
    }
    pub const fn with_dynamic_shared(mut self, bytes: u32) -> Self {
        self.dynamic_shared_bytes = bytes;
        self
    }
    pub const fn with_barriers(mut self, barriers: u32) -> Self {
        self.barriers = barriers;
        self
    }
}

/// What limits occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Warps,
    Registers,
    SharedMemory,
    Blocks,
    Barriers,
}

/// Blocks per SM allowed by each factor alone. `None` (JSON `null`) means the factor
/// imposes no limit: no registers, no shared memory (possible only on 7.x, which reserve
/// none), or no barriers / an architecture without a barrier limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockLimits {
    pub warps: u32,
    pub registers: Option<u32>,
    pub shared_memory: Option<u32>,
    pub blocks: u32,
    pub barriers: Option<u32>,
}

/// The result for one kernel on one architecture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub sm: u32,
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    pub max_warps_per_sm: u32,
    /// `active_warps_per_sm / max_warps_per_sm`, in 0..=1.
    pub occupancy: f64,
    pub limits: BlockLimits,
    /// Every factor whose limit equals `active_blocks_per_sm` (several on a tie).
    pub limiters: Vec<Limiter>,
    /// The carveout the calculation assumed: the largest, as the driver's query does.
    pub shared_carveout_bytes: u32,
    /// The smallest carveout step that still holds `active_blocks_per_sm` blocks: any step
    /// from here up gives the same occupancy and leaves the rest to L1.
    pub min_carveout_bytes: u32,
    pub warps_per_block: u32,
    /// Registers allocated to one block: per-warp allocation × warps.
    pub registers_per_block: u32,
    /// Shared memory allocated to one block: static + dynamic + reserved, rounded up.
    pub shared_per_block: u32,
}

/// Invalid input. The driver answers 0 blocks for most of these; we say why instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OccupancyError {
    #[error("block size {threads} is out of range: it must be 1..={max} threads")]
    BlockSize { threads: u32, max: u32 },
    #[error("{registers} registers per thread exceeds the limit of {max}")]
    Registers { registers: u32, max: u32 },
    #[error("{bytes} bytes of shared memory per block exceeds the opt-in limit of {max}")]
    SharedMemory { bytes: u64, max: u32 },
    #[error("{barriers} barriers per block exceeds the hardware limit of {max}")]
    Barriers { barriers: u32, max: u32 },
    #[error("unknown architecture sm_{sm}; supported: {supported}")]
    UnknownArch { sm: u32, supported: String },
}

/// [`occupancy`] for an architecture given by number, e.g. `occupancy_for_sm(90, &usage)`.
pub fn occupancy_for_sm(sm: u32, usage: &KernelUsage) -> Result<Occupancy, OccupancyError> {
    let supported = || {
        supported_archs()
            .iter()
            .map(|s| format!("sm_{s}"))
            .collect::<Vec<_>>()
    };
    let arch = arch_spec(sm).ok_or_else(|| OccupancyError::UnknownArch {
        sm,
        supported: supported().join(", "),
    })?;
    occupancy(arch, usage)
}

/// The driver's theoretical occupancy for `usage` on `arch` (the module doc gives the rules).
/// A valid block that cannot fit at all (too many registers for its warps) gives `Ok` with
/// 0 active blocks, as the driver does.
pub fn occupancy(arch: &ArchSpec, usage: &KernelUsage) -> Result<Occupancy, OccupancyError> {
    type E = OccupancyError;
    let (threads, registers) = (usage.threads_per_block, usage.registers_per_thread);
    let max = arch.max_threads_per_block;
    if threads == 0 || threads > max {
        return Err(E::BlockSize { threads, max });
    }
    let max = arch.max_registers_per_thread;
    if registers > max {
        return Err(E::Registers { registers, max });
    }
    let bytes = u64::from(usage.static_shared_bytes) + u64::from(usage.dynamic_shared_bytes);
    let max = arch.max_shared_per_block_optin;
    if bytes > u64::from(max) {
        return Err(E::SharedMemory { bytes, max });
    }
    let (barriers, max) = (usage.barriers, arch.max_barriers_per_block);
    if barriers > max {
        return Err(E::Barriers { barriers, max });
    }

    let warps_per_block = threads.div_ceil(arch.warp_size);
    let warps = arch.max_warps_per_sm / warps_per_block;

    let regs_per_warp =
        (registers * arch.warp_size).next_multiple_of(arch.register_allocation_unit);
    let parts = arch.register_sub_partitions;
    let registers_limit = (regs_per_warp > 0).then(|| {
        // The hardware's per-block check counts warps as if spread over every sub-partition.
        if regs_per_warp * warps_per_block.next_multiple_of(parts) > arch.max_registers_per_block {
            0
        } else {
            arch.registers_per_sm / parts / regs_per_warp * parts / warps_per_block
        }
    });

    // Fits in u32: `bytes` is at most the opt-in limit.
    let shared_per_block = (bytes as u32 + arch.reserved_shared_per_block)
        .next_multiple_of(arch.shared_allocation_unit);
    let carveout = arch.shared_per_sm;
    let shared_limit = (shared_per_block > 0).then(|| carveout / shared_per_block);

    let barriers_limit = match arch.barriers_per_sm {
        Some(available) if barriers > 0 => Some(available / barriers),
        _ => None,
    };

    let limits = BlockLimits {
        warps,
        registers: registers_limit,
        shared_memory: shared_limit,
        blocks: arch.max_blocks_per_sm,
        barriers: barriers_limit,
    };
    let factors = [
        (Limiter::Warps, Some(limits.warps)),
        (Limiter::Registers, limits.registers),
        (Limiter::SharedMemory, limits.shared_memory),
        (Limiter::Blocks, Some(limits.blocks)),
        (Limiter::Barriers, limits.barriers),
    ];
    let active = factors
        .iter()
        .filter_map(|&(_, limit)| limit)
        .min()
        .unwrap_or(0);
    let limiters = factors
        .iter()
        .filter(|&&(_, limit)| limit == Some(active))
        .map(|&(f, _)| f)
        .collect();
    let needed = active * shared_per_block;
    let min_carveout_bytes = arch
        .shared_carveouts_kib
        .iter()
        .map(|kib| kib * KIB)
        .find(|&c| c >= needed)
        .unwrap_or(carveout);
    let active_warps = active * warps_per_block;
    Ok(Occupancy {
        sm: arch.sm,
        active_blocks_per_sm: active,
        active_warps_per_sm: active_warps,
        max_warps_per_sm: arch.max_warps_per_sm,
        occupancy: f64::from(active_warps) / f64::from(arch.max_warps_per_sm),
        limits,
        limiters,
        shared_carveout_bytes: carveout,
        min_carveout_bytes,
        warps_per_block,
        registers_per_block: regs_per_warp * warps_per_block,
        shared_per_block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Limiter::*;

    fn usage(threads: u32, regs: u32) -> KernelUsage {
        KernelUsage::new(threads).with_registers(regs)
    }
    fn run(sm: u32, usage: KernelUsage) -> Occupancy {
        occupancy_for_sm(sm, &usage).unwrap()
    }
    fn blocks(sm: u32, usage: KernelUsage) -> u32 {
        run(sm, usage).active_blocks_per_sm
    }
    /// Asserts active blocks, active warps and the binding limiters.
    fn expect(o: &Occupancy, blocks: u32, warps: u32, limiters: &[Limiter]) {
        assert_eq!(o.active_blocks_per_sm, blocks, "{o:?}");
        assert_eq!(o.active_warps_per_sm, warps, "{o:?}");
        assert_eq!(o.limiters, limiters, "{o:?}");
    }

    #[test]
    fn sm90_warp_limited() {
        let o = run(90, usage(256, 16));
        expect(&o, 8, 64, &[Warps]);
        assert_eq!(o.occupancy, 1.0);
        assert_eq!(o.limits.registers, Some(16));
        assert_eq!(o.limits.blocks, 32);
        assert_eq!(o.registers_per_block, 4096);
        assert_eq!(o.shared_per_block, 1024); // the reserved 1 KB alone
    }

    #[test]
    fn sm90_register_limited() {
        let o = run(90, usage(1024, 64)); // 2048 per warp x 32 warps = the whole file
        expect(&o, 1, 32, &[Registers]);
        assert_eq!(o.occupancy, 0.5);
        assert_eq!(o.registers_per_block, 65536);
        // One register more and the block cannot fit at all; the driver also says 0.
        expect(&run(90, usage(1024, 65)), 0, 0, &[Registers]);
    }

    #[test]
    fn register_granularity_and_sub_partitions() {
        let o = run(90, usage(32, 33)); // 33 * 32 = 1056 -> 1280 per warp
        assert_eq!(o.registers_per_block, 1280);
        // 16384 / 1280 = 12 warps per sub-partition -> 48 warps, not 65536 / 1280 = 51.
        assert_eq!(o.limits.registers, Some(48));
        // 255 registers: 8192 per warp, 2 warps per sub-partition, 8 per SM.
        assert_eq!(blocks(90, usage(33, 255)), 4);
        assert_eq!(blocks(90, usage(256, 255)), 1);
        assert_eq!(blocks(90, usage(288, 255)), 0);
        assert_eq!(run(90, usage(64, 0)).limits.registers, None); // 0 = unknown: no limit
    }

    #[test]
    fn shared_memory_limited() {
        let with_48k = usage(128, 32).with_dynamic_shared(48 * KIB);
        let o = run(90, with_48k);
        expect(&o, 4, 16, &[SharedMemory]); // 228 KB / 49 KB
        assert_eq!(o.shared_per_block, 49 * KIB);
        assert_eq!(o.shared_carveout_bytes, 228 * KIB); // the query assumes the largest
        assert_eq!(o.min_carveout_bytes, 196 * KIB); // 4 x 49 KB already fit in 196 KB
        let o = run(80, with_48k);
        expect(&o, 3, 12, &[SharedMemory]); // 164 KB / 49 KB
        assert_eq!(o.shared_carveout_bytes, 164 * KIB);
        assert_eq!(blocks(86, with_48k), 2); // 100 KB / 49 KB
                                             // 30000 static + 1 KB reserved -> 31104 in 128-byte units; 233472 / 31104 = 7.
        let o = run(90, usage(64, 64).with_static_shared(30000).with_barriers(4));
        assert_eq!(o.shared_per_block, 31104);
        expect(&o, 7, 14, &[SharedMemory]);
        assert_eq!(
            run(90, usage(1024, 32).with_dynamic_shared(4 * KIB)).min_carveout_bytes,
            16 * KIB
        );
        // 7.x reserves nothing and rounds to 256 bytes; no shared memory, no limit.
        assert_eq!(
            run(70, usage(32, 16).with_static_shared(1)).shared_per_block,
            256
        );
        assert_eq!(run(75, usage(32, 16)).limits.shared_memory, None);
    }

    #[test]
    fn block_slot_limited() {
        for (sm, slots) in [(70, 32), (75, 16), (80, 32), (86, 16), (89, 24), (90, 32)] {
            expect(&run(sm, usage(32, 16)), slots, slots, &[Blocks]);
        }
    }

    #[test]
    fn barrier_limit_from_sm90() {
        // cc 9.0: 2 barriers per block slot = 64 per SM; blocks = 64 / barriers used.
        for (barriers, expected) in [(1, 32), (2, 32), (3, 21), (5, 12), (11, 5), (16, 4)] {
            assert_eq!(blocks(90, usage(32, 16).with_barriers(barriers)), expected);
        }
        let o = run(90, usage(32, 16).with_barriers(16));
        expect(&o, 4, 4, &[Barriers]);
        assert_eq!(o.limits.barriers, Some(4));
        expect(
            &run(90, usage(32, 16).with_barriers(2)),
            32,
            32,
            &[Blocks, Barriers],
        );
        // No barrier limit before cc 9.0.
        let o = run(80, usage(32, 16).with_barriers(16));
        expect(&o, 32, 32, &[Blocks]);
        assert_eq!(o.limits.barriers, None);
    }

    #[test]
    fn errors() {
        let check = |sm, usage: KernelUsage, expected: OccupancyError, text: [&str; 2]| {
            let error = occupancy_for_sm(sm, &usage).unwrap_err();
            let message = error.to_string();
            assert_eq!(error, expected);
            assert!(text.iter().all(|t| message.contains(t)), "{message}");
        };
        let too_many = |threads| OccupancyError::BlockSize { threads, max: 1024 };
        check(90, KernelUsage::new(0), too_many(0), ["0", "1024"]);
        check(90, KernelUsage::new(2048), too_many(2048), ["2048", "1024"]);
        let regs = OccupancyError::Registers {
            registers: 256,
            max: 255,
        };
        check(90, usage(32, 256), regs, ["256", "255"]);
        let big = usage(32, 16)
            .with_static_shared(KIB)
            .with_dynamic_shared(227 * KIB);
        let shared = OccupancyError::SharedMemory {
            bytes: 233472,
            max: 232448,
        };
        check(90, big, shared, ["233472", "232448"]);
        assert_eq!(blocks(90, big.with_static_shared(0)), 1); // exactly the opt-in limit
        let bars = OccupancyError::Barriers {
            barriers: 17,
            max: 16,
        };
        check(90, usage(32, 16).with_barriers(17), bars, ["17", "16"]);
        let supported = "sm_70, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_120";
        let unknown = OccupancyError::UnknownArch {
            sm: 61,
            supported: supported.into(),
        };
        check(61, usage(32, 16), unknown, ["sm_61", "sm_90"]);
    }

    #[test]
    fn sweep_invariants() {
        for sm in supported_archs() {
            let arch = arch_spec(sm).unwrap();
            assert_eq!(
                arch.shared_per_sm,
                arch.shared_carveouts_kib.last().unwrap() * KIB
            );
            for threads in (32..=1024).step_by(32) {
                for regs in 16..=255 {
                    let o = occupancy(arch, &usage(threads, regs)).unwrap();
                    assert!(o.active_warps_per_sm <= o.max_warps_per_sm);
                    assert_eq!(
                        o.active_blocks_per_sm * o.warps_per_block,
                        o.active_warps_per_sm
                    );
                    assert!((0.0..=1.0).contains(&o.occupancy) && !o.limiters.is_empty());
                }
            }
        }
    }
}
