//! Why `kwb watch` could not start (or had to stop), as a typed error, so the command line
//! maps each cause to the exit code the README's table gives it: a bad workspace is a usage
//! error (4), NVRTC not found or not loadable is a compile error (3), as in `batch` and
//! `inspect`.

use crate::compile::nvrtc::NvrtcError;
use crate::workspace::WorkspaceError;

/// What stopped the workbench before (or outside) its event loop.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The workspace could not be read or is invalid.
    #[error("{0}")]
    Workspace(#[from] WorkspaceError),
    /// NVRTC could not be found, installed or loaded, or does not target the arch.
    #[error("error: {0}")]
    Nvrtc(#[from] NvrtcError),
    /// The files could not be watched.
    #[error("error: {0}")]
    Watch(String),
    /// The terminal could not be set up.
    #[error("error: cannot set up the terminal: {0}")]
    Terminal(std::io::Error),
}

impl StartError {
    /// The documented exit code (`crate::exit`) for this cause.
    pub fn exit_code(&self) -> i32 {
        match self {
            StartError::Nvrtc(_) => crate::exit::COMPILE_ERROR,
            StartError::Workspace(_) | StartError::Watch(_) | StartError::Terminal(_) => {
                crate::exit::USAGE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::locate::LocateError;

    #[test]
    fn nvrtc_not_found_is_a_compile_error_as_in_batch_and_inspect() {
        let e = StartError::Nvrtc(NvrtcError::NotFound(LocateError::NvrtcNotFound {
            searched: vec![],
        }));
        assert_eq!(e.exit_code(), crate::exit::COMPILE_ERROR);
        let e = StartError::Watch("no such file".into());
        assert_eq!(e.exit_code(), crate::exit::USAGE);
    }
}
