"""``agent-rollout schema``: print the JSON Schema of a training config file.

Regenerate the committed copy with
``agent-rollout schema -o schema/training-config.schema.json``.
``--vscode`` prints the ``.vscode/settings.json`` entries that map config
files to a schema instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

from agent_rollout._errors import error_text, printable, printable_json
from agent_rollout._exceptions import RolloutValueError
from agent_rollout.cli._args import file_name, section_name
from agent_rollout.cli._lines import file_problem

__all__ = ["add_arguments", "render_schema", "run", "vscode_settings"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print the JSON Schema (draft 7) of a training config file: the rollout keys "
        "inside the section, every other key left open."
    )
    parser.add_argument(
        "--section",
        type=section_name,
        default=None,
        help="key holding the settings, a dotted path for nested ones (default: as check "
        "reads a file, the training section or the top level of a flat config; '' for the "
        "top level only)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        type=file_name,
        help="write the schema to FILE instead of stdout",
    )
    parser.add_argument(
        "--vscode",
        action="store_true",
        help="print the VS Code settings (yaml.schemas, json.schemas) that apply the "
        "schema at --schema-path to the files matching --glob",
    )
    parser.add_argument(
        "--schema-path",
        default="./schema/training-config.schema.json",
        help="with --vscode: where the schema file is, relative to the workspace "
        "(default: ./schema/training-config.schema.json)",
    )
    parser.add_argument(
        "--glob",
        action="append",
        metavar="GLOB",
        help="with --vscode: config files the schema applies to; repeatable "
        "(default: configs/**/*.yaml, .yml and .json)",
    )


def render_schema(section: Optional[str] = None) -> str:
    """The schema as the text that is written (two-space indent, ASCII, final newline).

    ``section`` as ``--section`` gives it: ``None`` (unset) is ``check``'s default
    reading (``AUTO_SECTION``), ``''`` the top level, else a dotted path."""
    from agent_rollout.config import AUTO_SECTION, training_config_schema

    chosen = AUTO_SECTION if section is None else (section or None)
    return json.dumps(training_config_schema(chosen), indent=2) + "\n"


DEFAULT_GLOBS = ("configs/**/*.yaml", "configs/**/*.yml", "configs/**/*.json")


def vscode_settings(schema_path: str, globs: Optional[list[str]] = None) -> dict[str, object]:
    """The ``.vscode/settings.json`` entries mapping config files to the schema.

    YAML goes through the Red Hat YAML extension (``yaml.schemas``), JSON
    through VS Code itself (``json.schemas``). TOML files name their schema
    on their first line instead (``#:schema PATH``, read by Even Better TOML).
    """
    chosen = list(globs or DEFAULT_GLOBS)
    toml = [glob for glob in chosen if glob.lower().endswith(".toml")]
    if toml:
        raise RolloutValueError(
            f"{toml[0]}: TOML files name their schema themselves, with a first line "
            "'#:schema <path to the schema>' (Even Better TOML)"
        )
    yaml_globs = [glob for glob in chosen if not glob.lower().endswith(".json")]
    json_globs = [glob for glob in chosen if glob.lower().endswith(".json")]
    settings: dict[str, object] = {}
    if yaml_globs:
        settings["yaml.schemas"] = {schema_path: yaml_globs}
    if json_globs:
        settings["json.schemas"] = [{"fileMatch": json_globs, "url": schema_path}]
    return settings


def run(args: argparse.Namespace) -> int:
    if args.vscode:
        try:
            settings = vscode_settings(args.schema_path, args.glob)
        except ValueError as exc:
            sys.stderr.write(printable(f"agent-rollout schema: {exc}") + "\n")
            return 2
        sys.stdout.write(printable_json(json.dumps(settings, indent=2)) + "\n")
        return 0
    text = render_schema(args.section)
    if not args.output or args.output == "-":
        sys.stdout.write(printable_json(text))  # --section is the user's text
        return 0
    try:
        with open(args.output, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:  # the file named, the reason in words (MESSAGE_SHAPES)
        if exc.filename is None:  # a write or the flush at close (/dev/full): no name
            exc.filename = args.output
        message = file_problem(exc, "write") or f"agent-rollout schema: {error_text(exc)}"
        sys.stderr.write(printable(message) + "\n")
        return 2
    return 0
