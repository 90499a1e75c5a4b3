"""Every exception class users catch, and every text of the row and file rules.

Both engines report a broken rule as a *code* plus facts (row index, path
segments, a type name or value, a file line). This module turns those facts
into the exception users see; neither engine formats a message itself. The
Rust engine's codes are one enum (``rust/errors.rs``), exported as
``agent_rollout._native.CODES`` and ``JSON_REASONS``; a test holds them equal to
the tables here.

The other errors of the package live here too, so that a caller finds every
class it may catch in one place: ``ConfigError`` (with its ``ConfigIssue``
records), ``GymRowError``, ``GymLiveError``, ``NonFiniteReward``,
``PromptFileError`` and ``Terminated``.
"""

from __future__ import annotations

import os
import re
import reprlib
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from agent_rollout._exceptions import RolloutRuntimeError, RolloutValueError

from ._limits import (
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    MAX_MESSAGE_DEPTH,
    MAX_ROWS_LIMIT,
    int_digits_limit,
)

# Text as output shows it lives in _printable; the package's modules import it from here.
from ._printable import error_text as error_text
from ._printable import printable as printable
from ._printable import printable_json as printable_json
from ._printable import printable_lines as printable_lines
from ._printable import shown_path as shown_path

JSON_LIKE = "str, int, float, bool, None, list, dict with str keys"

# The knobs messages name, as a caller of the library sets them; the command line
# says them its own way (CLI_HINTS, for_command_line).
_KIND_HINT = "prompt_kind='messages'"
_ROWS_HINT = "max_rows= or --max-rows"
_BYTES_HINT = "max_bytes= or --max-bytes"

CLI_HINTS: dict[str, str] = {
    _KIND_HINT: "--prompt-kind messages",
    _ROWS_HINT: "--max-rows N",
    _BYTES_HINT: "--max-bytes B",
}
"""Each knob a message names for a caller of the library, and how the command
line names it (``for_command_line``)."""


def for_command_line(text: str) -> str:
    """A message as the command line shows it: the knobs it names as flags
    (``--max-rows N`` where the library says ``max_rows=``)."""
    for library, flag in CLI_HINTS.items():
        text = text.replace(library, flag)
    return text


# Messages about one row. {fact} is a type name, or a value's repr for
# float_not_finite. The row index, file line and path are added in front.
ROW_MESSAGES: dict[str, str] = {
    "row_not_mapping": "a rollout row must be a mapping with a 'prompt' key, got {fact!r}",
    "prompt_missing": "missing (every row needs a 'prompt': a str or a list of chat messages)",
    "prompt_type": "must be a str or a list of chat messages, got {fact!r}",
    "prompt_empty": "empty prompt (a non-empty str or at least one message is required)",
    "message_not_mapping": "a chat message must be a mapping with str keys, got {fact!r}",
    "key_not_str": "keys must be str, got a key of type {fact!r}",
    "role_missing": "a chat message needs a 'role' (a non-empty str)",
    "role_type": "must be a non-empty str, got {fact!r}",
    "role_empty": "must be a non-empty str, got ''",
    "value_type": "unsupported value of type {fact!r} (message values must be JSON-like: "
    + JSON_LIKE
    + ")",
    "float_not_finite": "non-finite float {fact} (message values must be JSON-like: "
    "NaN and infinities are not)",
    "too_deep": f"nested deeper than {MAX_MESSAGE_DEPTH} levels "
    "(MAX_MESSAGE_DEPTH), or a container that holds itself",
    "answer_type": "must be a str or None, got {fact!r}",
    # Arrow tables hold one prompt kind (agent_rollout.arrow); fact says why.
    "prompt_not_text": "a list of chat messages in a table of str prompts ({fact}); "
    + _KIND_HINT
    + " makes every prompt a message list",
    "prompt_not_messages": "a str in a table of chat-message prompts ({fact}); "
    + _KIND_HINT
    + " wraps each str prompt as one user message",
    "not_utf8": "a str with a lone surrogate (U+D800..U+DFFF) cannot be stored in Arrow or "
    "Parquet, whose text is UTF-8",
    # fact: the digit limit in force (sys.get_int_max_str_digits()).
    "int_too_long": "an int of more than {fact} digits cannot be stored in Arrow or Parquet "
    "(past int64 it is stored as JSON text, and Python writes no int that long as text: "
    "sys.set_int_max_str_digits)",
    # Python only. Reading a table back: JSON text (an arrow.json field) that does not
    # parse, fact the reason. A value the schema of agent_rollout.ray.normalise_batch
    # has no place for, fact its Arrow type.
    "json_text": "must be null or JSON text: {fact}",
    # A str of a table that is not UTF-8 (read by another writer), fact the 1-based byte.
    "text_utf8": "invalid UTF-8 at byte {fact} of the text",
    "schema_mismatch": "a value of Arrow type {fact} has no place in the schema every block "
    "must share (give normalise_batch a schema= that holds it)",
}

# Messages about the whole input: raised as plain ValueError.
INPUT_MESSAGES: dict[str, str] = {
    "input_not_iterable": "rollout backend {backend!r} must return an iterable of row "
    "mappings, got {fact}",
    "input_is_mapping": "rollout backend {backend!r} must return an iterable of row "
    "mappings, got a single {fact} (wrap one row in a list)",
    "too_many_rows": "rollout backend {backend!r} produced more than {rows} (max_rows={max_rows}; "
    "raise the limit with " + _ROWS_HINT + ")",
    "no_rows": "rollout backend {backend!r} produced no rows; refusing to train on an "
    "empty prompt set",
}

PYTHON_ONLY_CODES = frozenset({"json_text", "text_utf8", "schema_mismatch"})
"""Row codes only the Python side raises (reading an Arrow table back, fitting a schema)."""
IO_CODES = ("io_read", "io_write")
"""Codes the Rust engine raises for an ``OSError`` (the fact is the errno)."""

PathSegment = Union[int, str]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RolloutRowError(RolloutValueError):
    """A rollout row broke a rule.

    ``index`` is the row's position in the input (0-based), ``path`` where in
    the row (``"prompt[1].content"``; ``""`` for the row itself), ``code`` the
    rule (a key of ``agent_rollout._errors.ROW_MESSAGES``) and ``line`` the
    1-based file line when the row came from a file.
    """

    def __init__(
        self,
        message: str,
        *,
        index: int,
        path: str,
        code: str,
        line: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.index = index
        self.path = path
        self.code = code
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only facts: pickle (a Ray worker's error, multiprocessing) rebuilds it whole.
        facts = {"index": self.index, "path": self.path, "code": self.code, "line": self.line}
        return (_rebuild, (type(self), (str(self),), facts))


def _rebuild(cls: type, args: tuple[Any, ...], facts: dict[str, Any]) -> Any:
    """An exception of ``cls`` from its arguments and keyword facts (the unpickler calls it)."""
    return cls(*args, **facts)


def _quote_key(key: str) -> str:
    out = ['"']
    for ch in key:
        point = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif point < 0x20 or 0xD800 <= point <= 0xDFFF:
            out.append(f"\\u{point:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_path(segments: tuple[PathSegment, ...]) -> str:
    """``("prompt", 1, "content")`` -> ``prompt[1].content``; odd keys quoted."""
    parts: list[str] = []
    for seg in segments:
        if isinstance(seg, int):
            parts.append(f"[{seg}]")
        elif _IDENTIFIER.fullmatch(seg):
            parts.append(f".{seg}" if parts else seg)
        else:
            parts.append(f"[{_quote_key(seg)}]")
    return "".join(parts)


def row_error(
    code: str,
    index: int,
    segments: tuple[PathSegment, ...] = (),
    fact: Optional[str] = None,
    *,
    line: Optional[int] = None,
    source: Optional[str] = None,
) -> RolloutRowError:
    """Build the ``RolloutRowError`` for a broken row rule."""
    path = format_path(segments)
    body = ROW_MESSAGES[code].format(fact=fact)
    where = f"row {index}: {path}: " if path else f"row {index}: "
    prefix = f"{shown_path(source)}:{line}: " if source is not None and line is not None else ""
    return RolloutRowError(prefix + where + body, index=index, path=path, code=code, line=line)


def input_error(code: str, backend: str, max_rows: int, fact: Optional[str] = None) -> ValueError:
    """Build the ``ValueError`` for a problem with the whole input."""
    return RolloutValueError(
        INPUT_MESSAGES[code].format(
            backend=backend, max_rows=max_rows, rows=plural(max_rows, "row"), fact=fact
        )
    )


def from_native(exc: Any, backend: str, max_rows: int) -> ValueError:
    """Turn the Rust engine's ``NativeRowError`` into the user-facing error."""
    code, index, segments, fact, line, _column = exc.args
    if index is None:
        return input_error(code, backend, max_rows, fact)
    return row_error(code, index, segments, fact, line=line)


# ---- rollout files -----------------------------------------------------------------------

# Why a JSONL line is not valid JSON: the reason codes of both engines' parsers.
JSON_REASONS: dict[str, str] = {
    "expected_value": "expected a JSON value",
    "expected_array_sep": "expected ',' or ']' after an array item",
    "expected_object_sep": "expected ',' or '}' after an object member",
    "expected_colon": "expected ':' after an object key",
    "expected_key": "expected a string key in double quotes",
    "unterminated_string": "the line ends inside a string",
    "bad_escape": "invalid escape in string",
    "bad_unicode_escape": "invalid \\u escape (four hex digits expected)",
    "lone_surrogate": "lone surrogate in \\u escape",
    "control_character": "control character in string (must be escaped)",
    "bad_number": "invalid number",
    "long_integer": "integer has more than {int_digits} digits (sys.get_int_max_str_digits())",
    "nan_infinity": "NaN and Infinity are not JSON",
    "trailing_data": "unexpected data after the JSON value",
    "too_deep": f"nested deeper than {MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)",
    "byte_order_mark": "the line starts with a UTF-8 byte order mark (BOM); "
    "write the file without one",
    # A line cut short: it ends before what it opened is closed (at its end, in place of
    # what was expected next; a string's reason points at where the string starts).
    "ends_in_object": "the line ends inside an object",
    "ends_in_array": "the line ends inside an array",
}

FILE_MESSAGES: dict[str, str] = {
    "json_syntax": "invalid JSON: {reason}",
    "utf8": "invalid UTF-8 at byte {fact} of the line",
    "line_too_long": f"line longer than {MAX_LINE_BYTES} bytes (MAX_LINE_BYTES)",
    "gzip": "not a valid gzip file (corrupt or truncated)",
    "file_too_many_rows": "more than {rows} (max_rows={max_rows}; raise the limit with "
    + _ROWS_HINT
    + ")",
    "file_too_large": "more than {bytes} after gzip decompression, blank lines included "
    "(max_bytes={max_bytes}; raise the limit with " + _BYTES_HINT + ")",
    "file_no_rows": "no rows (the file is empty or blank); refusing to train on an empty "
    "prompt set",
}

SKIP_INTO_SOURCE = (
    "{path}: the output is the input file, and skipping bad rows there loses them; "
    "nothing written (name another output)"
)
"""``normalise_rollout_file(src, src, on_bad="skip")`` (``normalise IN -o IN --skip-bad``):
refused. In place without skipping stays allowed: every row passes, or nothing is written."""

PARQUET_MESSAGES: dict[str, str] = {
    "unreadable": "not a readable Parquet file ({reason})",
    "file_too_large": "its columns read hold more than {bytes} uncompressed, as its footer "
    "counts them (max_bytes={max_bytes}; raise the limit with " + _BYTES_HINT + ")",
}
"""A Parquet file's faults as a whole, after its name (``agent-rollout stats``; pyarrow
reads Parquet, never the Rust engine, so these codes are not the engine's)."""

ROWS_AT_THE_MOST = "more than {rows} (max_rows={max_rows}, the most allowed: split the file)"
"""``file_too_many_rows`` when ``max_rows`` is already ``MAX_ROWS_LIMIT`` (the file
commands' default): no knob raises it, so the message names none."""


class RolloutFileError(RolloutValueError):
    """A rollout file cannot be used: bad JSON, bad UTF-8, bad gzip, no rows, too many.

    ``source`` names the file (``<stdin>`` for standard input; the message shows it
    with ``shown_path``), ``line`` and
    ``column`` are 1-based where they apply, ``code`` is the rule (a key of
    ``agent_rollout._errors.FILE_MESSAGES``).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        code: str,
        line: Optional[int] = None,
        column: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.code = code
        self.line = line
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        facts = {"source": self.source, "code": self.code, "line": self.line, "column": self.column}
        return (_rebuild, (type(self), (str(self),), facts))


class RolloutBadRowsError(RolloutFileError):
    """Rows of a rollout file are bad, and the read went on to count them all
    (``normalise_rollout_file(on_bad="report")``, or ``"skip"`` with no good row).

    ``errors`` holds the first ones (``BAD_ROWS_KEPT``) as a read that stops
    raises each (``RolloutRowError`` or ``RolloutFileError``, with file:line),
    in line order; ``bad_rows`` counts them all, ``rows`` the rows of the file
    (good and bad). ``stopped`` is the fault of the input as a whole that ended
    the read early (a line over ``MAX_LINE_BYTES``, the row cap, bad gzip,
    ``max_bytes``; ``rows`` is then None), else None. The message lists them,
    one a line, then ``bad_rows_summary``'s line.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        errors: tuple[ValueError, ...],
        bad_rows: int,
        rows: Optional[int],
        stopped: Optional[RolloutFileError] = None,
    ) -> None:
        line = getattr(errors[0], "line", None) if errors else None
        super().__init__(message, source=source, code="bad_rows", line=line)
        self.errors = errors
        self.bad_rows = bad_rows
        self.rows = rows
        self.stopped = stopped

    def __reduce__(self) -> tuple[Any, ...]:
        facts = {
            "source": self.source,
            "errors": self.errors,
            "bad_rows": self.bad_rows,
            "rows": self.rows,
            "stopped": self.stopped,
        }
        return (_rebuild, (type(self), (str(self),), facts))


BAD_ROW_KINDS: dict[str, str] = {
    "json_syntax": "invalid JSON",
    "utf8": "invalid UTF-8",
    "row_not_mapping": "not a mapping",
    "prompt_missing": "prompt missing",
    "prompt_type": "prompt of a wrong type",
    "prompt_empty": "empty prompt",
    "message_not_mapping": "message not a mapping",
    "key_not_str": "key not a str",
    "role_missing": "role missing",
    "role_type": "role of a wrong type",
    "role_empty": "empty role",
    "value_type": "unsupported value",
    "float_not_finite": "non-finite float",
    "too_deep": "nested too deep",
    "answer_type": "answer of a wrong type",
    "prompt_not_text": "message prompt in a text table",
    "prompt_not_messages": "str prompt in a message table",
    "not_utf8": "lone surrogate",
    "int_too_long": "int too long for Arrow",
    "json_text": "bad JSON text",
    "text_utf8": "text not UTF-8",
    "schema_mismatch": "value outside the schema",
}
"""What the summary of a read past bad rows calls each kind of bad row, by its code
(``3 bad rows of 4 (invalid JSON: 2, prompt missing: 1)``)."""


def bad_row_kinds(errors: tuple[ValueError, ...]) -> str:
    """``invalid JSON: 2, prompt missing: 1``: the errors counted by kind
    (``BAD_ROW_KINDS``), the most common first, then in the order first met (as ``run``
    counts dropped prompts by reason)."""
    counts: dict[str, int] = {}
    for error in errors:
        code = str(getattr(error, "code", "") or "")
        kind = BAD_ROW_KINDS.get(code, code.replace("_", " ") or type(error).__name__)
        counts[kind] = counts.get(kind, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])  # stable: first met first
    return ", ".join(f"{kind}: {count:,}" for kind, count in ranked)


def bad_rows_summary(
    source: str, bad_rows: int, rows: Optional[int], errors: tuple[ValueError, ...]
) -> str:
    """``rollouts.jsonl: 3 bad rows of 1,000 (invalid JSON: 2, prompt missing: 1)``, the
    ``errors`` listed counted by kind (``bad_row_kinds``; when only the first are listed,
    those: ``(the first 20 listed: ...)``); ``rows`` None: the read stopped early, at
    the error listed last."""
    text = f"{shown_path(source)}: {plural(bad_rows, 'bad row')}"
    if rows is not None:
        text += f" of {rows:,}"
    kinds = bad_row_kinds(errors)
    if kinds:
        text += (
            f" (the first {len(errors):,} listed: {kinds})"
            if len(errors) < bad_rows
            else f" ({kinds})"
        )
    if rows is None:
        text += ", then the error above stopped the read"
    return text


def bad_rows_error(
    source: str,
    errors: tuple[ValueError, ...],
    bad_rows: int,
    rows: Optional[int],
    stopped: Optional[RolloutFileError] = None,
) -> RolloutBadRowsError:
    """The ``RolloutBadRowsError`` of a read that went on past ``bad_rows`` bad rows
    (``rows``: of how many; None when ``stopped`` ended it early)."""
    lines = [str(error) for error in errors]
    if stopped is not None:
        lines.append(str(stopped))
    lines.append(bad_rows_summary(source, bad_rows, rows, errors))
    return RolloutBadRowsError(
        "\n".join(lines),
        source=source,
        errors=errors,
        bad_rows=bad_rows,
        rows=rows,
        stopped=stopped,
    )


def output_name_error(dest: str) -> RolloutValueError:
    """An output whose name says no format ``output_format`` knows."""
    return RolloutValueError(
        f"{shown_path(dest)}: the output's name must say its format: end it in .jsonl, "
        ".jsonl.gz (gzip-compressed JSONL) or .parquet ('-': JSONL on standard output)"
    )


def plural(count: int, noun: str) -> str:
    """``1 row``, ``2 rows``, ``1,000 rows``: the count with thousands separators."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def file_error(
    code: str,
    source: str,
    max_rows: int,
    *,
    max_bytes: Optional[int] = None,
    fact: Optional[str] = None,
    line: Optional[int] = None,
    column: Optional[int] = None,
) -> RolloutFileError:
    """Build the ``RolloutFileError`` for a problem with a rollout file."""
    reason = None
    if code == "json_syntax":
        reason = JSON_REASONS.get(fact or "", fact or "")
        reason = reason.replace("{int_digits}", str(int_digits_limit()))
    template = FILE_MESSAGES[code]
    if code == "file_too_many_rows" and max_rows >= MAX_ROWS_LIMIT:
        template = ROWS_AT_THE_MOST
    body = template.format(
        fact=fact,
        reason=reason,
        max_rows=max_rows,
        rows=plural(max_rows, "row"),
        max_bytes=max_bytes,
        bytes=plural(max_bytes or 0, "byte"),
    )
    where = shown_path(source)
    if line is not None:
        where += f":{line}"
        if column is not None:
            where += f":{column}"
    return RolloutFileError(f"{where}: {body}", source=source, code=code, line=line, column=column)


def os_error(errno_text: str, filename: str) -> OSError:
    """The OSError Python's own ``open`` would raise, from an errno the Rust side saw."""
    try:
        number = int(errno_text)
    except ValueError:
        return OSError(f"{shown_path(filename)}: {errno_text}")
    return OSError(number, os.strerror(number), filename)


def from_native_file(
    exc: Any, source: str, dest: Optional[str], max_rows: int, max_bytes: Optional[int] = None
) -> Exception:
    """Turn a ``NativeRowError`` raised while handling a file into the user-facing error."""
    code, index, segments, fact, line, column = exc.args
    if index is not None:
        return row_error(code, index, segments, fact, line=line, source=source)
    if code == "io_read":
        return os_error(fact, source)
    if code == "io_write":
        return os_error(fact, dest or "<stdout>")
    return file_error(
        code, source, max_rows, max_bytes=max_bytes, fact=fact, line=line, column=column
    )


# ---- edits of a user's file (``check --fix``) --------------------------------------------------

EDIT_MESSAGES: dict[str, str] = {
    "file_changed": "{path}: changed since it was read; not written",
    "changed": "not fixed: the file changed while it was being fixed; run again",
    "unwritable": "not fixed: cannot write file: {why}",
}
"""``file_changed``: ``_edit.FileChanged``, an edit refused because the file is no
longer what was read (``path`` shown with ``shown_path``). The others: why ``check
--fix`` left a file as it was, keyed by the kind of the issue that says so
(``cli._fix.CHANGED``, ``cli._fix.UNWRITABLE``; ``why``: the system's reason)."""


WALK_MESSAGES: dict[str, str] = {
    "empty": "no .yaml, .yml, .json or .toml file in {folder}",
    "not_applied": "note: {path}: ignore rules not applied (with the others above them, "
    "over {limit} of wildcard patterns); the files they match are checked",
}
"""What ``check DIR`` says of a folder after its prefix: none of its files is a config,
or an ignore file the walk did not apply (``cli._walk.Found.not_applied``)."""


# ---- config files ----------------------------------------------------------------------------

STRICT_WARNING = "error (strict): "
"""The word of a warning's line when it fails the run (``check --strict``, or ``strict =
true`` in ``pyproject.toml``): an error by the run's rule, a warning by its own (``--format
json`` keeps ``"severity": "warning"`` and says ``"fails": true``)."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in one config file, with its 1-based position."""

    path: str
    line: int
    col: int
    location: str
    """Dotted key path such as ``training.rollout_backend`` (list items as
    ``datasets[1].path``); ``""`` for the file."""
    message: str
    kind: str
    """``incomplete``, ``coerced`` or ``yaml_version`` (warnings), ``unreadable`` (the file could
    not be read at all: missing, no permission, a directory or another non-regular file),
    ``file``, ``syntax``, ``duplicate`` (a warning outside our section), ``structure``,
    ``unknown_key``, ``missing``, ``cross_field``, ``value``, ``resolve``, or from
    ``check --fix`` ``changed`` and ``unwritable`` (a file left unfixed)."""
    severity: str = "error"
    """``error`` (the config cannot be right) or ``warning`` (it is incomplete for the
    built-in adapter, a value was read otherwise than written, or the trainer's part of
    the file has a key twice)."""
    end_line: Optional[int] = field(default=None, compare=False)
    end_col: Optional[int] = field(default=None, compare=False)
    """Where the key or value at fault ends (exclusive, 1-based; ``check`` sets it);
    ``None``: not known, the issue is a point. Read from the text after the issue is
    placed, it is left out of comparisons: an issue is the same wherever it was found."""

    def format(self, strict: bool = False) -> str:
        """``path:line:col: [warning: ]location: message``: one line, made ``printable``.

        ``strict``: a warning fails the run (``check --strict``), and its line says so,
        ``error (strict): `` where ``warning: `` would be (``cli._lines.MESSAGE_SHAPES``)."""
        where = f"{self.location}: " if self.location else ""
        return printable(
            f"{self.path}:{self.line}:{self.col}: {self.level(strict)}{where}{self.message}"
        )

    def level(self, strict: bool = False) -> str:
        """The word a line puts before the location: ``""`` for an error, ``"warning: "``,
        or ``"error (strict): "`` for a warning that fails the run."""
        if self.severity != "warning":
            return ""
        return STRICT_WARNING if strict else "warning: "

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "location": self.location,
            "message": self.message,
            "kind": self.kind,
            "severity": self.severity,
            "end_line": self.line if self.end_line is None else self.end_line,
            "end_col": self.col if self.end_col is None else self.end_col,
        }


class ConfigError(RolloutValueError):
    """A config file is invalid; ``issues`` lists every problem found, in order."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = sorted(issues, key=lambda issue: (issue.path, issue.line, issue.col))
        super().__init__("\n".join(issue.format() for issue in self.issues))


class _Shown(reprlib.Repr):
    """``repr`` for messages: short, and safe on any value a parser can build."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 60
        self.maxother = 60
        self.maxlist = self.maxtuple = 6
        self.maxdict = 4

    def repr_int(self, x: int, level: int) -> str:
        # repr() of an int past the interpreter's digit limit raises, and a
        # hex literal of any length builds one: describe it instead.
        if x.bit_length() > 200:
            return f"<int of {x.bit_length()} bits>"
        return repr(x)


_SHOWN = _Shown()


def shown(value: object) -> str:
    """A bounded ``repr`` of a value read from a file, for error messages."""
    try:
        return _SHOWN.repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def loc_key(key: str) -> str:
    """A str key as pydantic's errors hold it in ``loc``: its Rust core cannot hold a
    lone surrogate (U+D800..U+DFFF), which it writes as one U+FFFD per byte of the
    key's UTF-8 form; any other key is itself."""
    return key.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# ---- backends and the command line -----------------------------------------------------------


class NonFiniteReward(RolloutValueError):
    """A rollout's reward is NaN or infinite; the message names the prompt and rollout."""


class GymRowError(RolloutValueError):
    """A NeMo Gym row that cannot be mapped; ``field`` is the dotted path at fault."""

    def __init__(self, where: str, field: str, why: str) -> None:
        self.where = where
        self.field = field
        self.why = why
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{field}: {why}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.where, self.field, self.why), {}))


class GymLiveError(RolloutRuntimeError):
    """NeMo Gym's servers failed to start, answer or collect (the message has a log tail)."""


class PromptFileError(RolloutValueError):
    """A seed prompt file cannot be used; the message starts with ``file:line``."""


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived while output was being written.

    Raised from the signal handler the file writers install for the time they
    write (``agent_rollout._files.signals_end_cleanly``), so that the temporary
    file is removed on the way out. A ``SystemExit`` whose status is 128 + the
    signal number: uncaught, the process ends with the status a shell shows
    for a process that signal killed.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def signal_name(self) -> str:
        import signal

        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"
