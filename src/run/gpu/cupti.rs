//! Kernel times from CUPTI's activity records: the start and end timestamps the GPU itself
//! writes for every kernel, the clock Nsight reads. CUDA events around a launch also count the
//! launch and the timestamps' own overhead (1.5–3 µs), a third of a 6 µs kernel.
//!
//! kwb reads CUPTI's *concurrent* kernel records (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`), the
//! records torch.profiler and Nsight Systems read, so a kwb figure is the figure a user's own
//! profiler gives for the same kernel. The *serial* records (`CUPTI_ACTIVITY_KIND_KERNEL`, the
//! default until the engine issue) serialise every kernel and stamp it at its boundaries: on an
//! H200 they read small kernels 1.3–2.3× above torch.profiler (64Ki and 1Mi adds), where the
//! concurrent records agree within 0.13 µs (docs/performance.md, `scripts/clock_agreement.py`).
//! `KWB_TIMER=cupti-serial` still selects the serial records; `KWB_TIMER=events` CUDA events.
//!
//! libcupti is optional and loaded at run time by full path (`cupti_locate`); kwb looks up
//! every entry point itself and never calls one it did not find, so a missing or odd CUPTI
//! means timing with events (and saying so), never a panic. `KWB_TIMER=events` forces events.
//! Records arrive through two C callbacks (a buffer to fill, a buffer filled) that hold no
//! context, so the records they parse go to a process-wide list that [`Trace::collect`] drains.

use super::kernel_span::KernelRecord;
use cudarc::cupti::sys::CUpti_ActivityKernel10 as KernelLayout;
use std::mem::offset_of;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Set to `events` to time with CUDA events even where CUPTI is available, or to
/// `cupti-serial` for CUPTI's serial kernel records instead of its concurrent ones.
pub const TIMER_VAR: &str = "KWB_TIMER";

// CUPTI's C API, as far as kwb uses it. Results are plain integers (0 is success), so an
// unknown code from a newer CUPTI is a number to print, not an invalid Rust enum.
type Result32 = u32;
type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = unsafe extern "C" fn(*mut std::ffi::c_void, u32, *mut u8, usize, usize);
type EnableFn = unsafe extern "C" fn(u32) -> Result32;
type FlushFn = unsafe extern "C" fn(u32) -> Result32;
type RegisterFn = unsafe extern "C" fn(Option<RequestFn>, Option<CompleteFn>) -> Result32;
type NextRecordFn = unsafe extern "C" fn(*mut u8, usize, *mut *mut u32) -> Result32;
type LastCorrelationFn = unsafe extern "C" fn(*mut u32) -> Result32;

const KIND_KERNEL: u32 = 3;
const KIND_CONCURRENT_KERNEL: u32 = 10;
const FLUSH_FORCED: u32 = 1;
const BUFFER_BYTES: usize = 1 << 20;
const BUFFER_ALIGN: usize = 8;

/// A loaded CUPTI with its callbacks registered.
pub struct Cupti {
    pub path: PathBuf,
    /// The activity kind enabled while tracing: concurrent kernel records unless `KWB_TIMER`
    /// asks for the serial ones.
    kind: u32,
    enable: EnableFn,
    disable: EnableFn,
    flush_all: FlushFn,
    /// Absent from CUPTI 13 (present in older ones); without it runs are matched to records by
    /// order on the stream, which holds nothing but the timed kernels and (in cold mode) the
    /// L2 flush kernel, whose record is matched by position and left out of the time.
    last_correlation: Option<LastCorrelationFn>,
    _lib: libloading::Library,
}

static NEXT_RECORD: OnceLock<NextRecordFn> = OnceLock::new();
static RECORDS: Mutex<Vec<KernelRecord>> = Mutex::new(Vec::new());
static LOADED: OnceLock<Result<Cupti, String>> = OnceLock::new();

/// CUPTI, loaded once per process, or why kwb times with events instead.
pub fn cupti() -> Result<&'static Cupti, String> {
    LOADED.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The kernel-record kind `KWB_TIMER`'s value asks for, or `None` for events.
fn kind_for(timer: Option<&str>) -> Option<u32> {
    match timer.map(str::to_ascii_lowercase).as_deref() {
        Some("events") => None,
        Some("cupti-serial") => Some(KIND_KERNEL),
        _ => Some(KIND_CONCURRENT_KERNEL),
    }
}

fn load() -> Result<Cupti, String> {
    let timer = std::env::var(TIMER_VAR).ok();
    let Some(kind) = kind_for(timer.as_deref()) else {
        return Err(format!("{TIMER_VAR}=events"));
    };
    let path = crate::run::gpu::cupti_locate::locate().map_err(|searched| {
        format!(
            "libcupti not found (looked in {} folders, e.g. {})",
            searched.len(),
            searched
                .first()
                .map_or(String::new(), |p| p.display().to_string())
        )
    })?;
    // SAFETY: NVIDIA's own library; its initialisers are trusted (as for NVRTC).
    let lib = unsafe { libloading::Library::new(&path) }
        .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    let sym = |name: &str| -> Result<*const (), String> {
        // SAFETY: the symbol is only read as an untyped address here; it gets its C type from
        // cupti_activity.h (and is called) below.
        unsafe { lib.get::<*const ()>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("{} lacks {name}: {e}", path.display()))
    };
    let (enable, disable, flush_all, register, next) = (
        sym("cuptiActivityEnable")?,
        sym("cuptiActivityDisable")?,
        sym("cuptiActivityFlushAll")?,
        sym("cuptiActivityRegisterCallbacks")?,
        sym("cuptiActivityGetNextRecord")?,
    );
    let last = sym("cuptiGetLastCorrelationId").ok();
    // SAFETY: the pointers are the named functions, whose C signatures the types spell out.
    let cupti = unsafe {
        Cupti {
            path: path.clone(),
            kind,
            enable: std::mem::transmute::<*const (), EnableFn>(enable),
            disable: std::mem::transmute::<*const (), EnableFn>(disable),
            flush_all: std::mem::transmute::<*const (), FlushFn>(flush_all),
            last_correlation: last.map(|p| std::mem::transmute::<*const (), LastCorrelationFn>(p)),
            _lib: lib,
        }
    };
    // SAFETY: `register` is cuptiActivityRegisterCallbacks, whose C signature RegisterFn
    // spells out; it is called below while `cupti` holds the library loaded.
    let register = unsafe { std::mem::transmute::<*const (), RegisterFn>(register) };
    // SAFETY: `next` is cuptiActivityGetNextRecord, whose C signature NextRecordFn spells out;
    // it is kept (in NEXT_RECORD) only once `cupti`, and with it the library, is kept for the
    // process.
    let next = unsafe { std::mem::transmute::<*const (), NextRecordFn>(next) };
    // SAFETY: both callbacks match CUPTI's buffer-callback signatures and never unwind.
    check("cuptiActivityRegisterCallbacks", unsafe {
        register(Some(buffer_requested), Some(buffer_completed))
    })?;
    // Only now, when `cupti` (and with it the library) is about to be kept for the process:
    // a failed load drops the library, and `next` must not outlive it.
    let _ = NEXT_RECORD.set(next);
    Ok(cupti)
}

fn check(call: &str, code: Result32) -> Result<(), String> {
    match code {
        0 => Ok(()),
        c => Err(format!("{call} failed (CUPTI error {c})")),
    }
}

/// Kernel records are collected while this lives (enabled on start, disabled on drop).
pub struct Trace {
    api: &'static Cupti,
}

impl Cupti {
    /// Starts collecting kernel records; records left from before are dropped.
    pub fn start(&'static self) -> Result<Trace, String> {
        // SAFETY: plain calls with an activity kind / flag.
        check("cuptiActivityFlushAll", unsafe {
            (self.flush_all)(FLUSH_FORCED)
        })?;
        drain();
        // SAFETY: a plain call with an activity kind.
        check("cuptiActivityEnable", unsafe { (self.enable)(self.kind) })?;
        Ok(Trace { api: self })
    }
}

impl Trace {
    /// The correlation id of this thread's last CUDA call (call it right after a launch), or
    /// 0 when CUPTI cannot say: runs are then matched to records by order.
    pub fn last_correlation(&self) -> u32 {
        let Some(f) = self.api.last_correlation else {
            return 0;
        };
        let mut id = 0u32;
        // SAFETY: an out-parameter.
        match unsafe { f(&mut id) } {
            0 => id,
            _ => 0,
        }
    }

    /// Every kernel record of work that has finished (synchronize first), in no order.
    pub fn collect(&self) -> Result<Vec<KernelRecord>, String> {
        // SAFETY: a plain call; CUPTI hands back filled buffers through `buffer_completed`.
        check("cuptiActivityFlushAll", unsafe {
            (self.api.flush_all)(FLUSH_FORCED)
        })?;
        Ok(drain())
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        // SAFETY: plain calls; failures leave nothing to undo.
        unsafe {
            let _ = (self.api.disable)(self.api.kind);
            let _ = (self.api.flush_all)(FLUSH_FORCED);
        }
        drain();
    }
}

fn drain() -> Vec<KernelRecord> {
    let mut records = RECORDS.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut *records)
}

fn layout() -> Option<std::alloc::Layout> {
    std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).ok()
}

/// CUPTI asks for a buffer to fill.
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let ptr = match layout() {
        // SAFETY: a non-zero layout.
        Some(l) => unsafe { std::alloc::alloc(l) },
        None => std::ptr::null_mut(),
    };
    // SAFETY: CUPTI passes valid out-parameters; a null buffer tells it to drop records.
    unsafe {
        *buffer = ptr;
        *size = if ptr.is_null() { 0 } else { BUFFER_BYTES };
        *max = 0;
    }
}

/// CUPTI hands back a filled buffer: keep its kernel records, free it.
unsafe extern "C" fn buffer_completed(
    _ctx: *mut std::ffi::c_void,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut found = Vec::new();
    if let Some(next) = NEXT_RECORD.get() {
        let mut record: *mut u32 = std::ptr::null_mut();
        // SAFETY: `buffer` holds `valid` bytes of records; CUPTI walks them and stops with a
        // non-zero code at the end. Each record starts with its kind (a u32); kernel records
        // share the prefix of CUpti_ActivityKernel10 up to the correlation id.
        while unsafe { next(buffer, valid, &mut record) } == 0 && !record.is_null() {
            // SAFETY: CUPTI returned `record` inside the buffer's valid bytes, and every record
            // starts with its kind, a u32.
            let kind = unsafe { record.read_unaligned() };
            if kind == KIND_KERNEL || kind == KIND_CONCURRENT_KERNEL {
                let base = record as *const u8;
                let field = |offset: usize| base.wrapping_add(offset);
                // SAFETY: a record of either kernel kind is a CUpti_ActivityKernel of some
                // version (4 to 13), every one of which holds these fields at KernelLayout's
                // offsets (a test below pins them) within the record CUPTI handed back.
                found.push(unsafe {
                    KernelRecord {
                        correlation: (field(offset_of!(KernelLayout, correlationId)) as *const u32)
                            .read_unaligned(),
                        start_ns: (field(offset_of!(KernelLayout, start)) as *const u64)
                            .read_unaligned(),
                        end_ns: (field(offset_of!(KernelLayout, end)) as *const u64)
                            .read_unaligned(),
                    }
                });
            }
        }
    }
    if let Some(l) = layout() {
        // SAFETY: allocated by `buffer_requested` with this layout.
        unsafe { std::alloc::dealloc(buffer, l) };
    }
    RECORDS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_fields_sit_where_every_kernel_record_version_has_them() {
        // The prefix shared by CUpti_ActivityKernel4 .. 13: start at 16, end at 24, the
        // correlation id at 92. A record of any of those versions reads the same.
        assert_eq!(offset_of!(KernelLayout, start), 16);
        assert_eq!(offset_of!(KernelLayout, end), 24);
        assert_eq!(offset_of!(KernelLayout, correlationId), 92);
    }

    #[test]
    fn concurrent_kernel_records_unless_events_or_the_serial_ones_are_asked_for() {
        assert_eq!(kind_for(None), Some(KIND_CONCURRENT_KERNEL));
        assert_eq!(kind_for(Some("cupti")), Some(KIND_CONCURRENT_KERNEL));
        assert_eq!(
            kind_for(Some("cupti-concurrent")),
            Some(KIND_CONCURRENT_KERNEL)
        );
        assert_eq!(kind_for(Some("Events")), None);
        assert_eq!(kind_for(Some("cupti-serial")), Some(KIND_KERNEL));
    }

    #[test]
    fn buffers_round_trip_and_a_buffer_without_records_adds_none() {
        let (mut buf, mut size, mut max) = (std::ptr::null_mut(), 0usize, 7usize);
        // SAFETY: three valid out-parameters, as CUPTI would pass.
        unsafe { buffer_requested(&mut buf, &mut size, &mut max) };
        assert!(!buf.is_null());
        assert_eq!((size, max), (BUFFER_BYTES, 0));
        // With no CUPTI loaded there is no record walker: the buffer is only freed.
        // SAFETY: `buf` came from `buffer_requested` and is handed back once, with no valid
        // bytes; where another test loaded CUPTI, its record walker finds no record in them.
        unsafe { buffer_completed(std::ptr::null_mut(), 0, buf, size, 0) };
    }

    #[test]
    fn loading_and_tracing_never_panic_whatever_is_installed() {
        // Without libcupti: an error naming where kwb looked. With one but no GPU or driver,
        // CUPTI's own error codes. Either way, a reason, and kwb times with events.
        match cupti() {
            Ok(c) => {
                eprintln!("CUPTI loaded from {}", c.path.display());
                match c.start() {
                    Ok(t) => {
                        let _ = t.last_correlation();
                        assert_eq!(t.collect().map(|r| r.len()), Ok(0));
                    }
                    Err(why) => eprintln!("tracing unavailable: {why}"),
                }
            }
            Err(why) => {
                eprintln!("no CUPTI: {why}");
                assert!(!why.is_empty());
            }
        }
    }
}
