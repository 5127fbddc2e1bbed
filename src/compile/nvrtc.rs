//! NVRTC through cudarc, loaded at run time. We locate the library ourselves and pre-load it
//! (and its builtins) by full path, so cudarc's by-name lookup finds the already-loaded copy and
//! never panics on a missing library.

use super::arch::Arch;
use super::locate::{CudaPaths, LocateError};
use super::provision::{locate_or_install, ProvisionError};
use cudarc::nvrtc::{result, sys};
use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::sync::OnceLock;

/// A loaded NVRTC: its version, the archs it can target, and where it came from.
#[derive(Debug)]
pub struct Nvrtc {
    pub version: (i32, i32),
    pub supported_archs: Vec<u32>,
    pub paths: CudaPaths,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum NvrtcError {
    #[error(transparent)]
    NotFound(#[from] LocateError),
    /// Not found, and installing the wheels was off or failed.
    #[error(transparent)]
    Install(#[from] ProvisionError),
    #[error("could not load {path}: {message}")]
    Load { path: String, message: String },
    #[error("NVRTC call {call} failed: {code}")]
    Call { call: &'static str, code: String },
    #[error("{arch} is not a target of NVRTC {major}.{minor}; it supports: {supported}")]
    UnsupportedArch {
        arch: Arch,
        major: i32,
        minor: i32,
        supported: String,
    },
    #[error("option {0:?} contains a NUL byte")]
    BadOption(String),
}

/// What one NVRTC compile produced. `log` is kept on success too: it holds ptxas' resource report.
#[derive(Debug, Clone)]
pub struct RawOutput {
    pub ok: bool,
    pub log: String,
    pub ptx: String,
    pub cubin: Vec<u8>,
}

static NVRTC: OnceLock<Result<Nvrtc, NvrtcError>> = OnceLock::new();

/// Locates (installing the wheels on a fresh machine) and loads NVRTC once per process.
pub fn nvrtc() -> Result<&'static Nvrtc, NvrtcError> {
    NVRTC
        .get_or_init(|| load(locate_or_install()?))
        .as_ref()
        .map_err(Clone::clone)
}

/// For unit tests that compile kwb's own device code: NVRTC, or `None` after saying why the
/// test skips.
#[cfg(test)]
pub(crate) fn nvrtc_or_skip() -> Option<&'static Nvrtc> {
    nvrtc()
        .map_err(|e| eprintln!("skipping: no NVRTC ({e})"))
        .ok()
}

fn load(paths: CudaPaths) -> Result<Nvrtc, NvrtcError> {
    let dir = paths.nvrtc_lib.parent().unwrap_or(Path::new("."));
    // NVRTC opens libnvrtc-builtins by name at compile time; loading it first by path makes
    // that lookup find it without LD_LIBRARY_PATH.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("libnvrtc-builtins.so") {
                preload(&e.path())?;
            }
        }
    }
    preload(&paths.nvrtc_lib)?;
    // SAFETY: only probes dlopen by name; after the pre-load it resolves to our copy.
    if !unsafe { sys::is_culib_present() } {
        return Err(NvrtcError::Load {
            path: paths.nvrtc_lib.display().to_string(),
            message: "cudarc could not resolve libnvrtc by name after pre-loading it".into(),
        });
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| call_err("nvrtcVersion", e))?;
    let mut n: c_int = 0;
    // SAFETY: an out-parameter.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(|e| call_err("nvrtcGetNumSupportedArchs", e))?;
    let mut archs = vec![0 as c_int; n.max(0) as usize];
    // SAFETY: `archs` has room for the `n` entries NVRTC just said it writes.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(|e| call_err("nvrtcGetSupportedArchs", e))?;
    Ok(Nvrtc {
        version: (major, minor),
        supported_archs: archs.into_iter().map(|a| a as u32).collect(),
        paths,
    })
}

fn preload(path: &Path) -> Result<(), NvrtcError> {
    // SAFETY: loading NVIDIA's own library; its initialisers are trusted.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| NvrtcError::Load {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    // Kept loaded for the life of the process, like cudarc's own handle.
    std::mem::forget(lib);
    Ok(())
}

fn call_err(call: &'static str, e: result::NvrtcError) -> NvrtcError {
    NvrtcError::Call {
        call,
        code: format!("{:?}", e.0),
    }
}

impl Nvrtc {
    /// Checks that NVRTC can target `arch`.
    pub fn check_arch(&self, arch: Arch) -> Result<(), NvrtcError> {
        if self.supported_archs.contains(&arch.sm()) {
            return Ok(());
        }
        Err(NvrtcError::UnsupportedArch {
            arch,
            major: self.version.0,
            minor: self.version.1,
            supported: self
                .supported_archs
                .iter()
                .map(|a| format!("sm_{a}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The options every kwb compile uses, before the user's own.
    pub fn base_options(&self, arch: Arch) -> Vec<String> {
        let mut opts = vec![
            format!("--gpu-architecture={arch}"),
            "-lineinfo".into(),
            "--ptxas-options=-v".into(),
            "--std=c++17".into(),
            format!("-I{}", self.paths.include_dir.display()),
        ];
        // With a driver present, NVRTC 13 serves repeat compiles from the driver's cache and
        // then returns no ptxas report; kwb caches compiles itself, log included.
        if self.version.0 >= 13 {
            opts.push("--no-cache".into());
        }
        opts
    }

    /// Compiles `source` (named `name` in diagnostics) with `options`, keeping log, PTX and CUBIN.
    /// A compile error is `Ok` with `ok == false`: the log is the result.
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        options: &[String],
    ) -> Result<RawOutput, NvrtcError> {
        let c_opts = options
            .iter()
            .map(|o| CString::new(o.as_str()).map_err(|_| NvrtcError::BadOption(o.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        // NVRTC stops at a NUL; kernel sources with one are cut there, as nvcc would reject them.
        let src = CString::new(source.split('\0').next().unwrap_or_default()).unwrap_or_default();
        let cname = CString::new(name.replace('\0', "")).unwrap_or_default();
        let prog = result::create_program(&src, Some(&cname))
            .map_err(|e| call_err("nvrtcCreateProgram", e))?;
        let ptrs: Vec<*const c_char> = c_opts.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: prog is live until destroy below; option pointers outlive the call.
        let status = unsafe { sys::nvrtcCompileProgram(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
        // SAFETY: `prog` is live (destroyed just below) and nvrtcCompileProgram has returned.
        let out = unsafe { collect(prog, status == sys::nvrtcResult::NVRTC_SUCCESS) };
        // SAFETY: `prog` was created above, is destroyed once, here, and not used after.
        unsafe {
            let _ = result::destroy_program(prog);
        }
        match status {
            sys::nvrtcResult::NVRTC_SUCCESS | sys::nvrtcResult::NVRTC_ERROR_COMPILATION => out,
            other => Err(NvrtcError::Call {
                call: "nvrtcCompileProgram",
                code: format!(
                    "{other:?}: {}",
                    out.map(|o| o.log).unwrap_or_default().trim()
                ),
            }),
        }
    }
}

/// Reads log, PTX and CUBIN from a compiled program.
///
/// # Safety
/// `prog` must be a live program on which nvrtcCompileProgram has returned.
unsafe fn collect(prog: sys::nvrtcProgram, ok: bool) -> Result<RawOutput, NvrtcError> {
    let log =
        c_text(&result::get_program_log(prog).map_err(|e| call_err("nvrtcGetProgramLog", e))?);
    if !ok {
        return Ok(RawOutput {
            ok,
            log,
            ptx: String::new(),
            cubin: Vec::new(),
        });
    }
    let ptx = c_text(&result::get_ptx(prog).map_err(|e| call_err("nvrtcGetPTX", e))?);
    let mut size = 0usize;
    sys::nvrtcGetCUBINSize(prog, &mut size)
        .result()
        .map_err(|e| call_err("nvrtcGetCUBINSize", e))?;
    let mut cubin = vec![0u8; size];
    sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut c_char)
        .result()
        .map_err(|e| call_err("nvrtcGetCUBIN", e))?;
    Ok(RawOutput {
        ok,
        log,
        ptx,
        cubin,
    })
}

fn c_text(bytes: &[c_char]) -> String {
    let b: Vec<u8> = bytes
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&b).into_owned()
}
