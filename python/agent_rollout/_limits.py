"""Every limit and default of the package, the one integer-range check, and the one
check of a section's length.

Everything else (the row rules of both engines, the file readers, the config
models, the backends, the command line) reads its numbers from here; the Rust
engine receives the ones it needs as arguments and keeps no copy.
"""

from __future__ import annotations

import sys

from agent_rollout._exceptions import RolloutTypeError, RolloutValueError

# ---- rows ----------------------------------------------------------------------------------

MAX_ROLLOUT_ROWS = 100_000
"""The library's default cap on rows, the seed's: what one rollout may produce, and what
every function of the API takes (``normalise_rollout_rows``, ``launch_rollout``,
``read_rollout_jsonl``, ``normalise_rollout_file``, ``rows_to_arrow``, Ray's
``normalise_shards``) and ``agent-rollout run`` writes.

Those rows become a prompt dataset held in memory (a trainer's, or the tuple these
functions return): the cap stops a runaway backend or a wrong file from replacing
it with millions of rows. ``normalise_rollout_file`` streams, yet keeps this
default: a library call has one default whichever function it is (a caller need
not know which ones stream), and its output is often the dataset a trainer loads
next; a caller raises it with ``max_rows=`` (the file commands pass
``FILE_COMMAND_MAX_ROWS``)."""
MAX_ROWS_LIMIT = 10_000_000
"""The largest ``max_rows`` a caller may ask for."""
FILE_COMMAND_MAX_ROWS = MAX_ROWS_LIMIT
"""The default ``--max-rows`` of the file commands, ``agent-rollout normalise`` and
``agent-rollout stats`` (one default for both): the most any caller may ask for.

They read a file the user converts or inspects on purpose and stream it, in
memory that does not grow with it: ``normalise`` took the same peak memory at
100,000 and at 1,000,000 rows, to JSONL, to gzip and to Parquet, on both engines
(docs/rows.md); ``stats`` keeps counts only. So the seed's cap
(``MAX_ROLLOUT_ROWS``), which guards the dataset held in memory, does not apply
to them: with it, ``normalise`` refused a 1,000,000-row file that ``stats`` read.
``--max-rows N`` lowers it; ``--max-bytes`` (``MAX_ROLLOUT_BYTES``) still bounds
what is read, so a file of long rows meets that first. A file of more rows is
refused with a message saying that this is the most (no flag raises it)."""
MAX_MESSAGE_DEPTH = 64
"""How deeply containers may nest inside one chat message.

The message mapping itself is level 1; a ``content`` list inside it is level 2,
a content part inside that list level 3, and so on. A message nested deeper
(or a container that holds itself) is refused with ``RolloutRowError``.
"""

# ---- rollout files -------------------------------------------------------------------------

MAX_JSON_DEPTH = 128
"""How deeply arrays and objects may nest in one JSONL line (the row object is 1)."""
MAX_INT_DIGITS = 4300
"""CPython's default limit on the digits of an int read from text.

The limit in force is the interpreter's own (``sys.get_int_max_str_digits()``,
0 for none), read at each call: ``int_digits_limit()``."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSONL line accepted, in bytes (without its newline)."""
MAX_ROLLOUT_BYTES = 4 * 1024**3
"""Default cap on the bytes one rollout file may hold, after gzip decompression (4 GiB).

Chosen for real files: 100,000 rows (the library's default row cap) of long multi-turn
agent trajectories (a 20-turn episode with tool output and the dropped extra
keys kept by loggers, about 40 KiB a row) come to about 3.8 GiB, while the
rows users normalise most (a few turns, under 5 KiB) stay far below. It stops
a small ``.jsonl.gz`` that expands without end (or to blank lines) long before
memory or the disk runs out. Blank lines count.
"""
MAX_BYTES_LIMIT = 2**40
"""The largest ``max_bytes`` a caller may ask for (1 TiB)."""
BAD_ROWS_KEPT = 20
"""A run that goes on past bad rows (``normalise_rollout_file(on_bad=...)``) counts
every one and keeps the error of the first this many (what ``normalise`` lists):
memory stays flat on a file of a million bad lines."""
MAX_STATS_KEY_NAMES = 1000
"""``agent-rollout stats``: the dropped key names counted by name (the first seen); the
keys of any other name are counted together, so memory stays flat whatever the file."""


def int_digits_limit() -> int:
    """The longest integer (in digits) a JSONL line may hold right now."""
    limit = sys.get_int_max_str_digits()
    return limit if limit > 0 else 2**62


# ---- Arrow and Parquet ---------------------------------------------------------------------

MAX_MESSAGE_FIELDS = 64
"""The most message keys besides ``role`` and ``content`` a table gives fields of their own.

Each such key is a field of every message, so a table's Arrow data grows with
keys times messages: a file whose messages each carry a key of their own would
take memory and time growing with the square of its length. Past this many
distinct keys (over the whole table), each message is stored as JSON text
instead (``prompt: list<arrow.json>``). Real chat messages have a handful
(``tool_calls``, ``tool_call_id``, ``name``, ``reasoning_content``...).
"""
MAX_TYPED_DEPTH = 10
"""The deepest level of a message at which a list or object is a typed Arrow field.

Levels count as in ``MAX_MESSAGE_DEPTH`` (the message is level 1, the value of
one of its keys level 2); a list or object deeper than this is stored as JSON
text. The standard readers, with their defaults, refuse deeper types:
pyarrow's Parquet reader (``pq.read_table``, ``datasets.load_dataset("parquet")``)
a list at level 49 ("Parquet schema too deeply nested": 100 Parquet levels, two
a list), ``datasets`` an object at level 62 (pyarrow's C data interface nests
64 types). And ``datasets`` decodes a list above JSON text twice at each level,
so reading a value takes time doubling with its lists (a chain of 16 lists
took 89 ms, 31 would take hours): at 10, the worst such value takes about a
millisecond. Real values nest far less deeply (a tool call's arguments are at
level 5).
"""
MAX_PARQUET_FOOTER_BYTES = 16 * 1024 * 1024
"""The largest Parquet footer (the file's metadata) ``agent-rollout stats`` reads (16 MiB).

The footer is read and held whole before any row, and pyarrow's parsed form of
it takes about ten times its bytes (a 42 MB footer: 390 MB): it grows with row
groups times columns, so a small file of many tiny row groups could take more
memory than its rows ever would. A footer over this is refused as an unreadable
file. Real files stay far below it: 1M rows of messages prompts and three more
columns, in row groups of 1,000 rows, make a footer of 2.8 MB (pyarrow's writer).
"""


# ---- config keys -----------------------------------------------------------------------------

MAX_BACKEND_NAME_LEN = 32
MAX_ROLLOUT_FUNC_LEN = 260
MAX_ROLLOUT_STEPS = 100_000
DEFAULT_ROLLOUT_STEPS = 64
DEFAULT_GROUP_SIZE = 4
MAX_GROUP_SIZE = 1024
"""The most rollouts one seed prompt may ask for (``rollout_group_size``)."""
MAX_JUDGE_MODEL_LEN = 200
"""The longest model name (``rollout_judge_model``, ``rollout_policy_model``)."""
MAX_URL_LEN = 2048
MAX_SOURCE_LEN = 4096
"""The longest path (``rollout_source``, ``rollout_gym_config``)."""
MAX_PORT = 65535
"""The highest TCP port (``rollout_gym_head_port``); the lowest is 1."""
MAX_SCRIPTED_BODY_BYTES = 1024 * 1024
"""The largest request body the bundled scripted policy and judge read, in bytes.

Their jobs are the bundled examples, whose largest request (the ``ruler``
example's to the judge) is about 3 KB; a longer body is answered ``413`` from
its ``Content-Length``, unread."""
SCRIPTED_QUESTIONS_KEPT = 4096
"""The most questions the bundled scripted policy counts its replies to (every
second reply to a question is wrong, on purpose): past them, the one asked
longest ago is forgotten, and its next reply is right again. A group of rollouts
asks its question within a few requests; memory stays bounded however long the
policy serves."""
SCRIPTED_REQUESTS_KEPT = 100
"""The most requests a scripted server keeps, the latest, in the ``seen`` list
``serve`` yields (a test reads it); older ones are let go, so a server that
runs for days holds at most this many bodies."""

# ---- config files ----------------------------------------------------------------------------

MAX_CONFIG_BYTES = 1024 * 1024
"""The largest training config file read, in bytes (checked before reading).

Real configs are a few kilobytes (the largest in tests/data/trainer_keys.json's
sources, verl's generated PPO trainer YAML, is under 40 KB); a file past this
is refused at once instead of being parsed for seconds."""
MAX_NESTING_DEPTH = 200
"""How deeply mappings and lists may nest in a config file (the root is level 1).

One limit for YAML, JSON and TOML; a YAML alias counts as a copy of what it
names, so aliases stacked on aliases cannot get past it."""
MAX_YAML_EXPANDED_NODES = 1_000_000
"""The most values a YAML document may hold, each alias counted as a full copy."""
MAX_SECTION_KEYS = MAX_NESTING_DEPTH - 1
"""The most keys a ``section`` may name, counted as a dotted path (``trainer.rollout``: 2).

A section of this many keys is a mapping at the deepest level a config file may
nest to (``MAX_NESTING_DEPTH``, the root being level 1): a longer path names
nothing any file we read can hold. ``check_section`` refuses it before it is
split, whether it comes from ``section=``, ``check --section``, ``pyproject.toml``
or a language client."""
MAX_SECTION_LEN = 1024
"""The longest ``section``, in characters (``check_section``).

Real sections are a few words (``trainer.rollout``). Every issue's location starts
with the section, and a file at the size limit may hold tens of thousands of
issues: a 200,000-character section made such a check take 18 s and 3.9 GB. At
this length the locations add a few tens of MB at most."""

# ---- folders walked by check (git's ignore rules, read as files) ----------------------------

MAX_IGNORE_FILE_BYTES = 1024 * 1024
"""The largest file of git's that ``check`` reads for the ignore rules of a folder it
walks, in bytes: a ``.gitignore``, ``info/exclude``, the global excludes file, a git
config file (checked before reading).

Real ones are a few kilobytes; git itself skips a pattern file past 100 MiB. A file
past this one is not read: its rules do not apply (the walk then checks what they
would have left out)."""
MAX_GIT_INDEX_BYTES = 256 * 1024 * 1024
"""The largest git index (``.git/index``) read to know which files are tracked, in bytes.

An index holds about 100 bytes a tracked file (62 of file data and hash, then the
name; this repository's: 26 KB for 263 files), so this is some 2.5 million files.
It is read in blocks and only the names the walk may ask about are kept, so memory
stays small; the limit bounds the time (300,000 entries, 31 MB, read in 0.9 s on
a 2-core machine: some 8 s at the limit). Past it, no file counts as tracked."""
MAX_IGNORE_GLOB_BYTES = 32 * 1024
"""The most bytes of wildcard patterns (``*``, ``?``, ``[...]``; not plain names,
plain paths nor ``*.suffix``) the ignore files that apply to one path may hold
together: its ``.gitignore`` files up to the top, ``info/exclude`` and the global
excludes file, each distinct pattern counted once.

Each such pattern is tried against each path the walk meets (and each folder
above it, once), in time bounded by the path's length times the pattern's
(``cli._wildmatch``): this bounds the work a path costs. GitHub's 312
``.gitignore`` templates hold 11.8 KB of wildcard patterns all together, the
largest 1.5 KB. At this limit the slowest file found (lines ``**/*/*/.../b``)
costs some 40 ms a folder of a path (git: 10 ms); lines ``a/**/a/**/.../b`` cost
10 ms, where git's own matcher runs for minutes (benches/bench_walk.py). A file
that would take the total past it is not applied (the walk then checks what it
would have left out) and is named (``cli._walk.Found.not_applied``)."""
MAX_GIT_INDEX_NAME_BYTES = 64 * 1024
"""The longest path an index entry may hold before the index is taken as corrupt, in
bytes (a path is at most 4 KiB on Linux): a corrupt index with no NUL to end a
name would otherwise be read to its end for that one name."""
MAX_GIT_SMALL_FILE_BYTES = 4096
"""The largest ``.git`` file, ``HEAD`` or ``commondir`` read, in bytes: each holds one
path or ref. A larger one is not read: a ``HEAD`` that makes no repository, a
``.git`` file that leads to none, a ``commondir`` not followed."""
MAX_GIT_INCLUDE_DEPTH = 10
"""How deeply git config files may include others (``include.path``), as git's own
``MAX_INCLUDE_DEPTH``: past it, an include is not read (git stops with an error)."""

# ---- the language server ---------------------------------------------------------------------

MAX_LSP_MESSAGE_BYTES = 8 * MAX_CONFIG_BYTES
"""The longest message ``agent-rollout lsp`` reads (its ``Content-Length``), 8 MiB.

The largest message a client sends is a document's whole text (``didOpen``):
a config at ``MAX_CONFIG_BYTES``, escaped as JSON at the worst (six bytes for
a control character, ``\\u0001``), fits with room to spare. A longer message is
skipped in small pieces, never held in memory, and logged (a request among
them is answered with an error); a document too large to open this way is one
``check`` would not read anyway."""
LSP_HEADER_LINE_BYTES = 8 * 1024
"""The longest header line of a message, its break included; a longer one refuses it."""
LSP_SKIP_CHUNK_BYTES = 64 * 1024
"""The pieces a message over ``MAX_LSP_MESSAGE_BYTES`` is read (and dropped) in."""
LSP_ID_EDGE_BYTES = 4 * 1024
"""How much of the start and end of a message that is not read whole is searched for its id."""
LSP_ID_SCALAR_CHARS = 64
"""The longest number (or ``true``, ``false``, ``null``) read backwards at a message's end."""
LSP_QUEUED_MESSAGES = 8
"""Messages read ahead of the one being handled; the reader waits past this."""
LSP_HELD_MESSAGES = 64
"""Messages kept for pygls while it loads; a request past this is answered an error."""
LSP_UNOPENED_NAMED = 100
"""Documents never opened whose edits are logged (each once)."""
LSP_CHECK_THREADS = 4
"""Checks (and code actions) of large documents at once, each on a worker thread of its own."""
LSP_INLINE_CHARS = 16 * 1024
"""The largest document (in characters) checked, and whose code actions are computed,
on the thread that handles messages: its check takes about 7 ms of CPU (0.45 ms a
kilobyte), which is as long as any other message waits for it. A larger one is checked
on a worker thread."""
LSP_MESSAGE_CHARS = 100
"""The longest message a diagnostic carries; a longer one is cut (``short_message``)."""


# ---- the one integer-range check -------------------------------------------------------------


def check_int(
    value: object,
    name: str,
    high: int,
    *,
    low: int = 1,
    wrong_type: type[Exception] = RolloutTypeError,
    grouped: bool = False,
) -> int:
    """``value`` must be an int (a bool is not one) in ``[low, high]``; return it as an int.

    ``TypeError`` (or ``wrong_type``) names a value of another type,
    ``ValueError`` one out of range: ``max_rows must be in [1, 10000000], got 0``
    (``grouped``: thousands separators, as the command line prints them; an
    empty ``name`` leaves the message to start at ``must``).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(f"{name} must be an int, got {type(value).__name__}".lstrip())
    if not low <= value <= high:
        bounds = (
            f"[{low:,}, {high:,}], got {value:,}" if grouped else f"[{low}, {high}], got {value}"
        )
        raise RolloutValueError(f"{name} must be in {bounds}".lstrip())
    return int(value)


def check_section(section: str, name: str = "section") -> str:
    """``section`` (a key or dotted path) must name at most ``MAX_SECTION_KEYS`` keys and
    be at most ``MAX_SECTION_LEN`` characters long; return it. ``RolloutValueError``
    otherwise (an empty ``name``: the message starts at ``must``, for the command line
    to name its flag)."""
    count = section.count(".") + 1
    if count > MAX_SECTION_KEYS:
        raise RolloutValueError(
            f"{name} must be a dotted path of at most {MAX_SECTION_KEYS} keys, "
            f"got {count:,} keys".lstrip()
        )
    if len(section) > MAX_SECTION_LEN:
        raise RolloutValueError(
            f"{name} must be at most {MAX_SECTION_LEN:,} characters long, "
            f"got {len(section):,}".lstrip()
        )
    return section


def check_max_rows(max_rows: object) -> int:
    """``max_rows`` must be an int in [1, MAX_ROWS_LIMIT]."""
    return check_int(max_rows, "max_rows", MAX_ROWS_LIMIT)


def check_max_bytes(max_bytes: object) -> int:
    """``max_bytes`` must be an int in [1, MAX_BYTES_LIMIT]."""
    return check_int(max_bytes, "max_bytes", MAX_BYTES_LIMIT)
