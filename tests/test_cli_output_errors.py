"""Standard output that cannot be written, and usage errors after a command (review 45b).

Every command says a standard output it cannot write (full, an I/O error, closed) in one
line, ``agent-rollout COMMAND: cannot write to standard output: REASON``, exit 2, never
``internal error`` nor argparse's silence (``--help``, ``--version``); a write error that
shows only at the final flush is said too; a broken pipe still ends quietly. Real
processes, their standard output ``/dev/full`` or closed; one in-process run whose
``sys.stdout`` is ``/dev/full``, for the flush at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import Cli, cli_argv, cli_env

ROWS = '{"prompt": "a", "answer": "b"}\n'
CONFIG = "training:\n  rollout_backend: art\n  rollout_func: m:f\n"
FULL = "cannot write to standard output: No space left on device"
CLOSED = "cannot write to standard output: Bad file descriptor"

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


def files(folder: Path) -> Path:
    (folder / "u.jsonl").write_text(ROWS)
    (folder / "k.yaml").write_text(CONFIG)
    return folder


def to_dev_full(folder: Path, *args: str, engine: str = "rust") -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            cli_argv(*args), cwd=folder, stdout=full, stderr=subprocess.PIPE, text=True,
            env=cli_env(engine), timeout=60, check=False,
        )  # fmt: skip


def stdout_closed(
    folder: Path, *args: str, engine: str = "rust"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *cli_argv(*args)], cwd=folder,
        stderr=subprocess.PIPE, text=True, env=cli_env(engine), timeout=60, check=False,
    )  # fmt: skip


COMMANDS = [
    ("schema",),
    ("stats", "u.jsonl"),
    ("stats", "--format", "json", "u.jsonl"),
    ("check", "k.yaml"),
    ("check", "--format", "json", "k.yaml"),
    ("check", "--format", "github", "k.yaml"),
    ("demo", "--offline"),
    ("normalise", "u.jsonl"),
    ("-V",),
    ("--help",),
    ("schema", "--help"),
]


def said(done: subprocess.CompletedProcess[str], args: tuple[str, ...], reason: str) -> None:
    prog = "agent-rollout" if args[0].startswith("-") else f"agent-rollout {args[0]}"
    lines = [line for line in done.stderr.splitlines() if "debug build" not in line]
    assert (done.returncode, lines) == (2, [f"{prog}: {reason}"]), done.stderr


@needs_dev_full
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_full_standard_output_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    said(to_dev_full(files(tmp_path), *args), args, FULL)


@pytest.mark.parametrize("args", [("schema",), ("check", "."), ("stats", "u.jsonl"),
                                  ("normalise", "u.jsonl"), ("-V",)], ids=" ".join)  # fmt: skip
def test_a_closed_standard_output_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    said(stdout_closed(files(tmp_path), *args), args, CLOSED)


@needs_dev_full
def test_normalise_rows_to_a_full_output_on_both_engines(engine: str, tmp_path: Path) -> None:
    args = ("normalise", "u.jsonl")
    said(to_dev_full(files(tmp_path), *args, engine=engine), args, FULL)
    said(stdout_closed(tmp_path, *args, engine=engine), args, CLOSED)


def test_a_command_that_writes_no_output_needs_none(engine: str, tmp_path: Path) -> None:
    done = stdout_closed(files(tmp_path), "normalise", "u.jsonl", "-o", "o.jsonl", engine=engine)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("normalised 1 row in")
    assert (tmp_path / "o.jsonl").read_text() == '{"prompt":"a","answer":"b"}\n'


@needs_dev_full
def test_schema_to_a_file_that_cannot_be_written(tmp_path: Path) -> None:
    for name, reason in [("/dev/full", "No space left on device")]:
        done = subprocess.run(cli_argv("schema", "-o", name), cwd=tmp_path, capture_output=True,
                              text=True, env=cli_env(), timeout=60, check=False)  # fmt: skip
        assert (done.returncode, done.stderr) == (2, f"{name}: cannot write file: {reason}\n")


@needs_dev_full
def test_the_flush_at_the_end_is_checked(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema fits the buffer: nothing fails until the flush after the command."""
    full = open("/dev/full", "w", buffering=1 << 20)
    monkeypatch.setattr(sys, "stdout", full)
    try:
        done = cli("schema")
    finally:
        full.close()
    assert (done.code, done.err) == (2, f"agent-rollout schema: {FULL}\n")


def test_a_broken_pipe_stays_quiet(tmp_path: Path) -> None:
    rows = "".join(f'{{"prompt": "p{i}", "answer": "a"}}\n' for i in range(50_000))
    (tmp_path / "big.jsonl").write_text(rows)
    for args in [("normalise", "big.jsonl"), ("schema",), ("--help",)]:
        with subprocess.Popen(cli_argv(*args), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=cli_env()) as proc:  # fmt: skip
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.read(1)
            proc.stdout.close()
            err = proc.stderr.read()
            assert proc.wait(timeout=60) == 0, err
        assert b"cannot write" not in err and b"Error" not in err, err


def test_stats_of_an_empty_file_says_what_stats_means(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    """stats trains nothing: not the reader's ``refusing to train on an empty prompt set``."""
    (tmp_path / "empty.jsonl").write_text("\n")
    done = cli("stats", str(tmp_path / "empty.jsonl"))
    assert (done.code, done.out) == (1, "")
    assert (
        done.err
        == f"{tmp_path}/empty.jsonl: no rows (the file is empty or blank): nothing to show\n"
    )
