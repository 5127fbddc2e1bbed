//! NumPy `.npy` files, so kernel authors can feed their own inputs and expected outputs to kwb and
//! take kwb's outputs back into Python. Reading accepts format versions 1.0, 2.0 and 3.0, either
//! byte order, C order only, and the plain numeric dtypes; every element comes back as `f64`.
//! Writing produces version 1.0, little-endian. Malformed files give an [`NpyError`] naming the
//! file and the problem; nothing in here panics on bad input.

use super::inputs;
use crate::workspace::DType;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// An array read from a `.npy` file: its shape, its dtype as written in the file (e.g. `<f4`),
/// and its elements in row-major order converted to `f64` (64-bit integers beyond 2^53 round).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub dtype: String,
    pub data: Vec<f64>,
}

/// Why a `.npy` file could not be read or written; each names the file first.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, #[source] std::io::Error),
    #[error("{path}: not a .npy file (it does not start with \\x93NUMPY)", path = .0.display())]
    BadMagic(PathBuf),
    #[error("{path}: .npy format version {1}.{2} is not supported (1.0, 2.0 and 3.0 are)", path = .0.display())]
    Version(PathBuf, u8, u8),
    #[error("{path}: file is truncated: {1}", path = .0.display())]
    Truncated(PathBuf, String),
    #[error("{path}: bad .npy header: {1}", path = .0.display())]
    Header(PathBuf, String),
    #[error("{path}: unsupported dtype `{1}` (kwb reads f2, f4, f8, i1-i8, u1-u8 and b1)", path = .0.display())]
    Dtype(PathBuf, String),
    #[error("{path}: array is in Fortran order; save it in C order (np.ascontiguousarray)", path = .0.display())]
    Fortran(PathBuf),
    /// The data after the header is longer than the shape needs, or (on write) the number of
    /// values disagrees with the shape.
    #[error("{path}: {1}", path = .0.display())]
    Size(PathBuf, String),
}

/// Reads the `.npy` file at `path`.
pub fn read(path: &Path) -> Result<NpyArray, NpyError> {
    let bytes = std::fs::read(path).map_err(|e| NpyError::Io(path.into(), e))?;
    parse(&bytes, path)
}

/// Reads the `.npy` file at `path` as its shape and its row-major elements.
pub fn read_f64(path: &Path) -> Result<(Vec<usize>, Vec<f64>), NpyError> {
    read(path).map(|a| (a.shape, a.data))
}

/// Parses the bytes of a `.npy` file; `path` only names the source in errors.
pub fn parse(bytes: &[u8], path: &Path) -> Result<NpyArray, NpyError> {
    let err = |kind: fn(PathBuf, String) -> NpyError, what: String| kind(path.into(), what);
    let bad = |what: String| err(NpyError::Header, what);
    let trunc = |what: &str| err(NpyError::Truncated, what.into());
    if !bytes.starts_with(MAGIC) {
        if MAGIC.starts_with(bytes) {
            return Err(trunc(&format!("it has only {} bytes", bytes.len())));
        }
        return Err(NpyError::BadMagic(path.into()));
    }
    let (len_size, utf8) = match bytes.get(6..8) {
        Some([1, 0]) => (2, false),
        Some([2, 0]) => (4, false),
        Some([3, 0]) => (4, true),
        Some(&[major, minor]) => return Err(NpyError::Version(path.into(), major, minor)),
        _ => return Err(trunc("it ends before the version")),
    };
    let Some(len_bytes) = bytes.get(8..8 + len_size) else {
        return Err(trunc("it ends in the header length"));
    };
    let le = |n, &b: &u8| (n << 8) | b as usize;
    let header_len = len_bytes.iter().rev().fold(0, le);
    let start = 8 + len_size;
    let Some(raw) = bytes.get(start..start + header_len) else {
        let have = bytes.len() - start;
        let what = format!("the header should be {header_len} bytes, but only {have} follow");
        return Err(trunc(&what));
    };
    let text: String = match utf8 {
        true => String::from_utf8(raw.to_vec()).map_err(|_| bad("not UTF-8".into()))?,
        false => raw.iter().map(|&b| b as char).collect(),
    };
    let mut rest = text.as_bytes();
    let dict = match value(&mut rest, 0).map_err(bad)? {
        Lit::Dict(d) if peek(&mut rest).is_none() => d,
        Lit::Dict(_) => return Err(bad("text follows the dict".into())),
        _ => return Err(bad(format!("header is not a dict: {:.60}", text.trim()))),
    };
    let get = |key: &str| {
        let found = dict.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        found.ok_or_else(|| bad(format!("the header has no '{key}' key")))
    };
    let descr = match get("descr")? {
        Lit::Str(s) => s.clone(),
        _ => return Err(err(NpyError::Dtype, "structured dtype".into())),
    };
    let Lit::Bool(fortran) = *get("fortran_order")? else {
        return Err(bad("'fortran_order' is not True or False".into()));
    };
    let dims = match get("shape")? {
        Lit::Seq(items) => items.iter().collect(),
        one => vec![one],
    };
    let dim = |d: &Lit| match *d {
        Lit::Int(n) => usize::try_from(n).map_err(|_| bad(format!("dimension {n} is not valid"))),
        _ => Err(bad("'shape' is not a tuple of integers".into())),
    };
    let shape = dims.into_iter().map(dim).collect::<Result<Vec<_>, _>>()?;
    let Some((kind, size, big)) = dtype_of(&descr) else {
        return Err(err(NpyError::Dtype, descr));
    };
    // With at most one dimension above 1, Fortran order lays the data out as C order does.
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(NpyError::Fortran(path.into()));
    }
    let need = shape.iter().try_fold(size, |n, &d| n.checked_mul(d));
    let need = need.ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
    let data = &bytes[start + header_len..];
    let have = data.len();
    let what = format!("shape {shape:?} of `{descr}` needs {need} bytes of data, but");
    if have < need {
        return Err(trunc(&format!("{what} only {have} follow the header")));
    } else if have > need {
        return Err(err(
            NpyError::Size,
            format!("{what} {have} follow the header"),
        ));
    }
    let data = data.par_chunks_exact(size).map(|b| element(b, kind, big));
    let (data, dtype) = (data.collect(), descr);
    Ok(NpyArray { shape, dtype, data })
}

/// The kind (`f`, `i`, `u` or `b`), item size and byte order (big?) of a supported descriptor.
fn dtype_of(descr: &str) -> Option<(u8, usize, bool)> {
    let (order, rest) = descr.split_at_checked(1)?;
    let (kind, size) = rest.split_at_checked(1)?;
    let size: usize = size.parse().ok()?;
    let ok = match kind {
        "f" => [2, 4, 8].contains(&size),
        "i" | "u" => [1, 2, 4, 8].contains(&size),
        "b" => size == 1,
        _ => false,
    };
    let big = match order {
        "<" | "=" => false,
        ">" => true,
        "|" if size == 1 => false, // `|`: byte order does not apply
        _ => return None,
    };
    ok.then_some((kind.as_bytes()[0], size, big))
}

/// One element of a supported dtype as `f64`.
fn element(b: &[u8], kind: u8, big: bool) -> f64 {
    let bits = |acc: u64, &x: &u8| (acc << 8) | x as u64;
    let x = if big {
        b.iter().fold(0, bits)
    } else {
        b.iter().rev().fold(0, bits)
    };
    let shift = 64 - 8 * b.len() as u32;
    match (kind, b.len()) {
        (b'f', 2) => half::f16::from_bits(x as u16).to_f64(),
        (b'f', 4) => f32::from_bits(x as u32) as f64,
        (b'f', _) => f64::from_bits(x),
        (b'i', _) => ((x << shift) as i64 >> shift) as f64,
        (b'u', _) => x as f64,
        _ => (x != 0) as u8 as f64,
    }
}

/// A Python literal as it appears in a `.npy` header.
enum Lit {
    Str(String),
    Int(i128),
    Bool(bool),
    Other,
    Seq(Vec<Lit>),
    Dict(Vec<(String, Lit)>),
}

/// The next non-blank byte of `s`, which is advanced to it.
fn peek(s: &mut &[u8]) -> Option<u8> {
    while s.first().is_some_and(u8::is_ascii_whitespace) {
        *s = &s[1..];
    }
    s.first().copied()
}

/// Parses one Python literal from the front of `s`.
fn value(s: &mut &[u8], depth: usize) -> Result<Lit, String> {
    if depth > 16 {
        return Err("it nests too deeply".into());
    }
    let c = peek(s).ok_or("it ends where a value should be")?;
    if let Some(k) = b"{([".iter().position(|&o| o == c) {
        *s = &s[1..];
        let (mut items, mut pairs) = (Vec::new(), Vec::new());
        while peek(s) != Some(b"})]"[k]) {
            match value(s, depth + 1)? {
                Lit::Str(key) if k == 0 && peek(s) == Some(b':') => {
                    *s = &s[1..];
                    pairs.push((key, value(s, depth + 1)?));
                }
                _ if k == 0 => return Err("a dict entry is not `'key': value`".into()),
                v => items.push(v),
            }
            match peek(s) {
                Some(b',') => *s = &s[1..],
                Some(x) if x == b"})]"[k] => {}
                _ => return Err("a ',' is missing between values".into()),
            }
        }
        *s = &s[1..];
        return Ok(if k > 0 {
            Lit::Seq(items)
        } else {
            Lit::Dict(pairs)
        });
    }
    if c == b'\'' || c == b'"' {
        let len = s[1..].iter().position(|&x| x == c);
        let len = len.ok_or("a string is not closed")?;
        let text = String::from_utf8_lossy(&s[1..1 + len]).into_owned();
        *s = &s[len + 2..];
        return Ok(Lit::Str(text));
    }
    let wordy = |x: &&u8| x.is_ascii_alphanumeric() || **x == b'-';
    let len = s.iter().take_while(wordy).count();
    let word = std::str::from_utf8(&s[..len]).unwrap_or("");
    *s = &s[len..];
    match word {
        "True" => Ok(Lit::Bool(true)),
        "False" => Ok(Lit::Bool(false)),
        "None" => Ok(Lit::Other),
        "" => Err(format!("unexpected '{}'", c as char)),
        w => w
            .trim_end_matches('L')
            .parse()
            .map(Lit::Int)
            .map_err(|_| format!("unexpected `{w:.20}`")),
    }
}

/// The bytes of a version 1.0 `.npy` file holding `values` rounded to `dtype`. NumPy has no
/// bfloat16, so BF16 is written as `<f4` (exactly: every bf16 value is an f32).
fn encode(shape: &[usize], dtype: DType, values: &[f64]) -> Vec<u8> {
    let mut body = inputs::encode(dtype, values);
    let descr = match dtype {
        DType::F16 => "<f2",
        DType::F64 => "<f8",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::I16 => "<i2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        DType::F32 | DType::BF16 => "<f4",
    };
    if dtype == DType::BF16 {
        body = inputs::encode(DType::F32, &body.values);
    }
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let comma = if dims.len() == 1 { "," } else { "" };
    let shape = format!("({}{comma})", dims.join(", "));
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad with spaces so the data starts on a 64-byte boundary; the header ends in a newline.
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.extend(std::iter::repeat_n(' ', total - 11 - header.len()));
    header.push('\n');
    let len = (header.len() as u16).to_le_bytes();
    [&MAGIC[..], &[1, 0], &len, header.as_bytes(), &body.bytes].concat()
}

/// Writes `values` (row-major, `shape`) to `path` as a version 1.0 `.npy` file of `dtype` (BF16
/// as `<f4`), with at most 64 dimensions as NumPy allows.
pub fn write(path: &Path, shape: &[usize], dtype: DType, values: &[f64]) -> Result<(), NpyError> {
    let n = values.len();
    let need = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if need != Some(n) || shape.len() > 64 {
        let what = format!("{n} values cannot be written as shape {shape:?}");
        return Err(NpyError::Size(path.into(), what));
    }
    let bytes = encode(shape, dtype, values);
    std::fs::write(path, bytes).map_err(|e| NpyError::Io(path.into(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let len = (header.len() as u32).to_le_bytes();
        let len = &len[..if version == 1 { 2 } else { 4 }];
        [MAGIC, &[version, 0][..], len, header.as_bytes(), data].concat()
    }

    fn head(descr: &str, fortran: &str, shape: &str) -> String {
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}\n")
    }

    #[test]
    fn round_trips_every_written_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let values = [0.0, -1.5, 2.25, 1e3, -7.0, 0.1];
        let descrs = [
            "<f4", "<f2", "<f4", "<i4", "<f8", "<i8", "<i2", "|i1", "|u1", "|b1",
        ]; // DType::ALL
        for (dtype, descr) in DType::ALL.into_iter().zip(descrs) {
            let path = dir.path().join(format!("{dtype}.npy"));
            write(&path, &[2, 3], dtype, &values).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!(((10 + header_len) % 64, bytes[9 + header_len]), (0, b'\n'));
            let a = read(&path).unwrap();
            assert_eq!((a.shape.as_slice(), a.dtype.as_str()), (&[2, 3][..], descr));
            assert_eq!(a.data, inputs::encode(dtype, &values).values, "{dtype}");
        }
        let path = dir.path().join("scalar.npy");
        write(&path, &[], DType::F32, &[4.0]).unwrap();
        assert_eq!(read_f64(&path).unwrap(), (vec![], vec![4.0]));
        let e = write(&path, &[3], DType::F32, &[1.0]).unwrap_err();
        assert!(e
            .to_string()
            .ends_with("scalar.npy: 1 values cannot be written as shape [3]"));
    }

    #[test]
    fn reads_hand_built_files() {
        let le: Vec<u8> = [1i32, -2, 3, 4]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let be: Vec<u8> = [1.5f32, -0.25, 3e9]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let reordered = "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \">f4\"}";
        #[rustfmt::skip]
        let cases: [(u8, String, Vec<u8>, &[f64]); 6] = [
            (1, head("<i4", "False", "(2, 2)"), le, &[1.0, -2.0, 3.0, 4.0]),
            (2, reordered.into(), be, &[1.5, -0.25, 3e9]),
            (3, head("|b1", "True", "(3L,)"), vec![0, 1, 7], &[0.0, 1.0, 1.0]),
            (1, head("|u1", "False", "(1, 2)"), vec![200, 3], &[200.0, 3.0]),
            (1, head("<i8", "False", "()"), (-5i64).to_le_bytes().into(), &[-5.0]),
            (1, head(">f2", "False", "(1,)"), vec![0x3C, 0x00], &[1.0]),
        ];
        for (version, header, data, want) in cases {
            let a = parse(&file(version, &header, &data), Path::new("a.npy")).unwrap();
            assert_eq!(a.data, want, "{header}");
            assert_eq!(a.shape.iter().product::<usize>(), want.len());
        }
    }

    #[test]
    fn malformed_files_are_errors_not_panics() {
        let ok = head("<f4", "False", "(2,)");
        let mut v4 = file(1, &ok, &[0; 8]);
        v4[6] = 4;
        let rec = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}";
        let f = |descr, fortran, shape, len| file(1, &head(descr, fortran, shape), &vec![0; len]);
        #[rustfmt::skip]
        let cases: [(Vec<u8>, &str); 22] = [
            (b"PK\x03\x04 not numpy".to_vec(), "x.npy: not a .npy file"),
            (b"\x93NUM".to_vec(), "x.npy: file is truncated: it has only 4 bytes"),
            (file(1, &ok, &[])[..20].to_vec(), "header should be 58 bytes, but only 10 follow"),
            (file(1, &ok, &[0; 5]), "needs 8 bytes of data, but only 5 follow"),
            (file(1, &ok, &[0; 12]), "needs 8 bytes of data, but 12 follow"),
            (v4, "version 4.0 is not supported"),
            (f(">c16", "False", "(2,)", 32), "unsupported dtype `>c16`"),
            (f("|f4", "False", "(2,)", 8), "unsupported dtype `|f4`"),
            (file(1, rec, &[0; 8]), "unsupported dtype `structured dtype`"),
            (file(1, "[1, 2, 3]", &[]), "header is not a dict"),
            (f("<f4", "True", "(2, 2)", 16), "Fortran order"),
            (f("<f4", "False", "(-2,)", 0), "dimension -2 is not valid"),
            (f("<f8", "False", "(99999999999, 99999999999)", 0), "too large"),
            (f("<f4", "False", "'2'", 0), "'shape' is not a tuple of integers"),
            (file(1, "{'descr': '<f4', 'shape': (2,)}", &[0; 8]), "no 'fortran_order' key"),
            (file(3, &"(".repeat(5000), &[]), "it nests too deeply"),
            (file(1, "{'descr' '<f4'}", &[]), "a dict entry is not `'key': value`"),
            (file(1, "{'descr': <f4}", &[]), "bad .npy header: unexpected '<'"),
            (file(1, "{'descr': '<f4", &[]), "a string is not closed"),
            (file(1, "{'a': (1 2)}", &[]), "a ',' is missing"),
            (file(1, "{'a': 1} x", &[]), "text follows the dict"),
            (file(1, "", &[]), "it ends where a value should be"),
        ];
        for (bytes, want) in cases {
            let e = parse(&bytes, Path::new("x.npy")).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
        let io = read(Path::new("/nonexistent/y.npy"))
            .unwrap_err()
            .to_string();
        assert!(io.starts_with("/nonexistent/y.npy: "), "{io}");
    }
}
