//! `agent_rollout._native`: the bindings, and nothing else.

mod arrow;
mod errors;
mod files;
mod json;
mod jsonl;
mod rows;
mod stats;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use arrow::{ArrowBatch, Buffer, Column};
use errors::{Code, NativeRowError, Reason};
use files::{FileLimits, FileStats};
use stats::RowStats;

/// Normalise Python rollout rows; see `agent_rollout.normalise_rollout_rows`.
#[pyfunction]
fn normalise_rows<'py>(
    rows: &Bound<'py, PyAny>,
    max_rows: usize,
    max_depth: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let limits = rows::Limits {
        max_rows,
        max_depth: errors::nesting_limit("max_depth", max_depth)?,
    };
    rows::normalise_rows(rows, limits).map_err(|fault| fault.into_pyerr(rows.py()))
}

/// Read a rollout JSONL file (`-`: stdin) into a tuple of normalised rows.
///
/// Every path here is a `PathBuf`: PyO3 encodes a `str` with the filesystem
/// encoding and `surrogateescape` (`os.fsencode`), so a name that is not
/// UTF-8 reaches the file as the bytes it is (a `&str` would refuse it).
#[pyfunction]
fn read_jsonl<'py>(
    py: Python<'py>,
    path: PathBuf,
    limits: FileLimits,
) -> PyResult<Bound<'py, PyTuple>> {
    files::read_rows(py, &path, limits).map_err(|fault| fault.into_pyerr(py))
}

/// Normalise a rollout JSONL file into canonical JSONL at `dest`, resolved by
/// `agent_rollout._files.destination`: `dest_kind` is "file" (written aside,
/// renamed), "stream" (opened in place) or "fd" (descriptor `dest_fd`).
/// `progress(rows, lines, bytes_in)` is called after each chunk when given.
/// `on_bad` is "stop" (the first bad row is raised), "report" (every bad row
/// counted, nothing written) or "skip" (bad rows left out); the first
/// `keep_bad` bad rows come back on the stats (`bad`), or on the error that
/// ended the run (`bad_rows`). `gzip_level` (0-9): the output is gzip, one
/// member per chunk.
#[pyfunction]
#[pyo3(signature = (src, dest, dest_kind, dest_fd, limits, progress=None, on_bad="stop", keep_bad=0, gzip_level=None))]
#[allow(clippy::too_many_arguments)]
fn normalise_file(
    py: Python<'_>,
    src: PathBuf,
    dest: PathBuf,
    dest_kind: &str,
    dest_fd: i32,
    limits: FileLimits,
    progress: Option<Py<PyAny>>,
    on_bad: &str,
    keep_bad: usize,
    gzip_level: Option<u32>,
) -> PyResult<FileStats> {
    let kind = match dest_kind {
        "file" => files::DestKind::File,
        "stream" => files::DestKind::Stream,
        "fd" => files::DestKind::Fd(dest_fd),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "dest_kind must be 'file', 'stream' or 'fd', got {other:?}"
            )))
        }
    };
    let on_bad = on_bad_of(on_bad)?;
    files::normalise_file(
        py, &src, &dest, kind, limits, progress, on_bad, keep_bad, gzip_level,
    )
}

/// `on_bad` as Python passes it: "stop", "report" or "skip".
fn on_bad_of(on_bad: &str) -> PyResult<files::OnBad> {
    match on_bad {
        "stop" => Ok(files::OnBad::Stop),
        "report" => Ok(files::OnBad::Report),
        "skip" => Ok(files::OnBad::Skip),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "on_bad must be 'stop', 'report' or 'skip', got {other:?}"
        ))),
    }
}

/// Rollout rows as Arrow record batches (`ArrowBatch`, see rust/arrow/), each
/// typed from its own rows: `first` is the caller's rows (None: run the row
/// rules, then call again), else rows fresh from the row rules, which no one
/// else holds (the walk borrows from them without checking the collector).
/// `max_fields` and `typed_depth` bound the Arrow shape (`arrow::Shape`).
#[pyfunction]
#[pyo3(signature = (rows, prompt_kind, batch_rows, batch_bytes, max_rows, max_depth, max_int_digits, max_fields, typed_depth, first))]
#[allow(clippy::too_many_arguments)]
fn rows_to_arrow<'py>(
    rows: &Bound<'py, PyAny>,
    prompt_kind: u8,
    batch_rows: usize,
    batch_bytes: usize,
    max_rows: usize,
    max_depth: usize,
    max_int_digits: usize,
    max_fields: usize,
    typed_depth: usize,
    first: bool,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let rule = arrow::KindRule::from_code(prompt_kind)?;
    let pass = if first {
        arrow::Pass::First
    } else {
        arrow::Pass::Normalised
    };
    arrow::rows_to_batches(
        rows,
        rule,
        batch_rows.max(1),
        batch_bytes,
        max_rows,
        arrow::Walk {
            max_depth: errors::nesting_limit("max_depth", max_depth)?,
            max_int_digits,
            ints: arrow::IntRule::of(rows.py())?,
            shape: arrow::Shape {
                max_fields,
                typed_depth,
            },
        },
        pass,
    )
    .map_err(|fault| fault.into_pyerr(rows.py()))
}

/// Read a rollout JSONL file as Arrow record batches, calling
/// `on_batch(ArrowBatch)` per chunk in order; returns the run's statistics.
/// `max_fields` and `typed_depth` bound the Arrow shape (`arrow::Shape`).
/// `on_bad` and `keep_bad` as for `normalise_file` (a row whose prompt is not
/// of the table's kind is a bad row too); with "report" no batch is handed
/// over from the first chunk holding a bad row on.
#[pyfunction]
#[pyo3(signature = (src, limits, prompt_kind, max_fields, typed_depth, on_batch, progress=None, on_bad="stop", keep_bad=0))]
#[allow(clippy::too_many_arguments)]
fn read_jsonl_arrow(
    py: Python<'_>,
    src: PathBuf,
    limits: FileLimits,
    prompt_kind: u8,
    max_fields: usize,
    typed_depth: usize,
    on_batch: &Bound<'_, PyAny>,
    progress: Option<&Bound<'_, PyAny>>,
    on_bad: &str,
    keep_bad: usize,
) -> PyResult<FileStats> {
    let rule = arrow::KindRule::from_code(prompt_kind)?;
    let shape = arrow::Shape {
        max_fields,
        typed_depth,
    };
    let on_bad = on_bad_of(on_bad)?;
    arrow::read_file(
        py, &src, limits, rule, shape, on_batch, progress, on_bad, keep_bad,
    )
}

/// What a rollout JSONL file holds (`agent-rollout stats`): see rust/stats.rs.
/// At most `max_names` dropped key names are kept, and the faults of the first
/// `keep` bad rows (`FileStats.bad`); `progress(rows, lines, bytes_in)` is
/// called after each chunk when given.
#[pyfunction]
#[pyo3(signature = (src, limits, max_names, keep, progress=None))]
fn read_jsonl_stats(
    py: Python<'_>,
    src: PathBuf,
    limits: FileLimits,
    max_names: usize,
    keep: usize,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<RowStats> {
    stats::file_stats(py, &src, limits, max_names, keep, progress)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(normalise_rows, m)?)?;
    m.add_function(wrap_pyfunction!(read_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(normalise_file, m)?)?;
    m.add_function(wrap_pyfunction!(rows_to_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(read_jsonl_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(read_jsonl_stats, m)?)?;
    m.add_class::<FileLimits>()?;
    m.add_class::<FileStats>()?;
    m.add_class::<RowStats>()?;
    m.add_class::<ArrowBatch>()?;
    m.add_class::<Column>()?;
    m.add_class::<Buffer>()?;
    m.add("NativeRowError", py.get_type::<NativeRowError>())?;
    m.add(
        "CODES",
        PyTuple::new(py, Code::ALL.iter().map(|code| code.as_str()))?,
    )?;
    // The build profile, for `agent-rollout --version` and the demo's warning: a debug
    // build (debug assertions on, no optimisation) is several times slower.
    m.add(
        "BUILD_PROFILE",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )?;
    m.add(
        "JSON_REASONS",
        PyTuple::new(py, Reason::ALL.iter().map(|reason| reason.as_str()))?,
    )?;
    Ok(())
}
