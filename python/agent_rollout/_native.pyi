# Hand-written stub of the Rust extension (checked by mypy.stubtest).
# Private: use the public API in agent_rollout instead.
from collections.abc import Callable
from typing import Any, final

__all__ = [
    "CODES",
    "JSON_REASONS",
    "ArrowBatch",
    "FileLimits",
    "FileStats",
    "NativeRowError",
    "StringColumn",
    "normalise_file",
    "normalise_rows",
    "read_jsonl",
    "read_jsonl_arrow",
    "rows_to_arrow",
]

CODES: tuple[str, ...]
"""Every error code the engine raises (``NativeRowError.args[0]``), from ``rust/errors.rs``."""
JSON_REASONS: tuple[str, ...]
"""Every reason a line is not valid JSON (the fact of a ``json_syntax`` error)."""

class NativeRowError(ValueError):
    """A broken rule: args are (code, row index | None, path, fact, line, column)."""

@final
class FileLimits:
    """The limits of one file run (numbers from ``agent_rollout._limits``)."""

    def __new__(
        cls,
        *,
        max_rows: int,
        max_bytes: int,
        max_depth: int,
        json_depth: int,
        max_int_digits: int,
        max_line_bytes: int,
    ) -> FileLimits: ...
    @property
    def max_rows(self) -> int: ...
    @property
    def max_bytes(self) -> int: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def json_depth(self) -> int: ...
    @property
    def max_int_digits(self) -> int: ...
    @property
    def max_line_bytes(self) -> int: ...

@final
class FileStats:
    """What a file run saw (``bytes_out`` is 0 but for ``normalise_file``)."""

    @property
    def rows(self) -> int: ...
    @property
    def lines(self) -> int: ...
    @property
    def blank_lines(self) -> int: ...
    @property
    def dropped_keys(self) -> int: ...
    @property
    def bytes_in(self) -> int: ...
    @property
    def bytes_out(self) -> int: ...

# Arrow buffers (rust/arrow.rs), assembled by agent_rollout.arrow.
@final
class StringColumn:
    """One Arrow string column: validity bitmap (None: no nulls), int32 offsets, UTF-8 data."""

    @property
    def validity(self) -> bytes | None: ...
    @property
    def offsets(self) -> bytes: ...
    @property
    def data(self) -> bytes: ...
    @property
    def null_count(self) -> int: ...

@final
class ArrowBatch:
    """One record batch: ``kind`` "text" (``first`` is the prompt) or "messages"
    (``first`` is each message's role; ``list_offsets``, ``content`` and ``extra`` are set).
    """

    @property
    def kind(self) -> str: ...
    @property
    def rows(self) -> int: ...
    @property
    def list_offsets(self) -> bytes | None: ...
    @property
    def messages(self) -> int: ...
    @property
    def first(self) -> StringColumn: ...
    @property
    def content(self) -> StringColumn | None: ...
    @property
    def extra(self) -> StringColumn | None: ...
    @property
    def answer(self) -> StringColumn: ...

def normalise_rows(rows: Any, max_rows: int, max_depth: int) -> tuple[dict[str, Any], ...]: ...
def read_jsonl(path: str, limits: FileLimits) -> tuple[dict[str, Any], ...]: ...
def normalise_file(
    src: str,
    dest: str,
    dest_kind: str,
    dest_fd: int,
    limits: FileLimits,
    progress: Callable[[int, int, int], object] | None = None,
) -> FileStats: ...
def rows_to_arrow(
    rows: Any,
    prompt_kind: int,
    batch_rows: int,
    batch_bytes: int,
    max_rows: int,
    max_depth: int,
    first: bool,
) -> list[ArrowBatch] | None: ...
def read_jsonl_arrow(
    src: str,
    limits: FileLimits,
    prompt_kind: int,
    on_batch: Callable[[ArrowBatch], object],
    progress: Callable[[int, int, int], object] | None = None,
) -> FileStats: ...
