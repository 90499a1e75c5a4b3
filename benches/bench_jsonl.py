"""Rollout JSONL files: every contender side by side in one run.

    python benches/bench_jsonl.py [--rows N] [--repeat R] [--big-rows M] [--dir D]

Generates a JSONL file of two-message prompts with extra keys (100k rows,
about 36 MB, by default), then times, best of R:

- reading the file's bytes (the floor);
- ``read_rollout_jsonl`` (Rust, and the pure-Python twin);
- ``orjson.loads`` per line + the reference normaliser;
- ``msgspec.json.Decoder(Row)`` per line (typed decode, no normalisation);
- ``normalise_rollout_file`` (Rust, and the twin) against orjson + reference +
  ``orjson.dumps`` writing a file.

Then peak memory (max RSS of a fresh process) of ``normalise_rollout_file`` on
``--rows`` and on ``--big-rows`` (1M by default) rows.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Union

import msgspec
import orjson
from typing_extensions import NotRequired, TypedDict  # pydantic wants these on 3.10-3.11

from _common import best_settled, load_reference, new_file, peak_rss_kib
from agent_rollout import _engine, normalise_rollout_file, read_rollout_jsonl


class Message(TypedDict):
    role: str
    content: str


class Row(TypedDict):
    prompt: Union[str, list[Message]]
    answer: NotRequired[str]


def write_file(path: Path, rows: int) -> None:
    filler = "Solve carefully and show the final number only. " * 4
    with path.open("wb") as out:
        for i in range(rows):
            row = {
                "id": f"task-{i:08d}",
                "prompt": [
                    {"role": "system", "content": "You are a careful calculator. " + filler},
                    {"role": "user", "content": f"What is {i} + {i}? Think step by step."},
                ],
                "answer": str(2 * i),
                "reward": 0.25 * (i % 4),
                "metadata": {"source": "bench", "split": "train", "difficulty": i % 5},
            }
            out.write(orjson.dumps(row) + b"\n")


def with_engine(engine: str, fn: Any) -> Any:
    def run() -> Any:
        previous = _engine.set_engine(engine)  # type: ignore[arg-type]
        try:
            return fn()
        finally:
            _engine.set_engine(previous)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write the generated files")
    args = parser.parse_args()
    reference = load_reference()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        src = Path(tmp) / "rollouts.jsonl"
        write_file(src, args.rows)
        size_mb = src.stat().st_size / 1e6
        out = Path(tmp) / "out.jsonl"
        print(
            f"{args.rows} rows, {size_mb:.1f} MB, best of {args.repeat}, "
            f"native engine available: {_engine.native_available()}"
        )

        def orjson_reference() -> Any:
            with src.open("rb") as f:
                rows = [orjson.loads(line) for line in f if line.strip()]
            return reference._normalise_rollout_rows(rows, "openenv")

        decoder = msgspec.json.Decoder(Row)

        def msgspec_decode() -> Any:
            with src.open("rb") as f:
                return [decoder.decode(line) for line in f if line.strip()]

        def orjson_reference_write() -> None:
            rows = orjson_reference()
            with out.open("wb") as f:
                for row in rows:
                    f.write(orjson.dumps(row) + b"\n")

        read: dict[str, Any] = {"read bytes (floor)": src.read_bytes}
        if _engine.native_available():
            read["read_rollout_jsonl rust"] = with_engine(
                "rust", lambda: read_rollout_jsonl(src, max_rows=args.rows)
            )
        read["read_rollout_jsonl twin"] = with_engine(
            "python", lambda: read_rollout_jsonl(src, max_rows=args.rows)
        )
        if reference is not None:
            read["orjson + reference"] = orjson_reference
        read["msgspec Decoder(Row)"] = msgspec_decode

        write: dict[str, Any] = {}
        if _engine.native_available():
            write["normalise_rollout_file rust"] = with_engine(
                "rust", lambda: normalise_rollout_file(src, out, max_rows=args.rows)
            )
        write["normalise_rollout_file twin"] = with_engine(
            "python", lambda: normalise_rollout_file(src, out, max_rows=args.rows)
        )
        if reference is not None:
            write["orjson + reference + dumps"] = orjson_reference_write

        # Times include the young-generation collection a call leaves behind. Each
        # writer makes a new file (the last one's is removed, untimed): replacing a
        # file already on disk adds the freeing of its blocks to the call
        # (bench_goals.py, `timed`).
        times = {
            name: best_settled(fn, args.repeat, new_file(out) if name in write else None)[1]
            for name, fn in (read | write).items()
        }
        floor = times["read bytes (floor)"]
        base_read = times.get("orjson + reference")
        base_write = times.get("orjson + reference + dumps")
        print(
            f"\n{'contender':<30} {'ms':>8} {'MB/s':>8} {'rows/s':>12} {'vs orjson+ref':>14} "
            f"{'vs floor':>9}"
        )
        for name, seconds in times.items():
            base = base_write if name in write else base_read
            ratio = f"{base / seconds:.2f}x" if base else "-"
            print(
                f"{name:<30} {seconds * 1e3:8.1f} {size_mb / seconds:8.0f} "
                f"{args.rows / seconds:12,.0f} {ratio:>14} {seconds / floor:8.1f}x"
            )

        if args.big_rows and _engine.native_available():
            small = peak_rss_kib(src, out)
            big_src = Path(tmp) / "big.jsonl"
            start = time.perf_counter()
            write_file(big_src, args.big_rows)
            made = time.perf_counter() - start
            big = peak_rss_kib(big_src, out)
            print(
                f"\npeak RSS of a process running normalise_rollout_file: {args.rows} rows "
                f"{small / 1024:.1f} MiB, {args.big_rows} rows {big / 1024:.1f} MiB, "
                f"ratio {big / small:.2f} (file of {big_src.stat().st_size / 1e6:.0f} MB, "
                f"made in {made:.1f} s)"
            )
            os.unlink(big_src)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
