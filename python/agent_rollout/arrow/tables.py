"""Rollout rows or a rollout JSONL file as a ``pyarrow.Table`` of the rollout schema
(``rows_to_arrow``, ``read_rollout_table``), and as a ``datasets.Dataset``
(``to_dataset``), on either engine (``agent_rollout._engine.arrow``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

# A module, not its names: this module is loaded while agent_rollout._engine.arrow may
# still be loading (it is imported first, and its functions import agent_rollout.arrow).
from agent_rollout._engine import arrow as engine_arrow
from agent_rollout._exceptions import MissingPackageError
from agent_rollout._files import path_text
from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import (
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    check_max_bytes,
    check_max_rows,
)
from agent_rollout.arrow.build import unify
from agent_rollout.arrow.schema import PromptKind, check_prompt_kind
from agent_rollout.backends import validate_rollout_backend

if TYPE_CHECKING:
    import datasets


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
    Message keys beyond ``role`` and ``content`` become typed fields (see the
    module's docstring and docs/arrow.md).
    """
    prompt_kind = check_prompt_kind(prompt_kind)
    backend = validate_rollout_backend(backend)
    max_rows = check_max_rows(max_rows)
    schema, batches = unify(engine_arrow.row_batches(rows, backend, max_rows, prompt_kind))
    return pa.Table.from_batches(batches, schema=schema)


def to_dataset(
    rows: Any,
    backend: str = "openenv",
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
) -> datasets.Dataset:
    """:func:`rows_to_arrow`, as a Hugging Face ``datasets.Dataset`` (needs ``datasets``;
    fields of JSON text read as values with ``datasets`` 4.7 or later)."""
    try:
        import datasets
    except ImportError as exc:
        raise MissingPackageError(
            "to_dataset needs the 'datasets' package: pip install datasets"
        ) from exc
    table = rows_to_arrow(rows, backend, max_rows=max_rows, prompt_kind=prompt_kind)
    return datasets.Dataset(datasets.table.InMemoryTable(table), fingerprint=_fingerprint(table))


def _fingerprint(table: pa.Table) -> str:
    """A hash of the table's content (its schema and buffers), as the Dataset's fingerprint.

    ``datasets`` would otherwise pickle the whole table to hash it, which costs
    more than building it. ``xxhash`` comes with ``datasets``.
    """
    import xxhash

    digest = xxhash.xxh64()
    digest.update(table.schema.serialize())
    for column in table.columns:
        for chunk in column.chunks:
            digest.update(f"{chunk.offset}:{len(chunk)}".encode())
            for buffer in chunk.buffers():
                digest.update(b"-" if buffer is None else buffer)
    return str(digest.hexdigest())


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
    engine_arrow.file_batches(text, limits, prompt_kind, batches.append, None)
    schema, batches = unify(batches)
    return pa.Table.from_batches(batches, schema=schema)
