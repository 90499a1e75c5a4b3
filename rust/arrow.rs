//! Rollout rows as Arrow buffers: the layout of `agent_rollout.arrow`'s schema,
//! built in Rust and handed to pyarrow as `bytes` (one copy: the stable ABI for
//! Python 3.10 has no buffer protocol to lend a `Vec`), which pyarrow wraps
//! without another copy.
//!
//! No Arrow crate is used (see docs/arrow.md for the measured cost of arrow-rs
//! and parquet): a string column is three plain buffers (validity bitmap,
//! 32-bit offsets, UTF-8 bytes), a message list is one more offsets buffer,
//! and `agent_rollout.arrow.batch_from_buffers` assembles them with
//! `pyarrow.Array.from_buffers`. The schema itself is written down once, in
//! Python; this file only follows it:
//!
//! * text prompts: `prompt: string`, `answer: string` (nullable);
//! * message prompts: `prompt: list<struct<role, content, extra_json>>`, where
//!   `content` is the content when it is a str and `extra_json` the compact JSON
//!   text of every other key of the message (null when there is none).

use std::sync::mpsc::Receiver;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{Code, Fault, Rule, Seg};
use crate::files::{self, FileLimits, FileStats};
use crate::json::{py_float_repr, write_json_str, J};
use crate::jsonl::{self, Event, LineFault, Row, Waited};

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

/// Too much text for one Arrow string column (32-bit offsets).
fn overflow() -> PyErr {
    PyValueError::new_err("a string column grew past 2 GiB; Arrow strings use 32-bit offsets")
}

/// One Arrow string column being built.
struct StrCol {
    offsets: Vec<i32>,
    data: Vec<u8>,
    validity: Vec<u8>,
    len: usize,
    nulls: usize,
}

impl StrCol {
    fn new() -> Self {
        StrCol {
            offsets: vec![0],
            data: Vec::new(),
            validity: Vec::new(),
            len: 0,
            nulls: 0,
        }
    }

    fn push(&mut self, value: Option<&str>) -> PyResult<()> {
        if self.len % 8 == 0 {
            self.validity.push(0);
        }
        match value {
            Some(text) => {
                self.data.extend_from_slice(text.as_bytes());
                if let Some(byte) = self.validity.last_mut() {
                    *byte |= 1 << (self.len % 8);
                }
            }
            None => self.nulls += 1,
        }
        let end = i32::try_from(self.data.len()).map_err(|_| overflow())?;
        self.offsets.push(end);
        self.len += 1;
        Ok(())
    }

    /// The column as Python bytes (`StringColumn`).
    fn into_py(self, py: Python<'_>) -> PyResult<Py<StringColumn>> {
        let validity = (self.nulls > 0).then(|| PyBytes::new(py, &self.validity).unbind());
        let column = StringColumn {
            validity,
            offsets: offsets_bytes(py, &self.offsets).unbind(),
            data: PyBytes::new(py, &self.data).unbind(),
            null_count: self.nulls,
        };
        Py::new(py, column)
    }
}

fn offsets_bytes<'py>(py: Python<'py>, offsets: &[i32]) -> Bound<'py, PyBytes> {
    let mut raw = Vec::with_capacity(offsets.len() * 4);
    for offset in offsets {
        raw.extend_from_slice(&offset.to_ne_bytes());
    }
    PyBytes::new(py, &raw)
}

/// One Arrow string column, as `pyarrow.Array.from_buffers` takes it
/// (`_native.StringColumn`).
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct StringColumn {
    /// The validity bitmap (bit i set: value i is not null); None when no
    /// value is null.
    validity: Option<Py<PyBytes>>,
    /// `len + 1` native-endian `int32` offsets into `data`.
    offsets: Py<PyBytes>,
    /// The values' UTF-8 bytes, one after another.
    data: Py<PyBytes>,
    null_count: usize,
}

/// One record batch as buffers (`_native.ArrowBatch`), assembled by
/// `agent_rollout.arrow.batch_from_buffers`.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct ArrowBatch {
    /// `"text"` or `"messages"`: the prompt kind of the batch.
    kind: &'static str,
    rows: usize,
    /// `rows + 1` native-endian `int32` offsets into the messages (messages
    /// kind only).
    list_offsets: Option<Py<PyBytes>>,
    /// Messages in the batch (0 for the text kind).
    messages: usize,
    /// The prompt (text kind), or each message's role.
    first: Py<StringColumn>,
    /// Each message's str content (messages kind only).
    content: Option<Py<StringColumn>>,
    /// Each message's other keys as compact JSON (messages kind only).
    extra: Option<Py<StringColumn>>,
    answer: Py<StringColumn>,
}

/// One record batch being built, of one prompt kind.
pub struct Batch {
    kind: Kind,
    rows: usize,
    /// Message-list offsets (messages kind only).
    list_offsets: Vec<i32>,
    /// The prompt (text kind) or each message's role.
    first: StrCol,
    content: StrCol,
    extra: StrCol,
    answer: StrCol,
    /// Scratch for one message's `extra_json`.
    scratch: String,
}

impl Batch {
    fn new(kind: Kind) -> Self {
        Batch {
            kind,
            rows: 0,
            list_offsets: vec![0],
            first: StrCol::new(),
            content: StrCol::new(),
            extra: StrCol::new(),
            answer: StrCol::new(),
            scratch: String::new(),
        }
    }

    fn text_bytes(&self) -> usize {
        self.first.data.len()
            + self.content.data.len()
            + self.extra.data.len()
            + self.answer.data.len()
    }

    fn message(&mut self, role: &str, content: Option<&str>, extra: bool) -> PyResult<()> {
        self.first.push(Some(role))?;
        self.content.push(content)?;
        if extra {
            let text = std::mem::take(&mut self.scratch);
            self.extra.push(Some(&text))?;
            self.scratch = text;
        } else {
            self.extra.push(None)?;
        }
        Ok(())
    }

    fn end_messages(&mut self) -> PyResult<()> {
        let end = i32::try_from(self.first.len).map_err(|_| overflow())?;
        self.list_offsets.push(end);
        Ok(())
    }

    /// A str prompt: a text row, or one user message when the table holds messages.
    fn text_prompt(&mut self, prompt: &str) -> PyResult<()> {
        match self.kind {
            Kind::Text => self.first.push(Some(prompt)),
            Kind::Messages => {
                self.message("user", Some(prompt), false)?;
                self.end_messages()
            }
        }
    }

    fn end_row(&mut self, answer: Option<&str>) -> PyResult<()> {
        self.answer.push(answer)?;
        self.rows += 1;
        Ok(())
    }

    /// The finished batch as Python bytes (`ArrowBatch`).
    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, ArrowBatch>> {
        let batch = match self.kind {
            Kind::Text => ArrowBatch {
                kind: "text",
                rows: self.rows,
                list_offsets: None,
                messages: 0,
                first: self.first.into_py(py)?,
                content: None,
                extra: None,
                answer: self.answer.into_py(py)?,
            },
            Kind::Messages => ArrowBatch {
                kind: "messages",
                rows: self.rows,
                list_offsets: Some(offsets_bytes(py, &self.list_offsets).unbind()),
                messages: self.first.len,
                content: Some(self.content.into_py(py)?),
                extra: Some(self.extra.into_py(py)?),
                first: self.first.into_py(py)?,
                answer: self.answer.into_py(py)?,
            },
        };
        Bound::new(py, batch)
    }
}

// ---- rows parsed from JSONL ----------------------------------------------------------------

/// Write a parsed message's `extra_json` into `out`: every member but `role`
/// and a str `content`, in order. Returns whether there was any.
fn write_extra_parsed(members: &[(std::borrow::Cow<'_, str>, J<'_>)], out: &mut String) -> bool {
    out.clear();
    for (key, value) in members {
        if key == "role" || (key == "content" && matches!(value, J::Str(_))) {
            continue;
        }
        out.push(if out.is_empty() { '{' } else { ',' });
        write_json_str(key, out);
        out.push(':');
        jsonl::write_value(value, out);
    }
    if out.is_empty() {
        return false;
    }
    out.push('}');
    true
}

/// What a worker made of one chunk of a JSONL file.
pub struct ChunkArrow {
    rule: KindRule,
    batch: Option<Batch>,
    /// Index (among the chunk's rows) of the first row not of the chunk's kind.
    mismatch: Option<usize>,
    /// The first error building the buffers (an over-long column).
    failed: Option<String>,
}

impl ChunkArrow {
    fn new(rule: KindRule) -> Self {
        ChunkArrow {
            rule,
            batch: None,
            mismatch: None,
            failed: None,
        }
    }

    fn add(&mut self, row: &Row<'_>) {
        if self.mismatch.is_some() || self.failed.is_some() {
            return;
        }
        let is_text = matches!(row.prompt, J::Str(_));
        let own = if is_text { Kind::Text } else { Kind::Messages };
        let rule = self.rule;
        let batch = self
            .batch
            .get_or_insert_with(|| Batch::new(rule.fixed.unwrap_or(own)));
        let fits = own == batch.kind || (is_text && rule.fixed == Some(Kind::Messages));
        if !fits {
            self.mismatch = Some(batch.rows);
            return;
        }
        if let Err(err) = add_parsed(batch, row) {
            self.failed = Some(err.to_string());
        }
    }
}

fn add_parsed(batch: &mut Batch, row: &Row<'_>) -> PyResult<()> {
    match &row.prompt {
        J::Str(text) => batch.text_prompt(text)?,
        J::Arr(messages) => {
            for message in messages {
                let J::Obj(members) = message else {
                    return Err(PyTypeError::new_err("a checked message is an object"));
                };
                let mut role = "";
                let mut content = None;
                for (key, value) in members {
                    match (key.as_ref(), value) {
                        ("role", J::Str(text)) => role = text,
                        ("content", J::Str(text)) => content = Some(text.as_ref()),
                        _ => {}
                    }
                }
                let mut scratch = std::mem::take(&mut batch.scratch);
                let extra = write_extra_parsed(members, &mut scratch);
                batch.scratch = scratch;
                batch.message(role, content, extra)?;
            }
            batch.end_messages()?;
        }
        _ => return Err(PyTypeError::new_err("a checked prompt is a str or a list")),
    }
    batch.end_row(row.answer.as_deref())
}

/// Read a rollout JSONL file into Arrow buffers, chunk by chunk, in order:
/// `on_batch(batch)` receives each chunk's `ArrowBatch`.
pub fn read_file(
    py: Python<'_>,
    path: &str,
    limits: FileLimits,
    rule: KindRule,
    on_batch: &Bound<'_, PyAny>,
    progress: Option<&Bound<'_, PyAny>>,
) -> Result<FileStats, Fault> {
    let source = files::open_source(py, path, &limits)?;
    let lines = limits.lines();
    let mut stats = FileStats::default();
    let mut table: Option<Kind> = rule.fixed;
    let work = |data: &[u8]| {
        jsonl::process_chunk(
            data,
            lines,
            ChunkArrow::new(rule),
            |out: &mut ChunkArrow, row| out.add(&row),
        )
    };
    let wait = |rx: Receiver<_>| py.detach(move || Waited::recv(rx));
    let tick = || py.check_signals().map_err(Fault::from);
    jsonl::run(
        source,
        files::workers(),
        work,
        wait,
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
// the buffers are built straight from the input, with no Python object made.
// Anything else (a subclass, a mapping, a rule broken, a kind mismatch, a
// lone surrogate) gives up the pass: Python then runs the row rules
// (`normalise_rollout_rows`), which raise the error both engines agree on,
// and the second pass builds from the rows they return, where a mismatch or
// a lone surrogate is the error to report.

/// Why the fast walk over Python rows stopped.
enum Stop {
    /// A shape the first pass does not take (or, in the second pass, a bug).
    Slow,
    /// A str Arrow cannot hold (a lone surrogate).
    NotUtf8,
    /// An exception (raised by Python code a lookup ran, or memory): passed on.
    Py(PyErr),
}

impl From<PyErr> for Stop {
    fn from(err: PyErr) -> Self {
        Stop::Py(err)
    }
}

fn text<'a>(value: &'a Bound<'_, PyString>) -> Result<&'a str, Stop> {
    value.to_str().map_err(|_| Stop::NotUtf8)
}

fn exact_str<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Result<&'a Bound<'py, PyString>, Stop> {
    value.cast_exact::<PyString>().map_err(|_| Stop::Slow)
}

/// Append `value`, a value at nesting `level` of a message, as JSON the way
/// `json.dumps(ensure_ascii=False, separators=(",", ":"))` writes it.
fn write_py_json(
    value: &Bound<'_, PyAny>,
    level: usize,
    max_depth: usize,
    out: &mut String,
) -> Result<(), Stop> {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(text_value) = value.cast_exact::<PyString>() {
        write_json_str(text(text_value)?, out);
    } else if let Ok(flag) = value.cast_exact::<PyBool>() {
        out.push_str(if flag.is_true() { "true" } else { "false" });
    } else if let Ok(number) = value.cast_exact::<PyInt>() {
        match number.extract::<i64>() {
            Ok(small) => out.push_str(&small.to_string()),
            Err(_) => out.push_str(text(&number.str()?)?),
        }
    } else if let Ok(number) = value.cast_exact::<PyFloat>() {
        let number = number.value();
        if !number.is_finite() {
            return Err(Stop::Slow);
        }
        py_float_repr(number, out);
    } else if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
        if level > max_depth {
            return Err(Stop::Slow);
        }
        out.push('[');
        // Iterating an exact list or tuple runs no user code; the iterator
        // re-reads the length at every step.
        for (i, item) in value.try_iter()?.enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_py_json(&item?, level + 1, max_depth, out)?;
        }
        out.push(']');
    } else if let Ok(dict) = value.cast_exact::<PyDict>() {
        if level > max_depth {
            return Err(Stop::Slow);
        }
        out.push('{');
        // Walk a snapshot of the items: no user code runs here, but an
        // allocation may start a collection whose `__del__` changes the dict
        // (PyO3's dict iterator then panics). `dict.items()` builds its list
        // of strong (key, value) tuples with no allocation once it starts
        // filling; `dict.copy()` is not safe (3.11 reads the length after
        // allocating the copy). A list's iterator re-reads its length.
        for (i, pair) in dict.items().iter().enumerate() {
            let (key, item) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
            if i > 0 {
                out.push(',');
            }
            write_json_str(text(exact_str(&key)?)?, out);
            out.push(':');
            write_py_json(&item, level + 1, max_depth, out)?;
        }
        out.push('}');
    } else {
        return Err(Stop::Slow);
    }
    Ok(())
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
fn py_prompt<'py>(row: &Bound<'py, PyAny>) -> Result<PyRow<'py>, Stop> {
    let py = row.py();
    let row = row.cast_exact::<PyDict>().map_err(|_| Stop::Slow)?.clone();
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

fn add_py_row(
    batch: &mut Batch,
    row: &Bound<'_, PyDict>,
    prompt: &Bound<'_, PyAny>,
    max_depth: usize,
) -> Result<(), Stop> {
    let py = row.py();
    if let Ok(prompt) = prompt.cast_exact::<PyString>() {
        let prompt = text(prompt)?;
        if prompt.is_empty() {
            return Err(Stop::Slow);
        }
        batch.text_prompt(prompt)?;
    } else {
        let messages = prompt.cast_exact::<PyList>().map_err(|_| Stop::Slow)?;
        if messages.is_empty() || max_depth < 1 {
            return Err(Stop::Slow);
        }
        for message in messages.iter() {
            let message = message
                .cast_into_exact::<PyDict>()
                .map_err(|_| Stop::Slow)?;
            let mut role = None;
            let mut content = None;
            let mut scratch = std::mem::take(&mut batch.scratch);
            scratch.clear();
            // A snapshot of the items (see `write_py_json`): a collection run by
            // an allocation below may change the caller's message under us.
            for pair in message.items().iter() {
                let (key, value) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
                let name = text(exact_str(&key)?)?;
                if name == "role" {
                    role = Some(
                        value
                            .cast_into_exact::<PyString>()
                            .map_err(|_| Stop::Slow)?,
                    );
                    continue;
                }
                if name == "content" {
                    if let Ok(content_text) = value.cast_exact::<PyString>() {
                        content = Some(content_text.clone());
                        continue;
                    }
                }
                scratch.push(if scratch.is_empty() { '{' } else { ',' });
                write_json_str(name, &mut scratch);
                scratch.push(':');
                write_py_json(&value, 2, max_depth, &mut scratch)?;
            }
            let extra = !scratch.is_empty();
            if extra {
                scratch.push('}');
            }
            batch.scratch = scratch;
            let role = role.ok_or(Stop::Slow)?;
            let role = text(&role)?;
            if role.is_empty() {
                return Err(Stop::Slow);
            }
            let content = match &content {
                Some(value) => Some(text(value)?),
                None => None,
            };
            batch.message(role, content, extra)?;
        }
        batch.end_messages()?;
    }
    let answer = row.get_item(pyo3::intern!(py, "answer"))?;
    let answer = match &answer {
        None => None,
        Some(value) if value.is_none() => None,
        Some(value) => Some(text(exact_str(value)?)?).filter(|a| !a.is_empty()),
    };
    batch.end_row(answer)?;
    Ok(())
}

/// What `rows_to_batches` makes of a row it cannot build.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The caller's own rows: give up (`Ok(None)`) on anything unusual.
    First,
    /// Rows fresh from the row rules: report a kind mismatch or a lone surrogate.
    Normalised,
}

/// Build record batches (see `Batch::into_py`) of at most `batch_rows` rows
/// and about `batch_bytes` bytes of text each; `None` when the first pass gives up.
pub fn rows_to_batches<'py>(
    rows: &Bound<'py, PyAny>,
    rule: KindRule,
    batch_rows: usize,
    batch_bytes: usize,
    max_rows: usize,
    max_depth: usize,
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
    let out = PyList::empty(py);
    let mut table = rule.fixed;
    let mut batch: Option<Batch> = None;
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
        } = match py_prompt(&row) {
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
            .is_some_and(|b| b.rows >= batch_rows || b.text_bytes() >= batch_bytes);
        if full {
            if let Some(done) = batch.take() {
                out.append(done.into_py(py)?)?;
            }
        }
        let current = batch.get_or_insert_with(|| Batch::new(kind));
        match add_py_row(current, &row, &prompt, max_depth) {
            Ok(()) => {}
            Err(Stop::Py(err)) => return Err(Fault::Py(err)),
            Err(Stop::NotUtf8) => return give_up(Rule::new(Code::NotUtf8, None).at(index)),
            Err(Stop::Slow) => return give_up(not_normalised()),
        }
    }
    if let Some(done) = batch.take() {
        out.append(done.into_py(py)?)?;
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
