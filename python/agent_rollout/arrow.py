"""Rollout rows as Arrow: one schema, lossless, in the shapes trainers read.

Needs ``pyarrow`` (``pip install 'agent-rollout[arrow]'``), so the package
imports this module only when it is asked for (``agent_rollout.rows_to_arrow``
and friends, Parquet output of ``normalise_rollout_file``, ``as_arrow=True``,
``agent_rollout.ray``). The schema is written down once, here and in
``docs/arrow.md``:

* ``prompt`` is either a ``string`` column (TRL's *standard* format) or a
  ``list<struct<role, content, extra_json>>`` column (TRL's *conversational*
  format). One table holds one kind: the first row decides, unless
  ``prompt_kind`` says which; a row of the other kind is refused, naming it.
  ``prompt_kind="messages"`` makes a mixed input uniform by turning each str
  prompt into ``[{"role": "user", "content": prompt}]``.
* In a message, ``role`` is the role (never null) and ``content`` the content
  when it is a str. Everything else the message holds (``tool_calls``,
  ``name``, a content that is a list of parts or ``None``, any JSON-like
  value) travels as the compact JSON text of an object in ``extra_json``
  (null when there is nothing else), so nothing is dropped.
* ``answer`` is a nullable ``string`` (null: the row has no answer).

``rows_to_arrow`` normalises on the way (same rules, same errors as
``normalise_rollout_rows``); ``arrow_to_rows`` gives the rows back equal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Optional, cast

try:
    import pyarrow as pa
except ImportError as exc:  # pragma: no cover - exercised only without pyarrow
    raise ImportError(
        "agent_rollout.arrow needs pyarrow: pip install 'agent-rollout[arrow]'"
    ) from exc

from agent_rollout import _engine, _json, _jsonl, _rows
from agent_rollout._errors import from_native_file, row_error
from agent_rollout._files import (
    Destination,
    Output,
    naming,
    open_input,
    path_text,
    source_name,
)
from agent_rollout._jsonl import FileCounts, FileLimits, Progress, Tally
from agent_rollout._limits import (
    MAX_MESSAGE_DEPTH,
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    check_max_bytes,
    check_max_rows,
)
from agent_rollout.backends import validate_rollout_backend

if TYPE_CHECKING:
    import datasets

PromptKind = Literal["auto", "text", "messages"]
PROMPT_KINDS: tuple[str, ...] = ("auto", "text", "messages")

JSON_FIELD = "extra_json"
"""The message field that carries, as JSON text, what has no typed column."""

SCHEMA_VERSION = "1"

MESSAGE_TYPE = pa.struct(
    [
        pa.field("role", pa.string(), nullable=False),
        pa.field("content", pa.string()),
        pa.field(JSON_FIELD, pa.string()),
    ]
)
_META = {b"agent_rollout.schema": SCHEMA_VERSION.encode()}

TEXT_SCHEMA = pa.schema(
    [pa.field("prompt", pa.string(), nullable=False), pa.field("answer", pa.string())],
    metadata=_META,
)
"""Rows whose prompts are str: TRL's standard format."""

MESSAGES_SCHEMA = pa.schema(
    [
        pa.field(
            "prompt", pa.list_(pa.field("item", MESSAGE_TYPE, nullable=False)), nullable=False
        ),
        pa.field("answer", pa.string()),
    ],
    metadata=_META,
)
"""Rows whose prompts are chat messages: TRL's conversational format."""

BATCH_ROWS = 65536
"""Rows per record batch built in memory (and per Parquet row group at most)."""

_BATCH_BYTES = 1 << 28
"""A batch is closed early once its text passes this many bytes (offsets are 32-bit)."""


def arrow_schema(prompt_kind: Literal["text", "messages"]) -> pa.Schema:
    """The Arrow schema of a rollout table whose prompts are of ``prompt_kind``."""
    if prompt_kind == "text":
        return TEXT_SCHEMA
    if prompt_kind == "messages":
        return MESSAGES_SCHEMA
    raise ValueError(f"prompt_kind must be 'text' or 'messages', got {prompt_kind!r}")


def check_prompt_kind(prompt_kind: object) -> PromptKind:
    if prompt_kind not in PROMPT_KINDS:
        raise ValueError(
            f"prompt_kind must be one of {', '.join(PROMPT_KINDS)}; got {prompt_kind!r}"
        )
    return cast(PromptKind, prompt_kind)


# ---- building (the pure-Python twin) -------------------------------------------------------


class KindCheck:
    """Tracks the table's prompt kind; names the first row of the other kind."""

    __slots__ = ("kind", "why", "wrap")

    def __init__(self, prompt_kind: str) -> None:
        self.kind: Optional[str] = None if prompt_kind == "auto" else prompt_kind
        self.why = f"prompt_kind={prompt_kind!r}"
        self.wrap = prompt_kind == "messages"  # str prompts become one user message

    def check(self, is_text: bool, index: int, line: Optional[int], source: Optional[str]) -> None:
        kind = "text" if is_text else "messages"
        if self.kind is None:
            self.kind = kind
            self.why = f"set by row {index}"
            return
        if kind == self.kind or (is_text and self.wrap):
            return
        code = "prompt_not_text" if self.kind == "text" else "prompt_not_messages"
        raise row_error(code, index, ("prompt",), self.why, line=line, source=source)


class TableBuilder:
    """Collects normalised rows into record batches of one schema (the twin)."""

    def __init__(self, prompt_kind: str) -> None:
        self.kinds = KindCheck(prompt_kind)
        self.batches: list[pa.RecordBatch] = []
        self.rows: list[dict] = []  # the rows of the batch being built, for error reports
        self.start = 0  # index of its first row
        self._reset()

    def _reset(self) -> None:
        self.prompts: list[Any] = []
        self.offsets: list[int] = [0]
        self.roles: list[str] = []
        self.contents: list[Optional[str]] = []
        self.extras: list[Optional[str]] = []
        self.answers: list[Optional[str]] = []
        self.size = 0

    def add(
        self, row: dict, index: int, line: Optional[int] = None, source: Optional[str] = None
    ) -> None:
        prompt = row["prompt"]
        is_text = type(prompt) is str
        kind = self.kinds.kind
        if kind is not None and (kind == "text") != is_text and not (is_text and self.kinds.wrap):
            self.flush()  # about to refuse this row: an earlier row Arrow cannot hold comes first
        self.kinds.check(is_text, index, line, source)
        if not self.answers:
            self.start = index
        self.rows.append(row)
        if self.kinds.kind == "text":
            self.prompts.append(prompt)
            self.size += len(prompt)
        elif is_text:
            self.roles.append("user")
            self.contents.append(prompt)
            self.extras.append(None)
            self.offsets.append(len(self.roles))
            self.size += len(prompt)
        else:
            for message in prompt:
                self._message(message)
            self.offsets.append(len(self.roles))
        answer = row.get("answer")
        self.answers.append(answer)
        if answer is not None:
            self.size += len(answer)
        if len(self.answers) >= BATCH_ROWS or self.size >= _BATCH_BYTES:
            self.flush()

    def _message(self, message: dict) -> None:
        content = message.get("content")
        rest = {
            key: value
            for key, value in message.items()
            if key != "role" and not (key == "content" and type(value) is str)
        }
        self.roles.append(message["role"])
        if type(content) is str:
            self.contents.append(content)
            self.size += len(content)
        else:
            self.contents.append(None)
        if rest:
            text = _json.dumps(rest)  # as the canonical JSONL writer (and Rust) write it
            self.extras.append(text)
            self.size += len(text)
        else:
            self.extras.append(None)

    def flush(self) -> Optional[pa.RecordBatch]:
        """Close the batch being built (if it has rows); return it."""
        if not self.answers:
            return None
        try:
            batch = self._build()
        except UnicodeEncodeError:
            raise not_utf8_error(self.rows, self.start) from None
        self.batches.append(batch)
        self.rows = []
        self._reset()
        return batch

    def _build(self) -> pa.RecordBatch:
        answer = pa.array(self.answers, type=pa.string())
        if self.kinds.kind == "text":
            batch = pa.RecordBatch.from_arrays(
                [pa.array(self.prompts, type=pa.string()), answer], schema=TEXT_SCHEMA
            )
        else:
            messages = pa.StructArray.from_arrays(
                [
                    pa.array(self.roles, type=pa.string()),
                    pa.array(self.contents, type=pa.string()),
                    pa.array(self.extras, type=pa.string()),
                ],
                fields=list(MESSAGE_TYPE),
            )
            prompt = pa.ListArray.from_arrays(
                pa.array(self.offsets, type=pa.int32()),
                messages,
                type=MESSAGES_SCHEMA.field("prompt").type,
            )
            batch = pa.RecordBatch.from_arrays([prompt, answer], schema=MESSAGES_SCHEMA)
        return batch

    def schema(self) -> pa.Schema:
        return MESSAGES_SCHEMA if self.kinds.kind == "messages" else TEXT_SCHEMA


def _surrogate_path(value: Any, path: tuple) -> Optional[tuple]:
    """The path of the first str (key or value) in ``value`` that is not valid UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, list):
        for position, item in enumerate(value):
            found = _surrogate_path(item, (*path, position))
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _surrogate_path(key, (*path, key))
            if found is None:
                found = _surrogate_path(item, (*path, key))
            if found is not None:
                return found
    return None


def not_utf8_error(rows: Any, start: int) -> Exception:
    """The error for the first row from ``rows[0]`` (row ``start``) Arrow cannot hold."""
    for offset, row in enumerate(rows):
        path = _surrogate_path(row, ())
        if path is not None:
            return row_error("not_utf8", start + offset, path)
    return ValueError("a str could not be encoded as UTF-8")  # pragma: no cover - a guard


# ---- building from the Rust engine's buffers -----------------------------------------------


def _strings(count: int, column: Any) -> pa.Array:
    validity = column.validity
    buffers = [
        None if validity is None else pa.py_buffer(validity),
        pa.py_buffer(column.offsets),
        pa.py_buffer(column.data),
    ]
    return pa.Array.from_buffers(pa.string(), count, buffers, null_count=column.null_count)


def batch_from_buffers(parts: Any) -> pa.RecordBatch:
    """Assemble the record batch the Rust engine laid out (no copy of the buffers).

    ``parts`` is a ``_native.ArrowBatch``: ``kind`` ``"text"`` or
    ``"messages"``, ``rows``, the message-list offsets and message count, and
    the string columns (``_native.StringColumn``: validity, offsets, data,
    null count) ``first`` (the prompt, or each message's role), ``content``
    and ``extra`` (None for text) and ``answer``.
    """
    rows = parts.rows
    answer = _strings(rows, parts.answer)
    if parts.kind == "text":
        return pa.RecordBatch.from_arrays([_strings(rows, parts.first), answer], schema=TEXT_SCHEMA)
    messages = parts.messages
    struct = pa.StructArray.from_arrays(
        [
            _strings(messages, parts.first),
            _strings(messages, parts.content),
            _strings(messages, parts.extra),
        ],
        fields=list(MESSAGE_TYPE),
    )
    prompt = pa.Array.from_buffers(
        MESSAGES_SCHEMA.field("prompt").type,
        rows,
        [None, pa.py_buffer(parts.list_offsets)],
        children=[struct],
    )
    return pa.RecordBatch.from_arrays([prompt, answer], schema=MESSAGES_SCHEMA)


_KIND_CODES = {"auto": 0, "text": 1, "messages": 2}


def _native_batches(
    rows: Any, backend: str, max_rows: int, prompt_kind: str
) -> list[pa.RecordBatch]:
    native = _engine.native
    code = _KIND_CODES[prompt_kind]
    # First pass: rows already in normalised form are built straight from the
    # input; anything else (None) goes through the row rules first.
    parts = native.rows_to_arrow(
        rows, code, BATCH_ROWS, _BATCH_BYTES, max_rows, MAX_MESSAGE_DEPTH, True
    )
    if parts is None:
        normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
        try:
            parts = native.rows_to_arrow(
                normalised, code, BATCH_ROWS, _BATCH_BYTES, max_rows, MAX_MESSAGE_DEPTH, False
            )
        except native.NativeRowError as exc:
            code_name, index, segments, fact, _line, _column = exc.args
            if code_name == "not_utf8":
                raise not_utf8_error(normalised[index:], index) from None
            raise row_error(code_name, index, segments, fact) from None
    return [batch_from_buffers(part) for part in parts]


# ---- public API -------------------------------------------------------------------------


def rows_to_arrow(
    rows: Any,
    backend: str = "openenv",
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
) -> pa.Table:
    """Normalise rollout rows and return them as a ``pyarrow.Table`` of the rollout schema.

    Same rules and errors as :func:`agent_rollout.normalise_rollout_rows`. With
    ``prompt_kind="auto"`` the first row decides whether ``prompt`` is a string
    or a message-list column and a row of the other kind raises
    ``RolloutRowError`` naming it; ``"text"`` and ``"messages"`` say so up
    front, and ``"messages"`` wraps each str prompt as one user message.
    """
    prompt_kind = check_prompt_kind(prompt_kind)
    if _engine.implementation() == "rust":
        backend = validate_rollout_backend(backend)
        max_rows = check_max_rows(max_rows)
        batches = _native_batches(rows, backend, max_rows, prompt_kind)
        schema = batches[0].schema
    else:
        normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
        builder = TableBuilder(prompt_kind)
        for index, row in enumerate(normalised):
            builder.add(row, index)
        builder.flush()
        batches, schema = builder.batches, builder.schema()
    return pa.Table.from_batches(batches, schema=schema)


def to_dataset(
    rows: Any,
    backend: str = "openenv",
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
) -> datasets.Dataset:
    """:func:`rows_to_arrow`, as a Hugging Face ``datasets.Dataset`` (needs ``datasets``)."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError("to_dataset needs the 'datasets' package: pip install datasets") from exc
    table = rows_to_arrow(rows, backend, max_rows=max_rows, prompt_kind=prompt_kind)
    return datasets.Dataset(datasets.table.InMemoryTable(table))


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    inner = getattr(data, "data", None)  # datasets.Dataset keeps its table in .data.table
    if inner is not None and isinstance(getattr(inner, "table", None), pa.Table):
        return inner.table
    if hasattr(data, "__arrow_c_stream__"):  # polars, DuckDB, arro3, ... (the PyCapsule interface)
        return pa.table(data)
    raise TypeError(
        "arrow_to_rows needs a pyarrow Table or RecordBatch, a datasets.Dataset or an object "
        f"with __arrow_c_stream__, got {type(data).__name__}"
    )


def _decode_messages(messages: list, index: int) -> list:
    out = []
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            out.append(message)  # the row rules name it
            continue
        decoded = {key: value for key, value in message.items() if key != JSON_FIELD}
        if decoded.get("content", "") is None:
            del decoded["content"]  # null content: no str content (extra_json may hold one)
        extra = message.get(JSON_FIELD)
        if extra is not None:
            try:
                more = json.loads(extra) if isinstance(extra, str) else None
            except ValueError:
                more = None
            if not isinstance(more, dict):
                raise row_error(
                    "extra_json", index, ("prompt", position, JSON_FIELD), type(extra).__name__
                )
            decoded.update(more)
        out.append(decoded)
    return out


def iter_rows(data: Any) -> Iterator[dict]:
    """The rows of a rollout table, decoded (not yet checked)."""
    table = _as_table(data)
    if "prompt" not in table.column_names:
        raise ValueError(f"a rollout table needs a 'prompt' column; columns: {table.column_names}")
    has_answer = "answer" in table.column_names
    index = 0
    for batch in table.to_batches():
        prompts = batch.column("prompt").to_pylist()
        answers: Iterable[Any] = (
            batch.column("answer").to_pylist() if has_answer else [None] * len(prompts)
        )
        for prompt, answer in zip(prompts, answers, strict=True):
            if isinstance(prompt, list):
                prompt = _decode_messages(prompt, index)
            yield {"prompt": prompt} if answer is None else {"prompt": prompt, "answer": answer}
            index += 1


def arrow_to_rows(
    data: Any, backend: str = "openenv", *, max_rows: int = MAX_ROLLOUT_ROWS
) -> tuple[dict, ...]:
    """The rows of a rollout table (ours, or one of the same shape), checked by the row rules.

    Accepts a ``pyarrow.Table``/``RecordBatch``, a ``datasets.Dataset``, or
    anything that exports ``__arrow_c_stream__`` (a polars DataFrame...).
    ``arrow_to_rows(rows_to_arrow(rows)) == normalise_rollout_rows(rows)``.
    """
    return _engine.normalise_rollout_rows(iter_rows(data), backend, max_rows=max_rows)


__all__ = [
    "BATCH_ROWS",
    "JSON_FIELD",
    "MESSAGES_SCHEMA",
    "MESSAGE_TYPE",
    "PROMPT_KINDS",
    "ROW_GROUP_BYTES",
    "ROW_GROUP_ROWS",
    "TEXT_SCHEMA",
    "arrow_schema",
    "arrow_to_rows",
    "batch_from_buffers",
    "check_prompt_kind",
    "file_batches",
    "read_rollout_table",
    "rows_to_arrow",
    "to_dataset",
    "write_parquet",
]


# ---- files: JSONL in, Arrow batches out ------------------------------------------------------

ROW_GROUP_ROWS = 65536
"""Rows per Parquet row group (the most rows held in memory while writing)."""

ROW_GROUP_BYTES = 1 << 27
"""A row group is also written once its Arrow data passes this many bytes, so
long rows (multi-turn rollouts with tool output) do not hold 65,536 rows of
text in memory."""


def file_batches(
    src: str,
    limits: FileLimits,
    prompt_kind: str,
    on_batch: Callable[[pa.RecordBatch], object],
    progress: Optional[Progress],
    source: Optional[str] = None,
) -> FileCounts:
    """Stream a rollout JSONL file as record batches, in order; return the run's counts.

    Errors name ``source`` (default: ``src``). ``bytes_out`` is 0: the
    caller knows what it wrote.
    """
    source = source_name(src) if source is None else source
    max_rows = limits.max_rows
    if _engine.implementation() == "rust":
        native = _engine.native
        try:
            stats = native.read_jsonl_arrow(
                src,
                _engine.file_limits(max_rows, limits.max_bytes),
                _KIND_CODES[prompt_kind],
                lambda parts: on_batch(batch_from_buffers(parts)),
                progress,
            )
        except native.NativeRowError as exc:
            raise from_native_file(exc, source, None, max_rows, limits.max_bytes) from None
        return _engine.file_counts(stats)
    opened = open_input(src)
    tally = Tally()
    builder = TableBuilder(prompt_kind)
    try:
        index = 0
        batches = _jsonl.row_batches(opened, limits, tally, source, progress, partial=True)
        for batch in batches:
            with _rows.GcPause():
                for row, line in zip(batch, tally.batch_lines, strict=True):
                    builder.add(row, index, line=line, source=source)
                    index += 1
            while builder.batches:
                on_batch(builder.batches.pop(0))
        builder.flush()
        while builder.batches:
            on_batch(builder.batches.pop(0))
    finally:
        opened.stream.close()
    return FileCounts(
        tally.rows, tally.lines, tally.blank_lines, tally.dropped_keys, tally.bytes_in, 0
    )


def read_rollout_table(
    path: Any,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    prompt_kind: PromptKind = "auto",
) -> pa.Table:
    """Read a rollout JSONL file straight into a ``pyarrow.Table`` of the rollout schema.

    The Rust engine parses and checks the lines on worker threads and builds
    the Arrow buffers there: no Python row objects are made. Same rules,
    limits and errors as :func:`agent_rollout.read_rollout_jsonl`, plus the
    prompt-kind rule of :func:`rows_to_arrow` (the error names the file and
    line). ``read_rollout_jsonl(path, as_arrow=True)`` calls this.
    """
    text = path_text(path, "path")
    limits = FileLimits(check_max_rows(max_rows), check_max_bytes(max_bytes))
    prompt_kind = check_prompt_kind(prompt_kind)
    batches: list[pa.RecordBatch] = []
    file_batches(text, limits, prompt_kind, batches.append, None)
    return pa.Table.from_batches(batches, schema=batches[0].schema)


def write_parquet(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    progress: Optional[Progress],
    prompt_kind: str = "auto",
) -> FileCounts:
    """Normalise the rollout JSONL file ``src`` into the zstd Parquet file ``dest``.

    Row groups of at most ``ROW_GROUP_ROWS`` rows are written as they fill, so
    memory does not grow with the file. ``where`` is where ``dest`` really
    goes (``agent_rollout._files.destination``); the output is an
    ``agent_rollout._files.Output``, as for JSONL: a regular file is written
    beside itself and renamed into place only when every row passed, so on
    any error (Ctrl-C, SIGTERM and SIGHUP included) it is left as it was and
    no temporary file remains; a device, named pipe or one of our descriptors
    is written in place, streamed.
    """
    import pyarrow.parquet as pq

    prompt_kind = check_prompt_kind(prompt_kind)
    output: Optional[Output] = None
    writer: Any = None
    counted: Any = None
    pending: list[pa.RecordBatch] = []
    sizes = {"rows": 0, "bytes": 0}

    def write_pending() -> None:
        if pending:
            with naming(dest):
                writer.write_table(pa.Table.from_batches(pending), row_group_size=None)
            pending.clear()
            sizes["rows"] = sizes["bytes"] = 0

    def on_batch(batch: pa.RecordBatch) -> None:
        nonlocal output, writer, counted
        if writer is None:
            # Made on the first rows, so a bad source is reported before the
            # destination is touched (as for JSONL output).
            output = Output(where, dest)
            if output.temp is not None:
                target: Any = output.temp  # pyarrow writes the temporary by path
            else:
                # Counts what it writes: a pipe or terminal has no position to ask.
                target = counted = pa.PythonFile(output.file, mode="w")
            with naming(dest):
                writer = pq.ParquetWriter(target, batch.schema, compression="zstd")
        pending.append(batch)
        sizes["rows"] += batch.num_rows
        sizes["bytes"] += batch.nbytes
        if sizes["rows"] >= ROW_GROUP_ROWS or sizes["bytes"] >= ROW_GROUP_BYTES:
            write_pending()

    try:
        counts = file_batches(src, limits, prompt_kind, on_batch, progress)
        write_pending()
        if output is None:  # pragma: no cover - file_batches gives a batch or raises
            raise ValueError(f"{src}: no rows")
        with naming(dest):
            writer.close()
            # A pipe or terminal has no size to ask: the counting wrapper knows it.
            bytes_out = counted.tell() if output.temp is None else os.path.getsize(output.temp)
        output.commit()
    except BaseException:
        if writer is not None:
            try:
                writer.close()
            except Exception:
                pass  # already failing: the first error is the one reported
        if output is not None:
            output.abandon()
        raise
    return FileCounts(
        counts.rows,
        counts.lines,
        counts.blank_lines,
        counts.dropped_keys,
        counts.bytes_in,
        bytes_out,
    )
