//! What the CPU backends find beyond a wrong answer: the emulator's sanitizer findings
//! (out-of-bounds, races, uninitialised reads, divergent barriers…) and the tile interpreter's
//! out-of-bounds reports, each located by CTA, thread, PTX line and source line. They travel
//! in `kwb batch`'s JSON as optional fields, so older readers ignore them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which engine ran a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The GPU, through the isolated worker.
    Gpu,
    /// kwb's PTX emulator, on the CPU.
    Emulator,
    /// The tile language's reference interpreter, on the CPU.
    Interpreter,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Gpu => "gpu",
            Backend::Emulator => "emulator",
            Backend::Interpreter => "interpreter",
        })
    }
}

/// One finding, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// e.g. `out-of-bounds`, `shared-race`, `uninit-shared`, `divergent-barrier`.
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta: Option<[u32; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<[u32; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptx_line: Option<u32>,
    /// The kernel source file and line (from the PTX's `.loc`, or the tile source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// `file:line: kind: message (CTA (x,y,z), thread (x,y,z), PTX line N)`: the form editors link.
impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            f.write_str(": ")?;
        }
        write!(f, "{}: {}", self.kind, self.message)?;
        let mut at = Vec::new();
        if let Some([x, y, z]) = self.cta {
            at.push(format!("CTA ({x},{y},{z})"));
        }
        if let Some([x, y, z]) = self.thread {
            at.push(format!("thread ({x},{y},{z})"));
        }
        if let Some(l) = self.ptx_line {
            at.push(format!("PTX line {l}"));
        }
        if !at.is_empty() {
            write!(f, " ({})", at.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_as_file_line_kind_message_and_where() {
        let f = Finding {
            kind: "out-of-bounds".into(),
            message: "write of 4 bytes 4 bytes past the end of `c`".into(),
            cta: Some([3, 0, 0]),
            thread: Some([255, 0, 0]),
            ptx_line: Some(42),
            file: Some("kernels/x.cu".into()),
            line: Some(7),
        };
        assert_eq!(
            f.to_string(),
            "kernels/x.cu:7: out-of-bounds: write of 4 bytes 4 bytes past the end of `c` \
             (CTA (3,0,0), thread (255,0,0), PTX line 42)"
        );
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Finding>(&json).unwrap(), f);
        assert_eq!(
            serde_json::to_string(&Backend::Emulator).unwrap(),
            "\"emulator\""
        );
    }
}
