//! Rollout rows as Arrow buffers: the layout of `agent_rollout.arrow`'s schema,
//! built in Rust and handed to pyarrow where they lie (`Buffer`: its address
//! and size, which `agent_rollout.arrow.buffer_of` wraps with
//! `pyarrow.foreign_buffer`, the `Buffer` as the base pyarrow keeps alive; the
//! stable ABI for Python 3.10 has no buffer protocol, and needs none for this).
//!
//! No Arrow crate is used (see docs/arrow.md for the measured cost of arrow-rs
//! and parquet): a column is a few plain buffers (validity bitmap, 32-bit
//! offsets, values), described by a `_native.Column` tree that
//! `agent_rollout.arrow.batch_from_buffers` assembles with
//! `pyarrow.Array.from_buffers`. The schema is written down in Python
//! (`agent_rollout/arrow.py`, docs/arrow.md); this file follows it:
//!
//! * text prompts: `prompt: string`, `answer: string`;
//! * message prompts: `prompt: list<struct<role, content, ...>>`: `role` a
//!   string, `content` a string (or JSON text, `arrow.json`, once any content
//!   in the batch is not a str), then one field per other message key, in the
//!   order the keys first appear, typed by `Ty` below;
//! * within the bounds Python passes in (`Shape`): a list or object deeper
//!   than `typed_depth` levels of a message is JSON text, and past
//!   `max_fields` other keys each message is JSON text (`prompt:
//!   list<arrow.json>`, `messages_json`).
//!
//! Each batch is typed from its own rows; Python joins the batches' types
//! (`agent_rollout.arrow.merge_schemas`, the same lattice) and converts the
//! few batches that need it, so a table has one schema.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{Code, Fault, Rule, Seg};
use crate::files::{self, FileLimits, FileStats};
use crate::json::{push_unescaped, py_float_repr, write_json_str, J};
use crate::jsonl::{
    self, ChunkResult, Event, LineFault, LineLimits, Row, Spare, Verbatim, VerbatimMessage,
    CHUNK_BYTES,
};
use crate::rows::GcPause;

/// The prompt kind of a table, or how the caller asked for it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Messages,
}

/// `prompt_kind` as Python passes it: 0 auto (the first row decides), 1 text, 2 messages.
#[derive(Clone, Copy)]
pub struct KindRule {
    /// The kind fixed up front, if any.
    fixed: Option<Kind>,
}

impl KindRule {
    pub fn from_code(code: u8) -> PyResult<Self> {
        let fixed = match code {
            0 => None,
            1 => Some(Kind::Text),
            2 => Some(Kind::Messages),
            _ => return Err(PyValueError::new_err("prompt_kind code must be 0, 1 or 2")),
        };
        Ok(KindRule { fixed })
    }

    /// Why the table has the kind it has, as the error message says it.
    fn why(&self) -> String {
        match self.fixed {
            None => "set by row 0".to_string(),
            Some(Kind::Text) => "prompt_kind='text'".to_string(),
            Some(Kind::Messages) => "prompt_kind='messages'".to_string(),
        }
    }

    /// The error for a row whose prompt is not of the table's kind.
    fn mismatch(&self, table: Kind) -> Rule {
        let code = match table {
            Kind::Text => Code::PromptNotText,
            Kind::Messages => Code::PromptNotMessages,
        };
        Rule::new(code, Some(self.why())).within(Seg::Key("prompt".into()))
    }
}

/// The bounds of the Arrow shape, from `agent_rollout._limits` (Python passes
/// them in; no copy is kept here).
#[derive(Clone, Copy)]
pub struct Shape {
    /// `MAX_MESSAGE_FIELDS`: the most message keys besides `role` and
    /// `content` a batch gives fields of their own; past them, every message
    /// of the batch is JSON text (`messages_json`), so the batch's data does
    /// not grow with keys times messages.
    pub max_fields: usize,
    /// `MAX_TYPED_DEPTH`: the deepest level of a message (the message is
    /// level 1) at which a list or object is typed; deeper ones are JSON text,
    /// which the standard Parquet readers read.
    pub typed_depth: usize,
}

/// Too much text for one Arrow string column (32-bit offsets).
const OVERFLOW: &str = "a string column grew past 2 GiB; Arrow strings use 32-bit offsets";

/// A value that does not match the column its batch typed it for: a bug, reported, never a panic.
const MISMATCH: &str = "rows_to_arrow: a value does not match the type of its column";

fn offset(len: usize) -> Result<i32, String> {
    i32::try_from(len).map_err(|_| OVERFLOW.to_string())
}

// ---- buffers -------------------------------------------------------------------------------

/// A bitmap being built (validity, or the values of a bool column).
struct Bits {
    bytes: Vec<u8>,
    len: usize,
    unset: usize,
    /// A validity with no unset bit yet: nothing is stored (most columns
    /// have no null, and a bitmap with none is never handed over).
    lazy: bool,
}

impl Bits {
    /// A validity bitmap.
    fn new() -> Self {
        Bits {
            bytes: Vec::new(),
            len: 0,
            unset: 0,
            lazy: true,
        }
    }

    /// The values of a bool column: every bit stored.
    fn values() -> Self {
        Bits {
            lazy: false,
            ..Bits::new()
        }
    }

    /// `len` set bits (a validity with no nulls: never handed over).
    fn all_set(len: usize) -> Self {
        Bits { len, ..Bits::new() }
    }

    #[inline]
    fn push(&mut self, set: bool) {
        if self.lazy {
            if set {
                self.len += 1;
                return;
            }
            // The first unset bit: store the set ones before it.
            self.bytes = vec![0xFF; self.len / 8];
            if self.len % 8 != 0 {
                self.bytes.push((1u8 << (self.len % 8)) - 1);
            }
            self.lazy = false;
        }
        if self.len % 8 == 0 {
            self.bytes.push(0);
        }
        if set {
            if let Some(byte) = self.bytes.last_mut() {
                *byte |= 1 << (self.len % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }

    fn is_set(&self, i: usize) -> bool {
        self.unset == 0
            || self
                .bytes
                .get(i / 8)
                .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// As a validity bitmap: None when every bit is set.
    fn validity(self, py: Python<'_>) -> PyResult<Option<Py<Buffer>>> {
        if self.unset == 0 {
            return Ok(None);
        }
        Buffer::new(py, Words::U8(self.bytes)).map(Some)
    }
}

/// One Arrow string column being built (also the storage of a JSON column).
struct StrCol {
    offsets: Vec<i32>,
    data: String,
    valid: Bits,
}

impl StrCol {
    fn new() -> Self {
        StrCol {
            offsets: vec![0],
            data: String::new(),
            valid: Bits::new(),
        }
    }

    /// A column for a batch's long text (prompts, message contents): its bytes
    /// go into a buffer pyarrow let go of, if one is kept (`SPARE_TEXT`).
    fn text() -> Self {
        let data = SPARE_TEXT.take().map_or_else(String::new, |mut bytes| {
            bytes.clear();
            String::from_utf8(bytes).unwrap_or_default() // empty: always UTF-8
        });
        StrCol {
            data,
            ..StrCol::new()
        }
    }

    #[inline]
    fn end_value(&mut self, set: bool) -> Result<(), String> {
        self.offsets.push(offset(self.data.len())?);
        self.valid.push(set);
        Ok(())
    }

    #[inline]
    fn push(&mut self, value: Option<&str>) -> Result<(), String> {
        if let Some(text) = value {
            self.data.push_str(text);
        }
        self.end_value(value.is_some())
    }

    /// A str as `Canon::canonical_string` gave it (escapes as they stand).
    fn push_canonical(&mut self, raw: Option<&str>) -> Result<(), String> {
        if let Some(raw) = raw {
            push_unescaped(raw, &mut self.data);
        }
        self.end_value(raw.is_some())
    }

    /// A value as compact JSON text (`null` is a null entry).
    fn push_json(&mut self, value: &J<'_>) -> Result<(), String> {
        if matches!(value, J::Null) {
            return self.push(None);
        }
        jsonl::write_value(value, &mut self.data);
        self.end_value(true)
    }

    /// A str as JSON text (a quoted string).
    fn push_json_str(&mut self, text: &str) -> Result<(), String> {
        write_json_str(text, &mut self.data);
        self.end_value(true)
    }

    /// Value `i`, if it is not null.
    fn get(&self, i: usize) -> Option<&str> {
        if !self.valid.is_set(i) {
            return None;
        }
        let start = usize::try_from(*self.offsets.get(i)?).ok()?;
        let end = usize::try_from(*self.offsets.get(i + 1)?).ok()?;
        self.data.get(start..end)
    }
}

/// The values of one Arrow buffer, as built: bytes, or native-endian words.
enum Words {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// One Arrow buffer as it was built, handed to pyarrow where it lies:
/// `agent_rollout.arrow.array_of` wraps it with `pyarrow.foreign_buffer(address,
/// size, base=it)`, and pyarrow keeps it alive as long as any array uses the
/// memory. Nothing writes to its values once it is made (it is frozen, they are
/// private, no method lends them mutably), so the address holds for its whole
/// life. Before, every buffer was copied into a `bytes` on the calling thread,
/// interpreter held: about 4% of a JSONL -> Parquet call's CPU, page faults
/// included.
#[pyclass(frozen, weakref, module = "agent_rollout._native")]
pub struct Buffer {
    words: Words,
}

/// Text buffers pyarrow let go of, kept for the next batches' long text
/// (`StrCol::text`), at most 16 of at most `CHUNK_BYTES` each, for the life of
/// the process. A new buffer is faulted in page by page as it is written, and
/// glibc gives megabyte-sized blocks back to the kernel when they are freed:
/// before, writing the text columns took 80% of a JSONL -> Parquet call's
/// page faults (about 6,000 of 7,500 for 100k rows). A JSONL -> Parquet call
/// gives them back as each row group is written (a group of 16,384 rows is
/// about 7 chunks), for the chunks read after that.
static SPARE_TEXT: Spare<Vec<u8>> = Spare::new(16);

/// The buffers worth keeping: about a chunk's text (a chunk is at most
/// `CHUNK_BYTES` of JSON, but for a line longer than that), not a small one.
const SPARE_TEXT_BYTES: std::ops::RangeInclusive<usize> = (64 << 10)..=CHUNK_BYTES;

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Words::U8(values) = &mut self.words {
            if SPARE_TEXT_BYTES.contains(&values.capacity()) {
                SPARE_TEXT.keep(std::mem::take(values));
            }
        }
    }
}

impl Buffer {
    /// The first byte's address and the length in bytes.
    fn span(&self) -> (usize, usize) {
        fn of<T>(values: &[T]) -> (usize, usize) {
            (values.as_ptr().addr(), std::mem::size_of_val(values))
        }
        match &self.words {
            Words::U8(values) => of(values),
            Words::I32(values) => of(values),
            Words::I64(values) => of(values),
            Words::F64(values) => of(values),
        }
    }

    /// The values, their spare capacity given back first: it is held as long
    /// as pyarrow holds the array, and a column grown by doubling holds up to
    /// twice its length, much of it resident (1M rows to Parquet peaked at
    /// 169-172 MiB keeping it, or only spares over a quarter, against 152 MiB).
    /// Shrinking in place copies nothing under glibc; an allocator that moves
    /// a shrunk block (musl, for small ones) copies it, once, as every buffer
    /// was copied before.
    fn new(py: Python<'_>, mut words: Words) -> PyResult<Py<Buffer>> {
        match &mut words {
            Words::U8(values) => values.shrink_to_fit(),
            Words::I32(values) => values.shrink_to_fit(),
            Words::I64(values) => values.shrink_to_fit(),
            Words::F64(values) => values.shrink_to_fit(),
        }
        Py::new(py, Buffer { words })
    }
}

#[pymethods]
impl Buffer {
    /// Where the first byte is (meaningless when `size` is 0).
    #[getter]
    fn address(&self) -> usize {
        self.span().0
    }

    /// The length in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.span().1
    }

    /// A copy of the bytes (for tests and debugging; pyarrow does not need one).
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        fn put<T, const N: usize>(raw: &mut [u8], values: &[T], bytes: impl Fn(&T) -> [u8; N]) {
            for (slot, value) in raw.chunks_exact_mut(N).zip(values) {
                slot.copy_from_slice(&bytes(value));
            }
        }
        PyBytes::new_with(py, self.size(), |raw| {
            match &self.words {
                Words::U8(values) => raw.copy_from_slice(values),
                Words::I32(values) => put(raw, values, |v| v.to_ne_bytes()),
                Words::I64(values) => put(raw, values, |v| v.to_ne_bytes()),
                Words::F64(values) => put(raw, values, |v| v.to_ne_bytes()),
            }
            Ok(())
        })
    }
}

// ---- types: the lattice of `agent_rollout.arrow.merge_schemas` -----------------------------

/// The Arrow type of the values at one place of a message. A join
/// semilattice: `Null` (no value seen but null) is below everything, `Json`
/// (`arrow.json`: the values as JSON text) above everything; two different
/// kinds join to `Json`, lists join their items, and objects stay a struct
/// only while every object has the same keys in the same order.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Json,
    List(Box<Ty>),
    Struct(Vec<(String, Ty)>),
}

fn fits_i64(text: &str) -> bool {
    text.parse::<i64>().is_ok()
}

impl Ty {
    /// The type of one value at nesting `level` of a message (a message key's
    /// value is level 2); a list or object deeper than `typed_depth` is JSON.
    fn of(value: &J<'_>, level: usize, typed_depth: usize) -> Ty {
        match value {
            J::Null => Ty::Null,
            J::Bool(_) => Ty::Bool,
            J::Num(text, false) => {
                if fits_i64(text) {
                    Ty::Int
                } else {
                    Ty::Json
                }
            }
            J::Num(_, true) => Ty::Float,
            J::Str(_) => Ty::Str,
            J::Arr(_) | J::Obj(_) if level > typed_depth => Ty::Json,
            J::Arr(items) => {
                let mut item = Ty::Null;
                for value in items {
                    item.absorb(value, level + 1, typed_depth);
                }
                Ty::List(Box::new(item))
            }
            J::Obj(members) if members.is_empty() => Ty::Json,
            J::Obj(members) => Ty::Struct(
                members
                    .iter()
                    .map(|(key, value)| (key.to_string(), Ty::of(value, level + 1, typed_depth)))
                    .collect(),
            ),
        }
    }

    /// Join the type of `value`, at nesting `level` of a message, into this one.
    fn absorb(&mut self, value: &J<'_>, level: usize, typed_depth: usize) {
        if matches!(value, J::Null) || matches!(self, Ty::Json) {
            return;
        }
        if matches!(self, Ty::Null) {
            *self = Ty::of(value, level, typed_depth);
            return;
        }
        let keeps = match (&mut *self, value) {
            (Ty::Bool, J::Bool(_)) | (Ty::Str, J::Str(_)) | (Ty::Float, J::Num(_, true)) => true,
            (Ty::Int, J::Num(text, false)) => fits_i64(text),
            (Ty::List(item), J::Arr(items)) => {
                for value in items {
                    item.absorb(value, level + 1, typed_depth);
                }
                true
            }
            (Ty::Struct(fields), J::Obj(members)) => {
                let same_keys = fields.len() == members.len()
                    && fields
                        .iter()
                        .zip(members)
                        .all(|((name, _), (key, _))| name == key);
                if same_keys {
                    for ((_, ty), (_, value)) in fields.iter_mut().zip(members) {
                        ty.absorb(value, level + 1, typed_depth);
                    }
                }
                same_keys
            }
            _ => false,
        };
        if !keeps {
            *self = Ty::Json;
        }
    }
}

// ---- columns -------------------------------------------------------------------------------

/// A column being built, of one `Ty`.
enum Col {
    Null {
        len: usize,
    },
    Bool {
        valid: Bits,
        values: Bits,
    },
    Int {
        valid: Bits,
        values: Vec<i64>,
    },
    Float {
        valid: Bits,
        values: Vec<f64>,
    },
    Str(StrCol),
    Json(StrCol),
    List {
        valid: Bits,
        offsets: Vec<i32>,
        child: Box<Col>,
    },
    Struct {
        valid: Bits,
        names: Vec<String>,
        children: Vec<Col>,
    },
}

impl Col {
    fn new(ty: &Ty) -> Col {
        match ty {
            Ty::Null => Col::Null { len: 0 },
            Ty::Bool => Col::Bool {
                valid: Bits::new(),
                values: Bits::values(),
            },
            Ty::Int => Col::Int {
                valid: Bits::new(),
                values: Vec::new(),
            },
            Ty::Float => Col::Float {
                valid: Bits::new(),
                values: Vec::new(),
            },
            Ty::Str => Col::Str(StrCol::new()),
            Ty::Json => Col::Json(StrCol::new()),
            Ty::List(item) => Col::List {
                valid: Bits::new(),
                offsets: vec![0],
                child: Box::new(Col::new(item)),
            },
            Ty::Struct(fields) => Col::Struct {
                valid: Bits::new(),
                names: fields.iter().map(|(name, _)| name.clone()).collect(),
                children: fields.iter().map(|(_, ty)| Col::new(ty)).collect(),
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            Col::Null { len } => *len,
            Col::Str(col) | Col::Json(col) => col.valid.len,
            Col::Bool { valid, .. }
            | Col::Int { valid, .. }
            | Col::Float { valid, .. }
            | Col::List { valid, .. }
            | Col::Struct { valid, .. } => valid.len,
        }
    }

    fn push_null(&mut self) -> Result<(), String> {
        match self {
            Col::Null { len } => *len += 1,
            Col::Bool { valid, values } => {
                valid.push(false);
                values.push(false);
            }
            Col::Int { valid, values } => {
                valid.push(false);
                values.push(0);
            }
            Col::Float { valid, values } => {
                valid.push(false);
                values.push(0.0);
            }
            Col::Str(col) | Col::Json(col) => col.push(None)?,
            Col::List { valid, offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last);
                valid.push(false);
            }
            Col::Struct {
                valid, children, ..
            } => {
                for child in children.iter_mut() {
                    child.push_null()?;
                }
                valid.push(false);
            }
        }
        Ok(())
    }

    /// Nulls until the column holds `len` values.
    fn pad_to(&mut self, len: usize) -> Result<(), String> {
        while self.len() < len {
            self.push_null()?;
        }
        Ok(())
    }

    /// Append `value`, which the column's type holds (the batch was typed from it).
    fn push(&mut self, value: &J<'_>) -> Result<(), String> {
        if matches!(value, J::Null) {
            return self.push_null();
        }
        match (&mut *self, value) {
            (Col::Bool { valid, values }, J::Bool(flag)) => {
                valid.push(true);
                values.push(*flag);
            }
            (Col::Int { valid, values }, J::Num(text, false)) => {
                values.push(text.parse().map_err(|_| MISMATCH.to_string())?);
                valid.push(true);
            }
            (Col::Float { valid, values }, J::Num(text, true)) => {
                values.push(text.parse().map_err(|_| MISMATCH.to_string())?);
                valid.push(true);
            }
            (Col::Str(col), J::Str(text)) => col.push(Some(text))?,
            (Col::Json(col), value) => col.push_json(value)?,
            (
                Col::List {
                    valid,
                    offsets,
                    child,
                },
                J::Arr(items),
            ) => {
                for item in items {
                    child.push(item)?;
                }
                offsets.push(offset(child.len())?);
                valid.push(true);
            }
            (
                Col::Struct {
                    valid, children, ..
                },
                J::Obj(members),
            ) if members.len() == children.len() => {
                for (child, (_, item)) in children.iter_mut().zip(members) {
                    child.push(item)?;
                }
                valid.push(true);
            }
            _ => return Err(MISMATCH.to_string()),
        }
        Ok(())
    }

    /// The column as Python objects (`Column`).
    fn into_py(self, py: Python<'_>) -> PyResult<Py<Column>> {
        let mut column = Column {
            kind: "null",
            len: self.len(),
            null_count: 0,
            validity: None,
            offsets: None,
            data: None,
            children: Vec::new(),
            names: Vec::new(),
        };
        match self {
            Col::Null { len } => column.null_count = len,
            Col::Bool { valid, values } => {
                column.kind = "bool";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::U8(values.bytes))?);
            }
            Col::Int { valid, values } => {
                column.kind = "int64";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::I64(values))?);
            }
            Col::Float { valid, values } => {
                column.kind = "float64";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::F64(values))?);
            }
            Col::Str(col) => fill_strings(py, &mut column, "string", col)?,
            Col::Json(col) => fill_strings(py, &mut column, "json", col)?,
            Col::List {
                valid,
                offsets,
                child,
            } => {
                column.kind = "list";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.offsets = Some(Buffer::new(py, Words::I32(offsets))?);
                column.children.push(child.into_py(py)?);
            }
            Col::Struct {
                valid,
                names,
                children,
            } => {
                column.kind = "struct";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.names = names;
                for child in children {
                    column.children.push(child.into_py(py)?);
                }
            }
        }
        Py::new(py, column)
    }
}

fn fill_strings(
    py: Python<'_>,
    column: &mut Column,
    kind: &'static str,
    col: StrCol,
) -> PyResult<()> {
    column.kind = kind;
    column.null_count = col.valid.unset;
    column.validity = col.valid.validity(py)?;
    column.offsets = Some(Buffer::new(py, Words::I32(col.offsets))?);
    column.data = Some(Buffer::new(py, Words::U8(col.data.into_bytes()))?);
    Ok(())
}

/// One Arrow array as buffers (`_native.Column`), as
/// `pyarrow.Array.from_buffers` takes them.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct Column {
    /// `"null"`, `"bool"`, `"int64"`, `"float64"`, `"string"`, `"json"`
    /// (a string column of JSON text: `arrow.json`), `"list"` or `"struct"`.
    kind: &'static str,
    len: usize,
    null_count: usize,
    /// The validity bitmap (bit i set: value i is not null); None when no
    /// value is null.
    validity: Option<Py<Buffer>>,
    /// `len + 1` native-endian `int32` offsets (string, json, list).
    offsets: Option<Py<Buffer>>,
    /// The values: UTF-8 bytes (string, json), a bitmap (bool), native-endian
    /// 8-byte numbers (int64, float64).
    data: Option<Py<Buffer>>,
    /// The item column of a list; the field columns of a struct.
    children: Vec<Py<Column>>,
    /// The field names of a struct.
    names: Vec<String>,
}

/// One record batch as buffers (`_native.ArrowBatch`), assembled by
/// `agent_rollout.arrow.batch_from_buffers`.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct ArrowBatch {
    /// `"text"` or `"messages"`: the prompt kind of the batch.
    kind: &'static str,
    rows: usize,
    /// A string column (text) or a list of message structs (messages).
    prompt: Py<Column>,
    answer: Py<Column>,
}

// ---- batches -------------------------------------------------------------------------------

/// The members of one message other than `role` and a str or null `content`.
struct Extra<'a> {
    /// The message's position in its batch.
    message: usize,
    members: Vec<(Cow<'a, str>, J<'a>)>,
}

/// One record batch being built, of one prompt kind. Roles and str contents
/// go straight into their columns; every other member of a message is kept
/// as a value (`Extra`) and typed when the batch is finished.
pub struct Batch<'a> {
    kind: Kind,
    rows: usize,
    /// The prompts (text kind).
    prompts: StrCol,
    /// Message-list offsets (messages kind).
    list_offsets: Vec<i32>,
    roles: StrCol,
    contents: StrCol,
    extras: Vec<Extra<'a>>,
    /// About how much text the extras hold.
    extra_bytes: usize,
    answers: StrCol,
}

/// A finished batch, its buffers all built (no Python object yet).
pub struct Built {
    kind: Kind,
    rows: usize,
    prompt: Col,
    answer: StrCol,
}

impl<'a> Batch<'a> {
    fn new(kind: Kind) -> Self {
        let text = |of: Kind| {
            if kind == of {
                StrCol::text()
            } else {
                StrCol::new()
            }
        };
        Batch {
            kind,
            rows: 0,
            prompts: text(Kind::Text),
            list_offsets: vec![0],
            roles: StrCol::new(),
            contents: text(Kind::Messages),
            extras: Vec::new(),
            extra_bytes: 0,
            answers: StrCol::new(),
        }
    }

    /// Room for the offsets of `rows` more rows (text prompts and answers).
    fn reserve_rows(&mut self, rows: usize) {
        match self.kind {
            Kind::Text => self.prompts.offsets.reserve(rows),
            Kind::Messages => self.list_offsets.reserve(rows),
        }
        self.answers.offsets.reserve(rows);
    }

    fn text_bytes(&self) -> usize {
        self.prompts.data.len()
            + self.roles.data.len()
            + self.contents.data.len()
            + self.extra_bytes
            + self.answers.data.len()
    }

    fn message(
        &mut self,
        role: &str,
        content: Option<&str>,
        members: Vec<(Cow<'a, str>, J<'a>)>,
    ) -> Result<(), String> {
        if !members.is_empty() {
            let message = self.roles.valid.len;
            self.extras.push(Extra { message, members });
        }
        self.roles.push(Some(role))?;
        self.contents.push(content)
    }

    fn end_messages(&mut self) -> Result<(), String> {
        self.list_offsets.push(offset(self.roles.valid.len)?);
        Ok(())
    }

    /// A str prompt: a text row, or one user message when the table holds messages.
    fn text_prompt(&mut self, prompt: &str) -> Result<(), String> {
        match self.kind {
            Kind::Text => self.prompts.push(Some(prompt)),
            Kind::Messages => {
                self.message("user", Some(prompt), Vec::new())?;
                self.end_messages()
            }
        }
    }

    fn end_row(&mut self, answer: Option<&str>) -> Result<(), String> {
        self.answers.push(answer)?;
        self.rows += 1;
        Ok(())
    }

    /// A row `jsonl::verbatim_row` took whose messages are all plain (a role
    /// and a str or null content): what `add_parsed` builds of it, built
    /// from its text.
    fn verbatim(
        &mut self,
        row: &Verbatim<'_>,
        messages: &[VerbatimMessage<'_>],
    ) -> Result<(), String> {
        match (row.text, self.kind) {
            (Some(text), Kind::Text) => self.prompts.push_canonical(Some(text))?,
            (Some(text), Kind::Messages) => {
                self.roles.push(Some("user"))?;
                self.contents.push_canonical(Some(text))?;
                self.end_messages()?;
            }
            (None, Kind::Messages) => {
                for message in messages {
                    self.roles.push_canonical(Some(message.role))?;
                    self.contents.push_canonical(message.content)?;
                }
                self.end_messages()?;
            }
            (None, Kind::Text) => return Err("a message list in a text batch".to_string()),
        }
        self.answers.push_canonical(row.answer)?;
        self.rows += 1;
        Ok(())
    }

    /// Type the extras and build every column (no Python needed: runs on
    /// worker threads for files).
    fn finish(self, shape: Shape) -> Result<Built, String> {
        let prompt = match self.kind {
            Kind::Text => Col::Str(self.prompts),
            Kind::Messages => Col::List {
                valid: Bits::all_set(self.rows),
                offsets: self.list_offsets,
                child: Box::new(message_struct(
                    self.roles,
                    self.contents,
                    &self.extras,
                    shape,
                )?),
            },
        };
        Ok(Built {
            kind: self.kind,
            rows: self.rows,
            prompt,
            answer: self.answers,
        })
    }
}

/// The message fields of a batch beyond `role` and `content`, typed as values
/// come in: names in the order they first appear.
#[derive(Default)]
struct MsgTypes {
    /// Some content is neither a str nor None: every content is JSON text.
    content_json: bool,
    names: Vec<String>,
    types: Vec<Ty>,
    /// Position of each name (looked up past a few names; below, a scan is faster).
    index: HashMap<String, usize>,
}

/// Below this many fields a name is found by scanning.
const SCAN_FIELDS: usize = 8;

impl MsgTypes {
    fn find(&self, name: &str) -> Option<usize> {
        if self.names.len() <= SCAN_FIELDS {
            self.names.iter().position(|known| known == name)
        } else {
            self.index.get(name).copied()
        }
    }

    /// The position of field `name`, added (typed null so far) when new.
    fn slot(&mut self, name: &str) -> usize {
        if let Some(at) = self.find(name) {
            return at;
        }
        self.names.push(name.to_owned());
        self.types.push(Ty::Null);
        self.index.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// The struct column of a batch's messages: `role`, `content`, then the other
/// fields (each padded with nulls to the batch's messages).
fn assemble(
    roles: StrCol,
    content: Col,
    names: Vec<String>,
    columns: Vec<Col>,
) -> Result<Col, String> {
    let count = roles.valid.len;
    let mut children = vec![Col::Str(roles), content];
    for mut column in columns {
        column.pad_to(count)?;
        children.push(column);
    }
    let mut field_names = vec!["role".to_string(), "content".to_string()];
    field_names.extend(names);
    Ok(Col::Struct {
        valid: Bits::all_set(count),
        names: field_names,
        children,
    })
}

/// The struct column of a batch's messages parsed from JSON: `role`,
/// `content`, then one field per other key in the order keys first appear;
/// past `shape.max_fields` such keys, the messages as JSON text (`messages_json`).
fn message_struct(
    roles: StrCol,
    contents: StrCol,
    extras: &[Extra<'_>],
    shape: Shape,
) -> Result<Col, String> {
    let count = roles.valid.len;
    let mut types = MsgTypes::default();
    for extra in extras {
        for (key, value) in &extra.members {
            if key == "content" {
                types.content_json |= !matches!(value, J::Null);
                continue;
            }
            let at = types.slot(key);
            if let Some(ty) = types.types.get_mut(at) {
                ty.absorb(value, 2, shape.typed_depth);
            }
        }
        if types.names.len() > shape.max_fields {
            return messages_json(&roles, &contents, extras);
        }
    }
    let content = if types.content_json {
        // Some content is not a str: the column holds every content as JSON text.
        let mut column = StrCol::new();
        let mut pending = extras.iter().peekable();
        for i in 0..count {
            let extra = pending.next_if(|extra| extra.message == i);
            let other = extra.and_then(|extra| {
                extra
                    .members
                    .iter()
                    .find(|(key, _)| key == "content")
                    .map(|(_, value)| value)
            });
            match (contents.get(i), other) {
                (Some(text), _) => column.push_json_str(text)?,
                (None, Some(value)) => column.push_json(value)?,
                (None, None) => column.push(None)?,
            }
        }
        Col::Json(column)
    } else {
        Col::Str(contents)
    };
    let mut columns: Vec<Col> = types.types.iter().map(Col::new).collect();
    for extra in extras {
        for (key, value) in &extra.members {
            if key == "content" {
                continue;
            }
            let column = types
                .find(key)
                .and_then(|at| columns.get_mut(at))
                .ok_or_else(|| MISMATCH.to_string())?;
            column.pad_to(extra.message)?;
            column.push(value)?;
        }
    }
    assemble(roles, content, types.names, columns)
}

/// Starts the JSON text of one message: `{"role":...` and its content, if any
/// (a str, or `other`: JSON text already written).
fn open_message_json(out: &mut String, role: &str, content: Option<&str>, other: Option<&str>) {
    out.push_str("{\"role\":");
    write_json_str(role, out);
    if let Some(text) = content {
        out.push_str(",\"content\":");
        write_json_str(text, out);
    } else if let Some(json) = other {
        out.push_str(",\"content\":");
        out.push_str(json);
    }
}

/// The messages of a batch as JSON text, past `Shape::max_fields` keys: each
/// message as `agent_rollout.arrow.message_text` writes it (`role`, `content`,
/// then the other members sorted by key, those null left out: one text
/// however the rows were cut into batches).
fn messages_json(roles: &StrCol, contents: &StrCol, extras: &[Extra<'_>]) -> Result<Col, String> {
    let mut column = StrCol::new();
    let mut pending = extras.iter().peekable();
    let mut members: Vec<(&str, &J<'_>)> = Vec::new();
    let mut content_json = String::new();
    for i in 0..roles.valid.len {
        members.clear();
        content_json.clear();
        if let Some(extra) = pending.next_if(|extra| extra.message == i) {
            for (key, value) in &extra.members {
                if matches!(value, J::Null) {
                    continue;
                }
                if key == "content" {
                    jsonl::write_value(value, &mut content_json);
                } else {
                    members.push((key, value));
                }
            }
        }
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let role = roles.get(i).ok_or_else(|| MISMATCH.to_string())?;
        let other = (!content_json.is_empty()).then_some(content_json.as_str());
        open_message_json(&mut column.data, role, contents.get(i), other);
        for (key, value) in &members {
            column.data.push(',');
            write_json_str(key, &mut column.data);
            column.data.push(':');
            jsonl::write_value(value, &mut column.data);
        }
        column.data.push('}');
        column.end_value(true)?;
    }
    Ok(Col::Json(column))
}

impl Built {
    /// The finished batch as Python objects (`ArrowBatch`).
    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, ArrowBatch>> {
        let batch = ArrowBatch {
            kind: match self.kind {
                Kind::Text => "text",
                Kind::Messages => "messages",
            },
            rows: self.rows,
            prompt: self.prompt.into_py(py)?,
            answer: Col::Str(self.answer).into_py(py)?,
        };
        Bound::new(py, batch)
    }
}

// ---- rows parsed from JSONL ----------------------------------------------------------------

/// What a worker is making of one chunk of a JSONL file.
struct ChunkArrow<'d> {
    rule: KindRule,
    shape: Shape,
    /// The messages of the row `add_verbatim` is looking at.
    messages: Vec<VerbatimMessage<'d>>,
    batch: Option<Batch<'d>>,
    /// Index (among the chunk's rows) of the first row not of the chunk's kind.
    mismatch: Option<usize>,
    /// The first error building the buffers (an over-long column).
    failed: Option<String>,
}

/// What a worker made of one chunk: the batch built, ready to hand over.
pub struct ChunkArrowDone {
    batch: Option<Built>,
    mismatch: Option<usize>,
    failed: Option<String>,
}

impl<'d> ChunkArrow<'d> {
    fn new(rule: KindRule, shape: Shape) -> Self {
        ChunkArrow {
            rule,
            shape,
            messages: Vec::new(),
            batch: None,
            mismatch: None,
            failed: None,
        }
    }

    /// The batch a row of this kind goes into; `None` once the chunk takes no
    /// more rows (a row of another kind, or a build error, came first).
    fn batch_for(&mut self, is_text: bool) -> Option<&mut Batch<'d>> {
        if self.mismatch.is_some() || self.failed.is_some() {
            return None;
        }
        let own = if is_text { Kind::Text } else { Kind::Messages };
        let rule = self.rule;
        let batch = self
            .batch
            .get_or_insert_with(|| Batch::new(rule.fixed.unwrap_or(own)));
        let fits = own == batch.kind || (is_text && rule.fixed == Some(Kind::Messages));
        if !fits {
            self.mismatch = Some(batch.rows);
            return None;
        }
        Some(batch)
    }

    fn add(&mut self, row: Row<'d>) {
        let is_text = matches!(row.prompt, J::Str(_));
        if let Some(batch) = self.batch_for(is_text) {
            if let Err(err) = add_parsed(batch, row) {
                self.failed = Some(err);
            }
        }
    }

    /// The shortcut for rows `jsonl::verbatim_row` takes whose messages are
    /// all plain: no value tree. Gives the keys dropped, or `None` (nothing
    /// done) for the full path to take the line. `ascii`: see `Canon::new`.
    fn add_verbatim(&mut self, text: &'d str, limits: LineLimits, ascii: bool) -> Option<usize> {
        let mut messages = std::mem::take(&mut self.messages);
        let taken = jsonl::verbatim_row(text, limits, ascii, true, &mut messages).map(|row| {
            if let Some(batch) = self.batch_for(row.text.is_some()) {
                if let Err(err) = batch.verbatim(&row, &messages) {
                    self.failed = Some(err);
                }
            }
            row.dropped_keys
        });
        self.messages = messages;
        taken
    }

    fn finish(self) -> ChunkArrowDone {
        let mut failed = self.failed;
        let shape = self.shape;
        let batch = match self.batch.map(|batch| batch.finish(shape)) {
            Some(Ok(built)) => Some(built),
            Some(Err(err)) => {
                failed.get_or_insert(err);
                None
            }
            None => None,
        };
        ChunkArrowDone {
            batch,
            mismatch: self.mismatch,
            failed,
        }
    }
}

fn add_parsed<'d>(batch: &mut Batch<'d>, row: Row<'d>) -> Result<(), String> {
    match row.prompt {
        J::Str(text) => batch.text_prompt(&text)?,
        J::Arr(messages) => {
            for message in messages {
                let J::Obj(members) = message else {
                    return Err("a checked message is an object".to_string());
                };
                let mut role = None;
                let mut content = None;
                let mut others = Vec::new();
                for (key, value) in members {
                    let name: &str = &key;
                    match (name, value) {
                        ("role", J::Str(text)) => role = Some(text),
                        ("content", J::Str(text)) => content = Some(text),
                        ("content", J::Null) => {}
                        (_, value) => {
                            batch.extra_bytes += key.len() + 8;
                            others.push((key, value));
                        }
                    }
                }
                let role = role.ok_or_else(|| "a checked message has a role".to_string())?;
                batch.message(&role, content.as_deref(), others)?;
            }
            batch.end_messages()?;
        }
        _ => return Err("a checked prompt is a str or a list".to_string()),
    }
    batch.end_row(row.answer.as_deref())
}

/// Read a rollout JSONL file into Arrow buffers, chunk by chunk, in order:
/// `on_batch(batch)` receives each chunk's `ArrowBatch` (typed from that
/// chunk's rows alone).
pub fn read_file(
    py: Python<'_>,
    path: &Path,
    limits: FileLimits,
    rule: KindRule,
    shape: Shape,
    on_batch: &Bound<'_, PyAny>,
    progress: Option<&Bound<'_, PyAny>>,
) -> Result<FileStats, Fault> {
    let source = files::open_source(py, path, &limits)?;
    let lines = limits.lines();
    let mut stats = FileStats::default();
    let mut table: Option<Kind> = rule.fixed;
    let work = |data: &[u8]| {
        let ChunkResult {
            row_lines,
            output,
            dropped_keys,
            blank_lines,
            lines: line_count,
            bytes,
            fault,
        } = jsonl::process_chunk(
            data,
            lines,
            ChunkArrow::new(rule, shape),
            |out: &mut ChunkArrow<'_>, text, ascii| out.add_verbatim(text, lines, ascii),
            |out: &mut ChunkArrow<'_>, row| out.add(row),
        );
        // Typed and built here, on the thread that parsed the chunk (a worker,
        // or the calling thread without the interpreter).
        ChunkResult {
            row_lines,
            output: output.finish(),
            dropped_keys,
            blank_lines,
            lines: line_count,
            bytes,
            fault,
        }
    };
    let released = |step: &mut (dyn FnMut() + Send)| py.detach(step);
    let tick = || py.check_signals().map_err(Fault::from);
    jsonl::run(
        source,
        files::workers(),
        work,
        released,
        tick,
        |event| -> Result<bool, Fault> {
            let mut result = match event {
                Event::Fail(fault) => return Err(files::read_fault(fault, stats.lines)),
                Event::Chunk(result) => result,
            };
            py.check_signals()?;
            if let Some(message) = result.output.failed.take() {
                return Err(Fault::Py(PyValueError::new_err(message)));
            }
            let output = &result.output;
            if let Some(batch) = &output.batch {
                let kind = *table.get_or_insert(batch.kind);
                let first_off = if batch.kind != kind {
                    Some(0)
                } else {
                    output.mismatch
                };
                if let Some(local_index) = first_off {
                    // Rows after the mismatch were not built; it is this chunk's first fault.
                    let line = result.row_lines.get(local_index).copied().unwrap_or(0);
                    result.fault = Some(LineFault::Row {
                        rule: rule.mismatch(kind),
                        local_index,
                        line,
                    });
                }
            }
            let accepted = files::settle(&result, stats.rows, stats.lines, limits)?;
            if let Some(batch) = result.output.batch.take() {
                on_batch.call1((batch.into_py(py)?,))?;
            }
            stats.add(accepted, &result);
            if let Some(report) = progress {
                report.call1((stats.rows, stats.lines, stats.bytes_in))?;
            }
            Ok(true)
        },
    )?;
    if stats.rows == 0 {
        return Err(Fault::input(Code::FileNoRows, None));
    }
    Ok(stats)
}

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
enum Stop {
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

fn changed() -> Stop {
    Stop::Changed
}

fn text<'a>(value: &'a Bound<'_, PyString>) -> Result<&'a str, Stop> {
    value.to_str().map_err(|_| Stop::NotUtf8)
}

fn exact_str<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Result<&'a Bound<'py, PyString>, Stop> {
    value.cast_exact::<PyString>().map_err(|_| Stop::Slow)
}

/// The entries of an exact dict, borrowed from it (`PyDict_Next`), in order:
/// no reference counts touched (about a sixth of the walk's time on
/// tool-call rows). An entry is valid while the dict holds it, so it is only
/// used under this section's rule (nothing runs that could change the dict).
struct Items<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    pos: ffi::Py_ssize_t,
}

fn items<'a, 'py>(dict: &'a Bound<'py, PyDict>) -> Items<'a, 'py> {
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
struct SeqItems<'a, 'py> {
    seq: &'a Bound<'py, PyAny>,
    list: bool,
    index: ffi::Py_ssize_t,
}

fn seq_items<'a, 'py>(seq: &'a Bound<'py, PyAny>) -> SeqItems<'a, 'py> {
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
fn collector_off() -> bool {
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
fn absorb_py(
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
fn absorb_push(
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
fn write_py_json(
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
    fn push_py(&mut self, value: &Bound<'_, PyAny>, level: usize, walk: Walk) -> Result<(), Stop> {
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

/// A message with members beyond `role` and a str or null `content`, kept to
/// be read into its columns when the batch is finished.
struct PyExtra<'py> {
    /// The message's position in its batch.
    message: usize,
    dict: Bound<'py, PyDict>,
}

/// A batch built from Python rows: the columns filled as rows come in, the
/// other members typed as they come (`types`) and read when it is finished.
struct PyBatch<'py> {
    batch: Batch<'static>,
    types: MsgTypes,
    /// The other members' columns, filled as the messages are read while
    /// every type stays as it was first seen (`in_step`, see `absorb_push`).
    columns: Vec<Col>,
    in_step: bool,
    /// The JSON text of each content that is not a str, with its message's position.
    content_json: Vec<(usize, String)>,
    /// Past `Shape::max_fields` keys: every message is JSON text (`py_messages_json`).
    messages_json: bool,
    extras: Vec<PyExtra<'py>>,
    walk: Walk,
}

impl<'py> PyBatch<'py> {
    fn new(kind: Kind, walk: Walk) -> Self {
        PyBatch {
            batch: Batch::new(kind),
            types: MsgTypes::default(),
            columns: Vec::new(),
            in_step: true,
            content_json: Vec::new(),
            messages_json: false,
            extras: Vec::new(),
            walk,
        }
    }

    /// One message (an exact dict): its role and str content into their
    /// columns, its other members checked and typed.
    fn message(&mut self, message: &Bound<'py, PyDict>) -> Result<(), Stop> {
        let mut role = None;
        let mut content = None;
        let mut extra = false;
        for (key, value) in items(message) {
            let name = text(exact_str(&key)?)?;
            if name == "role" {
                role = Some(value.cast_exact::<PyString>().map_err(|_| Stop::Slow)?);
                continue;
            }
            if name == "content" {
                if let Ok(content_text) = value.cast_exact::<PyString>() {
                    content = Some(content_text);
                    continue;
                }
                if value.is_none() {
                    continue;
                }
                // Not a str: every content of the batch becomes JSON text;
                // this one's is written now, in the message's one read.
                self.types.content_json = true;
                let mut any = Ty::Json;
                absorb_py(&mut any, &value, 2, self.walk, &mut self.batch.extra_bytes)?;
                let mut json = String::new();
                write_py_json(&value, 2, self.walk, &mut json)?;
                self.content_json.push((self.batch.roles.valid.len, json));
                continue;
            }
            extra = true;
            self.batch.extra_bytes += name.len();
            let size = &mut self.batch.extra_bytes;
            if !self.messages_json && self.types.find(name).is_none() {
                self.messages_json = self.types.names.len() >= self.walk.shape.max_fields;
                if self.messages_json {
                    // One key too many: the messages will be JSON text; the
                    // columns filled so far go.
                    self.in_step = false;
                    self.columns = Vec::new();
                }
            }
            if self.messages_json {
                // Checked as the first pass takes it, not typed.
                absorb_py(&mut Ty::Json, &value, 2, self.walk, size)?;
                continue;
            }
            let at = self.types.slot(name);
            let ty = self.types.types.get_mut(at).ok_or_else(changed)?;
            if self.in_step {
                if self.columns.len() == at {
                    self.columns.push(Col::Null { len: 0 });
                }
                let column = self.columns.get_mut(at).ok_or_else(changed)?;
                column.pad_to(self.batch.roles.valid.len)?;
                self.in_step = absorb_push(ty, column, &value, 2, self.walk, size)?;
            } else {
                absorb_py(ty, &value, 2, self.walk, size)?;
            }
        }
        let role = role.ok_or(Stop::Slow)?;
        let role = text(&role)?;
        if role.is_empty() {
            return Err(Stop::Slow);
        }
        let content = match &content {
            Some(value) => Some(text(value)?),
            None => None,
        };
        if extra {
            let at = self.batch.roles.valid.len;
            self.extras.push(PyExtra {
                message: at,
                dict: message.clone(),
            });
        }
        Ok(self.batch.message(role, content, Vec::new())?)
    }

    /// Build every column (the extras read a second time).
    fn finish(self) -> Result<Built, Stop> {
        let PyBatch {
            batch,
            types,
            columns,
            in_step,
            content_json,
            messages_json,
            extras,
            walk,
        } = self;
        let columns = in_step.then_some(columns);
        let Batch {
            kind,
            rows,
            prompts,
            list_offsets,
            roles,
            contents,
            answers,
            ..
        } = batch;
        let prompt = match kind {
            Kind::Text => Col::Str(prompts),
            Kind::Messages => Col::List {
                valid: Bits::all_set(rows),
                offsets: list_offsets,
                child: Box::new(if messages_json {
                    py_messages_json(&roles, &contents, content_json, &extras, walk)?
                } else {
                    py_message_struct(roles, contents, types, content_json, columns, &extras, walk)?
                }),
            },
        };
        Ok(Built {
            kind,
            rows,
            prompt,
            answer: answers,
        })
    }
}

/// The struct column of a batch's messages from Python rows (`message_struct`'s twin):
/// `columns` are the other members' columns when they were filled in step with
/// their types; else (`None`) the messages are read a second time into them.
fn py_message_struct(
    roles: StrCol,
    contents: StrCol,
    types: MsgTypes,
    content_json: Vec<(usize, String)>,
    columns: Option<Vec<Col>>,
    extras: &[PyExtra<'_>],
    walk: Walk,
) -> Result<Col, Stop> {
    let count = roles.valid.len;
    let content = if types.content_json {
        let mut column = StrCol::new();
        let mut written = content_json.into_iter().peekable();
        for i in 0..count {
            let json = written.next_if(|(message, _)| *message == i);
            if let Some(text_value) = contents.get(i) {
                column.push_json_str(text_value)?;
                continue;
            }
            match json {
                Some((_, json)) => {
                    column.data.push_str(&json);
                    column.end_value(true)?;
                }
                None => column.push(None)?,
            }
        }
        Col::Json(column)
    } else {
        Col::Str(contents)
    };
    if let Some(columns) = columns {
        return Ok(assemble(roles, content, types.names, columns)?);
    }
    let mut columns: Vec<Col> = types.types.iter().map(Col::new).collect();
    for extra in extras {
        for (key, value) in items(&extra.dict) {
            let name = text(exact_str(&key)?)?;
            if name == "role" || name == "content" {
                continue;
            }
            let column = types
                .find(name)
                .and_then(|at| columns.get_mut(at))
                .ok_or_else(changed)?;
            column.pad_to(extra.message)?;
            column.push_py(&value, 2, walk)?;
        }
    }
    Ok(assemble(roles, content, types.names, columns)?)
}

/// The messages of a batch from Python rows as JSON text (`messages_json`'s
/// twin), their other members read a second time.
fn py_messages_json(
    roles: &StrCol,
    contents: &StrCol,
    content_json: Vec<(usize, String)>,
    extras: &[PyExtra<'_>],
    walk: Walk,
) -> Result<Col, Stop> {
    let mut column = StrCol::new();
    let mut written = content_json.into_iter().peekable();
    let mut pending = extras.iter().peekable();
    for i in 0..roles.valid.len {
        let role = roles.get(i).ok_or_else(changed)?;
        let other = written.next_if(|(message, _)| *message == i);
        let other = other.as_ref().map(|(_, json)| json.as_str());
        open_message_json(&mut column.data, role, contents.get(i), other);
        if let Some(extra) = pending.next_if(|extra| extra.message == i) {
            let mut members = Vec::new();
            for (key, value) in items(&extra.dict) {
                let name = text(exact_str(&key)?)?;
                if name != "role" && name != "content" && !value.is_none() {
                    members.push((name.to_owned(), value));
                }
            }
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (name, value) in &members {
                column.data.push(',');
                write_json_str(name, &mut column.data);
                column.data.push(':');
                write_py_json(value, 2, walk, &mut column.data)?;
            }
        }
        column.data.push('}');
        column.end_value(true)?;
    }
    Ok(Col::Json(column))
}

/// A caller's row that may take the fast walk: an exact dict whose prompt is
/// an exact str or list.
struct PyRow<'py> {
    row: Bound<'py, PyDict>,
    prompt: Bound<'py, PyAny>,
    /// The prompt's own kind.
    kind: Kind,
}

/// The row and its prompt's kind, if the row is an exact dict with an exact
/// str or list prompt.
fn py_prompt<'py>(row: Bound<'py, PyAny>) -> Result<PyRow<'py>, Stop> {
    let py = row.py();
    let row = row.cast_into_exact::<PyDict>().map_err(|_| Stop::Slow)?;
    // A lookup may run a user key's __eq__; `row` and `prompt` are strong
    // references, and nothing below relies on the dict staying as it was.
    let prompt = row
        .get_item(pyo3::intern!(py, "prompt"))?
        .ok_or(Stop::Slow)?;
    let kind = if prompt.is_exact_instance_of::<PyString>() {
        Kind::Text
    } else if prompt.is_exact_instance_of::<PyList>() {
        Kind::Messages
    } else {
        return Err(Stop::Slow);
    };
    Ok(PyRow { row, prompt, kind })
}

fn add_py_row<'py>(
    batch: &mut PyBatch<'py>,
    row: &Bound<'py, PyDict>,
    prompt: &Bound<'py, PyAny>,
) -> Result<(), Stop> {
    let py = row.py();
    if let Ok(prompt) = prompt.cast_exact::<PyString>() {
        let prompt = text(prompt)?;
        if prompt.is_empty() {
            return Err(Stop::Slow);
        }
        batch.batch.text_prompt(prompt)?;
    } else {
        let messages = prompt.cast_exact::<PyList>().map_err(|_| Stop::Slow)?;
        if messages.is_empty() || batch.walk.max_depth < 1 {
            return Err(Stop::Slow);
        }
        // The list's length is read again at every step.
        for message in seq_items(messages.as_any()) {
            let message = message?;
            let message = message.cast_exact::<PyDict>().map_err(|_| Stop::Slow)?;
            batch.message(&message)?;
        }
        batch.batch.end_messages()?;
    }
    let answer = row.get_item(pyo3::intern!(py, "answer"))?;
    let answer = match &answer {
        None => None,
        Some(value) if value.is_none() => None,
        Some(value) => Some(text(exact_str(value)?)?).filter(|a| !a.is_empty()),
    };
    batch.batch.end_row(answer)?;
    Ok(())
}

/// What `rows_to_batches` makes of a row it cannot build.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The caller's own rows: give up (`Ok(None)`) on anything unusual.
    First,
    /// Rows fresh from the row rules: report a kind mismatch or a value Arrow cannot hold.
    Normalised,
}

/// Build record batches (see `Built::into_py`) of at most `batch_rows` rows
/// and about `batch_bytes` bytes of text each; `None` when the first pass gives up.
pub fn rows_to_batches<'py>(
    rows: &Bound<'py, PyAny>,
    rule: KindRule,
    batch_rows: usize,
    batch_bytes: usize,
    max_rows: usize,
    walk: Walk,
    pass: Pass,
) -> Result<Option<Bound<'py, PyList>>, Fault> {
    let py = rows.py();
    let give_up = |fault: Fault| {
        if pass == Pass::First {
            Ok(None)
        } else {
            Err(fault)
        }
    };
    if !(rows.is_exact_instance_of::<PyList>() || rows.is_exact_instance_of::<PyTuple>()) {
        return give_up(Fault::Py(PyTypeError::new_err(
            "rows must be a list or tuple",
        )));
    }
    let count = rows.len()?;
    if count == 0 || count > max_rows {
        return give_up(Fault::Py(PyValueError::new_err("no rows, or too many")));
    }
    // See the section's header: no finalizer runs while we walk.
    let _pause = GcPause::new(py);
    let out = PyList::empty(py);
    let mut table = rule.fixed;
    let mut batch: Option<PyBatch<'py>> = None;
    // Asked after user code may have run (a signal handler, the row's
    // lookups) and before the next read of messages: whether the walk may go
    // on with borrowed references (see the section's header), which needs the
    // collector off. If user code turned it back on, the caller's rows are
    // left to the row rules (`false`); on the row rules' copies, which no one
    // else holds, it is switched off again until the call ends.
    let mut paused_again = Vec::new();
    let mut may_borrow = || {
        if collector_off() {
            return true;
        }
        if pass == Pass::Normalised {
            paused_again.push(GcPause::new(py));
            return true;
        }
        false
    };
    // Reports what stopped the walk at row `index`.
    let stopped = |stop: Stop, index: usize| match stop {
        Stop::Py(err) => Err(Fault::Py(err)),
        Stop::Build(err) => Err(Fault::Py(PyValueError::new_err(err))),
        Stop::Changed => give_up(Fault::Py(PyValueError::new_err(MISMATCH))),
        Stop::NotUtf8 => give_up(Rule::new(Code::NotUtf8, None).at(index)),
        Stop::IntTooLong => give_up(Rule::new(Code::IntTooLong, None).at(index)),
        Stop::Slow => give_up(not_normalised()),
    };
    // An exact list's iterator re-reads its length at every step (a user
    // __eq__ run by a lookup could shrink it); a tuple cannot change.
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        if index % 4096 == 0 {
            py.check_signals()?;
        }
        let PyRow {
            row,
            prompt,
            kind: own,
        } = match py_prompt(row) {
            Ok(found) => found,
            Err(Stop::Py(err)) => return Err(Fault::Py(err)),
            Err(_) => return give_up(not_normalised()),
        };
        let kind = *table.get_or_insert(own);
        if own != kind && !(own == Kind::Text && rule.fixed == Some(Kind::Messages)) {
            return give_up(rule.mismatch(kind).at(index));
        }
        let full = batch
            .as_ref()
            .is_some_and(|b| b.batch.rows >= batch_rows || b.batch.text_bytes() >= batch_bytes);
        // Messages are read next (a batch's second read, or this row's).
        if (full || own == Kind::Messages) && !may_borrow() {
            return give_up(not_normalised());
        }
        if full {
            if let Some(done) = batch.take() {
                let first = index - done.batch.rows;
                match done.finish() {
                    Ok(built) => out.append(built.into_py(py)?)?,
                    Err(stop) => return stopped(stop, first),
                }
            }
            // Letting the finished batch go may have freed a message that
            // user code changed meanwhile, running its finalizer.
            if own == Kind::Messages && !may_borrow() {
                return give_up(not_normalised());
            }
        }
        let current = batch.get_or_insert_with(|| {
            let mut fresh = PyBatch::new(kind, walk);
            // The rows this batch will hold, at most: their offsets never regrow.
            fresh.batch.reserve_rows(batch_rows.min(count - index));
            fresh
        });
        if let Err(stop) = add_py_row(current, &row, &prompt) {
            return stopped(stop, index);
        }
    }
    if !may_borrow() {
        return give_up(not_normalised());
    }
    if let Some(done) = batch.take() {
        let first = count.saturating_sub(done.batch.rows);
        match done.finish() {
            Ok(built) => out.append(built.into_py(py)?)?,
            Err(stop) => return stopped(stop, first),
        }
    }
    Ok(Some(out))
}

fn not_normalised() -> Fault {
    Fault::Py(PyTypeError::new_err(
        "rows_to_arrow: a row the row rules returned is not in normalised form",
    ))
}

trait AtRow {
    fn at(self, index: usize) -> Fault;
}

impl AtRow for Rule {
    fn at(self, index: usize) -> Fault {
        Fault::Row {
            rule: self,
            index,
            line: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{Bits, Col, Ty, J};

    fn num(text: &str, float: bool) -> J<'static> {
        J::Num(Cow::Owned(text.to_string()), float)
    }

    fn obj(members: Vec<(&str, J<'static>)>) -> J<'static> {
        J::Obj(
            members
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.to_string()), v))
                .collect(),
        )
    }

    fn joined(values: &[J<'static>]) -> Ty {
        joined_within(values, usize::MAX)
    }

    /// The join of values of a message key (level 2), typed to `typed_depth`.
    fn joined_within(values: &[J<'static>], typed_depth: usize) -> Ty {
        let mut ty = Ty::Null;
        for value in values {
            ty.absorb(value, 2, typed_depth);
        }
        ty
    }

    #[test]
    fn a_validity_stores_nothing_until_its_first_null_then_every_bit() {
        for first_null in [0usize, 1, 7, 8, 9, 15, 16, 17, 40] {
            let (mut lazy, mut eager) = (Bits::new(), Bits::values());
            for i in 0..48 {
                let set = i != first_null && i % 5 != 3 || i < first_null;
                lazy.push(set);
                eager.push(set);
                if i < first_null {
                    assert!(lazy.bytes.is_empty(), "stored before the first null");
                }
            }
            assert_eq!((lazy.len, lazy.unset), (eager.len, eager.unset));
            assert_eq!(lazy.bytes, eager.bytes, "first null at {first_null}");
            assert!((0..48).all(|i| lazy.is_set(i) == eager.is_set(i)));
        }
    }

    #[test]
    fn the_lattice_joins_like_merge_schemas() {
        assert_eq!(joined(&[J::Null]), Ty::Null);
        assert_eq!(joined(&[num("1", false), J::Null]), Ty::Int);
        assert_eq!(joined(&[num("1", false), num("1.5", true)]), Ty::Json);
        assert_eq!(joined(&[num("99999999999999999999", false)]), Ty::Json);
        assert_eq!(joined(&[J::Bool(true), num("1", false)]), Ty::Json);
        assert_eq!(joined(&[obj(vec![])]), Ty::Json);
        let a = obj(vec![("x", num("1", false))]);
        let b = obj(vec![("x", J::Null)]);
        let c = obj(vec![("y", num("1", false))]);
        assert_eq!(
            joined(&[a.clone(), b]),
            Ty::Struct(vec![("x".into(), Ty::Int)])
        );
        assert_eq!(joined(&[a, c]), Ty::Json);
        let list = J::Arr(vec![num("1", false), J::Str(Cow::Borrowed("s"))]);
        assert_eq!(joined(&[list]), Ty::List(Box::new(Ty::Json)));
        assert_eq!(joined(&[J::Arr(vec![])]), Ty::List(Box::new(Ty::Null)));
    }

    #[test]
    fn lists_and_objects_past_the_typed_depth_are_json() {
        let int = || num("1", false);
        let nested = J::Arr(vec![J::Arr(vec![int()])]);
        let list = |item: Ty| Ty::List(Box::new(item));
        assert_eq!(
            joined_within(std::slice::from_ref(&nested), 3),
            list(list(Ty::Int))
        );
        assert_eq!(
            joined_within(std::slice::from_ref(&nested), 2),
            list(Ty::Json)
        );
        assert_eq!(joined_within(&[nested], 1), Ty::Json);
        let object = obj(vec![("a", obj(vec![("b", int())]))]);
        let inner = Ty::Struct(vec![("b".into(), Ty::Int)]);
        assert_eq!(
            joined_within(std::slice::from_ref(&object), 3),
            Ty::Struct(vec![("a".into(), inner)])
        );
        assert_eq!(
            joined_within(&[object.clone(), J::Null], 2),
            Ty::Struct(vec![("a".into(), Ty::Json)])
        );
        // A scalar is never too deep; once JSON, a later list keeps it JSON.
        assert_eq!(joined_within(&[int()], 1), Ty::Int);
        assert_eq!(joined_within(&[J::Null, object], 1), Ty::Json);
    }

    #[test]
    fn columns_refuse_values_of_another_type_without_panicking() {
        let mut column = Col::new(&Ty::Int);
        assert!(column.push(&J::Str(Cow::Borrowed("x"))).is_err());
        assert!(column.push(&num("7", false)).is_ok());
        assert!(column.push(&J::Null).is_ok());
        assert_eq!(column.len(), 2);
        let mut column = Col::new(&Ty::Struct(vec![("a".into(), Ty::Bool)]));
        assert!(column.push(&obj(vec![])).is_err());
        assert!(column.push(&obj(vec![("a", J::Bool(true))])).is_ok());
        assert!(column.pad_to(5).is_ok());
        assert_eq!(column.len(), 5);
    }
}
