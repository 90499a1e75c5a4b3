"""Parquet output: ``parquet_writer`` (a ``ParquetFileWriter``, owning its file), the
row-group writer ``ParquetSink``, ``write_parquet`` (a JSONL file) and
``write_rows_parquet`` (rows already normalised)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections import deque
from collections.abc import Sequence
from typing import Any, Optional

import pyarrow as pa

from agent_rollout._engine.arrow import file_batches, row_batches
from agent_rollout._errors import RolloutFileError, bad_rows_error
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._files import (
    Destination,
    Output,
    naming,
    raise_if_terminated,
    release_reader,
    remove_temp,
    source_name,
)
from agent_rollout._jsonl import BadRows, FileCounts, FileLimits, OnBad, Progress
from agent_rollout._limits import BAD_ROWS_KEPT
from agent_rollout.arrow.build import conform_batch, conform_table
from agent_rollout.arrow.schema import check_prompt_kind, merge_schemas

ROW_GROUP_ROWS = 16384
"""Rows per Parquet row group. Groups are written on a thread of their own while
the reader parses on: a small group starts that thread early and leaves little
to write once the parse is done (65,536-row groups left a third of a 100k-row
file to write after it)."""

ROW_GROUP_BYTES = 1 << 25
"""A row group is also written once its Arrow data passes this many bytes, so
long rows (multi-turn rollouts with tool output) make smaller groups."""

IN_FLIGHT_ROWS = 65536
"""The most rows of finished row groups handed to the writer thread and not yet
written (the one being written included): past them, the reader waits for it."""

IN_FLIGHT_BYTES = 1 << 27
"""The most Arrow bytes of finished row groups handed to the writer thread and
not yet written: memory does not grow with the file."""


class ParquetFileWriter:
    """A ``pyarrow.parquet.ParquetWriter`` on a file we open and close ourselves.

    pyarrow takes a str path as UTF-8, which a file name need not be: the file
    is opened by its bytes (``pyarrow.OSFile``) and handed over as a stream,
    and pyarrow leaves a stream it was given open. ``close`` closes the
    writer, then the file, even when the writer's close failed (the footer's
    write on a full disk): no descriptor is left to the garbage collector.
    """

    __slots__ = ("file", "writer")

    def __init__(self, path: str, schema: pa.Schema, **options: Any) -> None:
        import pyarrow.parquet as pq

        self.file = pa.OSFile(os.fsencode(path), "wb")
        try:
            self.writer = pq.ParquetWriter(self.file, schema, **options)
        except BaseException:
            self.file.close()
            raise

    def write_table(self, table: pa.Table, row_group_size: Optional[int] = None) -> None:
        self.writer.write_table(table, row_group_size=row_group_size)

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            self.file.close()


def parquet_writer(path: str, schema: pa.Schema) -> ParquetFileWriter:
    """A zstd ``ParquetFileWriter`` for rollout tables.

    Dictionary encoding only for the messages' ``role`` (a handful of words);
    statistics only for ``answer``. pyarrow's defaults try a dictionary for
    every column and keep min/max of every string: on prompts, which are long
    and mostly distinct, both cost time (about half of ``write_table``'s) and
    the abandoned dictionaries made the file larger (0.51 MB against 0.28 MB
    for ``bench_jsonl.py``'s 100k rows).
    """
    prompt = schema.field("prompt").type
    messages = pa.types.is_list(prompt) and pa.types.is_struct(prompt.value_type)
    dictionary = ["prompt.list.element.role"] if messages else []
    return ParquetFileWriter(
        path,
        schema,
        compression="zstd",
        use_dictionary=dictionary,
        write_statistics=["answer"],
    )


class ParquetSink:
    """Record batches into one zstd Parquet file of one schema, row group by row group.

    The file's schema is the join of the batches' (``merge_schemas``): a batch
    that widens it (a message key not seen before, values of a new type) makes
    the sink rewrite the row groups already written, one at a time, under the
    wider schema. A regular file is written to the ``Output``'s temporary file;
    a device, pipe or descriptor gets the finished file, spooled to a private
    temporary file first (written Parquet cannot be widened in a stream). Such a
    destination is opened only by ``finish``: when anything fails before,
    ``abandon`` lets a reader already waiting on a named pipe go (it gets the end
    of its input) instead of leaving it waiting for ever.

    A full row group is encoded, compressed and written on a thread of its own
    (pyarrow lets go of the GIL there) while the Rust reader parses the next
    lines. Finished groups queue for that thread, in order, up to
    ``IN_FLIGHT_ROWS`` rows and ``IN_FLIGHT_BYTES`` bytes; past that the next
    group waits for room, so memory holds those plus the group being filled.
    A write's error is raised at a later group, at ``finish`` or when widening
    (the groups queued after it are not written), and ``abandon`` returns it
    when something after it failed first (the write came first: it is the
    error reported). Where no thread can start (interpreter shutdown), groups
    are written in line.
    """

    def __init__(self, where: Destination, dest: str) -> None:
        self.where = where
        self.dest = dest
        self.output: Optional[Output] = None
        self.path: Optional[str] = None  # the file pyarrow writes
        self.spool: Optional[Output] = None  # a private temporary file, never committed
        self.old: Optional[str] = None  # the file _widen is copying from
        self.writer: Any = None
        self.schema: Optional[pa.Schema] = None
        self.pending: list[pa.RecordBatch] = []
        self.sizes = {"rows": 0, "bytes": 0}
        self.thread: Any = None  # a ThreadPoolExecutor of one thread, once a group is written
        # The groups handed to it and not yet taken back, oldest first: (Future, rows, bytes).
        self.writing: deque[tuple[Any, int, int]] = deque()
        self.broken = False  # a group's write failed: the groups after it are not written
        self.stopping = False  # interrupted: the groups not yet begun are not written
        self.in_line = False  # no thread takes groups: each is written on the caller's

    def add(self, batch: pa.RecordBatch) -> None:
        raise_if_terminated()  # a SIGTERM whose exception code on the way dropped
        if self.schema is None:
            self._open(merge_schemas(batch.schema))  # NUL in a key: JSON text (merge_schemas)
        elif not batch.schema.equals(self.schema):
            wider = merge_schemas(self.schema, batch.schema)
            if not wider.equals(self.schema):
                self._widen(wider)
        assert self.schema is not None
        if not batch.schema.equals(self.schema):
            batch = conform_batch(batch, self.schema)
        self.pending.append(batch)
        self.sizes["rows"] += batch.num_rows
        self.sizes["bytes"] += batch.nbytes
        if self.sizes["rows"] >= ROW_GROUP_ROWS or self.sizes["bytes"] >= ROW_GROUP_BYTES:
            self._write_pending()

    def _open(self, schema: pa.Schema) -> None:
        # Made on the first rows, so a bad source is reported before the
        # destination is touched (as for JSONL output).
        # Each Output is held before open() makes its file: abandon() finds
        # whatever an interrupt leaves half made.
        if self.where.kind == "file":
            self.output = Output(self.where, self.dest)
            self.output.open()
            self.path = self.output.temp
        else:
            spool = os.path.join(tempfile.gettempdir(), "agent-rollout.parquet")
            self.spool = Output(Destination("file", spool), os.path.dirname(spool), private=True)
            self.spool.open()
            self.path = self.spool.temp
        self.schema = schema
        assert self.path is not None
        with naming(self.dest):
            self.writer = parquet_writer(self.path, schema)

    def _take_pending(self) -> Optional[pa.Table]:
        if not self.pending:
            return None
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        self.pending.clear()
        self.sizes["rows"] = self.sizes["bytes"] = 0
        return table

    def _write_pending(self) -> None:
        table = self._take_pending()
        if table is not None:
            rows, size = table.num_rows, table.nbytes
            self._wait(rows, size)
            if not self.in_line:
                try:
                    if self.thread is None:
                        # Imported here: its import registers an atexit hook, refused at
                        # shutdown.
                        from concurrent.futures import ThreadPoolExecutor

                        self.thread = ThreadPoolExecutor(
                            1, thread_name_prefix="agent-rollout-parquet"
                        )
                    future = self.thread.submit(self._write_group, self.writer, table)
                except RuntimeError:
                    # The interpreter is shutting down (no pool takes new work), or the
                    # thread could not start (its work item stays queued, never to run:
                    # nothing is submitted again, and only a submit starts a thread).
                    self.in_line = True
                else:
                    self.writing.append((future, rows, size))
                    return
            self._wait(every=True)  # the groups queued before it are written first
            self._write_group(self.writer, table)

    def _write_group(self, writer: Any, table: pa.Table) -> None:
        if self.broken or self.stopping:
            return  # an earlier group's error is the one reported; or interrupted
        try:
            with naming(self.dest):
                writer.write_table(table, row_group_size=None)
        except BaseException:
            self.broken = True
            raise

    @property
    def in_flight(self) -> dict[str, int]:
        """The rows and Arrow bytes of the groups handed to the writer thread."""
        return {
            "rows": sum(rows for _, rows, _ in self.writing),
            "bytes": sum(size for _, _, size in self.writing),
        }

    def _wait(self, rows: int = 0, size: int = 0, *, every: bool = False) -> None:
        """Take the groups whose write ended off the queue, oldest first, and wait for
        more until ``rows`` more rows and ``size`` more bytes fit beside the rest
        (until none is left, with ``every``); raise the error of a write that ended."""
        while self.writing:
            future = self.writing[0][0]
            in_flight = self.in_flight
            room = (
                in_flight["rows"] + rows <= IN_FLIGHT_ROWS
                and in_flight["bytes"] + size <= IN_FLIGHT_BYTES
            )
            if room and not every and not future.done():
                return
            self._take_oldest()

    def _take_oldest(self) -> None:
        """Wait for the oldest group in flight and take it off the queue; raise its
        write's error (or a signal's exception that ended the wait: it stays queued)."""
        future = self.writing[0][0]
        try:
            future.result()
        finally:
            if future.done():
                self.writing.popleft()

    def _stop_thread(self) -> Optional[BaseException]:
        """Wait for the groups in flight and end the thread; return the first error a
        write raised. A signal's exception while waiting is raised."""
        failed = None
        while self.writing:
            future = self.writing[0][0]
            try:
                self._take_oldest()
            except BaseException as exc:
                if not future.done() or future.exception() is not exc:
                    raise  # Ctrl-C, SIGTERM while waiting: not the write's error
                if failed is None:
                    failed = exc
        if self.thread is not None:
            self.thread.shutdown(wait=True)
            self.thread = None
        return failed

    def _widen(self, wider: pa.Schema) -> None:
        import pyarrow.parquet as pq

        assert self.path is not None and self.schema is not None
        self._wait(every=True)
        self.pending = [conform_batch(batch, wider) for batch in self.pending]
        old = self.old = self.path + ".old.tmp"  # abandon() removes it too
        with naming(self.dest):
            self.writer.close()
            self.writer = None
            try:  # the rename inside: an interrupt right after it still removes ``old``
                os.replace(self.path, old)
                self.writer = parquet_writer(self.path, wider)
                os.chmod(self.path, stat.S_IMODE(os.stat(old).st_mode))
                written = pq.ParquetFile(pa.OSFile(os.fsencode(old)))  # bytes: any name
                try:
                    for group in range(written.num_row_groups):
                        table = conform_table(written.read_row_group(group), wider)
                        self.writer.write_table(table, row_group_size=None)
                finally:
                    written.close(force=True)  # and the file it was given
            finally:
                remove_temp(old)  # if the rename failed, the error is on its way
                self.old = None
        self.schema = wider

    def finish(self) -> int:
        """Write what is left, close the file and put it in place; return its size."""
        failed = self._stop_thread()
        if failed is not None:
            raise failed
        # The last group is written here: there is no more parsing for a thread
        # to overlap with (and a file of one group starts no thread at all).
        table = self._take_pending()
        if table is not None:
            self._write_group(self.writer, table)
        assert self.path is not None
        with naming(self.dest):
            self.writer.close()
            size = os.path.getsize(self.path)
        if self.output is not None:
            self.output.commit()
            return size
        output = self.output = Output(self.where, self.dest)
        output.open()
        with open(self.path, "rb") as spooled:
            # The copy's loop runs in a function of its own: see "Cleanup around
            # loops" in docs/architecture.md.
            shutil.copyfileobj(spooled, output, 1 << 20)
        output.commit()
        self._remove_spool()
        return size

    def _remove_spool(self) -> None:
        if self.spool is not None:
            self.spool.abandon()
            self.spool = None

    def abandon(self, *, interrupted: bool = False) -> Optional[BaseException]:
        """Stop, leaving nothing behind; return the error of a group write handed over
        before whatever made us stop (it came first: the caller reports it). The
        groups queued are written (and dropped) first, so which error is reported
        does not hang on the writer's pace; when ``interrupted`` (Ctrl-C, SIGTERM)
        only the group being written is waited for."""
        failed = None
        try:
            self.stopping = interrupted
            failed = self._stop_thread()
            if self.writer is not None:
                try:
                    self.writer.close()
                except Exception:
                    pass  # already failing: the first error is the one reported
        finally:
            # Even when a second signal interrupts the above.
            if self.output is not None:
                self.output.abandon()
            else:
                release_reader(self.where)  # never opened: a pipe's reader may be waiting
            if self.old is not None:
                remove_temp(self.old)  # an interrupt in _widen after its rename
            self._remove_spool()
        return failed


def write_parquet(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    progress: Optional[Progress],
    prompt_kind: str = "auto",
    on_bad: OnBad = "stop",
) -> FileCounts:
    """Normalise the rollout JSONL file ``src`` into the zstd Parquet file ``dest``.

    Row groups of about ``ROW_GROUP_ROWS`` rows are written as they fill, so
    memory does not grow with the file (``ParquetSink``: a batch that widens
    the schema rewrites the groups written so far). ``where`` is where
    ``dest`` really goes (``agent_rollout._files.destination``); the output is
    an ``agent_rollout._files.Output``, as for JSONL: a regular file is
    written beside itself and renamed into place only when every row passed,
    so on any error (Ctrl-C, SIGTERM and SIGHUP included) it is left as it
    was and no temporary file remains; a device, named pipe or one of our
    descriptors gets the finished file.

    ``on_bad`` as for JSONL (``_engine.jsonl.write_jsonl``): ``stop`` raises the
    first bad row; ``report`` and ``skip`` go on past them (a row whose prompt
    is not of the table's kind is one too), and raise ``RolloutBadRowsError``
    carrying them (the first ``BAD_ROWS_KEPT``, and their count) when
    ``report`` found any, when every row was bad, or when a fault of the input
    as a whole ended the read after them; else ``skip`` writes the good rows,
    its counts saying what it left out. Nothing is written when it raises.
    """
    prompt_kind = check_prompt_kind(prompt_kind)
    shown = source_name(src)
    bad = None if on_bad == "stop" else BadRows(BAD_ROWS_KEPT)
    sink = ParquetSink(where, dest)
    try:
        try:
            # The twin's batches are row groups already (the Rust engine's are chunks).
            report = on_bad == "report"
            counts = file_batches(src, limits, prompt_kind, sink.add, progress, None,
                                  ROW_GROUP_ROWS, ROW_GROUP_BYTES, bad, report)  # fmt: skip
        except RolloutFileError as exc:
            if bad is None or not bad.count:
                raise
            raise bad_rows_error(shown, tuple(bad.errors), bad.count, None, exc) from None
        if bad is not None and bad.count and (on_bad == "report" or counts.rows == 0):
            raise bad_rows_error(shown, tuple(bad.errors), bad.count, counts.rows + bad.count)
        if sink.schema is None:  # pragma: no cover - file_batches gives a batch or raises
            raise RolloutValueError(f"{src}: no rows")
        bytes_out = sink.finish()
    except BaseException as exc:
        earlier = sink.abandon(interrupted=not isinstance(exc, Exception))
        if earlier is not None and isinstance(exc, Exception):
            # A row group failed to write before the rows that failed after it were read.
            raise earlier from None
        raise
    return FileCounts(
        counts.rows,
        counts.lines,
        counts.blank_lines,
        counts.dropped_keys,
        counts.bytes_in,
        bytes_out,
        0 if bad is None else bad.count,
        () if bad is None else tuple(bad.errors),
    )


def write_rows_parquet(
    rows: Sequence[dict], dest: str, where: Destination, prompt_kind: str = "auto"
) -> int:
    """Rows already normalised (what ``run`` writes) as the zstd Parquet file ``dest``;
    return its size. Through ``ParquetSink``, with ``write_parquet``'s guarantees."""
    prompt_kind = check_prompt_kind(prompt_kind)
    batches = row_batches(rows, "openenv", max(len(rows), 1), prompt_kind)
    sink = ParquetSink(where, dest)
    try:
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        _add_all(sink, batches)
        return sink.finish()
    except BaseException as exc:
        earlier = sink.abandon(interrupted=not isinstance(exc, Exception))
        if earlier is not None and isinstance(exc, Exception):
            raise earlier from None
        raise


def _add_all(sink: ParquetSink, batches: list[pa.RecordBatch]) -> None:
    for batch in batches:
        sink.add(batch)
