//! A version's program on the device: its CUBIN loaded, each launch's function looked up and
//! its arguments packed once, so running the program (the thing that is checked and timed) is
//! nothing but `cuLaunchKernel` calls.

use super::device::{DevBuf, Module, Stream};
use crate::run::protocol::{ArgSpec, Program, TensorMapSpec};
use cudarc::driver::result::{self, DriverError as CuError};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::c_void;

/// One launch, ready to go. `values` holds each argument in an 8-byte slot and `maps` each
/// tensor map; `ptrs` points at them (boxed, so the addresses stay put when the struct moves).
struct Ready {
    func: sys::CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    _values: Box<[u64]>,
    _maps: Box<[sys::CUtensorMap]>,
    ptrs: Box<[*mut c_void]>,
}

/// A loaded program, borrowing the buffers its launches point at (`'buf`), so none of them
/// can be freed while a launch of it may still run.
pub struct Loaded<'buf> {
    _module: Module,
    launches: Vec<Ready>,
    _buffers: std::marker::PhantomData<&'buf DevBuf>,
}

/// Why a program could not be prepared (all recoverable: the context is fine).
#[derive(Debug, Clone, thiserror::Error)]
pub enum PrepareError {
    #[error("cannot load the CUBIN: {0}")]
    Load(String),
    #[error("launch {index} ({entry}): {message}")]
    Launch {
        index: usize,
        entry: String,
        message: String,
    },
}

impl<'buf> Loaded<'buf> {
    /// Loads `program`, binding buffer arguments to `buffers` by name.
    pub fn prepare(
        program: &Program,
        buffers: &HashMap<String, &'buf DevBuf>,
    ) -> Result<Loaded<'buf>, PrepareError> {
        let module = Module::load(&program.cubin.0)
            .map_err(|e| PrepareError::Load(crate::run::gpu::device::error_name(&e)))?;
        let mut launches = Vec::new();
        for (index, l) in program.launches.iter().enumerate() {
            let fail = |message: String| PrepareError::Launch {
                index,
                entry: l.entry.clone(),
                message,
            };
            let func = module.function(&l.entry).map_err(|e| {
                fail(format!(
                    "no such kernel in the module ({})",
                    crate::run::gpu::device::error_name(&e)
                ))
            })?;
            if l.dynamic_shared_bytes > 48 * 1024 {
                // Past 48 KB a kernel must opt in to more dynamic shared memory.
                // SAFETY: `func` comes from the module loaded above, which `Loaded` keeps.
                unsafe {
                    result::function::set_function_attribute(
                        func,
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        l.dynamic_shared_bytes as i32,
                    )
                }
                .map_err(|e| {
                    fail(format!(
                        "cannot allow {} bytes of dynamic shared memory: {}",
                        l.dynamic_shared_bytes,
                        crate::run::gpu::device::error_name(&e)
                    ))
                })?;
            }
            // A persistent kernel runs on as many CTAs as the GPU holds at once, and takes the
            // program count as its extra last argument.
            let grid = match l.programs {
                Some(_) => {
                    let threads = l.block.iter().product::<u32>() as i32;
                    let resident =
                        resident_ctas(func, threads, l.dynamic_shared_bytes).map_err(|e| {
                            fail(format!(
                                "cannot size the persistent grid: {}",
                                crate::run::gpu::device::error_name(&e)
                            ))
                        })?;
                    l.physical_grid(resident)
                }
                None => l.grid,
            };
            let args = l.kernel_args();
            let mut values = vec![0u64; args.len()].into_boxed_slice();
            let mut maps = Vec::new();
            let ptr = |name: &str| {
                (buffers.get(name).map(|b| b.ptr))
                    .ok_or_else(|| fail(format!("no buffer `{name}`")))
            };
            for (slot, a) in values.iter_mut().zip(&args) {
                match (a.word(ptr)?, a) {
                    (Some(w), _) => *slot = w,
                    (None, ArgSpec::TensorMap(m)) => {
                        let map = encode_tensor_map(m, ptr(&m.buffer)?).map_err(|e| {
                            fail(format!(
                                "cannot encode the tensor map of `{}`: {}",
                                m.buffer,
                                crate::run::gpu::device::error_name(&e)
                            ))
                        })?;
                        maps.push(map);
                    }
                    (None, _) => {}
                }
            }
            // Each slot is little-endian, so a 4-byte parameter reads its low half; a tensor
            // map's parameter points at its 128 bytes instead.
            let mut maps = maps.into_boxed_slice();
            let mut next_map = maps.iter_mut();
            let ptrs: Box<[*mut c_void]> = (values.iter_mut().zip(&args))
                .map(|(v, a)| match a {
                    ArgSpec::TensorMap(_) => next_map
                        .next()
                        .map_or(std::ptr::null_mut(), |m| m as *mut _ as *mut c_void),
                    _ => v as *mut u64 as *mut c_void,
                })
                .collect();
            launches.push(Ready {
                func,
                grid,
                block: l.block,
                shared: l.dynamic_shared_bytes,
                _values: values,
                _maps: maps,
                ptrs,
            });
        }
        Ok(Loaded {
            _module: module,
            launches,
            _buffers: std::marker::PhantomData,
        })
    }

    /// Enqueues every launch of the program on `s`.
    pub fn enqueue(&mut self, s: &Stream) -> Result<(), CuError> {
        self.enqueue_each(s, || {})
    }

    /// How many kernel launches one run of the program makes.
    pub fn launches(&self) -> usize {
        self.launches.len()
    }

    /// Enqueues every launch, calling `after` right after each one (to read the launch's
    /// CUPTI correlation id).
    pub fn enqueue_each(&mut self, s: &Stream, mut after: impl FnMut()) -> Result<(), CuError> {
        for l in &mut self.launches {
            // SAFETY: `func` belongs to `self._module`, loaded while `self` lives. `ptrs` has one
            // pointer per kernel parameter (the plan checked the arguments against the
            // kernel's PTX signature, and the worker runs the plan it is sent), each at an
            // 8-byte slot or a 128-byte tensor map boxed in `l`. The buffers the arguments
            // name are device addresses of `DevBuf`s that `self` borrows for `'buf`, so none is
            // freed while it lives (and freeing one after waits for the launch: cuMemFree is
            // synchronous); a stray access is a device fault the driver reports, not a host
            // memory access.
            unsafe {
                result::launch_kernel(
                    l.func,
                    (l.grid[0], l.grid[1], l.grid[2]),
                    (l.block[0], l.block[1], l.block[2]),
                    l.shared,
                    s.0,
                    &mut l.ptrs,
                )?;
            }
            after();
        }
        Ok(())
    }
}

/// A tiled `CUtensorMap` over the buffer at `ptr` (zero fill outside it, L2 promotion of 256
/// bytes); the element type is the unsigned integer of the element's size, since a copy only
/// moves bytes.
fn encode_tensor_map(m: &TensorMapSpec, ptr: u64) -> Result<sys::CUtensorMap, CuError> {
    use sys::CUtensorMapDataType as T;
    use sys::CUtensorMapSwizzle as S;
    let dtype = match m.elem_bytes {
        1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        4 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        _ => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
    };
    let swizzle = match m.swizzle {
        32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
        _ => S::CU_TENSOR_MAP_SWIZZLE_NONE,
    };
    // The driver reads `rank` dims, box dims and element strides and `rank - 1` byte strides;
    // a spec that holds fewer (it comes over the worker protocol) is refused here.
    let rank = m.dims.len();
    if !(1..=5).contains(&rank) || m.strides.len() + 1 != rank || m.box_dims.len() != rank {
        return Err(CuError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE));
    }
    let ones = vec![1u32; rank];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: `map` is a writable CUtensorMap; `dims`, `box_dims` and `ones` hold `rank`
    // entries and `strides` `rank - 1` (checked above), all the driver reads; `ptr` is only
    // recorded in the map, not dereferenced here.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            rank as u32,
            ptr as *mut c_void,
            m.dims.as_ptr(),
            m.strides.as_ptr(),
            m.box_dims.as_ptr(),
            ones.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
    }
    Ok(map)
}

/// CTAs of `func` the current device holds at once: its multiprocessors times the blocks of
/// `threads` threads and `shared` bytes of dynamic shared memory each one keeps resident.
fn resident_ctas(func: sys::CUfunction, threads: i32, shared: u32) -> Result<u32, CuError> {
    // SAFETY: `func` is a live function of a loaded module (the caller's).
    let per_sm = unsafe {
        result::occupancy::max_active_block_per_multiprocessor(func, threads, shared as usize)?
    };
    let mut dev: sys::CUdevice = 0;
    // SAFETY: an out-parameter; without a current context the driver returns an error.
    unsafe { sys::cuCtxGetDevice(&mut dev).result()? };
    // SAFETY: `dev` is the current context's device, just read.
    let sms = unsafe {
        result::device::get_attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?
    };
    Ok((per_sm.max(1) as u32).saturating_mul(sms.max(1) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_map_spec_whose_lengths_disagree_is_refused_before_the_driver() {
        let spec = |dims: Vec<u64>, strides: Vec<u64>, box_dims: Vec<u32>| TensorMapSpec {
            buffer: "a".into(),
            elem_bytes: 2,
            dims,
            strides,
            box_dims,
            swizzle: 0,
        };
        let invalid = sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE;
        // Each would have the driver read past a vector (no GPU is needed to refuse them).
        for bad in [
            spec(vec![64, 64], vec![], vec![16, 16]),
            spec(vec![64, 64], vec![128], vec![16]),
            spec(vec![], vec![], vec![]),
            spec(vec![2; 6], vec![4; 5], vec![1; 6]),
        ] {
            let e = encode_tensor_map(&bad, 0).expect_err("refused");
            assert_eq!(e.0, invalid, "{bad:?}");
        }
    }
}
