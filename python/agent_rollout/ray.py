"""Ray Data adapter: normalise rollout shards across a cluster with the same rules.

Needs ``ray[data]`` and ``pyarrow`` (``pip install 'agent-rollout[ray]'``);
nothing else in the package imports this module or ``ray``.

The recipe (see ``docs/arrow.md``)::

    import ray
    from agent_rollout.ray import normalise_shards

    ds = normalise_shards(["s3://bucket/rollouts/"], prompt_kind="messages", max_rows=1_000_000)
    ds.write_parquet("s3://bucket/normalised/")

Each shard (one JSONL file, gzip allowed) is read whole by one Ray task and
checked by the same reader as :func:`agent_rollout.read_rollout_jsonl`, so an
error names the shard and the line: ``s3://.../part-3.jsonl:12: row 11:
prompt: ...``. The blocks are typed apart, then given the one schema that
holds them all (``agent_rollout.arrow.merge_schemas``) before the dataset is
handed back, so every Parquet file written from it has that schema.

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


def _fit(table: pa.Table, schema: Optional[pa.Schema], source: Optional[str]) -> pa.Table:
    if schema is None:
        return table
    try:
        return conform_table(table, schema)
    except ValueError as exc:  # RolloutRowError included
        if source is None:
            raise
        raise _with_source(exc, source) from None


def _block_table(
    batch: pa.Table,
    max_rows: int,
    prompt_kind: PromptKind,
    backend: str,
    schema: Optional[pa.Schema],
) -> pa.Table:
    """One block normalised: shards of ``read_binary_files`` or rows; as ``schema`` if given
    (else typed from the block's own rows)."""
    names = batch.column_names
    if "bytes" in names and "prompt" not in names:
        shards = batch.column("bytes").to_pylist()
        paths = (
            batch.column(PATH_COLUMN).to_pylist()
            if PATH_COLUMN in names
            else [f"<shard {i}>" for i in range(len(shards))]
        )
        tables = [
            _fit(_shard_table(data, str(path), max_rows, prompt_kind), schema, str(path))
            for data, path in zip(shards, paths, strict=True)
        ]
        try:
            merged = merge_schemas(*(table.schema for table in tables))
        except ValueError:
            kinds = {
                str(path): table.schema.field("prompt").type
                for path, table in zip(paths, tables, strict=True)
            }
            raise ValueError(
                f"shards in one batch hold different prompt kinds ({kinds}); "
                "pass prompt_kind='text' or 'messages'"
            ) from None
        return pa.concat_tables([conform_table(table, merged) for table in tables])
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
        raise ValueError(
            "normalise_batch normalises each Ray block apart, and every block of a dataset "
            "must get one schema: pass prompt_kind='text', prompt_kind='messages' (messages "
            "of role and content only) or schema= (a schema that holds every block, such as "
            "agent_rollout.arrow.merge_schemas of tables made from samples); "
            "agent_rollout.ray.normalise_shards does this for whole JSONL shards"
        )
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if set(schema.names) != {"prompt", "answer"} or schema.field("answer").type != pa.string():
        raise ValueError(
            "schema must be a rollout schema: a 'prompt' column and a string 'answer' "
            f"column; got {schema}"
        )
    merged = merge_schemas(schema)
    kind: PromptKind = "text" if merged.field("prompt").type == pa.string() else "messages"
    if prompt_kind not in ("auto", kind):
        raise ValueError(f"prompt_kind={prompt_kind!r} does not match the schema's {kind} prompts")
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


def shard_block(
    batch: pa.Table,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
    schema: Optional[pa.Schema] = None,
) -> pa.Table:
    """``normalise_shards``' map: shards normalised, typed from their own rows unless
    ``schema`` is given (then converted to it)."""
    if schema is not None and "prompt" in batch.column_names:
        return conform_table(batch, schema)
    return _block_table(batch, max_rows, prompt_kind, "openenv", None)


def schema_row(batch: pa.Table) -> pa.Table:
    """One row holding the block's schema (serialized), to join the blocks' schemas."""
    return pa.table({"schema": [batch.schema.serialize().to_pybytes()]})


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
    its own kind. Each block is typed from its own rows; the blocks are then
    given their joined schema (``agent_rollout.arrow.merge_schemas``: the
    message keys of all of them), so the dataset has one schema. ``max_rows``
    holds for the whole output: each shard stops at ``max_rows + 1`` rows, and
    the normalised rows are counted before they are handed back (the dataset
    is materialised in Ray's object store, which spills to disk, so the write
    that follows does not redo the work); more than ``max_rows`` rows raise
    ``ValueError`` naming the cap. A row or file error in a worker is raised
    here as ``ValueError`` with the reader's text (``shard:line: row N: path:
    why``). Extra keyword arguments go to ``ray.data.read_binary_files``.
    """
    import ray.data

    if prompt_kind not in ("text", "messages"):
        raise ValueError(
            "normalise_shards needs prompt_kind='text' or 'messages' (each shard is "
            f"normalised apart, so the first row cannot decide for all); got {prompt_kind!r}"
        )
    max_rows = check_max_rows(max_rows)
    read_args.setdefault("include_paths", True)
    shards = ray.data.read_binary_files(paths, **read_args)
    try:
        normalised = shards.map_batches(
            shard_block,
            batch_format="pyarrow",
            batch_size=1,
            fn_kwargs={"max_rows": max_rows, "prompt_kind": prompt_kind},
        ).materialize()
    except Exception as exc:
        # Ray hands back its own wrapper around a worker's error, as text:
        # raise the rule the rows broke (shard, line, row, path) on its own.
        found = _WORKER_ERROR.search(str(exc))
        if found is None:
            raise
        raise ValueError(found.group(2)) from exc
    schemas = [
        pa.ipc.read_schema(pa.py_buffer(row["schema"]))
        for row in normalised.map_batches(
            schema_row, batch_format="pyarrow", batch_size=None
        ).take_all()
    ]
    merged = merge_schemas(*schemas)
    if any(not schema.equals(merged, check_metadata=True) for schema in schemas):
        normalised = normalised.map_batches(
            shard_block,
            batch_format="pyarrow",
            batch_size=None,
            fn_kwargs={"max_rows": max_rows, "prompt_kind": prompt_kind, "schema": merged},
        ).materialize()
    rows = normalised.count()
    if rows > max_rows:
        raise ValueError(
            f"the rollout shards hold {rows} rows, more than max_rows={max_rows} "
            f"(max_rows={max_rows})"
        )
    return normalised


__all__ = ["PATH_COLUMN", "normalise_batch", "normalise_shards"]
