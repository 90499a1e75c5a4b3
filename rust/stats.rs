//! What a rollout JSONL file holds (`agent-rollout stats`), counted inside the
//! engine's own parse: each chunk's rows are counted on the thread that parsed
//! them (`Tally`), and the calling thread merges the tallies in input order
//! (`Totals`), so no count, and no choice of the dropped key names kept,
//! depends on where the input was cut. Memory stays flat: a tally holds
//! counts, and names at most `max_names` of the dropped keys (the rest are
//! counted together). The twin is `_stats.py`; both count the same way:
//!
//! - a prompt is text (a str) or messages (a list); its length in characters
//!   (Python's `len`) is the str's, or, for messages, the sum over messages of
//!   their `content`: a str counts whole, a list counts its str items and the
//!   str `text` of its parts (objects); anything else counts 0;
//! - an answer is there when the row rules keep one (a non-empty str);
//! - a length `n` falls in bucket `n`'s bit length (0, 1, 2-3, 4-7, ...);
//! - the dropped keys of a row are its top-level keys other than `prompt` and
//!   `answer`, each name once per row.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use pyo3::prelude::*;

use crate::errors::Fault;
use crate::files::{self, BadRows, FileLimits, FileStats};
use crate::json::J;
use crate::jsonl::{self, Event, Row, Verbatim, VerbatimMessage};

/// Length buckets: bit lengths 0 to 64.
const BUCKETS: usize = 65;

/// Lengths in characters: their histogram (`BUCKETS`), sum, least and most.
#[derive(Clone)]
struct Lengths {
    buckets: [u64; BUCKETS],
    total: u64,
    min: u64,
    max: u64,
}

impl Default for Lengths {
    fn default() -> Self {
        Lengths {
            buckets: [0; BUCKETS],
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Lengths {
    fn add(&mut self, n: u64) {
        self.buckets[(u64::BITS - n.leading_zeros()) as usize] += 1;
        self.total += n;
        self.min = self.min.min(n);
        self.max = self.max.max(n);
    }

    fn merge(&mut self, other: &Lengths) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += theirs;
        }
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Characters in `text`, as Python's `len` counts them.
fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// Characters in the string spelled canonically as `text` (between its
/// quotes; `Canon::canonical_string`): each escape is one character, `\u00xx`
/// included (the canonical spelling escapes only control characters).
fn canonical_chars(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut escaped = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'\\', &bytes[at..]) {
        let slash = at + found;
        let (spelled, next) = match bytes.get(slash + 1) {
            Some(b'u') => (6, slash + 6),
            _ => (2, slash + 2),
        };
        escaped += spelled - 1;
        at = next.min(bytes.len());
    }
    chars(text) - escaped
}

/// A message's `content` in characters (see the header).
fn content_chars(content: &J<'_>) -> u64 {
    match content {
        J::Str(text) => chars(text),
        J::Arr(parts) => parts
            .iter()
            .map(|part| match part {
                J::Str(text) => chars(text),
                J::Obj(members) => match members.iter().find(|(k, _)| k == "text") {
                    Some((_, J::Str(text))) => chars(text),
                    _ => 0,
                },
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// A message's length: its `content` (the row rules left one member per key).
fn message_chars(message: &J<'_>) -> u64 {
    match message {
        J::Obj(members) => members
            .iter()
            .find(|(k, _)| k == "content")
            .map_or(0, |(_, content)| content_chars(content)),
        _ => 0,
    }
}

/// Names in the order first seen, with their counts.
#[derive(Default)]
struct Names {
    order: Vec<(String, u64)>,
    /// Where each name is in `order`, once it holds more than `SCAN` names
    /// (a few names, the usual case, are looked for one by one).
    at: HashMap<String, usize>,
}

const SCAN: usize = 16;

impl Names {
    fn position(&self, name: &str) -> Option<usize> {
        if self.order.len() <= SCAN {
            self.order.iter().position(|(n, _)| n == name)
        } else {
            self.at.get(name).copied()
        }
    }

    fn push(&mut self, name: &str, count: u64) {
        self.order.push((name.to_owned(), count));
        if self.order.len() > SCAN {
            if self.at.is_empty() {
                for (i, (n, _)) in self.order.iter().enumerate() {
                    self.at.insert(n.clone(), i);
                }
            } else {
                self.at.insert(name.to_owned(), self.order.len() - 1);
            }
        }
    }

    /// Room for `more` names, so that a row of many keys does not grow (and
    /// so hash again) the index many times over.
    fn reserve(&mut self, more: usize) {
        if self.order.len() + more > SCAN {
            self.order.reserve(more);
            self.at.reserve(more);
        }
    }

    fn add(&mut self, name: &str, count: u64) {
        match self.position(name) {
            Some(i) => self.order[i].1 += count,
            None => self.push(name, count),
        }
    }
}

/// What one chunk's rows hold.
#[derive(Default)]
pub struct Tally {
    text_prompts: u64,
    message_prompts: u64,
    answers: u64,
    /// Messages per prompt (messages prompts only) -> rows.
    messages: BTreeMap<u64, u64>,
    prompt_chars: Lengths,
    answer_chars: Lengths,
    /// Every dropped key name of the chunk (a chunk's names are bounded by its bytes).
    names: Names,
}

impl Tally {
    /// Count a row that passed the row rules.
    fn add(&mut self, row: &Row<'_>) {
        match &row.prompt {
            J::Arr(messages) => {
                self.message_prompts += 1;
                *self.messages.entry(messages.len() as u64).or_insert(0) += 1;
                self.prompt_chars
                    .add(messages.iter().map(message_chars).sum());
            }
            J::Str(text) => {
                self.text_prompts += 1;
                self.prompt_chars.add(chars(text));
            }
            // The row rules let no other prompt through.
            _ => {}
        }
        if let Some(answer) = &row.answer {
            self.answers += 1;
            self.answer_chars.add(chars(answer));
        }
        if row.dropped_keys > 0 {
            self.add_names(&row.members, row.dropped_keys);
        }
    }

    /// Count a row the canonical shortcut took (`jsonl::verbatim_row`, plain
    /// messages only), its dropped keys' names without escapes: the counts
    /// `add` would make of the row parsed.
    fn add_verbatim(
        &mut self,
        row: &Verbatim<'_>,
        messages: &[VerbatimMessage<'_>],
        names: &[&str],
    ) {
        match row.text {
            Some(text) => {
                self.text_prompts += 1;
                self.prompt_chars.add(canonical_chars(text));
            }
            None => {
                self.message_prompts += 1;
                *self.messages.entry(messages.len() as u64).or_insert(0) += 1;
                self.prompt_chars.add(
                    messages
                        .iter()
                        .map(|m| m.content.map_or(0, canonical_chars))
                        .sum(),
                );
            }
        }
        if let Some(answer) = row.answer {
            self.answers += 1;
            self.answer_chars.add(canonical_chars(answer));
        }
        self.names.reserve(names.len());
        for name in names {
            self.names.add(name, 1);
        }
    }

    /// The row's dropped keys, each name once (its first place); `distinct`:
    /// how many names they have. A row whose keys do not repeat, the usual
    /// case, is named as it stands; any other through a set of the keys seen,
    /// so that a row of many keys costs time in proportion to them, never to
    /// their square.
    fn add_names(&mut self, members: &[(Cow<'_, str>, J<'_>)], distinct: usize) {
        let dropped = |key: &str| key != "prompt" && key != "answer";
        let keys = members.iter().filter(|(k, _)| dropped(k)).count();
        self.names.reserve(distinct);
        if keys == distinct {
            for (key, _) in members.iter().filter(|(k, _)| dropped(k)) {
                self.names.add(key, 1);
            }
            return;
        }
        let mut seen = HashSet::with_capacity(members.len());
        for (key, _) in members {
            if seen.insert(key.as_ref()) && dropped(key) {
                self.names.add(key, 1);
            }
        }
    }
}

/// The tallies merged in input order, and the file's counts.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct RowStats {
    /// The file's counts (`rows`, `lines`, `blank_lines`, `dropped_keys`, `bytes_in`).
    pub file: Py<FileStats>,
    pub text_prompts: u64,
    pub message_prompts: u64,
    /// Rows with an answer.
    pub answers: u64,
    /// `(messages, rows)` for each number of messages a prompt has, ascending.
    pub messages: Vec<(u64, u64)>,
    /// `(buckets, total, min, max)` of the prompts' lengths in characters
    /// (bucket `b`: lengths of bit length `b`; `min` is 0 when there are none).
    pub prompt_chars: (Vec<u64>, u64, u64, u64),
    /// The same, over the answers.
    pub answer_chars: (Vec<u64>, u64, u64, u64),
    /// `(name, rows)` of the first `max_names` dropped key names, first seen first.
    pub names: Vec<(String, u64)>,
    /// Dropped keys whose names were not kept, summed over rows.
    pub other_names: u64,
}

struct Totals {
    tally: Tally,
    other_names: u64,
    max_names: usize,
}

impl Totals {
    fn merge(&mut self, chunk: Tally) {
        let total = &mut self.tally;
        total.text_prompts += chunk.text_prompts;
        total.message_prompts += chunk.message_prompts;
        total.answers += chunk.answers;
        for (count, rows) in chunk.messages {
            *total.messages.entry(count).or_insert(0) += rows;
        }
        total.prompt_chars.merge(&chunk.prompt_chars);
        total.answer_chars.merge(&chunk.answer_chars);
        for (name, count) in chunk.names.order {
            match total.names.position(&name) {
                Some(i) => total.names.order[i].1 += count,
                None if total.names.order.len() < self.max_names => {
                    total.names.push(&name, count);
                }
                None => self.other_names += count,
            }
        }
    }
}

fn lengths(lengths: &Lengths) -> (Vec<u64>, u64, u64, u64) {
    let min = if lengths.min == u64::MAX {
        0
    } else {
        lengths.min
    };
    (lengths.buckets.to_vec(), lengths.total, min, lengths.max)
}

/// Count what the rollout JSONL file at `path` holds, going on past bad rows
/// (every one counted on `file`, the first `keep` kept with their faults);
/// `progress(rows, lines, bytes_in)` after each chunk, when given. A fault of
/// the input as a whole ends the read, as in `read_jsonl` (with the bad rows
/// before it carried: `BadRows::ended_by`); a file without rows, good or bad,
/// is `FileNoRows`.
pub fn file_stats(
    py: Python<'_>,
    path: &Path,
    limits: FileLimits,
    max_names: usize,
    keep: usize,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<RowStats> {
    let source = files::open_source(py, path, &limits).map_err(|fault| fault.into_pyerr(py))?;
    let mut lines = limits.lines();
    lines.keep_going = true;
    let mut stats = FileStats::default();
    let mut bad = BadRows::new(keep);
    let mut totals = Totals {
        tally: Tally::default(),
        other_names: 0,
        max_names,
    };
    let work = |data: &[u8]| {
        let mut messages = Vec::new();
        let mut names = Vec::new();
        jsonl::process_chunk(
            data,
            lines,
            Tally::default(),
            // Rows already canonical are counted from their text, as
            // `normalise` copies them; any other row is parsed and checked.
            |tally: &mut Tally, text, ascii| {
                names.clear();
                let row =
                    jsonl::verbatim_row_naming(text, lines, ascii, true, &mut messages, |key| {
                        names.push(key)
                    })?;
                if names.iter().any(|name| name.contains('\\')) {
                    return None; // a name to unescape: the parser does it
                }
                tally.add_verbatim(&row, &messages, &names);
                Some(row.dropped_keys)
            },
            |tally: &mut Tally, row| tally.add(&row),
        )
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
            let result = match event {
                Event::Fail(fault) => return Err(files::read_fault(fault, stats.lines)),
                Event::Chunk(result) => result,
            };
            py.check_signals()?;
            let seen = stats.rows + bad.count;
            let accepted = files::settle(&result, seen, stats.lines, limits, Some(&mut bad))?;
            stats.add(accepted, &result);
            totals.merge(result.output);
            if let Some(report) = progress {
                report.call1((stats.rows, stats.lines, stats.bytes_in))?;
            }
            Ok(true)
        },
    );
    bad.finish(py, run, &mut stats)?;
    let Totals {
        tally, other_names, ..
    } = totals;
    Ok(RowStats {
        file: Py::new(py, stats)?,
        text_prompts: tally.text_prompts,
        message_prompts: tally.message_prompts,
        answers: tally.answers,
        messages: tally.messages.into_iter().collect(),
        prompt_chars: lengths(&tally.prompt_chars),
        answer_chars: lengths(&tally.answer_chars),
        names: tally.names.order,
        other_names,
    })
}
