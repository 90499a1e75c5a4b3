"""A time-boxed differential fuzzer: both engines, every public entry point, one budget.

    python tests/fuzz/fuzz.py --seconds 60 [--seed N] [--only rows|files]

Targets, alternating until the budget is spent:

- ``rows``: ``normalise_rollout_rows`` on row structures grown from the seeds in
  ``corpus/rows/*.json`` and mutated at random: values swapped for hostile ones (str/int/
  float/list/dict subclasses that lie, Mappings whose ``items()``/``get`` mutate the input
  while it is read, keys whose hash collides with ``prompt``/``answer`` and whose ``__eq__``
  mutates the row, NaN, bytes, sets, cycles, nesting past the limit), rows dropped or
  duplicated, the container swapped for a tuple, a generator, a mapping.
- ``files``: ``read_rollout_jsonl`` and ``normalise_rollout_file`` on the JSONL seeds in
  ``corpus/jsonl/`` after byte mutations (flips, inserted JSON tokens, deleted or
  duplicated ranges, splices of two seeds, truncation), plain or gzip-compressed, the
  compressed bytes sometimes damaged too.

Each input is built twice from the same random seed (the hostile objects act the same way
given the same calls) and run on each engine. Both must give the same rows (compared with
exact types) or the same exception type and text (file errors: also line, column, code);
every row returned must obey the rules; ``normalise_rollout_file`` must agree with
``read_rollout_jsonl`` on the same engine and leave the destination untouched when it
fails. One known, documented difference is allowed: a gzip file damaged inside its
compressed data may be reported as a gzip error by one engine and as bad text by the
other (both refuse it; both decoders are zlib, but they fail in pieces of different
sizes, docs/rows.md). A disagreement prints the seed and saves the input under
``failures/``; the exit status is 1. A crash kills the process (``faulthandler`` prints
where); the last input is then in ``failures/last-*`` for replay with ``--replay``.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import gzip
import io
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run as a script: the shared test helpers are in tests/
    sys.path.insert(0, str(HERE.parent))

from agent_rollout import (  # noqa: E402
    MAX_MESSAGE_DEPTH,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)
from support import ENGINES, checked_outcome, on_engine, typed_json  # noqa: E402

CORPUS = HERE / "corpus"
FAILURES = HERE / "failures"


# ---- hostile row structures -------------------------------------------------------------


class Text(str):
    def __len__(self) -> int:
        return 0

    def __str__(self) -> str:
        return "lie"


class Count(int):
    def __index__(self) -> int:
        return 99


class Score(float):
    def __float__(self) -> float:
        return 99.0


class LyingList(list):
    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[Any]:
        return iter([b"lie"])


class LyingDict(dict):
    def items(self) -> Any:
        return [("role", b"lie")]

    def __len__(self) -> int:
        return 0


class Hostile(Mapping):
    """A mapping whose reads run ``hook`` (deterministic: a fixed list of actions)."""

    def __init__(self, data: dict, hook: Callable[[], None]) -> None:
        self.data = data
        self.hook = hook

    def __getitem__(self, key: object) -> Any:
        self.hook()
        return self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def items(self) -> Any:
        self.hook()
        return list(self.data.items())


class Collide:
    """Hashes like ``name``; comparing it runs ``hook``."""

    def __init__(self, name: str, hook: Callable[[], None]) -> None:
        self.name = name
        self.hook = hook

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        self.hook()
        return False


class Builder:
    """Grows one row structure from a seed; the same seed gives the same structure."""

    def __init__(self, seed: int, base: Any) -> None:
        self.rng = random.Random(seed)
        self.base = base
        self.containers: list[Any] = []  # what hooks may mutate

    def hook(self, own: Any = None) -> Callable[[], None]:
        """An action on some container made so far (half the time on ``own``, the
        container the hook sits in), decided now, run at most 3 times."""
        rng = random.Random(self.rng.getrandbits(32))
        budget = [3]
        containers = self.containers

        def act() -> None:
            if budget[0] <= 0 or not containers:
                return
            budget[0] -= 1
            if own is not None and rng.random() < 0.5:
                target = own
            else:
                target = containers[rng.randrange(len(containers))]
            op = rng.randrange(6)
            if isinstance(target, list):
                if op == 0:
                    target.clear()
                elif op == 1 and target:
                    target[rng.randrange(len(target))] = rng.choice([b"x", "", None, {}])
                elif op == 2:
                    target.append({"role": "late", "prompt": "late"})
                elif op == 3 and target:
                    target.pop()
            elif isinstance(target, dict):
                if op == 0:
                    target.clear()
                elif op == 1:
                    target["prompt"] = rng.choice([b"bytes", "new", [], 5])
                elif op == 2:
                    target.pop("prompt", None)
                elif op == 3:
                    target["answer"] = rng.choice(["a", 1, None])
                elif op == 4:
                    target.pop(next(iter(target), None), None)
            if rng.random() < 0.3:
                gc.collect()

        return act

    def build(self) -> Any:
        return self.wrap(self.mutate(self.copy(self.base), 0))

    def copy(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: self.copy(v) for k, v in value.items()}
            self.containers.append(out)
            return out
        if isinstance(value, list):
            out_list = [self.copy(v) for v in value]
            self.containers.append(out_list)
            return out_list
        if isinstance(value, str):
            # A fresh object, not the seed's: the built input must hold the only
            # reference, so that a value replaced while being read is really freed.
            return (value + ".")[:-1]
        return value

    def hostile_value(self, depth: int) -> Any:
        rng = self.rng
        choice = rng.randrange(24)
        simple = [
            "",
            "x",
            "user",
            'héllo \n "q"',
            0,
            -1,
            10**30,
            True,
            None,
            0.5,
            -0.0,
            float("nan"),
            float("inf"),
            b"bytes",
        ]
        if choice < len(simple):
            return simple[choice]
        if choice == 14:
            return Text("txt")
        if choice == 15:
            return Count(7)
        if choice == 16:
            return Score(2.5)
        if choice == 17:
            return {1, 2}
        if choice == 18:
            return (1, "two", None)
        if choice == 19:
            inner = [self.hostile_value(depth + 1) for _ in range(rng.randrange(3))]
            out = LyingList(inner)
            self.containers.append(out)
            return out
        if choice == 20:
            return LyingDict(role="user", content="x")
        if choice == 21:
            data = {"role": "user", "content": self.hostile_value(depth + 1) if depth < 3 else "c"}
            self.containers.append(data)
            return Hostile(data, self.hook())
        if choice == 22:
            nested: Any = "leaf"
            for _ in range(MAX_MESSAGE_DEPTH + rng.randrange(-2, 3)):
                nested = [nested]
            return nested
        cyclic: list = []
        cyclic.append(cyclic)
        return cyclic

    def mutate(self, value: Any, depth: int) -> Any:
        rng = self.rng
        if rng.random() < 0.08:
            return self.hostile_value(depth)
        if isinstance(value, dict):
            for key in list(value):
                # A hook run while mutating an earlier entry (a colliding key's
                # __eq__) may have removed this one.
                if rng.random() < 0.05:
                    value.pop(key, None)
                    continue
                try:
                    current = value[key]
                except KeyError:
                    continue
                value[key] = self.mutate(current, depth + 1)
            if rng.random() < 0.05:
                value[rng.choice(["prompt", "answer", "role", "content"])] = self.hostile_value(
                    depth
                )
            if rng.random() < 0.06:
                collide = Collide(rng.choice(["prompt", "answer"]), self.hook(value))
                value[collide] = 1
            if rng.random() < 0.04:
                self.containers.append(value)
                return Hostile(value, self.hook())
            return value
        if isinstance(value, list):
            for i in range(len(value)):
                # A hook run while building (a colliding key compared on insertion)
                # may have shrunk the list.
                if i < len(value):
                    new = self.mutate(value[i], depth + 1)
                    if i < len(value):
                        value[i] = new
            if value and rng.random() < 0.05:
                del value[rng.randrange(len(value))]
            if value and rng.random() < 0.05:
                value.insert(rng.randrange(len(value)), value[rng.randrange(len(value))])
            return value
        return value

    def wrap(self, rows: Any) -> Any:
        rng = self.rng
        pick = rng.random()
        if not isinstance(rows, list) or pick < 0.80:
            return rows
        if pick < 0.87:
            return tuple(rows)
        if pick < 0.94:
            return iter(rows)
        if pick < 0.97:
            return {"prompt": "a single row"}
        return rng.choice(["rows", None, 5, b"rows"])


def row_seeds() -> list[Any]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("rows/*.json"))]


def fuzz_rows_once(seed: int, seeds: list[Any]) -> tuple[Any, Any]:
    base = seeds[random.Random(seed).randrange(len(seeds))]
    results = []
    for name in ("python", "rust"):
        # Built afresh for each engine: the run mutates it.
        rows = Builder(seed, base).build()
        results.append(
            on_engine(name, lambda rows=rows: checked_outcome(lambda: normalise_rollout_rows(rows)))
        )
        gc.enable()  # a hook may have left the collector in any state
    return results[0], results[1]


# ---- corrupted JSONL files ---------------------------------------------------------------

TOKENS = [
    b'"',
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\n",
    b"\r\n",
    b" ",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"0.1e-400",
    b"1" * 30,
    b'"prompt"',
    b'"answer"',
    b'"role"',
    b'"content"',
    b'"prompt":"x"',
    b'"prompt":[]',
    b'{"role":"user"}',
    b"null",
    b"true",
    b"\xef\xbb\xbf",
    b"\t",
    b"\x1f",
    b"\x7f",
]


def mutate_bytes(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    # Some files go through whole (or only compressed): the writer must see good rows too.
    for _ in range(rng.choice([0, 0, 1, 1, 1, 2, 3, 4])):
        op = rng.randrange(7)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            at = min(at, len(out) - 1)
            out[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[at:at] = rng.choice(TOKENS)
        elif op == 2:
            del out[at : at + rng.randrange(1, 8)]
        elif op == 3:
            end = min(len(out), at + rng.randrange(1, 40))
            out[at:at] = out[at:end]
        elif op == 4:
            other = rng.choice(seeds)
            cut = rng.randrange(len(other) + 1)
            out[at:] = other[cut:]
        elif op == 5:
            del out[at:]
        else:
            out[at:at] = rng.choice(TOKENS) * rng.randrange(1, 200)
    return bytes(out)


def file_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted(CORPUS.glob("jsonl/*.jsonl"))]


def file_outcomes(src: Path, dst: Path, max_rows: int) -> tuple[Any, Any]:
    read = checked_outcome(lambda: read_rollout_jsonl(src, max_rows=max_rows))
    before = b"previous\n"
    dst.write_bytes(before)
    normalised = checked_outcome(lambda: normalise_rollout_file(src, dst, max_rows=max_rows))
    written = dst.read_bytes()
    if normalised[0] == "error":
        assert written == before, "the destination changed although the run failed"
    else:
        normalised = ("ok", written)
        if read[0] == "ok":
            rows = [json.loads(line) for line in written.splitlines()]
            assert typed_json(tuple(rows)) == read[1], "normalise and read disagree"
    if read[0] == "error" or normalised[0] == "error":
        assert read == normalised, (read, normalised)
    return read, normalised


def fuzz_files_once(seed: int, seeds: list[bytes], folder: Path) -> tuple[Any, Any, bool]:
    rng = random.Random(seed)
    data = mutate_bytes(rng, rng.choice(seeds), seeds)
    damaged_gzip = False
    name = "in.jsonl"
    if rng.random() < 0.3:
        data = gzip.compress(data, mtime=0)
        if rng.random() < 0.3:
            data += gzip.compress(b'{"prompt":"member two"}\n', mtime=0)
        if rng.random() < 0.4:
            data = mutate_bytes(rng, data, [data])
            damaged_gzip = True
        name = "in.jsonl.gz"
    src, dst = folder / name, folder / "out.jsonl"
    src.write_bytes(data)
    (FAILURES / "last-file.bin").write_bytes(data)
    max_rows = rng.choice([1, 2, 3, 10, 1000])
    results = [
        on_engine(engine, lambda: file_outcomes(src, dst, max_rows))
        for engine in ("python", "rust")
    ]
    return results[0], results[1], damaged_gzip


def gzip_difference_allowed(python: Any, rust: Any) -> bool:
    """The documented difference: damaged compressed data, refused by both engines (by
    both functions), one of them naming the gzip damage."""
    sides = [*python, *rust]
    if not all(side[0] == "error" for side in sides):
        return False
    return "gzip" in {dict(side[3]).get("code") for side in sides}


# ---- the driver ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None, help="default: from the clock")
    parser.add_argument("--only", choices=["rows", "files"], default=None)
    parser.add_argument("--count", type=int, default=None, help="stop after this many inputs")
    parser.add_argument("--replay", type=int, default=None, help="run one seed and show it")
    args = parser.parse_args(argv)
    if "rust" not in ENGINES:
        print("the Rust engine is not built; nothing to compare", file=sys.stderr)
        return 2
    try:
        faulthandler.enable()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        pass  # no real stderr (under pytest, which has its own fault handler)
    FAILURES.mkdir(exist_ok=True)
    start_seed = args.seed if args.seed is not None else time.time_ns() % 2**32
    rows_seeds, files_seeds = row_seeds(), file_seeds()
    counts = {
        "rows": 0,
        "files": 0,
        "rows_ok": 0,
        "rows_error": 0,
        "files_ok": 0,
        "files_error": 0,
        "gzip_difference": 0,
    }
    deadline = time.monotonic() + args.seconds
    step = 0
    print(f"fuzz: seed {start_seed}, budget {args.seconds:g} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        while args.replay is not None or (
            time.monotonic() < deadline if args.count is None else step < args.count
        ):
            seed = args.replay if args.replay is not None else start_seed + step
            step += 1
            target = args.only or ("rows" if step % 5 < 2 else "files")
            (FAILURES / "last-seed.txt").write_text(f"{target} {seed}\n")
            try:
                if target == "rows":
                    python, rust = fuzz_rows_once(seed, rows_seeds)
                    counts["rows"] += 1
                    counts["rows_" + python[0]] += 1
                    same = python == rust
                else:
                    python, rust, damaged = fuzz_files_once(seed, files_seeds, folder)
                    counts["files"] += 1
                    counts["files_" + python[0][0]] += 1
                    same = python == rust
                    if not same and damaged and gzip_difference_allowed(python, rust):
                        counts["gzip_difference"] += 1
                        same = True
            except AssertionError as broken:
                print(f"BROKEN RULE: {target} seed {seed}: {broken}")
                print(f"replay: python {sys.argv[0]} --only {target} --replay {seed}")
                return 1
            if args.replay is not None:
                print(f"python: {python}\nrust:   {rust}")
                return 0 if same else 1
            if not same:
                print(f"DISAGREE: {target} seed {seed}\n python: {python}\n rust:   {rust}")
                if target == "files":
                    (FAILURES / f"files-{seed}.bin").write_bytes(
                        (FAILURES / "last-file.bin").read_bytes()
                    )
                print(f"replay: python {sys.argv[0]} --only {target} --replay {seed}")
                return 1
    print(
        "fuzz: {rows} row inputs ({rows_ok} gave rows, {rows_error} errors), "
        "{files} files ({files_ok} read fine), {gzip_difference} damaged-gzip "
        "differences (documented); engines agreed on all".format(**counts),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
