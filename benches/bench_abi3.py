"""The stable-ABI (abi3) build against a version-specific build, in one process.

    python benches/bench_abi3.py ABI3_SO VERSIONED_SO [--rows N] [--rounds R]

Run it with ``AGENT_ROLLOUT_PURE_PYTHON=1`` so the package imports neither
engine itself. Loads both compiled engines (e.g. ``_native.abi3.so`` from the wheel and
``_native.cpython-311-x86_64-linux-gnu.so`` from ``cargo build`` without the
``abi3`` feature) into one interpreter and times the row and JSONL work of
``bench_rows.py`` and ``bench_jsonl.py`` with each, alternating engine on every
round so that load on the machine falls on both alike. Prints the best time of
each and the ratio abi3 / versioned (above 1.00 means abi3 is slower).
"""

from __future__ import annotations

import argparse
import gc
import importlib.machinery
import importlib.util
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import best_settled, message_rows, string_rows
from agent_rollout import (
    _engine,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)


def load_native(path: str) -> Any:
    """Load one compiled engine under the package's module name, whatever its file name."""
    loader = importlib.machinery.ExtensionFileLoader("agent_rollout._native", path)
    spec = importlib.util.spec_from_file_location("agent_rollout._native", path, loader=loader)
    if spec is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(rows):
            row = {
                "prompt": [
                    {"role": "system", "content": "You are a careful calculator."},
                    {"role": "user", "content": f"What is {i} + {i}? Show the steps."},
                ],
                "answer": str(2 * i),
                "reward": 0.25,
                "meta": {"id": i, "tags": ["math", "add"]},
            }
            f.write(json.dumps(row) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("abi3_so")
    parser.add_argument("versioned_so")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: process CPU time, steadier on a machine that other jobs load",
    )
    args = parser.parse_args()
    natives = {"abi3": load_native(args.abi3_so), "versioned": load_native(args.versioned_so)}
    if natives["abi3"] is natives["versioned"]:
        raise SystemExit("both paths gave the same module")
    _engine.native = natives["abi3"]
    _engine.set_engine("rust")

    tmp = Path(tempfile.mkdtemp(prefix="bench_abi3-"))
    src, out = tmp / "rows.jsonl", tmp / "out.jsonl"
    write_jsonl(src, args.rows)
    strings, messages = string_rows(args.rows), message_rows(args.rows)
    work = {
        "rows: string prompts": lambda: normalise_rollout_rows(strings, max_rows=args.rows),
        "rows: message prompts": lambda: normalise_rollout_rows(messages, max_rows=args.rows),
        "read_rollout_jsonl": lambda: read_rollout_jsonl(src, max_rows=args.rows),
        "normalise_rollout_file": lambda: normalise_rollout_file(src, out, max_rows=args.rows),
    }
    best: dict[tuple[str, str], float] = {}
    for round_ in range(args.rounds):
        order = list(natives) if round_ % 2 == 0 else list(reversed(natives))
        for name in order:
            _engine.native = natives[name]
            for task, fn in work.items():
                if args.clock == "wall":
                    _, settled = best_settled(fn, 1)
                else:
                    gc.collect()
                    start = time.process_time()
                    result = fn()
                    gc.collect(0)
                    settled = time.process_time() - start
                    del result
                key = (task, name)
                best[key] = min(best.get(key, float("inf")), settled)
    size = src.stat().st_size / 1e6
    print(
        f"{args.rows} rows ({size:.1f} MB JSONL), best of {args.rounds} alternating rounds, "
        f"{args.clock} clock, including the deferred young collection"
    )
    print(f"{'work':<26} {'abi3 ms':>9} {'versioned ms':>13} {'abi3/versioned':>15}")
    for task in work:
        a, v = best[(task, "abi3")], best[(task, "versioned")]
        print(f"{task:<26} {a * 1e3:9.1f} {v * 1e3:13.1f} {a / v:14.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
