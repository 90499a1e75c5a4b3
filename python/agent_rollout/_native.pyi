# Hand-written stub of the Rust extension (checked by mypy.stubtest).
# Private: use the public API in agent_rollout instead.
from typing import Any

__all__ = ["NativeRowError", "normalise_rows"]

class NativeRowError(ValueError):
    """A broken rule: args are (code, row index | None, path segments, fact, line)."""

def normalise_rows(rows: Any, max_rows: int, max_depth: int) -> tuple[dict[str, Any], ...]: ...
