"""``agent-rollout demo``: the whole job on the bundled example, start to end.

1. Validate the bundled training config (``examples/grpo.yaml``).
2. Launch its ``openenv`` rollout: the drill environment served by OpenEnv on
   127.0.0.1, driven through OpenEnv's own client (``--offline``, or OpenEnv
   not installed or not importable: the same rows built without a server).
3. Normalise ``--rows`` rollout rows (100k by default) with both engines, as
   Python objects (``normalise_rollout_rows``) and file to file (a JSONL file
   to a JSONL file, ``normalise_rollout_file``: what ``agent-rollout
   normalise`` does), and print the timings side by side; the headline
   speed-up is the file-to-file one.

A progress line (on a terminal) shows the step that is running, the drill
server's start included (seconds: OpenEnv's import); the rollout's line gives
the server's start and the rollout's own time apart. A Rust engine
built with the debug profile (``make build``, ``maturin develop``) is several
times slower than a release build: the demo says so on standard error first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agent_rollout import _engine
from agent_rollout._engine import normalise_rollout_rows
from agent_rollout._errors import ConfigError, printable
from agent_rollout._io import normalise_rollout_file
from agent_rollout._launch import launch_rollout
from agent_rollout._limits import MAX_ROWS_LIMIT
from agent_rollout.cli._args import positive_rows
from agent_rollout.cli._progress import Progress, format_count, say
from agent_rollout.examples.serving import bundled_example, serve_example

PROG = "agent-rollout demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rows",
        type=positive_rows,
        default=100_000,
        metavar="N",
        help=f"rows to time, 1 to {MAX_ROWS_LIMIT:,} (default 100,000)",
    )
    parser.add_argument("--offline", action="store_true", help="do not start the OpenEnv server")


def _best_ms(fn: Callable[[], Any], repeat: int = 3, budget_s: float = 0.5) -> float:
    """Fastest of ``repeat`` runs, counting the young-generation collection the call leaves
    behind; no further run once ``budget_s`` seconds were spent (a long run is steady)."""
    import gc

    best = float("inf")
    spent = 0.0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        gc.collect(0)
        took = time.perf_counter() - start
        best = min(best, took)
        spent += took
        del result
        if spent >= budget_s:
            break
    return best * 1e3


def debug_build_warning() -> str | None:
    """The one-line warning for a Rust engine built with the debug profile, else None."""
    if _engine.build_profile() != "debug":
        return None
    return (
        f"{PROG}: warning: the Rust engine is a debug build, several times slower than a "
        "release build: rebuild it with `make build-release` (or `maturin develop --release`)"
    )


def _time_engines(raw: Sequence[Any], folder: Path, progress: Progress) -> dict[str, list[float]]:
    """Each engine's best time (ms) on the Python objects and on the JSONL file, in that order."""
    src, dst = folder / "rollouts.jsonl", folder / "normalised.jsonl"
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    src.write_text("\n".join(map(encode, raw)) + "\n", encoding="utf-8")
    timings: dict[str, list[float]] = {}
    for engine in _engine.available():
        previous = _engine.set_engine(engine)
        try:
            with progress.ticking(f"{engine}, Python objects"):
                objects = _best_ms(lambda: normalise_rollout_rows(raw, max_rows=len(raw)))
            with progress.ticking(f"{engine}, file to file"):
                files = _best_ms(lambda: normalise_rollout_file(src, dst, max_rows=len(raw)))
        finally:
            _engine.set_engine(previous)
        timings[engine] = [files, objects]
    return timings


def _why_offline() -> str | None:
    """Why the rollout cannot run live against the drill server, or None when it can.

    `make demo` installs openenv-core without the packages the drill never imports
    (scripts/demo-excludes.txt); should a later openenv-core import one of them, the
    demo runs its rollout offline and names the module, rather than stop.
    """
    if importlib.util.find_spec("openenv") is None:
        return "openenv-core not installed"
    try:
        import agent_rollout.examples.openenv_drill.client
        import agent_rollout.examples.openenv_drill.server  # noqa: F401
    except ImportError as exc:
        return printable(f"openenv-core cannot be imported: {exc}")
    return None


def _rate(rows: int, ms: float) -> str:
    return f"{ms:9.1f} ms {rows / ms * 1e3:>11,.0f} rows/s"


def run(args: argparse.Namespace) -> int:
    from agent_rollout.config import load_config
    from agent_rollout.examples.openenv_rollout import offline_rollout

    warning = debug_build_warning()
    if warning is not None:
        say(warning)
    config, prompts = bundled_example("grpo")
    config_path = Path(config)
    try:
        settings = load_config(str(config_path))
    except ConfigError as exc:
        say(f"{PROG}: the bundled config is invalid")
        sys.stderr.write(f"{exc}\n")  # each issue a printable line
        return 1
    kwargs = settings.to_launch_kwargs()
    print(
        printable(
            f"1. config  {config_path.name}: valid; backend={kwargs['name']} "
            f"rollout_func={kwargs['rollout_func']} max_steps={kwargs['max_steps']}"
        )
    )

    seeds = [
        json.loads(line)
        for line in Path(prompts).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    progress = Progress("2. rollout")
    try:
        why_offline = "--offline" if args.offline else None
        start = time.perf_counter()
        if why_offline is None:
            # OpenEnv's import is most of the server's start-up (seconds): under the line,
            # and in the time the server took to start.
            with progress.ticking("loading OpenEnv"):
                why_offline = _why_offline()
        if why_offline is None:
            with ExitStack() as stack:
                with progress.ticking(None):  # serve_example says what starts
                    # The drill server, for the rollout_func; stopped when the stack closes.
                    served = stack.enter_context(serve_example(kwargs, starting=progress.show))
                    serving = time.perf_counter() - start
                start = time.perf_counter()
                with progress.ticking(f"openenv rollout on {len(seeds)} seed prompts"):
                    result = launch_rollout(prompts=seeds, **kwargs)
                elapsed = time.perf_counter() - start
            how = (
                f"live, OpenEnv drill server at {served.drill_url}: "
                f"server started in {serving:.2f} s; {len(result.rows)} rows in {elapsed:.2f} s"
            )
        else:
            offline = "agent_rollout.examples.openenv_rollout:offline_rollout"
            start = time.perf_counter()
            with progress.ticking(f"offline rollout on {len(seeds)} seed prompts"):
                result = launch_rollout(prompts=seeds, **(kwargs | {"rollout_func": offline}))
            elapsed = time.perf_counter() - start
            how = f"offline ({why_offline}): {len(result.rows)} rows in {elapsed:.2f} s"
    finally:
        progress.finish()
    print(f"2. rollout {len(result.rows)} rows from {len(seeds)} seed prompts, {how}")
    print(printable(f"   first row: {json.dumps(result.rows[0], ensure_ascii=False)}"))

    raw = offline_rollout(seeds, rows=args.rows)
    print(
        f"3. normalise {format_count(len(raw))} message rows with both engines "
        f"(engine in use: {_engine.implementation()})"
    )
    progress = Progress("3. normalise")
    try:
        with tempfile.TemporaryDirectory(prefix="agent-rollout-demo-") as folder:
            timings = _time_engines(raw, Path(folder), progress)
    finally:
        progress.finish()
    print(f"   {'':<7}{'file to file (JSONL)':>33}  {'Python objects':>32}")
    for engine in _engine.ENGINES:
        if engine not in timings:
            print(f"   {engine:<7}not built")
            continue
        files, objects = timings[engine]
        print(f"   {engine:<7}{_rate(len(raw), files)}  {_rate(len(raw), objects)}")
    if len(timings) == 2:
        (py_files, py_objects), (rust_files, rust_objects) = timings["python"], timings["rust"]
        print(
            f"   rust is {py_files / rust_files:.1f}x faster than pure Python file to file "
            f"({py_objects / rust_objects:.1f}x on Python objects)"
        )
    return 0
