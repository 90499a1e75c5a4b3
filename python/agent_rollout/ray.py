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
prompt: ...``. :func:`normalise_batch` is the ``map_batches`` function
underneath; it also takes blocks from ``ray.data.read_json`` (as the issue's
one-liner writes it), with the caveat that pyarrow's JSON reader has already
typed those rows (and refuses mixed prompts itself), so lines are not known:
errors then name the shard (with ``include_paths=True``) and the row.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

import pyarrow as pa

from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROLLOUT_ROWS, check_max_rows
from agent_rollout.arrow import PromptKind, check_prompt_kind, file_batches, rows_to_arrow

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
    return pa.Table.from_batches(batches, schema=batches[0].schema)


def normalise_batch(
    batch: pa.Table,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
    backend: str = "openenv",
) -> pa.Table:
    """``map_batches`` function: a Ray block in, a table of the rollout schema out.

    A block from ``ray.data.read_binary_files(..., include_paths=True)`` (columns
    ``bytes`` and ``path``: one shard per row) is parsed and checked like
    ``read_rollout_jsonl``; ``max_rows`` caps each shard. Any other block
    (``ray.data.read_json``, ``from_items``...) is taken as rows with
    ``prompt`` and ``answer`` columns and normalised like ``rows_to_arrow``.
    """
    max_rows = check_max_rows(max_rows)
    prompt_kind = check_prompt_kind(prompt_kind)
    names = batch.column_names
    if "bytes" in names and "prompt" not in names:
        shards = batch.column("bytes").to_pylist()
        paths = (
            batch.column(PATH_COLUMN).to_pylist()
            if PATH_COLUMN in names
            else [f"<shard {i}>" for i in range(len(shards))]
        )
        tables = [
            _shard_table(data, str(path), max_rows, prompt_kind)
            for data, path in zip(shards, paths, strict=True)
        ]
        if len({t.schema for t in tables}) > 1:
            kinds = {
                str(path): t.schema.field("prompt").type
                for path, t in zip(paths, tables, strict=True)
            }
            raise ValueError(
                f"shards in one batch hold different prompt kinds ({kinds}); "
                "pass prompt_kind='text' or 'messages'"
            )
        return pa.concat_tables(tables)
    shard = None
    if PATH_COLUMN in names:
        shard_paths = batch.column(PATH_COLUMN).unique().to_pylist()
        shard = ", ".join(map(str, shard_paths))
    try:
        return rows_to_arrow(batch.to_pylist(), backend, max_rows=max_rows, prompt_kind=prompt_kind)
    except ValueError as exc:  # RolloutRowError included
        if shard is not None:
            # The same exception, its message prefixed with the shard(s) it came from.
            exc.args = (f"{shard}: {exc}", *exc.args[1:])
        raise


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
    its own schema. ``max_rows`` holds for the whole output: each shard stops
    at ``max_rows + 1`` rows, and the normalised rows are counted before they
    are handed back (the dataset is materialised in Ray's object store, which
    spills to disk, so the write that follows does not redo the work); more
    than ``max_rows`` rows raise ``ValueError`` naming the cap. A row or file
    error in a worker is raised here as ``ValueError`` with the reader's text
    (``shard:line: row N: path: why``). Extra keyword arguments go to
    ``ray.data.read_binary_files``.
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
            normalise_batch,
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
    rows = normalised.count()
    if rows > max_rows:
        raise ValueError(
            f"the rollout shards hold {rows} rows, more than max_rows={max_rows} "
            f"(max_rows={max_rows})"
        )
    return normalised


__all__ = ["PATH_COLUMN", "normalise_batch", "normalise_shards"]
