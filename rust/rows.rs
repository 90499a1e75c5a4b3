//! The row rules over Python objects: what `normalise_rollout_rows` does on the
//! Rust engine. The pure-Python twin in `agent_rollout/_rows.py` follows the
//! same steps in the same order, so both report the first broken rule alike.
//!
//! Re-entrancy. The input is the caller's objects, and reading them can run
//! the caller's code: a dict lookup runs `__eq__` of any key whose hash
//! collides with the one looked up, `Mapping`s run `get`/`items`, iterators
//! and `isinstance(x, Mapping)` run whatever they like, a finalizer can run at
//! any allocation once that code turned the collector back on, and Ctrl-C
//! handlers run at signal checks. That code may change or empty any row, list
//! or dict we are reading. So the rules here are: everything kept across such
//! a call is a strong reference (`Bound`); lengths and positions are read
//! again after it; a borrowed pointer only lives between two C calls that
//! cannot run Python code and cannot allocate. Each `unsafe` block says why.

use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};

use crate::errors::{Bad, Code, Fault, Seg};

/// Rows between two checks for Ctrl-C.
const SIGNAL_EVERY: usize = 4096;

/// Pauses CPython's cyclic collector while rows are built, and restores the
/// caller's setting on every exit path (return, error or panic unwinding).
/// Building 100k rows creates several hundred thousand containers; with the
/// collector running, its repeated passes over them cost more than the work.
///
/// The rule (the twin's `GcPause` keeps the same): only a collector that was
/// on is switched off, and only that one is switched back on; one the caller
/// had off stays off, one turned on meanwhile stays on. The switch is
/// process-wide, so a pause must stay short and never span a wait: file reads
/// pause per chunk while holding the interpreter and running no Python code,
/// so no other thread can flip the switch inside a pause.
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

/// Limits handed over from Python (`_native.normalise_rows`' arguments).
#[derive(Clone, Copy)]
pub struct Limits {
    pub max_rows: usize,
    pub max_depth: usize,
}

/// How messages name an object's type: a built-in type by its name (`int`,
/// `NoneType`), any other by its module and qualified name, as Python's
/// `repr` of the class shows them (`numpy.bool`, whose name alone would say
/// `bool`). Read with the descriptors of `type` itself
/// (`type.__dict__["__qualname__"]`, `["__module__"]`), so a metaclass cannot
/// answer with code of its own (PyO3's `name()` reads the attribute on builds
/// older than 3.11, abi3 included); a `__module__` that is missing or not
/// exactly a `str` leaves the name alone. The twin (`_rows._name`) reads
/// the same descriptors.
fn type_name(obj: &Bound<'_, PyAny>) -> Option<String> {
    static QUALNAME: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static MODULE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    let cls = obj.get_type();
    let name = type_attribute(&QUALNAME, intern!(py, "__qualname__"), &cls)?;
    let name = name.cast::<PyString>().ok()?.to_string();
    let module = type_attribute(&MODULE, intern!(py, "__module__"), &cls);
    match module
        .as_ref()
        .and_then(|m| m.cast_exact::<PyString>().ok())
    {
        Some(module) if module != "builtins" => Some(format!("{module}.{name}")),
        _ => Some(name),
    }
}

/// `type.__dict__[attribute].__get__(cls)`: what the type itself holds, never
/// its metaclass's answer. `descriptor` keeps the descriptor once looked up.
fn type_attribute<'py>(
    descriptor: &PyOnceLock<Py<PyAny>>,
    attribute: &Bound<'py, PyString>,
    cls: &Bound<'py, PyType>,
) -> Option<Bound<'py, PyAny>> {
    let py = cls.py();
    let descriptor = descriptor
        .get_or_try_init(py, || {
            py.get_type::<PyType>()
                .getattr(intern!(py, "__dict__"))?
                .get_item(attribute)
                .map(Bound::unbind)
        })
        .ok()?;
    descriptor
        .bind(py)
        .call_method1(intern!(py, "__get__"), (cls,))
        .ok()
}

/// Whether `obj` is a mapping: a dict (or subclass), by its type alone, or
/// else `isinstance(obj, collections.abc.Mapping)`, which can run the
/// object's code (`__class__`, an ABC hook) and whose errors are passed on
/// (PyO3's `cast::<PyMapping>` would print and swallow them).
fn is_mapping(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static MAPPING: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if obj.is_instance_of::<PyDict>() {
        return Ok(true);
    }
    obj.is_instance(MAPPING.import(obj.py(), "collections.abc", "Mapping")?)
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
        return Err(Fault::input(Code::InputNotIterable, type_name(rows)));
    }
    if is_mapping(rows)? {
        return Err(Fault::input(Code::InputIsMapping, type_name(rows)));
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
            Err(err) if err.is_instance_of::<PyTypeError>(py) => {
                return Err(Fault::input(Code::InputNotIterable, type_name(rows)));
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
            return Err(Fault::input(Code::TooManyRows, None));
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
        return Err(Fault::input(Code::NoRows, None));
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
/// and an exact-`str`, `None` or missing answer. `None`: not such a row (the
/// general path then looks both keys up again, as the twin does).
///
/// The two lookups are the ones the twin's fast path makes, in the same
/// order, and each can run Python code: a key of another type whose hash
/// equals `hash("answer")` has its `__eq__` called, and that may replace or
/// delete `row["prompt"]`. So what the first lookup found is held as a strong
/// reference (an immutable exact `str`) across the second.
fn flat_text_row<'py>(row: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Ok(dict) = row.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let py = row.py();
    let prompt_key = intern!(py, "prompt");
    let answer_key = intern!(py, "answer");
    let Some(prompt) = dict.get_item(prompt_key)? else {
        return Ok(None);
    };
    let Ok(prompt) = prompt.cast_into_exact::<PyString>() else {
        return Ok(None);
    };
    if str_len(&prompt) == 0 {
        return Ok(None);
    }
    let answer = match dict.get_item(answer_key)? {
        Some(answer) if !answer.is_none() => match answer.cast_into_exact::<PyString>() {
            Ok(text) => Some(text),
            Err(_) => return Ok(None),
        },
        _ => None,
    };
    // From here on only our own fresh dict is touched (exact `str` keys: no
    // `__eq__` of anyone else's runs).
    let out = PyDict::new(py);
    out.set_item(prompt_key, prompt)?;
    if let Some(answer) = answer {
        if str_len(&answer) != 0 {
            out.set_item(answer_key, answer)?;
        }
    }
    untrack_atomic_dict(&out);
    Ok(Some(out))
}

fn normalise_row<'py>(row: &Bound<'py, PyAny>, limits: Limits) -> Result<Bound<'py, PyDict>, Bad> {
    if let Some(out) = flat_text_row(row)? {
        return Ok(out);
    }
    let py = row.py();
    if !row.is_exact_instance_of::<PyDict>() && !is_mapping(row)? {
        return Err(Bad::rule(Code::RowNotMapping, type_name(row)));
    }
    let prompt_key = intern!(py, "prompt");
    let answer_key = intern!(py, "answer");
    let out = PyDict::new(py);

    let prompt = row_get(row, prompt_key)?;
    let Some(prompt) = prompt else {
        return Err(Bad::rule(Code::PromptMissing, None).within(Seg::Key("prompt".into())));
    };
    let prompt_is_text = prompt.is_instance_of::<PyString>();
    let prompt_value =
        normalise_prompt(&prompt, limits).map_err(|bad| bad.within(Seg::Key("prompt".into())))?;
    out.set_item(prompt_key, prompt_value)?;

    if let Some(answer) = row_get(row, answer_key)? {
        let Ok(text) = answer.cast::<PyString>() else {
            return Err(
                Bad::rule(Code::AnswerType, type_name(&answer)).within(Seg::Key("answer".into()))
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
            return Err(Bad::rule(Code::PromptEmpty, None));
        }
        return Ok(exact_str(text)?.into_any());
    }
    let Ok(messages) = prompt.cast::<PyList>() else {
        return Err(Bad::rule(Code::PromptType, type_name(prompt)));
    };
    if messages.is_empty() {
        return Err(Bad::rule(Code::PromptEmpty, None));
    }
    // Each message is taken as a strong reference, and the length is read
    // again every step (a `Mapping` message's `items()` may shrink or grow
    // the list), exactly as the twin's list iterator does.
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
        return Err(Bad::rule(Code::MessageNotMapping, type_name(message)));
    };
    let role_key = intern!(py, "role");
    let Some(role) = out.get_item(role_key)? else {
        return Err(Bad::rule(Code::RoleMissing, None));
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
            Code::RoleEmpty
        } else {
            Code::RoleType
        };
        return Err(Bad::rule(code, fact).within(Seg::Key("role".into())));
    }
    Ok(out.into_any())
}

/// The length of a str in code points, read from the object (never `__len__`).
fn str_len(text: &Bound<'_, PyString>) -> isize {
    // SAFETY: attached, and `text` is a live str (or subclass) instance we
    // hold a reference to; PyUnicode_GetLength reads a field, runs no Python
    // code and cannot fail for a str.
    unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) }
}

/// A `str` of the exact built-in type: the object itself when it already is
/// one (strings are immutable), a copy for a subclass (no user code runs).
fn exact_str<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    if text.is_exact_instance_of::<PyString>() {
        return Ok(text.clone());
    }
    // SAFETY: attached; `text` is a live str subclass instance we hold. For a
    // str subclass PyUnicode_FromObject copies the characters (no `__str__`
    // or other user code runs) and returns a new reference to an exact str,
    // or NULL with an exception set, which from_owned_ptr_or_err turns into
    // an error.
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
        // Walked the way Python's own dict iterator walks it (the twin uses
        // that iterator), with the same two checks: a size change since the
        // start, or more entries than there were, raise the RuntimeError
        // Python raises. `put_entry` can run Python code that changes the
        // dict; PyDict_Next then continues from `pos` over the dict as it
        // now is, which is safe: it bounds-checks `pos` against the current
        // table.
        let size = dict.len();
        let mut remaining = size;
        let mut pos: ffi::Py_ssize_t = 0;
        loop {
            if dict.len() != size {
                return Err(Bad::Py(PyRuntimeError::new_err(
                    "dictionary changed size during iteration",
                )));
            }
            let mut key_ptr: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value_ptr: *mut ffi::PyObject = std::ptr::null_mut();
            // SAFETY: attached, and `dict` is a live dict we hold. PyDict_Next
            // runs no Python code; on success it hands out borrowed pointers
            // into the dict, which are turned into strong references right
            // away, before anything that could run Python code or allocate.
            let entry = unsafe {
                if ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key_ptr, &mut value_ptr) == 0 {
                    None
                } else {
                    Some((
                        Bound::from_borrowed_ptr(py, key_ptr),
                        Bound::from_borrowed_ptr(py, value_ptr),
                    ))
                }
            };
            let Some((key, value)) = entry else {
                break;
            };
            if remaining == 0 {
                return Err(Bad::Py(PyRuntimeError::new_err(
                    "dictionary keys changed during iteration",
                )));
            }
            remaining -= 1;
            atomic &= put_entry(&out, &key, &value, level, limits)?;
        }
        if atomic {
            untrack_atomic_dict(&out);
        }
        return Ok(Some(out));
    }
    if !is_mapping(obj)? {
        return Ok(None);
    }
    check_depth(level, limits)?;
    // Each entry is a strong reference (the pair tuple, then its two items,
    // read from the tuple itself: a tuple subclass's `__len__`, `__iter__`
    // or `__getitem__` is never called, nor by the twin).
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
                return Err(Bad::Py(PyTypeError::new_err(message)));
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
/// caller then walks it and reports the first broken rule).
///
/// No Python code runs: the scan only reads, and `PyDict_Copy` of a dict
/// with exact `str` keys compares keys as strings. The one way the source
/// can change between the scan and the copy is a finalizer run by a
/// collection at the copy's allocation, possible only if the caller's code
/// turned the collector back on during the pause; then the copy (ours alone)
/// is scanned again and dropped if it no longer qualifies.
fn copy_flat_dict<'py>(dict: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyDict>>> {
    if !dict.is_exact_instance_of::<PyDict>() || !is_flat(dict)? {
        return Ok(None);
    }
    // SAFETY: attached; `dict` is a live exact dict we hold. PyDict_Copy
    // returns a new reference to an exact dict, or NULL with an exception
    // set, which from_owned_ptr_or_err turns into an error.
    let copy = unsafe {
        Bound::from_owned_ptr_or_err(dict.py(), ffi::PyDict_Copy(dict.as_ptr()))?
            .cast_into_unchecked::<PyDict>()
    };
    // SAFETY: attached; PyGC_IsEnabled only reads the collector's switch.
    let collector_on = unsafe { ffi::PyGC_IsEnabled() } != 0;
    if collector_on && !is_flat(&copy)? {
        return Ok(None);
    }
    untrack_atomic_dict(&copy);
    Ok(Some(copy))
}

/// Whether every key of `dict` is an exact `str` and every value an exact
/// `str`, `int`, `bool`, `None` or finite `float`.
#[inline(always)]
fn is_flat(dict: &Bound<'_, PyDict>) -> PyResult<bool> {
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key_ptr: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value_ptr: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: attached; `dict` is a live dict we hold. The borrowed pointers
    // PyDict_Next hands out are only inspected (type checks, a float read)
    // until the next PyDict_Next call; nothing in between runs Python code,
    // allocates or releases a reference, so the dict cannot change under
    // them. PyFloat_AsDouble is called on an exact float only, where it
    // reads the value and cannot fail; its error protocol is checked anyway.
    unsafe {
        while ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key_ptr, &mut value_ptr) != 0 {
            if ffi::PyUnicode_CheckExact(key_ptr) == 0 {
                return Ok(false);
            }
            let flat = ffi::PyUnicode_CheckExact(value_ptr) != 0
                || ffi::PyLong_CheckExact(value_ptr) != 0
                || ffi::PyBool_Check(value_ptr) != 0
                || value_ptr == ffi::Py_None()
                || (ffi::PyFloat_CheckExact(value_ptr) != 0 && {
                    let number = ffi::PyFloat_AsDouble(value_ptr);
                    if number == -1.0 && !ffi::PyErr_Occurred().is_null() {
                        return Err(PyErr::fetch(dict.py()));
                    }
                    number.is_finite()
                });
            if !flat {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn check_depth(level: usize, limits: Limits) -> Result<(), Bad> {
    if level > limits.max_depth {
        return Err(Bad::rule(Code::TooDeep, None));
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
        return Err(Bad::rule(Code::KeyNotStr, type_name(key)));
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
        // SAFETY: attached; the dict is a live dict we hold a reference to.
        // PyObject_GC_UnTrack only unlinks it from the collector's list (no
        // Python code runs) and accepts a dict that is already untracked.
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
        // SAFETY: attached; `value` is a live int subclass instance we hold.
        // For an int subclass PyNumber_Index copies the digits into a new
        // exact int (it does not call `__index__`, which only non-ints go
        // through), or returns NULL with an exception set.
        return Ok(unsafe {
            Bound::from_owned_ptr_or_err(py, ffi::PyNumber_Index(value.as_ptr()))?
        });
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        // `value()` reads the C double of a float subclass (PyFloat_AsDouble
        // does not call `__float__` for a float): no user code.
        let exact = PyFloat::new(py, number.value());
        return finite_float(exact.as_any());
    }
    if let Some(dict) = normalise_mapping(value, level, limits)? {
        return Ok(dict.into_any());
    }
    Err(Bad::rule(Code::ValueType, type_name(value)))
}

fn finite_float<'py>(value: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>, Bad> {
    let number = value.cast::<PyFloat>().map_err(PyErr::from)?.value();
    if number.is_finite() {
        return Ok(value.clone());
    }
    let shown = value.repr().map(|r| r.to_string()).ok();
    Err(Bad::rule(Code::FloatNotFinite, shown))
}
