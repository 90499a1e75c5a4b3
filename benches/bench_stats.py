"""``agent-rollout stats`` against the engine's own read of the same file, in one run.

    python benches/bench_stats.py [--rows 1000000] [--small 100000] [--repeat R] [--dir D]

Writes ``bench_jsonl.py``'s file (two-message prompts with extra keys, about
450 bytes a row) of ``--rows`` and ``--small`` rows once into ``--dir`` (kept
there for later runs), then, for each engine, best of R with the contenders
taking turns:

- ``stats``: ``_engine.stats.jsonl_stats`` (what the command counts);
- the engine's read of the same file, the floor: ``normalise_rollout_file`` to
  ``/dev/null`` (parse, row rules, canonical output) and, Rust only, its
  Arrow read (``_engine.arrow.file_batches``, the batches dropped).

Goal: stats within 1.3x of the engine's read. Then, from a fresh process per
run (its own ``VmHWM``: a child does not inherit a parent's peak here), the
peak resident memory of ``stats`` on ``--small`` and on ``--rows`` rows, per
engine (goal: flat, the big file within 1.2x of the small one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_rollout import _engine, normalise_rollout_file
from agent_rollout._engine.arrow import file_batches
from agent_rollout._engine.stats import jsonl_stats
from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROWS_LIMIT
from bench_jsonl import write_file

LIMITS = FileLimits(MAX_ROWS_LIMIT, MAX_ROLLOUT_BYTES)

FRESH_STATS = """
import json, sys, time
from agent_rollout import _engine
from agent_rollout._engine.stats import jsonl_stats
from agent_rollout._jsonl import FileLimits
_engine.set_engine(sys.argv[2])
start = time.perf_counter()
stats = jsonl_stats(sys.argv[1], FileLimits(10_000_000, 1 << 40))
seconds = time.perf_counter() - start
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"rows": stats.rows, "seconds": seconds, "peak_kib": peak}))
"""


def fresh_stats(path: Path, engine: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", FRESH_STATS, str(path), engine],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def cached_file(folder: Path, rows: int) -> Path:
    path = folder / f"stats-{rows}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".partial")
        write_file(partial, rows)
        partial.rename(path)
    return path


def turns(contenders: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best time of each contender, one call each per round (after one warm-up call)."""
    best = {name: float("inf") for name in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "agent-rollout-bench"
    )
    parser.add_argument("--engines", default="rust,python")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    big = cached_file(args.dir, args.rows)
    small = cached_file(args.dir, args.small)
    engines = [e for e in args.engines.split(",") if e != "rust" or _engine.native_available()]
    size = big.stat().st_size
    print(f"{big}: {args.rows:,} rows, {size / 1e6:,.0f} MB")
    print(f"{'engine':<8} {'contender':<28} {'seconds':>8} {'rows/s':>12} {'stats / it':>11}")
    for engine in engines:
        previous = _engine.set_engine(engine)  # type: ignore[arg-type]
        try:
            contenders: dict[str, Callable[[], Any]] = {
                "stats": lambda: jsonl_stats(str(big), LIMITS),
                "normalise -> /dev/null": lambda: normalise_rollout_file(
                    big, "/dev/null", max_rows=MAX_ROWS_LIMIT
                ),
            }
            if engine == "rust":
                contenders["Arrow read (file_batches)"] = lambda: file_batches(
                    str(big), LIMITS, "auto", lambda batch: None, None
                )
            repeat = args.repeat if engine == "rust" else max(1, args.repeat // 3)
            best = turns(contenders, repeat)
        finally:
            _engine.set_engine(previous)
        for name, seconds in best.items():
            ratio = best["stats"] / seconds
            print(
                f"{engine:<8} {name:<28} {seconds:>8.3f} {args.rows / seconds:>12,.0f} "
                f"{ratio:>10.2f}x"
            )
    print()
    print(f"{'engine':<8} {'rows':>10} {'peak RSS MiB':>13} {'seconds':>8}")
    for engine in engines:
        peaks = []
        for path, rows in ((small, args.small), (big, args.rows)):
            got = fresh_stats(path, engine)
            assert got["rows"] == rows, got
            peaks.append(got["peak_kib"])
            print(f"{engine:<8} {rows:>10,} {got['peak_kib'] / 1024:>13.1f} {got['seconds']:>8.2f}")
        print(f"{engine:<8} {'big/small':>10} {peaks[1] / peaks[0]:>12.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
