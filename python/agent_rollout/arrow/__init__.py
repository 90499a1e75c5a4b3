"""Rollout rows as Arrow: the shape ``datasets`` and trainers read, lossless.

Needs ``pyarrow`` (``pip install 'pyarrow>=19'``, the ``arrow`` extra), so the package
imports this module only when it is asked for (``agent_rollout.rows_to_arrow``
and friends, Parquet output of ``normalise_rollout_file``, ``as_arrow=True``,
``agent_rollout.ray``). The schema is written down here and in
``docs/arrow.md``; ``rust/arrow/`` builds the same tables:

* ``prompt`` is a ``string`` column (TRL's *standard* format) or a
  ``list<struct<role: string, content: string, ...>>`` column (TRL's
  *conversational* format). One table holds one kind: the first row decides,
  unless ``prompt_kind`` says which; a row of the other kind is refused,
  naming it. ``prompt_kind="messages"`` makes a mixed input uniform by
  turning each str prompt into ``[{"role": "user", "content": prompt}]``.
* A message struct has ``role`` and ``content`` first, then one field per
  other key the table's messages have (``tool_calls``, ``tool_call_id``,
  ``name``...), in the order the keys first appear, each typed the way
  ``datasets.Dataset.from_list`` types it. Messages with only ``role`` and a
  str ``content`` are exactly ``struct<role: string, content: string>``.
* What one Arrow type cannot hold consistently is JSON text in an
  ``arrow.json`` field (``datasets`` reads the value, its ``Json()``
  feature): a key whose values are of different JSON types, objects whose
  keys differ, an int past int64, and ``content`` once any content is not a
  str (then every content of the table is JSON text), an object with a key
  holding NUL and every message once a message key holds one (the Arrow C
  data interface, which ``datasets`` reads through, ends a name at its NUL).
  Nothing is dropped.
* Two bounds (``agent_rollout._limits``) keep the shape one the standard
  readers read, in memory that does not grow with keys times messages: a
  list or object deeper than ``MAX_TYPED_DEPTH`` levels of a message is JSON
  text; past ``MAX_MESSAGE_FIELDS`` keys besides ``role`` and ``content``, each
  message is JSON text (``prompt: list<arrow.json>``, ``message_text``).
* ``answer`` is a ``string`` (null: the row has no answer).

The typing is a join over the values (``merge_schemas``): batches are typed
apart and a table gets the join of their types; ``conform`` converts a batch
to a wider type. ``arrow_to_rows`` gives the rows back: a null message field
reads back as an absent key.
"""

# ruff: noqa: F401 (the package's names, imported from the modules that own them)

from __future__ import annotations

from agent_rollout._exceptions import MissingPackageError
from agent_rollout._extras import install_hint

try:
    import pyarrow
except ImportError as exc:  # pragma: no cover - exercised only without pyarrow
    raise MissingPackageError(
        f"agent_rollout.arrow needs pyarrow: {install_hint('arrow')}"
    ) from exc

from agent_rollout._engine.arrow import (
    array_of,
    batch_from_buffers,
    buffer_of,
    file_batches,
)
from agent_rollout.arrow.build import (
    KindCheck,
    NotFits,
    TableBuilder,
    build_array,
    conform,
    conform_batch,
    conform_table,
    message_array,
    message_text,
    messages_as_json,
    unify,
    unstorable_error,
)
from agent_rollout.arrow.parquet import (
    IN_FLIGHT_BYTES,
    IN_FLIGHT_ROWS,
    ROW_GROUP_BYTES,
    ROW_GROUP_ROWS,
    ParquetSink,
    parquet_writer,
    write_parquet,
    write_rows_parquet,
)
from agent_rollout.arrow.read import (
    BadJson,
    Decoder,
    MessagesDecoder,
    arrow_to_rows,
    decoder_for,
    iter_rows,
)
from agent_rollout.arrow.schema import (
    BATCH_ROWS,
    JSON_TYPE,
    MESSAGE_TYPE,
    MESSAGES_SCHEMA,
    PROMPT_KINDS,
    SCHEMA_VERSION,
    TEXT_SCHEMA,
    PromptKind,
    Ty,
    absorb,
    arrow_schema,
    check_prompt_kind,
    join_messages,
    join_types,
    merge_schemas,
    schema_for,
    to_arrow_type,
)
from agent_rollout.arrow.tables import read_rollout_table, rows_to_arrow, to_dataset

__all__ = [
    "BATCH_ROWS",
    "IN_FLIGHT_BYTES",
    "IN_FLIGHT_ROWS",
    "JSON_TYPE",
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
    "conform_table",
    "file_batches",
    "merge_schemas",
    "read_rollout_table",
    "rows_to_arrow",
    "to_dataset",
    "write_parquet",
    "write_rows_parquet",
]
