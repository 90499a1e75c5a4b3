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
//! (`agent_rollout/arrow/schema.py`, docs/arrow.md); this file follows it:
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
//!
//! One file per concern (the Python side, `agent_rollout/arrow/`, has the
//! same sections; docs/architecture.md maps them to these files):
//! - `types.rs`: the type lattice of a column and its join (`Ty`);
//! - `buffers.rs`: validity bits, string columns, and the `Buffer` handed to
//!   Python;
//! - `columns.rs`: columns of each type (`Col`) and the `Column` tree Python
//!   assembles;
//! - `batch.rs`: a batch being built (`Batch`): prompt, answer and message
//!   columns, finished into an `ArrowBatch`;
//! - `from_jsonl.rs`: rows parsed from JSONL lines, and a file read into
//!   batches (`read_file`);
//! - `py_walk.rs`: the walk over rows as Python objects (`Walk`, `IntRule`);
//! - `py_batch.rs`: batches from Python rows (`rows_to_batches`, `Pass`).
//!
//! This file holds the kind and shape rules they share, and names what the
//! rest of the crate uses.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{Code, Rule, Seg};

mod batch;
mod buffers;
mod columns;
mod from_jsonl;
mod py_batch;
mod py_walk;
#[cfg(test)]
mod tests;
mod types;

pub use buffers::Buffer;
pub use columns::{ArrowBatch, Column};
pub use from_jsonl::read_file;
pub use py_batch::{rows_to_batches, Pass};
pub use py_walk::{IntRule, Walk};

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

    /// Why the table has the kind it has, as the error message says it:
    /// `set_by` is the row whose prompt decided it (`prompt_kind` auto).
    fn why(&self, set_by: usize) -> String {
        match self.fixed {
            None => format!("set by row {set_by}"),
            Some(Kind::Text) => "prompt_kind='text'".to_string(),
            Some(Kind::Messages) => "prompt_kind='messages'".to_string(),
        }
    }

    /// The error for a row whose prompt is not of the table's kind (decided
    /// by row `set_by` when no kind was asked for).
    fn mismatch(&self, table: Kind, set_by: usize) -> Rule {
        let code = match table {
            Kind::Text => Code::PromptNotText,
            Kind::Messages => Code::PromptNotMessages,
        };
        Rule::new(code, Some(self.why(set_by))).within(Seg::Key("prompt".into()))
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
