"""``agent-rollout schema``: print the JSON Schema of a training config file.

Regenerate the committed copy with
``agent-rollout schema -o schema/training-config.schema.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

__all__ = ["add_arguments", "render_schema", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print the JSON Schema (draft 7) of a training config file: the rollout keys "
        "inside the section, every other key left open."
    )
    parser.add_argument(
        "--section",
        default="training",
        help="top-level key holding the settings (default: training; '' for the top level)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the schema to FILE instead of stdout"
    )


def render_schema(section: Optional[str] = "training") -> str:
    """The schema as the text that is written (two-space indent, ASCII, final newline)."""
    from agent_rollout.config import training_config_schema

    return json.dumps(training_config_schema(section), indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    text = render_schema(args.section or None)
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        sys.stderr.write(f"agent-rollout schema: cannot write {args.output}: {exc.strerror}\n")
        return 2
    return 0
