//! The reading half of the pipeline: the input cut into chunks of whole
//! lines, read straight into chunk buffers that are kept for later chunks
//! and calls; a regular file's last chunks shrink.

use std::io::{self, Read};
use std::sync::Mutex;

use super::gzip::{decompress_if_gzip, Decoded};
use super::ReadFault;

/// How much is read at a time, at most; a chunk is this much (the first ones
/// less, see `FIRST_CHUNK_BYTES`), cut after its last newline.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;
/// The first chunk's size (then doubled at each chunk, up to `CHUNK_BYTES`).
pub(super) const FIRST_CHUNK_BYTES: usize = 64 << 10;
/// Near a file's end, a chunk is at most this share of what is left.
const TAIL_SHARE: u64 = 4;
/// Chunks in flight (read, parsed or waiting to be consumed) at most.
pub(super) const IN_FLIGHT: usize = 8;

/// What the chunker hands the pipeline's threads, in input order.
pub(super) enum Work {
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

/// The reading half of the pipeline: cuts the input into chunks of whole
/// lines, in input order, one `step` at a time (on the reader thread, or on
/// whichever pipeline thread needs a chunk: see `Chunks`).
pub(super) struct Chunker {
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
    pub(super) done: bool,
}

impl Chunker {
    pub(super) fn new(
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
    pub(super) fn step(&mut self, idle: &dyn Fn() -> bool, send: &mut dyn FnMut(Work) -> bool) {
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
pub(super) fn give_back(buf: Vec<u8>) {
    if buf.len() == CHUNK_BYTES {
        CHUNKS.keep(buf);
    }
}
