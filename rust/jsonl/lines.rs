//! The lines of one chunk, each through the checks in order (line length,
//! blank, UTF-8, the shortcut, JSON syntax, row rules; the row cap is the
//! consumer's, which sees the chunks in input order), as the twin's
//! `_jsonl.read_lines`, `decode` and `row_batches` take them.

use crate::json::{parse_row_line, printable_ascii};

use super::rules::check_row;
use super::{LineFault, LineLimits, Row};

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
    /// The refused lines, in line order. Without `LineLimits::keep_going`,
    /// at most one: the first (rows after it were not looked at). With it,
    /// every refused line of the chunk; a `TooLong` one still ends it, last.
    pub faults: Vec<LineFault>,
}

impl<T> ChunkResult<T> {
    /// The same result, its output made into another (on the thread that parsed it).
    pub fn map<U>(self, make: impl FnOnce(T) -> U) -> ChunkResult<U> {
        ChunkResult {
            row_lines: self.row_lines,
            output: make(self.output),
            dropped_keys: self.dropped_keys,
            blank_lines: self.blank_lines,
            lines: self.lines,
            bytes: self.bytes,
            faults: self.faults,
        }
    }
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
    let mut faults = Vec::new();
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
            faults.push(LineFault::TooLong {
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
                faults.push(LineFault::Utf8 {
                    line: this_line,
                    byte: err.valid_up_to() + 1,
                    local_index,
                });
                if limits.keep_going {
                    continue;
                }
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
                faults.push(LineFault::Syntax {
                    reason: err.reason,
                    line: this_line,
                    column,
                    local_index,
                });
                if limits.keep_going {
                    continue;
                }
                break;
            }
        };
        match check_row(doc, limits.max_depth) {
            Ok(row) => {
                dropped_keys += row.dropped_keys;
                sink(&mut output, row);
            }
            Err(rule) => {
                faults.push(LineFault::Row {
                    rule,
                    local_index,
                    line: this_line,
                });
                if !limits.keep_going {
                    break;
                }
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
        faults,
    }
}

#[cfg(test)]
mod tests;
