//! What is wrong with a path that should name a readable file, in words: "not found" only
//! when nothing is there, so a symbolic-link loop, a dangling link or a folder are each named
//! as such in the workspace's diagnostics.

use std::path::Path;

/// Why `path` is not a file kwb can read, or `None` when it is one.
pub fn file_problem(path: &Path) -> Option<FileProblem> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => None,
        Ok(m) if m.is_dir() => Some(FileProblem::Folder),
        Ok(_) => Some(FileProblem::NotRegular),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Some(FileProblem::LinkLoop),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::read_link(path) {
                // The path itself is a link; what it points at is missing.
                Ok(target) => Some(FileProblem::DanglingLink(target.display().to_string())),
                Err(_) => Some(FileProblem::NotFound),
            }
        }
        Err(e) => Some(FileProblem::Unreadable(e.to_string())),
    }
}

/// Why a path is not a readable file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileProblem {
    #[error("not found")]
    NotFound,
    #[error("is a symbolic link loop (following its links leads back to them)")]
    LinkLoop,
    #[error("is a symbolic link to `{0}`, which does not exist")]
    DanglingLink(String),
    #[error("is a folder, not a file")]
    Folder,
    #[error("is not a regular file")]
    NotRegular,
    #[error("cannot be read: {0}")]
    Unreadable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_a_path_is_no_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("k.cu"), "").unwrap();
        std::os::unix::fs::symlink("b.cu", p("a.cu")).unwrap();
        std::os::unix::fs::symlink("a.cu", p("b.cu")).unwrap();
        std::os::unix::fs::symlink("gone.cu", p("dangling.cu")).unwrap();
        std::os::unix::fs::symlink("k.cu", p("good.cu")).unwrap();
        assert_eq!(file_problem(&p("k.cu")), None);
        assert_eq!(file_problem(&p("good.cu")), None);
        assert_eq!(file_problem(&p("a.cu")), Some(FileProblem::LinkLoop));
        assert_eq!(
            file_problem(&p("dangling.cu")),
            Some(FileProblem::DanglingLink("gone.cu".into()))
        );
        assert_eq!(file_problem(&p("none.cu")), Some(FileProblem::NotFound));
        assert_eq!(file_problem(dir.path()), Some(FileProblem::Folder));
    }
}
