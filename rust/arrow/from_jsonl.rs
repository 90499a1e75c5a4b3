//! Rows parsed from JSONL lines into batches, and a whole file read into
//! batches (`read_file`).

use std::path::Path;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::Fault;
use crate::files::{self, BadRows, FileLimits, FileStats, OnBad};
use crate::json::J;
use crate::jsonl::{self, ChunkResult, Event, LineFault, LineLimits, Row, VerbatimMessage};

use super::batch::{Batch, Built};
use super::{Kind, KindRule, Shape};

// ---- rows parsed from JSONL ----------------------------------------------------------------

/// What a worker is making of one chunk of a JSONL file.
///
/// A row whose prompt is not of the batch's kind is noted by its place among
/// the chunk's good rows (`off`). A run that stops at the first bad row stops
/// building there: that row is the chunk's first fault, unless a line before
/// it was refused. A run that keeps going (`LineLimits::keep_going`) goes on;
/// with no kind asked for, the rows of the other kind go into a batch of
/// their own (`other`), since the table's kind may be set by an earlier
/// chunk's first row: the consumer, which sees the chunks in order, takes the
/// batch of the table's kind and makes the rest bad rows (`for_table`).
struct ChunkArrow<'d> {
    rule: KindRule,
    shape: Shape,
    keep_going: bool,
    /// The messages of the row `add_verbatim` is looking at.
    messages: Vec<VerbatimMessage<'d>>,
    /// The rows of the kind asked for, else of the chunk's first row's kind.
    batch: Option<Batch<'d>>,
    /// The rows of the other kind (no kind asked for, keeping going).
    other: Option<Batch<'d>>,
    /// The good rows seen (each row that passed the line checks and row rules).
    good: usize,
    /// The good rows not in `batch`, by their place among the good rows, in order.
    off: Vec<usize>,
    /// The first error building the buffers (an over-long column).
    failed: Option<String>,
}

/// What a worker made of one chunk: the batches built, ready to hand over.
pub struct ChunkArrowDone {
    batch: Option<Built>,
    other: Option<Built>,
    good: usize,
    off: Vec<usize>,
    failed: Option<String>,
}

impl<'d> ChunkArrow<'d> {
    pub(super) fn new(rule: KindRule, shape: Shape, keep_going: bool) -> Self {
        ChunkArrow {
            rule,
            shape,
            keep_going,
            messages: Vec::new(),
            batch: None,
            other: None,
            good: 0,
            off: Vec::new(),
            failed: None,
        }
    }

    /// The batch a good row of this kind goes into; `None` when it goes into
    /// none (a row the table cannot hold, or the chunk takes no more rows: a
    /// build error, or a mismatch in a run that stops, came first).
    fn batch_for(&mut self, is_text: bool) -> Option<&mut Batch<'d>> {
        if self.failed.is_some() || (!self.keep_going && !self.off.is_empty()) {
            return None;
        }
        let place = self.good;
        self.good += 1;
        let own = if is_text { Kind::Text } else { Kind::Messages };
        let rule = self.rule;
        let kind = self
            .batch
            .get_or_insert_with(|| Batch::new(rule.fixed.unwrap_or(own)))
            .kind;
        if own == kind || (is_text && rule.fixed == Some(Kind::Messages)) {
            return self.batch.as_mut();
        }
        self.off.push(place);
        if !self.keep_going || rule.fixed.is_some() {
            return None;
        }
        Some(self.other.get_or_insert_with(|| Batch::new(own)))
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
        let mut built = |batch: Option<Batch<'d>>| match batch.map(|batch| batch.finish(shape)) {
            Some(Ok(built)) => Some(built),
            Some(Err(err)) => {
                failed.get_or_insert(err);
                None
            }
            None => None,
        };
        let batch = built(self.batch);
        let other = built(self.other);
        ChunkArrowDone {
            batch,
            other,
            good: self.good,
            off: self.off,
            failed,
        }
    }
}

impl ChunkArrowDone {
    /// The batch of the table's kind (`table`, set from this chunk's first
    /// good row when no earlier chunk set it), and the good rows not in it, by
    /// their place among the chunk's good rows, in order.
    fn for_table(&mut self, table: &mut Option<Kind>) -> (Option<Built>, Vec<usize>) {
        let first = self.batch.as_ref().map(|batch| batch.kind);
        let kind = match (*table, first) {
            (Some(kind), _) => kind,
            (None, Some(first)) => *table.insert(first),
            (None, None) => return (None, std::mem::take(&mut self.off)),
        };
        if first.is_none() || first == Some(kind) {
            return (self.batch.take(), std::mem::take(&mut self.off));
        }
        // The chunk's first row is not of the table's kind: its other rows are.
        let mut taken = self.off.iter().copied().peekable();
        let rest = (0..self.good)
            .filter(|place| taken.next_if_eq(place).is_none())
            .collect();
        (self.other.take(), rest)
    }
}

/// The chunk's rows at `places` (among its good rows, in order) as faults of
/// rows not of the table's kind, merged in line order with the chunk's other
/// faults; a run that stops keeps the first fault only. `set_by`: the row
/// that set the table's kind.
fn add_mismatches<T>(
    result: &mut ChunkResult<T>,
    places: &[usize],
    rule: KindRule,
    table: Kind,
    set_by: usize,
    keep_going: bool,
) {
    if places.is_empty() {
        return;
    }
    let refused: Vec<usize> = result.faults.iter().map(LineFault::local_index).collect();
    let mut refused = refused.into_iter().peekable();
    let mut wanted = places.iter().copied().peekable();
    let mut mismatches = Vec::with_capacity(places.len());
    let mut place = 0;
    for local_index in 0..result.row_lines.len() {
        if refused.next_if_eq(&local_index).is_some() {
            continue;
        }
        if wanted.next_if_eq(&place).is_some() {
            mismatches.push(LineFault::Row {
                rule: rule.mismatch(table, set_by),
                local_index,
                line: result.row_lines[local_index],
            });
            if wanted.peek().is_none() {
                break;
            }
        }
        place += 1;
    }
    let mut faults = Vec::with_capacity(result.faults.len() + mismatches.len());
    let mut theirs = std::mem::take(&mut result.faults).into_iter().peekable();
    for mismatch in mismatches {
        while let Some(fault) = theirs.next_if(|f| f.local_index() < mismatch.local_index()) {
            faults.push(fault);
        }
        faults.push(mismatch);
    }
    faults.extend(theirs);
    if !keep_going {
        faults.truncate(1);
    }
    result.faults = faults;
}

/// The place in the file of the chunk's first good row (`seen`: the rows of
/// the chunks before it, good and bad).
fn first_good_row<T>(result: &ChunkResult<T>, seen: usize) -> usize {
    let mut refused = result.faults.iter().map(LineFault::local_index).peekable();
    let mut local_index = 0;
    while refused.next_if_eq(&local_index).is_some() {
        local_index += 1;
    }
    seen + local_index
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
/// chunk's rows alone). With `OnBad::Report` or `Skip` the read keeps going
/// past bad rows, a row whose prompt is not of the table's kind among them
/// (the first `keep` kept on the stats, or on the error that ended the read);
/// the batches hold the good rows, and with `Report` none is handed over from
/// the first chunk holding a bad row on.
#[allow(clippy::too_many_arguments)]
pub fn read_file(
    py: Python<'_>,
    path: &Path,
    limits: FileLimits,
    rule: KindRule,
    shape: Shape,
    on_batch: &Bound<'_, PyAny>,
    progress: Option<&Bound<'_, PyAny>>,
    on_bad: OnBad,
    keep: usize,
) -> PyResult<FileStats> {
    let source = files::open_source(py, path, &limits).map_err(|fault| fault.into_pyerr(py))?;
    let mut lines = limits.lines();
    let keep_going = on_bad != OnBad::Stop;
    lines.keep_going = keep_going;
    let mut stats = FileStats::default();
    let mut bad = BadRows::new(keep);
    let mut table: Option<Kind> = rule.fixed;
    // The row whose prompt set the table's kind (no kind asked for).
    let mut set_by = 0;
    let work = |data: &[u8]| {
        // Typed and built on the thread that parsed the chunk (a worker, or
        // the calling thread without the interpreter).
        jsonl::process_chunk(
            data,
            lines,
            ChunkArrow::new(rule, shape, keep_going),
            |out: &mut ChunkArrow<'_>, text, ascii| out.add_verbatim(text, lines, ascii),
            |out: &mut ChunkArrow<'_>, row| out.add(row),
        )
        .map(ChunkArrow::finish)
    };
    let released = |step: &mut (dyn FnMut() + Send)| py.detach(step);
    let tick = || py.check_signals().map_err(Fault::from);
    let run = jsonl::run(
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
            let seen = stats.rows + bad.count;
            if table.is_none() {
                set_by = first_good_row(&result, seen);
            }
            let (batch, off) = result.output.for_table(&mut table);
            if let Some(kind) = table {
                add_mismatches(&mut result, &off, rule, kind, set_by, keep_going);
            }
            let accepted = files::settle(
                &result,
                seen,
                stats.lines,
                limits,
                keep_going.then_some(&mut bad),
            )?;
            // `Report` hands over nothing from the first chunk with a bad row on.
            let wanted = on_bad != OnBad::Report || bad.count == 0;
            if let Some(batch) = batch.filter(|batch| wanted && batch.rows > 0) {
                on_batch.call1((batch.into_py(py)?,))?;
            }
            stats.add(accepted, &result);
            if let Some(report) = progress {
                report.call1((stats.rows, stats.lines, stats.bytes_in))?;
            }
            Ok(true)
        },
    );
    bad.finish(py, run, &mut stats)?;
    Ok(stats)
}
