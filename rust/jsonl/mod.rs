//! JSONL rollout files: the row rules over parsed JSON, and a pipeline that
//! reads, parses and checks chunks of lines on worker threads (and, at the
//! start and end of a file, on the caller's thread) while the caller's thread
//! consumes the results in input order.
//!
//! Order of checks for every line (the pure-Python twin keeps the same):
//! line length, blank (skipped), row cap, UTF-8, JSON syntax, row rules.
//!
//! One file per concern (the pure-Python twin, `_jsonl.py`, keeps the same
//! rules; docs/architecture.md maps its parts to these files):
//! - `rules.rs`: the row rules over parsed JSON (`check_row`);
//! - `write.rs`: canonical JSONL output (`write_row`);
//! - `verbatim.rs`: the shortcut for rows already canonical (`verbatim_row`,
//!   `write_verbatim_row`): it recognises, never decides;
//! - `lines.rs`: every line of a chunk through the checks, in order
//!   (`process_chunk`);
//! - `gzip.rs`: gzip undone where the input has it;
//! - `chunker.rs`: the input cut into chunks of whole lines (`Chunker`), and
//!   the buffers kept for later chunks and calls (`Spare`);
//! - `pipeline.rs`: the threads that cut and parse chunks, and the results
//!   handed back in input order (`run`).
//!
//! This file holds the types they share, and names what the rest of the
//! crate uses.

use std::borrow::Cow;
use std::io::{self, Read};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::errors::{Reason, Rule};
use crate::json::{JsonLimits, J};

mod chunker;
mod gzip;
mod lines;
mod pipeline;
mod rules;
mod verbatim;
mod write;

pub(crate) use chunker::{Spare, CHUNK_BYTES};
pub(crate) use gzip::GZIP_MAGIC;
pub use lines::{process_chunk, ChunkResult};
pub(crate) use pipeline::HELPED_FILE_BYTES;
pub use pipeline::{run, Event, TICK};
pub use verbatim::{
    verbatim_row, verbatim_row_naming, write_verbatim_row, Verbatim, VerbatimMessage,
};
pub use write::write_row;
pub(crate) use write::write_value;

/// What every line of a chunk is checked against (part of the file limits
/// handed over from Python).
#[derive(Clone, Copy)]
pub struct LineLimits {
    /// A longer line (without its newline) is refused: the pipeline's memory
    /// stays bounded.
    pub max_line_bytes: usize,
    /// How deeply containers may nest inside one chat message (the row rules).
    pub max_depth: usize,
    /// The JSON parser's limits.
    pub json: JsonLimits,
    /// Whether a chunk goes on past a refused line (bad UTF-8, bad JSON, a row
    /// rule), recording each in `ChunkResult::faults`; without it the first
    /// one ends the chunk. A line over `max_line_bytes` ends it either way:
    /// the reader cannot step over a line it would have to hold whole, so
    /// that is a fault of the input as a whole, as `ReadFault::LineTooLong`.
    pub keep_going: bool,
}

/// A normalised row, borrowing from its line where it can.
pub struct Row<'a> {
    pub prompt: J<'a>,
    pub answer: Option<Cow<'a, str>>,
    pub dropped_keys: usize,
    /// The row object's members as parsed (a key may repeat): `prompt` and
    /// `answer` (their values moved out) and the keys dropped (their values
    /// not built: `Null`). Whoever names the dropped keys (`stats.rs`) reads
    /// them here.
    pub members: Vec<(Cow<'a, str>, J<'a>)>,
}

impl Row<'_> {
    /// A copy that owns its text, to send to another thread (without
    /// `members`: the rows sent on need only what they keep).
    pub fn into_owned(self) -> Row<'static> {
        Row {
            prompt: self.prompt.into_owned(),
            answer: self.answer.map(|a| Cow::Owned(a.into_owned())),
            dropped_keys: self.dropped_keys,
            members: Vec::new(),
        }
    }
}

/// Why a line was refused, with the line's local row index where it has one.
pub enum LineFault {
    Row {
        rule: Rule,
        local_index: usize,
        line: u64,
    },
    Syntax {
        reason: Reason,
        line: u64,
        column: usize,
        local_index: usize,
    },
    Utf8 {
        line: u64,
        byte: usize,
        local_index: usize,
    },
    /// Checked before anything else, so it has no row index of its own.
    TooLong { line: u64, rows_before: usize },
}

impl LineFault {
    pub fn local_index(&self) -> usize {
        match self {
            LineFault::Row { local_index, .. }
            | LineFault::Syntax { local_index, .. }
            | LineFault::Utf8 { local_index, .. } => *local_index,
            LineFault::TooLong { rows_before, .. } => *rows_before,
        }
    }
}

/// Problems of the file as a whole, found while reading.
pub enum ReadFault {
    Io(io::Error),
    Gzip,
    /// A line over `max_line_bytes` with no newline in sight: it is the line
    /// after all those in the chunks before it.
    LineTooLong,
    /// More than `max_bytes` bytes of input (after decompression): found at
    /// the line after all those in the chunks before it.
    TooLarge,
}

/// The input as the pipeline reads it.
pub struct Input {
    pub reader: Box<dyn Read + Send>,
    /// Whether a read now would wait (a pipe or terminal with nothing in it):
    /// lines already read then go out without waiting for a whole block.
    pub idle: Box<dyn Fn() -> bool + Send>,
    /// Set when the pipeline ends, however it ends: a reader waiting for input
    /// gives up at its next look (every `TICK`), so it never reads input meant
    /// for someone else (standard input, read again by a later call).
    pub stop: Arc<AtomicBool>,
    /// Input bytes (after decompression) accepted at most; one more is refused.
    pub max_bytes: u64,
    /// The longest line accepted (`LineLimits::max_line_bytes`): the reader
    /// stops at a longer one with no newline in sight.
    pub max_line_bytes: usize,
    /// A regular file's size when opened. Its reads never wait, so the
    /// pipeline has no reader thread of its own (its threads cut chunks in
    /// turn), and its chunks shrink toward the file's end.
    pub file_size: Option<u64>,
    /// Whether a regular file's first bytes are gzip's (`GZIP_MAGIC`), read
    /// without moving its offset when opened: then `file_size` says nothing of
    /// how many bytes of JSONL it holds (`files::workers_writing_jsonl`).
    pub looks_gzip: bool,
}

/// What the unit tests check lines against.
#[cfg(test)]
const LIMITS: LineLimits = LineLimits {
    max_line_bytes: 1 << 20,
    max_depth: 4,
    json: JsonLimits {
        max_depth: 8,
        max_int_digits: 20,
    },
    keep_going: false,
};
