"""The row cap of the file commands, ``normalise`` and ``stats``: one default for both
(``FILE_COMMAND_MAX_ROWS``, 10,000,000: they stream), stated the same way in both
``--help`` texts, and the same error from both over a cap. The library's functions and
``run`` keep the seed's 100,000 (``MAX_ROLLOUT_ROWS``); docs/rows.md, "Row caps", says why.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_rollout import MAX_ROLLOUT_ROWS, MAX_ROWS_LIMIT, RolloutFileError, normalise_rollout_file
from agent_rollout._limits import FILE_COMMAND_MAX_ROWS
from agent_rollout.cli import build_parser
from support import Cli, cli_env

FILE_COMMANDS = ("normalise", "stats")


def installed_command() -> Path:
    """The ``agent-rollout`` script pip installed beside this Python."""
    script = Path(sys.executable).parent / "agent-rollout"
    if not script.exists():
        pytest.skip("the agent-rollout command is not installed beside this Python")
    return script


def max_rows_help(command: str) -> str:
    """The ``--max-rows`` entry of ``agent-rollout COMMAND --help``, from the installed
    command (on this tree's package: ``cli_env`` puts it first on ``PYTHONPATH``)."""
    done = subprocess.run(
        [str(installed_command()), command, "--help"],
        capture_output=True,
        text=True,
        env=cli_env() | {"COLUMNS": "200"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"^  --max-rows N +(.+?)\n  -", done.stdout, re.MULTILINE | re.DOTALL)
    assert found is not None, done.stdout
    return " ".join(found.group(1).split())


def test_the_file_commands_have_one_default_stated_the_same_way() -> None:
    assert FILE_COMMAND_MAX_ROWS == MAX_ROWS_LIMIT == 10_000_000
    defaults = {
        command: build_parser([command]).parse_args([command, "f.jsonl"]).max_rows
        for command in FILE_COMMANDS
    }
    assert defaults == {"normalise": FILE_COMMAND_MAX_ROWS, "stats": FILE_COMMAND_MAX_ROWS}
    helps = {command: max_rows_help(command) for command in FILE_COMMANDS}
    assert helps["normalise"] == helps["stats"], helps
    assert "(default 10,000,000, the most allowed" in helps["normalise"], helps
    # The library and `run` keep the seed's cap.
    assert build_parser(["run"]).parse_args(["run", "c.yaml"]).max_rows == MAX_ROLLOUT_ROWS


def test_normalise_takes_a_file_over_the_library_cap(engine: str, cli: Cli, tmp_path: Path) -> None:
    """It refused this file at 100,000 rows while ``stats`` read it; the library still does."""
    src = tmp_path / "big.jsonl"
    src.write_bytes(b'{"prompt":"q"}\n' * (MAX_ROLLOUT_ROWS + 1))
    out = tmp_path / "out.jsonl"
    done = cli("normalise", str(src), "-o", str(out))
    assert done.code == 0, done.err
    assert "normalised 100,001 rows in, 100,001 rows out" in done.err
    assert out.stat().st_size == src.stat().st_size
    with pytest.raises(RolloutFileError, match=r"big\.jsonl:100001: more than 100,000 rows"):
        normalise_rollout_file(src, tmp_path / "lib.jsonl")


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.jsonl.gz"])
def test_both_commands_give_the_same_error_over_a_cap(
    engine: str, cli: Cli, tmp_path: Path, name: str
) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"prompt": "a"}\n' * 5, encoding="utf-8")
    src = tmp_path / name
    if name.endswith(".gz"):
        assert cli("normalise", str(plain), "-o", str(src)).code == 0
    else:
        src = plain
    errors = {}
    for command in FILE_COMMANDS:
        done = cli(command, str(src), "--max-rows", "3")
        assert done.code == 1, done.err
        errors[command] = done.err
    assert (
        errors["normalise"]
        == errors["stats"]
        == (f"{src}:4: more than 3 rows (max_rows=3; raise the limit with --max-rows N)\n")
    )
