"""What a rollout file holds (``agent-rollout stats``): the counts, and the twin's count.

``RolloutStats`` is what both engines return for a JSONL file, and what
``arrow.stats`` returns for a Parquet file. The twin of ``rust/stats.rs``
counts the rows ``_jsonl``'s line reader and the row rules pass, line by line
(the Rust engine counts chunk by chunk and merges in input order: the same
numbers). Both count the same way:

- a prompt is text (a str) or messages (a list); its length in characters
  (``len``) is the str's, or, for messages, the sum over messages of their
  ``content``: a str counts whole, a list counts its str items and the str
  ``text`` of its parts (dicts); anything else counts 0;
- an answer is there when the row rules keep one (a non-empty str);
- a length ``n`` falls in bucket ``n.bit_length()`` (0, 1, 2-3, 4-7, ...);
- the dropped keys of a row are its top-level keys other than ``prompt`` and
  ``answer``, each name once per row; the first ``MAX_STATS_KEY_NAMES``
  distinct names (in input order) are kept, the rest counted together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from agent_rollout import _rows
from agent_rollout._errors import (
    RolloutFileError,
    RolloutRowError,
    bad_rows_error,
    file_error,
    row_error,
)
from agent_rollout._files import source_name
from agent_rollout._jsonl import (
    BadRows,
    FileLimits,
    Progress,
    Tally,
    decode,
    open_jsonl,
    read_lines,
)
from agent_rollout._limits import BAD_ROWS_KEPT, MAX_MESSAGE_DEPTH

BUCKETS = 65
"""Length buckets: bit lengths 0 to 64."""


@dataclass
class Lengths:
    """Lengths in characters: a histogram (bucket ``b``: lengths of bit length ``b``),
    their sum, the least and the most (both 0 when there are none)."""

    buckets: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    count: int = 0
    total: int = 0
    min: int = 0
    max: int = 0

    def add(self, n: int) -> None:
        self.min = n if self.count == 0 or n < self.min else self.min
        self.max = n if n > self.max else self.max
        self.buckets[n.bit_length()] += 1
        self.count += 1
        self.total += n


@dataclass
class RolloutStats:
    """What a rollout file holds: the rows the row rules pass, and the file's counts."""

    rows: int = 0
    lines: int = 0
    """Lines read, blank ones included (a Parquet file: its rows)."""
    blank_lines: int = 0
    dropped_keys: int = 0
    """Top-level keys other than ``prompt``/``answer``, summed over rows."""
    bytes_in: int = 0
    """Bytes read, after gzip decompression (a Parquet file: its size)."""
    text_prompts: int = 0
    message_prompts: int = 0
    answers: int = 0
    """Rows with an answer."""
    messages: dict[int, int] = field(default_factory=dict)
    """Messages in a prompt -> rows (messages prompts only), ascending."""
    prompt_chars: Lengths = field(default_factory=Lengths)
    answer_chars: Lengths = field(default_factory=Lengths)
    names: dict[str, int] = field(default_factory=dict)
    """Dropped key name -> rows, the first ``max_names`` names in input order."""
    other_names: int = 0
    """Dropped keys whose names were not kept, summed over rows."""
    bad_rows: int = 0
    """Rows the rules refused (UTF-8, JSON syntax, a row rule); counted, not in the rest."""
    bad: tuple[ValueError, ...] = field(default=(), compare=False)
    """The first of them (``BAD_ROWS_KEPT``) as the errors a read that stops raises
    (with file:line), in line order."""


def content_chars(content: Any) -> int:
    """A message's ``content`` in characters (see the module's docstring)."""
    if type(content) is str:
        return len(content)
    if type(content) is not list:
        return 0
    total = 0
    for part in content:
        if type(part) is str:
            total += len(part)
        elif type(part) is dict:
            text = part.get("text")
            if type(text) is str:
                total += len(text)
    return total


def prompt_chars(prompt: Any) -> int:
    """A checked prompt's length in characters: a str's, or its messages' ``content``."""
    if type(prompt) is str:
        return len(prompt)
    return sum(content_chars(message.get("content")) for message in prompt if type(message) is dict)


class Counter:
    """Counts rows into a ``RolloutStats``; ``max_names`` bounds the names kept."""

    def __init__(self, stats: RolloutStats, max_names: int) -> None:
        self.stats = stats
        self.max_names = max_names

    def add(self, row: dict, names: Any = ()) -> None:
        """Count a row the rules passed; ``names``: its dropped keys, each once."""
        stats = self.stats
        prompt = row["prompt"]
        if type(prompt) is str:
            stats.text_prompts += 1
            stats.prompt_chars.add(len(prompt))
        else:
            stats.message_prompts += 1
            count = len(prompt)
            stats.messages[count] = stats.messages.get(count, 0) + 1
            stats.prompt_chars.add(prompt_chars(prompt))
        answer = row.get("answer")
        if answer is not None:
            stats.answers += 1
            stats.answer_chars.add(len(answer))
        for name in names:
            self.add_name(name, 1)

    def add_name(self, name: str, count: int) -> None:
        kept = self.stats.names
        if name in kept:
            kept[name] += count
        elif len(kept) < self.max_names:
            kept[name] = count
        else:
            self.stats.other_names += count

    def finish(self) -> RolloutStats:
        stats = self.stats
        stats.messages = dict(sorted(stats.messages.items()))
        return stats


def file_stats(
    path: str,
    limits: FileLimits,
    max_names: int,
    progress: Optional[Progress] = None,
    keep: int = BAD_ROWS_KEPT,
) -> RolloutStats:
    """What the rollout JSONL file ``path`` holds, on the pure-Python engine.

    Goes on past bad rows (counted; the first ``keep`` kept, as ``_jsonl.BadRows``
    keeps them). A fault of the input as a whole raises what ``_jsonl.read_rows``
    raises at the same line, as a ``RolloutBadRowsError`` carrying the bad rows
    before it when there were any; a file without rows, good or bad, is
    ``file_no_rows``."""
    opened = open_jsonl(path)
    source = source_name(path)
    bad = BadRows(keep)
    try:
        stats = _count(opened, limits, max_names, source, progress, bad)
    except RolloutFileError as exc:
        if bad.count == 0:
            raise
        raise bad_rows_error(source, tuple(bad.errors), bad.count, None, exc) from None
    finally:
        opened.stream.close()
    stats.bad_rows = bad.count
    stats.bad = tuple(bad.errors)
    return stats


def _count(
    opened: Any,
    limits: FileLimits,
    max_names: int,
    source: str,
    progress: Optional[Progress],
    bad: BadRows,
) -> RolloutStats:
    """``file_stats`` on an input already open (the checks of ``_jsonl.row_batches``
    with ``bad``; the rows' values are needed here, for the dropped keys' names)."""
    counter = Counter(RolloutStats(), max_names)
    tally = Tally()
    max_rows = limits.max_rows
    for block in read_lines(opened, limits, tally, source):
        with _rows.GcPause():
            for line_no, content in block.lines:
                try:
                    doc = decode(content, line_no, source, max_rows)
                    row = _checked(doc, tally.rows + bad.count, line_no, source)
                except (RolloutFileError, RolloutRowError) as err:
                    bad.add(err)
                    continue
                names = dropped_names(doc)
                tally.dropped_keys += len(names)
                counter.add(row, names)
                tally.rows += 1
        if block.fault is not None:
            raise block.fault
        if progress is not None:
            progress(tally.rows, tally.lines, tally.bytes_in)
    if tally.rows == 0 and bad.count == 0:
        raise file_error("file_no_rows", source, max_rows)
    stats = counter.finish()
    stats.rows = tally.rows
    stats.lines = tally.lines
    stats.blank_lines = tally.blank_lines
    stats.dropped_keys = tally.dropped_keys
    stats.bytes_in = tally.bytes_in
    return stats


def dropped_names(doc: dict) -> list[str]:
    """The keys of a row the rules drop, in its order (a function of its own: a
    comprehension inside ``_count``'s ``with`` would be a loop in a cleanup region, see
    "Cleanup around loops" in docs/architecture.md)."""
    return [key for key in doc if key != "prompt" and key != "answer"]


def _checked(doc: Any, index: int, line_no: int, source: str) -> dict:
    """``doc`` through the row rules; a broken one as ``row_batches`` raises it."""
    try:
        return _rows.normalise_row(doc, MAX_MESSAGE_DEPTH)
    except _rows.RuleBroken as broken:
        broken.rev_path.reverse()
        raise row_error(
            broken.code,
            index,
            tuple(broken.rev_path),
            broken.fact,
            line=line_no,
            source=source,
        ) from None


__all__ = [
    "BUCKETS",
    "Counter",
    "Lengths",
    "RolloutStats",
    "content_chars",
    "dropped_names",
    "file_stats",
    "prompt_chars",
]
