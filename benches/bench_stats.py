"""``agent-rollout stats`` against the engine's own read, on Parquet against JSONL, and
on a row of many keys, in one run.

    python benches/bench_stats.py [--rows 1000000] [--small 100000] [--repeat R] \
        [--rounds 7] [--keys 20000,200000] [--dir D] [--engines rust,python] \
        [--parts 1,2,3,4,5] [--compile]

Writes ``bench_jsonl.py``'s file (two-message prompts with extra keys, about
450 bytes a row) of ``--rows`` and ``--small`` rows once into ``--dir``, and the
same rows as Parquet (pyarrow's JSON reader into pyarrow's writer: all five
columns, a row group per 16 MiB of JSON; and, ``--rows`` only, the same in one
row group), kept there for later runs. Then:

1. for each engine, best of R with the contenders taking turns: ``stats``
   (``_engine.stats.jsonl_stats``) against the engine's read of the same file,
   the floor: ``normalise_rollout_file`` to ``/dev/null`` and, Rust only, its
   Arrow read (``_engine.arrow.file_batches``, the batches dropped). Goal: stats
   within 1.3x of the engine's read.
2. the command, ``agent-rollout stats FILE --format json``, each run a process of
   its own (the time a user waits, start-up and imports included; the peak
   resident memory, ``VmHWM``), the ``--rows`` JSONL and Parquet files taking
   turns for ``--rounds`` rounds after a warm-up run of each: best and median of
   each, Parquet over JSONL, and the CPU time of each. Goal: Parquet at most
   1.0x the JSONL time, its peak under 150 MiB whatever the file: the highest
   of 3 runs on the small file and on the one-row-group file too. The runs
   read and write compiled bytecode (``PYTHONPYCACHEPREFIX``, in ``--dir``
   unless set), as an installed package has it: with
   ``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` beside the sources,
   each run would compile what it imports, pyarrow's and numpy's modules for
   Parquet (``--compile`` measures that).
3. a file of one row with N distinct keys (``--keys``), ``stats`` on each engine,
   best of R. Goal: time in proportion to the keys (10x the keys, about 10x
   the time), not their square.
4. from a fresh process per run, the peak resident memory of ``stats`` on
   ``--small`` and on ``--rows`` rows of JSONL, per engine (goal: flat, the big
   file within 1.2x of the small one).
5. the command on Parquet files of unusual shape, a process each (written once
   into ``--dir``): one value of 300 MiB (zstd, 10 KB), with the default
   ``--max-bytes`` and with ``--max-bytes 1MiB`` (refused from the footer);
   200,000 and 40,000 one-row row groups (footers of 42 and 7.5 MB: the first
   over ``MAX_PARQUET_FOOTER_BYTES``, refused); 32,768 rows of 4 KB in one row
   group (batches by bytes); 20,000 rows repeating 50 values of 10 KB through a
   column chunk's dictionary (what the footer cannot see). Exit code, seconds,
   CPU and peak resident memory of each: goal, a peak that does not grow with
   the rows or row groups, except the single value and the dictionary's.

The machine's load average and the CPU time the host took (steal) are printed
with each part: on a shared machine, read the best figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _common import cpu_ticks, stolen_since
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

# The command as its console script runs it, its phases timed by the process itself:
# the interpreter and the command's own imports, pyarrow's (Parquet; the command would
# make them itself), the count. The peak (VmHWM) is read at its end, by the process
# itself (a child's ru_maxrss starts at its parent's on Linux).
FRESH_COMMAND = """
import sys, time
started = time.perf_counter()
from agent_rollout.cli import main
import agent_rollout.cli.stats
imported = time.perf_counter()
if sys.argv[1].endswith(".parquet"):
    import pyarrow.parquet
    import pyarrow.compute
    import agent_rollout.arrow.stats
arrow = time.perf_counter()
code = main(["stats", sys.argv[1], "--format", "json", "--max-rows", "10000000", *sys.argv[2:]])
done = time.perf_counter()
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(code, peak, started, imported - started, arrow - imported, done - arrow, file=sys.stderr)
"""

PHASES = ("start-up", "pyarrow", "count")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min), {os.cpu_count()} CPUs"


def command_env(folder: Path, compile_sources: bool) -> dict[str, str]:
    """The environment of the command's runs: compiled bytecode kept in
    ``PYTHONPYCACHEPREFIX`` (``folder``'s ``pycache`` unless set), unless
    ``compile_sources``."""
    env = dict(os.environ)
    if not compile_sources:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("PYTHONPYCACHEPREFIX", str(folder / "pycache"))
    return env


def fresh_command(
    path: Path, env: dict[str, str], *args: str
) -> tuple[float, float, int, dict[str, float], int]:
    """Seconds, CPU seconds and peak resident KiB of ``agent-rollout stats PATH ARGS``
    in a process of its own, from its start to its end, the seconds of its
    ``PHASES`` and its exit code."""
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", FRESH_COMMAND, str(path), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seconds = time.perf_counter() - start
    after = os.times()
    cpu = after.children_user + after.children_system
    cpu -= before.children_user + before.children_system
    code, peak, started, imports, arrow, count = out.stderr.split()[-6:]
    # perf_counter is one clock across processes here (CLOCK_MONOTONIC).
    startup = float(started) - start + float(imports)
    phases = dict(zip(PHASES, (startup, float(arrow), float(count)), strict=True))
    return seconds, cpu, int(peak), phases, int(code)


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


def cached_parquet(jsonl: Path, one_group: bool = False) -> Path:
    """The rows of ``jsonl`` as Parquet, every column (a row group per 16 MiB of JSON,
    or, ``one_group``, all in one)."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    path = jsonl.with_name(jsonl.stem + ("-1group" if one_group else "") + ".parquet")
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    reader = pj.open_json(jsonl, read_options=pj.ReadOptions(block_size=1 << 24))
    if one_group:
        table = pa.Table.from_batches(list(reader), reader.schema)
        pq.write_table(table, partial, row_group_size=table.num_rows)
    else:
        with pq.ParquetWriter(partial, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
    partial.rename(path)
    return path


def cached_keys(folder: Path, keys: int) -> Path:
    """A file of one row with ``keys`` distinct keys besides its prompt."""
    path = folder / f"stats-keys-{keys}.jsonl"
    if not path.exists():
        row = {"prompt": "many keys", **{f"key{i}": i for i in range(keys)}}
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
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


def against_the_read(big: Path, rows: int, engines: list[str], repeat: int) -> None:
    """Part 1: ``stats`` against the engine's own read of the same file."""
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
            best = turns(contenders, repeat if engine == "rust" else max(1, repeat // 3))
        finally:
            _engine.set_engine(previous)
        for name, seconds in best.items():
            ratio = best["stats"] / seconds
            print(
                f"{engine:<8} {name:<28} {seconds:>8.3f} {rows / seconds:>12,.0f} {ratio:>10.2f}x"
            )


def parquet_against_jsonl(files: dict[str, Path], rounds: int, env: dict[str, str]) -> None:
    """Part 2: the command on the same rows as JSONL and as Parquet, a process a run,
    taking turns after a warm-up run of each; where the time goes (median of each
    phase); then the peaks of the other Parquet files."""
    kinds = ("jsonl", "parquet")
    print(
        "bytecode: "
        + (
            f"kept in {env['PYTHONPYCACHEPREFIX']}"
            if "PYTHONPYCACHEPREFIX" in env and "PYTHONDONTWRITEBYTECODE" not in env
            else "as the environment has it"
        )
    )
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpus: dict[str, list[float]] = {kind: [] for kind in kinds}
    peaks: dict[str, list[int]] = {kind: [] for kind in kinds}
    phases: dict[str, dict[str, list[float]]] = {kind: {p: [] for p in PHASES} for kind in kinds}
    for kind in kinds:
        fresh_command(files[kind], env)  # the bytecode written, the file in the page cache
    for _ in range(rounds):
        for kind in kinds:
            took, cpu, peak, parts, code = fresh_command(files[kind], env)
            assert code == 0, (files[kind], code)
            seconds[kind].append(took)
            cpus[kind].append(cpu)
            peaks[kind].append(peak)
            for phase, spent in parts.items():
                phases[kind][phase].append(spent)
    print(
        f"{'file':<28} {'best s':>7} {'median s':>9} {'CPU s':>6} {'peak RSS MiB':>13}   "
        + ", ".join(f"{phase} s" for phase in PHASES)
        + " (medians)"
    )
    for kind in kinds:
        split = ", ".join(f"{statistics.median(phases[kind][p]):.3f}" for p in PHASES)
        print(
            f"{files[kind].name:<28} {min(seconds[kind]):>7.3f} "
            f"{statistics.median(seconds[kind]):>9.3f} {statistics.median(cpus[kind]):>6.3f} "
            f"{max(peaks[kind]) / 1024:>13.1f}   {split}"
        )
    best = min(seconds["parquet"]) / min(seconds["jsonl"])
    middle = statistics.median(seconds["parquet"]) / statistics.median(seconds["jsonl"])
    print(f"Parquet / JSONL time: best {best:.2f}x, median {middle:.2f}x (goal: at most 1.00x)")
    for name in ("small parquet", "one-group parquet"):
        peak = max(fresh_command(files[name], env)[2] for _ in range(3))
        print(f"{files[name].name:<28} peak RSS {peak / 1024:.1f} MiB (goal: under 150 MiB)")


def odd_parquet(folder: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """Part 5's files, written once into ``folder``: each case's file and arguments."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def cached(name: str, table: Callable[[], Any], **write: Any) -> Path:
        path = folder / f"odd-{name}.parquet"
        if not path.exists():
            partial = path.with_suffix(".partial")
            pq.write_table(table(), partial, **write)
            partial.rename(path)
        return path

    def groups(rows: int) -> Path:
        return cached(
            f"row-groups-{rows}",
            lambda: pa.table(
                {
                    "prompt": [f"question {i}" for i in range(rows)],
                    "answer": [f"a{i}" for i in range(rows)],
                }
            ),
            row_group_size=1,
        )

    value = cached(
        "long-value", lambda: pa.table({"prompt": ["x" * (300 << 20)]}), compression="zstd"
    )
    long_rows = cached(
        "long-rows",
        lambda: pa.table({"prompt": [f"{i:08d}" + "x" * 4000 for i in range(32_768)]}),
        compression="zstd",
    )
    repeated = cached(
        "dictionary",
        lambda: pa.table({"prompt": [f"{i % 50:05d}" + "y" * 10_000 for i in range(20_000)]}),
    )
    return {
        "one value of 300 MiB": (value, ()),
        "the same, --max-bytes 1MiB": (value, ("--max-bytes", "1MiB")),
        "200,000 one-row row groups": (groups(200_000), ()),
        "40,000 one-row row groups": (groups(40_000), ()),
        "32,768 rows of 4 KB": (long_rows, ()),
        "50 values of 10 KB repeated": (repeated, ()),
    }


def odd_shapes(cases: dict[str, tuple[Path, tuple[str, ...]]], env: dict[str, str]) -> None:
    """Part 5: the command on Parquet files of unusual shape, a process each."""
    print(f"{'file':<30} {'MB':>7} {'exit':>4} {'seconds':>8} {'CPU s':>6} {'peak RSS MiB':>13}")
    for name, (path, args) in cases.items():
        seconds, cpu, peak, _, code = fresh_command(path, env, *args)
        size = path.stat().st_size / 1e6
        print(f"{name:<30} {size:>7.2f} {code:>4} {seconds:>8.2f} {cpu:>6.2f} {peak / 1024:>13.1f}")


def many_keys(files: list[Path], counts: list[int], engines: list[str], repeat: int) -> None:
    """Part 3: one row of many distinct keys, on each engine."""
    print(f"{'engine':<8} {'keys':>9} {'seconds':>8} {'us / key':>9}")
    for engine in engines:
        previous = _engine.set_engine(engine)  # type: ignore[arg-type]
        try:
            # One file at a time: a call after a bigger file's pays for freeing its memory.
            best = {
                str(n): turns({"stats": partial(jsonl_stats, str(path), LIMITS)}, repeat)["stats"]
                for n, path in zip(counts, files, strict=True)
            }
        finally:
            _engine.set_engine(previous)
        for n in counts:
            print(f"{engine:<8} {n:>9,} {best[str(n)]:>8.3f} {best[str(n)] / n * 1e6:>9.2f}")


def flat_memory(small: Path, big: Path, rows: tuple[int, int], engines: list[str]) -> None:
    """Part 4: peak resident memory of ``stats`` on the small and the big JSONL file."""
    print(f"{'engine':<8} {'rows':>10} {'peak RSS MiB':>13} {'seconds':>8}")
    for engine in engines:
        peaks = []
        for path, count in zip((small, big), rows, strict=True):
            got = fresh_stats(path, engine)
            assert got["rows"] == count, got
            peaks.append(got["peak_kib"])
            print(
                f"{engine:<8} {count:>10,} {got['peak_kib'] / 1024:>13.1f} {got['seconds']:>8.2f}"
            )
        print(f"{engine:<8} {'big/small':>10} {peaks[1] / peaks[0]:>12.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keys", default="20000,200000")
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "agent-rollout-bench"
    )
    parser.add_argument("--engines", default="rust,python")
    parser.add_argument(
        "--parts", default="1,2,3,4,5", help="which parts to run (see the docstring)"
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="part 2: run with the environment's bytecode settings (see the docstring)",
    )
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    big = cached_file(args.dir, args.rows)
    small = cached_file(args.dir, args.small)
    engines = [e for e in args.engines.split(",") if e != "rust" or _engine.native_available()]
    print(f"{big}: {args.rows:,} rows, {big.stat().st_size / 1e6:,.0f} MB")
    sections: list[tuple[str, Callable[[], None]]] = []
    if "1" in parts:
        sections.append(
            (
                "1. stats against the engine's read",
                lambda: against_the_read(big, args.rows, engines, args.repeat),
            )
        )
    if "2" in parts:
        files = {
            "jsonl": big,
            "parquet": cached_parquet(big),
            "small parquet": cached_parquet(small),
            "one-group parquet": cached_parquet(big, one_group=True),
        }
        engine = "rust" if _engine.native_available() else "python"
        sections.append(
            (
                f"2. the command, a process a run, engine {engine}",
                lambda: parquet_against_jsonl(
                    files, args.rounds, command_env(args.dir, args.compile)
                ),
            )
        )
    if "3" in parts:
        counts = [int(n) for n in args.keys.split(",")]
        keyed = [cached_keys(args.dir, n) for n in counts]
        sections.append(
            ("3. one row of many keys", lambda: many_keys(keyed, counts, engines, args.repeat))
        )
    if "4" in parts:
        sections.append(
            (
                "4. peak memory, JSONL",
                lambda: flat_memory(small, big, (args.small, args.rows), engines),
            )
        )
    if "5" in parts:
        cases = odd_parquet(args.dir)
        sections.append(
            (
                "5. the command on Parquet of unusual shape",
                lambda: odd_shapes(cases, command_env(args.dir, args.compile)),
            )
        )
    for title, run in sections:
        print(f"\n{title} ({load()})")
        before = cpu_ticks()
        run()
        print(f"{stolen_since(before)}; {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
