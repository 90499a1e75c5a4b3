"""Argument types and options shared by several commands (standard library only)."""

from __future__ import annotations

import argparse
import re

from agent_rollout._exceptions import RolloutValueError
from agent_rollout._files import destination, output_format
from agent_rollout._limits import (
    FILE_COMMAND_MAX_ROWS,
    MAX_BYTES_LIMIT,
    MAX_ROLLOUT_BYTES,
    MAX_ROWS_LIMIT,
    check_int,
    check_section,
)

__all__ = [
    "add_file_max_rows",
    "add_max_bytes",
    "add_output",
    "add_section",
    "byte_count",
    "file_name",
    "output_name",
    "positive_rows",
    "section_name",
]


def file_name(text: str) -> str:
    """argparse type for a file argument (``IN``, ``-o``, ``CONFIG``): any name but ``''``."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got ''")
    return text


def positive_rows(text: str) -> int:
    """argparse type for ``--max-rows``: an int in [1, MAX_ROWS_LIMIT]."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    try:
        return check_int(value, "--max-rows", MAX_ROWS_LIMIT)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be in [1, {MAX_ROWS_LIMIT:,}], got {value}"
        ) from None


_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_BYTES = re.compile(r"(\d+)\s*(?:([kmgt])(?:i?b)?)?", re.IGNORECASE)


def byte_count(text: str) -> int:
    """argparse type for ``--max-bytes``: a whole number of bytes, or with KiB/MiB/GiB/TiB."""
    match = _BYTES.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes (e.g. 500000000, 512MiB, 8GiB), got {text!r}"
        )
    value = int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]
    try:
        return check_int(value, "", MAX_BYTES_LIMIT, grouped=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def section_name(text: str) -> str:
    """argparse type for ``--section``: a key or dotted path no longer than
    ``_limits.check_section`` allows (``''``, the top level, included)."""
    try:
        return check_section(text, "") if text else text
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_section(parser: argparse.ArgumentParser) -> None:
    """``--section``: where the rollout keys are in the config file. Unset (``None``)
    means ``load_config``'s default (``AUTO_SECTION``: the ``training`` section, or the
    top level of a flat config); ``''`` is the top level (``section=None``)."""
    parser.add_argument(
        "--section",
        type=section_name,
        default=None,
        help="key holding the settings: a top-level key or a dotted path such as "
        "'trainer.rollout' (default: the training section, or the top level of a flat config "
        "(see docs/config.md); '' for the top level)",
    )


def output_name(text: str) -> str:
    """argparse type for ``-o``: a name whose suffix says the format (``.jsonl``,
    ``.jsonl.gz``, ``.parquet``; ``_files.output_format``), so that a name that
    says none is a usage error before any work is done."""
    text = file_name(text)
    try:
        output_format(text, destination(text))
    except RolloutValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except OSError:
        pass  # a symlink loop: the write names it
    return text


def add_prompt_kind(parser: argparse.ArgumentParser) -> None:
    """``--prompt-kind``: the prompt column's kind of a Parquet output."""
    parser.add_argument(
        "--prompt-kind",
        choices=("auto", "text", "messages"),
        default="auto",
        help="Parquet output (OUT ends in .parquet): the prompt column's kind; 'auto' lets "
        "the first row decide, 'messages' wraps str prompts as one user message "
        "(see docs/arrow.md)",
    )


def add_output(parser: argparse.ArgumentParser) -> None:
    """``-o/--output``: where the rows go (standard output by default), in the format
    its name says."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        type=output_name,
        default="-",
        help="where to write the rows, in the format its name says: .jsonl, .jsonl.gz "
        "(gzip), .parquet (default '-': JSONL on standard output)",
    )


def add_max_bytes(
    parser: argparse.ArgumentParser, what: str = "input", parquet: bool = False
) -> None:
    """``--max-bytes``: the byte limit of a JSONL input (``read_rollout_jsonl``'s ``max_bytes``),
    and with ``parquet`` of a Parquet one (its columns read, uncompressed)."""
    also = "; of a Parquet file, the bytes of the columns read, uncompressed" if parquet else ""
    parser.add_argument(
        "--max-bytes",
        type=byte_count,
        default=MAX_ROLLOUT_BYTES,
        metavar="B",
        help=f"refuse {what} of more than B bytes after gzip decompression, blank lines "
        f"included{also}; KiB/MiB/GiB/TiB suffixes work (default "
        f"{MAX_ROLLOUT_BYTES // 1024**3} GiB)",
    )


def add_file_max_rows(parser: argparse.ArgumentParser) -> None:
    """``--max-rows`` of the file commands (``normalise``, ``stats``): one default,
    ``FILE_COMMAND_MAX_ROWS`` (its docstring says why), stated the same way in both."""
    parser.add_argument(
        "--max-rows",
        type=positive_rows,
        default=FILE_COMMAND_MAX_ROWS,
        metavar="N",
        help=f"refuse a file of more than N rows (default {FILE_COMMAND_MAX_ROWS:,}, the "
        "most allowed: the file is streamed, memory does not grow with it)",
    )
