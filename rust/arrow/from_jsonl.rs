//! Rows parsed from JSONL lines into batches, and a whole file read into
//! batches (`read_file`).

use std::path::Path;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{Code, Fault};
use crate::files::{self, FileLimits, FileStats};
use crate::json::J;
use crate::jsonl::{self, ChunkResult, Event, LineFault, LineLimits, Row, VerbatimMessage};

use super::batch::{Batch, Built};
use super::{Kind, KindRule, Shape};

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
    pub(super) fn new(rule: KindRule, shape: Shape) -> Self {
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

    pub(super) fn finish(self) -> ChunkArrowDone {
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
            faults,
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
            faults,
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
                    result.faults = vec![LineFault::Row {
                        rule: rule.mismatch(kind),
                        local_index,
                        line,
                    }];
                }
            }
            let accepted = files::settle(&result, stats.rows, stats.lines, limits, None)?;
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
