//! A job's host-side data, shared by every backend (the GPU worker, the CPU emulator and the
//! tile interpreter): the seeded inputs, the starting contents of each output, the reference
//! computed on the host (an array expression or `.npy` files), and the summary of the checks.
//! Nothing here touches a device.

use super::check::{default_tolerance, CheckReport, Tolerance};
use super::inputs::{generate, poison};
use crate::expr::{eval_array, ArrayEnv, ArrayValue, Tensor};
use crate::report::CheckSummary;
use crate::run::protocol::{BufferSpec, ReferenceSpec, Role, RunJob};
use std::collections::HashMap;

/// Host inputs (bytes as uploaded, values as the reference sees them) and the reference.
pub struct Data {
    pub key: u64,
    /// Every input, and every output that starts from its `init` rather than the poison.
    pub inputs: HashMap<String, (Vec<u8>, Tensor)>,
    /// `None` until computed; then `None` inside when the job has no reference.
    pub reference: Option<Option<Vec<Tensor>>>,
}

impl Data {
    /// Host bytes held: the uploaded bytes, the values the reference reads, and the reference.
    pub fn bytes(&self) -> u64 {
        let tensor = |t: &Tensor| (t.data.len() * std::mem::size_of::<f64>()) as u64;
        let inputs: u64 = (self.inputs.values())
            .map(|(b, t)| b.len() as u64 + tensor(t))
            .sum();
        let reference: u64 = (self.reference.iter().flatten().flatten())
            .map(tensor)
            .sum();
        inputs + reference
    }
}

/// Recent jobs' data, so that a job finds its inputs and reference made by an earlier job of
/// the same seed, buffers and reference: every version of one size shares them, and in watch
/// (one seed per session) a save's quick look at the size on screen finds them still here
/// after the other sizes ran. The entries other than the newest are kept within a byte budget
/// (the newest is kept whatever its size: a job is using it): over it, the largest go first,
/// so the small sizes a user looks at most stay, even beside a size larger than the budget.
pub struct DataCache {
    entries: Vec<Data>,
    budget: u64,
}

impl DataCache {
    pub fn new(budget: u64) -> DataCache {
        DataCache {
            entries: Vec::new(),
            budget,
        }
    }

    /// A budget for this machine: a quarter of the memory available now, at most 32 GiB and at
    /// least 1 GiB (Linux `/proc/meminfo`; 4 GiB where it cannot be read).
    pub fn for_this_machine() -> DataCache {
        const GIB: u64 = 1 << 30;
        let available = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .unwrap_or(16 * GIB);
        DataCache::new((available / 4).clamp(GIB, 32 * GIB))
    }

    /// Takes out the data made for `key`, if it is here.
    pub fn take(&mut self, key: u64) -> Option<Data> {
        let i = self.entries.iter().position(|d| d.key == key)?;
        Some(self.entries.remove(i))
    }

    /// Keeps `data` as the newest entry, then evicts the older ones to the budget.
    pub fn put(&mut self, data: Data) {
        self.entries.retain(|d| d.key != data.key);
        self.entries.push(data);
        loop {
            let older = &self.entries[..self.entries.len() - 1];
            if older.iter().map(Data::bytes).sum::<u64>() <= self.budget {
                break;
            }
            let largest = (0..older.len())
                .max_by_key(|&i| older[i].bytes())
                .unwrap_or(0);
            self.entries.remove(largest);
        }
    }

    /// The keys held, oldest first (for tests).
    pub fn keys(&self) -> Vec<u64> {
        self.entries.iter().map(|d| d.key).collect()
    }
}

/// Whether a buffer's starting contents are generated from its `init` (inputs, and outputs the
/// workspace gave an explicit `init`).
fn generated(b: &BufferSpec) -> bool {
    b.role == Role::Input || (b.role == Role::Output && b.initialized)
}

/// What the inputs and reference depend on: the seed, the buffers and the reference.
pub fn data_key(job: &RunJob) -> u64 {
    use std::hash::{Hash, Hasher};
    let text = serde_json::to_string(&(
        job.seed,
        job.buffers
            .iter()
            .filter(|b| b.role != Role::Scratch)
            .collect::<Vec<_>>(),
        &job.reference,
    ))
    .unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    // Data read from files is only as current as the files: a `.npy` rewritten in place (a
    // new reference, new inputs) must not be served from what is resident.
    let mut files: Vec<&std::path::Path> = job
        .buffers
        .iter()
        .filter_map(|b| match &b.init {
            crate::workspace::Init::Npy { path } => Some(path.as_path()),
            _ => None,
        })
        .collect();
    if let ReferenceSpec::Npy { outputs } = &job.reference {
        files.extend(outputs.iter().map(|(_, p)| std::path::Path::new(p)));
    }
    for f in files {
        if let Ok(m) = std::fs::metadata(f) {
            m.len().hash(&mut h);
            m.modified().ok().hash(&mut h);
        }
    }
    h.finish()
}

/// The seed of buffer `b`'s draws: the job's, mixed with the buffer's name (not its position,
/// so versions that list their buffers differently agree).
pub fn buffer_seed(job: &RunJob, b: &BufferSpec) -> u64 {
    let name_hash = b.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    });
    job.seed ^ name_hash
}

/// Makes every generated buffer of `job` from its seed.
pub fn make_inputs(job: &RunJob, key: u64) -> Result<Data, String> {
    let mut inputs = HashMap::new();
    for b in job.buffers.iter().filter(|b| generated(b)) {
        let h = generate(
            b.dtype,
            b.shape.iter().product(),
            &b.init,
            &b.shape,
            buffer_seed(job, b),
        )
        .map_err(|e| format!("buffer `{}`: {e}", b.name))?;
        inputs.insert(
            b.name.clone(),
            (
                h.bytes,
                Tensor {
                    shape: b.shape.clone(),
                    data: h.values,
                },
            ),
        );
    }
    Ok(Data {
        key,
        inputs,
        reference: None,
    })
}

impl Data {
    /// What output `b` holds before the checked run: its `init` values, or the NaN poison.
    pub fn start_of(&self, b: &BufferSpec) -> Vec<u8> {
        match self.inputs.get(&b.name) {
            Some((bytes, _)) if b.initialized => bytes.clone(),
            _ => poison(b.dtype, b.shape.iter().product()),
        }
    }

    /// The generated buffers by name, as the reference sees them.
    pub fn tensors(&self) -> HashMap<&str, &Tensor> {
        self.inputs
            .iter()
            .map(|(k, (_, t))| (k.as_str(), t))
            .collect()
    }
}

/// The outputs of `job`, in order.
pub fn outputs(job: &RunJob) -> Vec<&BufferSpec> {
    job.buffers
        .iter()
        .filter(|b| b.role == Role::Output)
        .collect()
}

/// The tolerance output `b` is checked with: the job's, else its dtype's default.
pub fn tolerance(job: &RunJob, b: &BufferSpec) -> Tolerance {
    let d = default_tolerance(b.dtype);
    Tolerance {
        rtol: job.bench.rtol.unwrap_or(d.rtol),
        atol: job.bench.atol.unwrap_or(d.atol),
    }
}

struct Inputs<'a> {
    tensors: &'a HashMap<&'a str, &'a Tensor>,
    vars: &'a [(String, i64)],
}

impl ArrayEnv for Inputs<'_> {
    fn var(&self, name: &str) -> Option<ArrayValue<'_>> {
        if let Some(t) = self.tensors.get(name) {
            return Some(ArrayValue::Tensor(t));
        }
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| ArrayValue::Scalar(*v as f64))
    }

    fn var_names(&self) -> Vec<String> {
        self.tensors
            .keys()
            .map(|k| k.to_string())
            .chain(self.vars.iter().map(|(n, _)| n.clone()))
            .collect()
    }
}

/// The reference the host computes by itself: `Some` for an expression, `.npy` files or no
/// reference (`Some(None)`); `None` when the reference is another version, which the backend
/// must run.
pub fn host_reference(
    job: &RunJob,
    outputs: &[&BufferSpec],
    host: &HashMap<&str, &Tensor>,
) -> Option<Result<Option<Vec<Tensor>>, String>> {
    match &job.reference {
        ReferenceSpec::None => Some(Ok(None)),
        ReferenceSpec::Version { .. } => None,
        ReferenceSpec::Expr {
            outputs: exprs,
            vars,
        } => Some(expr_reference(exprs, vars, outputs, host).map(Some)),
        ReferenceSpec::Npy { outputs: files } => Some(
            outputs
                .iter()
                .map(|b| {
                    let (_, path) = files
                        .iter()
                        .find(|(n, _)| n == &b.name)
                        .ok_or_else(|| format!("no reference file for `{}`", b.name))?;
                    let (shape, data) = crate::run::host::npy::read_f64(std::path::Path::new(path))
                        .map_err(|e| e.to_string())?;
                    Ok(Tensor { shape, data })
                })
                .collect::<Result<Vec<_>, String>>()
                .map(Some),
        ),
    }
}

fn expr_reference(
    exprs: &[(String, String)],
    vars: &[(String, i64)],
    outputs: &[&BufferSpec],
    host: &HashMap<&str, &Tensor>,
) -> Result<Vec<Tensor>, String> {
    let env = Inputs {
        tensors: host,
        vars,
    };
    let mut out = Vec::new();
    for b in outputs {
        let (_, text) = exprs
            .iter()
            .find(|(n, _)| n == &b.name)
            .ok_or_else(|| format!("no reference for `{}`", b.name))?;
        let expr = crate::expr::parse(text).map_err(|e| {
            format!(
                "reference for `{}`: {}",
                b.name,
                crate::expr::render_errors(text, &e)
            )
        })?;
        let t = eval_array(&expr, &env).map_err(|e| {
            format!(
                "reference for `{}`: {}",
                b.name,
                crate::expr::render_error(text, &e)
            )
        })?;
        out.push(t);
    }
    Ok(out)
}

/// One summary of the checks of every output.
pub fn summarize_checks(reports: &[(String, CheckReport)]) -> CheckSummary {
    let passed = reports.iter().all(|(_, r)| r.passed);
    let failure = reports.iter().find_map(|(n, r)| {
        r.failure.as_ref().map(|f| {
            if reports.len() > 1 {
                format!("{n}: {f}")
            } else {
                f.clone()
            }
        })
    });
    CheckSummary {
        passed,
        max_abs_error: reports
            .iter()
            .map(|(_, r)| r.max_abs_error)
            .fold(0.0, f64::max),
        rel_l2_error: reports
            .iter()
            .map(|(_, r)| r.rel_l2_error)
            .fold(0.0, f64::max),
        failure,
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    fn data(key: u64, elems: usize) -> Data {
        let t = Tensor {
            shape: vec![elems],
            data: vec![0.0; elems],
        };
        let mut inputs = HashMap::new();
        inputs.insert("a".to_string(), (vec![0u8; elems * 4], t));
        Data {
            key,
            inputs,
            reference: None,
        }
    }

    #[test]
    fn a_job_finds_its_data_after_other_sizes_ran() {
        let mut cache = DataCache::new(1 << 30);
        cache.put(data(16, 1000));
        cache.put(data(1, 10));
        cache.put(data(256, 100_000));
        assert!(
            cache.take(16).is_some(),
            "the quick look's size is still here"
        );
        assert!(cache.take(16).is_none(), "taken out while in use");
        assert_eq!(cache.keys(), vec![1, 256]);
    }

    #[test]
    fn over_budget_the_largest_older_entries_go_first_and_the_newest_stays() {
        // Each element holds 4 bytes uploaded + 8 bytes of value: 12 bytes.
        let mut cache = DataCache::new(12 * 2_000);
        cache.put(data(1, 100));
        cache.put(data(2, 1_500));
        cache.put(data(3, 300));
        cache.put(data(4, 400));
        // Older than the newest: 1,900 elements, within the budget.
        assert_eq!(cache.keys(), vec![1, 2, 3, 4]);
        cache.put(data(5, 100));
        // Older: 2,300 > 2,000: the largest (2) goes; the small ones stay.
        assert_eq!(cache.keys(), vec![1, 3, 4, 5]);
        // A newest entry over the whole budget (the 256Mi run) is kept, and does not push
        // out the small sizes beside it.
        cache.put(data(6, 10_000));
        assert_eq!(cache.keys(), vec![1, 3, 4, 5, 6]);
        // Once it is older, it is the first to go.
        cache.put(data(7, 10));
        assert_eq!(cache.keys(), vec![1, 3, 4, 5, 7]);
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    #[test]
    fn a_reference_file_rewritten_in_place_gives_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.npy");
        std::fs::write(&path, b"first").unwrap();
        let mut job = crate::run::protocol::tests::job();
        job.reference = ReferenceSpec::Npy {
            outputs: vec![("y".into(), path.display().to_string())],
        };
        let before = data_key(&job);
        assert_eq!(before, data_key(&job), "the same file, the same key");
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&path, b"other").unwrap();
        assert_ne!(
            before,
            data_key(&job),
            "new contents are not served from residency"
        );
    }
}
