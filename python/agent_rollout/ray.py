"""Ray Data adapter: normalise rollout shards across a cluster with the same rules.

Needs ``ray[data]`` and ``pyarrow`` (the ``ray`` extra: ``pip install 'pyarrow>=19'
'ray[data]>=2.40'``); nothing else in the package imports this module or ``ray``.

The recipe (see ``docs/arrow.md``)::

    import ray
    from agent_rollout.ray import normalise_shards

    ds = normalise_shards(["s3://bucket/rollouts/"], prompt_kind="messages", max_rows=1_000_000)
    ds.write_parquet("s3://bucket/normalised/")

Each shard (one JSONL file, gzip allowed) is read whole by one Ray task and
checked by the same reader as :func:`agent_rollout.read_rollout_jsonl`, so an
error names the shard and the line: ``s3://.../part-3.jsonl:12: row 11:
prompt: ...``. Each shard is typed from its own rows and leaves its worker
serialized (Arrow IPC, with its schema), so Ray never combines tables of two
schemas; the shards are then read back as the one schema that holds them all
(``agent_rollout.arrow.merge_schemas``), so every Parquet file written from
the dataset has that schema.

:func:`normalise_batch` is the ``map_batches`` function for a pipeline of
one's own (``ray.data.read_json(...)`` blocks, say). A function that sees one
block cannot know the others, so it gives every block one schema fixed up
front: the plain schema of ``prompt_kind="text"`` or ``"messages"`` (messages
of ``role`` and ``content`` only), or the ``schema=`` it is given; a value
that schema has no place for is refused, naming the row and key.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, Optional

import pyarrow as pa

from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROLLOUT_ROWS, check_max_rows
from agent_rollout.arrow import (
    MESSAGES_SCHEMA,
    TEXT_SCHEMA,
    PromptKind,
    check_prompt_kind,
    conform_table,
    file_batches,
    merge_schemas,
    rows_to_arrow,
    unify,
)

_WORKER_ERROR = re.compile(r"agent_rollout\._errors\.(RolloutRowError|RolloutFileError): ([^\n]*)")

PATH_COLUMN = "path"
"""The shard column Ray adds with ``include_paths=True``."""


def _shard_table(data: bytes, shard: str, max_rows: int, prompt_kind: str) -> pa.Table:
    # The reader takes a path: the shard's bytes go to a private temporary
    # file (page cache, removed at once); errors name the shard, not the file.
    handle, temp = tempfile.mkstemp(prefix="agent-rollout-shard-", suffix=".jsonl")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        batches: list[pa.RecordBatch] = []
        limits = FileLimits(max_rows, MAX_ROLLOUT_BYTES)
        file_batches(temp, limits, prompt_kind, batches.append, None, source=shard)
    finally:
        os.unlink(temp)
    schema, batches = unify(batches)
    return pa.Table.from_batches(batches, schema=schema)


def _with_source(exc: ValueError, source: str) -> ValueError:
    """The same exception, its message prefixed with the shard(s) it came from."""
    exc.args = (f"{source}: {exc}", *exc.args[1:])
    return exc


def _fit(table: pa.Table, schema: pa.Schema, source: Optional[str]) -> pa.Table:
    try:
        return conform_table(table, schema)
    except ValueError as exc:  # RolloutRowError included
        if source is None:
            raise
        raise _with_source(exc, source) from None


def _shard_paths(batch: pa.Table) -> list[str]:
    """The names of a ``read_binary_files`` block's shards, for errors."""
    if PATH_COLUMN in batch.column_names:
        return [str(path) for path in batch.column(PATH_COLUMN).to_pylist()]
    return [f"<shard {i}>" for i in range(batch.num_rows)]


def _block_table(
    batch: pa.Table,
    max_rows: int,
    prompt_kind: PromptKind,
    backend: str,
    schema: pa.Schema,
) -> pa.Table:
    """One block normalised as ``schema``: shards of ``read_binary_files`` or rows."""
    names = batch.column_names
    if "bytes" in names and "prompt" not in names:
        shards = batch.column("bytes").to_pylist()
        tables = [
            _fit(_shard_table(data, path, max_rows, prompt_kind), schema, path)
            for data, path in zip(shards, _shard_paths(batch), strict=True)
        ]
        return pa.concat_tables(tables) if tables else schema.empty_table()
    shard = None
    if PATH_COLUMN in names:
        shard_paths = batch.column(PATH_COLUMN).unique().to_pylist()
        shard = ", ".join(map(str, shard_paths))
    try:
        table = rows_to_arrow(
            batch.to_pylist(), backend, max_rows=max_rows, prompt_kind=prompt_kind
        )
    except ValueError as exc:  # RolloutRowError included
        if shard is not None:
            raise _with_source(exc, shard) from None
        raise
    return _fit(table, schema, shard)


def block_schema(schema: Optional[pa.Schema], prompt_kind: str) -> tuple[pa.Schema, PromptKind]:
    """The schema every block of ``normalise_batch`` gets, and the prompt kind it means."""
    if schema is None:
        if prompt_kind == "text":
            return TEXT_SCHEMA, "text"
        if prompt_kind == "messages":
            return MESSAGES_SCHEMA, "messages"
        raise RolloutValueError(
            "normalise_batch normalises each Ray block apart, and every block of a dataset "
            "must get one schema: pass prompt_kind='text', prompt_kind='messages' (messages "
            "of role and content only) or schema= (a schema that holds every block, such as "
            "agent_rollout.arrow.merge_schemas of tables made from samples); "
            "agent_rollout.ray.normalise_shards does this for whole JSONL shards"
        )
    if not isinstance(schema, pa.Schema):
        raise RolloutTypeError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if set(schema.names) != {"prompt", "answer"} or schema.field("answer").type != pa.string():
        raise RolloutValueError(
            "schema must be a rollout schema: a 'prompt' column and a string 'answer' "
            f"column; got {schema}"
        )
    merged = merge_schemas(schema)
    kind: PromptKind = "text" if merged.field("prompt").type == pa.string() else "messages"
    if prompt_kind not in ("auto", kind):
        raise RolloutValueError(
            f"prompt_kind={prompt_kind!r} does not match the schema's {kind} prompts"
        )
    return merged, kind


def normalise_batch(
    batch: pa.Table,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
    backend: str = "openenv",
    schema: Optional[pa.Schema] = None,
) -> pa.Table:
    """``map_batches`` function: a Ray block in, a table of one rollout schema out.

    Every block gets the same schema: ``schema`` if given, else the plain
    schema of ``prompt_kind`` (``"text"``: str prompts; ``"messages"``:
    messages of ``role`` and a str ``content``); without either it raises
    ``ValueError`` (one block cannot know what the others hold). A value the
    schema has no place for (a message key it lacks, values of another type)
    raises ``RolloutRowError`` naming the row and key.

    A block from ``ray.data.read_binary_files(..., include_paths=True)``
    (columns ``bytes`` and ``path``: one shard per row) is parsed and checked
    like ``read_rollout_jsonl``; ``max_rows`` caps each shard. Any other block
    (``ray.data.read_json``, ``from_items``...) is taken as rows with
    ``prompt`` and ``answer`` columns and normalised like ``rows_to_arrow``.
    """
    max_rows = check_max_rows(max_rows)
    prompt_kind = check_prompt_kind(prompt_kind)
    target, kind = block_schema(schema, prompt_kind)
    return _block_table(batch, max_rows, kind, backend, target)


SHARDS_SCHEMA = pa.schema(
    [("schema", pa.binary()), ("rows", pa.int64()), ("table", pa.large_binary())]
)
"""The blocks of ``normalise_shards``' first map: one row per shard, its schema and its
table serialized (Arrow IPC), and its row count."""


def shard_tables(
    batch: pa.Table, *, max_rows: int = MAX_ROLLOUT_ROWS, prompt_kind: PromptKind = "auto"
) -> pa.Table:
    """``normalise_shards``' first map: each shard of a ``read_binary_files`` block
    normalised, typed from its own rows, as one row of ``SHARDS_SCHEMA``.

    Shards typed apart can need different schemas (a message key, or a list
    content, that only some hold), and Ray concatenates the outputs of a task's
    calls itself, refusing tables of different types; so no table leaves the
    worker as such: every output has the one schema ``SHARDS_SCHEMA``."""
    sink = pa.BufferOutputStream()
    schemas: list[bytes] = []
    rows: list[int] = []
    offsets = [0]
    shards = batch.column("bytes").to_pylist()
    for data, path in zip(shards, _shard_paths(batch), strict=True):
        table = _shard_table(data, path, max_rows, prompt_kind)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        schemas.append(table.schema.serialize().to_pybytes())
        rows.append(table.num_rows)
        offsets.append(sink.tell())
    tables = pa.Array.from_buffers(
        pa.large_binary(),
        len(rows),
        [None, pa.array(offsets, pa.int64()).buffers()[1], sink.getvalue()],
    )
    columns = [pa.array(schemas, pa.binary()), pa.array(rows, pa.int64()), tables]
    return pa.table(columns, schema=SHARDS_SCHEMA)


def shard_schemas(batch: pa.Table) -> pa.Table:
    """The distinct schemas of a block of ``shard_tables`` (its ``schema`` and ``rows``
    columns), each with the rows of its shards: what the driver joins and counts."""
    counts: dict[bytes, int] = {}
    schemas = batch.column("schema").to_pylist()
    for schema, rows in zip(schemas, batch.column("rows").to_pylist(), strict=True):
        counts[schema] = counts.get(schema, 0) + rows
    return pa.table({"schema": pa.array(list(counts), pa.binary()), "rows": list(counts.values())})


def shard_rows(batch: pa.Table, *, schema: pa.Schema) -> pa.Table:
    """``normalise_shards``' second map: the tables of a block of ``shard_tables`` read
    back and converted to ``schema`` (their joined schema, which holds every one)."""
    tables = [
        conform_table(pa.ipc.open_stream(value.as_buffer()).read_all(), schema)
        for chunk in batch.column("table").chunks
        for value in chunk
    ]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def normalise_shards(
    paths: Any,
    *,
    prompt_kind: PromptKind,
    max_rows: int = MAX_ROLLOUT_ROWS,
    **read_args: Any,
) -> Any:
    """Normalise rollout JSONL shards on a Ray cluster; a materialised ``ray.data.Dataset``.

    ``prompt_kind`` must be ``"text"`` or ``"messages"``: shards are
    normalised apart, so "the first row decides" would let each shard decide
    its own kind. Two maps: the first normalises each shard, typed from its own
    rows, and hands it on serialized with its schema (``shard_tables``: Ray
    concatenates a task's outputs and refuses tables of different types, such
    as a str ``content`` in one shard and a list of parts in another); the
    second reads each back as the shards' joined schema
    (``agent_rollout.arrow.merge_schemas``: the message keys of all of them),
    so the dataset has one schema. ``max_rows`` holds for the whole output:
    each shard stops at ``max_rows + 1`` rows, and the rows of all are counted
    between the two maps; more than ``max_rows`` raise ``ValueError`` naming
    the cap. Both maps are materialised in Ray's object store (which spills
    to disk), so the write that follows does not redo the work; the first
    map's output is let go of when the second is done. A row or file error in
    a worker is raised here as ``ValueError`` with the reader's text
    (``shard:line: row N: path: why``). Extra keyword arguments go to
    ``ray.data.read_binary_files``.
    """
    import ray.data

    if prompt_kind not in ("text", "messages"):
        raise RolloutValueError(
            "normalise_shards needs prompt_kind='text' or 'messages' (each shard is "
            f"normalised apart, so the first row cannot decide for all); got {prompt_kind!r}"
        )
    max_rows = check_max_rows(max_rows)
    read_args.setdefault("include_paths", True)
    shards = ray.data.read_binary_files(paths, **read_args)
    tables = _materialize(
        shards.map_batches(
            shard_tables,
            batch_format="pyarrow",
            batch_size=1,
            fn_kwargs={"max_rows": max_rows, "prompt_kind": prompt_kind},
        )
    )
    counts = (
        tables.select_columns(["schema", "rows"])
        .map_batches(shard_schemas, batch_format="pyarrow", batch_size=None)
        .take_all()
    )
    rows = sum(count["rows"] for count in counts)
    if rows > max_rows:
        raise RolloutValueError(
            f"the rollout shards hold {rows} rows, more than max_rows={max_rows} "
            f"(max_rows={max_rows})"
        )
    schemas = dict.fromkeys(count["schema"] for count in counts)
    merged = merge_schemas(*(pa.ipc.read_schema(pa.py_buffer(schema)) for schema in schemas))
    return _materialize(
        tables.map_batches(
            shard_rows, batch_format="pyarrow", batch_size=None, fn_kwargs={"schema": merged}
        )
    )


def _materialize(dataset: Any) -> Any:
    """``dataset.materialize()``; a row or file error in a worker raised as ``ValueError``."""
    try:
        return dataset.materialize()
    except Exception as exc:
        # Ray hands back its own wrapper around a worker's error, as text:
        # raise the rule the rows broke (shard, line, row, path) on its own.
        found = _WORKER_ERROR.search(str(exc))
        if found is None:
            raise
        raise RolloutValueError(found.group(2)) from exc


__all__ = ["PATH_COLUMN", "normalise_batch", "normalise_shards"]
