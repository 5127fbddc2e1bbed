//! The dense `f64` array that reference expressions compute on: a shape and its elements in
//! row-major order, nothing more, so inputs can be handed over without conversion and results
//! compared element by element with what a kernel produced.

use serde::{Deserialize, Serialize};

/// A dense row-major array of `f64`. A 0-d tensor (`shape` empty) holds one number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

/// The number of elements of `shape`, or `None` if it does not fit in a `usize`.
pub(crate) fn numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

impl Tensor {
    /// A tensor of `shape` holding `data`; fails if their sizes disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f64>) -> Result<Self, String> {
        match numel(&shape) {
            Some(n) if n == data.len() => Ok(Tensor { shape, data }),
            Some(n) => Err(format!(
                "shape {shape:?} holds {n} elements, but {} were given",
                data.len()
            )),
            None => Err(format!("shape {shape:?} is too large")),
        }
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(v: f64) -> Self {
        Tensor {
            shape: Vec::new(),
            data: vec![v],
        }
    }

    /// A 1-d tensor holding `data`.
    pub fn vector(data: Vec<f64>) -> Self {
        Tensor {
            shape: vec![data.len()],
            data,
        }
    }

    /// A tensor of `shape` with every element `v`. Panics if `shape` overflows `usize`.
    pub fn full(shape: Vec<usize>, v: f64) -> Self {
        let n = numel(&shape).expect("tensor shape overflows usize");
        Tensor {
            shape,
            data: vec![v; n],
        }
    }

    /// A tensor of `shape` filled with zeros. Panics if `shape` overflows `usize`.
    pub fn zeros(shape: Vec<usize>) -> Self {
        Self::full(shape, 0.0)
    }

    /// A tensor of `shape` whose element at flat (row-major) index `i` is `f(i)`.
    /// Panics if `shape` overflows `usize`.
    pub fn from_fn(shape: Vec<usize>, f: impl FnMut(usize) -> f64) -> Self {
        let n = numel(&shape).expect("tensor shape overflows usize");
        Tensor {
            shape,
            data: (0..n).map(f).collect(),
        }
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// The number of dimensions (0 for a single number).
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The only element, if there is exactly one.
    pub fn item(&self) -> Option<f64> {
        match self.data.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The element at multi-index `index`, if it is in bounds.
    pub fn get(&self, index: &[usize]) -> Option<f64> {
        if index.len() != self.shape.len() {
            return None;
        }
        let mut flat = 0;
        for (&i, &d) in index.iter().zip(&self.shape) {
            if i >= d {
                return None;
            }
            flat = flat * d + i;
        }
        self.data.get(flat).copied()
    }
}
