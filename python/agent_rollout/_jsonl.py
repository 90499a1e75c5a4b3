"""JSONL files: the one line reader, the pure-Python twin of the row pipeline, the writer.

The twin of ``rust/jsonl/`` (docs/architecture.md maps its parts to the
files there). Every JSONL file the package reads goes through
``read_lines``: rollout files (both engines' twin, Arrow, Ray),
``run --prompts`` seed files, ART trajectory logs and NeMo Gym files. It
reads in blocks (gzip undone), and for every line checks, in this order, the
rules both engines share:

1. the line's length (``MAX_LINE_BYTES``), 2. blank lines are skipped,
3. the row cap (``max_rows``), then, for the caller, 4. UTF-8, 5. JSON syntax
(``decode``), 6. the row rules (``row_batches``).

Problems of the input as a whole (bad gzip, more than ``max_bytes`` bytes, a
read error) are raised after the whole lines before them, as the Rust
engine's chunker reports them. Every message comes from
``agent_rollout._errors`` with the file and line (and column) in front.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Optional

from agent_rollout import _json, _rows
from agent_rollout._errors import (
    RolloutFileError,
    RolloutRowError,
    bad_rows_error,
    file_error,
    row_error,
)
from agent_rollout._files import (
    Destination,
    Opened,
    Output,
    destination,
    open_input,
    replacing,
    signals_end_cleanly,
    source_name,
)
from agent_rollout._limits import BAD_ROWS_KEPT, MAX_LINE_BYTES, MAX_MESSAGE_DEPTH

Progress = Callable[[int, int, int], object]
"""Called as ``progress(rows, lines, bytes_in)`` now and then during a run."""

BATCH_BYTES = 1 << 20
"""Input is read about this much at a time; its rows are then built with the collector paused."""

_BLANK = b" \t\r"


@dataclass(frozen=True)
class FileLimits:
    """The caps of one read (``max_rows`` non-blank lines, ``max_bytes`` after gzip)."""

    max_rows: int
    max_bytes: int


@dataclass
class Tally:
    """What a read has seen so far."""

    rows: int = 0
    lines: int = 0
    blank_lines: int = 0
    dropped_keys: int = 0
    bytes_in: int = 0
    batch_lines: list[int] = field(default_factory=list)
    """The line of each row of the batch last yielded (the Arrow builder names it)."""
    batch_indices: list[int] = field(default_factory=list)
    """The index of each row of the batch last yielded: its place among the file's
    rows, bad ones included (the Arrow builder names it)."""


class BadRows:
    """The bad rows of a read that goes on past them (``row_batches(bad=...)``).

    A bad row is a line refused by UTF-8, JSON syntax or a row rule. Every one
    is counted (``count``); the first ``keep`` are kept as the errors a read
    that stops would raise (``RolloutFileError`` or ``RolloutRowError``, with
    file:line), in line order (``errors``); nothing more, so memory stays flat
    on a file of a million bad lines. Faults of the input as a whole (a line
    over ``MAX_LINE_BYTES``, the row cap, bad gzip, ``max_bytes``, an
    ``OSError``) still end the read. The twin of ``BadRows`` in ``rust/files.rs``.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.count = 0
        self.errors: list[ValueError] = []

    def add(self, error: ValueError) -> None:
        self.count += 1
        if len(self.errors) < self.keep:
            self.errors.append(error)


# ---- gzip --------------------------------------------------------------------------------

_GZIP_BLOCK = 1 << 17
"""Compressed bytes read from the file at a time."""
_GZIP_FIELD = 65535
"""The longest name or comment a gzip header may hold."""
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT, _FRESERVED = 0x02, 0x04, 0x08, 0x10, 0xE0


class _GzipMembers(io.RawIOBase):
    """A gzip stream undone, member after member, as the Rust engine reads it.

    Each member is checked as RFC 1952 asks: deflate method, the reserved flag
    bits zero, the header CRC when there is one, the data's CRC-32 and length
    (the data is handed over before its trailer is checked, so rows before the
    damage come first). Zero bytes between or after members are padding;
    anything else after a member, or a member cut short, is an error
    (``zlib.error`` or ``EOFError``). Python's ``gzip`` module skips the
    reserved bits and the header CRC; zlib, GNU gzip and the Rust engine refuse
    such a file, and so does this. The deflate data goes through zlib, as in the
    Rust engine (zlib-rs). Closing it closes the file it reads.
    """

    def __init__(self, raw: Any, head: bytes = b"") -> None:
        super().__init__()
        self._raw = raw
        self._input = head
        """Compressed bytes read but not yet used (``head``: taken from ``raw`` already)."""
        self._inflate: Any = None
        """The member being read (raw deflate), None between members."""
        self._ended = False
        """A member's data is over and its trailer not yet checked."""
        self._crc = 0
        self._size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        while out.nbytes:
            if self._inflate is None:
                if self._ended:
                    self._check_trailer()
                if not self._next_member():
                    return 0
            inflate = self._inflate
            data = inflate.decompress(self._input, out.nbytes)
            if inflate.eof:  # its trailer is checked once its data is handed over
                self._input, self._inflate, self._ended = inflate.unused_data, None, True
            else:
                self._input = inflate.unconsumed_tail
            if data:
                self._crc = zlib.crc32(data, self._crc)
                self._size += len(data)
                out[: len(data)] = data
                return len(data)
            if self._inflate is not None and not self._input:
                self._more()
        return 0

    def _next_member(self) -> bool:
        """Step over zero padding and read a member's header; False at the end."""
        while True:
            self._input = self._input.lstrip(b"\0")
            if self._input:
                break
            self._input = self._raw.read1(_GZIP_BLOCK)
            if not self._input:
                return False
        fixed = self._take(10)
        if fixed[:3] != b"\x1f\x8b\x08" or fixed[3] & _FRESERVED:
            raise zlib.error("not a gzip member, or one with unknown flags")
        flags, header = fixed[3], [fixed]
        if flags & _FEXTRA:
            length = self._take(2)
            header += [length, self._take(int.from_bytes(length, "little"))]
        for flag in (_FNAME, _FCOMMENT):
            if flags & flag:
                header.append(self._take_to_nul())
        if flags & _FHCRC:
            stored = int.from_bytes(self._take(2), "little")
            if stored != zlib.crc32(b"".join(header)) & 0xFFFF:
                raise zlib.error("gzip header CRC mismatch")
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        self._crc = self._size = 0
        return True

    def _check_trailer(self) -> None:
        trailer = self._take(8)
        crc, size = int.from_bytes(trailer[:4], "little"), int.from_bytes(trailer[4:], "little")
        if crc != self._crc or size != self._size & 0xFFFFFFFF:
            raise zlib.error("gzip member's CRC or length does not match its data")
        self._ended = False

    def _more(self) -> None:
        data = self._raw.read1(_GZIP_BLOCK)
        if not data:
            raise EOFError("the gzip stream ends inside a member")
        self._input += data

    def _take(self, count: int) -> bytes:
        while len(self._input) < count:
            self._more()
        taken, self._input = self._input[:count], self._input[count:]
        return taken

    def _take_to_nul(self) -> bytes:
        """A zero-terminated header field (a name, a comment), its zero included.

        At most ``_GZIP_FIELD`` bytes before the zero, as the Rust engine's
        decoder allows (Python's ``gzip`` has no limit)."""
        while (end := self._input.find(b"\0", 0, _GZIP_FIELD + 1)) < 0:
            if len(self._input) > _GZIP_FIELD:
                raise zlib.error("gzip header field too long")
            self._more()
        return self._take(end + 1)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class _Prefixed(io.RawIOBase):
    """Bytes already taken from a stream, then the rest of it; closing closes the stream."""

    def __init__(self, head: bytes, stream: Any) -> None:
        super().__init__()
        self._head = head
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        data, self._head = self._head[: out.nbytes], self._head[out.nbytes :]
        data = data or self._stream.read1(out.nbytes)
        out[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._stream.close()


def open_jsonl(path: str) -> Opened:
    """Open a JSONL file (``-``: standard input) for ``read_lines``: gzip's magic number
    in its first two bytes means a gzip stream, undone as ``_GzipMembers`` reads it."""
    opened = open_input(path)
    stream = opened.stream
    try:
        head, taken = stream.peek(2)[:2], b""  # peeked at: still in the stream
        if head == b"\x1f":  # a pipe gave one byte so far: wait for the second, as Rust does
            head = taken = stream.read(2)
        if head == b"\x1f\x8b":
            return opened._replace(
                stream=io.BufferedReader(_GzipMembers(stream, taken)), is_gzip=True
            )
        if taken:
            return opened._replace(stream=io.BufferedReader(_Prefixed(taken, stream)))
    except BaseException:
        stream.close()
        raise
    return opened


# ---- the one line reader ------------------------------------------------------------------


def _fill(opened: Opened, buf: bytearray, limits: FileLimits, tally: Tally) -> Optional[object]:
    """Read into ``buf`` until it holds a block of whole lines; None, or why reading stopped.

    Stops at about ``BATCH_BYTES`` once a newline is in, earlier when the
    input has nothing more ready (a pipe), at the end of the input (``"eof"``),
    past ``max_bytes`` (``"too_large"``: only the bytes within the limit are
    kept), on bad gzip (``"gzip"``) or on a read error (the ``OSError``).
    """
    stream, is_gzip, idle = opened
    newline = buf.find(b"\n") >= 0
    while True:
        if newline and (len(buf) >= BATCH_BYTES or idle()):
            return None
        # Read at most one byte past the limit: enough to know it is passed.
        room = min(limits.max_bytes - tally.bytes_in - len(buf) + 1, BATCH_BYTES)
        try:
            data = stream.read1(room)
        except (OSError, EOFError, zlib.error) as err:
            return "gzip" if is_gzip or not isinstance(err, OSError) else err
        if not data:
            return "eof"
        if tally.bytes_in + len(buf) + len(data) > limits.max_bytes:
            buf += data[: limits.max_bytes - tally.bytes_in - len(buf)]
            return "too_large"
        newline = newline or data.find(b"\n") >= 0
        buf += data
        if not newline and len(buf) > MAX_LINE_BYTES:
            return "line_too_long"  # no newline in sight: the line after all before it


class Block(NamedTuple):
    """The non-blank lines of one block of input, and the line fault that ends it, if any."""

    lines: list[tuple[int, bytes]]
    """``(line number, bytes)``, 1-based, the newline cut off; may be empty."""
    fault: Optional[RolloutFileError]
    """A line over ``MAX_LINE_BYTES`` or past the ``max_rows``-th non-blank line,
    after ``lines``. The caller checks ``lines`` first (a broken row before it is
    the first problem) and then raises it, having used none of the block's rows:
    the Rust engine refuses a chunk whole before writing any of it."""


def read_lines(opened: Opened, limits: FileLimits, tally: Tally, source: str) -> Iterator[Block]:
    """The non-blank lines of a file, a block at a time (see ``Block``).

    Problems of the input as a whole (bad gzip, more than ``max_bytes`` bytes,
    an ``OSError``) are raised after the block of the whole lines read before
    them, as the Rust chunker reports them after the chunks before.
    Counts lines, blank lines and bytes on ``tally``; does not close the input.
    """
    max_rows = limits.max_rows
    buf = bytearray()
    rows = 0
    while True:
        stop = _fill(opened, buf, limits, tally)
        cut = len(buf) if stop == "eof" else buf.rfind(b"\n") + 1
        block = bytes(buf[:cut])
        del buf[:cut]
        tally.bytes_in += len(block)
        out: list[tuple[int, bytes]] = []
        failed: Optional[RolloutFileError] = None
        line_no = tally.lines
        if len(block) <= MAX_LINE_BYTES and not block.strip(_BLANK + b"\n"):
            # Blank lines only (a padded or blank-line file): counted, not split.
            count = block.count(b"\n") + (not block.endswith(b"\n") and bool(block))
            line_no += count
            tally.blank_lines += count
        else:
            pieces = block.split(b"\n")
            if block.endswith(b"\n"):
                pieces.pop()  # the empty piece after the last newline is no line
            for line in pieces:
                line_no += 1
                if len(line) > MAX_LINE_BYTES:
                    failed = file_error("line_too_long", source, max_rows, line=line_no)
                    break
                if not line.strip(_BLANK):
                    tally.blank_lines += 1
                    continue
                if rows >= max_rows:
                    failed = file_error("file_too_many_rows", source, max_rows, line=line_no)
                    break
                rows += 1
                out.append((line_no, line))
        tally.lines = line_no
        yield Block(out, failed)  # also when empty: the caller's progress moves on
        if failed is not None:
            return  # the caller raises it
        if stop is None:
            continue
        if stop == "eof":
            return
        if isinstance(stop, OSError):
            raise stop
        if stop == "gzip":
            raise file_error("gzip", source, max_rows)
        if stop == "line_too_long" or (stop == "too_large" and len(buf) > MAX_LINE_BYTES):
            # The unfinished line was already too long: that came first in the input.
            raise file_error("line_too_long", source, max_rows, line=line_no + 1)
        raise file_error(
            "file_too_large", source, max_rows, max_bytes=limits.max_bytes, line=line_no + 1
        )


def decode(content: bytes, line_no: int, source: str, max_rows: int) -> Any:
    """One non-blank line's JSON value: UTF-8, then JSON syntax (``RolloutFileError``)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as err:
        raise file_error("utf8", source, max_rows, fact=str(err.start + 1), line=line_no) from None
    try:
        return _json.loads(text)
    except _json.JsonSyntaxError as err:
        raise file_error(
            "json_syntax",
            source,
            max_rows,
            fact=err.reason,
            line=line_no,
            column=err.offset + 1,
        ) from None


def read_values(
    path: str, limits: FileLimits, *, source: Optional[str] = None
) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` for every non-blank line of a JSONL file (gzip or not).

    Any JSON value is taken: what a line must hold is the caller's rule. The
    limits and messages of ``read_lines`` and ``decode`` apply; errors name
    ``source`` (default: the path, ``<stdin>`` for ``-``). An empty file gives
    nothing (the caller says what that means).
    """
    shown = source_name(path) if source is None else source
    opened = open_jsonl(path)
    try:
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        yield from _values(opened, limits, shown)
    finally:
        opened.stream.close()


def _values(opened: Opened, limits: FileLimits, shown: str) -> Iterator[tuple[int, Any]]:
    """``read_values`` on an input already open."""
    for block in read_lines(opened, limits, Tally(), shown):
        for line_no, content in block.lines:
            yield line_no, decode(content, line_no, shown, limits.max_rows)
        if block.fault is not None:
            raise block.fault


# ---- the row pipeline, in Python -----------------------------------------------------------


def row_batches(
    opened: Opened,
    limits: FileLimits,
    tally: Tally,
    source: str,
    on_progress: Optional[Progress] = None,
    partial: bool = False,
    bad: Optional[BadRows] = None,
) -> Iterator[list[dict]]:
    """The twin of the Rust chunk pipeline: the file's rows, a batch at a time, checked.

    Raises on the first problem, in input order. With ``partial``, a problem
    in a line first yields the rows before it (the Arrow builder checks them
    for a rule of its own, which comes first when its row does). With
    ``bad``, a bad row goes there and the read goes on (a batch holds the
    good rows of its block; a row's index counts the bad rows before it); a
    fault of the input as a whole is still raised, after the bad rows before
    it, and a file of bad rows only is no ``file_no_rows`` error. Each batch
    is read with the collector as the caller has it (so it is never paused
    while the input stalls), then built with it paused.
    """
    max_rows = limits.max_rows
    for block in read_lines(opened, limits, tally, source):
        batch: list[dict] = []
        batch_lines: list[int] = []
        batch_indices: list[int] = []
        tally.batch_lines = batch_lines
        tally.batch_indices = batch_indices
        failed: Optional[ValueError] = None
        with _rows.GcPause():
            for line_no, content in block.lines:
                try:
                    doc = decode(content, line_no, source, max_rows)
                    try:
                        row = _rows.normalise_row(doc, MAX_MESSAGE_DEPTH)
                    except _rows.RuleBroken as broken:
                        broken.rev_path.reverse()
                        raise row_error(
                            broken.code,
                            tally.rows + (0 if bad is None else bad.count),
                            tuple(broken.rev_path),
                            broken.fact,
                            line=line_no,
                            source=source,
                        ) from None
                except (RolloutFileError, RolloutRowError) as err:
                    if bad is not None:
                        bad.add(err)
                        continue
                    if not partial:
                        raise
                    failed = err
                    break
                tally.dropped_keys += len(doc) - ("prompt" in doc) - ("answer" in doc)
                batch.append(row)
                batch_lines.append(line_no)
                batch_indices.append(tally.rows + (0 if bad is None else bad.count))
                tally.rows += 1
        if failed is None and block.fault is not None:
            if not partial:
                raise block.fault  # none of the block's rows is used (nor written)
            failed = block.fault
        if batch:
            yield batch
        if failed is not None:
            raise failed
        if on_progress is not None:
            on_progress(tally.rows, tally.lines, tally.bytes_in)
    if tally.rows == 0 and (bad is None or bad.count == 0):
        raise file_error("file_no_rows", source, max_rows)


def read_rows(path: str, limits: FileLimits) -> tuple[dict, ...]:
    """``read_rollout_jsonl`` on the pure-Python engine."""
    opened = open_jsonl(path)
    rows: list[dict] = []
    try:
        for batch in row_batches(opened, limits, Tally(), source_name(path)):
            rows.extend(batch)
    finally:
        opened.stream.close()
    return tuple(rows)


# ---- canonical JSONL out -------------------------------------------------------------------


def write_canonical(
    rows: Iterable[dict],
    dest: str,
    on_row: Optional[Callable[[int], object]] = None,
    gzip_level: Optional[int] = None,
) -> int:
    """Write ``rows`` as canonical JSONL to ``dest`` (gzip-compressed at ``gzip_level``,
    when given); return the bytes written (after compression).

    A regular file (or a new one; a symlink is followed to its target) is
    written beside ``dest`` and renamed over it only once complete; on any
    error (Ctrl-C, SIGTERM and SIGHUP included) the temporary file is removed
    and ``dest`` is untouched. ``"-"``, ``/dev/stdout``, devices and named
    pipes are written in place (streamed, no undo). ``on_row(count)`` is
    called every 1024 rows, if given.
    """
    with signals_end_cleanly():
        where = destination(dest)
        with replacing(where):
            return write_rows(rows, dest, where, on_row, gzip_level)


def write_rows(
    rows: Iterable[dict],
    shown: str,
    where: Destination,
    on_row: Optional[Callable[[int], object]] = None,
    gzip_level: Optional[int] = None,
) -> int:
    """``write_canonical`` to a destination already resolved (``shown`` names it in
    errors); returns the bytes written (after compression)."""
    output = Output(where, shown, gzip_level=gzip_level)  # nothing made yet: open() below
    try:
        output.open()
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        written = _write_each(rows, output, on_row)
        output.commit()
    except BaseException:
        output.abandon()  # also when the final rename failed
        raise
    compressed = output.compressed()
    return written if compressed is None else compressed


def _write_each(
    rows: Iterable[dict], output: Output, on_row: Optional[Callable[[int], object]]
) -> int:
    """Write ``rows`` to ``output`` as JSONL lines; return the bytes written."""
    encode = _json.dumps
    written = 0
    for count, row in enumerate(rows, start=1):
        data = (encode(row) + "\n").encode("utf-8")
        output.write(data)
        written += len(data)
        if on_row is not None and count % 1024 == 0:
            on_row(count)
    return written


@dataclass(frozen=True)
class FileCounts:
    """What a file-to-file run did (``NormaliseReport`` without the time and engine)."""

    rows: int
    lines: int
    blank_lines: int
    dropped_keys: int
    bytes_in: int
    bytes_out: int
    bad_rows: int = 0
    """Bad rows a run that went on past them counted (``OnBad``)."""
    bad: tuple[ValueError, ...] = ()
    """The first of them (``BAD_ROWS_KEPT``), in line order."""


OnBad = Literal["stop", "report", "skip"]
"""What a file-to-file run does at a bad row: ``stop`` (raise the first), ``report``
(count them all, write nothing), ``skip`` (count them all, write the good rows)."""


class _Unwritten(Exception):
    """Ends a write whose output is not to be kept: bad rows were found (``report``), or
    every row was bad (``skip``)."""


def normalise_to_jsonl(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    on_progress: Optional[Progress],
    on_bad: OnBad = "stop",
    gzip_level: Optional[int] = None,
) -> FileCounts:
    """``normalise_rollout_file`` to JSONL on the pure-Python engine.

    With ``on_bad`` ``report`` or ``skip``, the read goes on past bad rows
    (``BadRows``); an output that ``report`` found a bad row for, or that would
    hold none, is not written (the counts say why). A fault of the input as a
    whole after bad rows is raised as ``RolloutBadRowsError``, carrying them.
    """
    opened = open_jsonl(src)  # the source first, as the Rust engine does
    tally = Tally()
    shown = source_name(src)
    bad = None if on_bad == "stop" else BadRows(BAD_ROWS_KEPT)
    try:
        batches = row_batches(opened, limits, tally, shown, on_progress, bad=bad)
        bytes_out = write_rows(
            _to_write(batches, bad, on_bad, tally), dest, where, None, gzip_level
        )
    except _Unwritten:
        bytes_out = 0
    except RolloutFileError as exc:
        if bad is None or not bad.count:
            raise
        raise bad_rows_error(shown, tuple(bad.errors), bad.count, None, exc) from None
    finally:
        opened.stream.close()
    return FileCounts(
        tally.rows,
        tally.lines,
        tally.blank_lines,
        tally.dropped_keys,
        tally.bytes_in,
        bytes_out,
        0 if bad is None else bad.count,
        () if bad is None else tuple(bad.errors),
    )


def _to_write(
    batches: Iterator[list[dict]], bad: Optional[BadRows], on_bad: OnBad, tally: Tally
) -> Iterator[dict]:
    """The rows of ``batches`` a run writes: with ``report``, none from the first block
    holding a bad row on (as the Rust engine, chunk by chunk); ``_Unwritten`` at the
    end when the output is not to be kept."""
    for batch in batches:
        if on_bad != "report" or bad is None or not bad.count:
            yield from batch
    if bad is not None and bad.count and (on_bad == "report" or tally.rows == 0):
        raise _Unwritten


__all__ = [
    "BATCH_BYTES",
    "BadRows",
    "Block",
    "FileCounts",
    "FileLimits",
    "OnBad",
    "Progress",
    "Tally",
    "decode",
    "normalise_to_jsonl",
    "open_jsonl",
    "read_lines",
    "read_rows",
    "read_values",
    "row_batches",
    "write_canonical",
    "write_rows",
]
