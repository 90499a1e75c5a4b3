//! Batches from Python rows (`rows_to_batches`): the rows, their prompts and
//! messages, in one pass or two.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::errors::{Code, Fault, Rule};
use crate::json::write_json_str;
use crate::rows::GcPause;

use super::batch::{assemble, open_message_json, Batch, Built, MsgTypes};
use super::buffers::{Bits, StrCol};
use super::columns::Col;
use super::py_walk::{
    absorb_push, absorb_py, changed, collector_off, exact_str, items, seq_items, text,
    write_py_json, Stop, Walk,
};
use super::types::Ty;
use super::{Kind, KindRule, MISMATCH};

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
    pub(super) fn new(kind: Kind, walk: Walk) -> Self {
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
    pub(super) fn message(&mut self, message: &Bound<'py, PyDict>) -> Result<(), Stop> {
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
    pub(super) fn finish(self) -> Result<Built, Stop> {
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
            return give_up(rule.mismatch(kind, 0).at(index));
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
