//! Rows as Python objects: the walk over the caller's values (`Stop`, `Walk`,
//! `IntRule`), typing them and pushing them into columns.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::json::{py_float_repr, write_json_str};

use super::columns::Col;
use super::types::Ty;
use super::{offset, Shape};

// ---- rows as Python objects ---------------------------------------------------------------
//
// One walker serves two passes. The first pass reads the caller's rows as
// they are and takes only the shapes whose normalised form is the row itself
// (exact dicts, lists, str, int, float, bool, None; a non-empty str prompt or
// message list; roles that are non-empty str; finite floats; nesting within
// the limit): for those, the row rules have nothing to change or refuse, so
// the buffers are built straight from the input. Anything else (a subclass,
// a mapping, a rule broken, a kind mismatch, a value Arrow cannot hold) gives
// up the pass: Python then runs the row rules (`normalise_rollout_rows`),
// which raise the error both engines agree on, and the second pass builds
// from the rows they return, where a mismatch or a value Arrow cannot hold
// is the error to report.
//
// A message's other members are checked, typed and, while each member's type
// stays as first seen, appended to their columns in one read (`absorb_push`);
// the message is kept (a strong reference), and only when a value changed a
// type (a batch whose messages disagree) are the kept messages read a second
// time into columns of the batch's final types (`Col::push_py`).
//
// Python objects are read under the rules of rust/rows.rs's header, and this
// walk keeps one more: dicts, lists and tuples are walked with references
// borrowed from them (`items`, `seq_items`), which stay valid only while the
// container holds them. So while one is in use, only C code on exact built-in
// types runs (type checks, UTF-8 and number reads; no lookups, no iterator
// objects, no `str()`, which checks for signals: `small_int`,
// `long_int_text`). None of it runs Python code or makes an object the
// collector tracks, bar an exception on the way out of the walk; and the
// collector is off (`GcPause`) besides, so not even that can run a
// finalizer. User code can run only between rows (a signal handler at the
// Ctrl-C check, a user key's `__eq__` run by the row's lookups of `prompt`
// and `answer`, each holding strong references); it may switch the collector
// back on, so it is looked at again after each (`may_borrow`): on the
// caller's rows the first pass then gives up and the row rules' copies are
// walked instead; on those copies, which no one else holds, the collector is
// switched off again until the call ends. What user code changes between a
// message's two reads is found as a value that does not match its column
// (`Stop::Changed`): the first pass gives up then too.

/// Why the fast walk over Python rows stopped.
pub(super) enum Stop {
    /// A shape the first pass does not take (or, in the second pass, a bug).
    Slow,
    /// A str Arrow cannot hold (a lone surrogate).
    NotUtf8,
    /// An int too long for Python to write as text (past
    /// `sys.get_int_max_str_digits()`), so not as JSON either.
    IntTooLong,
    /// A column past Arrow's limits.
    Build(String),
    /// A value no longer of the type the batch gave its column: user code
    /// (a key's `__eq__` run by a lookup, a signal handler) changed a message
    /// between its two reads. The first pass gives up (the row rules' copies
    /// are built instead); in the second it is a bug, reported.
    Changed,
    /// An exception (raised by Python code a lookup ran, or memory): passed on.
    Py(PyErr),
}

impl From<PyErr> for Stop {
    fn from(err: PyErr) -> Self {
        Stop::Py(err)
    }
}

impl From<String> for Stop {
    fn from(err: String) -> Self {
        Stop::Build(err)
    }
}

pub(super) fn changed() -> Stop {
    Stop::Changed
}

pub(super) fn text<'a>(value: &'a Bound<'_, PyString>) -> Result<&'a str, Stop> {
    value.to_str().map_err(|_| Stop::NotUtf8)
}

pub(super) fn exact_str<'a, 'py>(
    value: &'a Bound<'py, PyAny>,
) -> Result<&'a Bound<'py, PyString>, Stop> {
    value.cast_exact::<PyString>().map_err(|_| Stop::Slow)
}

/// The entries of an exact dict, borrowed from it (`PyDict_Next`), in order:
/// no reference counts touched (about a sixth of the walk's time on
/// tool-call rows). An entry is valid while the dict holds it, so it is only
/// used under this section's rule (nothing runs that could change the dict).
pub(super) struct Items<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    pos: ffi::Py_ssize_t,
}

pub(super) fn items<'a, 'py>(dict: &'a Bound<'py, PyDict>) -> Items<'a, 'py> {
    Items { dict, pos: 0 }
}

impl<'a, 'py> Iterator for Items<'a, 'py> {
    type Item = (Borrowed<'a, 'py, PyAny>, Borrowed<'a, 'py, PyAny>);

    fn next(&mut self) -> Option<Self::Item> {
        let py = self.dict.py();
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: attached (`py`), and `self.dict` is a live dict held for
        // `'a`. PyDict_Next runs no Python code, bounds-checks `pos` against
        // the dict's current table and, on success, hands out two non-null
        // pointers to objects the dict holds a reference to. They stay valid
        // while the dict keeps them: it is held for `'a`, and under this
        // section's rule nothing changes it while they are in use.
        unsafe {
            if ffi::PyDict_Next(self.dict.as_ptr(), &mut self.pos, &mut key, &mut value) == 0 {
                return None;
            }
            Some((
                Borrowed::from_ptr_or_opt(py, key)?,
                Borrowed::from_ptr_or_opt(py, value)?,
            ))
        }
    }
}

/// The items of an exact list or tuple (`is_sequence`), borrowed from it, in
/// order; a list's length is read again at every step.
pub(super) struct SeqItems<'a, 'py> {
    seq: &'a Bound<'py, PyAny>,
    list: bool,
    index: ffi::Py_ssize_t,
}

pub(super) fn seq_items<'a, 'py>(seq: &'a Bound<'py, PyAny>) -> SeqItems<'a, 'py> {
    SeqItems {
        seq,
        list: seq.is_exact_instance_of::<PyList>(),
        index: 0,
    }
}

impl<'a, 'py> Iterator for SeqItems<'a, 'py> {
    type Item = Result<Borrowed<'a, 'py, PyAny>, Stop>;

    fn next(&mut self) -> Option<Self::Item> {
        let py = self.seq.py();
        let at = self.seq.as_ptr();
        // SAFETY: attached (`py`); `self.seq` is a live exact list or tuple
        // (`seq_items` is only given one) held for `'a`. The size and item
        // reads run no Python code; the index is checked against the length
        // just read, and the item is a non-null pointer the container holds a
        // reference to, valid while it keeps it (held for `'a`, and unchanged
        // under this section's rule). Should one fail all the same, its
        // exception is taken and returned, not left set.
        let item = unsafe {
            let len = if self.list {
                ffi::PyList_Size(at)
            } else {
                ffi::PyTuple_Size(at)
            };
            if self.index >= len {
                return None;
            }
            let item = if self.list {
                ffi::PyList_GetItem(at, self.index)
            } else {
                ffi::PyTuple_GetItem(at, self.index)
            };
            Borrowed::from_ptr_or_opt(py, item)
        };
        self.index += 1;
        Some(item.ok_or_else(|| Stop::Py(PyErr::fetch(py))))
    }
}

/// Whether the collector is off (`GcPause`): the borrowed walk's condition on
/// the caller's objects. User code run between rows (a signal handler, a
/// key's `__eq__` run by a lookup) may have switched it back on.
pub(super) fn collector_off() -> bool {
    // SAFETY: only called while attached (inside `rows_to_batches`);
    // PyGC_IsEnabled reads a flag.
    unsafe { ffi::PyGC_IsEnabled() == 0 }
}

fn is_sequence(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>()
}

/// The limits of one walk over Python rows.
#[derive(Clone, Copy)]
pub struct Walk {
    /// The deepest nesting of a message's values.
    pub max_depth: usize,
    /// The most digits an int may have to be written as text: the
    /// `sys.get_int_max_str_digits()` in force when the call began
    /// (`agent_rollout._limits.int_digits_limit`).
    pub max_int_digits: usize,
    /// How this interpreter's `str()` refuses a long int (`IntRule::of`).
    pub ints: IntRule,
    /// The bounds of the Arrow shape.
    pub shape: Shape,
}

/// The interpreter's facts behind `str()`'s refusal of a long int.
#[derive(Clone, Copy)]
pub struct IntRule {
    /// Bits in one of CPython's int digits (`sys.int_info.bits_per_digit`).
    digit_bits: u64,
    /// From 3.12, ints of more than 1,000 digits are written by `_pylong`,
    /// which skips the exact count of decimal digits.
    pylong: bool,
}

impl IntRule {
    /// Read once per process (outside any walk: it runs Python code).
    pub fn of(py: Python<'_>) -> PyResult<IntRule> {
        static RULE: PyOnceLock<(u64, bool)> = PyOnceLock::new();
        let &(digit_bits, pylong) = RULE.get_or_try_init(py, || -> PyResult<(u64, bool)> {
            let bits = py
                .import("sys")?
                .getattr("int_info")?
                .getattr("bits_per_digit")?
                .extract::<u64>()?;
            Ok((bits.max(1), py.version_info() >= (3, 12)))
        })?;
        Ok(IntRule { digit_bits, pylong })
    }
}

/// Whether CPython's `str()` refuses an int of `bits` bits whose decimal
/// form has `digits` digits (`None`: not yet counted) under the limit
/// `max_digits`, as `long_to_decimal_string_internal` decides (3.10-3.13):
/// first a bound on its size in CPython digits, which needs no count; then,
/// unless `_pylong` writes it, the exact count. `None`: the count decides.
fn str_refuses(bits: u64, digits: Option<usize>, max_digits: usize, rule: IntRule) -> Option<bool> {
    // 640 is _PY_LONG_MAX_STR_DIGITS_THRESHOLD; C's integer arithmetic.
    let shift = rule.digit_bits;
    let size = bits.div_ceil(shift);
    let max = u64::try_from(max_digits).unwrap_or(u64::MAX);
    if size >= 10 * 640 / (3 * shift) + 2 && max / (3 * shift) <= size.saturating_sub(11) / 10 {
        return Some(true);
    }
    if rule.pylong && size > 1000 {
        return Some(false);
    }
    digits.map(|digits| digits > max_digits)
}

/// The value of an exact int that fits `i64`. No exception is made for one
/// that does not (`PyLong_AsLongLongAndOverflow`): an exception is an object
/// the collector tracks, and the walk makes none on its way.
fn small_int(number: &Bound<'_, PyInt>) -> Option<i64> {
    let mut overflow: std::os::raw::c_int = 0;
    // SAFETY: attached (the caller holds `number`, bound to the interpreter),
    // and `number` is a live exact int: PyLong_AsLongLongAndOverflow calls no
    // `__index__` for it, and reports a value past `long long` in `overflow`
    // (with -1 returned) rather than raising; it cannot fail for an int.
    let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(number.as_ptr(), &mut overflow) };
    (overflow == 0).then_some(value)
}

/// The decimal text of an int past `i64`, as `json.dumps` writes it;
/// `Stop::IntTooLong` where `str()` raises under `walk.max_int_digits`
/// (`str_refuses`).
///
/// Not `str()`: CPython's decimal conversion checks for signals as it goes
/// (running Python signal handlers, and from 3.12 a pending collection) and,
/// from 3.12, hands ints of thousands of digits to `_pylong`, Python code;
/// any of which could change what the walk holds borrowed. The hex form
/// (`PyNumber_ToBase`, base 16) is plain C that does neither, and Rust turns
/// it into decimal.
fn long_int_text(number: &Bound<'_, PyInt>, walk: Walk) -> Result<String, Stop> {
    let py = number.py();
    // SAFETY: attached (`py`); `number` is a live exact int held by the
    // caller. PyNumber_ToBase on an exact int calls no `__index__` and runs no
    // Python code; it returns a new reference to a str, or NULL with an
    // exception set, which from_owned_ptr_or_err turns into an error.
    let hex =
        unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyNumber_ToBase(number.as_ptr(), 16))? };
    let hex = hex.cast_into::<PyString>().map_err(|_| changed())?;
    let hex = text(&hex)?;
    let (negative, digits) = match hex.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, hex),
    };
    let digits = digits.strip_prefix("0x").ok_or_else(changed)?;
    let magnitude = num_bigint::BigUint::parse_bytes(digits.as_bytes(), 16).ok_or_else(changed)?;
    let bits = magnitude.bits();
    // Refused before the decimal form is made where str() refuses early too
    // (an int far past the limit would otherwise take seconds to convert).
    if str_refuses(bits, None, walk.max_int_digits, walk.ints) == Some(true) {
        return Err(Stop::IntTooLong);
    }
    let decimal = magnitude.to_str_radix(10);
    if str_refuses(bits, Some(decimal.len()), walk.max_int_digits, walk.ints) == Some(true) {
        return Err(Stop::IntTooLong);
    }
    Ok(if negative {
        format!("-{decimal}")
    } else {
        decimal
    })
}

/// Join `own`, the type of a scalar, into `ty`.
fn join_scalar(ty: &mut Ty, own: Ty) {
    let next = match &*ty {
        Ty::Null => Some(own),
        Ty::Json => None,
        known if *known == own => None,
        _ => Some(Ty::Json),
    };
    if let Some(next) = next {
        *ty = next;
    }
}

/// Check `value`, a value at nesting `level` of a message, the way the first
/// pass takes it, and join its type into `ty` (`Ty::absorb` for Python
/// objects). `size` grows by about the text it holds.
pub(super) fn absorb_py(
    ty: &mut Ty,
    value: &Bound<'_, PyAny>,
    level: usize,
    walk: Walk,
    size: &mut usize,
) -> Result<(), Stop> {
    *size += 2;
    if value.is_none() {
        return Ok(());
    }
    if let Ok(text_value) = value.cast_exact::<PyString>() {
        *size += text(text_value)?.len();
        join_scalar(ty, Ty::Str);
    } else if value.is_exact_instance_of::<PyBool>() {
        join_scalar(ty, Ty::Bool);
    } else if let Ok(number) = value.cast_exact::<PyInt>() {
        if small_int(number).is_some() {
            join_scalar(ty, Ty::Int);
        } else {
            *size += long_int_text(number, walk)?.len();
            *ty = Ty::Json;
        }
    } else if let Ok(number) = value.cast_exact::<PyFloat>() {
        if !number.value().is_finite() {
            return Err(Stop::Slow);
        }
        join_scalar(ty, Ty::Float);
    } else if is_sequence(value) {
        if level > walk.max_depth {
            return Err(Stop::Slow);
        }
        if level > walk.shape.typed_depth {
            *ty = Ty::Json;
        }
        match ty {
            Ty::Null => *ty = Ty::List(Box::new(Ty::Null)),
            Ty::List(_) | Ty::Json => {}
            _ => *ty = Ty::Json,
        }
        let mut scratch = Ty::Json;
        let item = if let Ty::List(item) = ty {
            item.as_mut()
        } else {
            &mut scratch
        };
        for entry in seq_items(value) {
            absorb_py(item, &*entry?, level + 1, walk, size)?;
        }
    } else if let Ok(dict) = value.cast_exact::<PyDict>() {
        if level > walk.max_depth {
            return Err(Stop::Slow);
        }
        if level > walk.shape.typed_depth {
            *ty = Ty::Json;
        }
        absorb_dict(ty, dict, level, walk, size)?;
    } else {
        return Err(Stop::Slow);
    }
    Ok(())
}

fn absorb_dict(
    ty: &mut Ty,
    dict: &Bound<'_, PyDict>,
    level: usize,
    walk: Walk,
    size: &mut usize,
) -> Result<(), Stop> {
    let count = dict.len();
    if count > 0 && matches!(ty, Ty::Null) {
        let mut fields = Vec::with_capacity(count);
        for (key, value) in items(dict) {
            let name = text(exact_str(&key)?)?;
            *size += name.len();
            let mut field = Ty::Null;
            absorb_py(&mut field, &value, level + 1, walk, size)?;
            fields.push((name.to_owned(), field));
        }
        *ty = Ty::Struct(fields);
        return Ok(());
    }
    let same_keys = match &*ty {
        Ty::Struct(fields) if fields.len() == count => {
            let mut same = true;
            for ((key, _), (name, _)) in items(dict).zip(fields) {
                same &= text(exact_str(&key)?)? == name;
            }
            same
        }
        _ => false,
    };
    if !same_keys {
        *ty = Ty::Json;
    }
    let mut scratch = Ty::Json;
    for (position, (key, value)) in items(dict).enumerate() {
        *size += text(exact_str(&key)?)?.len();
        let slot = match ty {
            Ty::Struct(fields) => match fields.get_mut(position) {
                Some((_, field)) => field,
                None => &mut scratch,
            },
            _ => &mut scratch,
        };
        absorb_py(slot, &value, level + 1, walk, size)?;
    }
    Ok(())
}

/// One read of `value` (nesting `level` of a message) whose column `col` is
/// in step with `ty`: joins the value's type into `ty` exactly as `absorb_py`
/// does and, while that leaves `ty` as it was, appends the value to `col` as
/// `Col::push_py` would. `Ok(false)` when the value changed `ty` (beyond a
/// first value where only nulls were seen, which starts a fresh column):
/// `col` is then behind, and the batch's columns are built by the second read
/// (`py_message_struct`). Homogeneous batches, the usual case, are read once.
pub(super) fn absorb_push(
    ty: &mut Ty,
    col: &mut Col,
    value: &Bound<'_, PyAny>,
    level: usize,
    walk: Walk,
    size: &mut usize,
) -> Result<bool, Stop> {
    if value.is_none() {
        *size += 2;
        col.push_null()?;
        return Ok(true);
    }
    match (&mut *ty, &mut *col) {
        (Ty::Null, _) => {
            // The first value here: type it, then a column of that type with
            // a null for each value before it.
            let before = col.len();
            absorb_py(ty, value, level, walk, size)?;
            let mut fresh = Col::new(ty);
            fresh.pad_to(before)?;
            fresh.push_py(value, level, walk)?;
            *col = fresh;
            return Ok(true);
        }
        (Ty::Str, Col::Str(column)) => {
            if let Ok(text_value) = value.cast_exact::<PyString>() {
                let text_value = text(text_value)?;
                *size += 2 + text_value.len();
                column.push(Some(text_value))?;
                return Ok(true);
            }
        }
        (Ty::Bool, Col::Bool { valid, values }) => {
            if let Ok(flag) = value.cast_exact::<PyBool>() {
                *size += 2;
                values.push(flag.is_true());
                valid.push(true);
                return Ok(true);
            }
        }
        (Ty::Int, Col::Int { valid, values }) => {
            if let Ok(number) = value.cast_exact::<PyInt>() {
                if let Some(small) = small_int(number) {
                    *size += 2;
                    values.push(small);
                    valid.push(true);
                    return Ok(true);
                }
            }
        }
        (Ty::Float, Col::Float { valid, values }) => {
            if let Ok(number) = value.cast_exact::<PyFloat>() {
                let number = number.value();
                if number.is_finite() {
                    *size += 2;
                    values.push(number);
                    valid.push(true);
                    return Ok(true);
                }
            }
        }
        (
            Ty::List(item),
            Col::List {
                valid,
                offsets,
                child,
            },
        ) if is_sequence(value) && level <= walk.max_depth => {
            *size += 2;
            let mut in_step = true;
            for entry in seq_items(value) {
                let entry = entry?;
                if in_step {
                    in_step = absorb_push(item, child, &entry, level + 1, walk, size)?;
                } else {
                    absorb_py(item, &entry, level + 1, walk, size)?;
                }
            }
            if in_step {
                offsets.push(offset(child.len())?);
                valid.push(true);
            }
            return Ok(in_step);
        }
        (
            Ty::Struct(fields),
            Col::Struct {
                valid, children, ..
            },
        ) => {
            if let Ok(dict) = value.cast_exact::<PyDict>() {
                if level <= walk.max_depth && dict.len() == fields.len() {
                    *size += 2;
                    let mut in_step = true;
                    let mut same_keys = true;
                    let mut scratch = Ty::Json;
                    for (position, (key, item)) in items(dict).enumerate() {
                        let name = text(exact_str(&key)?)?;
                        *size += name.len();
                        let slot = match fields.get_mut(position) {
                            Some((field, field_ty)) if same_keys && field == name => field_ty,
                            _ => {
                                // Other keys: the value is JSON text (`absorb_dict`).
                                same_keys = false;
                                in_step = false;
                                &mut scratch
                            }
                        };
                        match children.get_mut(position) {
                            Some(child) if in_step => {
                                in_step = absorb_push(slot, child, &item, level + 1, walk, size)?;
                            }
                            _ => absorb_py(slot, &item, level + 1, walk, size)?,
                        }
                    }
                    if !same_keys {
                        *ty = Ty::Json;
                    } else if in_step {
                        valid.push(true);
                    }
                    return Ok(in_step);
                }
            }
        }
        (Ty::Json, _) => {
            absorb_py(ty, value, level, walk, size)?;
            col.push_py(value, level, walk)?;
            return Ok(true);
        }
        _ => {}
    }
    // The value changes the type: typed as the first read types it.
    absorb_py(ty, value, level, walk, size)?;
    Ok(false)
}

/// Append `value` (nesting `level` of a message) as JSON, the way
/// `json.dumps(ensure_ascii=False, separators=(",", ":"))` writes it.
pub(super) fn write_py_json(
    value: &Bound<'_, PyAny>,
    level: usize,
    walk: Walk,
    out: &mut String,
) -> Result<(), Stop> {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(text_value) = value.cast_exact::<PyString>() {
        write_json_str(text(text_value)?, out);
    } else if let Ok(flag) = value.cast_exact::<PyBool>() {
        out.push_str(if flag.is_true() { "true" } else { "false" });
    } else if let Ok(number) = value.cast_exact::<PyInt>() {
        match small_int(number) {
            Some(small) => out.push_str(&small.to_string()),
            None => out.push_str(&long_int_text(number, walk)?),
        }
    } else if let Ok(number) = value.cast_exact::<PyFloat>() {
        let number = number.value();
        if !number.is_finite() {
            return Err(changed());
        }
        py_float_repr(number, out);
    } else if is_sequence(value) {
        if level > walk.max_depth {
            return Err(changed());
        }
        out.push('[');
        for (i, item) in seq_items(value).enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_py_json(&*item?, level + 1, walk, out)?;
        }
        out.push(']');
    } else if let Ok(dict) = value.cast_exact::<PyDict>() {
        if level > walk.max_depth {
            return Err(changed());
        }
        out.push('{');
        for (i, (key, item)) in items(dict).enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_json_str(text(exact_str(&key)?)?, out);
            out.push(':');
            write_py_json(&item, level + 1, walk, out)?;
        }
        out.push('}');
    } else {
        return Err(changed());
    }
    Ok(())
}

impl Col {
    /// Append `value`, a Python value of the column's type (`Col::push` for
    /// Python objects; `level` is its nesting in the message).
    pub(super) fn push_py(
        &mut self,
        value: &Bound<'_, PyAny>,
        level: usize,
        walk: Walk,
    ) -> Result<(), Stop> {
        if value.is_none() {
            return Ok(self.push_null()?);
        }
        match self {
            Col::Null { .. } => return Err(changed()),
            Col::Bool { valid, values } => {
                let flag = value.cast_exact::<PyBool>().map_err(|_| changed())?;
                values.push(flag.is_true());
                valid.push(true);
            }
            Col::Int { valid, values } => {
                let number = value.cast_exact::<PyInt>().map_err(|_| changed())?;
                values.push(small_int(number).ok_or_else(changed)?);
                valid.push(true);
            }
            Col::Float { valid, values } => {
                let number = value.cast_exact::<PyFloat>().map_err(|_| changed())?;
                values.push(number.value());
                valid.push(true);
            }
            Col::Str(col) => {
                let text_value = value.cast_exact::<PyString>().map_err(|_| changed())?;
                col.push(Some(text(text_value)?))?;
            }
            Col::Json(col) => {
                write_py_json(value, level, walk, &mut col.data)?;
                col.end_value(true)?;
            }
            Col::List {
                valid,
                offsets,
                child,
            } => {
                if !is_sequence(value) || level > walk.max_depth {
                    return Err(changed());
                }
                for item in seq_items(value) {
                    child.push_py(&*item?, level + 1, walk)?;
                }
                offsets.push(offset(child.len())?);
                valid.push(true);
            }
            Col::Struct {
                valid,
                names,
                children,
            } => {
                let dict = value.cast_exact::<PyDict>().map_err(|_| changed())?;
                if dict.len() != children.len() || level > walk.max_depth {
                    return Err(changed());
                }
                for ((key, item), (name, child)) in
                    items(dict).zip(names.iter().zip(children.iter_mut()))
                {
                    if text(exact_str(&key)?)? != name {
                        return Err(changed());
                    }
                    child.push_py(&item, level + 1, walk)?;
                }
                valid.push(true);
            }
        }
        Ok(())
    }
}
