//! The GPU architectures kwb knows: each one's limits (registers, shared memory, warps, block
//! slots, barriers), from NVIDIA's programming guide and occupancy calculator. Shared by the
//! compiler (occupancy, launch checks), the workspace (its `arch`) and the run layer, so it
//! sits below all of them.

use serde::Serialize;

const KIB: u32 = 1024;

/// What registers are allocated to: on every architecture here, whole warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocationGranularity {
    Warp,
}

/// Per-architecture limits. Sizes are in bytes unless the name says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchSpec {
    /// Compute capability as `major * 10 + minor` (90 for sm_90).
    pub sm: u32,
    pub name: &'static str,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub registers_per_sm: u32,
    pub max_registers_per_block: u32,
    /// The ISA limit (255); a kernel reported with more is invalid input.
    pub max_registers_per_thread: u32,
    /// Registers per warp are rounded up to a multiple of this.
    pub register_allocation_unit: u32,
    pub register_allocation_granularity: AllocationGranularity,
    /// The register file is split evenly between this many warp schedulers.
    pub register_sub_partitions: u32,
    /// Largest shared-memory carveout per SM (the last entry of `shared_carveouts_kib`).
    pub shared_per_sm: u32,
    /// Largest static + dynamic shared memory one block may use after opting in.
    pub max_shared_per_block_optin: u32,
    pub shared_allocation_unit: u32,
    /// Shared memory the driver reserves in every block (1 KB from cc 8.0, none on 7.x).
    pub reserved_shared_per_block: u32,
    /// The shared-memory carveouts, in KiB, ascending, that the driver can configure.
    pub shared_carveouts_kib: &'static [u32],
    /// Named barriers (`bar.sync` ids) one block can use.
    pub max_barriers_per_block: u32,
    /// Block barriers per SM where the driver limits blocks by them (cc 9.0 and later:
    /// 2 per block slot, 1 per slot on cc 12.x); `None` where it does not.
    pub barriers_per_sm: Option<u32>,
}

const fn arch(
    sm: u32,
    name: &'static str,
    max_warps_per_sm: u32,
    max_blocks_per_sm: u32,
    shared_carveouts_kib: &'static [u32],
    barriers_per_slot: u32,
) -> ArchSpec {
    let shared_per_sm = shared_carveouts_kib[shared_carveouts_kib.len() - 1] * KIB;
    let volta_turing = sm < 80;
    let reserved = if volta_turing { 0 } else { KIB };
    ArchSpec {
        sm,
        name,
        warp_size: 32,
        max_threads_per_block: 1024,
        max_warps_per_sm,
        max_blocks_per_sm,
        registers_per_sm: 64 * KIB,
        max_registers_per_block: 64 * KIB,
        max_registers_per_thread: 255,
        register_allocation_unit: 256,
        register_allocation_granularity: AllocationGranularity::Warp,
        register_sub_partitions: 4,
        shared_per_sm,
        max_shared_per_block_optin: shared_per_sm - reserved,
        shared_allocation_unit: if volta_turing { 256 } else { 128 },
        reserved_shared_per_block: reserved,
        shared_carveouts_kib,
        max_barriers_per_block: 16,
        barriers_per_sm: if barriers_per_slot > 0 {
            Some(barriers_per_slot * max_blocks_per_sm)
        } else {
            None
        },
    }
}

const VOLTA: &[u32] = &[0, 8, 16, 32, 64, 96];
const TURING: &[u32] = &[32, 64];
const GA100: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
const GA10X: &[u32] = &[0, 8, 16, 32, 64, 100];
const HOPPER: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

static ARCHS: [ArchSpec; 9] = [
    arch(70, "Volta", 64, 32, VOLTA, 0),
    arch(75, "Turing", 32, 16, TURING, 0),
    arch(80, "Ampere GA100", 64, 32, GA100, 0),
    arch(86, "Ampere GA10x", 48, 16, GA10X, 0),
    arch(87, "Ampere Orin", 48, 16, GA100, 0),
    arch(89, "Ada Lovelace", 48, 24, GA10X, 0),
    arch(90, "Hopper", 64, 32, HOPPER, 2),
    arch(100, "Blackwell GB100", 64, 32, HOPPER, 2),
    arch(120, "Blackwell GB20x", 48, 24, GA10X, 1),
];

/// The table entry for `sm` (e.g. 90), or `None` for an architecture we have no table for.
pub fn arch_spec(sm: u32) -> Option<&'static ArchSpec> {
    ARCHS.iter().find(|a| a.sm == sm)
}

/// Every architecture with a table, ascending.
pub fn supported_archs() -> Vec<u32> {
    ARCHS.iter().map(|a| a.sm).collect()
}
