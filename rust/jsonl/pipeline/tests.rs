//! The pipeline: input order, who reads and parses, chunk sizes, faults,
//! early stops and panics.

use std::io::{self, Cursor, Read};

use super::*;
use crate::jsonl::{process_chunk, write_row, LineFault, LIMITS};

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
                    match result.faults.into_iter().next() {
                        None => Ok(true),
                        Some(LineFault::TooLong { line, .. }) => {
                            Err(format!("line too long at {}", at + line))
                        }
                        Some(LineFault::Row { line, .. }) => Err(format!("row at {}", at + line)),
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
