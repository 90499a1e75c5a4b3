# Hand-written stub of the Rust extension (checked by mypy.stubtest).
# Private: use the public API in agent_rollout instead.
from collections.abc import Callable
from typing import Any, Literal, final

__all__ = [
    "BUILD_PROFILE",
    "CODES",
    "JSON_REASONS",
    "ArrowBatch",
    "Buffer",
    "Column",
    "FileLimits",
    "FileStats",
    "NativeRowError",
    "RowStats",
    "normalise_file",
    "normalise_rows",
    "read_jsonl",
    "read_jsonl_arrow",
    "read_jsonl_stats",
    "rows_to_arrow",
]

BUILD_PROFILE: Literal["debug", "release"]
"""How this engine was built: ``"debug"`` (debug assertions on, unoptimised) or ``"release"``."""
CODES: tuple[str, ...]
"""Every error code the engine raises (``NativeRowError.args[0]``), from ``rust/errors.rs``."""
JSON_REASONS: tuple[str, ...]
"""Every reason a line is not valid JSON (the fact of a ``json_syntax`` error)."""

class NativeRowError(ValueError):
    """A broken rule: args are (code, row index | None, path, fact, line, column)."""

@final
class FileLimits:
    """The limits of one file run (numbers from ``agent_rollout._limits``); a
    depth over 256 (``max_depth``, ``json_depth``) raises ValueError, as does a
    ``max_depth`` over 256 given to ``normalise_rows`` or ``rows_to_arrow``."""

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
    @property
    def bad_rows(self) -> int:
        """Bad rows a run that went on past them counted (``normalise_file``'s ``on_bad``)."""
    @property
    def bad(self) -> tuple[NativeRowError, ...]:
        """The first ``keep_bad`` of them, in line order."""

@final
class RowStats:
    """What ``read_jsonl_stats`` counted (rust/stats.rs)."""

    @property
    def file(self) -> FileStats: ...
    @property
    def text_prompts(self) -> int: ...
    @property
    def message_prompts(self) -> int: ...
    @property
    def answers(self) -> int: ...
    @property
    def messages(self) -> list[tuple[int, int]]: ...
    @property
    def prompt_chars(self) -> tuple[list[int], int, int, int]: ...
    @property
    def answer_chars(self) -> tuple[list[int], int, int, int]: ...
    @property
    def names(self) -> list[tuple[str, int]]: ...
    @property
    def other_names(self) -> int: ...

# Arrow buffers (rust/arrow/), assembled by agent_rollout.arrow.
@final
class Buffer:
    """One Arrow buffer as the engine built it: ``address`` and ``size`` (bytes) for
    ``pyarrow.foreign_buffer(address, size, base=buffer)``; never written after it is made."""

    @property
    def address(self) -> int: ...
    @property
    def size(self) -> int: ...
    def __bytes__(self) -> bytes: ...

@final
class Column:
    """One Arrow array as buffers: ``kind`` is "null", "bool", "int64", "float64", "string",
    "json" (JSON text in a string layout), "list" (one child) or "struct" (``names``)."""

    @property
    def kind(self) -> str: ...
    @property
    def len(self) -> int: ...
    @property
    def null_count(self) -> int: ...
    @property
    def validity(self) -> Buffer | None: ...
    @property
    def offsets(self) -> Buffer | None: ...
    @property
    def data(self) -> Buffer | None: ...
    @property
    def children(self) -> list[Column]: ...
    @property
    def names(self) -> list[str]: ...

@final
class ArrowBatch:
    """One record batch: ``kind`` "text" (``prompt`` a string column) or "messages"
    (``prompt`` a list of message structs), typed from the batch's own rows.
    """

    @property
    def kind(self) -> str: ...
    @property
    def rows(self) -> int: ...
    @property
    def prompt(self) -> Column: ...
    @property
    def answer(self) -> Column: ...

def normalise_rows(rows: Any, max_rows: int, max_depth: int) -> tuple[dict[str, Any], ...]: ...
def read_jsonl(path: str, limits: FileLimits) -> tuple[dict[str, Any], ...]: ...
def normalise_file(
    src: str,
    dest: str,
    dest_kind: str,
    dest_fd: int,
    limits: FileLimits,
    progress: Callable[[int, int, int], object] | None = None,
    on_bad: str = "stop",
    keep_bad: int = 0,
    gzip_level: int | None = None,
) -> FileStats: ...
def rows_to_arrow(
    rows: Any,
    prompt_kind: int,
    batch_rows: int,
    batch_bytes: int,
    max_rows: int,
    max_depth: int,
    max_int_digits: int,
    max_fields: int,
    typed_depth: int,
    first: bool,
) -> list[ArrowBatch] | None: ...
def read_jsonl_arrow(
    src: str,
    limits: FileLimits,
    prompt_kind: int,
    max_fields: int,
    typed_depth: int,
    on_batch: Callable[[ArrowBatch], object],
    progress: Callable[[int, int, int], object] | None = None,
    on_bad: str = "stop",
    keep_bad: int = 0,
) -> FileStats: ...
def read_jsonl_stats(
    src: str,
    limits: FileLimits,
    max_names: int,
    keep: int,
    progress: Callable[[int, int, int], object] | None = None,
) -> RowStats: ...
