//! The row rules over Python objects: what `normalise_rollout_rows` does on the
//! Rust engine. The pure-Python twin in `agent_rollout/_rows.py` follows the
//! same steps in the same order, so both report the first broken rule alike.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple,
};

use crate::errors::{Bad, Fault, Seg};

/// Rows between two checks for Ctrl-C.
const SIGNAL_EVERY: usize = 4096;

/// Pauses CPython's cyclic collector while rows are built, and restores the
/// caller's setting on every exit path (return, error or panic unwinding).
/// Building 100k rows creates several hundred thousand containers; with the
/// collector running, its repeated passes over them cost more than the work.
pub struct GcPause {
    was_enabled: bool,
}

impl GcPause {
    pub fn new(_py: Python<'_>) -> Self {
        // SAFETY: the caller is attached to the interpreter (it holds `_py`).
        let was_enabled = unsafe { ffi::PyGC_Disable() } == 1;
        GcPause { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: a GcPause only exists while attached to the interpreter.
            unsafe {
                ffi::PyGC_Enable();
            }
        }
    }
}

/// Limits handed over from Python (`agent_rollout._backends`).
#[derive(Clone, Copy)]
pub struct Limits {
    pub max_rows: usize,
    pub max_depth: usize,
}

fn type_name(obj: &Bound<'_, PyAny>) -> Option<String> {
    obj.get_type().name().ok().map(|n| n.to_string())
}

/// Normalise every row of `rows` into a tuple of `{prompt, answer?}` dicts.
pub fn normalise_rows<'py>(
    rows: &Bound<'py, PyAny>,
    limits: Limits,
) -> Result<Bound<'py, PyTuple>, Fault> {
    let py = rows.py();
    if rows.is_none()
        || rows.is_instance_of::<PyString>()
        || rows.is_instance_of::<PyBytes>()
        || rows.is_instance_of::<PyByteArray>()
    {
        return Err(Fault::input("input_not_iterable", type_name(rows)));
    }
    if rows.cast::<PyMapping>().is_ok() {
        return Err(Fault::input("input_is_mapping", type_name(rows)));
    }
    // A plain list or tuple is read in place. Anything else (a generator, a
    // custom iterable) runs the caller's code: its rows, at most one past the
    // cap, are pulled first with the collector on, so that code never runs
    // with the collector paused.
    let pulled = if rows.is_exact_instance_of::<PyList>() || rows.is_exact_instance_of::<PyTuple>()
    {
        None
    } else {
        let iter = match rows.try_iter() {
            Ok(iter) => iter,
            Err(err) if err.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                return Err(Fault::input("input_not_iterable", type_name(rows)));
            }
            Err(err) => return Err(Fault::Py(err)),
        };
        let mut items = Vec::new();
        for item in iter {
            items.push(item?);
            if items.len() > limits.max_rows {
                break;
            }
        }
        Some(items)
    };
    // Paused until the result tuple exists; the collection the new objects
    // call for then runs once, at the caller's next allocation.
    let _pause = GcPause::new(py);
    let mut out: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut take = |index: usize, row: Bound<'py, PyAny>| -> Result<(), Fault> {
        if index >= limits.max_rows {
            return Err(Fault::input("too_many_rows", None));
        }
        if index % SIGNAL_EVERY == SIGNAL_EVERY - 1 {
            py.check_signals()?;
        }
        let normalised = normalise_row(&row, limits).map_err(|bad| bad.at_row(index, None))?;
        out.push(normalised.into_any());
        Ok(())
    };
    if let Some(items) = pulled {
        for (index, item) in items.into_iter().enumerate() {
            take(index, item)?;
        }
    } else if let Ok(list) = rows.cast_exact::<PyList>() {
        // Index it directly, re-reading its length each step as its own
        // iterator would, in case a row's `get` changes it.
        let mut index = 0;
        while index < list.len() {
            take(index, list.get_item(index)?)?;
            index += 1;
        }
    } else if let Ok(tuple) = rows.cast_exact::<PyTuple>() {
        for (index, item) in tuple.iter().enumerate() {
            take(index, item)?;
        }
    }
    if out.is_empty() {
        return Err(Fault::input("no_rows", None));
    }
    Ok(PyTuple::new(py, out)?)
}

/// Look a key up in a row: the C lookup for a plain dict, `.get()` otherwise.
fn row_get<'py>(
    row: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> Result<Option<Bound<'py, PyAny>>, Bad> {
    let found = if let Ok(dict) = row.cast_exact::<PyDict>() {
        dict.get_item(key)?
    } else {
        Some(row.call_method1(intern!(row.py(), "get"), (key,))?)
    };
    Ok(found.filter(|v| !v.is_none()))
}

/// The common case, fast: a plain dict with a non-empty exact-`str` prompt
/// and an exact-`str`, `None` or missing answer. Only C-level dict lookups
/// run (no Python code), so taking this path or the general one cannot be
/// told apart. `None`: not such a row.
fn flat_text_row<'py>(row: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = row.py();
    if !row.is_exact_instance_of::<PyDict>() {
        return Ok(None);
    }
    let prompt_key = intern!(py, "prompt");
    let answer_key = intern!(py, "answer");
    // SAFETY: attached; the lookups return borrowed references that are used
    // at once, while `row` (which owns them) is alive and unchanged.
    unsafe {
        let prompt = ffi::PyDict_GetItemWithError(row.as_ptr(), prompt_key.as_ptr());
        if prompt.is_null() {
            // Missing, or a key's `__eq__` raised: the general path decides.
            return match PyErr::take(py) {
                Some(err) => Err(err),
                None => Ok(None),
            };
        }
        if ffi::PyUnicode_CheckExact(prompt) == 0 || ffi::PyUnicode_GetLength(prompt) == 0 {
            return Ok(None);
        }
        let answer = ffi::PyDict_GetItemWithError(row.as_ptr(), answer_key.as_ptr());
        if answer.is_null() {
            if let Some(err) = PyErr::take(py) {
                return Err(err);
            }
        } else if answer != ffi::Py_None() && ffi::PyUnicode_CheckExact(answer) == 0 {
            return Ok(None);
        }
        let out = PyDict::new(py);
        if ffi::PyDict_SetItem(out.as_ptr(), prompt_key.as_ptr(), prompt) != 0 {
            return Err(PyErr::fetch(py));
        }
        if !answer.is_null()
            && answer != ffi::Py_None()
            && ffi::PyUnicode_GetLength(answer) != 0
            && ffi::PyDict_SetItem(out.as_ptr(), answer_key.as_ptr(), answer) != 0
        {
            return Err(PyErr::fetch(py));
        }
        untrack_atomic_dict(&out);
        Ok(Some(out))
    }
}

fn normalise_row<'py>(row: &Bound<'py, PyAny>, limits: Limits) -> Result<Bound<'py, PyDict>, Bad> {
    if let Some(out) = flat_text_row(row)? {
        return Ok(out);
    }
    let py = row.py();
    if !row.is_exact_instance_of::<PyDict>() && row.cast::<PyMapping>().is_err() {
        return Err(Bad::rule("row_not_mapping", type_name(row)));
    }
    let prompt_key = intern!(py, "prompt");
    let answer_key = intern!(py, "answer");
    let out = PyDict::new(py);

    let prompt = row_get(row, prompt_key)?;
    let Some(prompt) = prompt else {
        return Err(Bad::rule("prompt_missing", None).within(Seg::Key("prompt".into())));
    };
    let prompt_is_text = prompt.is_instance_of::<PyString>();
    let prompt_value =
        normalise_prompt(&prompt, limits).map_err(|bad| bad.within(Seg::Key("prompt".into())))?;
    out.set_item(prompt_key, prompt_value)?;

    if let Some(answer) = row_get(row, answer_key)? {
        let Ok(text) = answer.cast::<PyString>() else {
            return Err(
                Bad::rule("answer_type", type_name(&answer)).within(Seg::Key("answer".into()))
            );
        };
        if str_len(text) != 0 {
            out.set_item(answer_key, exact_str(text)?)?;
        }
    }
    if prompt_is_text {
        untrack_atomic_dict(&out);
    }
    Ok(out)
}

fn normalise_prompt<'py>(
    prompt: &Bound<'py, PyAny>,
    limits: Limits,
) -> Result<Bound<'py, PyAny>, Bad> {
    if let Ok(text) = prompt.cast::<PyString>() {
        if str_len(text) == 0 {
            return Err(Bad::rule("prompt_empty", None));
        }
        return Ok(exact_str(text)?.into_any());
    }
    let Ok(messages) = prompt.cast::<PyList>() else {
        return Err(Bad::rule("prompt_type", type_name(prompt)));
    };
    if messages.is_empty() {
        return Err(Bad::rule("prompt_empty", None));
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        let message = messages.get_item(i)?;
        out.push(normalise_message(&message, limits).map_err(|bad| bad.within(Seg::Index(i)))?);
        i += 1;
    }
    Ok(PyList::new(prompt.py(), out)?.into_any())
}

fn normalise_message<'py>(
    message: &Bound<'py, PyAny>,
    limits: Limits,
) -> Result<Bound<'py, PyAny>, Bad> {
    let py = message.py();
    let Some(out) = normalise_mapping(message, 1, limits)? else {
        return Err(Bad::rule("message_not_mapping", type_name(message)));
    };
    let role_key = intern!(py, "role");
    let Some(role) = out.get_item(role_key)? else {
        return Err(Bad::rule("role_missing", None));
    };
    let role_ok = match role.cast::<PyString>() {
        Ok(text) => str_len(text) != 0,
        Err(_) => false,
    };
    if !role_ok {
        let fact = if role.is_instance_of::<PyString>() {
            Some(String::new())
        } else {
            type_name(&role)
        };
        let code = if role.is_instance_of::<PyString>() {
            "role_empty"
        } else {
            "role_type"
        };
        return Err(Bad::rule(code, fact).within(Seg::Key("role".into())));
    }
    Ok(out.into_any())
}

/// The length of a str in code points, read from the object (never `__len__`).
fn str_len(text: &Bound<'_, PyString>) -> isize {
    // SAFETY: attached, and `text` is a str (or subclass) instance.
    unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) }
}

/// A `str` of the exact built-in type: the object itself when it already is
/// one (strings are immutable), a copy for a subclass (no user code runs).
fn exact_str<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    if text.is_exact_instance_of::<PyString>() {
        return Ok(text.clone());
    }
    // SAFETY: attached to the interpreter; PyUnicode_FromObject returns a new
    // reference to an exact str copy, or NULL with an exception set.
    unsafe {
        Bound::from_owned_ptr_or_err(text.py(), ffi::PyUnicode_FromObject(text.as_ptr()))
            .map(|obj| obj.cast_into_unchecked::<PyString>())
    }
}

/// Convert a mapping (dict, dict subclass or other `Mapping`) at nesting
/// `level` into a fresh dict. `Ok(None)`: the object is not a mapping at all.
fn normalise_mapping<'py>(
    obj: &Bound<'py, PyAny>,
    level: usize,
    limits: Limits,
) -> Result<Option<Bound<'py, PyDict>>, Bad> {
    let py = obj.py();
    if let Ok(dict) = obj.cast::<PyDict>() {
        check_depth(level, limits)?;
        if let Some(copy) = copy_flat_dict(dict)? {
            return Ok(Some(copy));
        }
        let out = PyDict::new(py);
        let mut atomic = true;
        let size = dict.len();
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key_ptr: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value_ptr: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: PyDict_Next hands out borrowed references, which are turned
        // into owned ones at once, before any Python code can run; the size
        // check below stops the walk if that code resized the dict.
        while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key_ptr, &mut value_ptr) }
            != 0
        {
            let (key, value) = unsafe {
                (
                    Bound::from_borrowed_ptr(py, key_ptr),
                    Bound::from_borrowed_ptr(py, value_ptr),
                )
            };
            atomic &= put_entry(&out, &key, &value, level, limits)?;
            if dict.len() != size {
                return Err(Bad::Py(pyo3::exceptions::PyRuntimeError::new_err(
                    "dictionary changed size during iteration",
                )));
            }
        }
        if atomic {
            untrack_atomic_dict(&out);
        }
        return Ok(Some(out));
    }
    if obj.cast::<PyMapping>().is_err() {
        return Ok(None);
    }
    check_depth(level, limits)?;
    let out = PyDict::new(py);
    let mut atomic = true;
    for entry in obj.call_method0(intern!(py, "items"))?.try_iter()? {
        let entry = entry?;
        let pair = match entry.cast::<PyTuple>() {
            Ok(pair) if pair.len() == 2 => pair,
            _ => {
                let message = format!(
                    "{}.items() must yield (key, value) tuples, got {}",
                    type_name(obj).unwrap_or_default(),
                    type_name(&entry).unwrap_or_default()
                );
                return Err(Bad::Py(pyo3::exceptions::PyTypeError::new_err(message)));
            }
        };
        let (key, value) = (pair.get_item(0)?, pair.get_item(1)?);
        atomic &= put_entry(&out, &key, &value, level, limits)?;
    }
    if atomic {
        untrack_atomic_dict(&out);
    }
    Ok(Some(out))
}

/// The common case, fast: a plain dict whose keys are all exact `str` and
/// whose values are all exact `str`, `int`, `bool`, `None` or finite `float`
/// is valid as it stands, so CPython's own `PyDict_Copy` (a copy of the key
/// table) replaces rebuilding it entry by entry. `None`: not such a dict (the
/// caller then walks it and reports the first broken rule). Only reads are
/// made, so no Python code runs.
fn copy_flat_dict<'py>(dict: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyDict>>> {
    if !dict.is_exact_instance_of::<PyDict>() {
        return Ok(None);
    }
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key_ptr: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value_ptr: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: attached; borrowed references are only inspected (type checks
    // and a float read), never kept or passed to code that could run Python.
    unsafe {
        while ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key_ptr, &mut value_ptr) != 0 {
            if ffi::PyUnicode_CheckExact(key_ptr) == 0 {
                return Ok(None);
            }
            let flat = ffi::PyUnicode_CheckExact(value_ptr) != 0
                || ffi::PyLong_CheckExact(value_ptr) != 0
                || ffi::PyBool_Check(value_ptr) != 0
                || value_ptr == ffi::Py_None()
                || (ffi::PyFloat_CheckExact(value_ptr) != 0
                    && ffi::PyFloat_AsDouble(value_ptr).is_finite());
            if !flat {
                return Ok(None);
            }
        }
        let copy = Bound::from_owned_ptr_or_err(dict.py(), ffi::PyDict_Copy(dict.as_ptr()))?
            .cast_into_unchecked::<PyDict>();
        untrack_atomic_dict(&copy);
        Ok(Some(copy))
    }
}

fn check_depth(level: usize, limits: Limits) -> Result<(), Bad> {
    if level > limits.max_depth {
        return Err(Bad::rule("too_deep", None));
    }
    Ok(())
}

fn put_entry<'py>(
    out: &Bound<'py, PyDict>,
    key: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    level: usize,
    limits: Limits,
) -> Result<bool, Bad> {
    let Ok(key) = key.cast::<PyString>() else {
        return Err(Bad::rule("key_not_str", type_name(key)));
    };
    let key = exact_str(key)?;
    let value = normalise_value(value, level + 1, limits)
        .map_err(|bad| bad.within(Seg::PyKey(key.clone().into_any().unbind())))?;
    let atomic = is_atomic(&value);
    out.set_item(key, value)?;
    Ok(atomic)
}

/// Values the cyclic collector never tracks (they cannot hold references).
fn is_atomic(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyString>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_none()
}

/// Stop the collector tracking a fresh dict that holds only atomic values, as
/// CPython itself does for such dicts (`_PyDict_MaybeUntrack`): it cannot be
/// part of a cycle, and inserting a container later re-tracks it.
///
/// Only before CPython 3.14: from 3.14 on, inserting into a dict no longer
/// re-tracks it (python/cpython#127010), so there the dict stays tracked.
pub fn untrack_atomic_dict(dict: &Bound<'_, PyDict>) {
    static RETRACKS: OnceLock<bool> = OnceLock::new();
    let retracks = *RETRACKS.get_or_init(|| dict.py().version_info() < (3, 14));
    if retracks {
        // SAFETY: attached; the dict is a live object we own a reference to,
        // and PyObject_GC_UnTrack accepts objects that are already untracked.
        unsafe { ffi::PyObject_GC_UnTrack(dict.as_ptr().cast()) }
    }
}

/// Convert one JSON-like value found at nesting `level` (used if it is a container).
fn normalise_value<'py>(
    value: &Bound<'py, PyAny>,
    level: usize,
    limits: Limits,
) -> Result<Bound<'py, PyAny>, Bad> {
    let py = value.py();
    // Exact built-in types first: the common case costs a pointer compare.
    if value.is_exact_instance_of::<PyString>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_none()
    {
        return Ok(value.clone());
    }
    if value.is_exact_instance_of::<PyFloat>() {
        return finite_float(value);
    }
    if let Ok(items) = value.cast::<PyList>() {
        check_depth(level, limits)?;
        let mut out = Vec::with_capacity(items.len());
        let mut i = 0;
        while i < items.len() {
            let item = items.get_item(i)?;
            out.push(
                normalise_value(&item, level + 1, limits)
                    .map_err(|bad| bad.within(Seg::Index(i)))?,
            );
            i += 1;
        }
        return Ok(PyList::new(py, out)?.into_any());
    }
    if let Ok(items) = value.cast::<PyTuple>() {
        check_depth(level, limits)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(
                normalise_value(&item, level + 1, limits)
                    .map_err(|bad| bad.within(Seg::Index(i)))?,
            );
        }
        return Ok(PyList::new(py, out)?.into_any());
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(exact_str(text)?.into_any());
    }
    if value.is_instance_of::<PyInt>() {
        // SAFETY: attached; PyNumber_Index returns an exact int for an int
        // subclass without calling user code, or NULL with an exception set.
        return Ok(unsafe {
            Bound::from_owned_ptr_or_err(py, ffi::PyNumber_Index(value.as_ptr()))?
        });
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        let exact = PyFloat::new(py, number.value());
        return finite_float(exact.as_any());
    }
    if let Some(dict) = normalise_mapping(value, level, limits)? {
        return Ok(dict.into_any());
    }
    Err(Bad::rule("value_type", type_name(value)))
}

fn finite_float<'py>(value: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>, Bad> {
    let number = value.cast::<PyFloat>().map_err(PyErr::from)?.value();
    if number.is_finite() {
        return Ok(value.clone());
    }
    let shown = value.repr().map(|r| r.to_string()).ok();
    Err(Bad::rule("float_not_finite", shown))
}
