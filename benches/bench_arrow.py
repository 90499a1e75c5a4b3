"""Arrow, Parquet and Ray Data: every contender side by side in one run.

    python benches/bench_arrow.py [--rows N] [--big-rows M] [--key-rows K] [--repeat R]
        [--no-ray] [--dir D]

1. rows -> Arrow table, on ``--rows`` rows of each shape (str prompts; two-message
   prompts; four-message prompts with a tool call, whose arguments are an object,
   and a tool answer): ``rows_to_arrow`` (Rust, twin) vs
   ``pyarrow.Table.from_pylist(rows)``, and ``to_dataset`` vs
   ``datasets.Dataset.from_list(rows)``. The anchors take the raw rows as a user
   would hand them over (they do not normalise, and keep the extra keys). The
   two ratios the Arrow work is held to are printed under each table.
2. JSONL -> zstd Parquet file (the message file of ``bench_jsonl.py``):
   ``normalise_rollout_file(src, "out.parquet")`` (Rust, twin) vs
   ``pyarrow.json.read_json`` + the same rules in Python (the twin) +
   ``pyarrow.parquet.write_table``; then the peak RSS of a fresh process doing
   it on ``--rows`` and on ``--big-rows`` rows; and the peak RSS and time of a fresh
   process writing JSONL and Parquet from ``--key-rows`` rows whose messages each carry
   a key of their own (past ``MAX_MESSAGE_FIELDS`` keys, messages are JSON text: the
   Parquet figure stays near the JSONL one instead of growing with keys x rows).
3. Ray Data: the same file cut in 4 shards, ``agent_rollout.ray.normalise_shards``
   + ``write_parquet`` on a local ``ray.init(num_cpus=2)`` cluster, vs the
   single-process file function (cluster start-up reported apart).

Times are best of R and include the young-generation collection a call leaves.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from _common import best_settled, fresh_call, message_rows, peak_rss_kib, string_rows
from agent_rollout import _engine, normalise_rollout_file, normalise_rollout_rows
from agent_rollout.arrow import arrow_to_rows, rows_to_arrow, to_dataset
from bench_jsonl import write_file


def tool_call_rows(n: int) -> list[dict]:
    """Rows of a tool-calling rollout: system, user, an assistant tool call, the tool's answer."""
    return [
        {
            "prompt": [
                {"role": "system", "content": "You are a careful calculator."},
                {"role": "user", "content": f"What is {i} + {i}?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "add", "arguments": {"a": i, "b": i}},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{i}", "name": "add", "content": str(2 * i)},
            ],
            "answer": str(2 * i),
            "meta": {"id": i},
        }
        for i in range(n)
    ]


def own_key_file(path: Path, n: int) -> None:
    """``n`` rows of one message each, every message with a key of its own."""
    with path.open("w") as f:
        for i in range(n):
            message = {"role": "user", "content": "c", f"k{i}": 1}
            f.write(json.dumps({"prompt": [message], "answer": "a"}) + "\n")


def with_engine(engine: str, fn: Any) -> Any:
    def run() -> Any:
        previous = _engine.set_engine(engine)  # type: ignore[arg-type]
        try:
            return fn()
        finally:
            _engine.set_engine(previous)

    return run


def table_of(rows: list[dict], n: int) -> dict[str, Any]:
    import datasets

    contenders: dict[str, Any] = {}
    if _engine.native_available():
        contenders["rows_to_arrow rust"] = with_engine(
            "rust", lambda: rows_to_arrow(rows, max_rows=n)
        )
    contenders["rows_to_arrow twin"] = with_engine(
        "python", lambda: rows_to_arrow(rows, max_rows=n)
    )
    contenders["pa.Table.from_pylist"] = lambda: pa.Table.from_pylist(rows)
    engine = "rust" if _engine.native_available() else "python"
    contenders[f"to_dataset {engine}"] = with_engine(engine, lambda: to_dataset(rows, max_rows=n))
    contenders["Dataset.from_list"] = lambda: datasets.Dataset.from_list(rows)
    return contenders


def print_ratios(times: dict[str, float]) -> None:
    """The two ratios the Arrow work is held to (how many times faster than the anchor)."""
    engine = "rust" if "rows_to_arrow rust" in times else "twin"
    arrow_ratio = times["pa.Table.from_pylist"] / times[f"rows_to_arrow {engine}"]
    dataset_engine = "rust" if engine == "rust" else "python"
    dataset_ratio = times["Dataset.from_list"] / times[f"to_dataset {dataset_engine}"]
    print(
        f"ratios: rows_to_arrow {engine} {arrow_ratio:.2f}x faster than pa.Table.from_pylist; "
        f"to_dataset {dataset_ratio:.2f}x faster than Dataset.from_list"
    )


def without_null_keys(row: dict) -> dict:
    """A row as Arrow gives it back: message keys whose value is None are absent."""
    if isinstance(row["prompt"], str):
        return row
    prompt = [{k: v for k, v in message.items() if v is not None} for message in row["prompt"]]
    return {**row, "prompt": prompt}


def lossless(rows: list[dict]) -> str:
    """Whether each anchor keeps every row of a small probe with the same shape (a message
    key whose value is None and one that is absent count as the same)."""
    import datasets

    probe = [{k: v for k, v in rows[0].items() if k != "answer"}, *rows[1:50]]
    expected = tuple(without_null_keys(row) for row in normalise_rollout_rows(probe))
    verdicts = []
    for name, build in (
        ("from_pylist", pa.Table.from_pylist),
        ("from_list", datasets.Dataset.from_list),
    ):
        try:
            got = tuple(without_null_keys(row) for row in arrow_to_rows(build(probe)))
            verdicts.append(f"{name} {'lossless' if got == expected else 'LOSSY'}")
        except Exception as exc:
            verdicts.append(f"{name} fails ({type(exc).__name__})")
    return "; ".join(verdicts) + " (first row without an answer)"


def print_table(times: dict[str, float], rows: int, anchors: list[str]) -> None:
    base = min(times[a] for a in anchors if a in times)
    print(f"{'contender':<32} {'ms':>8} {'rows/s':>12} {'vs best anchor':>15}")
    for name, seconds in times.items():
        print(f"{name:<32} {seconds * 1e3:8.1f} {rows / seconds:12,.0f} {base / seconds:14.2f}x")


def anchor_parquet(src: Path, dest: Path, n: int) -> None:
    """pyarrow's threaded JSON reader, the rules in Python (the twin), write_table."""
    table = pa_json.read_json(src)
    previous = _engine.set_engine("python")
    try:
        out = rows_to_arrow(table.to_pylist(), max_rows=n)
    finally:
        _engine.set_engine(previous)
    pq.write_table(out, dest, compression="zstd")


def ray_section(src: Path, tmp: Path, n: int, single: float) -> None:
    import ray

    from agent_rollout.ray import normalise_shards

    shards = tmp / "shards"
    shards.mkdir()
    lines = src.read_bytes().splitlines(keepends=True)
    step = -(-len(lines) // 4)
    for i in range(4):
        (shards / f"part-{i}.jsonl").write_bytes(b"".join(lines[i * step : (i + 1) * step]))
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    started = time.perf_counter() - start
    try:
        best = float("inf")
        for attempt in range(2):  # the first run also starts the worker processes
            out = tmp / f"ray-out-{attempt}"
            start = time.perf_counter()
            normalise_shards(str(shards), prompt_kind="messages", max_rows=n).write_parquet(
                str(out)
            )
            best = min(best, time.perf_counter() - start)
        assert pq.read_table(out).num_rows == n
    finally:
        ray.shutdown()
    print(
        f"\nRay Data, 4 shards on ray.init(num_cpus=2) (start-up {started:.1f} s, not counted): "
        f"{best * 1e3:.0f} ms, {n / best:,.0f} rows/s; single process "
        f"normalise_rollout_file -> Parquet: {single * 1e3:.0f} ms, {n / single:,.0f} rows/s "
        f"(Ray at {single / best:.2f}x of it)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    parser.add_argument("--key-rows", type=int, default=6_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--dir", default=None, help="where to write the generated files")
    args = parser.parse_args()
    n = args.rows
    print(
        f"{n} rows of each shape, best of {args.repeat}, "
        f"native engine available: {_engine.native_available()}"
    )
    shapes = (
        ("str prompts", string_rows),
        ("two-message prompts", message_rows),
        ("tool-call prompts (4 messages)", tool_call_rows),
    )
    for shape, make in shapes:
        rows = make(n)
        contenders = table_of(rows, n)
        times = {
            name: best_settled(fn, 1 if "twin" in name else args.repeat)[1]
            for name, fn in contenders.items()
        }
        print(f"\nrows -> Arrow table, {shape}; {lossless(rows)}")
        print_table(times, n, ["pa.Table.from_pylist", "Dataset.from_list"])
        print_ratios(times)
        del rows, contenders

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "rollouts.jsonl"
        write_file(src, n)
        out = tmp / "out.parquet"
        size_mb = src.stat().st_size / 1e6
        files: dict[str, Any] = {}
        if _engine.native_available():
            files["normalise_rollout_file rust"] = with_engine(
                "rust", lambda: normalise_rollout_file(src, out, max_rows=n)
            )
        files["normalise_rollout_file twin"] = with_engine(
            "python", lambda: normalise_rollout_file(src, out, max_rows=n)
        )
        files["read_json + rules + write_table"] = lambda: anchor_parquet(src, tmp / "a.parquet", n)

        # Each call makes a new file (see bench_goals.py, `timed`).
        def remove_outputs() -> None:
            for made in (out, tmp / "a.parquet"):
                made.unlink(missing_ok=True)

        times = {
            name: best_settled(fn, 1 if "twin" in name else args.repeat, remove_outputs)[1]
            for name, fn in files.items()
        }
        print(f"\nJSONL ({size_mb:.1f} MB) -> zstd Parquet")
        print_table(times, n, ["read_json + rules + write_table"])

        if args.big_rows and _engine.native_available():
            small = peak_rss_kib(src, out)
            big_src = tmp / "big.jsonl"
            write_file(big_src, args.big_rows)
            big = peak_rss_kib(big_src, out)
            print(
                f"\npeak RSS, normalise_rollout_file -> Parquet (Rust): {n} rows "
                f"{small / 1024:.1f} MiB, {args.big_rows} rows {big / 1024:.1f} MiB, "
                f"ratio {big / small:.2f} (file of {big_src.stat().st_size / 1e6:.0f} MB)"
            )
            os.unlink(big_src)

        if args.key_rows:
            keys_src = tmp / "keys.jsonl"
            own_key_file(keys_src, args.key_rows)
            figures = [
                f"{suffix} {got['peak_kib'] / 1024:.1f} MiB, {got['seconds']:.2f} s"
                for suffix in ("jsonl", "parquet")
                for got in [fresh_call(keys_src, tmp / f"keys.out.{suffix}")]
            ]
            print(
                f"\na key per message, {args.key_rows} rows "
                f"({keys_src.stat().st_size / 1e3:.0f} KB), fresh process, default engine: "
                + "; ".join(figures)
            )

        if not args.no_ray:
            single = (
                times.get("normalise_rollout_file rust") or times["normalise_rollout_file twin"]
            )
            ray_section(src, tmp, n, single)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
