# Hand-written stub of the Rust extension (checked by mypy.stubtest).
# Private: use the public API in agent_rollout instead.
from collections.abc import Callable
from typing import Any

__all__ = [
    "NativeRowError",
    "normalise_file",
    "normalise_rows",
    "read_jsonl",
    "read_jsonl_arrow",
    "rows_to_arrow",
]

_Stats = tuple[int, int, int, int, int, int]

class NativeRowError(ValueError):
    """A broken rule: args are (code, row index | None, path, fact, line, column)."""

def normalise_rows(rows: Any, max_rows: int, max_depth: int) -> tuple[dict[str, Any], ...]: ...
def read_jsonl(
    path: str,
    max_rows: int,
    max_bytes: int,
    max_depth: int,
    json_depth: int,
    max_int_digits: int,
) -> tuple[dict[str, Any], ...]: ...
def normalise_file(
    src: str,
    dest: str,
    dest_kind: str,
    dest_fd: int,
    max_rows: int,
    max_bytes: int,
    max_depth: int,
    json_depth: int,
    max_int_digits: int,
    progress: Callable[[int, int, int], object] | None = None,
) -> _Stats: ...

# Arrow buffers (rust/arrow.rs): (kind, rows, list_offsets | None, messages,
# (first, content, extra_json, answer)), each string column as
# (validity | None, offsets, data, null_count); assembled by agent_rollout.arrow.
_StrCol = tuple[bytes | None, bytes, bytes, int]
_Batch = tuple[str, int, bytes | None, int, tuple[_StrCol, _StrCol | None, _StrCol | None, _StrCol]]

def rows_to_arrow(
    rows: Any,
    prompt_kind: int,
    batch_rows: int,
    batch_bytes: int,
    max_rows: int,
    max_depth: int,
    first: bool,
) -> list[_Batch] | None: ...
def read_jsonl_arrow(
    src: str,
    max_rows: int,
    max_bytes: int,
    max_depth: int,
    json_depth: int,
    max_int_digits: int,
    prompt_kind: int,
    on_batch: Callable[[_Batch], object],
    progress: Callable[[int, int, int], object] | None = None,
) -> _Stats: ...
