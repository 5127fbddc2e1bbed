//! kwb's exit codes, shared by every subcommand and documented in the README.

/// Everything ran and every check passed.
pub const OK: i32 = 0;
/// A version's output did not match its reference.
pub const CHECK_FAILED: i32 = 1;
/// A benchmark regressed beyond the allowed threshold and the measured noise.
pub const REGRESSION: i32 = 2;
/// A version failed to compile (or NVRTC could not be found or loaded).
pub const COMPILE_ERROR: i32 = 3;
/// Bad command-line usage or an invalid workspace.
pub const USAGE: i32 = 4;
/// No usable GPU or driver.
pub const NO_GPU: i32 = 5;
/// `kwb capture`: the captured program itself failed.
pub const PROGRAM_FAILED: i32 = 6;
