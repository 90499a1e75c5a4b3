"""Rollout JSONL files: ``read_rollout_jsonl`` and ``normalise_rollout_file``.

The Rust engine parses and checks lines on worker threads (see
``rust/jsonl.rs``); this module holds the public functions, and the pure-Python
twin, which keeps the same order of checks for every line:

1. the line's length (``MAX_LINE_BYTES``), 2. blank lines are skipped,
3. the row cap (``max_rows``), 4. UTF-8, 5. JSON syntax, 6. the row rules.

``json.loads`` does the parsing in the twin; when it refuses a line, or the
line holds what Python's ``json`` accepts but JSON does not (NaN, a lone
surrogate escape, deeper nesting than ``MAX_JSON_DEPTH``), ``_scan`` walks the
same grammar as the Rust parser to name the reason and the column.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
import select
import signal
import stat
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Union, overload

from . import _engine, _rows
from ._backends import (
    MAX_BYTES_LIMIT,
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    MAX_MESSAGE_DEPTH,
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    int_digits_limit,
)
from ._errors import RolloutFileError, RolloutRowError, file_error, from_native_file, row_error
from ._progress import Terminated

if TYPE_CHECKING:
    import pyarrow as pa

PathArg = Union[str, "os.PathLike[str]"]
Progress = Callable[[int, int, int], object]
"""Called as ``progress(rows, lines, bytes_in)`` now and then during a run."""


@dataclass(frozen=True)
class NormaliseReport:
    """What ``normalise_rollout_file`` did."""

    rows: int
    """Rows written (every non-blank input line is one row)."""
    lines: int
    """Input lines read, blank ones included."""
    blank_lines: int
    dropped_keys: int
    """Top-level row keys other than ``prompt``/``answer`` left out, summed over rows."""
    bytes_in: int
    """Input bytes read (after gzip decompression)."""
    bytes_out: int
    seconds: float
    engine: str


# ---- the JSON grammar, for error reports ------------------------------------------------

_WS = " \t\n\r"
_ESCAPES = '"\\/bfnrt'
_HEX = "0123456789abcdefABCDEF"


class _Syntax(Exception):
    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def _scan(text: str) -> Optional[tuple[str, int]]:
    """The first JSON grammar error in ``text`` as (reason code, offset), or None."""
    if text.startswith("\ufeff"):
        return "byte_order_mark", 0
    try:
        end = _scan_value(text, _skip_ws(text, 0), 0)
        end = _skip_ws(text, end)
        if end != len(text):
            raise _Syntax("trailing_data", end)
    except _Syntax as err:
        return err.reason, err.offset
    return None


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _scan_value(text: str, pos: int, depth: int) -> int:
    ch = text[pos] if pos < len(text) else ""
    if ch == "{":
        return _scan_object(text, pos, depth + 1)
    if ch == "[":
        return _scan_array(text, pos, depth + 1)
    if ch == '"':
        return _scan_string(text, pos)
    if ch and ch in "-0123456789":
        return _scan_number(text, pos)
    for word in ("true", "false", "null"):
        if text.startswith(word, pos):
            return pos + len(word)
    if text.startswith("NaN", pos) or text.startswith("Infinity", pos):
        raise _Syntax("nan_infinity", pos)
    raise _Syntax("expected_value", pos)


def _scan_object(text: str, pos: int, depth: int) -> int:
    if depth > MAX_JSON_DEPTH:
        raise _Syntax("too_deep", pos)
    pos = _skip_ws(text, pos + 1)
    if text.startswith("}", pos):
        return pos + 1
    while True:
        if not text.startswith('"', pos):
            raise _Syntax("expected_key", pos)
        pos = _skip_ws(text, _scan_string(text, pos))
        if not text.startswith(":", pos):
            raise _Syntax("expected_colon", pos)
        pos = _skip_ws(text, _scan_value(text, _skip_ws(text, pos + 1), depth))
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif text.startswith("}", pos):
            return pos + 1
        else:
            raise _Syntax("expected_object_sep", pos)


def _scan_array(text: str, pos: int, depth: int) -> int:
    if depth > MAX_JSON_DEPTH:
        raise _Syntax("too_deep", pos)
    pos = _skip_ws(text, pos + 1)
    if text.startswith("]", pos):
        return pos + 1
    while True:
        pos = _skip_ws(text, _scan_value(text, pos, depth))
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif text.startswith("]", pos):
            return pos + 1
        else:
            raise _Syntax("expected_array_sep", pos)


def _digits(text: str, pos: int) -> int:
    start = pos
    while pos < len(text) and text[pos] in "0123456789":
        pos += 1
    return pos - start


def _scan_number(text: str, pos: int) -> int:
    start = pos
    if text.startswith("-", pos):
        pos += 1
        if text.startswith("Infinity", pos):
            raise _Syntax("nan_infinity", start)
    if text.startswith("0", pos):
        int_digits = 1
        pos += 1
    elif pos < len(text) and text[pos] in "123456789":
        int_digits = _digits(text, pos)
        pos += int_digits
    else:
        raise _Syntax("bad_number", start)
    is_float = False
    if text.startswith(".", pos):
        count = _digits(text, pos + 1)
        if count == 0:
            raise _Syntax("bad_number", start)
        pos += 1 + count
        is_float = True
    if pos < len(text) and text[pos] in "eE":
        pos += 1
        if pos < len(text) and text[pos] in "+-":
            pos += 1
        count = _digits(text, pos)
        if count == 0:
            raise _Syntax("bad_number", start)
        pos += count
        is_float = True
    if not is_float and int_digits > int_digits_limit():
        raise _Syntax("long_integer", start)
    return pos


def _hex4(text: str, pos: int) -> Optional[int]:
    digits = text[pos : pos + 4]
    if len(digits) != 4 or any(c not in _HEX for c in digits):
        return None
    return int(digits, 16)


def _scan_string(text: str, pos: int) -> int:
    opening = pos
    pos += 1
    while True:
        if pos >= len(text):
            raise _Syntax("unterminated_string", opening)
        ch = text[pos]
        if ch == '"':
            return pos + 1
        if ch == "\\":
            kind = text[pos + 1] if pos + 1 < len(text) else ""
            if kind == "u":
                pos = _scan_unicode(text, pos)
            elif kind and kind in _ESCAPES:
                pos += 2
            else:
                raise _Syntax("bad_escape", pos)
        elif ord(ch) < 0x20:
            raise _Syntax("control_character", pos)
        else:
            pos += 1


def _scan_unicode(text: str, slash: int) -> int:
    first = _hex4(text, slash + 2)
    if first is None:
        raise _Syntax("bad_unicode_escape", slash)
    pos = slash + 6
    if 0xD800 <= first <= 0xDBFF:
        low = _hex4(text, pos + 2) if text.startswith("\\u", pos) else None
        if low is None or not 0xDC00 <= low <= 0xDFFF:
            raise _Syntax("lone_surrogate", slash)
        return pos + 6
    if 0xDC00 <= first <= 0xDFFF:
        raise _Syntax("lone_surrogate", slash)
    return pos


# ---- parsing one line in the twin --------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_FAILED = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _may_nest_too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _loads(text: str) -> Any:
    """``json.loads`` held to the Rust parser's grammar; raises ``_Syntax``."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        value = _FAILED
    if (
        value is _FAILED
        or ("\\u" in text and _SURROGATE_ESCAPE.search(text) is not None)
        or _may_nest_too_deep(text)
    ):
        problem = _scan(text)
        if problem is not None:
            raise _Syntax(*problem)
        if value is _FAILED:  # pragma: no cover - the grammars agree; kept as a guard
            raise _Syntax("expected_value", 0)
    return value


# ---- where the output goes -----------------------------------------------------------------

_MAX_LINKS = 40  # as the kernel: more symlinks than this in a chain is a loop


@dataclass(frozen=True)
class Destination:
    """Where output goes, decided once for both engines.

    ``kind`` is ``"file"`` (a regular file, or a new one: written beside
    ``path`` and renamed over it when complete), ``"stream"`` (a device, named
    pipe or socket: opened and written in place, streamed, no undo) or
    ``"fd"`` (one of this process's own descriptors, ``fd``: ``-``,
    ``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``; written in place).
    """

    kind: str
    path: str
    fd: int = -1


def _own_fd(path: str) -> Optional[int]:
    """N when ``path`` names this process's descriptor N (``/proc/<pid>/fd/N`` and aliases)."""
    folder, _, name = path.rpartition("/")
    if not name.isdigit() or not folder:
        return None
    try:
        real = os.path.realpath(folder)
    except (OSError, ValueError):
        return None
    pid = os.getpid()
    if real == f"/proc/{pid}/fd" or re.fullmatch(rf"/proc/{pid}/task/\d+/fd", real):
        return int(name)
    return None


def destination(dest: str) -> Destination:
    """Resolve ``dest`` (symlinks followed one by one) to where the output really goes.

    A symlink, live or dangling, is written through to its target (created
    if missing); a chain of more than 40 links (a loop) is ``OSError`` ELOOP
    naming ``dest``.
    """
    if dest == "-":
        return Destination("fd", dest, 1)
    path = dest
    for _ in range(_MAX_LINKS + 1):
        fd = _own_fd(path)
        if fd is not None:
            return Destination("fd", path, fd)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return Destination("file", path)  # a new file (its folder must exist)
        except OSError as err:
            raise OSError(err.errno, err.strerror, dest) from None
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(path)
            except OSError as err:
                raise OSError(err.errno, err.strerror, dest) from None
            path = os.path.join(os.path.dirname(path), target)
            continue
        if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
            return Destination("file", path)  # a folder: refused when renamed over
        return Destination("stream", path)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), dest)


# ---- SIGTERM and SIGHUP while a file is written -------------------------------------------


def _terminate(signum: int, frame: object) -> None:
    del frame
    raise Terminated(signum)


@contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into ``Terminated`` while output is written.

    Only on the main thread (the only one Python runs signal handlers on) and
    only for a signal left at its default action, which would kill the
    process with the temporary file in place. ``Terminated`` is a
    ``SystemExit`` (status 128 + signal number): cleanup runs on the way out,
    and an uncaught one ends the process with the status a shell reports for
    a process the signal killed. Handlers the caller set are left alone.
    """
    installed: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _TERMINATING:
            try:
                if signal.getsignal(signum) == signal.SIG_DFL:
                    installed[signum] = signal.signal(signum, _terminate)
            except (OSError, ValueError):  # pragma: no cover - not settable here
                pass
    try:
        yield
    finally:
        for signum, previous in installed.items():
            if signal.getsignal(signum) is _terminate:
                signal.signal(signum, previous)


_TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


# ---- the twin ----------------------------------------------------------------------------


def _source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _never_idle() -> bool:
    return False


class _GzipOwningFile(gzip.GzipFile):
    """A gzip reader that also closes the file it reads (``GzipFile`` leaves a given one open)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw  # first: close() must find it even if the constructor fails
        super().__init__(fileobj=raw, mode="rb")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _open_lines(path: str) -> tuple[Any, bool, Callable[[], bool]]:
    """A binary stream of the file's lines (gzip undone), whether it was gzip, and ``idle``.

    ``idle()`` tells whether a read now would wait (a pipe or terminal with
    nothing in it): lines already read then go out without waiting for more.
    """
    # "-" is file descriptor 0 itself, as on the Rust engine (not a replaced sys.stdin).
    raw: Any = open(0, "rb", closefd=False) if path == "-" else open(path, "rb")
    try:
        fd = raw.fileno()
        idle = _never_idle
        if not stat.S_ISREG(os.fstat(fd).st_mode):

            def idle() -> bool:
                return not select.select([fd], [], [], 0)[0]

        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        if buffered.peek(2)[:2] == b"\x1f\x8b":
            return _GzipOwningFile(buffered), True, idle
    except BaseException:
        raw.close()
        raise
    return buffered, False, idle


@dataclass
class _Tally:
    rows: int = 0
    lines: int = 0
    blank_lines: int = 0
    dropped_keys: int = 0
    bytes_in: int = 0
    batch_lines: list[int] = field(default_factory=list)
    """The line of each row of the batch last yielded (the Arrow builder names it)."""


_BATCH_BYTES = 1 << 20
"""Lines are read this much at a time, then turned into rows with the collector paused."""


@dataclass(frozen=True)
class _Limits:
    max_rows: int
    max_bytes: int


def _python_batches(
    path: str,
    limits: _Limits,
    tally: _Tally,
    opened: tuple[Any, bool, Callable[[], bool]],
    on_progress: Optional[Progress] = None,
    partial: bool = False,
    source: Optional[str] = None,
) -> Iterator[list[dict]]:
    """Yield the file's rows a batch at a time; raise on the first problem.

    With ``partial``, a problem in a line first yields the rows before it (the
    Arrow builder checks them for a rule of its own, which comes first when
    its row does). Errors name ``source`` (default: ``path``; ``<stdin>`` for ``-``).

    Each batch is read with the collector as the caller has it (so it is
    never paused while the input stalls), then built with it paused. Read
    problems (bad gzip, the byte limit) are reported after the whole lines
    before them, as on the Rust engine.
    """
    source = _source_name(path) if source is None else source
    stream, is_gzip, idle = opened
    max_rows = limits.max_rows
    rows = 0
    line_no = 0
    try:
        while True:
            lines: list[bytes] = []
            size = 0
            stop: Optional[str] = None  # "eof", "gzip", "too_large"
            read_error: Optional[OSError] = None
            while size < _BATCH_BYTES and not (lines and idle()):
                try:
                    line = stream.readline(MAX_LINE_BYTES + 1)
                except (OSError, EOFError, zlib.error) as err:
                    if not is_gzip and isinstance(err, OSError):
                        read_error, stop = err, "error"
                    else:
                        stop = "gzip"
                    break
                if not line:
                    stop = "eof"
                    break
                if tally.bytes_in + len(line) > limits.max_bytes:
                    tally.bytes_in = limits.max_bytes
                    stop = "too_large"
                    break
                tally.bytes_in += len(line)
                lines.append(line)
                size += len(line)
            batch: list[dict] = []
            batch_lines: list[int] = []
            tally.batch_lines = batch_lines
            failed: Optional[ValueError] = None
            with _rows.GcPause():
                for line in lines:
                    line_no += 1
                    try:
                        content = line[:-1] if line.endswith(b"\n") else line
                        if len(content) > MAX_LINE_BYTES:
                            raise file_error("line_too_long", source, max_rows, line=line_no)
                        if not content.strip(b" \t\r"):
                            tally.blank_lines += 1
                            continue
                        if rows >= max_rows:
                            raise file_error("file_too_many_rows", source, max_rows, line=line_no)
                        row = _python_row(content, source, max_rows, rows, line_no, tally)
                    except (RolloutFileError, RolloutRowError) as err:
                        if not partial:
                            raise
                        failed = err
                        break
                    batch.append(row)
                    batch_lines.append(line_no)
                    rows += 1
            tally.rows = rows
            if batch:
                yield batch
            if failed is not None:
                raise failed
            if on_progress is not None:
                on_progress(rows, line_no, tally.bytes_in)
            if stop == "error" and read_error is not None:
                raise read_error
            if stop == "gzip":
                raise file_error("gzip", source, max_rows)
            if stop == "too_large":
                raise file_error(
                    "file_too_large",
                    source,
                    max_rows,
                    max_bytes=limits.max_bytes,
                    line=line_no + 1,
                )
            if stop == "eof":
                break
    finally:
        tally.lines = line_no
        stream.close()
    if rows == 0:
        raise file_error("file_no_rows", source, max_rows)


def _python_row(
    content: bytes, source: str, max_rows: int, index: int, line_no: int, tally: _Tally
) -> dict:
    """One non-blank line: UTF-8, JSON syntax, then the row rules."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as err:
        raise file_error("utf8", source, max_rows, fact=str(err.start + 1), line=line_no) from None
    try:
        doc = _loads(text)
    except _Syntax as err:
        raise file_error(
            "json_syntax",
            source,
            max_rows,
            fact=err.reason,
            line=line_no,
            column=err.offset + 1,
        ) from None
    try:
        row = _rows._row(doc, MAX_MESSAGE_DEPTH)
    except _rows._Bad as bad:
        bad.rev_path.reverse()
        raise row_error(
            bad.code, index, tuple(bad.rev_path), bad.fact, line=line_no, source=source
        ) from None
    tally.dropped_keys += len(doc) - ("prompt" in doc) - ("answer" in doc)
    return row


def _python_read(path: str, limits: _Limits) -> tuple[dict, ...]:
    rows: list[dict] = []
    for batch in _python_batches(path, limits, _Tally(), _open_lines(path)):
        rows.extend(batch)
    return tuple(rows)


class _Aside:
    """Write to a temporary file beside ``path``; rename it over ``path`` on success."""

    def __init__(self, shown: str, path: str) -> None:
        self.shown = shown  # errors name the path the caller gave
        self.dest = path
        try:
            self.mode: Optional[int] = stat.S_IMODE(os.stat(self.dest).st_mode)
        except OSError:
            self.mode = None
        folder = os.path.dirname(self.dest) or "."
        name = os.path.basename(self.dest)
        for attempt in range(100):
            temp = os.path.join(folder, f".{name}.{os.getpid()}.{attempt}.tmp")
            try:
                self.file = open(temp, "xb")
            except FileExistsError:
                continue
            except OSError as err:
                # Name the destination the caller asked for, not our temporary.
                raise OSError(err.errno, err.strerror, shown) from None
            self.temp = temp
            if self.mode is not None:
                try:
                    os.chmod(temp, self.mode)
                except OSError as err:
                    self.abandon()
                    raise OSError(err.errno, err.strerror, shown) from None
            return
        raise OSError(f"{shown}: no free temporary file name")

    def commit(self) -> None:
        self.file.close()
        os.replace(self.temp, self.dest)

    def abandon(self) -> None:
        """Remove the temporary file, whatever closing it says (a full disk fails again)."""
        try:
            self.file.close()
        except OSError:
            pass
        try:
            os.unlink(self.temp)
        except FileNotFoundError:
            pass


def _open_in_place(where: Destination, shown: str) -> Any:
    """The binary sink for a stream or one of our descriptors (no temporary file, no undo)."""
    try:
        if where.kind == "fd":
            if where.fd == 1:
                sys.stdout.flush()  # what Python already buffered goes out first
            elif where.fd == 2:
                sys.stderr.flush()
            fd = os.dup(where.fd)
        else:
            # No O_CREAT, no O_TRUNC: a device or pipe is written as it is.
            fd = os.open(where.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise OSError(err.errno, err.strerror, shown) from None
    return open(fd, "wb")


def write_canonical(
    rows: Iterable[dict], dest: str, on_row: Optional[Callable[[int], object]] = None
) -> int:
    """Write ``rows`` as canonical JSONL to ``dest``; return the bytes written.

    A regular file (or a new one; a symlink is followed to its target) is
    written beside ``dest`` and renamed over it only once complete; on any
    error (Ctrl-C, SIGTERM and SIGHUP included) the temporary file is removed
    and ``dest`` is untouched. ``"-"``, ``/dev/stdout``, devices and named
    pipes are written in place (streamed, no undo). ``on_row(count)`` is
    called every 1024 rows, if given.
    """
    with _signals_end_cleanly():
        return _write_canonical(rows, dest, destination(dest), on_row)


def _write_canonical(
    rows: Iterable[dict],
    shown: str,
    where: Destination,
    on_row: Optional[Callable[[int], object]] = None,
) -> int:
    aside = _Aside(shown, where.path) if where.kind == "file" else None
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    written = 0
    try:
        sink: Any = aside.file if aside is not None else _open_in_place(where, shown)
        try:
            for count, row in enumerate(rows, start=1):
                data = (encode(row) + "\n").encode("utf-8")
                try:
                    sink.write(data)
                except OSError as err:
                    raise OSError(err.errno, err.strerror, shown) from None
                written += len(data)
                if on_row is not None and count % 1024 == 0:
                    on_row(count)
            try:
                if aside is not None:
                    aside.commit()
                else:
                    sink.close()
            except OSError as err:
                raise OSError(err.errno, err.strerror, shown) from None
        finally:
            if aside is None and not sink.closed:
                try:
                    sink.close()
                except OSError:
                    pass  # already failing: the first error is the one reported
    except BaseException:
        if aside is not None:
            aside.abandon()  # also when the final rename failed
        raise
    return written


def _python_normalise(
    src: str, dest: str, where: Destination, limits: _Limits, on_progress: Optional[Progress]
) -> tuple[int, int, int, int, int, int]:
    opened = _open_lines(src)  # the source first, as the Rust engine does
    tally = _Tally()
    try:
        rows = (
            row
            for batch in _python_batches(src, limits, tally, opened, on_progress)
            for row in batch
        )
        bytes_out = _write_canonical(rows, dest, where)
    finally:
        opened[0].close()
    return (
        tally.rows,
        tally.lines,
        tally.blank_lines,
        tally.dropped_keys,
        tally.bytes_in,
        bytes_out,
    )


# ---- public API ----------------------------------------------------------------------------


def _path_text(path: object, what: str) -> str:
    if isinstance(path, (str, os.PathLike)):
        text = os.fspath(path)
        if isinstance(text, str):
            if "\x00" in text:
                raise ValueError("embedded null byte")  # what Python's own open() says
            if not text:
                raise ValueError(f"{what} must not be empty (use '-' for the standard streams)")
            return text
    raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(path).__name__}")


def check_max_bytes(max_bytes: object) -> int:
    """``max_bytes`` must be an int (not a bool) in [1, MAX_BYTES_LIMIT]."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {type(max_bytes).__name__}")
    if not 1 <= max_bytes <= MAX_BYTES_LIMIT:
        raise ValueError(f"max_bytes must be in [1, {MAX_BYTES_LIMIT}], got {max_bytes}")
    return int(max_bytes)


@overload
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = ...,
    max_bytes: int = ...,
    as_arrow: Literal[False] = ...,
) -> tuple[dict, ...]: ...
@overload
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = ...,
    max_bytes: int = ...,
    as_arrow: Literal[True],
    prompt_kind: str = ...,
) -> pa.Table: ...
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    as_arrow: bool = False,
    prompt_kind: str = "auto",
) -> Any:
    """Read a rollout JSONL file (``.jsonl`` or gzip-compressed) into normalised rows.

    ``as_arrow=True`` returns a ``pyarrow.Table`` instead, built without Python
    row objects (``agent_rollout.arrow.read_rollout_table``; ``prompt_kind`` as there).

    Same rules and texts as :func:`normalise_rollout_rows`, with the file and
    line in front (``rollouts.jsonl:2: row 1: answer: must be a str or None,
    got 'int'``). Blank lines are skipped; reading stops at row
    ``max_rows + 1``, and after ``max_bytes`` bytes of input (counted after
    gzip decompression, blank lines included; default ``MAX_ROLLOUT_BYTES``,
    4 GiB). ``"-"`` reads standard input (descriptor 0; nothing more is read
    from it once the call returns).

    Raises:
        RolloutRowError: a row breaks a rule (``.index``, ``.path``, ``.line``).
        RolloutFileError: bad UTF-8, bad JSON (with the column), bad gzip, a line
            over ``MAX_LINE_BYTES``, no rows, more than ``max_rows`` rows or
            ``max_bytes`` bytes.
        OSError: the file cannot be read.
    """
    if as_arrow:
        from .arrow import read_rollout_table

        return read_rollout_table(
            path,
            max_rows=max_rows,
            max_bytes=max_bytes,
            prompt_kind=prompt_kind,  # type: ignore[arg-type]
        )
    text = _path_text(path, "path")
    max_rows = _engine.check_max_rows(max_rows)
    max_bytes = check_max_bytes(max_bytes)
    if _engine.implementation() == "python":
        return _python_read(text, _Limits(max_rows, max_bytes))
    native = _engine._native
    try:
        rows = native.read_jsonl(
            text, max_rows, max_bytes, MAX_MESSAGE_DEPTH, MAX_JSON_DEPTH, int_digits_limit()
        )
    except native.NativeRowError as exc:
        raise from_native_file(exc, _source_name(text), None, max_rows, max_bytes) from None
    result: tuple[dict, ...] = rows
    return result


def normalise_rollout_file(
    src: PathArg,
    dst: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    progress: Optional[Progress] = None,
    prompt_kind: str = "auto",
) -> NormaliseReport:
    """Normalise a rollout JSONL file into canonical JSONL, file to file.

    A ``dst`` whose name ends in ``.parquet`` gets zstd Parquet of the rollout
    Arrow schema instead (``agent_rollout.arrow.write_parquet``; needs pyarrow;
    ``prompt_kind`` as in ``rows_to_arrow``), with the same guarantees.

    The output has one row per line, ``prompt`` then ``answer``, compact
    separators, UTF-8 text (not ASCII-escaped) and floats that round-trip
    exactly. A regular ``dst`` (or a new one; a symlink, even a dangling one,
    is followed to its target) is written beside it and renamed over it only
    when every line passed: on any error, Ctrl-C, SIGTERM or SIGHUP, ``dst``
    is not created, or is left as it was, and no temporary file remains.
    ``"-"`` (descriptor 1), ``/dev/stdout``-like paths, devices and named
    pipes are written in place: streamed, nothing can be taken back. Input
    stops at ``max_rows`` rows and ``max_bytes`` bytes (after gzip
    decompression). ``progress(rows, lines, bytes_in)`` is called now and
    then, if given. The Rust engine runs without holding the interpreter, on
    all cores, in memory that does not grow with the file.

    Raises the same errors as :func:`read_rollout_jsonl`, and ``OSError`` when
    ``dst`` cannot be written (a symlink loop: ELOOP).
    """
    src_text = _path_text(src, "src")
    dst_text = _path_text(dst, "dst")
    max_rows = _engine.check_max_rows(max_rows)
    max_bytes = check_max_bytes(max_bytes)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    engine = _engine.implementation()
    start = time.perf_counter()
    with _signals_end_cleanly():
        where = destination(dst_text)
        if dst_text.lower().endswith(".parquet"):
            from .arrow import write_parquet

            rows, lines, blank, dropped, bytes_in, bytes_out = write_parquet(
                src_text, dst_text, where, _Limits(max_rows, max_bytes), progress, prompt_kind
            )
        elif engine == "python":
            rows, lines, blank, dropped, bytes_in, bytes_out = _python_normalise(
                src_text, dst_text, where, _Limits(max_rows, max_bytes), progress
            )
        else:
            if where.kind == "fd" and where.fd in (1, 2):
                (sys.stdout if where.fd == 1 else sys.stderr).flush()
            native = _engine._native
            try:
                rows, lines, blank, dropped, bytes_in, bytes_out = native.normalise_file(
                    src_text,
                    where.path,
                    where.kind,
                    where.fd,
                    max_rows,
                    max_bytes,
                    MAX_MESSAGE_DEPTH,
                    MAX_JSON_DEPTH,
                    int_digits_limit(),
                    progress,
                )
            except native.NativeRowError as exc:
                raise from_native_file(
                    exc, _source_name(src_text), dst_text, max_rows, max_bytes
                ) from None
    return NormaliseReport(
        rows=rows,
        lines=lines,
        blank_lines=blank,
        dropped_keys=dropped,
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        seconds=time.perf_counter() - start,
        engine=engine,
    )


__all__ = [
    "Destination",
    "NormaliseReport",
    "RolloutFileError",
    "check_max_bytes",
    "destination",
    "normalise_rollout_file",
    "read_rollout_jsonl",
]
