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

import gzip
import io
import json
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Optional, Union, overload

from . import _engine, _rows
from ._backends import (
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    MAX_MESSAGE_DEPTH,
    MAX_ROLLOUT_ROWS,
    int_digits_limit,
)
from ._errors import RolloutFileError, file_error, from_native_file, row_error

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


# ---- the twin ----------------------------------------------------------------------------


def _source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _open_lines(path: str) -> tuple[Any, bool]:
    """A binary stream of the file's lines (gzip undone), and whether it was gzip."""
    # "-" is file descriptor 0 itself, as on the Rust engine (not a replaced sys.stdin).
    raw: Any = open(0, "rb", closefd=False) if path == "-" else open(path, "rb")
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered, mode="rb"), True
    return buffered, False


@dataclass
class _Tally:
    rows: int = 0
    lines: int = 0
    blank_lines: int = 0
    dropped_keys: int = 0
    bytes_in: int = 0


def _python_rows(
    path: str,
    max_rows: int,
    tally: _Tally,
    on_progress: Optional[Progress] = None,
    opened: Optional[tuple[Any, bool]] = None,
) -> Iterator[dict]:
    """Yield every row of the file; raise on the first problem."""
    source = _source_name(path)
    stream, is_gzip = opened if opened is not None else _open_lines(path)
    rows = 0
    line_no = 0
    try:
        while True:
            try:
                line = stream.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError, zlib.error):
                if not is_gzip:
                    raise
                raise file_error("gzip", source, max_rows) from None
            if not line:
                break
            line_no += 1
            tally.bytes_in += len(line)
            content = line[:-1] if line.endswith(b"\n") else line
            if len(content) > MAX_LINE_BYTES:
                raise file_error("line_too_long", source, max_rows, line=line_no)
            if not content.strip(b" \t\r"):
                tally.blank_lines += 1
                continue
            if rows >= max_rows:
                raise file_error("file_too_many_rows", source, max_rows, line=line_no)
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError as err:
                raise file_error(
                    "utf8", source, max_rows, fact=str(err.start + 1), line=line_no
                ) from None
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
                    bad.code, rows, tuple(bad.rev_path), bad.fact, line=line_no, source=source
                ) from None
            tally.dropped_keys += len(doc) - ("prompt" in doc) - ("answer" in doc)
            rows += 1
            tally.rows = rows
            tally.lines = line_no  # so far (the Arrow builder names the line of a row)
            if on_progress is not None and rows % 8192 == 0:
                on_progress(rows, line_no, tally.bytes_in)
            yield row
    finally:
        tally.lines = line_no
        stream.close()
    if rows == 0:
        raise file_error("file_no_rows", source, max_rows)


def _python_read(path: str, max_rows: int) -> tuple[dict, ...]:
    with _rows.GcPause():
        return tuple(_python_rows(path, max_rows, _Tally()))


class _Aside:
    """Write to a temporary file beside ``dest``; rename it over ``dest`` on success."""

    def __init__(self, dest: str) -> None:
        self.shown = dest  # errors name the path the caller gave
        # Replace what a symlink points at, not the link; keep its permissions.
        self.dest = os.path.realpath(dest) if os.path.islink(dest) else dest
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
                raise OSError(err.errno, err.strerror, dest) from None
            self.temp = temp
            if self.mode is not None:
                os.chmod(temp, self.mode)
            return
        raise OSError(f"{dest}: no free temporary file name")

    def commit(self) -> None:
        try:
            self.file.close()
            os.replace(self.temp, self.dest)
        except OSError as err:
            self.abandon()
            raise OSError(err.errno, err.strerror, self.shown) from None

    def abandon(self) -> None:
        self.file.close()
        try:
            os.unlink(self.temp)
        except FileNotFoundError:
            pass


def write_canonical(
    rows: Iterable[dict], dest: str, on_row: Optional[Callable[[int], object]] = None
) -> int:
    """Write ``rows`` as canonical JSONL to ``dest``; return the bytes written.

    ``"-"`` is file descriptor 1 (streamed, no undo). A file is written beside
    ``dest`` and renamed over it only once complete; on any error (Ctrl-C
    included) the temporary file is removed and ``dest`` is untouched.
    ``on_row(count)`` is called every 1024 rows, if given.
    """
    if dest == "-":
        sys.stdout.flush()  # what Python already buffered goes out first
        aside = None
        sink: Any = open(1, "wb", closefd=False)
    else:
        aside = _Aside(dest)
        sink = aside.file
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    written = 0
    try:
        for count, row in enumerate(rows, start=1):
            data = (encode(row) + "\n").encode("utf-8")
            sink.write(data)
            written += len(data)
            if on_row is not None and count % 1024 == 0:
                on_row(count)
        sink.flush()
        if aside is not None:
            aside.commit()
    except BaseException:
        if aside is not None:
            aside.abandon()  # also when the final rename failed
        raise
    return written


def _python_normalise(
    src: str, dest: str, max_rows: int, on_progress: Optional[Progress]
) -> tuple[int, int, int, int, int, int]:
    opened = _open_lines(src)  # the source first, as the Rust engine does
    tally = _Tally()
    try:
        bytes_out = write_canonical(_python_rows(src, max_rows, tally, on_progress, opened), dest)
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


@overload
def read_rollout_jsonl(
    path: PathArg, *, max_rows: int = ..., as_arrow: Literal[False] = ...
) -> tuple[dict, ...]: ...
@overload
def read_rollout_jsonl(
    path: PathArg, *, max_rows: int = ..., as_arrow: Literal[True], prompt_kind: str = ...
) -> pa.Table: ...
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    as_arrow: bool = False,
    prompt_kind: str = "auto",
) -> Any:
    """Read a rollout JSONL file (``.jsonl`` or gzip-compressed) into normalised rows.

    ``as_arrow=True`` returns a ``pyarrow.Table`` instead, built without Python
    row objects (``agent_rollout.arrow.read_rollout_table``; ``prompt_kind`` as there).

    Same rules and texts as :func:`normalise_rollout_rows`, with the file and
    line in front (``rollouts.jsonl:2: row 1: answer: must be a str or None,
    got 'int'``). Blank lines are skipped; reading stops at row
    ``max_rows + 1``. ``"-"`` reads standard input.

    Raises:
        RolloutRowError: a row breaks a rule (``.index``, ``.path``, ``.line``).
        RolloutFileError: bad UTF-8, bad JSON (with the column), bad gzip, a line
            over ``MAX_LINE_BYTES``, no rows, more than ``max_rows`` rows.
        OSError: the file cannot be read.
    """
    if as_arrow:
        from .arrow import read_rollout_table

        return read_rollout_table(path, max_rows=max_rows, prompt_kind=prompt_kind)  # type: ignore[arg-type]
    text = _path_text(path, "path")
    max_rows = _engine.check_max_rows(max_rows)
    if _engine.implementation() == "python":
        return _python_read(text, max_rows)
    native = _engine._native
    try:
        rows = native.read_jsonl(
            text, max_rows, MAX_MESSAGE_DEPTH, MAX_JSON_DEPTH, int_digits_limit()
        )
    except native.NativeRowError as exc:
        raise from_native_file(exc, _source_name(text), None, max_rows) from None
    result: tuple[dict, ...] = rows
    return result


def normalise_rollout_file(
    src: PathArg,
    dst: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    progress: Optional[Progress] = None,
    prompt_kind: str = "auto",
) -> NormaliseReport:
    """Normalise a rollout JSONL file into canonical JSONL, file to file.

    A ``dst`` whose name ends in ``.parquet`` gets zstd Parquet of the rollout
    Arrow schema instead (``agent_rollout.arrow.write_parquet``; needs pyarrow;
    ``prompt_kind`` as in ``rows_to_arrow``), with the same guarantees.

    The output has one row per line, ``prompt`` then ``answer``, compact
    separators, UTF-8 text (not ASCII-escaped) and floats that round-trip
    exactly. It is written beside ``dst`` and renamed over it only when every
    line passed: on any error ``dst`` is not created, or is left as it was.
    ``"-"`` means standard input / standard output (output to stdout is
    streamed and cannot be taken back). ``progress(rows, lines, bytes_in)`` is
    called now and then, if given. The Rust engine runs without holding the
    interpreter, on all cores, in memory that does not grow with the file.

    Raises the same errors as :func:`read_rollout_jsonl`, and ``OSError`` when
    ``dst`` cannot be written.
    """
    src_text = _path_text(src, "src")
    dst_text = _path_text(dst, "dst")
    max_rows = _engine.check_max_rows(max_rows)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    if dst_text == "-":
        sys.stdout.flush()  # what Python already buffered goes out first
    engine = _engine.implementation()
    start = time.perf_counter()
    if dst_text.lower().endswith(".parquet"):
        from .arrow import write_parquet

        rows, lines, blank, dropped, bytes_in, bytes_out = write_parquet(
            src_text, dst_text, max_rows, progress, prompt_kind
        )
    elif engine == "python":
        rows, lines, blank, dropped, bytes_in, bytes_out = _python_normalise(
            src_text, dst_text, max_rows, progress
        )
    else:
        native = _engine._native
        try:
            rows, lines, blank, dropped, bytes_in, bytes_out = native.normalise_file(
                src_text,
                dst_text,
                max_rows,
                MAX_MESSAGE_DEPTH,
                MAX_JSON_DEPTH,
                int_digits_limit(),
                progress,
            )
        except native.NativeRowError as exc:
            raise from_native_file(exc, _source_name(src_text), dst_text, max_rows) from None
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


__all__ = ["NormaliseReport", "RolloutFileError", "normalise_rollout_file", "read_rollout_jsonl"]
