//! The one error type of the Rust engine, and its single crossing into Python.
//!
//! Rust never formats a user-facing message: it reports a rule `code` plus the
//! facts (row index, path, type name, file line) and raises
//! `agent_rollout._native.NativeRowError`. The Python side formats every text
//! from the one table in `agent_rollout/_errors.py`, so both engines speak alike.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

create_exception!(
    _native,
    NativeRowError,
    PyValueError,
    "A rule broken by the input: args are (code, row index, path, fact, line, column)."
);

/// One step of a path inside a row: `prompt`, `[1]`, `.content`.
pub enum Seg {
    Index(usize),
    /// A key taken from a Python mapping (kept as the exact `str` object).
    PyKey(Py<PyAny>),
    /// A key parsed from a JSON document.
    Key(String),
}

/// A broken rule found below the row level; the row loop adds the index.
pub struct Rule {
    pub code: &'static str,
    /// Innermost segment first: segments are pushed while the error unwinds,
    /// so the happy path never pays for building paths.
    pub rev_path: Vec<Seg>,
    pub fact: Option<String>,
}

/// Everything that can stop a normalisation.
pub enum Fault {
    /// An exception raised by Python code the input ran (a generator, a
    /// mapping's `items`), or by the interpreter (memory, Ctrl-C): passed on.
    Py(PyErr),
    /// A row broke a rule.
    Row {
        rule: Rule,
        index: usize,
        line: Option<u64>,
    },
    /// The whole input broke a rule (not iterable, empty, over the cap, bad file).
    Input {
        code: &'static str,
        fact: Option<String>,
        line: Option<u64>,
        column: Option<usize>,
    },
}

impl From<PyErr> for Fault {
    fn from(err: PyErr) -> Self {
        Fault::Py(err)
    }
}

/// What a rule check below the row level returns.
pub enum Bad {
    Py(PyErr),
    Rule(Rule),
}

impl From<PyErr> for Bad {
    fn from(err: PyErr) -> Self {
        Bad::Py(err)
    }
}

impl Rule {
    pub fn new(code: &'static str, fact: Option<String>) -> Self {
        Rule {
            code,
            rev_path: Vec::new(),
            fact,
        }
    }

    /// Prepend one path segment while the error travels outwards.
    pub fn within(mut self, seg: Seg) -> Self {
        self.rev_path.push(seg);
        self
    }
}

impl Bad {
    pub fn rule(code: &'static str, fact: Option<String>) -> Self {
        Bad::Rule(Rule::new(code, fact))
    }

    /// Prepend one path segment while the error travels outwards.
    pub fn within(self, seg: Seg) -> Self {
        match self {
            Bad::Rule(rule) => Bad::Rule(rule.within(seg)),
            other => other,
        }
    }

    pub fn at_row(self, index: usize, line: Option<u64>) -> Fault {
        match self {
            Bad::Py(err) => Fault::Py(err),
            Bad::Rule(rule) => Fault::Row { rule, index, line },
        }
    }
}

impl Fault {
    pub fn input(code: &'static str, fact: Option<String>) -> Self {
        Fault::Input {
            code,
            fact,
            line: None,
            column: None,
        }
    }

    /// A problem at a place in a file (`line`, and `column` where known).
    pub fn at_line(
        code: &'static str,
        fact: Option<String>,
        line: u64,
        column: Option<usize>,
    ) -> Self {
        Fault::Input {
            code,
            fact,
            line: Some(line),
            column,
        }
    }

    /// Turn the fault into the Python exception, once, at the boundary.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let built = match self {
            Fault::Py(err) => return err,
            Fault::Row { rule, index, line } => {
                let segs: Vec<Py<PyAny>> = rule
                    .rev_path
                    .into_iter()
                    .rev()
                    .map(|seg| seg_to_py(py, seg))
                    .collect();
                PyTuple::new(py, segs).map(|path| {
                    NativeRowError::new_err((
                        rule.code,
                        Some(index),
                        path.unbind(),
                        rule.fact,
                        line,
                        None::<usize>,
                    ))
                })
            }
            Fault::Input {
                code,
                fact,
                line,
                column,
            } => Ok(NativeRowError::new_err((
                code,
                None::<usize>,
                PyTuple::empty(py).unbind(),
                fact,
                line,
                column,
            ))),
        };
        built.unwrap_or_else(|err| err)
    }
}

fn seg_to_py(py: Python<'_>, seg: Seg) -> Py<PyAny> {
    match seg {
        Seg::Index(i) => i
            .into_pyobject(py)
            .map(|v| v.into_any().unbind())
            .unwrap_or_else(|never| match never {}),
        Seg::PyKey(key) => key,
        Seg::Key(key) => pyo3::types::PyString::new(py, &key).into_any().unbind(),
    }
}
