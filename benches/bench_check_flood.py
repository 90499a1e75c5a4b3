"""`check` of a config at the size limit flooded with look-alike keys.

Each file is as close to ``MAX_CONFIG_BYTES`` as whole lines allow and holds,
in its ``training:`` section, tens of thousands of distinct keys that each
look like a typo of one of ours (``rollout_bakcend``, ``rollout_fucn``, ...):
every one of them is an error to find, explain ("did you mean") and place at
its line. The ``twice`` variants give each key twice (a duplicate key in our
section is an error too). The work must stay bounded by the file's size. Run
it on purpose (it is not a test):

    python benches/bench_check_flood.py [--formats json,yaml,toml,json-twice,yaml-twice] [--runs 1]

It prints, per format, the file's size, its keys, the issues found and the
time of ``check_bytes`` (in process, best of ``--runs``), wall clock and the
process's CPU time (the steadier figure on a shared machine).
"""

from __future__ import annotations

import argparse
import string
import time
from collections.abc import Iterator

from agent_rollout._limits import MAX_CONFIG_BYTES
from agent_rollout.backends import ROLLOUT_KEYS
from agent_rollout.config.check import check_bytes

_LINES = {
    "json": ('{"training": {\n', '  "{key}": 1,\n', '  "rollout_backend": "art"}}\n'),
    "yaml": ("training:\n", "  {key}: 1\n", "  rollout_backend: art\n"),
    "toml": ("[training]\n", "{key} = 1\n", 'rollout_backend = "art"\n'),
}


def lookalikes() -> Iterator[str]:
    """Distinct keys two substitutions away from one of ours, none of them ours."""
    seen = set(ROLLOUT_KEYS)
    letters = string.ascii_lowercase + string.digits
    for first in range(len(letters)):
        for key in ROLLOUT_KEYS:
            for i in range(len(key)):
                for j in range(i + 1, len(key)):
                    for second in letters[:8]:
                        chars = list(key)
                        chars[i], chars[j] = letters[first], second
                        variant = "".join(chars)
                        if variant not in seen:
                            seen.add(variant)
                            yield variant


def flood(fmt: str, limit: int = MAX_CONFIG_BYTES, times: int = 1) -> tuple[str, int]:
    """A config of ``fmt`` just under ``limit`` bytes, and how many look-alikes it holds
    (each given ``times`` times)."""
    head, line, tail = _LINES[fmt]
    parts = [head]
    size = len(head) + len(tail)
    count = 0
    for key in lookalikes():
        text = line.format(key=key) * times
        if size + len(text) > limit:
            break
        parts.append(text)
        size += len(text)
        count += 1
    parts.append(tail)
    return "".join(parts), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--formats", default="json,yaml,toml,json-twice,yaml-twice")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    print(f"config byte limit: {MAX_CONFIG_BYTES:,}")
    for name in args.formats.split(","):
        fmt, _, twice = name.partition("-")
        text, count = flood(fmt, times=2 if twice else 1)
        best = (float("inf"), float("inf"))
        issues = 0
        for _ in range(args.runs):
            start = (time.perf_counter(), time.process_time())
            result = check_bytes(text, format=fmt)
            took = (time.perf_counter() - start[0], time.process_time() - start[1])
            best = min(best, took)
            issues = len(result.issues)
        size = len(text.encode("utf-8"))
        print(
            f"{name:>10}: {size:,} bytes, {count:,} look-alike keys, {issues:,} issues, "
            f"check_bytes {best[0]:.2f} s ({best[1]:.2f} s of CPU)",
            flush=True,
        )


if __name__ == "__main__":
    main()
