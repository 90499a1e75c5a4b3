# Hand-written stub of the Rust extension (checked by mypy.stubtest).
# Private: use the public API in agent_rollout instead.
from collections.abc import Callable
from typing import Any

__all__ = ["NativeRowError", "normalise_file", "normalise_rows", "read_jsonl"]

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
