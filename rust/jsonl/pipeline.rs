//! The pipeline: chunks cut (by whichever thread needs one, for a regular
//! file; by a reader thread of its own, for any other input), parsed on
//! worker threads (and, at the start and end of a file, on the calling
//! thread), and their results handed to the caller in input order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::chunker::{give_back, Chunker, Work, CHUNK_BYTES, FIRST_CHUNK_BYTES, IN_FLIGHT};
use super::lines::ChunkResult;
use super::{Input, ReadFault};

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
/// JSONL on 2 CPUs (benches/bench_jsonl.py, paired builds), one
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
/// thread (paired runs of benches/bench_jsonl.py against a build with one).
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
mod tests;
