"""``agent-rollout demo``: the whole job on the bundled example, start to end.

1. Validate the bundled training config (``examples/grpo.yaml``).
2. Launch its ``openenv`` rollout: the drill environment served by OpenEnv on
   127.0.0.1, driven through OpenEnv's own client (``--offline``, or OpenEnv
   not installed: the same rows built without a server).
3. Normalise ``--rows`` rollout rows (100k by default) with both engines and
   print the timings side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_rollout import _engine
from agent_rollout._engine import normalise_rollout_rows
from agent_rollout._errors import ConfigError, printable
from agent_rollout._launch import launch_rollout
from agent_rollout.examples.serving import bundled_example, serve_example


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="rows to time (default 100000)")
    parser.add_argument("--offline", action="store_true", help="do not start the OpenEnv server")


def _best_ms(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Fastest run, counting the young-generation collection the call leaves behind."""
    import gc

    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        gc.collect(0)
        best = min(best, time.perf_counter() - start)
        del result
    return best * 1e3


def run(args: argparse.Namespace) -> int:
    from agent_rollout.config import load_config
    from agent_rollout.examples.openenv_rollout import offline_rollout

    config, prompts = bundled_example("grpo")
    config_path = Path(config)
    try:
        settings = load_config(str(config_path))
    except ConfigError as exc:
        print(f"demo: the bundled config is invalid:\n{exc}")  # each issue a printable line
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
    live = not args.offline and importlib.util.find_spec("openenv") is not None
    start = time.perf_counter()
    if live:
        with serve_example(kwargs) as served:  # the drill server, for the rollout_func
            result = launch_rollout(prompts=seeds, **kwargs)
        how = f"live, OpenEnv drill server at {served.drill_url}"
    else:
        offline = "agent_rollout.examples.openenv_rollout:offline_rollout"
        result = launch_rollout(prompts=seeds, **(kwargs | {"rollout_func": offline}))
        how = "offline (" + ("--offline" if args.offline else "openenv-core not installed") + ")"
    elapsed = time.perf_counter() - start
    print(
        f"2. rollout {len(result.rows)} rows from {len(seeds)} seed prompts, {how}, {elapsed:.2f} s"
    )
    print(printable(f"   first row: {json.dumps(result.rows[0], ensure_ascii=False)}"))

    raw = offline_rollout(seeds, rows=args.rows)
    print(f"3. normalise {len(raw)} message rows (engine in use: {_engine.implementation()})")
    timings: dict[str, float] = {}
    for engine in ("python", "rust"):
        if engine == "rust" and not _engine.native_available():
            print("   rust    not built")
            continue
        previous = _engine.set_engine(engine)  # type: ignore[arg-type]
        try:
            timings[engine] = _best_ms(lambda: normalise_rollout_rows(raw, max_rows=len(raw)))
        finally:
            _engine.set_engine(previous)
        print(
            f"   {engine:<7} {timings[engine]:8.1f} ms  "
            f"({len(raw) / timings[engine] * 1e3:,.0f} rows/s)"
        )
    if len(timings) == 2:
        print(f"   rust is {timings['python'] / timings['rust']:.1f}x faster than pure Python")
    return 0
