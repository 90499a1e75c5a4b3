//! `agent_rollout._native`: the bindings, and nothing else.

mod errors;
mod rows;

use pyo3::prelude::*;

use errors::NativeRowError;

/// Normalise Python rollout rows; see `agent_rollout.normalise_rollout_rows`.
#[pyfunction]
fn normalise_rows<'py>(
    rows: &Bound<'py, PyAny>,
    max_rows: usize,
    max_depth: usize,
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let limits = rows::Limits {
        max_rows,
        max_depth,
    };
    rows::normalise_rows(rows, limits).map_err(|fault| fault.into_pyerr(rows.py()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalise_rows, m)?)?;
    m.add("NativeRowError", m.py().get_type::<NativeRowError>())?;
    Ok(())
}
