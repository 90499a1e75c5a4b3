//! A batch being built (`Batch`): its prompt and answer columns, the messages'
//! other keys, and the finished `Built`/`ArrowBatch`.

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::prelude::*;

use crate::json::{write_json_str, J};
use crate::jsonl::{self, Verbatim, VerbatimMessage};

use super::buffers::{Bits, StrCol};
use super::columns::{ArrowBatch, Col};
use super::types::Ty;
use super::{offset, Kind, Shape, MISMATCH};

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
    pub(super) kind: Kind,
    pub(super) rows: usize,
    /// The prompts (text kind).
    pub(super) prompts: StrCol,
    /// Message-list offsets (messages kind).
    pub(super) list_offsets: Vec<i32>,
    pub(super) roles: StrCol,
    pub(super) contents: StrCol,
    extras: Vec<Extra<'a>>,
    /// About how much text the extras hold.
    pub(super) extra_bytes: usize,
    pub(super) answers: StrCol,
}

/// A finished batch, its buffers all built (no Python object yet).
pub struct Built {
    pub(super) kind: Kind,
    pub(super) rows: usize,
    pub(super) prompt: Col,
    pub(super) answer: StrCol,
}

impl<'a> Batch<'a> {
    pub(super) fn new(kind: Kind) -> Self {
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
    pub(super) fn reserve_rows(&mut self, rows: usize) {
        match self.kind {
            Kind::Text => self.prompts.offsets.reserve(rows),
            Kind::Messages => self.list_offsets.reserve(rows),
        }
        self.answers.offsets.reserve(rows);
    }

    pub(super) fn text_bytes(&self) -> usize {
        self.prompts.data.len()
            + self.roles.data.len()
            + self.contents.data.len()
            + self.extra_bytes
            + self.answers.data.len()
    }

    pub(super) fn message(
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

    pub(super) fn end_messages(&mut self) -> Result<(), String> {
        self.list_offsets.push(offset(self.roles.valid.len)?);
        Ok(())
    }

    /// A str prompt: a text row, or one user message when the table holds messages.
    pub(super) fn text_prompt(&mut self, prompt: &str) -> Result<(), String> {
        match self.kind {
            Kind::Text => self.prompts.push(Some(prompt)),
            Kind::Messages => {
                self.message("user", Some(prompt), Vec::new())?;
                self.end_messages()
            }
        }
    }

    pub(super) fn end_row(&mut self, answer: Option<&str>) -> Result<(), String> {
        self.answers.push(answer)?;
        self.rows += 1;
        Ok(())
    }

    /// A row `jsonl::verbatim_row` took whose messages are all plain (a role
    /// and a str or null content): what `add_parsed` builds of it, built
    /// from its text.
    pub(super) fn verbatim(
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
    pub(super) fn finish(self, shape: Shape) -> Result<Built, String> {
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
pub(super) struct MsgTypes {
    /// Some content is neither a str nor None: every content is JSON text.
    pub(super) content_json: bool,
    pub(super) names: Vec<String>,
    pub(super) types: Vec<Ty>,
    /// Position of each name (looked up past a few names; below, a scan is faster).
    index: HashMap<String, usize>,
}

/// Below this many fields a name is found by scanning.
const SCAN_FIELDS: usize = 8;

impl MsgTypes {
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        if self.names.len() <= SCAN_FIELDS {
            self.names.iter().position(|known| known == name)
        } else {
            self.index.get(name).copied()
        }
    }

    /// The position of field `name`, added (typed null so far) when new.
    pub(super) fn slot(&mut self, name: &str) -> usize {
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
pub(super) fn assemble(
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
pub(super) fn open_message_json(
    out: &mut String,
    role: &str,
    content: Option<&str>,
    other: Option<&str>,
) {
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
    pub(super) fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, ArrowBatch>> {
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
