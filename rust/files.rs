//! Rollout files in and out: `read_rollout_jsonl` (rows as Python objects)
//! and `normalise_rollout_file` (file to file, no Python objects at all).

use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::errors::{nesting_limit, Code, Fault, NativeRowError, Rule, Seg};
use crate::json::{JsonLimits, J};
use crate::jsonl::{self, ChunkResult, Event, Input, LineFault, LineLimits, ReadFault, Row, Spare};
use crate::rows::GcPause;

/// The limits of one file run, made in Python (`agent_rollout._limits` holds
/// the numbers; Rust keeps no copy) and passed to every file function.
#[pyclass(frozen, from_py_object, get_all, module = "agent_rollout._native")]
#[derive(Clone, Copy)]
pub struct FileLimits {
    /// Rows accepted at most; one more is refused (`file_too_many_rows`).
    pub max_rows: usize,
    /// Input bytes (after gzip decompression) accepted at most.
    pub max_bytes: u64,
    /// How deeply containers may nest inside one chat message.
    pub max_depth: usize,
    /// How deeply arrays and objects may nest in one line (the row object is 1).
    pub json_depth: usize,
    /// The longest integer (in digits) a line may hold.
    pub max_int_digits: usize,
    /// The longest line accepted, in bytes, without its newline.
    pub max_line_bytes: usize,
}

#[pymethods]
impl FileLimits {
    #[new]
    #[pyo3(signature = (*, max_rows, max_bytes, max_depth, json_depth, max_int_digits, max_line_bytes))]
    fn new(
        max_rows: usize,
        max_bytes: u64,
        max_depth: usize,
        json_depth: usize,
        max_int_digits: usize,
        max_line_bytes: usize,
    ) -> PyResult<Self> {
        Ok(FileLimits {
            max_rows,
            max_bytes,
            max_depth: nesting_limit("max_depth", max_depth)?,
            json_depth: nesting_limit("json_depth", json_depth)?,
            max_int_digits,
            max_line_bytes,
        })
    }
}

impl FileLimits {
    /// What `jsonl::process_chunk` checks each line against (stopping at the
    /// first bad line: a run that keeps going sets `keep_going`).
    pub(crate) fn lines(&self) -> LineLimits {
        LineLimits {
            max_line_bytes: self.max_line_bytes,
            max_depth: self.max_depth,
            json: JsonLimits {
                max_depth: self.json_depth,
                max_int_digits: self.max_int_digits,
            },
            keep_going: false,
        }
    }
}

/// What a run saw, returned to Python as it is.
#[pyclass(frozen, module = "agent_rollout._native")]
#[derive(Default)]
pub struct FileStats {
    /// Rows accepted.
    #[pyo3(get)]
    pub rows: usize,
    /// Lines read, blank ones included.
    #[pyo3(get)]
    pub lines: u64,
    #[pyo3(get)]
    pub blank_lines: usize,
    /// Keys other than `prompt` and `answer`, dropped from the rows.
    #[pyo3(get)]
    pub dropped_keys: usize,
    /// Input bytes, after gzip decompression.
    #[pyo3(get)]
    pub bytes_in: u64,
    /// Bytes written (`normalise_file`; 0 for the other functions).
    #[pyo3(get)]
    pub bytes_out: u64,
    /// Rows refused by a run that kept going past them (`BadRows`).
    #[pyo3(get)]
    pub bad_rows: usize,
    /// The first of them (`NativeRowError`s, in line order): `BadRows::keep`.
    pub kept: Vec<Py<PyAny>>,
}

#[pymethods]
impl FileStats {
    /// The first bad rows, as `NativeRowError`s in line order.
    #[getter]
    fn bad<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.kept.iter().map(|err| err.clone_ref(py)))
    }
}

impl FileStats {
    /// Count a chunk whose good rows were `rows` (`settle`).
    pub(crate) fn add<T>(&mut self, rows: usize, result: &ChunkResult<T>) {
        self.rows += rows;
        self.lines += result.lines;
        self.blank_lines += result.blank_lines;
        self.dropped_keys += result.dropped_keys;
        self.bytes_in += result.bytes as u64;
    }
}

/// The rows a run that keeps going refused (`LineLimits::keep_going`): every
/// one counted, the first `keep` kept with their fault, in line order, and
/// nothing more, so that memory stays flat on a file of bad lines. The twin's
/// `_jsonl.BadRows`.
pub(crate) struct BadRows {
    pub(crate) count: usize,
    pub(crate) kept: Vec<Fault>,
    keep: usize,
}

impl BadRows {
    pub(crate) fn new(keep: usize) -> Self {
        BadRows {
            count: 0,
            kept: Vec::new(),
            keep,
        }
    }

    /// Count one bad row, and keep its fault (made only then) while there is room.
    fn note(&mut self, fault: impl FnOnce() -> Fault) {
        self.count += 1;
        if self.kept.len() < self.keep {
            self.kept.push(fault());
        }
    }

    /// The bad rows as Python exceptions, on `stats`.
    pub(crate) fn into_stats(self, py: Python<'_>, stats: &mut FileStats) {
        stats.bad_rows = self.count;
        stats.kept = self.into_errors(py);
    }

    fn into_errors(self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.kept
            .into_iter()
            .map(|fault| fault.into_pyerr(py).into_value(py).into_any())
            .collect()
    }

    /// The end of a read that went on past bad rows, from `run`'s outcome: the
    /// fault that ended it, carrying the bad rows before it (`ended_by`);
    /// `FileNoRows` when the file held no row, good or bad; else the bad rows
    /// on `stats` (`into_stats`).
    pub(crate) fn finish(
        self,
        py: Python<'_>,
        run: Result<(), Fault>,
        stats: &mut FileStats,
    ) -> PyResult<()> {
        if let Err(fault) = run {
            return Err(self.ended_by(py, fault));
        }
        if stats.rows == 0 && self.count == 0 {
            return Err(Fault::input(Code::FileNoRows, None).into_pyerr(py));
        }
        self.into_stats(py, stats);
        Ok(())
    }

    /// `fault`, the one that ended the run, as the Python exception; when bad
    /// rows came before it, it carries them: `bad_rows`, a tuple of their
    /// count and the first ones (`NativeRowError`s).
    pub(crate) fn ended_by(self, py: Python<'_>, fault: Fault) -> PyErr {
        let err = fault.into_pyerr(py);
        if self.count == 0 || !err.is_instance_of::<NativeRowError>(py) {
            return err;
        }
        let count = self.count;
        let carried = PyTuple::new(py, self.into_errors(py))
            .and_then(|kept| (count, kept).into_pyobject(py))
            .and_then(|facts| err.value(py).setattr("bad_rows", facts));
        match carried {
            Ok(()) => err,
            Err(other) => other,
        }
    }
}

fn io_fault(code: Code, err: &io::Error) -> Fault {
    // The errno lets Python build the same OSError its own `open` would.
    let fact = match err.raw_os_error() {
        Some(errno) => errno.to_string(),
        None => err.to_string(),
    };
    Fault::input(code, Some(fact))
}

/// Worker threads for a file's pipeline: the CPUs this process may use, 1 to
/// 4. Asked once: on Linux `available_parallelism` reads the cgroup files in
/// /proc and /sys each time, which cost several milliseconds a call here
/// (measured on a 10k-row file: a fixed cost as large as the parsing itself).
pub(crate) fn workers() -> usize {
    workers_for(cpus(), None)
}

/// Worker threads for JSONL -> JSONL (`normalise_file`) on `input`: as
/// `workers`, but one fewer for a regular file of at most
/// `jsonl::HELPED_FILE_BYTES` bytes of JSONL, which the calling thread parses
/// as well, where a worker per CPU beside it would put more threads to
/// parsing than there are CPUs (2 to 4 CPUs; never fewer than one worker, so
/// on one CPU the worker and the calling thread still share it). Only this
/// path: `read_rollout_jsonl`, `read_rollout_table` and Parquet were no faster
/// with one worker on 10k rows (paired runs of the benches/ scripts). The size
/// is the file's when opened: one that grows while it is read keeps the count
/// it started with.
pub(crate) fn workers_writing_jsonl(input: &Input) -> usize {
    workers_for(cpus(), plain_size(input))
}

/// The CPUs this process may use, asked once.
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The bytes of JSONL `input` holds, where its size tells them: a regular
/// file's size, unless it is gzip (a compressed size says nothing of them).
fn plain_size(input: &Input) -> Option<u64> {
    if input.looks_gzip {
        None
    } else {
        input.file_size
    }
}

/// `workers` for a machine of `cpus` CPUs and an input of `file_size` bytes of
/// JSONL (a regular file's, not gzip; `None` for any other input).
fn workers_for(cpus: usize, file_size: Option<u64>) -> usize {
    let workers = cpus.clamp(1, 4);
    match file_size {
        Some(size) if size <= jsonl::HELPED_FILE_BYTES && workers >= cpus && workers > 1 => {
            workers - 1
        }
        _ => workers,
    }
}

// ---- descriptors ---------------------------------------------------------------------------

/// A new descriptor for the open file behind `fd` (close-on-exec), owned by us.
fn dup_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) only reads its arguments; on a closed or
    // invalid `fd` it fails with EBADF and returns -1.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by fcntl: an open descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Wait until `fd` is ready for `events`, at most `timeout_ms`; true when ready.
fn poll_fd(fd: RawFd, events: libc::c_short, timeout_ms: libc::c_int) -> io::Result<bool> {
    let mut entry = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, and nfds = 1.
    let got = unsafe { libc::poll(&mut entry, 1, timeout_ms) };
    if got < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(err);
    }
    Ok(got > 0)
}

fn tick_ms() -> libc::c_int {
    libc::c_int::try_from(jsonl::TICK.as_millis()).unwrap_or(50)
}

/// An input descriptor read by the pipeline. A read on a pipe, terminal or
/// device (on the pipeline's reader thread) first waits with `poll`, looking
/// every `TICK` at `stop`: once the call that started the reader has ended,
/// it gives up without reading another byte. A regular file never waits, so
/// it is read straight (by the pipeline's own threads).
struct FdSource {
    file: File,
    stop: Arc<AtomicBool>,
    waits: bool,
}

impl Read for FdSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.file.as_raw_fd();
        loop {
            if self.waits {
                // Looked at before every read, ready or not: input that
                // arrives after the call ended is left for the next reader.
                loop {
                    let ready = poll_fd(fd, libc::POLLIN, tick_ms())?;
                    if self.stop.load(Ordering::Relaxed) {
                        return Err(io::Error::other("the read was abandoned"));
                    }
                    if ready {
                        break;
                    }
                }
            }
            match self.file.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

/// The size of a regular file (`None` for a pipe, terminal or device).
fn regular_size(file: &File) -> Option<u64> {
    file.metadata()
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| m.len())
}

/// Open a rollout file (`-`: descriptor 0). A path is opened non-blocking, so
/// a named pipe no writer has opened yet does not block the open (nor hold
/// the interpreter): the wait happens in the reader's `poll`, where it can be
/// given up. Whether it is gzip is told by the pipeline's first read.
pub(crate) fn open_source(
    py: Python<'_>,
    path: &Path,
    limits: &FileLimits,
) -> Result<Input, Fault> {
    let opened = py.detach(|| {
        if path.as_os_str() == "-" {
            // Never made non-blocking: the open file is shared with others.
            dup_fd(0).map(File::from)
        } else {
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
        }
    });
    let file = opened.map_err(|e| io_fault(Code::IoRead, &e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let file_size = regular_size(&file);
    let waits = file_size.is_none();
    // A regular file's next two bytes, read without moving its offset (the
    // pipeline still reads them first); off the interpreter, as any read of
    // the file.
    let looks_gzip = file_size.is_some() && py.detach(|| next_bytes_are(&file, &jsonl::GZIP_MAGIC));
    let fd = file.as_raw_fd();
    let idle: Box<dyn Fn() -> bool + Send> = if waits {
        // Only called from the reader thread while it owns the open file.
        Box::new(move || !poll_fd(fd, libc::POLLIN, 0).unwrap_or(true))
    } else {
        Box::new(|| false)
    };
    Ok(Input {
        reader: Box::new(FdSource {
            file,
            stop: Arc::clone(&stop),
            waits,
        }),
        idle,
        stop,
        max_bytes: limits.max_bytes,
        max_line_bytes: limits.max_line_bytes,
        file_size,
        looks_gzip,
    })
}

/// Whether the next bytes of `file` (at its current offset: standard input
/// may have been read from already) are `prefix`, read with `pread` so that
/// the offset does not move; a read that fails or falls short says no.
fn next_bytes_are(file: &File, prefix: &[u8]) -> bool {
    use std::io::Seek;
    use std::os::unix::fs::FileExt;
    let Ok(at) = (&*file).stream_position() else {
        return false;
    };
    let mut head = vec![0u8; prefix.len()];
    let mut got = 0;
    while got < head.len() {
        match file.read_at(&mut head[got..], at + got as u64) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    head == prefix
}

fn check_signals() -> Result<(), Fault> {
    Python::attach(|py| py.check_signals()).map_err(Fault::from)
}

/// Settle a chunk's refused lines and the row cap: `Ok` with the chunk's good
/// rows, or the fault that ends the run. Without `bad` (stopping at the first
/// bad row), a refused line is that fault; with it (a run that keeps going),
/// each goes to `bad` in line order, and only the input's faults end the run:
/// a line over the limit, or the row past the cap (the bad rows before it
/// noted first). `seen` counts the rows (good and bad: every non-blank line)
/// and `lines_before` the lines before this chunk.
pub(crate) fn settle<T>(
    result: &ChunkResult<T>,
    seen: usize,
    lines_before: u64,
    limits: FileLimits,
    mut bad: Option<&mut BadRows>,
) -> Result<usize, Fault> {
    let rows_here = result.row_lines.len();
    // Rows that reached the cap check: a too-long line is refused before it,
    // and a run that stops looked at nothing after its first fault.
    // (A too-long line is always a chunk's last fault.)
    let checked = match result.faults.last() {
        Some(LineFault::TooLong { rows_before, .. }) => *rows_before,
        Some(fault) if bad.is_none() => fault.local_index() + 1,
        _ => rows_here,
    };
    let over = limits.max_rows.saturating_sub(seen);
    let mut good = rows_here;
    for fault in &result.faults {
        if checked > over && fault.local_index() >= over {
            break; // at or past the row over the cap, refused below
        }
        match (&mut bad, fault) {
            (
                Some(bad),
                LineFault::Row { .. } | LineFault::Syntax { .. } | LineFault::Utf8 { .. },
            ) => {
                bad.note(|| line_fault(fault, seen, lines_before));
                good -= 1;
            }
            _ => return Err(line_fault(fault, seen, lines_before)),
        }
    }
    if checked > over {
        let line = result.row_lines.get(over).copied().unwrap_or(0);
        return Err(Fault::at_line(
            Code::FileTooManyRows,
            None,
            lines_before + line + 1,
            None,
        ));
    }
    Ok(good)
}

fn line_fault(fault: &LineFault, seen: usize, lines_before: u64) -> Fault {
    let at = |line: &u64| lines_before + line + 1;
    match fault {
        LineFault::TooLong { line, .. } => Fault::at_line(Code::LineTooLong, None, at(line), None),
        LineFault::Utf8 { line, byte, .. } => {
            Fault::at_line(Code::Utf8, Some(byte.to_string()), at(line), None)
        }
        LineFault::Syntax {
            reason,
            line,
            column,
            ..
        } => Fault::at_line(
            Code::JsonSyntax,
            Some(reason.as_str().to_string()),
            at(line),
            Some(*column),
        ),
        LineFault::Row {
            rule,
            local_index,
            line,
        } => Fault::Row {
            rule: Rule {
                code: rule.code,
                rev_path: rule.rev_path.iter().map(clone_seg).collect(),
                fact: rule.fact.clone(),
            },
            index: seen + local_index,
            line: Some(at(line)),
        },
    }
}

fn clone_seg(seg: &Seg) -> Seg {
    match seg {
        Seg::Index(i) => Seg::Index(*i),
        Seg::Key(k) => Seg::Key(k.clone()),
        // JSON rows never carry Python keys; keep the shape total anyway.
        Seg::PyKey(_) => Seg::Key(String::new()),
    }
}

pub(crate) fn read_fault(fault: ReadFault, lines_before: u64) -> Fault {
    match fault {
        ReadFault::Gzip => Fault::input(Code::Gzip, None),
        ReadFault::Io(err) => io_fault(Code::IoRead, &err),
        ReadFault::LineTooLong => Fault::at_line(Code::LineTooLong, None, lines_before + 1, None),
        ReadFault::TooLarge => Fault::at_line(Code::FileTooLarge, None, lines_before + 1, None),
    }
}

// ---- rows as Python objects ----------------------------------------------------------------

fn int_to_py<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let digits = if text == "-0" { "0" } else { text };
    if let Ok(small) = digits.parse::<i64>() {
        return Ok(small.into_pyobject(py)?.into_any());
    }
    let c_text =
        CString::new(digits).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    // SAFETY: attached; PyLong_FromString reads the NUL-terminated digits and
    // returns a new reference or NULL with an exception set.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyLong_FromString(c_text.as_ptr(), std::ptr::null_mut(), 10),
        )
    }
}

fn to_py<'py>(py: Python<'py>, value: &J<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        J::Null => py.None().into_bound(py),
        J::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        J::Num(text, false) => int_to_py(py, text)?,
        J::Num(text, true) => PyFloat::new(py, text.parse().unwrap_or(f64::NAN)).into_any(),
        J::Str(text) => PyString::new(py, text).into_any(),
        J::Arr(items) => {
            let out: Vec<Bound<'py, PyAny>> = items
                .iter()
                .map(|v| to_py(py, v))
                .collect::<PyResult<_>>()?;
            PyList::new(py, out)?.into_any()
        }
        J::Obj(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(key_to_py(py, key), to_py(py, item)?)?;
            }
            if !members
                .iter()
                .any(|(_, v)| matches!(v, J::Arr(_) | J::Obj(_)))
            {
                crate::rows::untrack_atomic_dict(&dict);
            }
            dict.into_any()
        }
    })
}

/// Chat messages repeat a few keys; share one interned string for each.
fn key_to_py<'py>(py: Python<'py>, key: &str) -> Bound<'py, PyString> {
    match key {
        "role" => pyo3::intern!(py, "role").clone(),
        "content" => pyo3::intern!(py, "content").clone(),
        "type" => pyo3::intern!(py, "type").clone(),
        "text" => pyo3::intern!(py, "text").clone(),
        other => PyString::new(py, other),
    }
}

fn row_to_py<'py>(py: Python<'py>, row: &Row<'_>) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item(pyo3::intern!(py, "prompt"), to_py(py, &row.prompt)?)?;
    if let Some(answer) = &row.answer {
        dict.set_item(pyo3::intern!(py, "answer"), PyString::new(py, answer))?;
    }
    Ok(dict.into_any())
}

/// Read a rollout file into a tuple of normalised rows (Python dicts).
pub fn read_rows<'py>(
    py: Python<'py>,
    path: &Path,
    limits: FileLimits,
) -> Result<Bound<'py, PyTuple>, Fault> {
    let source = open_source(py, path, &limits)?;
    let lines = limits.lines();
    let mut rows: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut stats = FileStats::default();
    let work = |data: &[u8]| {
        jsonl::process_chunk(
            data,
            lines,
            Vec::new(),
            |_: &mut Vec<Row<'static>>, _: &str, _| None,
            |out: &mut Vec<Row<'static>>, row| out.push(row.into_owned()),
        )
    };
    let released = |step: &mut (dyn FnMut() + Send)| py.detach(step);
    let tick = || py.check_signals().map_err(Fault::from);
    // Freeing the parsed rows is left to a thread of its own, off the path
    // of the thread that builds the Python objects.
    let (drop_tx, drop_rx) = std::sync::mpsc::channel::<Vec<Row<'static>>>();
    let dropper = std::thread::spawn(move || drop_rx.into_iter().for_each(drop));
    let outcome = jsonl::run(
        source,
        workers(),
        work,
        released,
        tick,
        |event| -> Result<bool, Fault> {
            let mut result = match event {
                Event::Fail(fault) => return Err(read_fault(fault, stats.lines)),
                Event::Chunk(result) => result,
            };
            py.check_signals()?;
            let accepted = settle(&result, stats.rows, stats.lines, limits, None)?;
            {
                // Paused while a chunk's rows are built, not while waiting:
                // other Python threads run then, with the collector as it was.
                let _pause = GcPause::new(py);
                for row in &result.output {
                    rows.push(row_to_py(py, row)?);
                }
            }
            let _ = drop_tx.send(std::mem::take(&mut result.output));
            stats.add(accepted, &result);
            Ok(true)
        },
    );
    drop(drop_tx);
    py.detach(|| dropper.join().ok());
    outcome?;
    if rows.is_empty() {
        return Err(Fault::input(Code::FileNoRows, None));
    }
    let _pause = GcPause::new(py);
    Ok(PyTuple::new(py, rows)?)
}

// ---- file to file ---------------------------------------------------------------------------

/// Where the output goes, as `agent_rollout._files.destination` decided.
pub enum DestKind {
    /// A regular file, or a new one: written aside, renamed over it at the end.
    File,
    /// A device, named pipe or socket: opened and written in place.
    Stream,
    /// One of this process's descriptors (`-`, `/dev/stdout`): written in place.
    Fd(RawFd),
}

/// The most bytes of a destination's name that its temporary file's name keeps
/// (`temp_stem`; `agent_rollout._files.TEMP_NAME_KEEP`, the twin's, is the same).
/// The rest of that name (a dot in front; the process id, the attempt and
/// `.tmp` behind) then fits in the 255 bytes a file name may have (`NAME_MAX`).
pub(crate) const TEMP_NAME_KEEP: usize = 200;

/// The part of the file name `name` its temporary file's name keeps: all of it
/// up to `TEMP_NAME_KEEP` bytes, else its first `TEMP_NAME_KEEP` bytes, less
/// the start of a UTF-8 character cut in two (at most 3 bytes). The twin's
/// `temp_stem` follows the same rule.
fn temp_stem(name: &[u8]) -> &[u8] {
    if name.len() <= TEMP_NAME_KEEP {
        return name;
    }
    let mut cut = TEMP_NAME_KEEP;
    // name[cut] continues a character begun before the cut.
    while cut > TEMP_NAME_KEEP - 3 && name[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    &name[..cut]
}

/// The output: a temporary file beside the destination, renamed over it only
/// when everything succeeded; or a stream written in place (no undo).
enum Sink {
    File {
        temp: PathBuf,
        dest: PathBuf,
        out: BufWriter<File>,
    },
    InPlace(File),
}

impl Sink {
    fn create(py: Python<'_>, dest: &Path, kind: DestKind) -> Result<Sink, Fault> {
        match kind {
            DestKind::Fd(fd) => dup_fd(fd)
                .map(|owned| Sink::InPlace(File::from(owned)))
                .map_err(|e| io_fault(Code::IoWrite, &e)),
            DestKind::Stream => open_in_place(py, dest).map(Sink::InPlace),
            DestKind::File => Sink::aside(dest),
        }
    }

    fn aside(dest: &Path) -> Result<Sink, Fault> {
        // `dest` is the real target (symlinks were followed by the caller);
        // keep the mode of a file that is replaced.
        let dest = dest.to_path_buf();
        let keep = fs::metadata(&dest).ok().map(|m| m.permissions());
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A file name is bytes (not always UTF-8): the temporary's is made of them.
        let stem = temp_stem(dest.file_name().map_or(&[][..], OsStr::as_bytes));
        for attempt in 0..100u32 {
            let mut name = Vec::with_capacity(stem.len() + 24);
            name.push(b'.');
            name.extend_from_slice(stem);
            name.extend_from_slice(format!(".{}.{attempt}.tmp", std::process::id()).as_bytes());
            let temp = dir.join(OsString::from_vec(name));
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => {
                    if let Some(permissions) = keep.clone() {
                        if let Err(e) = file.set_permissions(permissions) {
                            drop(file);
                            let _ = fs::remove_file(&temp);
                            return Err(io_fault(Code::IoWrite, &e));
                        }
                    }
                    return Ok(Sink::File {
                        temp,
                        dest,
                        // Small: a chunk's output (most of them longer) goes
                        // straight to the file, not through a copy here.
                        out: BufWriter::with_capacity(64 << 10, file),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_fault(Code::IoWrite, &e)),
            }
        }
        Err(Fault::input(
            Code::IoWrite,
            Some("no free temporary file name".into()),
        ))
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        match self {
            Sink::File { out, .. } => out
                .write_all(bytes)
                .map_err(|e| io_fault(Code::IoWrite, &e)),
            Sink::InPlace(file) => write_in_place(file, bytes),
        }
    }

    fn finish(self) -> Result<(), Fault> {
        match self {
            Sink::InPlace(file) => {
                drop(file);
                Ok(())
            }
            Sink::File { temp, dest, out } => {
                let done = out
                    .into_inner()
                    // The error itself, errno kept: Python names it as its own write would.
                    .map_err(io::IntoInnerError::into_error)
                    .and_then(|file| {
                        drop(file);
                        fs::rename(&temp, &dest)
                    });
                if let Err(e) = done {
                    let _ = fs::remove_file(&temp);
                    return Err(io_fault(Code::IoWrite, &e));
                }
                Ok(())
            }
        }
    }

    fn abandon(self) {
        if let Sink::File { temp, out, .. } = self {
            // Dropping flushes and ignores the error (a full disk fails again).
            drop(out);
            let _ = fs::remove_file(Path::new(&temp));
        }
    }
}

/// Open a device or named pipe for writing in place: no O_CREAT, no O_TRUNC.
/// A named pipe nobody reads yet is waited for without holding the
/// interpreter, looking for Ctrl-C (or SIGTERM) every `TICK`.
fn open_in_place(py: Python<'_>, dest: &Path) -> Result<File, Fault> {
    loop {
        let opened = py.detach(|| {
            fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(dest)
        });
        match opened {
            Ok(file) => {
                // Writes block again from here (a slow reader is waited for).
                let fd = file.as_raw_fd();
                // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL only
                // read and set its status flags.
                let cleared = unsafe {
                    let flags = libc::fcntl(fd, libc::F_GETFL);
                    flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
                };
                if !cleared {
                    return Err(io_fault(Code::IoWrite, &io::Error::last_os_error()));
                }
                return Ok(file);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && is_fifo(dest) => {
                // A named pipe with no reader yet (a socket gives ENXIO too: refused below).
                py.detach(|| std::thread::sleep(jsonl::TICK));
                py.check_signals()?;
            }
            Err(e) => return Err(io_fault(Code::IoWrite, &e)),
        }
    }
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// Write all of `bytes` to a stream. A write a signal cuts short (a slow
/// reader and Ctrl-C) looks at Python's signal handlers before going on.
fn write_in_place(file: &mut File, mut bytes: &[u8]) -> Result<(), Fault> {
    while !bytes.is_empty() {
        match file.write(bytes) {
            Ok(0) => {
                return Err(io_fault(
                    Code::IoWrite,
                    &io::Error::from(io::ErrorKind::WriteZero),
                ))
            }
            Ok(n) => {
                bytes = &bytes[n..];
                if !bytes.is_empty() {
                    check_signals()?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => check_signals()?,
            Err(e) => return Err(io_fault(Code::IoWrite, &e)),
        }
    }
    Ok(())
}

/// Output buffers of chunks written out, for the next chunks of this call and
/// of later ones (each about a chunk's size).
static SPARE_OUTPUT: Spare<String> = Spare::new(8);

fn spare_output() -> String {
    SPARE_OUTPUT.take().unwrap_or_default()
}

fn give_back_output(mut output: String) {
    // A buffer grown past two chunks (long lines) is not kept.
    if output.capacity() <= jsonl::CHUNK_BYTES * 2 {
        output.clear();
        SPARE_OUTPUT.keep(output);
    }
}

/// What a file-to-file run does at a bad row (a refused line: bad UTF-8, bad
/// JSON, a row rule); the twin's `on_bad`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnBad {
    /// The first one ends the run (its fault is raised).
    Stop,
    /// Every one is counted (the first `keep` kept), and nothing is written
    /// from the first chunk holding one on: the output is abandoned, and the
    /// stats say why (`bad_rows`).
    Report,
    /// Every one is counted and left out; the good rows are written.
    Skip,
}

/// A chunk's output: its canonical JSONL, and, where the output is gzip, that
/// text as one gzip member of its own (compressed by the thread that parsed
/// the chunk: members one after another are one gzip stream to every reader,
/// Python's `gzip` and `zcat` among them).
struct Written {
    text: String,
    gzip: Option<io::Result<Vec<u8>>>,
}

impl Written {
    fn new(text: String, gzip_level: Option<u32>) -> Self {
        let gzip = gzip_level
            .filter(|_| !text.is_empty())
            .map(|level| gzip_member(text.as_bytes(), level));
        Written { text, gzip }
    }
}

/// `data` as one gzip member, compressed at `level` (0-9).
fn gzip_member(data: &[u8], level: u32) -> io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::new(level.min(9)),
    );
    encoder.write_all(data)?;
    encoder.finish()
}

/// Normalise a rollout file into canonical JSONL at `dest` (gzip-compressed at
/// `gzip_level`, when given). With `OnBad::Report`
/// or `Skip` the run keeps going past bad rows (the first `keep` kept on the
/// stats); an output that would hold no rows, or that `Report` found a bad row
/// for, is abandoned, not written, and the stats come back all the same.
#[allow(clippy::too_many_arguments)]
pub fn normalise_file(
    py: Python<'_>,
    src: &Path,
    dest: &Path,
    dest_kind: DestKind,
    limits: FileLimits,
    progress: Option<Py<PyAny>>,
    on_bad: OnBad,
    keep: usize,
    gzip_level: Option<u32>,
) -> PyResult<FileStats> {
    let source = open_source(py, src, &limits).map_err(|fault| fault.into_pyerr(py))?;
    let mut lines = limits.lines();
    lines.keep_going = on_bad != OnBad::Stop;
    let mut sink = Sink::create(py, dest, dest_kind).map_err(|fault| fault.into_pyerr(py))?;
    let mut bad = BadRows::new(keep);
    let mut stats = FileStats::default();
    let outcome = py.detach(|| {
        let work = |data: &[u8]| {
            let mut messages = Vec::new();
            let mut output = spare_output();
            output.reserve(data.len());
            jsonl::process_chunk(
                data,
                lines,
                output,
                |out: &mut String, text, ascii| {
                    jsonl::write_verbatim_row(text, lines, ascii, &mut messages, out)
                },
                |out: &mut String, row| jsonl::write_row(&row, out),
            )
            .map(|text| Written::new(text, gzip_level))
        };
        // Already without the interpreter.
        let released = |step: &mut (dyn FnMut() + Send)| step();
        let tick = check_signals;
        let sink_ref = &mut sink;
        let (stats, bad) = (&mut stats, &mut bad);
        let keeps_going = on_bad != OnBad::Stop;
        let workers = workers_writing_jsonl(&source);
        jsonl::run(
            source,
            workers,
            work,
            released,
            tick,
            |event| -> Result<bool, Fault> {
                let result = match event {
                    Event::Fail(fault) => return Err(read_fault(fault, stats.lines)),
                    Event::Chunk(result) => result,
                };
                Python::attach(|py| py.check_signals())?;
                let seen = stats.rows + bad.count;
                let accepted = settle(
                    &result,
                    seen,
                    stats.lines,
                    limits,
                    keeps_going.then_some(&mut *bad),
                )?;
                // `Report` writes nothing from the first chunk with a bad row on.
                if on_bad != OnBad::Report || bad.count == 0 {
                    let bytes = match &result.output.gzip {
                        None => result.output.text.as_bytes(),
                        Some(Ok(member)) => member.as_slice(),
                        Some(Err(err)) => return Err(io_fault(Code::IoWrite, err)),
                    };
                    sink_ref.write(bytes)?;
                    stats.bytes_out += bytes.len() as u64;
                }
                stats.add(accepted, &result);
                give_back_output(result.output.text);
                if let Some(report) = &progress {
                    Python::attach(|py| {
                        report.call1(py, (stats.rows, stats.lines, stats.bytes_in))
                    })?;
                }
                Ok(true)
            },
        )
    });
    match outcome {
        Ok(()) if stats.rows == 0 && bad.count == 0 => {
            sink.abandon();
            Err(Fault::input(Code::FileNoRows, None).into_pyerr(py))
        }
        Ok(()) if stats.rows == 0 || (on_bad == OnBad::Report && bad.count > 0) => {
            sink.abandon();
            bad.into_stats(py, &mut stats);
            Ok(stats)
        }
        Ok(()) => {
            sink.finish().map_err(|fault| fault.into_pyerr(py))?;
            bad.into_stats(py, &mut stats);
            Ok(stats)
        }
        Err(fault) => {
            sink.abandon();
            Err(bad.ended_by(py, fault))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{next_bytes_are, plain_size, temp_stem, workers_for, TEMP_NAME_KEEP};
    use crate::jsonl::{Input, GZIP_MAGIC, HELPED_FILE_BYTES};
    use std::io::{Cursor, Read, Seek, Write};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn a_small_regular_file_gets_one_worker_fewer_only_where_cpus_are_short() {
        let small = Some(HELPED_FILE_BYTES);
        let big = Some(HELPED_FILE_BYTES + 1);
        // (CPUs, bytes of JSONL) -> workers: the calling thread counts as a
        // parsing thread of a small regular file, where a worker per CPU
        // beside it would be one thread too many.
        let cases = [
            (1, small, 1),
            (1, None, 1),
            (2, small, 1),
            (2, Some(0), 1),
            (2, big, 2),
            (2, None, 2),
            (3, small, 2),
            (3, big, 3),
            (4, small, 3),
            (4, big, 4),
            (5, small, 4),
            (16, small, 4),
            (16, None, 4),
        ];
        for (cpus, size, want) in cases {
            assert_eq!(workers_for(cpus, size), want, "{cpus} CPUs, {size:?} bytes");
        }
    }

    #[test]
    fn a_temporary_name_keeps_at_most_temp_name_keep_bytes_of_the_destinations() {
        let keep = TEMP_NAME_KEEP;
        let x = |n: usize| vec![b'x'; n];
        let with = |mut head: Vec<u8>, tail: &[u8]| {
            head.extend_from_slice(tail);
            head
        };
        // (the destination's name, the bytes of it kept); the twin's test has the same.
        let cases: [(Vec<u8>, usize); 7] = [
            (b"rows.jsonl".to_vec(), 10),
            (x(keep), keep),
            (x(255), keep),
            // A character across the cut goes whole: two bytes, then four.
            (with(x(keep - 1), &"é".repeat(40).into_bytes()), keep - 1),
            (with(x(keep - 2), &"😀".repeat(20).into_bytes()), keep - 2),
            // Bytes that are not UTF-8: cut where they fall, at most 3 taken back.
            (vec![0x80; 255], keep - 3),
            (vec![0xe9; 255], keep),
        ];
        for (name, kept) in cases {
            assert_eq!(temp_stem(&name), &name[..kept], "{name:?}");
        }
    }

    #[test]
    fn the_helped_size_is_the_first_sixteen_chunks() {
        // 64 + 128 + 256 + 512 KiB, then twelve chunks of 1 MiB.
        assert_eq!(HELPED_FILE_BYTES, (960 << 10) + (12 << 20));
    }

    fn input(file_size: Option<u64>, looks_gzip: bool) -> Input {
        Input {
            reader: Box::new(Cursor::new(Vec::new())),
            idle: Box::new(|| false),
            stop: Arc::new(AtomicBool::new(false)),
            max_bytes: u64::MAX,
            max_line_bytes: 1 << 20,
            file_size,
            looks_gzip,
        }
    }

    #[test]
    fn a_gzip_files_size_is_not_taken_for_its_jsonl() {
        assert_eq!(plain_size(&input(Some(1 << 20), true)), None);
        assert_eq!(plain_size(&input(Some(1 << 20), false)), Some(1 << 20));
        assert_eq!(plain_size(&input(None, false)), None);
    }

    #[test]
    fn the_next_bytes_are_read_where_the_offset_is_and_it_stays() {
        let dir = std::env::temp_dir().join(format!("agent-rollout-head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        // (the file, bytes read before the look, whether gzip's magic is next)
        let cases: [(&[u8], usize, bool); 6] = [
            (&[0x1f, 0x8b, 8, 0], 0, true),
            (&[0x1f, 0x8b], 0, true),
            (&[0x1f], 0, false),
            (b"{\"prompt\": \"x\"}\n", 0, false),
            (&[b'x', 0x1f, 0x8b, 8], 1, true),
            (&[0x1f, 0x8b, 8, 0], 1, false),
        ];
        for (i, (bytes, skip, want)) in cases.into_iter().enumerate() {
            let path = dir.join(format!("{i}"));
            std::fs::File::create(&path)
                .and_then(|mut f| f.write_all(bytes))
                .expect("a test file");
            let mut file = std::fs::File::open(&path).expect("open");
            file.read_exact(&mut vec![0u8; skip]).expect("skip");
            assert_eq!(
                next_bytes_are(&file, &GZIP_MAGIC),
                want,
                "{bytes:?} after {skip}"
            );
            assert_eq!(file.stream_position().expect("position"), skip as u64);
            let mut rest = Vec::new();
            file.read_to_end(&mut rest).expect("read");
            assert_eq!(rest, bytes[skip..]);
        }
        std::fs::remove_dir_all(&dir).expect("cleaned up");
    }
}
