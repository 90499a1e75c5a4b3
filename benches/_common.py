"""Helpers shared by the benchmark scripts: data, timing, the reference normaliser."""

from __future__ import annotations

import gc
import importlib.util
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference" / "agent_rollout_seed.py"


def load_reference() -> Any:
    """The seed module from ../shared/reference, or None where it is absent."""
    if not REFERENCE.exists():
        return None
    spec = importlib.util.spec_from_file_location("agent_rollout_seed", REFERENCE)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def string_rows(n: int) -> list[dict]:
    return [
        {"prompt": f"What is {i} + {i}?", "answer": str(2 * i), "reward": 0.5, "id": i}
        for i in range(n)
    ]


def message_rows(n: int) -> list[dict]:
    return [
        {
            "prompt": [
                {"role": "system", "content": "You are a careful calculator."},
                {"role": "user", "content": f"What is {i} + {i}?"},
            ],
            "answer": str(2 * i),
            "meta": {"id": i},
        }
        for i in range(n)
    ]


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """Fastest of ``repeat`` runs, in seconds (the collector left as the caller has it)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_settled(
    fn: Callable[[], Any], repeat: int, before: Callable[[], Any] | None = None
) -> tuple[float, float]:
    """Fastest run as (call seconds, call + the young-generation collection it leaves).

    An engine that pauses the cyclic collector while it builds defers one
    collection of the new objects to the caller's next allocations; timing
    ``gc.collect(0)`` right after the call charges that cost to the engine
    that caused it. Contenders that ran with the collector on leave little.
    ``before`` runs ahead of each call, untimed.
    """
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        result = fn()
        called = time.perf_counter()
        gc.collect(0)
        settled = time.perf_counter()
        del result
        if settled - start < best[1]:
            best = (called - start, settled - start)
    return best


def new_file(path: Path) -> Callable[[], Any]:
    """Before a call (``best_settled``'s ``before``): remove ``path``, so that the
    call writes a new file."""
    return lambda: path.unlink(missing_ok=True)


def write_as_ours(table: Any, path: Path | str) -> None:
    """Write the pyarrow ``table`` to ``path`` as our Parquet output is written
    (``agent_rollout.arrow.parquet_writer``'s settings), in one row group."""
    from agent_rollout.arrow import parquet_writer

    writer = parquet_writer(str(path), table.schema)
    writer.write_table(table, row_group_size=None)
    writer.close()


def median_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak Python-heap bytes allocated while ``fn`` runs (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak
