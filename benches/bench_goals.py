"""The file and Arrow outputs against their anchors and floors, every ratio in one table.

    python benches/bench_goals.py [--rows N] [--scale 10000,100000,1000000] [--repeat R]
        [--rounds K] [--dir D]

One run, one process for the timings (a fresh process per file for peak memory):

- rows -> Arrow: ``rows_to_arrow`` (Rust) vs ``pa.Table.from_pylist(rows)``, and
  ``to_dataset`` vs ``datasets.Dataset.from_list(rows)``, for str prompts,
  two-message prompts and four-message tool-call prompts (goal: 3x faster);
  the rows carry keys our row rules drop (``reward`` and ``id``, or ``meta``),
  which ``from_pylist`` converts too: for reference, the same rows cut to
  ``prompt`` and ``answer`` (outside the timing), ours against ``from_pylist``;
- JSONL -> zstd Parquet (``normalise_rollout_file``) vs its floor, reading the
  file's bytes plus ``pq.write_table`` of the finished table with the same
  compression (goal: within 1.5x), and vs pyarrow's own pipeline,
  ``pyarrow.json.read_json`` + select + ``pq.write_table`` (goal: 2x faster);
  for reference, also vs reading the bytes plus the table written with our
  writer's settings (``parquet_writer``) in our output's row groups: the issue's
  floor uses pyarrow's defaults, whose dictionaries and statistics on every
  column make ``write_table`` slower (by 20-40% in runs on this machine);
- JSONL -> JSONL vs reading the file's bytes (goal: within 2x), and, for
  reference, vs reading the bytes plus writing the output's bytes to a file.
  ``read_bytes`` makes a new bytes object each call, and for a file of tens of MB
  most of its time is the kernel handing it fresh zeroed pages: a read into a
  buffer kept between calls (1 MiB pieces, as our engine reads) is shown too, a
  tighter floor for both file paths;
- scale: each file path on ``--scale`` rows. Rows per second in one process per
  output format (after an untimed call on a 1-row file and one of every
  contender on each size's file: imports and first-call set-up are not per-row
  costs), in ``--rounds`` rounds: in each round every size takes its turn, and
  within it every contender, the orders turning round by round; each contender
  makes as many calls as make about the largest size's rows (100 calls of 10k
  rows, one of 1M), so that each size's figure covers about the same rows and
  has as many samples (the best round counts). The contenders are ours and
  each size's floors (a file's fixed costs weigh on 10k rows there too): for
  JSONL, copying the file on one thread, and, as a floor of the machine's own
  for using both CPUs in one call, two threads (one started per call) hashing the
  file's halves, whose median call is compared with its fastest as ours is; for
  Parquet, pyarrow writing the same rows again with our writer's settings and row
  groups, the same rows parsed
  into Arrow alone (``read_rollout_table``), and parsed, then that table
  written as ours. A file of one row group (10k rows) is parsed, then encoded
  (a group on one thread, once its last row is in): parse-then-write is about
  the rate it can reach without encoding in parallel; on bigger files ours
  overlaps the two. Our calls are also timed one by one: each size's fastest
  call and median call, in rows per second (a small size makes more calls, so
  its fastest call is the best of more tries: a bias toward small sizes; on two
  CPUs a 10k-row call's time varies from call to call). Each contender's CPU
  time per 10k rows at each size, in user code and in the kernel (every thread
  of the process, over its timed calls), says where a size's extra time goes.
  And from a fresh process per size, the first call's rows per second and peak
  RSS (goal: RSS at the largest size within 1.2x of 100k rows, and rows per
  second flat).

The file is ``bench_jsonl.py``'s (two-message prompts with extra keys, about 450
bytes a row). Times are best of R after one warm-up call, each followed by the
young-generation collection it leaves (``_common.best_settled``); the contenders
of a table row take turns, one call each per round. Every output is a new file
(and, on a line of its own, JSONL replacing a file already on disk).

The table and the scale part each end with the share of the machine's CPU time
the hypervisor gave to other guests meanwhile (steal, from /proc/stat, as a
share of the time the CPUs were not idle): on a shared VM, figures measured
while it is more than a few percent are the host's load as much as ours.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from _common import (
    best_settled,
    cpu_ticks,
    fresh_call,
    message_rows,
    new_file,
    row_groups,
    stolen_since,
    string_rows,
    write_as_ours,
)
from agent_rollout import _engine, normalise_rollout_file
from agent_rollout.arrow import rows_to_arrow, to_dataset
from bench_arrow import tool_call_rows
from bench_jsonl import write_file

Row = tuple[str, float, str, float, str, str]
"""(work, ours ms, anchor or floor, its ms, ratio text, goal text)"""


Call = tuple[Callable[[], Any], "Callable[[], Any] | None"]
"""A contender, and what to do before each of its calls, untimed (if anything)."""


def old_file(path: Path, content: bytes) -> Callable[[], Any]:
    """Before a call: put ``content`` at ``path``, on disk (fsync), for the call to replace."""

    def make() -> None:
        path.unlink(missing_ok=True)
        with path.open("wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())

    return make


def timed(calls: dict[str, Call], repeat: int) -> dict[str, float]:
    """Each contender's best of ``repeat`` (ms, with the collection the call leaves),
    after one warm-up call each; the contenders take turns, one call each per round,
    so that a slow spell of this VM falls on all of them, not on whichever ran then.

    A contender that writes a file writes a new one (``new_file``), as a job run
    once does; ``file_rows`` shows replacing a file already on disk on a line of its
    own (``old_file``). The kernel frees a replaced file's blocks and cached pages
    (about 20-27 ms for the 40 MB JSONL output on this machine) when its last
    holder lets go: ``normalise_rollout_file`` holds it and lets go on a thread of
    its own after the call (``agent_rollout._files.replacing``). After each call,
    untimed, that thread is waited for and the files written so far are written out
    (``settle``), so neither falls into the next contender's time.
    """
    for fn, before in calls.values():
        if before is not None:
            before()
        fn()
        settle()
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, (fn, before) in calls.items():
            best[name] = min(best[name], best_settled(fn, 1, before)[1] * 1e3)
            settle()
    return best


def settle() -> None:
    """After a call, untimed: wait for the threads letting go of replaced files, and
    write out the files written so far (``os.sync``), so that neither the kernel's
    writeback of one contender's output nor a release falls into the next call."""
    for thread in threading.enumerate():
        if thread.name == "agent-rollout-release":
            thread.join()
    os.sync()


def shape_rows(shape: str, rows: list[dict], repeat: int) -> list[Row]:
    import datasets

    n = len(rows)
    # The rows cut to the two keys ours keeps (the anchor converts every
    # key of the rows, the extra ones our row rules drop included).
    kept = [{"prompt": row["prompt"], "answer": row.get("answer")} for row in rows]
    got = timed(
        {
            "ours": (lambda: rows_to_arrow(rows, max_rows=n), None),
            "anchor": (lambda: pa.Table.from_pylist(rows), None),
            "kept": (lambda: pa.Table.from_pylist(kept), None),
            "ours_kept": (lambda: rows_to_arrow(kept, max_rows=n), None),
            "dataset": (lambda: to_dataset(rows, max_rows=n), None),
            "from_list": (lambda: datasets.Dataset.from_list(rows), None),
        },
        repeat,
    )
    ours, anchor, dataset, from_list = got["ours"], got["anchor"], got["dataset"], got["from_list"]
    return [
        (f"rows -> Arrow, {shape}", ours, "pa.Table.from_pylist", anchor,
         f"{anchor / ours:.2f}x faster", ">= 3x faster"),
        ("  the same, prompt + answer only", got["ours_kept"], "pa.Table.from_pylist", got["kept"],
         f"{got['kept'] / got['ours_kept']:.2f}x faster", "(not a goal)"),
        (f"to_dataset, {shape}", dataset, "Dataset.from_list", from_list,
         f"{from_list / dataset:.2f}x faster", ">= 3x faster"),
    ]  # fmt: skip


def arrow_rows(n: int, repeat: int) -> list[Row]:
    out: list[Row] = []
    for shape, make in (
        ("str prompts", string_rows),
        ("two-message prompts", message_rows),
        ("tool-call prompts", tool_call_rows),
    ):
        out += shape_rows(shape, make(n), repeat)
    return out


def file_rows(src: Path, tmp: Path, n: int, repeat: int) -> list[Row]:
    parquet, anchor_out = tmp / "out.parquet", tmp / "anchor.parquet"
    floor_out = tmp / "floor.parquet"
    out, copy = tmp / "out.jsonl", tmp / "copy.jsonl"
    # The floors' inputs: the finished table (for `write_table` with the same
    # compression) and our JSONL output's bytes.
    normalise_rollout_file(src, parquet, max_rows=n)
    table, groups = pq.read_table(parquet), row_groups(parquet)
    normalise_rollout_file(src, out, max_rows=n)
    written = out.read_bytes()

    # ``read_bytes`` makes a new object of the file's size each call: for a file of
    # tens of MB the allocator maps fresh pages, and the kernel's zeroing of them
    # (page faults) is most of the read's time. A read into a buffer kept between
    # calls, in 1 MiB pieces as our engine reads, is shown beside it.
    kept = bytearray(src.stat().st_size)

    def read_into() -> None:
        view = memoryview(kept)
        with src.open("rb", buffering=0) as source:
            done = 0
            while got := source.readinto(view[done : done + (1 << 20)]):
                done += got

    def pyarrow_pipeline() -> None:
        table = pa_json.read_json(src).select(["prompt", "answer"])
        pq.write_table(table, anchor_out, compression="zstd")

    replaced = tmp / "replaced.jsonl"
    got = timed(
        {
            "parquet": (
                lambda: normalise_rollout_file(src, parquet, max_rows=n),
                new_file(parquet),
            ),
            "read": (src.read_bytes, None),
            "read_into": (read_into, None),
            "write_table": (
                lambda: pq.write_table(table, floor_out, compression="zstd"),
                new_file(floor_out),
            ),
            # The same table by our writer's settings (``parquet_writer``: a
            # dictionary for ``role`` only, statistics for ``answer`` only), in our
            # output's row groups.
            "write_ours": (
                lambda: write_as_ours(table, floor_out, groups=groups),
                new_file(floor_out),
            ),
            "pyarrow": (pyarrow_pipeline, new_file(anchor_out)),
            "jsonl": (lambda: normalise_rollout_file(src, out, max_rows=n), new_file(out)),
            # The same, replacing last run's output, already on disk.
            "replacing": (
                lambda: normalise_rollout_file(src, replaced, max_rows=n),
                old_file(replaced, written),
            ),
            # The floor for JSONL -> JSONL is the read alone; a file-to-file
            # job also writes its output: the read plus writing those bytes to a new
            # file is shown beside it.
            "write_out": (lambda: copy.write_bytes(written), new_file(copy)),
        },
        repeat,
    )
    ours, read, write, anchor = got["parquet"], got["read"], got["write_table"], got["pyarrow"]
    write_ours, read_into_ms = got["write_ours"], got["read_into"]
    jsonl, replacing, write_out = got["jsonl"], got["replacing"], got["write_out"]
    floor = read + write
    return [
        ("JSONL -> Parquet", ours, f"floor: read {read:.0f} + write_table {write:.0f}", floor,
         f"{ours / floor:.2f}x the floor", "<= 1.5x the floor"),
        ("JSONL -> Parquet", ours, f"read {read:.0f} + our writer's write {write_ours:.0f}",
         read + write_ours, f"{ours / (read + write_ours):.2f}x", "(not a goal)"),
        ("JSONL -> Parquet", ours, f"read into a kept buffer {read_into_ms:.0f} + ours' write",
         read_into_ms + write_ours, f"{ours / (read_into_ms + write_ours):.2f}x", "(not a goal)"),
        ("JSONL -> Parquet", ours, "read_json + select + write_table", anchor,
         f"{anchor / ours:.2f}x faster", ">= 2x faster"),
        ("JSONL -> JSONL", jsonl, "floor: read the bytes", read,
         f"{jsonl / read:.2f}x the floor", "<= 2x the floor"),
        ("JSONL -> JSONL, replacing", replacing, "floor: read the bytes", read,
         f"{replacing / read:.2f}x the floor", "<= 2x the floor"),
        ("JSONL -> JSONL", jsonl, "read into a kept buffer", read_into_ms,
         f"{jsonl / read_into_ms:.2f}x that read", "(not a goal)"),
        ("JSONL -> JSONL", jsonl, f"read {read:.0f} + write the output {write_out:.0f}",
         read + write_out, f"{jsonl / (read + write_out):.2f}x read + write", "(not a goal)"),
    ]  # fmt: skip


RATE_SCRIPT = """
import hashlib, json, os, resource, sys, threading, time
from agent_rollout import normalise_rollout_file
suffix, rounds, per_round, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, sys.argv[5])
sources = {int(rows): src for rows, src in zip(sys.argv[6::2], sys.argv[7::2])}
dest = os.path.join(os.path.dirname(warm), "rate-out." + suffix)
LIMIT = 10_000_000
if suffix == "parquet":
    import pyarrow.parquet as pq
    from _common import row_groups, write_as_ours
    from agent_rollout.arrow import read_rollout_table


def copy(src):
    # JSONL's floor at each size: the file read in 1 MiB pieces, each written to a
    # new file beside ``dest`` that then takes its name, on one thread.
    temp = dest + ".copy"
    with open(src, "rb") as source, open(temp, "wb") as out:
        while piece := source.read(1 << 20):
            out.write(piece)
    os.replace(temp, dest)


def split(src):
    # Whether this machine lets one call of a size use both CPUs: the file's bytes
    # read at once, a thread started for this call hashing one half (sha256 lets go of
    # the GIL) while the calling thread hashes the other, three passes each, joined.
    # Like ours, a thread is started per call; unlike ours, the work is split once.
    with open(src, "rb") as source:
        data = memoryview(source.read())
    half = len(data) // 2

    def passes(part):
        for _ in range(3):
            hashlib.sha256(part).digest()

    other = threading.Thread(target=passes, args=(data[half:],))
    other.start()
    passes(data[:half])
    other.join()


def contenders(src, table, groups):
    # name -> (a call, whether it writes ``dest``). The floors write in our
    # writer's settings and in the row groups of our output (``groups``: a group
    # closes at the end of the chunk that brings it to ``ROW_GROUP_ROWS``, about
    # 18,600 rows here; a 10k file is one).
    ours = (lambda: normalise_rollout_file(src, dest, max_rows=LIMIT), True)
    if suffix != "parquet":
        return {
            "ours": ours,
            "floor": (lambda: copy(src), True),
            "split": (lambda: split(src), False),
        }
    return {
        "ours": ours,
        # pyarrow writing the finished rows again.
        "floor": (lambda: write_as_ours(table, dest, groups=groups), True),
        # The same rows parsed into Arrow and written nowhere.
        "parse": (lambda: read_rollout_table(src, max_rows=LIMIT), False),
        # Parsed, then that table written: each group is encoded once the whole
        # file is parsed (for a file of one group, what ours can do at best
        # without encoding in parallel; it holds the whole table).
        "serial": (
            lambda: write_as_ours(read_rollout_table(src, max_rows=LIMIT), dest, groups=groups),
            True,
        ),
    }


def call_seconds(call, writes, calls, cpu):
    # The seconds of each of ``calls`` calls of ``call()``, each writing ``dest``
    # anew (when it ``writes``); the CPU seconds the process's threads spent in the
    # calls, in user code and in the kernel, are added to ``cpu``.
    spent = []
    for _ in range(calls):
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        call()
        spent.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu[0] += after.ru_utime - before.ru_utime
        cpu[1] += after.ru_stime - before.ru_stime
        if writes:
            os.unlink(dest)
    return spent


normalise_rollout_file(warm, dest, max_rows=10)
os.unlink(dest)
calls_of = {}
for rows, src in sources.items():
    table = groups = None
    if suffix == "parquet":
        # Our output is the table pyarrow writes again (the floor's own part), in
        # the same row groups.
        normalise_rollout_file(src, dest, max_rows=LIMIT)
        table, groups = pq.read_table(dest), row_groups(dest)
        os.unlink(dest)
    calls_of[rows] = contenders(src, table, groups)
    for call, writes in calls_of[rows].values():
        call()  # one untimed call each per size
        if writes:
            os.unlink(dest)

got = {name: {rows: [] for rows in sources} for name in calls_of[min(sources)]}
# Contender -> size -> [user seconds, kernel seconds, rows] over every timed call.
cpu = {name: {rows: [0.0, 0.0, 0] for rows in sources} for name in got}
# Ours and the two-thread split: every timed call's seconds.
each_call = {name: {rows: [] for rows in sources} for name in ("ours", "split")}
sizes = sorted(sources)
for turn in range(rounds):
    # Sizes take turns, and so do the contenders of a size, the order turning
    # each round: a slow spell of the machine falls on all of them.
    for rows in sizes[turn % len(sizes):] + sizes[:turn % len(sizes)]:
        calls = max(1, per_round // rows)
        named = list(calls_of[rows].items())
        for name, (call, writes) in named[turn % len(named):] + named[:turn % len(named)]:
            spent = call_seconds(call, writes, calls, cpu[name][rows])
            cpu[name][rows][2] += calls * rows
            got[name][rows].append(calls * rows / sum(spent))
            if name in each_call:
                each_call[name][rows] += spent
            os.sync()  # untimed: no output's writeback falls into the next one's time
print(json.dumps({"rounds": got, "calls": each_call, "cpu": cpu}))
"""


# Output format -> contender -> size (as JSON keys are) -> rows per second of each round.
Rates = dict[str, dict[str, dict[str, list[float]]]]
# Output format -> contender ("ours", and for JSONL "split") -> size (as JSON keys are)
# -> the seconds of each timed call.
Calls = dict[str, dict[str, dict[str, list[float]]]]
# Output format -> contender -> size (as JSON keys are) -> [user seconds, kernel
# seconds, rows] over its timed calls (every thread of the process).
Cpu = dict[str, dict[str, dict[str, list[float]]]]


def scale(
    tmp: Path, sizes: list[int], rounds: int
) -> tuple[dict[tuple[str, int], dict[str, float]], Rates, Calls, Cpu]:
    """Each file path on each size: in a fresh process per size, the first call's
    seconds and peak RSS; and in one process per output format, rows per second,
    the sizes taking turns (``rounds`` rounds, each of about the largest size's
    rows per size), with the time of each of our calls and each contender's CPU
    time in user code and in the kernel."""
    first = {}
    warm = tmp / "warm.jsonl"
    write_file(warm, 1)
    sources = {rows: tmp / f"scale-{rows}.jsonl" for rows in sizes}
    for rows, src in sources.items():
        write_file(src, rows)
        for suffix in ("jsonl", "parquet"):
            dest = tmp / f"scale-out.{suffix}"
            first[(suffix, rows)] = fresh_call(src, dest, warm)
            dest.unlink()
    rates: Rates = {}
    calls: Calls = {}
    cpu: Cpu = {}
    per_round = max(sizes)
    pairs = [str(part) for rows, src in sources.items() for part in (rows, src)]
    for suffix in ("jsonl", "parquet"):
        done = subprocess.run(
            [sys.executable, "-c", RATE_SCRIPT, suffix, str(rounds), str(per_round), str(warm),
             str(Path(__file__).parent), *pairs],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        got = json.loads(done.stdout)
        rates[suffix], cpu[suffix] = got["rounds"], got["cpu"]
        calls[suffix] = got["calls"]
    for src in sources.values():
        src.unlink()
    return first, rates, calls, cpu


def print_table(rows: list[Row]) -> None:
    print(f"{'work':<34} {'ours ms':>8}  {'anchor or floor':<40} {'ms':>8}  {'ratio':<20} goal")
    for work, ours, anchor, anchor_ms, ratio, goal in rows:
        print(f"{work:<34} {ours:8.1f}  {anchor:<40} {anchor_ms:8.1f}  {ratio:<20} {goal}")


def print_scale(
    first: dict[tuple[str, int], dict[str, float]],
    rates: Rates,
    calls: Calls,
    cpu: Cpu,
    sizes: list[int],
    rounds: int,
) -> None:
    print(
        f"\nscale: rows/s of normalise_rollout_file, best of {rounds} rounds in one process"
        " per format"
        f" (each round about {max(sizes):,} rows per size, the sizes taking turns), and,"
        " from a fresh process per size, the first call's rows/s and peak RSS:"
    )
    base = 100_000 if 100_000 in sizes else sizes[0]

    def best_of(suffix: str, name: str) -> dict[int, float]:
        # A contender's best round at each size, in rows/s.
        return {rows: max(rates[suffix][name][str(rows)]) for rows in sizes}

    def spread(by_size: dict[int, float]) -> float:
        # The slowest size's rows/s over the fastest's.
        return min(by_size.values()) / max(by_size.values())

    for suffix in ("jsonl", "parquet"):
        best = best_of(suffix, "ours")
        cells = []
        for rows in sizes:
            got = first[(suffix, rows)]
            cells.append(
                f"{rows:,}: {best[rows]:,.0f} rows/s (first call {rows / got['seconds']:,.0f}),"
                f" {got['peak_kib'] / 1024:.0f} MiB"
            )
        top = first[(suffix, sizes[-1])]["peak_kib"] / first[(suffix, base)]["peak_kib"]
        slowest, fastest = min(best.values()), max(best.values())
        print(f"  JSONL -> {suffix}: " + "; ".join(cells))
        memory = (
            f"RSS at {sizes[-1]:,} rows: {top:.2f}x that of {base:,} (goal <= 1.2x)"
            if sizes[-1] > base
            else f"RSS: no size above {base:,} rows"
        )
        print(
            f"    {memory}; rows/s from {slowest:,.0f} to {fastest:,.0f} "
            f"(slowest {slowest / fastest:.2f} of fastest; goal: flat)"
        )
        # The same calls one by one: a size's fastest call, and its median one.
        each = {rows: calls[suffix]["ours"][str(rows)] for rows in sizes}
        quickest = {rows: rows / min(each[rows]) for rows in sizes}
        median = {rows: rows / statistics.median(each[rows]) for rows in sizes}
        print(
            "    ours call by call, same rounds ("
            + "; ".join(f"{rows:,}: {len(each[rows])} calls" for rows in sizes)
            + "): the fastest call "
            + "; ".join(f"{rows:,}: {quickest[rows]:,.0f}" for rows in sizes)
            + f" rows/s (slowest {spread(quickest):.2f} of fastest); the median call "
            + "; ".join(f"{rows:,}: {median[rows]:,.0f}" for rows in sizes)
            + f" rows/s (slowest {spread(median):.2f} of fastest)"
        )
        floor = best_of(suffix, "floor")
        what = (
            "pyarrow writing the same rows again (our writer's settings, our output's row groups)"
            if suffix == "parquet"
            else "copying the file (1 MiB reads written to a new file that takes its name;"
            " one thread)"
        )
        print(
            f"    {what}, same rounds: "
            + "; ".join(f"{rows:,}: {floor[rows]:,.0f}" for rows in sizes)
            + f" rows/s (slowest {spread(floor):.2f} of fastest);"
            " its rows/s over ours, by size: "
            + ", ".join(f"{floor[rows] / best[rows]:.2f}x" for rows in sizes)
        )
        if suffix == "jsonl":
            # The machine's own two-thread floor: its rows/s by size, and how far a
            # size's median call is from its fastest, against ours.
            two = best_of(suffix, "split")
            times = {rows: calls[suffix]["split"][str(rows)] for rows in sizes}
            print(
                "    two threads hashing the file's halves (a thread started per call;"
                " sha256, 3 passes), same rounds: "
                + "; ".join(f"{rows:,}: {two[rows]:,.0f}" for rows in sizes)
                + f" rows/s (slowest {spread(two):.2f} of fastest); median call over"
                " fastest, by size, split: "
                + ", ".join(
                    f"{statistics.median(times[rows]) / min(times[rows]):.2f}" for rows in sizes
                )
                + "; ours: "
                + ", ".join(
                    f"{statistics.median(each[rows]) / min(each[rows]):.2f}" for rows in sizes
                )
            )
        if suffix == "parquet":
            parse, serial = best_of(suffix, "parse"), best_of(suffix, "serial")
            # A row group is encoded (on one thread) once its last row is parsed: a
            # file of one group is parsed, then encoded. Parse, then write, is about
            # the rate that allows; bigger files overlap the two.
            print(
                "    the same rows parsed into Arrow, written nowhere (read_rollout_table),"
                " same rounds: "
                + "; ".join(f"{rows:,}: {parse[rows]:,.0f}" for rows in sizes)
                + f" rows/s (slowest {spread(parse):.2f} of"
                " fastest); that parse, then that table written as ours: "
                + "; ".join(f"{rows:,}: {serial[rows]:,.0f}" for rows in sizes)
                + " rows/s; ours over parse-then-write, by size: "
                + ", ".join(f"{best[rows] / serial[rows]:.2f}x" for rows in sizes)
            )
        # Where a size's time goes: CPU per 10k rows, in user code and in the kernel
        # (file creation, page cache, thread starts and wake-ups), every round.
        for name in ("ours", "floor"):
            used = {rows: cpu[suffix][name][str(rows)] for rows in sizes}
            print(
                f"    CPU per 10k rows, user + kernel, {name}: "
                + "; ".join(
                    f"{rows:,}: {1e7 * user / done:.2f} + {1e7 * kernel / done:.2f} ms"
                    for rows, (user, kernel, done) in used.items()
                )
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--scale", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the scale rates")
    parser.add_argument("--dir", default=None, help="where to write the generated files")
    args = parser.parse_args()
    if not _engine.native_available():
        print("the Rust engine is not built: run make build-release first", file=sys.stderr)
        return 2
    n = args.rows
    sizes = sorted(int(size) for size in args.scale.split(",") if size)
    if args.rounds < 1 or any(size < 1 for size in sizes):
        parser.error("--rounds and every --scale size must be at least 1")
    python = sys.version.split()[0]
    print(f"{n:,} rows, best of {args.repeat}; {os.cpu_count()} CPUs; Python {python}")
    started = cpu_ticks()
    table = arrow_rows(n, args.repeat)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "rollouts.jsonl"
        write_file(src, n)
        print(f"file: {src.stat().st_size / 1e6:.1f} MB of JSONL, {n:,} rows")
        table += file_rows(src, tmp, n, args.repeat)
        src.unlink()
        print()
        print_table(table)
        print(stolen_since(started))
        if sizes:
            started = cpu_ticks()
            print_scale(*scale(tmp, sizes, args.rounds), sizes, args.rounds)
            print("  " + stolen_since(started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
