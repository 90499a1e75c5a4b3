"""Row normalisation, 100k rows, every contender side by side in one run.

    python benches/bench_rows.py [--rows N] [--repeat R]

Contenders: the reference normaliser (from ../shared/reference when present),
our pure-Python twin, our Rust engine, pydantic ``TypeAdapter(list[TypedDict])``
and ``msgspec.convert(rows, list[TypedDict])``. Prints times, ratios against
the reference and msgspec, and peak memory (tracemalloc) per engine.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any, Union

import msgspec
from pydantic import TypeAdapter
from typing_extensions import NotRequired, TypedDict  # 3.10 has no typing.NotRequired

import agent_rollout
from _common import best_settled, load_reference, message_rows, peak_bytes, string_rows
from agent_rollout import _engine


class Message(TypedDict):
    role: str
    content: str


class Row(TypedDict):
    prompt: Union[str, list[Message]]
    answer: NotRequired[str]


def contenders(reference: Any) -> dict[str, Any]:
    adapter = TypeAdapter(list[Row])
    out: dict[str, Any] = {}
    if reference is not None:
        out["reference"] = lambda rows: reference._normalise_rollout_rows(rows, "openenv")

    def ours(engine: str) -> Any:
        def run(rows: list) -> Any:
            previous = _engine.set_engine(engine)  # type: ignore[arg-type]
            try:
                return agent_rollout.normalise_rollout_rows(rows)
            finally:
                _engine.set_engine(previous)

        return run

    out["twin (python)"] = ours("python")
    if _engine.native_available():
        out["rust"] = ours("rust")
    out["pydantic TypeAdapter"] = adapter.validate_python
    out["msgspec.convert"] = lambda rows: msgspec.convert(rows, list[Row])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    reference = load_reference()
    if reference is None:
        print("note: ../shared/reference not found; the reference is left out", file=sys.stderr)
    runners = contenders(reference)
    print(
        f"agent_rollout {agent_rollout.__version__}, default engine: "
        f"{agent_rollout.implementation()}; {args.rows} rows, best of {args.repeat}"
    )
    for shape, make in (
        ("string prompt + answer + 2 extra keys", string_rows),
        ("system+user messages + answer + 1 extra key", message_rows),
    ):
        rows = make(args.rows)
        times = {name: best_settled(partial(fn, rows), args.repeat) for name, fn in runners.items()}
        print(f"\n## {shape}")
        print(
            f"{'contender':<22} {'call ms':>8} {'+gc0 ms':>8} {'vs reference':>13} "
            f"{'vs msgspec':>11} {'peak MiB':>9}"
        )
        base = times.get("reference")
        msg = times["msgspec.convert"]
        for name, (call, settled) in times.items():
            peak = peak_bytes(partial(runners[name], rows)) / 2**20
            ref = f"{base[1] / settled:.2f}x" if base else "-"
            print(
                f"{name:<22} {call * 1e3:8.1f} {settled * 1e3:8.1f} {ref:>13} "
                f"{msg[1] / settled:10.2f}x {peak:9.1f}"
            )
    print(
        "\n'call ms' is the call alone; '+gc0 ms' adds the young-generation collection"
        " the call leaves behind (gc.collect(0) right after it). Ratios use '+gc0'."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
