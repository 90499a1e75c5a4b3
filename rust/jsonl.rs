//! JSONL rollout files: the row rules over parsed JSON, and a pipeline that
//! reads, parses and checks chunks of lines on worker threads (and, at the
//! start and end of a file, on the caller's thread) while the caller's thread
//! consumes the results in input order.
//!
//! Order of checks for every line (the pure-Python twin keeps the same):
//! line length, blank (skipped), row cap, UTF-8, JSON syntax, row rules.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Cursor, Read};

use flate2::bufread::GzDecoder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::errors::{Code, Reason, Rule, Seg};
use crate::json::{
    parse_row_line, printable_ascii, py_float_repr, write_json_clean, write_json_str, Canon,
    JsonLimits, Keys, J,
};

/// How much is read at a time, at most; a chunk is this much (the first ones
/// less, see `FIRST_CHUNK_BYTES`), cut after its last newline.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;
/// The first chunk's size (then doubled at each chunk, up to `CHUNK_BYTES`).
const FIRST_CHUNK_BYTES: usize = 64 << 10;
/// Near a file's end, a chunk is at most this share of what is left.
const TAIL_SHARE: u64 = 4;
/// Chunks in flight (read, parsed or waiting to be consumed) at most.
const IN_FLIGHT: usize = 8;

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
}

/// A normalised row, borrowing from its line where it can.
pub struct Row<'a> {
    pub prompt: J<'a>,
    pub answer: Option<Cow<'a, str>>,
    pub dropped_keys: usize,
}

impl Row<'_> {
    /// A copy that owns its text, to send to another thread.
    pub fn into_owned(self) -> Row<'static> {
        Row {
            prompt: self.prompt.into_owned(),
            answer: self.answer.map(|a| Cow::Owned(a.into_owned())),
            dropped_keys: self.dropped_keys,
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

// ---- the row rules over JSON -------------------------------------------------------------

type Members<'a> = Vec<(Cow<'a, str>, J<'a>)>;

/// Whether any key occurs twice (small objects: compare pairs; large: hash).
fn has_duplicate_keys(members: &Members<'_>) -> bool {
    if members.len() <= 16 {
        return members
            .iter()
            .enumerate()
            .any(|(i, (k, _))| members[..i].iter().any(|(other, _)| other == k));
    }
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    members.iter().any(|(k, _)| !seen.insert(k.as_ref()))
}

/// Resolve duplicate keys in place the way a Python dict does: the first
/// place, the last value.
fn dedupe(members: &mut Members<'_>) {
    if members.len() < 2 || !has_duplicate_keys(members) {
        return;
    }
    let all = std::mem::take(members);
    for (key, value) in all {
        match members.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => members.push((key, value)),
        }
    }
}

fn check_depth(level: usize, max_depth: usize) -> Result<(), Rule> {
    if level > max_depth {
        return Err(Rule::new(Code::TooDeep, None));
    }
    Ok(())
}

fn check_value(value: &mut J<'_>, level: usize, max_depth: usize) -> Result<(), Rule> {
    match value {
        J::Num(text, true) => {
            let number: f64 = text.parse().unwrap_or(f64::NAN);
            if !number.is_finite() {
                let shown = if number.is_nan() {
                    "nan"
                } else if number > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                return Err(Rule::new(Code::FloatNotFinite, Some(shown.to_string())));
            }
            Ok(())
        }
        J::Arr(items) => {
            check_depth(level, max_depth)?;
            for (i, item) in items.iter_mut().enumerate() {
                check_value(item, level + 1, max_depth).map_err(|bad| bad.within(Seg::Index(i)))?;
            }
            Ok(())
        }
        J::Obj(members) => check_object(members, level, max_depth),
        _ => Ok(()),
    }
}

fn check_object(members: &mut Members<'_>, level: usize, max_depth: usize) -> Result<(), Rule> {
    check_depth(level, max_depth)?;
    dedupe(members);
    for (key, value) in members.iter_mut() {
        check_value(value, level + 1, max_depth)
            .map_err(|bad| bad.within(Seg::Key(key.to_string())))?;
    }
    Ok(())
}

fn check_message(message: &mut J<'_>, max_depth: usize) -> Result<(), Rule> {
    let J::Obj(members) = message else {
        return Err(Rule::new(
            Code::MessageNotMapping,
            Some(message.py_type_name().to_string()),
        ));
    };
    check_object(members, 1, max_depth)?;
    match members.iter().find(|(k, _)| k == "role") {
        None => Err(Rule::new(Code::RoleMissing, None)),
        Some((_, J::Str(role))) if !role.is_empty() => Ok(()),
        Some((_, J::Str(_))) => {
            Err(Rule::new(Code::RoleEmpty, None).within(Seg::Key("role".into())))
        }
        Some((_, other)) => Err(
            Rule::new(Code::RoleType, Some(other.py_type_name().to_string()))
                .within(Seg::Key("role".into())),
        ),
    }
}

/// How many distinct keys other than `prompt` and `answer` a row has.
fn count_other_keys(members: &Members<'_>) -> usize {
    let others = members
        .iter()
        .filter(|(k, _)| k != "prompt" && k != "answer")
        .count();
    if others < 2 || !has_duplicate_keys(members) {
        return others;
    }
    let mut seen = std::collections::HashSet::new();
    members
        .iter()
        .filter(|(k, _)| k != "prompt" && k != "answer" && seen.insert(k.as_ref()))
        .count()
}

/// The row rules for one parsed line.
pub fn check_row(doc: J<'_>, max_depth: usize) -> Result<Row<'_>, Rule> {
    let J::Obj(mut members) = doc else {
        return Err(Rule::new(
            Code::RowNotMapping,
            Some(doc.py_type_name().to_string()),
        ));
    };
    let dropped_keys = count_other_keys(&members);
    // The last occurrence of a key wins, as in a Python dict.
    let mut take = |name: &str| {
        members
            .iter_mut()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| std::mem::replace(v, J::Null))
    };
    let prompt = take("prompt");
    let answer = take("answer");
    let in_prompt = |bad: Rule| bad.within(Seg::Key("prompt".into()));
    let prompt = match prompt {
        None | Some(J::Null) => return Err(in_prompt(Rule::new(Code::PromptMissing, None))),
        Some(J::Str(text)) => {
            if text.is_empty() {
                return Err(in_prompt(Rule::new(Code::PromptEmpty, None)));
            }
            J::Str(text)
        }
        Some(J::Arr(mut messages)) => {
            if messages.is_empty() {
                return Err(in_prompt(Rule::new(Code::PromptEmpty, None)));
            }
            for (i, message) in messages.iter_mut().enumerate() {
                check_message(message, max_depth)
                    .map_err(|bad| in_prompt(bad.within(Seg::Index(i))))?;
            }
            J::Arr(messages)
        }
        Some(other) => {
            return Err(in_prompt(Rule::new(
                Code::PromptType,
                Some(other.py_type_name().to_string()),
            )))
        }
    };
    let answer = match answer {
        None | Some(J::Null) => None,
        Some(J::Str(text)) => (!text.is_empty()).then_some(text),
        Some(other) => {
            return Err(
                Rule::new(Code::AnswerType, Some(other.py_type_name().to_string()))
                    .within(Seg::Key("answer".into())),
            );
        }
    };
    Ok(Row {
        prompt,
        answer,
        dropped_keys,
    })
}

// ---- canonical JSON output ---------------------------------------------------------------

pub(crate) fn write_value(value: &J<'_>, out: &mut String) {
    match value {
        J::Null => out.push_str("null"),
        J::Bool(true) => out.push_str("true"),
        J::Bool(false) => out.push_str("false"),
        J::Num(text, false) => out.push_str(if *text == "-0" { "0" } else { text }),
        J::Num(text, true) => py_float_repr(text.parse().unwrap_or(f64::NAN), out),
        J::Str(Cow::Borrowed(text)) => write_json_clean(text, out),
        J::Str(text) => write_json_str(text, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match key {
                    Cow::Borrowed(key) => write_json_clean(key, out),
                    Cow::Owned(key) => write_json_str(key, out),
                }
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// One output line: `{"prompt":...,"answer":...}` and a newline.
pub fn write_row(row: &Row<'_>, out: &mut String) {
    out.push_str("{\"prompt\":");
    write_value(&row.prompt, out);
    if let Some(answer) = &row.answer {
        out.push_str(",\"answer\":");
        write_json_str(answer, out);
    }
    out.push_str("}\n");
}

// ---- rows already canonical ----------------------------------------------------------------

/// A row `verbatim_row` took, as it stands in its line.
pub struct Verbatim<'a> {
    /// The prompt's JSON text.
    pub prompt: &'a str,
    /// A str prompt: its text between the quotes (escapes as they stand);
    /// `None` for a list of messages.
    pub text: Option<&'a str>,
    /// The answer between its quotes, if it is a non-empty str.
    pub answer: Option<&'a str>,
    pub dropped_keys: usize,
}

/// One message of a row `verbatim_row` took.
pub struct VerbatimMessage<'a> {
    /// Between its quotes, escapes as they stand.
    pub role: &'a str,
    /// A str content between its quotes; `None` when it is null, absent or
    /// another value.
    pub content: Option<&'a str>,
}

/// Take a row whose kept parts are already spelled the way `write_row`
/// spells them, without building its values. The row must pass the row
/// rules as they stand in `check_row` and `check_message`, recognised here on
/// the text: a non-empty str prompt, or a non-empty list of messages, each a
/// mapping with a non-empty str `role` and nothing nested past `max_depth`;
/// an `answer` that is a str or null; no key twice in the row. The prompt
/// must be spelled canonically (`Canon::canonical_value`: no whitespace,
/// `-0` or repeated key, floats as `repr` spells them, no escape
/// `write_json_str` would not write),
/// and so must the row's keys and the answer. Any other line gives `None`
/// and goes through `parse_row_line` and `check_row`, which decide it and
/// word any error: a shortcut to the same result, never a second set of
/// rules. `messages` is cleared, then holds the prompt's messages; with
/// `plain_only`, every message must be plain (only `role` and a str or null
/// `content`), and one that is not gives `None` as soon as it is seen.
pub fn verbatim_row<'a>(
    text: &'a str,
    limits: LineLimits,
    no_controls: bool,
    plain_only: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
) -> Option<Verbatim<'a>> {
    messages.clear();
    let mut line = Canon::new(text, limits.json, no_controls);
    line.skip_ws();
    // The row object is at JSON depth 1.
    if limits.json.max_depth < 1 || !line.eat(b'{') {
        return None;
    }
    let mut keys = Keys::default();
    let (mut prompt, mut prompt_text, mut answer, mut dropped_keys) = (None, None, None, 0);
    loop {
        line.skip_ws();
        let key = line.canonical_string()?;
        if !keys.add(key) {
            return None;
        }
        line.skip_ws();
        if !line.eat(b':') {
            return None;
        }
        line.skip_ws();
        match key {
            "prompt" => {
                let start = line.pos();
                match line.peek() {
                    Some(b'"') => {
                        prompt_text = Some(line.canonical_string().filter(|t| !t.is_empty())?)
                    }
                    Some(b'[') => verbatim_messages(&mut line, limits, plain_only, messages)?,
                    _ => return None,
                }
                prompt = Some(line.text(start, line.pos()));
            }
            "answer" => match line.peek() {
                Some(b'"') => answer = Some(line.canonical_string()?).filter(|a| !a.is_empty()),
                Some(b'n') if line.skip_value(1) => {}
                _ => return None,
            },
            _ => {
                if !line.step_over(1) {
                    return None;
                }
                dropped_keys += 1;
            }
        }
        line.skip_ws();
        if line.eat(b'}') {
            break;
        }
        if !line.eat(b',') {
            return None;
        }
    }
    line.skip_ws();
    Some(Verbatim {
        prompt: prompt.filter(|_| line.at_end())?,
        text: prompt_text,
        answer,
        dropped_keys,
    })
}

/// A prompt's list of messages, from `[` to `]`, canonical and within the
/// rules (see `verbatim_row`). The row is at JSON depth 1, the list at 2,
/// each message at 3; a message is at the row rules' level 1.
fn verbatim_messages<'a>(
    line: &mut Canon<'a>,
    limits: LineLimits,
    plain_only: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
) -> Option<()> {
    if limits.json.max_depth < 3 || limits.max_depth < 1 || !line.eat(b'[') {
        return None;
    }
    loop {
        if !line.eat(b'{') {
            return None;
        }
        let (mut role, mut content) = (None, None);
        let taken = line.members(|line, key| match key {
            "role" => {
                role = line.canonical_string().filter(|r| !r.is_empty());
                role.is_some()
            }
            "content" if line.peek() == Some(b'"') => {
                content = line.canonical_string();
                content.is_some()
            }
            _ => {
                let plain = key == "content" && line.peek() == Some(b'n');
                (plain || !plain_only) && line.canonical_value(3, 2, limits.max_depth)
            }
        });
        if !taken {
            return None;
        }
        messages.push(VerbatimMessage {
            role: role?,
            content,
        });
        if !line.eat(b',') {
            return line.eat(b']').then_some(());
        }
    }
}

/// Write the output line of a row `verbatim_row` takes (its prompt's text
/// copied); gives the number of keys dropped, or `None` with nothing written.
pub fn write_verbatim_row<'a>(
    text: &'a str,
    limits: LineLimits,
    no_controls: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
    out: &mut String,
) -> Option<usize> {
    let row = verbatim_row(text, limits, no_controls, false, messages)?;
    out.push_str("{\"prompt\":");
    out.push_str(row.prompt);
    if let Some(answer) = row.answer {
        out.push_str(",\"answer\":\"");
        out.push_str(answer);
        out.push('"');
    }
    out.push_str("}\n");
    Some(row.dropped_keys)
}

// ---- chunks of lines ---------------------------------------------------------------------

/// What a worker made of one chunk.
pub struct ChunkResult<T> {
    /// Line of each non-blank line seen, in order (0 = the chunk's first line).
    pub row_lines: Vec<u64>,
    /// Rows that passed, turned into the caller's output type.
    pub output: T,
    pub dropped_keys: usize,
    pub blank_lines: usize,
    /// Lines in the chunk (newlines, plus an unterminated last line).
    pub lines: u64,
    /// Bytes of input the chunk held (after gzip decompression).
    pub bytes: usize,
    /// The first refused line, if any (rows after it were not looked at).
    pub fault: Option<LineFault>,
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Parse and check every line of a chunk, handing each good row to `sink`.
/// `shortcut` is offered each line first (valid UTF-8, not blank; and
/// whether it is all printable ASCII, see `Canon::new`): when it
/// gives the number of keys dropped, it has taken the row (see
/// `write_verbatim_row`); when it gives `None`, the line is parsed and
/// checked. Line numbers in the result count from 0 at the chunk's first
/// line; the consumer, which sees chunks in order, makes them absolute.
pub fn process_chunk<'d, T>(
    data: &'d [u8],
    limits: LineLimits,
    mut output: T,
    mut shortcut: impl FnMut(&mut T, &'d str, bool) -> Option<usize>,
    mut sink: impl FnMut(&mut T, Row<'d>),
) -> ChunkResult<T> {
    let mut row_lines = Vec::new();
    let mut dropped_keys = 0;
    let mut blank_lines = 0;
    let mut fault = None;
    let mut line_no = 0u64;
    let (mut taken, mut missed) = (0usize, 0usize);
    let mut rest = data;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let this_line = line_no;
        line_no += 1;
        if line.len() > limits.max_line_bytes {
            fault = Some(LineFault::TooLong {
                line: this_line,
                rows_before: row_lines.len(),
            });
            break;
        }
        if is_blank(line) {
            blank_lines += 1;
            continue;
        }
        let local_index = row_lines.len();
        row_lines.push(this_line);
        let ascii = printable_ascii(line);
        let checked = if ascii {
            // SAFETY: every byte is below 0x80 (`printable_ascii`): ASCII,
            // which is valid UTF-8.
            Ok(unsafe { std::str::from_utf8_unchecked(line) })
        } else {
            std::str::from_utf8(line)
        };
        let text = match checked {
            Ok(text) => text,
            Err(err) => {
                fault = Some(LineFault::Utf8 {
                    line: this_line,
                    byte: err.valid_up_to() + 1,
                    local_index,
                });
                break;
            }
        };
        // A line the shortcut gives up on costs its partial scan on top of
        // the full parse; lines of a file are mostly alike, so once it has
        // missed 16 and more than it took, the rest of the chunk goes
        // straight to the parser.
        if missed < 16 || taken > missed {
            if let Some(dropped) = shortcut(&mut output, text, ascii) {
                dropped_keys += dropped;
                taken += 1;
                continue;
            }
            missed += 1;
        }
        let doc = match parse_row_line(text, limits.json) {
            Ok(doc) => doc,
            Err(err) => {
                let column = text[..err.offset].chars().count() + 1;
                fault = Some(LineFault::Syntax {
                    reason: err.reason,
                    line: this_line,
                    column,
                    local_index,
                });
                break;
            }
        };
        match check_row(doc, limits.max_depth) {
            Ok(row) => {
                dropped_keys += row.dropped_keys;
                sink(&mut output, row);
            }
            Err(rule) => {
                fault = Some(LineFault::Row {
                    rule,
                    local_index,
                    line: this_line,
                });
                break;
            }
        }
    }
    ChunkResult {
        row_lines,
        output,
        dropped_keys,
        blank_lines,
        lines: line_no,
        bytes: data.len(),
        fault,
    }
}

// ---- the pipeline --------------------------------------------------------------------------

enum Work {
    /// The chunk is `data[..len]`; `data` goes back to the pool (`give_back`).
    Chunk {
        id: u64,
        data: Vec<u8>,
        len: usize,
    },
    Fail {
        id: u64,
        fault: ReadFault,
    },
    End {
        id: u64,
    },
}

/// What the consumer receives, in input order.
pub enum Event<T> {
    Chunk(ChunkResult<T>),
    Fail(ReadFault),
}

enum Done<T> {
    Chunk(u64, ChunkResult<T>),
    Fail(u64, ReadFault),
    End(u64),
}

/// What `read_full` put in the buffer.
struct Filled {
    /// Bytes read into the start of the buffer.
    len: usize,
    /// The read error that stopped it, after those bytes.
    error: Option<io::Error>,
}

/// Fill `buf` as far as the source allows; a read error comes back with the
/// bytes read before it, so the lines that arrived whole are still used.
/// Once a newline is in, it stops early when the source has nothing more
/// ready (`idle`): lines that have arrived are not held back by a slow writer.
fn read_full(source: &mut dyn Read, buf: &mut [u8], idle: &dyn Fn() -> bool) -> Filled {
    let mut filled = 0;
    let mut newline = false;
    while filled < buf.len() {
        if newline && idle() {
            break;
        }
        match source.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                newline = newline || memchr::memchr(b'\n', &buf[filled..filled + n]).is_some();
                filled += n;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => {
                return Filled {
                    len: filled,
                    error: Some(err),
                }
            }
        }
    }
    Filled {
        len: filled,
        error: None,
    }
}

/// The input with gzip undone where it had it.
struct Decoded {
    source: Box<dyn Read + Send>,
    /// Whether the input is a gzip stream (a read error then means bad gzip).
    gzip: bool,
}

/// The first two bytes of every gzip member (RFC 1952).
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Look at the first two bytes: gzip's magic number means a gzip stream.
fn decompress_if_gzip(mut raw: Box<dyn Read + Send>) -> io::Result<Decoded> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match raw.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let joined = Cursor::new(magic[..got].to_vec()).chain(raw);
    if got == 2 && magic == GZIP_MAGIC {
        Ok(Decoded {
            source: Box::new(GzipMembers::new(BufReader::new(joined))),
            gzip: true,
        })
    } else {
        Ok(Decoded {
            source: Box::new(joined),
            gzip: false,
        })
    }
}

/// A gzip stream of one or more members: members follow each other, zero
/// bytes between or after them are padding, and anything else after a member
/// is an error, as in Python's `gzip` module. flate2 checks each member's
/// header as RFC 1952 asks (reserved flag bits, the header CRC) and allows
/// names and comments of at most 65,535 bytes (its own limit); the twin
/// (`_jsonl._GzipMembers`) draws the same lines. The deflate data goes through
/// flate2's zlib-rs backend, a port of zlib, the twin's decoder.
struct GzipMembers<R: BufRead> {
    member: Option<GzDecoder<R>>,
    done: bool,
}

impl<R: BufRead> GzipMembers<R> {
    fn new(source: R) -> Self {
        GzipMembers {
            member: Some(GzDecoder::new(source)),
            done: false,
        }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // This member is over: skip zero padding, then expect another.
            let Some(member) = self.member.take() else {
                return Ok(0);
            };
            let mut source = member.into_inner();
            loop {
                let available = source.fill_buf()?;
                if available.is_empty() {
                    self.done = true;
                    return Ok(0);
                }
                let zeros = available.iter().take_while(|&&b| b == 0).count();
                if zeros == 0 {
                    break;
                }
                source.consume(zeros);
            }
            let next = source.fill_buf()?;
            if next.first() != Some(&0x1f) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a gzip member",
                ));
            }
            self.member = Some(GzDecoder::new(source));
        }
    }
}

/// The reading half of the pipeline: cuts the input into chunks of whole
/// lines, in input order, one `step` at a time (on the reader thread, or on
/// whichever pipeline thread needs a chunk: see `Chunks`).
struct Chunker {
    /// The input as opened, until the first step looks at its first bytes.
    raw: Option<Box<dyn Read + Send>>,
    /// The input after that look (decompressed if it is gzip).
    source: Option<Box<dyn Read + Send>>,
    /// Whether the input is a gzip stream (a read error then means bad gzip).
    gzip: bool,
    /// The next chunk's id.
    id: u64,
    /// Input bytes read so far (after decompression).
    total: u64,
    /// The bytes of the chunk being filled are `buf[..used]`: the unfinished
    /// line the last chunk left, then what is read, straight into the buffer
    /// that goes to a worker (always fully initialised: `len` is the capacity
    /// in use).
    used: usize,
    buf: Vec<u8>,
    /// The next chunk's size: the first chunks are small, so that every
    /// worker has work soon (a file of a few megabytes is otherwise a handful
    /// of chunks); they double up to CHUNK_BYTES.
    chunk: usize,
    max_bytes: u64,
    max_line_bytes: usize,
    /// The input's size where it is known (a regular file, not gzip).
    size: Option<u64>,
    /// Nothing more to send: the end marker or a fault went out, or nobody
    /// took what was sent.
    done: bool,
}

impl Chunker {
    fn new(
        raw: Box<dyn Read + Send>,
        max_bytes: u64,
        max_line_bytes: usize,
        size: Option<u64>,
    ) -> Self {
        Chunker {
            raw: Some(raw),
            source: None,
            gzip: false,
            id: 0,
            total: 0,
            used: 0,
            buf: pooled(),
            chunk: FIRST_CHUNK_BYTES,
            max_bytes,
            max_line_bytes,
            size,
            done: false,
        }
    }

    /// Cut the next chunk and `send` it, then a fault or the end marker where
    /// the input ends there (or, at a fault before any whole line, only that).
    /// `send` returns `false` when nobody takes it any more.
    fn step(&mut self, idle: &dyn Fn() -> bool, send: &mut dyn FnMut(Work) -> bool) {
        if self.done {
            return;
        }
        // Every way out but the last line below ends the input.
        self.done = true;
        if let Some(raw) = self.raw.take() {
            match decompress_if_gzip(raw) {
                Ok(Decoded { source, gzip }) => {
                    self.source = Some(source);
                    self.gzip = gzip;
                    if gzip {
                        self.size = None;
                    }
                }
                Err(err) => {
                    send(Work::Fail {
                        id: self.id,
                        fault: ReadFault::Io(err),
                    });
                    return;
                }
            }
        }
        let Some(source) = self.source.as_mut() else {
            return;
        };
        // Fill until there is at least one newline (or the end of input).
        let mut eof = false;
        let mut failure = None;
        loop {
            // Fill the chunk up (or, after a long unfinished line, read a
            // chunk's worth more); at most one byte past the limit: enough
            // to know it is passed.
            let want = if self.used <= self.chunk / 2 {
                self.chunk - self.used
            } else {
                self.chunk
            };
            let room = usize::try_from(self.max_bytes.saturating_sub(self.total).saturating_add(1))
                .unwrap_or(usize::MAX)
                .min(want);
            let used = self.used;
            if self.buf.len() < used + room {
                // A buffer too small for the unfinished line plus this read
                // (a long line) gets here. Only what is read into is zeroed
                // (the Vec's capacity grows by doubling, untouched), so a long
                // line costs its own length in memory.
                self.buf.resize(used + room, 0);
            }
            let Filled { len: n, error } =
                read_full(source.as_mut(), &mut self.buf[used..used + room], idle);
            self.total += n as u64;
            if self.total > self.max_bytes {
                // The bytes within the limit count; whole lines among them go
                // through the rules first, then the input is refused.
                self.used += n - usize::try_from(self.total - self.max_bytes)
                    .unwrap_or(n)
                    .min(n);
                failure = Some(ReadFault::TooLarge);
                break;
            }
            if let Some(err) = error {
                // What the source delivered before it failed is used, as
                // Python's readers do: whole lines go through the rules first
                // (a damaged gzip trailer is reported after the rows before it).
                self.used += n;
                failure = Some(if self.gzip {
                    ReadFault::Gzip
                } else {
                    ReadFault::Io(err)
                });
                break;
            }
            let found = memchr::memchr(b'\n', &self.buf[used..used + n]).is_some();
            self.used += n;
            if n == 0 {
                eof = true;
                break;
            }
            if found {
                break;
            }
            if self.used > self.max_line_bytes {
                // No newline yet and already too long: it is the first line
                // after everything sent so far, which the consumer can tell.
                send(Work::Fail {
                    id: self.id,
                    fault: ReadFault::LineTooLong,
                });
                return;
            }
        }
        // Whole lines go out; an unfinished one waits for more input (or,
        // after a read error, is dropped: it never arrived whole).
        let used = self.used;
        let cut = if eof {
            used
        } else {
            memchr::memrchr(b'\n', &self.buf[..used]).map_or(0, |i| i + 1)
        };
        if cut > 0 {
            let mut next = pooled();
            let rest = used - cut;
            if next.len() < rest {
                next.resize(rest, 0);
            }
            next[..rest].copy_from_slice(&self.buf[cut..used]);
            let data = std::mem::replace(&mut self.buf, next);
            self.used = rest;
            if !send(Work::Chunk {
                id: self.id,
                data,
                len: cut,
            }) {
                return;
            }
            self.id += 1;
            self.chunk = (self.chunk * 2).min(CHUNK_BYTES);
            if let Some(size) = self.size {
                // The last chunks of a file are smaller: the threads finish
                // together, rather than one parsing a whole chunk at the end
                // while the others wait. Past the size the file had when
                // opened (it grew, or its size says nothing, as in /proc),
                // chunks are not held small.
                let left = size.saturating_sub(self.total);
                if left > 0 {
                    let share = usize::try_from(left / TAIL_SHARE).unwrap_or(usize::MAX);
                    self.chunk = self.chunk.min(share.max(FIRST_CHUNK_BYTES));
                }
            }
        }
        if let Some(fault) = failure {
            let fault = match fault {
                // The unfinished line at the limit or at the read error was
                // already too long: that came first in the input (and does
                // not hang on how much each read happened to bring). The
                // twin needs no such rule at the shipped MAX_LINE_BYTES: its
                // reads (1 MiB) report the line once they pass the limit,
                // before they can meet the error.
                ReadFault::TooLarge | ReadFault::Io(_) | ReadFault::Gzip
                    if self.used > self.max_line_bytes =>
                {
                    ReadFault::LineTooLong
                }
                other => other,
            };
            send(Work::Fail { id: self.id, fault });
            return;
        }
        if eof {
            send(Work::End { id: self.id });
            return;
        }
        self.done = false;
    }
}

impl Drop for Chunker {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.buf));
    }
}

/// Where the pipeline's threads take chunks from.
enum Chunks {
    /// A reader thread of its own sends them (an input whose reads may wait:
    /// a pipe, a terminal, a device).
    Sent(Mutex<Receiver<Work>>),
    /// Whichever thread needs a chunk cuts the next one itself, holding a
    /// lock while it reads (a regular file, whose reads never wait): no
    /// thread only reads, and a chunk is parsed on the CPU that read it.
    /// A regular file whose read hangs (a stalled network mount) then holds
    /// the calling thread too, as Python's own read would.
    Cut(Box<Cutting>),
}

/// A regular file's chunker, shared by the pipeline's threads.
struct Cutting {
    state: Mutex<CutState>,
    /// A free slot is taken before a chunk is cut (chunks in flight stay at
    /// most `IN_FLIGHT`); the consumer frees one per result it consumed.
    slots: Mutex<Receiver<()>>,
    /// Set once the input is all cut (or a fault or stop ended it).
    read_all: Arc<AtomicBool>,
}

struct CutState {
    chunker: Chunker,
    idle: Box<dyn Fn() -> bool + Send>,
    /// What a step sent past its one chunk (the fault or end marker after it).
    queue: std::collections::VecDeque<Work>,
}

impl Chunks {
    /// The next item of work. With `wait`, waiting at most `TICK` for it
    /// (then `Timeout`); without, `Timeout` at once when none is ready (or
    /// another thread holds what is needed). `Disconnected` once there will
    /// be no more.
    fn take(&self, wait: bool) -> Result<Work, RecvTimeoutError> {
        match self {
            Chunks::Sent(rx) => receive(rx, wait),
            Chunks::Cut(cutting) => cutting.take(wait),
        }
    }
}

/// What a receiver shared by several threads gives: with `wait`, waiting at
/// most `TICK` (then `Timeout`); without, `Timeout` at once when nothing is
/// in or another thread holds the receiver. `Disconnected` when the senders
/// are gone (or a thread panicked holding the receiver).
fn receive<T>(rx: &Mutex<Receiver<T>>, wait: bool) -> Result<T, RecvTimeoutError> {
    if wait {
        match rx.lock() {
            Ok(rx) => rx.recv_timeout(TICK),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        }
    } else {
        match rx.try_lock() {
            Ok(rx) => rx.try_recv().map_err(|err| match err {
                TryRecvError::Empty => RecvTimeoutError::Timeout,
                TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            }),
            Err(_) => Err(RecvTimeoutError::Timeout),
        }
    }
}

impl Cutting {
    /// The chunker, locked; without `wait`, `Timeout` when another thread
    /// holds it. `Disconnected` when a thread panicked holding it (that
    /// panic is raised by the consumer).
    fn lock_state(
        &self,
        wait: bool,
    ) -> Result<std::sync::MutexGuard<'_, CutState>, RecvTimeoutError> {
        if wait {
            self.state
                .lock()
                .map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            self.state.try_lock().map_err(|err| match err {
                std::sync::TryLockError::WouldBlock => RecvTimeoutError::Timeout,
                std::sync::TryLockError::Poisoned(_) => RecvTimeoutError::Disconnected,
            })
        }
    }

    /// As `Chunks::take`: what a step queued, else a slot, then a new chunk.
    fn take(&self, wait: bool) -> Result<Work, RecvTimeoutError> {
        {
            let mut state = self.lock_state(wait)?;
            if let Some(item) = state.queue.pop_front() {
                return Ok(item);
            }
            if state.chunker.done {
                return Err(RecvTimeoutError::Disconnected);
            }
        }
        receive(&self.slots, wait)?;
        // Once the slot is taken, the chunk is cut even by a thread that may
        // not wait: the lock is held for one chunk's reads (for a long line,
        // until its newline, up to `max_line_bytes`).
        let mut state = self.lock_state(true)?;
        let CutState {
            chunker,
            idle,
            queue,
        } = &mut *state;
        if queue.is_empty() {
            chunker.step(idle.as_ref(), &mut |item| {
                queue.push_back(item);
                true
            });
            if chunker.done {
                self.read_all.store(true, Ordering::Release);
            }
        }
        queue.pop_front().ok_or(RecvTimeoutError::Disconnected)
    }
}

/// The reader thread: a chunk whenever a slot is free.
fn reader(
    mut chunker: Chunker,
    idle: &dyn Fn() -> bool,
    work: SyncSender<Work>,
    slots: Receiver<()>,
) {
    while !chunker.done {
        if slots.recv().is_err() {
            return; // the consumer has stopped
        }
        chunker.step(idle, &mut |item| work.send(item).is_ok());
    }
}

/// Buffers kept for later chunks and later calls: a new buffer's pages are
/// each faulted in as they are first written (on a 10k-row file that was
/// about a tenth of the call's time). Only ever `try_lock`ed: a busy pool is
/// passed by (a new buffer, or one not kept), and a child forked while
/// another thread held the lock never waits on it.
pub(crate) struct Spare<T> {
    kept: Mutex<Vec<T>>,
    /// The most it keeps.
    keep: usize,
}

impl<T> Spare<T> {
    pub(crate) const fn new(keep: usize) -> Self {
        Spare {
            kept: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// One kept, if there is one (and the pool is not busy).
    pub(crate) fn take(&self) -> Option<T> {
        self.kept.try_lock().ok().and_then(|mut kept| kept.pop())
    }

    /// Keep `item` if there is room (and the pool is not busy).
    pub(crate) fn keep(&self, item: T) {
        if let Ok(mut kept) = self.kept.try_lock() {
            if kept.len() < self.keep {
                kept.push(item);
            }
        }
    }
}

/// Chunk buffers parsed and given back (CHUNK_BYTES each).
static CHUNKS: Spare<Vec<u8>> = Spare::new(IN_FLIGHT);

/// A chunk buffer: one given back, or a new one.
fn pooled() -> Vec<u8> {
    CHUNKS.take().unwrap_or_else(|| vec![0u8; CHUNK_BYTES])
}

/// Keep `buf` for a next chunk (not one grown for a long line).
fn give_back(buf: Vec<u8>) {
    if buf.len() == CHUNK_BYTES {
        CHUNKS.keep(buf);
    }
}

/// How often a waiting thread looks up (for Ctrl-C, or for a stop).
pub const TICK: Duration = Duration::from_millis(50);

/// While the calling thread may parse chunks itself, its first wait for a
/// result that found no chunk waiting; each wait that ends with nothing
/// doubles it, up to `TICK`.
const FIRST_PATIENCE: Duration = Duration::from_micros(100);

/// The calling thread may parse chunks itself while its next result is one
/// of the first `FILL_CHUNKS`, and again once the input is all read.
///
/// Threads started for a call are not all running at once at first: traced
/// on this 2-CPU VM, a worker often started only once the reader had read
/// the whole of a 4.5 MB file (0.9-1.5 ms into a 5 ms call) while the
/// calling thread slept; and at the end the last 1 MiB chunks were parsed
/// one per worker while the calling thread waited for the first of them.
/// In between, the workers keep the CPUs busy, and the calling thread
/// parsing as well only delayed its in-order writes: 6-10% slower on 1M
/// rows when it helped throughout. (Traced with a reader thread of its own,
/// before regular files were cut by the pipeline's threads themselves.)
const FILL_CHUNKS: u64 = 2 * IN_FLIGHT as u64;

/// The bytes of a file's first `FILL_CHUNKS` chunks (64 KiB, doubling to
/// `CHUNK_BYTES`): about 12.9 MiB. A regular file (not gzip) of at most this
/// many bytes is parsed by the calling thread as well for most of its chunks
/// (those first ones, and the last ones once it is all read), so that thread
/// counts as one of its parsing threads (`files::workers_writing_jsonl`):
/// with a worker per CPU beside it, one more thread parses than there are
/// CPUs. Likely cost, not traced: a thread preempted while it holds the next
/// chunk to write holds up the whole call, for a time slice of a few
/// milliseconds, as long as a call on a 4.5 MB file. Paired runs of JSONL ->
/// JSONL on 2 CPUs (December 2026; docs/benchmarks.md, twelfth round), one
/// worker against two, mean call: 0.888x on 4.5 MB (faster in 9 of 10
/// rounds), 0.948x on 9 MB, 0.969x on 13.5 MB, 1.132x on 22 MB, 1.40x on 45 MB.
pub(crate) const HELPED_FILE_BYTES: u64 = {
    let mut total = 0;
    let mut chunk = FIRST_CHUNK_BYTES;
    let mut taken = 0;
    while taken < FILL_CHUNKS {
        total += chunk as u64;
        chunk = if chunk * 2 < CHUNK_BYTES {
            chunk * 2
        } else {
            CHUNK_BYTES
        };
        taken += 1;
    }
    total
};

/// Read `input` in chunks, run `work` on them on worker threads, and hand the
/// results to `consume` in input order on the calling thread. While its next
/// result is not in, the calling thread may parse a waiting chunk itself
/// (see `Results::next`); otherwise it waits, at most `TICK`. That waiting
/// and parsing runs inside `released` (Python callers release the
/// interpreter there). `tick` runs whenever a wait ended with nothing
/// (Python callers check for Ctrl-C there). `consume` returns `false` to
/// stop.
///
/// Who reads (see `Chunks`): a regular file (`input.file_size`) is read by
/// whichever of these threads needs its next chunk, so no thread only reads
/// and a chunk is parsed where it was just read; with the shrinking last
/// chunks, 10k-row files took 0.90-0.95x the time they took with a reader
/// thread (paired runs, December 2026; docs/benchmarks.md, tenth round).
/// Any other input, whose reads may wait, is read on a thread of its own
/// that is never joined, so a source stalled in `read` cannot hold the
/// caller; when `run` returns it sets `input.stop`, and that reader ends at
/// its next look.
///
/// A panic in the reader or a worker (a bug) panics the calling thread, at
/// its next wait's end or once every worker is gone, naming what it said;
/// unless `consume` or `tick` ended the call with an error first (the first
/// fault in input order, or Ctrl-C, is then what the caller gets). A panic
/// while the calling thread cuts or parses a chunk itself is raised at once,
/// in the same words, naming the first pipeline thread that panicked.
pub fn run<T, W, C, E>(
    input: Input,
    workers: usize,
    work: W,
    mut released: impl FnMut(&mut (dyn FnMut() + Send)),
    mut tick: impl FnMut() -> Result<(), E>,
    mut consume: C,
) -> Result<(), E>
where
    T: Send,
    W: Fn(&[u8]) -> ChunkResult<T> + Sync,
    C: FnMut(Event<T>) -> Result<bool, E>,
{
    let (done_tx, done_rx) = mpsc::channel::<DoneBox<T>>();
    let (slot_tx, slot_rx) = mpsc::sync_channel::<()>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        let _ = slot_tx.send(());
    }
    let Input {
        reader: source,
        idle,
        stop: stop_reading,
        max_bytes,
        max_line_bytes,
        file_size,
        looks_gzip: _,
    } = input;
    // However `run` ends (an error, a panic unwinding), a reader thread is told.
    let _stop_reading = SetOnDrop(&stop_reading);
    // Set once the input is all read: no more chunks will come (every chunk
    // is cut, or reading stopped early at a fault or a stop).
    let read_all = Arc::new(AtomicBool::new(false));
    // What a panic in the reader or a worker said (a bug: the consumer raises
    // it again, rather than wait for a result that will never come).
    let panicked: Arc<Mutex<Option<String>>> = Arc::default();
    let chunker = Chunker::new(source, max_bytes, max_line_bytes, file_size);
    let chunks = if file_size.is_some() {
        Chunks::Cut(Box::new(Cutting {
            state: Mutex::new(CutState {
                chunker,
                idle,
                queue: std::collections::VecDeque::new(),
            }),
            slots: Mutex::new(slot_rx),
            read_all: Arc::clone(&read_all),
        }))
    } else {
        let (work_tx, work_rx) = mpsc::sync_channel::<Work>(IN_FLIGHT);
        let reader_done = Arc::clone(&read_all);
        let reader_panicked = Arc::clone(&panicked);
        thread::spawn(move || {
            // `work_tx` is dropped only after a panic is written down: the
            // workers, then the consumer, see the channel close after that.
            let sent = work_tx.clone();
            noting_panic(&reader_panicked, "the reader", || {
                reader(chunker, idle.as_ref(), sent, slot_rx);
            });
            reader_done.store(true, Ordering::Release);
            drop(work_tx);
        });
        Chunks::Sent(Mutex::new(work_rx))
    };
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        // However this ends (a panic in `work` on this thread, or in starting a
        // worker), the workers stop at their next look up, so the scope can end.
        let _stop_workers = SetOnDrop(&stop);
        for _ in 0..workers.max(1) {
            let done_tx = done_tx.clone();
            let (chunks, work, stop, panicked) = (&chunks, &work, &stop, &panicked);
            // A panic is written down before `done_tx` goes: the consumer
            // sees it at its next look, or once every worker is gone.
            scope.spawn(move || {
                noting_panic(panicked, "a worker", || {
                    worker(chunks, work, stop, &done_tx)
                });
            });
        }
        drop(done_tx);
        let results = Results {
            rx: done_rx,
            chunks: &chunks,
            work: &work,
            patience: FIRST_PATIENCE,
            parsed_here: false,
            panicked: &panicked,
            may_help: |next| next < FILL_CHUNKS || read_all.load(Ordering::Acquire),
        };
        let ended = consume_in_order(
            results,
            slot_tx,
            &panicked,
            &mut released,
            &mut tick,
            &mut consume,
        )?;
        if !ended {
            // Every worker is gone and every result was consumed, with no end
            // marker: a thread of the pipeline panicked.
            raise_panic(&panicked);
        }
        Ok(())
    })
}

/// Run `f` (a pipeline thread's work) and give what it returned; if it
/// panics, write down what the panic said in `slot` (the first one counts)
/// and give `None`.
fn noting_panic<R>(slot: &Mutex<Option<String>>, who: &str, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let said = panic_text(payload.as_ref());
            if let Ok(mut slot) = slot.lock() {
                slot.get_or_insert_with(|| format!("{who}: {said}"));
            }
            None
        }
    }
}

/// What a panic said.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

/// A pipeline thread panicked: the rows so far are not the whole input, and
/// this is a bug. Raised as a panic on the calling thread (a
/// `PanicException` in Python), naming what the thread's panic said.
fn raise_panic(slot: &Mutex<Option<String>>) -> ! {
    let said = slot.lock().ok().and_then(|slot| slot.clone());
    panic!(
        "a thread reading or parsing the input stopped before its end{}",
        said.map_or_else(String::new, |said| format!(" ({said})"))
    );
}

/// A worker thread: parse chunks until there are no more, or `stop`.
fn worker<T, W>(chunks: &Chunks, work: &W, stop: &AtomicBool, done_tx: &mpsc::Sender<DoneBox<T>>)
where
    W: Fn(&[u8]) -> ChunkResult<T>,
{
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let done = match chunks.take(true) {
            Ok(item) => do_work(item, work),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if done_tx.send(DoneBox(done)).is_err() {
            return;
        }
    }
}

/// One item of work, on whichever thread took it.
fn do_work<T, W>(item: Work, work: &W) -> Done<T>
where
    W: Fn(&[u8]) -> ChunkResult<T>,
{
    match item {
        Work::Chunk { id, data, len } => {
            let result = work(&data[..len]);
            give_back(data);
            Done::Chunk(id, result)
        }
        Work::Fail { id, fault } => Done::Fail(id, fault),
        Work::End { id } => Done::End(id),
    }
}

/// Where the consumer's next results come from: the workers' results, or a
/// chunk it parses itself.
struct Results<'a, T, W, S> {
    /// Whether the calling thread parses a waiting chunk itself now.
    may_help: S,
    rx: Receiver<DoneBox<T>>,
    chunks: &'a Chunks,
    work: &'a W,
    /// How long the next wait for a result lasts while the calling thread
    /// may parse chunks (never shortened again: after nine empty waits it
    /// is `TICK`).
    patience: Duration,
    /// Whether the last `next` parsed a chunk on the calling thread.
    parsed_here: bool,
    /// Where a pipeline thread's panic is written down.
    panicked: &'a Mutex<Option<String>>,
}

impl<T, W, S> Results<'_, T, W, S>
where
    W: Fn(&[u8]) -> ChunkResult<T>,
    S: Fn(u64) -> bool,
{
    /// The result of a chunk: one that is in; or, where `may_help(next)`
    /// allows it, a waiting chunk parsed here, else one that came in within
    /// `patience`; else one that came in within `TICK`. A timeout when
    /// nothing came. `next` is the id of the result the consumer needs next.
    fn next(&mut self, next: u64) -> Result<Done<T>, RecvTimeoutError> {
        match self.rx.try_recv() {
            Ok(DoneBox(done)) => return Ok(done),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        if !(self.may_help)(next) {
            return self.rx.recv_timeout(TICK).map(|DoneBox(done)| done);
        }
        // A worker waiting for a chunk holds the lock: then none is waiting.
        // Cutting a file's chunk and parsing it here is a worker's work, and
        // a panic in it is raised as a worker's is, naming this thread.
        let (chunks, work) = (self.chunks, self.work);
        let taken = noting_panic(self.panicked, "the calling thread", || {
            chunks.take(false).ok().map(|item| do_work(item, work))
        });
        match taken {
            Some(Some(done)) => {
                self.parsed_here = true;
                return Ok(done);
            }
            Some(None) => {}
            None => raise_panic(self.panicked),
        }
        // A chunk may come before a worker is there to take it: look again soon.
        let got = self.rx.recv_timeout(self.patience);
        if got.is_err() {
            self.patience = (self.patience * 2).min(TICK);
        }
        got.map(|DoneBox(done)| done)
    }
}

/// Hand the results to `consume` in input order until the end marker, or
/// until `consume` says stop (`true` for both); `false` when every worker was
/// gone and every result consumed before the end marker came.
fn consume_in_order<T, W, S, C, E>(
    mut results: Results<'_, T, W, S>,
    slot_tx: SyncSender<()>,
    panicked: &Mutex<Option<String>>,
    released: &mut impl FnMut(&mut (dyn FnMut() + Send)),
    tick: &mut impl FnMut() -> Result<(), E>,
    consume: &mut C,
) -> Result<bool, E>
where
    T: Send,
    W: Fn(&[u8]) -> ChunkResult<T> + Sync,
    S: Fn(u64) -> bool + Send,
    C: FnMut(Event<T>) -> Result<bool, E>,
{
    let mut pending: BTreeMap<u64, Done<T>> = BTreeMap::new();
    let mut next = 0u64;
    loop {
        if let Some(done) = pending.remove(&next) {
            next += 1;
            let event = match done {
                Done::Chunk(_, result) => Event::Chunk(result),
                Done::Fail(_, fault) => Event::Fail(fault),
                Done::End(_) => return Ok(true),
            };
            // Never waits: a full channel means nothing is in flight, and this
            // is the surplus slot of a fault or end marker that came out of
            // the same step as a chunk (and took no slot of its own). Once
            // the input is cut, a slot taken cuts nothing.
            let _ = slot_tx.try_send(());
            if !consume(event)? {
                return Ok(true);
            }
            continue;
        }
        let mut got = Err(RecvTimeoutError::Timeout);
        released(&mut || got = results.next(next));
        if std::mem::take(&mut results.parsed_here) {
            // A chunk parsed here can take a while: look for Ctrl-C after it.
            tick()?;
        }
        match got {
            Ok(done) => {
                let id = match &done {
                    Done::Chunk(id, _) | Done::Fail(id, _) | Done::End(id) => *id,
                };
                pending.insert(id, done);
            }
            Err(RecvTimeoutError::Timeout) => {
                tick()?;
                // A worker that panicked left a result that will never come.
                if panicked.lock().is_ok_and(|slot| slot.is_some()) {
                    raise_panic(panicked);
                }
            }
            // Every worker is gone and every result is in (a channel gives
            // what was sent before it says so), without an end marker.
            Err(RecvTimeoutError::Disconnected) => return Ok(false),
        }
    }
}

/// A result on its way from a worker to the consumer (opaque to callers).
pub struct DoneBox<T>(Done<T>);

/// Sets its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: LineLimits = LineLimits {
        max_line_bytes: 1 << 20,
        max_depth: 4,
        json: JsonLimits {
            max_depth: 8,
            max_int_digits: 20,
        },
    };

    /// A chunk's rows, written back in canonical JSONL.
    fn rewrite(data: &[u8]) -> ChunkResult<String> {
        process_chunk(
            data,
            LIMITS,
            String::new(),
            |_: &mut String, _: &str, _| None,
            |out: &mut String, row| write_row(&row, out),
        )
    }

    /// `bytes` as a pipeline's input, with no limit that matters here.
    fn input_of(bytes: Vec<u8>) -> Input {
        Input {
            reader: Box::new(Cursor::new(bytes)),
            idle: Box::new(|| false),
            stop: Arc::new(AtomicBool::new(false)),
            max_bytes: u64::MAX,
            max_line_bytes: 1 << 20,
            file_size: None,
            looks_gzip: false,
        }
    }

    /// What the panic of a run over `input` with two workers said (it fails
    /// if the run ended without one).
    fn panic_of(input: Input, work: impl Fn(&[u8]) -> ChunkResult<String> + Sync) -> String {
        let raised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _: Result<(), ()> = run(
                input,
                2,
                work,
                |step: &mut (dyn FnMut() + Send)| step(),
                || Ok(()),
                |_| Ok(true),
            );
        }));
        panic_text(
            raised
                .expect_err("the call ended as if the input had")
                .as_ref(),
        )
    }

    fn chunk(id: u64, text: &str) -> Work {
        let mut data = text.as_bytes().to_vec();
        let len = data.len();
        data.resize(len.max(1), 0);
        Work::Chunk { id, data, len }
    }

    #[test]
    fn the_calling_thread_parses_a_waiting_chunk_where_it_may_and_waits_where_not() {
        let (work_tx, work_rx) = mpsc::sync_channel::<Work>(IN_FLIGHT);
        let (_done_tx, done_rx) = mpsc::channel::<DoneBox<String>>();
        let chunks = Chunks::Sent(Mutex::new(work_rx));
        let allowed = AtomicBool::new(false);
        let panicked = Mutex::new(None);
        let mut results = Results {
            rx: done_rx,
            chunks: &chunks,
            work: &rewrite,
            patience: FIRST_PATIENCE,
            parsed_here: false,
            panicked: &panicked,
            may_help: |next: u64| next == 3 && allowed.load(Ordering::Relaxed),
        };
        work_tx.send(chunk(3, "{\"prompt\": \"hi\"}\n")).unwrap();
        // Not allowed: it waits for a worker's result (none comes) and leaves the chunk.
        assert!(matches!(results.next(3), Err(RecvTimeoutError::Timeout)));
        allowed.store(true, Ordering::Relaxed);
        assert!(matches!(results.next(2), Err(RecvTimeoutError::Timeout)));
        // Allowed: the chunk is parsed here, and the queue is empty after it.
        match results.next(3) {
            Ok(Done::Chunk(3, result)) => assert_eq!(result.output, "{\"prompt\":\"hi\"}\n"),
            _ => panic!("the waiting chunk was not parsed on the calling thread"),
        }
        assert!(matches!(chunks.take(false), Err(RecvTimeoutError::Timeout)));
        // Nothing waiting: it waits briefly, longer each time nothing came.
        assert!(matches!(results.next(3), Err(RecvTimeoutError::Timeout)));
        assert_eq!(results.patience, FIRST_PATIENCE * 2);
        // A worker's result that is in comes first; the end marker is work too.
        work_tx.send(Work::End { id: 4 }).unwrap();
        _done_tx.send(DoneBox(Done::End(9))).unwrap();
        assert!(matches!(results.next(3), Ok(Done::End(9))));
        assert!(matches!(results.next(3), Ok(Done::End(4))));
    }

    #[test]
    fn rows_come_out_in_input_order_whichever_thread_parsed_them() {
        // About 20 chunks (64 KiB growing to 1 MiB, 1 to 26 lines each), one
        // worker: the calling thread parses some of them itself. Read by a
        // reader thread, and cut by the threads themselves (a regular file).
        for file in [false, true] {
            in_order_whichever_thread_parsed(file);
        }
    }

    /// `bytes` as a regular file's input (its chunks cut by the pipeline's threads).
    fn file_of(bytes: Vec<u8>) -> Input {
        Input {
            file_size: Some(bytes.len() as u64),
            ..input_of(bytes)
        }
    }

    fn in_order_whichever_thread_parsed(file: bool) {
        let lines: Vec<String> = (0..400)
            .map(|i| format!("{{\"prompt\":\"{i:05}{}\"}}\n", "x".repeat(40_000)))
            .collect();
        let bytes = lines.concat().into_bytes();
        let input = if file {
            file_of(bytes)
        } else {
            input_of(bytes)
        };
        let here = thread::current().id();
        let parsed_by = Mutex::new(Vec::new());
        let work = |data: &[u8]| {
            parsed_by.lock().unwrap().push(thread::current().id());
            if thread::current().id() != here {
                // A slow worker: chunks wait in the queue for the calling thread.
                thread::sleep(Duration::from_millis(5));
            }
            rewrite(data)
        };
        let mut out = String::new();
        let done: Result<(), ()> = run(
            input,
            1,
            work,
            |step: &mut (dyn FnMut() + Send)| step(),
            || Ok(()),
            |event| {
                match event {
                    Event::Chunk(result) => out.push_str(&result.output),
                    Event::Fail(_) => panic!("the input is fine"),
                }
                Ok(true)
            },
        );
        assert!(done.is_ok());
        assert_eq!(out, lines.concat(), "a file: {file}");
        let parsed_by = parsed_by.into_inner().unwrap();
        assert!(
            parsed_by.contains(&here),
            "the calling thread parsed no chunk (a file: {file})"
        );
    }

    /// The sizes of the chunks of a run over `input`, in input order.
    fn chunk_sizes(input: Input) -> Vec<usize> {
        let mut sizes = Vec::new();
        let done: Result<(), ()> = run(
            input,
            2,
            rewrite,
            |step: &mut (dyn FnMut() + Send)| step(),
            || Ok(()),
            |event| {
                match event {
                    Event::Chunk(result) => sizes.push(result.bytes),
                    Event::Fail(_) => panic!("the input is fine"),
                }
                Ok(true)
            },
        );
        assert!(done.is_ok());
        sizes
    }

    #[test]
    fn a_files_last_chunks_shrink_to_a_quarter_of_what_is_left() {
        // 8 MiB of 1 KiB lines.
        let line = format!("{{\"prompt\":\"{}\"}}\n", "x".repeat(1_024 - 15));
        let bytes = line.repeat(8 << 10).into_bytes();
        let total = bytes.len();
        let sizes = chunk_sizes(file_of(bytes.clone()));
        assert_eq!(sizes.iter().sum::<usize>(), total);
        let (last, before) = sizes.split_last().unwrap();
        // The last is about FIRST_CHUNK_BYTES (whole lines), each chunk at
        // most a quarter of what was left before it (and at least
        // FIRST_CHUNK_BYTES, less a line).
        assert!(*last <= FIRST_CHUNK_BYTES, "{sizes:?}");
        let mut left = total;
        for &size in before {
            assert!(
                size <= CHUNK_BYTES.min((left / 4).max(FIRST_CHUNK_BYTES)),
                "{sizes:?}"
            );
            assert!(size + line.len() > FIRST_CHUNK_BYTES, "{sizes:?}");
            left -= size;
        }
        // A file that grew after it was opened: past its old size the chunks
        // grow again.
        let sizes = chunk_sizes(Input {
            file_size: Some(1 << 20),
            ..input_of(bytes.clone())
        });
        assert!(
            sizes[..sizes.len() - 1]
                .iter()
                .rev()
                .take(3)
                .all(|&s| s + line.len() > CHUNK_BYTES),
            "{sizes:?}"
        );
        // Not a file (no size known): the chunks grow to CHUNK_BYTES and stay.
        let sizes = chunk_sizes(input_of(bytes));
        assert!(
            sizes[..sizes.len() - 1]
                .iter()
                .rev()
                .take(3)
                .all(|&s| s + line.len() > CHUNK_BYTES),
            "{sizes:?}"
        );
    }

    /// Lines, then a panic where the next read would be.
    struct PanicsAfter(Cursor<Vec<u8>>);

    impl Read for PanicsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => panic!("a reader that fails in an unforeseen way"),
                n => Ok(n),
            }
        }
    }

    #[test]
    fn a_reader_thread_that_dies_is_raised_not_a_short_success() {
        let input = Input {
            reader: Box::new(PanicsAfter(Cursor::new(b"{\"prompt\": \"a\"}\n".to_vec()))),
            ..input_of(Vec::new())
        };
        assert_eq!(
            panic_of(input, rewrite),
            "a thread reading or parsing the input stopped before its end \
             (the reader: a reader that fails in an unforeseen way)"
        );
    }

    #[test]
    fn a_file_whose_read_panics_is_raised_whichever_thread_read_it() {
        // Cut by the calling thread (the first chunk) or by a worker, the
        // panic is raised by the calling thread, naming the one that read.
        for _ in 0..20 {
            let line = b"{\"prompt\": \"a\"}\n".to_vec();
            let input = Input {
                file_size: Some(line.len() as u64),
                reader: Box::new(PanicsAfter(Cursor::new(line))),
                ..input_of(Vec::new())
            };
            let said = panic_of(input, rewrite);
            let who = ["the calling thread", "a worker"].into_iter().find(|who| {
                said == format!(
                    "a thread reading or parsing the input stopped before its end \
                     ({who}: a reader that fails in an unforeseen way)"
                )
            });
            // Which thread read is up to the scheduler: either is named.
            assert!(who.is_some(), "not the pipeline's panic: {said}");
        }
    }

    #[test]
    fn a_chunk_that_panics_on_the_calling_thread_is_raised_naming_it() {
        // The first chunks are parsed by the calling thread where no worker
        // took them: with no workers started yet, the first is its own.
        let input = input_of(b"{\"prompt\": \"a\"}\n".to_vec());
        let said = panic_of(input, |_: &[u8]| -> ChunkResult<String> {
            panic!("a parser that fails in an unforeseen way")
        });
        assert!(
            said.starts_with("a thread reading or parsing the input stopped before its end (")
                && said.ends_with(": a parser that fails in an unforeseen way)"),
            "{said}"
        );
    }

    /// Lines, then a read error where the end would be.
    struct FailsAtTheEnd(Cursor<Vec<u8>>);

    impl Read for FailsAtTheEnd {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(io::Error::other("the disk went away")),
                n => Ok(n),
            }
        }
    }

    #[test]
    fn a_fault_after_whole_lines_ends_the_run_whoever_reads() {
        // The chunk before the fault and the fault come out of one read; the
        // consumer then hands back more slots than were taken.
        use std::io::Write;
        let two = b"{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n".to_vec();
        let many = format!("{{\"prompt\":\"{}\"}}\n", "x".repeat(1_000))
            .repeat(3_000)
            .into_bytes();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(&b"{\"prompt\":\"a\"}\n".repeat(100))
            .unwrap();
        let mut cut_short = gzip.finish().unwrap();
        cut_short.pop();
        for file in [false, true] {
            for workers in [1, 2, 4] {
                let size = |bytes: &[u8]| file.then_some(bytes.len() as u64);
                let too_large = Input {
                    max_bytes: 20,
                    file_size: size(&two),
                    ..input_of(two.clone())
                };
                let read_error = Input {
                    reader: Box::new(FailsAtTheEnd(Cursor::new(many.clone()))),
                    file_size: size(&many),
                    ..input_of(Vec::new())
                };
                let bad_gzip = Input {
                    file_size: size(&cut_short),
                    ..input_of(cut_short.clone())
                };
                let case = format!("a file: {file}, {workers} workers");
                // The rows written, and the fault at the line after them.
                let rows_then = |input, workers| {
                    ending_of(input, workers).map(|(out, ended)| (out.lines().count(), ended))
                };
                assert_eq!(
                    rows_then(too_large, workers),
                    Some((1, "too large at 1".into())),
                    "{case}"
                );
                assert_eq!(
                    rows_then(read_error, workers),
                    Some((3_000, "the disk went away at 3000".into())),
                    "{case}"
                );
                assert_eq!(
                    rows_then(bad_gzip, workers),
                    Some((100, "gzip at 100".into())),
                    "{case}"
                );
            }
        }
    }

    /// A run over `input`, stopping at the first fault as the file readers
    /// do: the output written, then how it ended (the fault's kind and its
    /// line from the start, 0-based); `None` if it hung for 20 seconds. Of a
    /// line over the limit only the line is told: the reader or the rules
    /// find it, depending on where the chunks were cut, and both give the
    /// user the same error.
    fn ending_of(input: Input, workers: usize) -> Option<(String, String)> {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut out = String::new();
            let mut lines = 0u64;
            let ended: Result<(), String> = run(
                input,
                workers,
                rewrite,
                |step: &mut (dyn FnMut() + Send)| step(),
                || Ok(()),
                |event| match event {
                    Event::Chunk(result) => {
                        out.push_str(&result.output);
                        let at = lines;
                        lines += result.lines;
                        match result.fault {
                            None => Ok(true),
                            Some(LineFault::TooLong { line, .. }) => {
                                Err(format!("line too long at {}", at + line))
                            }
                            Some(LineFault::Row { line, .. }) => {
                                Err(format!("row at {}", at + line))
                            }
                            Some(LineFault::Syntax { line, .. }) => {
                                Err(format!("syntax at {}", at + line))
                            }
                            Some(LineFault::Utf8 { line, .. }) => {
                                Err(format!("utf-8 at {}", at + line))
                            }
                        }
                    }
                    Event::Fail(ReadFault::LineTooLong) => Err(format!("line too long at {lines}")),
                    Event::Fail(ReadFault::TooLarge) => Err(format!("too large at {lines}")),
                    Event::Fail(ReadFault::Gzip) => Err(format!("gzip at {lines}")),
                    Event::Fail(ReadFault::Io(err)) => Err(format!("{err} at {lines}")),
                },
            );
            let _ = tx.send((out, ended.err().unwrap_or_else(|| "the end".into())));
        });
        rx.recv_timeout(Duration::from_secs(20)).ok()
    }

    #[test]
    fn a_file_cut_by_the_threads_ends_as_one_read_by_a_reader_thread() {
        let row = |i: usize| format!("{{\"prompt\":\"{i:04}{}\"}}\n", "x".repeat(i % 700));
        let rows: String = (0..3_000).map(row).collect();
        let long = format!(
            "{{\"prompt\":\"{}\"}}\n",
            "y".repeat(LIMITS.max_line_bytes + 10)
        );
        let cases: Vec<(&str, Vec<u8>, u64)> = vec![
            ("empty", Vec::new(), u64::MAX),
            (
                "one line, no newline",
                b"{\"prompt\":\"a\"}".to_vec(),
                u64::MAX,
            ),
            ("blank lines only", b"\n\n  \n\n".to_vec(), u64::MAX),
            ("rows", rows.clone().into_bytes(), u64::MAX),
            (
                "rows, no last newline",
                rows.trim_end().as_bytes().to_vec(),
                u64::MAX,
            ),
            (
                "a long line first",
                format!("{long}{rows}").into_bytes(),
                u64::MAX,
            ),
            (
                "a long line in the middle",
                format!("{rows}{long}{rows}").into_bytes(),
                u64::MAX,
            ),
            (
                "a long line last",
                format!("{rows}{long}").into_bytes(),
                u64::MAX,
            ),
            (
                "a bad row in the middle",
                format!("{rows}[1]\n{rows}").into_bytes(),
                u64::MAX,
            ),
        ];
        // The byte limit at a line's end, and one byte either side of it.
        let at = rows
            .match_indices('\n')
            .nth(1_500)
            .map_or(0, |(i, _)| i as u64 + 1);
        let limited = [at - 1, at, at + 1];
        let cases = cases.into_iter().chain(
            limited
                .iter()
                .map(|&max| ("the byte limit", rows.clone().into_bytes(), max)),
        );
        for (name, bytes, max_bytes) in cases {
            for workers in [1, 2, 4] {
                let read = ending_of(
                    Input {
                        max_bytes,
                        ..input_of(bytes.clone())
                    },
                    workers,
                )
                .expect(name);
                let cut = ending_of(
                    Input {
                        max_bytes,
                        ..file_of(bytes.clone())
                    },
                    workers,
                )
                .expect(name);
                assert!(
                    read == cut,
                    "{name}, {workers} workers: {} against {}",
                    read.1,
                    cut.1
                );
            }
        }
    }

    #[test]
    fn a_consumer_that_stops_early_ends_the_run_whoever_reads() {
        let line = format!("{{\"prompt\":\"{}\"}}\n", "x".repeat(2_000));
        let bytes = line.repeat(6_000).into_bytes();
        for file in [false, true] {
            for workers in [1, 4] {
                for after in [1, 2, 8, 14] {
                    let input = if file {
                        file_of(bytes.clone())
                    } else {
                        input_of(bytes.clone())
                    };
                    let (tx, rx) = mpsc::channel();
                    thread::spawn(move || {
                        let mut seen = 0;
                        let done: Result<(), ()> = run(
                            input,
                            workers,
                            rewrite,
                            |step: &mut (dyn FnMut() + Send)| step(),
                            || Ok(()),
                            |_| {
                                seen += 1;
                                Ok(seen < after)
                            },
                        );
                        let _ = tx.send((done.is_ok(), seen));
                    });
                    assert_eq!(
                        rx.recv_timeout(Duration::from_secs(20)).ok(),
                        Some((true, after)),
                        "a file: {file}, {workers} workers, stopped after {after}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_worker_that_panics_is_raised_not_waited_for() {
        // About 50 chunks: past the first 16 the calling thread leaves them to
        // the workers (the reader, 8 ahead at most, is not done). One worker
        // panics once; the other lives on, so the channel stays open and the
        // result that never comes is noticed at a wait's end. Read by a
        // reader thread, and cut by the threads themselves (a regular file).
        let line = format!("{{\"prompt\":\"{}\"}}\n", "x".repeat(40_000));
        for file in [false, true] {
            let bytes = line.repeat(1_200).into_bytes();
            let input = if file {
                file_of(bytes)
            } else {
                input_of(bytes)
            };
            let here = thread::current().id();
            let once = AtomicBool::new(false);
            let work = |data: &[u8]| {
                if thread::current().id() != here && !once.swap(true, Ordering::Relaxed) {
                    panic!("a worker's bug");
                }
                rewrite(data)
            };
            let said = panic_of(input, work);
            assert!(
                said.starts_with(
                    "a thread reading or parsing the input stopped before its end (a worker: "
                ),
                "{said} (a file: {file})"
            );
        }
    }

    /// The full path's output line (or `None` for a refused line) and keys dropped.
    fn full(text: &str) -> Option<(String, usize)> {
        let row = check_row(parse_row_line(text, LIMITS.json).ok()?, LIMITS.max_depth).ok()?;
        let mut out = String::new();
        write_row(&row, &mut out);
        Some((out, row.dropped_keys))
    }

    fn shortcut(text: &str) -> Option<(String, usize)> {
        let mut out = String::new();
        let dropped = write_verbatim_row(text, LIMITS, false, &mut Vec::new(), &mut out);
        let ascii = printable_ascii(text.as_bytes());
        let mut again = String::new();
        let same = write_verbatim_row(text, LIMITS, ascii, &mut Vec::new(), &mut again);
        assert_eq!(
            (dropped, &out),
            (same, &again),
            "{text}: the ASCII hint changed the result"
        );
        if dropped.is_none() {
            assert!(out.is_empty(), "{text}: wrote {out:?} and gave up");
        }
        dropped.map(|dropped| (out, dropped))
    }

    #[test]
    fn the_shortcut_takes_canonical_rows_and_writes_what_the_full_path_writes() {
        let taken = [
            r#"{"prompt":"hi"}"#,
            r#" { "id" : 1 , "prompt" : "hi" , "answer" : "4" } "#,
            r#"{"prompt":"a\"b\\c\nd\u0001\u001f","answer":"x\ty"}"#,
            r#"{"prompt":[{"role":"user","content":"hi"}],"answer":null}"#,
            r#"{"prompt":[{"role":"user","content":"hi"}],"answer":""}"#,
            r#"{"x":[1.5,{"a":NaN_IS_NOT_HERE}],"prompt":"p"}"#,
            r#"{"prompt":[{"content":null,"role":"a","n":-12,"t":[true,false,null,{}],"e":[]}]}"#,
            r#"{"prompt":[{"role":"a","f":[1.0,-0.0,0.5,1e+16,1.5e-07,123.456,1e-05]}]}"#,
            r#"{"prompt":[{"role":"r","o":{"a":{"b":{"c":1}}}}],"extra":{"x":1e400}}"#,
            r#"{"prompt":[{"role":"é","content":"naïve ✓"},{"role":"tool","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"x\":1}"}}]}]}"#,
        ];
        for text in taken {
            let text = &text.replace("NaN_IS_NOT_HERE", "2");
            let got = shortcut(text);
            assert!(got.is_some(), "not taken: {text}");
            assert_eq!(got, full(text), "{text}");
        }
    }

    #[test]
    fn plain_only_gives_up_at_the_first_message_that_is_not_plain() {
        let text = r#"{"prompt":[{"role":"user","content":"a\nb"},{"role":"tool","name":"f"}]}"#;
        let mut messages = Vec::new();
        assert!(verbatim_row(text, LIMITS, true, false, &mut messages).is_some());
        let roles: Vec<&str> = messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["user", "tool"]);
        assert_eq!(messages[0].content, Some(r"a\nb"));
        assert!(verbatim_row(text, LIMITS, true, true, &mut messages).is_none());
        let text = r#"{"prompt":[{"role":"user","content":null},{"role":"a","content":"c"}]}"#;
        assert!(verbatim_row(text, LIMITS, true, true, &mut messages).is_some());
        assert_eq!(messages.len(), 2);
    }

    #[test]
    fn anything_else_is_left_to_the_full_path() {
        let left = [
            // Spellings the output changes.
            r#"{"prompt":[ {"role":"user"}]}"#,
            r#"{"prompt":[{"role":"user","n":1.00}]}"#,
            r#"{"prompt":[{"role":"user","n":1e16}]}"#,
            r#"{"prompt":[{"role":"user","n":1E+16}]}"#,
            r#"{"prompt":[{"role":"user","n":0.10000000000000001}]}"#,
            r#"{"prompt":[{"role":"user","n":1e400}]}"#,
            r#"{"prompt":[{"role":"user","n":-0}]}"#,
            r#"{"prompt":[{"role":"user","c":"\/"}]}"#,
            r#"{"prompt":[{"role":"user","c":"\u0041"}]}"#,
            r#"{"prompt":[{"role":"user","c":"\u000a"}]}"#,
            r#"{"prompt":[{"role":"user","c":"\u001F"}]}"#,
            r#"{"prompt":"\u00e9"}"#,
            r#"{"prompt":"p","answer":"\/"}"#,
            r#"{"pr\u006fmpt":"p"}"#,
            r#"{"prompt":[{"role":"user","a":1,"a":2}]}"#,
            r#"{"prompt":[{"role":"user","o":{"a":1,"a":1}}]}"#,
            r#"{"prompt":"p","x":1,"x":2}"#,
            r#"{"prompt":"p","prompt":"q"}"#,
            // Rows the rules refuse, or change.
            r#"{"prompt":""}"#,
            r#"{"prompt":[]}"#,
            r#"{"prompt":null}"#,
            r#"{"answer":"a"}"#,
            r#"{"prompt":"p","answer":1}"#,
            r#"{"prompt":[{"content":"x"}]}"#,
            r#"{"prompt":[{"role":""}]}"#,
            r#"{"prompt":[{"role":1}]}"#,
            r#"{"prompt":["user"]}"#,
            r#"{"prompt":[{"role":"r","o":{"a":{"b":{"c":{}}}}}]}"#,
            r#"{"prompt":[{"role":"r","o":[[[[[]]]]]}]}"#,
            r#"{"prompt":[{"role":"r","n":123456789012345678901}]}"#,
            // Not JSON, or not all of it.
            r#"{"prompt":"p"} x"#,
            r#"{"prompt":"p",}"#,
            r#"{"prompt":"p","x":NaN}"#,
            r#"{"prompt":"p","x":[1,]}"#,
            "\u{feff}{\"prompt\":\"p\"}",
            r#"["prompt"]"#,
        ];
        for text in left {
            assert_eq!(shortcut(text), None, "taken: {text}");
        }
        // A JSON depth limit below the row's own depth is the parser's to report.
        let shallow = LineLimits {
            json: JsonLimits {
                max_depth: 0,
                ..LIMITS.json
            },
            ..LIMITS
        };
        let mut out = String::new();
        let row = r#"{"prompt":"p"}"#;
        assert!(write_verbatim_row(row, shallow, true, &mut Vec::new(), &mut out).is_none());
        // Every key past the sixteenth is not looked at for repeats.
        let many: String = (0..17).map(|i| format!(",\"k{i}\":1")).collect();
        let row = format!(r#"{{"prompt":[{{"role":"r"{many}}}]}}"#);
        assert_eq!(shortcut(&row), None);
        assert!(full(&row).is_some());
    }

    #[test]
    fn every_prefix_and_byte_change_of_a_canonical_row_agrees() {
        // Whatever the shortcut takes, the full path takes and writes alike.
        let base = r#"{"id":"t-1","prompt":[{"role":"system","content":"a\"b\n"},{"role":"user","content":"c","tool_calls":[{"id":"x","n":12,"ok":true}]}],"answer":"42","reward":0.5}"#;
        let mut taken = 0;
        for cut in 0..=base.len() {
            let Some(prefix) = base.get(..cut) else {
                continue;
            };
            if let Some(got) = shortcut(prefix) {
                assert_eq!(Some(got), full(prefix), "{prefix}");
                taken += 1;
            }
        }
        assert_eq!(taken, 1, "only the whole row is a row");
        for at in 0..base.len() {
            for byte in [
                b' ', b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'-', b'e', b'\x01',
                b'u',
            ] {
                let mut bytes = base.as_bytes().to_vec();
                bytes[at] = byte;
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                if let Some(got) = shortcut(&text) {
                    assert_eq!(Some(got), full(&text), "{text}");
                    taken += 1;
                }
            }
        }
        assert!(taken > 100, "the shortcut took only {taken} lines");
    }
}
