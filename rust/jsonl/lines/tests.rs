//! A chunk's lines through the checks: stopping at the first refused line,
//! or going on past each (`LineLimits::keep_going`).

use crate::jsonl::{process_chunk, write_row, LineFault, LineLimits, LIMITS};

/// The faults of a chunk as (kind, line, local index), and the rows written.
fn run(data: &[u8], keep_going: bool) -> (Vec<(&'static str, u64, usize)>, String, usize) {
    let limits = LineLimits {
        keep_going,
        max_line_bytes: 64,
        ..LIMITS
    };
    let result = process_chunk(
        data,
        limits,
        String::new(),
        |_: &mut String, _: &str, _| None,
        |out: &mut String, row| write_row(&row, out),
    );
    let faults = result
        .faults
        .iter()
        .map(|fault| match fault {
            LineFault::Row { line, .. } => ("row", *line, fault.local_index()),
            LineFault::Syntax { line, .. } => ("syntax", *line, fault.local_index()),
            LineFault::Utf8 { line, .. } => ("utf8", *line, fault.local_index()),
            LineFault::TooLong { line, .. } => ("too long", *line, fault.local_index()),
        })
        .collect();
    (faults, result.output, result.row_lines.len())
}

const MIXED: &[u8] = b"{\"prompt\":\"a\"}\n{\"prompt\":3}\n\n{\"prompt\":\"\xff\"}\n{\"prompt\":\n{\"prompt\":\"b\"}\n";

#[test]
fn without_keep_going_the_first_refused_line_ends_the_chunk() {
    let (faults, output, rows) = run(MIXED, false);
    assert_eq!(faults, vec![("row", 1, 1)]);
    assert_eq!(output, "{\"prompt\":\"a\"}\n");
    assert_eq!(rows, 2); // the lines after it were not looked at
}

#[test]
fn with_keep_going_every_refused_line_is_recorded_in_line_order() {
    let (faults, output, rows) = run(MIXED, true);
    // Line 2 is blank: no row index of its own.
    assert_eq!(
        faults,
        vec![("row", 1, 1), ("utf8", 3, 2), ("syntax", 4, 3)]
    );
    assert_eq!(output, "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n");
    assert_eq!(rows, 5);
}

#[test]
fn a_line_over_the_limit_ends_the_chunk_even_when_keeping_going() {
    let long = format!("{{\"prompt\":\"{}\"}}", "x".repeat(80));
    let data = format!("{{\"prompt\":1}}\n{long}\n{{\"prompt\":\"c\"}}\n");
    let (faults, output, rows) = run(data.as_bytes(), true);
    assert_eq!(faults, vec![("row", 0, 0), ("too long", 1, 1)]);
    assert_eq!(output, "");
    assert_eq!(rows, 1);
}
