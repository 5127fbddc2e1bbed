//! Reads per-kernel resource facts straight out of a CUBIN, so kwb does not have to trust (or
//! even receive) ptxas' `-v` log: registers, stack frame, barriers, launch bounds, parameter
//! bank and static shared memory all live in the ELF's `.nv.info*` attribute records and
//! `.nv.shared.<kernel>` sections. Malformed input yields a [`CubinError`], never a panic.
//!
//! `.nv.info` records are 4-byte aligned: `u8 format, u8 attribute`, then for `EIFMT_NVAL` two
//! unused bytes, for `EIFMT_BVAL` one value byte and one pad byte, for `EIFMT_HVAL` a `u16`
//! value, and for `EIFMT_SVAL` a `u16` size followed by that many payload bytes. Records in
//! the global `.nv.info` (and "indexed" ones anywhere) start with a `u32` symbol index.
//!
//! Shared memory: from sm_90 on, ptxas puts the driver's 1 KiB reserved region at the start of
//! every `.nv.shared.<kernel>` section it emits, and marks such modules with
//! `.nv.reservedSmem.*` symbols / a `.nv.shared.reserved.0` section (sm_100+ also give the
//! region's size as the value of `.nv.reservedSmem.cap`). sm_80/sm_89 CUBINs carry neither
//! marker nor region, and relocatable (`-rdc=true`) objects leave it to the linker. We subtract
//! the region so that `static_shared` equals ptxas' "N bytes smem".

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::Endianness;
use serde::Serialize;
use std::collections::HashMap;

const EM_CUDA: u16 = 190;
/// `st_other` bit ptxas sets on kernel (entry) function symbols.
const STO_CUDA_ENTRY: u8 = 0x10;
/// Size of the reserved shared region when the module marks one but does not give its cap.
const DEFAULT_RESERVED_SMEM: u32 = 1024;

const EIFMT_NVAL: u8 = 1;
const EIFMT_BVAL: u8 = 2;
const EIFMT_HVAL: u8 = 3;
const EIFMT_SVAL: u8 = 4;

/// EIATTR ids used here (as seen in real sm_80..sm_100 CUBINs from NVRTC 13.0).
pub mod eiattr {
    pub const MAX_THREADS: u8 = 0x05;
    pub const PARAM_CBANK: u8 = 0x0a;
    pub const REQNTID: u8 = 0x10;
    pub const FRAME_SIZE: u8 = 0x11;
    pub const MIN_STACK_SIZE: u8 = 0x12;
    pub const KPARAM_INFO: u8 = 0x17;
    pub const CBANK_PARAM_SIZE: u8 = 0x19;
    pub const MAXREG_COUNT: u8 = 0x1b;
    pub const MAX_STACK_SIZE: u8 = 0x23;
    pub const REGCOUNT: u8 = 0x2f;
    pub const CUDA_API_VERSION: u8 = 0x37;
    pub const NUM_BARRIERS: u8 = 0x4c;
}

/// What the CUBIN says about one kernel (entry function).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CubinKernel {
    pub name: String,
    /// SM version from the ELF header, e.g. 90.
    pub sm: Option<u32>,
    pub registers: u32,
    /// Stack frame in bytes (EIATTR_FRAME_SIZE).
    pub frame_size: u32,
    pub min_stack_size: Option<u32>,
    pub max_stack_size: Option<u32>,
    pub barriers: u32,
    /// Threads per block allowed by `__launch_bounds__` (product of EIATTR_MAX_THREADS dims).
    pub max_threads: Option<u32>,
    /// Required block shape (`.reqntid`).
    pub req_ntid: Option<[u32; 3]>,
    /// Register cap ptxas honoured (EIATTR_MAXREG_COUNT; 255 when unconstrained).
    pub max_reg_count: Option<u32>,
    /// Bytes of kernel parameters in constant bank 0.
    pub param_bytes: u32,
    pub param_count: u32,
    /// Where the parameters start in constant bank 0 (0x210 on sm_90, 0x160 on sm_80).
    pub param_cbank_offset: Option<u32>,
    /// Static `__shared__` bytes, reserved region excluded.
    pub static_shared: u32,
    /// Bytes of the `.nv.shared.<kernel>` section that were the driver-reserved region.
    pub reserved_shared: u32,
    /// Size of constant bank 0 (ptxas' `cmem[0]`).
    pub const0_bytes: u32,
    /// Size of the kernel's SASS in bytes.
    pub code_bytes: u32,
    pub cuda_api_version: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CubinError {
    #[error("not an ELF file")]
    NotElf,
    #[error("only 64-bit ELF CUBINs are supported")]
    Not64Bit,
    #[error("ELF machine {0} is not EM_CUDA (190)")]
    NotCuda(u16),
    #[error("malformed ELF: {0}")]
    Elf(#[from] object::read::Error),
    #[error("truncated record in {section} at byte {offset}")]
    TruncatedRecord { section: String, offset: usize },
    #[error("unknown record format {format} in {section} at byte {offset}")]
    UnknownFormat {
        section: String,
        offset: usize,
        format: u8,
    },
}

/// A `.nv.info` record's payload (`EIFMT_NVAL` records read as `Value(0)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payload<'a> {
    Value(u16),
    Bytes(&'a [u8]),
}

fn parse_records<'a>(section: &str, data: &'a [u8]) -> Result<Vec<(u8, Payload<'a>)>, CubinError> {
    let truncated = |offset| CubinError::TruncatedRecord {
        section: section.to_string(),
        offset,
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let head = data.get(pos..pos + 4).ok_or_else(|| truncated(pos))?;
        let (format, attr, half) = (head[0], head[1], u16::from_le_bytes([head[2], head[3]]));
        let payload = match format {
            EIFMT_NVAL => Payload::Value(0),
            EIFMT_BVAL => Payload::Value(u16::from(head[2])),
            EIFMT_HVAL => Payload::Value(half),
            EIFMT_SVAL => {
                let start = pos + 4;
                let bytes = data
                    .get(start..start + usize::from(half))
                    .ok_or_else(|| truncated(pos))?;
                out.push((attr, Payload::Bytes(bytes)));
                pos = (start + usize::from(half)).next_multiple_of(4);
                continue;
            }
            0 if data[pos..].iter().all(|&b| b == 0) => break, // trailing padding
            _ => {
                let section = section.to_string();
                return Err(CubinError::UnknownFormat {
                    section,
                    offset: pos,
                    format,
                });
            }
        };
        out.push((attr, payload));
        pos += 4;
    }
    Ok(out)
}

fn word(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(i * 4..i * 4 + 4)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Parses a CUBIN and returns its kernels in symbol-table order.
pub fn read_cubin(bytes: &[u8]) -> Result<Vec<CubinKernel>, CubinError> {
    if bytes.get(..4) != Some(&elf::ELFMAG[..]) {
        return Err(CubinError::NotElf);
    }
    if bytes.get(4).is_some_and(|&c| c != elf::ELFCLASS64) {
        return Err(CubinError::Not64Bit);
    }
    // object reads headers in place and insists on their natural alignment.
    let copy;
    let data: &[u8] = if bytes.as_ptr().align_offset(8) == 0 {
        bytes
    } else {
        let mut buf = vec![0u8; bytes.len() + 8];
        let off = buf.as_ptr().align_offset(8).min(8);
        buf[off..off + bytes.len()].copy_from_slice(bytes);
        copy = buf;
        &copy[off..off + bytes.len()]
    };
    let header = elf::FileHeader64::<Endianness>::parse(data)?;
    let endian = header.endian()?;
    if header.e_machine(endian) != EM_CUDA {
        return Err(CubinError::NotCuda(header.e_machine(endian)));
    }
    // ELF ABI 8 (CUDA 12.8+) moved the SM number from bits 0..8 of e_flags to bits 8..16.
    let shift = 8 * u32::from(header.e_ident().abi_version >= 8);
    let sm = Some((header.e_flags(endian) >> shift) & 0xff).filter(|&sm| sm != 0);
    let sections = header.sections(endian, data)?;
    let symbols = sections.symbols(endian, data, elf::SHT_SYMTAB)?;

    let mut by_name = HashMap::new();
    for (index, section) in sections.enumerate() {
        let name = String::from_utf8_lossy(sections.section_name(endian, section)?).into_owned();
        by_name.insert(name, (index, section));
    }
    let size_of = |name: String| by_name.get(&name).map(|(_, s)| s.sh_size(endian));
    let to_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);

    // Reserved shared memory: the stated cap, else the 1 KiB default when the module marks it.
    // Relocatable (-rdc) objects leave the region to the linker: nothing to subtract there.
    let mut cap = None;
    let mut marked = by_name.contains_key(".nv.shared.reserved.0");
    for sym in symbols.iter() {
        let name = symbols.symbol_name(endian, sym)?;
        marked |= name.starts_with(b".nv.reservedSmem");
        if name == b".nv.reservedSmem.cap" {
            cap = Some(to_u32(sym.st_value(endian))).filter(|&c| c != 0);
        }
    }
    let reserved = match header.e_type(endian) {
        elf::ET_REL => 0,
        _ => cap.unwrap_or(if marked { DEFAULT_RESERVED_SMEM } else { 0 }),
    };

    // Kernels: function symbols flagged as entries and defined in their own `.text.<name>`.
    let mut kernels: Vec<CubinKernel> = Vec::new();
    let mut by_symbol = HashMap::new();
    for (index, sym) in symbols.enumerate() {
        if sym.st_type() != elf::STT_FUNC || sym.st_other() & STO_CUDA_ENTRY == 0 {
            continue;
        }
        let section = symbols.symbol_section(endian, sym, index)?;
        let name = String::from_utf8_lossy(symbols.symbol_name(endian, sym)?).into_owned();
        let text = by_name.get(&format!(".text.{name}"));
        let Some(&(_, text)) = text.filter(|(i, _)| Some(*i) == section) else {
            continue;
        };
        let shared = size_of(format!(".nv.shared.{name}")).map_or(0, to_u32);
        by_symbol.insert(index.0, kernels.len());
        kernels.push(CubinKernel {
            sm,
            // Older CUBINs kept the register count in the top byte of the text's sh_info.
            registers: text.sh_info(endian) >> 24,
            static_shared: shared.saturating_sub(reserved),
            reserved_shared: shared.min(reserved),
            const0_bytes: size_of(format!(".nv.constant0.{name}")).map_or(0, to_u32),
            code_bytes: to_u32(text.sh_size(endian)),
            name,
            ..CubinKernel::default()
        });
    }

    for section in sections.iter() {
        let name = String::from_utf8_lossy(sections.section_name(endian, section)?);
        if section.sh_type(endian) != elf::SHT_LOPROC || !name.starts_with(".nv.info") {
            continue;
        }
        let own = name
            .strip_prefix(".nv.info.")
            .and_then(|k| kernels.iter().position(|c| c.name == k));
        for (attr, payload) in parse_records(&name, section.data(endian, data)?)? {
            apply(&mut kernels, &by_symbol, own, attr, payload);
        }
    }
    Ok(kernels)
}

fn apply(
    kernels: &mut [CubinKernel],
    by_symbol: &HashMap<usize, usize>,
    own: Option<usize>,
    attr: u8,
    payload: Payload<'_>,
) {
    use eiattr::*;
    let (value, bytes) = match payload {
        Payload::Value(v) => (Some(u32::from(v)), &[][..]),
        Payload::Bytes(b) => (word(b, 0), b),
    };
    // Indexed attributes name their kernel by symbol index, wherever they appear.
    if [REGCOUNT, FRAME_SIZE, MIN_STACK_SIZE, MAX_STACK_SIZE].contains(&attr) {
        let target = value.and_then(|s| by_symbol.get(&(s as usize)));
        let (Some(&k), Some(v)) = (target, word(bytes, 1)) else {
            return;
        };
        let kernel = &mut kernels[k];
        match attr {
            REGCOUNT => kernel.registers = v,
            FRAME_SIZE => kernel.frame_size = v,
            MIN_STACK_SIZE => kernel.min_stack_size = Some(v),
            _ => kernel.max_stack_size = Some(v),
        }
        return;
    }
    let Some(kernel) = own.and_then(|k| kernels.get_mut(k)) else {
        return;
    };
    let dims = || [0, 1, 2].map(|i| word(bytes, i).unwrap_or(1));
    match attr {
        MAX_THREADS if !bytes.is_empty() => {
            let product: u128 = dims().iter().map(|&d| u128::from(d)).product();
            kernel.max_threads = Some(u32::try_from(product).unwrap_or(u32::MAX));
        }
        REQNTID if !bytes.is_empty() => kernel.req_ntid = Some(dims()),
        PARAM_CBANK => {
            if let Some(packed) = word(bytes, 1) {
                kernel.param_cbank_offset = Some(packed & 0xffff);
                if kernel.param_bytes == 0 {
                    kernel.param_bytes = packed >> 16;
                }
            }
        }
        CBANK_PARAM_SIZE => kernel.param_bytes = value.unwrap_or(kernel.param_bytes),
        KPARAM_INFO => kernel.param_count = kernel.param_count.saturating_add(1),
        MAXREG_COUNT => kernel.max_reg_count = value,
        NUM_BARRIERS => kernel.barriers = value.unwrap_or(0),
        CUDA_API_VERSION => kernel.cuda_api_version = value,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM90: &[u8] = include_bytes!("../../tests/fixtures/compiler-output/smem_sm_90.cubin");
    const SM80: &[u8] = include_bytes!("../../tests/fixtures/compiler-output/smem_sm_80.cubin");
    const STACK: &[u8] = include_bytes!("../../tests/fixtures/compiler-output/stack_sm_90.cubin");
    const SM100: &[u8] = include_bytes!("../../tests/fixtures/compiler-output/tile_sm_100.cubin");
    const RDC: &[u8] = include_bytes!("../../tests/fixtures/compiler-output/rdc_sm_90.cubin");

    /// `name sm r<regs> b<barriers> s<static>+<reserved> f<frame> t<max threads>
    /// p<params>/<bytes>@<offset> c<cmem0> m<max regs>`, one line per kernel, sorted.
    #[rustfmt::skip]
    fn brief(bytes: &[u8]) -> Vec<String> {
        let mut lines: Vec<String> = read_cubin(bytes).unwrap().iter().map(|k| {
            let o = |v: Option<u32>| v.unwrap_or(0);
            let (sm, threads) = (o(k.sm), o(k.max_threads));
            let (offset, maxreg) = (o(k.param_cbank_offset), o(k.max_reg_count));
            format!("{} sm{sm} r{} b{} s{}+{} f{} t{threads} p{}/{}@{offset:#x} c{} m{maxreg}",
                k.name, k.registers, k.barriers, k.static_shared, k.reserved_shared, k.frame_size,
                k.param_count, k.param_bytes, k.const0_bytes)
        }).collect();
        lines.sort();
        lines
    }

    #[test]
    fn reads_real_cubins() {
        let sm90 = [
            "_Z5scaleIfLi32EEvPT_S0_ sm90 r10 b1 s128+1024 f0 t0 p2/12@0x210 c540 m255",
            "add_f32 sm90 r12 b0 s0+0 f0 t0 p4/28@0x210 c556 m255",
            "named_bar sm90 r14 b3 s512+1024 f0 t0 p1/8@0x210 c536 m255",
            "tile_sum sm90 r13 b1 s1056+1024 f0 t128 p2/16@0x210 c544 m255",
        ];
        assert_eq!(brief(SM90), sm90);
        // sm_80: no reserved region in the section; parameters start at 0x160.
        let sm80 = [
            "_Z5scaleIfLi32EEvPT_S0_ sm80 r10 b1 s128+0 f0 t0 p2/12@0x160 c364 m255",
            "add_f32 sm80 r12 b0 s0+0 f0 t0 p4/28@0x160 c380 m255",
            "named_bar sm80 r12 b3 s512+0 f0 t0 p1/8@0x160 c360 m255",
            "tile_sum sm80 r11 b1 s1056+0 f0 t128 p2/16@0x160 c368 m255",
        ];
        assert_eq!(brief(SM80), sm80);
        // `spiller` is `__maxnreg__(24)`.
        let stack = [
            "spiller sm90 r24 b0 s0+0 f64 t0 p3/20@0x210 c548 m24",
            "stacky sm90 r12 b0 s0+0 f96 t0 p3/20@0x210 c548 m255",
        ];
        assert_eq!(brief(STACK), stack);
        // sm_100 states the reserved region's size in `.nv.reservedSmem.cap`.
        let sm100 = ["tile_sum sm100 r12 b1 s1056+1024 f0 t128 p2/16@0x380 c912 m255"];
        assert_eq!(brief(SM100), sm100);
        // Relocatable: no reserved region yet, and the device function `helper` is no kernel.
        assert_eq!(
            brief(RDC),
            ["caller sm90 r24 b1 s16+0 f0 t0 p2/12@0x210 c540 m255"]
        );
        let k = &read_cubin(STACK).unwrap()[1];
        let extra = (k.min_stack_size, k.code_bytes, k.cuda_api_version);
        assert_eq!(extra, (Some(96), 768, Some(130)));
    }

    #[test]
    fn unaligned_input_reads_the_same() {
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(SM90);
        assert_eq!(read_cubin(&shifted[1..]), read_cubin(SM90));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert_eq!(read_cubin(b""), Err(CubinError::NotElf));
        assert_eq!(read_cubin(b"garbage, not ELF"), Err(CubinError::NotElf));
        assert!(read_cubin(&SM90[..40]).is_err());
        let mut not_cuda = SM90.to_vec();
        not_cuda[18] = 62; // EM_X86_64
        assert_eq!(read_cubin(&not_cuda), Err(CubinError::NotCuda(62)));
        // Cut and flip bytes all over the file: any result is fine as long as nothing panics.
        for i in (0..SM90.len()).step_by(13) {
            let mut bad = SM90.to_vec();
            bad[i] ^= 0xa5;
            let _ = (read_cubin(&bad), read_cubin(&SM90[..i]));
        }
        use CubinError::{TruncatedRecord, UnknownFormat};
        let truncated = parse_records("t", &[4, 0x2f, 9, 0, 1]);
        assert!(matches!(truncated, Err(TruncatedRecord { offset: 0, .. })));
        let unknown = parse_records("t", &[9, 1, 0, 0]);
        assert!(matches!(unknown, Err(UnknownFormat { format: 9, .. })));
        let padded = parse_records("t", &[3, 0x19, 16, 0, 0, 0, 0, 0]);
        assert_eq!(padded.unwrap(), [(0x19, Payload::Value(16))]);
    }
}
