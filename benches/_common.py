"""Helpers shared by the benchmark scripts: data, timing, the reference normaliser."""

from __future__ import annotations

import gc
import importlib.util
import json
import statistics
import subprocess
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


def cpu_ticks() -> tuple[int, int, int] | None:
    """The machine's CPU time so far, in clock ticks: (all of it, the part the
    hypervisor gave to other guests, "steal", the part idle or waiting for
    I/O), from /proc/stat; None where there is no such file."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    # user nice system idle iowait irq softirq steal (guest time is within user)
    ticks = [int(field) for field in fields[1:9]]
    return sum(ticks), ticks[7], ticks[3] + ticks[4]


def stolen_since(before: tuple[int, int, int] | None) -> str:
    """What share of the CPU time the machine's CPUs were not idle the hypervisor
    took since ``before`` (a ``cpu_ticks()``): on a shared VM, time a benchmark
    wanted and did not get. Idle CPUs are left out: they are hardly ever stolen
    from, and would make the share look smaller than the loss."""
    after = cpu_ticks()
    if before is None or after is None or after[0] <= before[0]:
        return "CPU time taken by the host: unknown"
    busy = after[0] - before[0] - (after[2] - before[2])
    share = (after[1] - before[1]) / busy if busy > 0 else 0.0
    return (
        f"CPU time taken by the host meanwhile (steal, of the busy time, /proc/stat): {share:.1%}"
    )


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


def write_as_ours(
    table: Any, path: Path | str, group_rows: int | None = None, groups: list[int] | None = None
) -> None:
    """Write the pyarrow ``table`` to ``path`` with our Parquet writer's settings
    (``agent_rollout.arrow.parquet_writer``), in row groups of ``group_rows`` rows
    (``None``: pyarrow's default, one group up to 1,048,576 rows), or, given
    ``groups``, in row groups of those sizes, in order (``row_groups`` of a file)."""
    from agent_rollout.arrow import parquet_writer

    writer = parquet_writer(str(path), table.schema)
    if groups is None:
        writer.write_table(table, row_group_size=group_rows)
    else:
        start = 0
        for rows in groups:
            writer.write_table(table.slice(start, rows), row_group_size=rows)
            start += rows
    writer.close()


def row_groups(path: Path | str) -> list[int]:
    """The rows of each row group of the Parquet file at ``path``, in order."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(group).num_rows for group in range(meta.num_row_groups)]


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


# VmHWM (the peak resident set of this process image) rather than ru_maxrss,
# which a child started from a large parent inherits on Linux.
FRESH_CALL = """
import json, os, sys, time
from agent_rollout import normalise_rollout_file
src, dest, warm = sys.argv[1], sys.argv[2], sys.argv[3]
if warm:
    # The imports a first call makes (pyarrow.parquet, about 0.1 s) and the
    # first call's set-up, on a 1-row file: not in the time.
    normalise_rollout_file(warm, dest, max_rows=10)
    os.unlink(dest)
start = time.perf_counter()
normalise_rollout_file(src, dest, max_rows=10_000_000)
seconds = time.perf_counter() - start
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "peak_kib": peak}))
"""


def fresh_call(src: Path, dest: Path, warm: Path | None = None) -> dict[str, float]:
    """``normalise_rollout_file(src, dest)`` once in a fresh process (after a call on
    ``warm``, if given): its ``seconds`` and the process's peak resident memory
    (``peak_kib``)."""
    out = subprocess.run(
        [sys.executable, "-c", FRESH_CALL, str(src), str(dest), str(warm or "")],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def peak_rss_kib(src: Path, dest: Path) -> int:
    """Peak resident memory (KiB) of a fresh process that normalises ``src``."""
    return int(fresh_call(src, dest)["peak_kib"])
