//! What the Roofline tab shows, worked out from the state and nothing else: the ceilings of the
//! device (the bandwidth peak's slope, the FP32 and tensor-core peaks), each version's point at
//! the viewed size (its arithmetic intensity and achieved FLOP/s), and, for every version that
//! gets no point, why. The drawing (`plot`, `mod.rs`) only reads a [`Roofline`].
//!
//! A point's intensity has a [`IntensitySource`]. Today every one comes from the workspace's
//! `flops` and `bytes` expressions, which the planner evaluates at each size into the result's
//! `flops` and `bytes`; when runs carry hardware counters (DRAM bytes moved, FLOPs executed),
//! [`intensity`] is the one place that should prefer them and say `Counted`.

use crate::report::{RunResult, Status};
use crate::ui::app::{App, GpuState, VersionStatus};
use crate::ui::panels::format::result_label;

/// Where a point's arithmetic intensity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntensitySource {
    /// The workspace's `flops` over its `bytes`, evaluated at the size: the work the version
    /// must do, not what the hardware counted.
    FlopsBytes,
    /// FLOPs and DRAM bytes counted by the hardware during the run (not yet collected).
    Counted,
}

impl IntensitySource {
    pub fn label(self) -> &'static str {
        match self {
            IntensitySource::FlopsBytes => "from flops/bytes",
            IntensitySource::Counted => "counted",
        }
    }
}

/// One placed version: `flops_per_s` achieved (its `flops` over its median time, as the
/// Compute panel's TFLOP/s) at `intensity` flop per byte.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The version's name; a sweep's best configuration goes by its sweep's name.
    pub name: String,
    /// Index into `App::versions` (for a sweep, of its best configuration).
    pub version: usize,
    pub intensity: f64,
    pub flops_per_s: f64,
    pub source: IntensitySource,
}

/// A version with no point, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    pub name: String,
    pub why: String,
}

/// The device's ceilings, in bytes/s and FLOP/s; `None` where unknown.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ceilings {
    pub bytes_per_s: Option<f64>,
    pub fp32: Option<f64>,
    pub tensor: Option<f64>,
}

impl Ceilings {
    /// The intensity (flop/byte) where the bandwidth slope meets `peak` (FLOP/s).
    pub fn ridge(&self, peak: f64) -> Option<f64> {
        self.bytes_per_s.filter(|b| *b > 0.0).map(|b| peak / b)
    }

    pub fn any(&self) -> bool {
        self.bytes_per_s.is_some() || self.fp32.is_some() || self.tensor.is_some()
    }
}

/// Everything the Roofline tab draws at the viewed size.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    pub ceilings: Ceilings,
    /// How the bandwidth peak was obtained (`measured copy peak` ...), where there is one.
    pub bandwidth_kind: Option<&'static str>,
    /// What is missing of the ceilings and why (no GPU, an arch without known peaks).
    pub device_note: Option<String>,
    pub points: Vec<Point>,
    pub unplaced: Vec<Unplaced>,
    /// Some versions are swept: each sweep is placed by its best configuration.
    pub swept: bool,
}

impl Roofline {
    /// The sources of the placed points' intensities, each once, in the order first met.
    pub fn sources(&self) -> Vec<IntensitySource> {
        let mut out = Vec::new();
        for p in &self.points {
            if !out.contains(&p.source) {
                out.push(p.source);
            }
        }
        out
    }
}

/// A result's arithmetic intensity and where it came from: today from the `flops` and `bytes`
/// the planner evaluated from the workspace's expressions at the result's size.
pub fn intensity(r: &RunResult) -> Option<(f64, IntensitySource)> {
    let (flops, bytes) = (r.flops?, r.bytes.filter(|b| *b > 0)?);
    let i = flops as f64 / bytes as f64;
    (i.is_finite() && i > 0.0).then_some((i, IntensitySource::FlopsBytes))
}

/// The point of version `i` at the viewed size, or why it has none.
fn place(app: &App, i: usize) -> Result<Point, String> {
    let v = &app.versions[i];
    let size = app
        .workspace
        .sizes
        .get(app.size)
        .map_or("", |s| s.name.as_str());
    // Without a `flops` expression no version can ever be placed: that first.
    if app.workspace.flops.is_none() {
        return Err("the workspace has no `flops`".into());
    }
    let Some(r) = v.results.get(app.size).and_then(Option::as_ref) else {
        return Err(match v.status {
            VersionStatus::CompileError => "compile error".into(),
            s if s.busy() => format!("{}…", s.label()),
            VersionStatus::Idle | VersionStatus::Queued => "not run yet".into(),
            _ => format!("no result at {size}"),
        });
    };
    if r.status != Status::Ok {
        return Err(result_label(r.status));
    }
    let Some((intensity, source)) = intensity(r) else {
        return Err(format!("no flops or bytes at {size}"));
    };
    let Some(gflops) = r.gflops.filter(|g| g.is_finite() && *g > 0.0) else {
        return Err(match r.backend {
            Some(_) => "checked on the CPU, not timed".into(),
            None => "not timed".into(),
        });
    };
    Ok(Point {
        name: v.name.clone(),
        version: i,
        intensity,
        flops_per_s: gflops * 1e9,
        source,
    })
}

/// The ceilings of the GPU, if there is one, how its bandwidth peak was obtained, and what is
/// missing of them.
fn ceilings(app: &App) -> (Ceilings, Option<&'static str>, Option<String>) {
    let d = match &app.gpu {
        GpuState::Present(d) => d,
        GpuState::Probing => {
            let note = "Looking for a GPU…: no ceilings yet";
            return (Ceilings::default(), None, Some(note.into()));
        }
        GpuState::Absent(_) => {
            let note = "No GPU (see Timing): no ceilings";
            return (Ceilings::default(), None, Some(note.into()));
        }
    };
    let (peak, kind) = d.peak();
    let c = Ceilings {
        bytes_per_s: peak.map(|g| g * 1e9),
        fp32: d.fp32_peak_tflops().map(|t| t * 1e12),
        tensor: d.tensor_peak_tflops().map(|t| t * 1e12),
    };
    let mut missing = Vec::new();
    if c.bytes_per_s.is_none() {
        missing.push("bandwidth");
    }
    if c.fp32.is_none() {
        missing.push("FP32");
    }
    if c.tensor.is_none() {
        missing.push("tensor-core");
    }
    let note = (!missing.is_empty())
        .then(|| format!("No {} peak known for {}", missing.join(" or "), d.arch));
    (c, peak.map(|_| kind), note)
}

/// The Roofline at the viewed size. Versions of one sweep become one point, their fastest
/// configuration's (the Sweep tab has them all); a sweep with none placed is listed once, with
/// its first configuration's reason.
pub fn build(app: &App) -> Roofline {
    let (ceilings, bandwidth_kind, device_note) = ceilings(app);
    let mut points: Vec<Point> = Vec::new();
    let mut unplaced: Vec<Unplaced> = Vec::new();
    // Per sweep (by parent name): the index into `points` or `unplaced` it went to.
    let mut sweeps: Vec<(String, Result<usize, usize>)> = Vec::new();
    for i in 0..app.versions.len() {
        let parent = app
            .workspace
            .versions
            .get(i)
            .filter(|w| w.name == app.versions[i].name)
            .and_then(|w| w.sweep.as_ref())
            .map(|p| p.parent.clone());
        let placed = place(app, i);
        let Some(parent) = parent else {
            match placed {
                Ok(p) => points.push(p),
                Err(why) => unplaced.push(Unplaced {
                    name: app.versions[i].name.clone(),
                    why,
                }),
            }
            continue;
        };
        let seen = sweeps.iter_mut().find(|(n, _)| *n == parent);
        match (seen, placed) {
            (None, Ok(p)) => {
                sweeps.push((parent.clone(), Ok(points.len())));
                points.push(Point { name: parent, ..p });
            }
            (None, Err(why)) => {
                sweeps.push((parent.clone(), Err(unplaced.len())));
                unplaced.push(Unplaced { name: parent, why });
            }
            (Some((_, slot)), Ok(p)) => match *slot {
                Ok(at) if p.flops_per_s > points[at].flops_per_s => {
                    points[at] = Point { name: parent, ..p };
                }
                Ok(_) => {}
                Err(at) => {
                    // The sweep's first placed configuration takes its entry off the list.
                    unplaced[at].why.clear();
                    *slot = Ok(points.len());
                    points.push(Point { name: parent, ..p });
                }
            },
            (Some(_), Err(_)) => {}
        }
    }
    unplaced.retain(|u| !u.why.is_empty());
    Roofline {
        ceilings,
        bandwidth_kind,
        device_note,
        points,
        unplaced,
        swept: !sweeps.is_empty(),
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
