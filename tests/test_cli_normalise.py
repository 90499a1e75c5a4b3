"""`agent-rollout normalise`, in process (``cli.main``) and through the real entry point.

Most tests run the command in this process with the ``engine`` fixture's
engine and the output captured at the file-descriptor level (``cli`` /
``cli_bytes``). A real ``python -m agent_rollout`` process runs where the
process is the point: standard input, a reader closing the pipe, a terminal
(progress drawing) and Ctrl-C; ``AGENT_ROLLOUT_PURE_PYTHON=1`` in its
environment picks the pure-Python engine (``support.cli_env``).
"""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

from agent_rollout.cli._progress import ERASE_LINE, Progress, input_position, input_size
from support import (
    ENGINES,
    SMALL_ROW,
    Cli,
    FifoFeeder,
    canonical,
    cli_argv,
    cli_env,
    cli_process,
    run_in_pty,
    started,
    temp_files,
)

# ---- fixtures ------------------------------------------------------------------------------

INPUT_LINES = [
    '{"id": 1, "prompt": "Wie viel ist 2 + 2?", "answer": "4", "meta": {"x": 1}}',
    "",
    '{"prompt": [{"role": "user", "content": "héllo ✓", "weight": 0.1}], "answer": null}',
    '{"answer": "b", "prompt": "second"}',
]
EXPECTED_ROWS = [
    {"prompt": "Wie viel ist 2 + 2?", "answer": "4"},
    {"prompt": [{"role": "user", "content": "héllo ✓", "weight": 0.1}]},
    {"prompt": "second", "answer": "b"},
]


@pytest.fixture
def rollouts(tmp_path: Path) -> Path:
    path = tmp_path / "rollouts.jsonl"
    path.write_text("\n".join(INPUT_LINES) + "\n", encoding="utf-8")
    return path


# ---- success paths ---------------------------------------------------------------------------


def test_file_to_file_in_process(engine: str, rollouts: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "out.jsonl"
    result = cli("normalise", str(rollouts), "-o", str(out))
    assert result.code == 0
    assert out.read_bytes() == canonical(EXPECTED_ROWS)
    assert result.out == ""
    summary = result.err.strip()
    assert "\n" not in summary and "\r" not in summary  # one line, no progress when not a TTY
    assert summary.startswith(
        "normalised 3 rows in, 3 rows out, 1 blank line skipped, 2 dropped keys, "
    )
    assert summary.endswith(f" rows/s, engine {engine} -> {out}")
    assert temp_files(tmp_path) == []


def test_stdout_is_the_default_output(engine: str, rollouts: Path, cli: Cli) -> None:
    result = cli("normalise", str(rollouts))
    assert result.code == 0
    assert result.out.encode() == canonical(EXPECTED_ROWS)
    assert result.err.startswith("normalised 3 rows in, 3 rows out")
    assert "->" not in result.err


@pytest.mark.parametrize("engine_name", ENGINES)
def test_stdin_to_stdout_through_the_entry_point(rollouts: Path, engine_name: str) -> None:
    # The one test of `python -m agent_rollout` as such, reading its real standard input.
    result = cli_process("normalise", "-", stdin=rollouts.read_bytes(), engine=engine_name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == canonical(EXPECTED_ROWS)
    assert result.stderr.decode().endswith(f"engine {engine_name}\n")


def test_gzip_input(engine: str, tmp_path: Path, cli: Cli) -> None:
    src = tmp_path / "rollouts.jsonl.gz"
    src.write_bytes(gzip.compress(("\n".join(INPUT_LINES) + "\n").encode()))
    out = tmp_path / "out.jsonl"
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 0, result.err
    assert out.read_bytes() == canonical(EXPECTED_ROWS)


def test_existing_output_is_replaced(engine: str, rollouts: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    assert cli("normalise", str(rollouts), "-o", str(out)).code == 0
    assert out.read_bytes() == canonical(EXPECTED_ROWS)


# ---- exit 1: invalid input -----------------------------------------------------------------

BAD_FILES = [
    (
        ['{"prompt": "a"}', '{"prompt": "b", "answer": 3}'],
        [
            ":2: row 1: answer: must be a str or None, got 'int'",
            ": 1 bad row of 2 (answer of a wrong type: 1); nothing",
        ],
    ),
    (
        ['{"prompt": "a"}', "", '{"prompt": "b",'],
        [
            ":3:16: invalid JSON: the line ends inside an object",
            ": 1 bad row of 2 (invalid JSON: 1);",
        ],
    ),
    (
        ['{"prompt": ""}'],
        [":1: row 0: prompt: empty prompt", ": 1 bad row of 1 (empty prompt: 1);"],
    ),
    (["", "  "], [": no rows (the file is empty or blank)"]),
]


@pytest.mark.parametrize(("lines", "messages"), BAD_FILES)
def test_invalid_input_exits_1_and_keeps_the_old_output(
    engine: str, tmp_path: Path, lines: list[str], messages: list[str], cli: Cli
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text("previous contents\n")
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 1
    err = result.err.splitlines()
    assert len(err) == len(messages), err
    for line, message in zip(err, messages, strict=True):
        assert line.startswith(f"{src}{message}"), err
    assert out.read_text() == "previous contents\n"
    assert temp_files(tmp_path) == []


def test_bad_utf8_names_line_and_byte(engine: str, tmp_path: Path, cli: Cli) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"prompt": "ok"}\n{"prompt": "\xff"}\n')
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"))
    assert result.code == 1
    assert result.err.startswith(f"{src}:2: invalid UTF-8 at byte 13 of the line\n")
    assert not (tmp_path / "out.jsonl").exists()


def test_row_cap_hint_names_the_flag(engine: str, rollouts: Path, cli: Cli) -> None:
    result = cli("normalise", str(rollouts), "--max-rows", "2")
    assert result.code == 1
    assert result.err == (
        f"{rollouts}:4: more than 2 rows (max_rows=2; raise the limit with --max-rows N)\n"
    )


def test_mixed_prompt_kinds_hint_names_the_flag(engine: str, tmp_path: Path, cli: Cli) -> None:
    pytest.importorskip("pyarrow")
    src = tmp_path / "mixed.jsonl"
    src.write_text('{"prompt": "a"}\n{"prompt": [{"role": "user", "content": "b"}]}\n')
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.parquet"))
    assert result.code == 1
    assert result.err.startswith(f"{src}:2: row 1: prompt: a list of chat messages")
    assert "; --prompt-kind messages makes every prompt a message list" in result.err
    assert "prompt_kind=" not in result.err


# ---- every bad row at once -----------------------------------------------------------------


def bad_file(path: Path, bad: int, good: int = 3) -> Path:
    """``good`` good rows, then ``bad`` bad ones (row rules and JSON syntax in turn)."""
    lines = ['{"prompt": "ok", "answer": "a"}'] * good
    lines += ['{"prompt": 5}' if i % 2 else '{"prompt": ' for i in range(bad)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_bad_row_is_counted_the_first_20_shown(engine: str, tmp_path: Path, cli: Cli) -> None:
    src = bad_file(tmp_path / "bad.jsonl", 25)
    out = tmp_path / "out.jsonl"
    out.write_text("previous contents\n")
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 1
    err = result.err.splitlines()
    assert len(err) == 21, err
    assert err[0] == f"{src}:4:12: invalid JSON: the line ends inside an object"
    assert err[1].startswith(f"{src}:5: row 4: prompt: must be a str or a list")
    assert err[19].startswith(f"{src}:23: row 22: prompt:")
    assert err[20] == (
        f"{src}: 25 bad rows of 28 (the first 20 listed: invalid JSON: 10, prompt of a wrong "
        "type: 10); nothing written (--skip-bad writes the good rows)"
    )
    assert out.read_text() == "previous contents\n"
    assert temp_files(tmp_path) == []


def test_skip_bad_writes_the_good_rows_and_lists_the_skipped(
    engine: str, tmp_path: Path, cli: Cli
) -> None:
    src = bad_file(tmp_path / "bad.jsonl", 2)
    out = tmp_path / "out.jsonl"
    result = cli("normalise", str(src), "-o", str(out), "--skip-bad")
    assert result.code == 0, result.err
    assert out.read_bytes() == canonical([{"prompt": "ok", "answer": "a"}] * 3)
    err = result.err.splitlines()
    assert err[0] == f"{src}:4:12: invalid JSON: the line ends inside an object"
    assert err[1].startswith(f"{src}:5: row 4: prompt: must be a str")
    assert err[2] == f"{src}: 2 bad rows of 5 (invalid JSON: 1, prompt of a wrong type: 1), skipped"
    assert err[3].startswith("normalised 5 rows in, 3 rows out, 2 bad rows and 0 blank lines ")
    assert len(err) == 4


def test_skip_bad_given_is_not_suggested_again(engine: str, tmp_path: Path, cli: Cli) -> None:
    """--skip-bad could not write anything: every row bad, or a fault of the file after bad
    rows. The summary does not tell the user to pass the flag they passed."""
    src = tmp_path / "allbad.jsonl"
    src.write_text('{"prompt": ""}\n[1]\n', encoding="utf-8")
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"), "--skip-bad")
    assert result.code == 1
    assert result.err.splitlines()[-1] == (
        f"{src}: 2 bad rows of 2 (empty prompt: 1, not a mapping: 1); nothing written"
    )
    src = bad_file(tmp_path / "bad.jsonl", 4)
    out = tmp_path / "out.jsonl"
    result = cli("normalise", str(src), "-o", str(out), "--max-rows", "5", "--skip-bad")
    assert result.code == 1 and "--skip-bad" not in result.err
    assert "raise the limit with --max-rows N" in result.err


def test_bad_rows_then_a_fault_of_the_file(engine: str, tmp_path: Path, cli: Cli) -> None:
    src = bad_file(tmp_path / "bad.jsonl", 4)
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"), "--max-rows", "5")
    assert result.code == 1
    err = result.err.splitlines()
    assert [line.split(": ")[0] for line in err[:3]] == [f"{src}:4:12", f"{src}:5", f"{src}:6"]
    assert err[2] == f"{src}:6: more than 5 rows (max_rows=5; raise the limit with --max-rows N)"
    assert err[3].startswith(
        f"{src}: 2 bad rows (invalid JSON: 1, prompt of a wrong type: 1), then the error above "
        "stopped the read;"
    )


def test_skip_bad_writes_parquet_of_the_good_rows(engine: str, tmp_path: Path, cli: Cli) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    src = bad_file(tmp_path / "bad.jsonl", 2)
    out = tmp_path / "out.parquet"
    result = cli("normalise", str(src), "-o", str(out), "--skip-bad")
    assert result.code == 0, result.err
    assert pq.read_table(out).to_pylist() == [{"prompt": "ok", "answer": "a"}] * 3
    err = result.err.splitlines()
    assert err[0] == f"{src}:4:12: invalid JSON: the line ends inside an object"
    assert err[1].startswith(f"{src}:5: row 4: prompt: must be a str")
    assert err[2] == f"{src}: 2 bad rows of 5 (invalid JSON: 1, prompt of a wrong type: 1), skipped"
    assert err[3].startswith("normalised 5 rows in, 3 rows out, 2 bad rows and 0 blank lines ")
    assert temp_files(tmp_path) == []


def test_bad_rows_into_parquet_are_all_listed_and_nothing_written(
    engine: str, tmp_path: Path, cli: Cli
) -> None:
    pytest.importorskip("pyarrow")
    src = bad_file(tmp_path / "bad.jsonl", 3)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous contents")
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 1
    err = result.err.splitlines()
    assert [line.split(": ")[0] for line in err[:3]] == [f"{src}:4:12", f"{src}:5", f"{src}:6:12"]
    assert err[3] == (
        f"{src}: 3 bad rows of 6 (invalid JSON: 2, prompt of a wrong type: 1); nothing written "
        "(--skip-bad writes the good rows)"
    )
    assert out.read_bytes() == b"previous contents"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine_name", ENGINES)
def test_stdin_errors_name_stdin(engine_name: str) -> None:
    result = cli_process("normalise", "-", stdin=b'{"prompt": "a"}\n[1]\n', engine=engine_name)
    assert result.returncode == 1
    assert result.stderr.decode().startswith("<stdin>:2: row 1: a rollout row must be a mapping")


# ---- exit 2: usage and I/O -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-rows", "0"], "argument --max-rows: must be in [1, 10,000,000], got 0"),
        (["--max-rows", "many"], "argument --max-rows: expected a whole number, got 'many'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["-o", ""], "argument -o/--output: expected a file name, got ''"),
    ],
)
def test_usage_errors_exit_2(rollouts: Path, args: list[str], message: str, cli: Cli) -> None:
    result = cli("normalise", str(rollouts), *args)
    assert result.code == 2
    assert message in result.err
    assert result.out == ""


def test_missing_input_argument_exits_2(cli: Cli) -> None:
    result = cli("normalise")
    assert result.code == 2
    assert "the following arguments are required: IN" in result.err


def test_empty_input_name_is_a_usage_error(cli: Cli) -> None:
    result = cli("normalise", "")
    assert result.code == 2
    assert "argument IN: expected a file name, got ''" in result.err
    assert "internal error" not in result.err


def test_unreadable_input_exits_2(engine: str, tmp_path: Path, cli: Cli) -> None:
    missing = tmp_path / "missing.jsonl"
    result = cli("normalise", str(missing), "-o", str(tmp_path / "out.jsonl"))
    assert result.code == 2
    assert result.err == f"{missing}: cannot read file: No such file or directory\n"
    assert not (tmp_path / "out.jsonl").exists()


def test_unwritable_output_exits_2(engine: str, rollouts: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "no-such-dir" / "out.jsonl"
    result = cli("normalise", str(rollouts), "-o", str(out))
    assert result.code == 2
    assert result.err == f"{out}: cannot write file: No such file or directory\n"


@pytest.mark.parametrize("engine_name", ENGINES)
def test_reader_leaving_early_is_not_an_error(tmp_path: Path, engine_name: str) -> None:
    # A real process: its standard output is a pipe the reader closes (`| head -1`).
    src = tmp_path / "many.jsonl"
    src.write_bytes(SMALL_ROW * 200_000)
    with started(
        cli_argv("normalise", str(src), "--max-rows", "200000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # like `| head -1`
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=30) == 0
    assert first == b'{"prompt":"q","answer":"a"}\n'
    assert "Traceback" not in err and "Errno" not in err


# ---- progress ------------------------------------------------------------------------------


def test_progress_is_drawn_on_a_terminal(tmp_path: Path) -> None:
    # A real process: its standard error is a pseudo-terminal.
    src = tmp_path / "rollouts.jsonl"
    src.write_bytes(SMALL_ROW * 150_000)  # about a second on the Python engine
    out = tmp_path / "out.jsonl"
    argv = cli_argv("normalise", str(src), "-o", str(out), "--max-rows", "150000")
    code, stdout, seen = run_in_pty(argv, cli_env("python"))
    assert code == 0
    assert stdout == b""
    text = seen.decode()
    redraws = text.split(ERASE_LINE)
    drawn = [part for part in redraws if part.startswith("normalise  ")]
    assert drawn, text
    assert all(" rows/s  " in part and part.rstrip().endswith(" s") for part in drawn)
    assert any("%" in part for part in drawn)  # a plain file: its size is known
    # The line is erased before the summary, which is printed once, last.
    assert redraws[-1].startswith("normalised 150,000 rows in, 150,000 rows out")
    assert out.stat().st_size == len(b'{"prompt":"q","answer":"a"}\n') * 150_000


def test_no_progress_when_piped(engine: str, tmp_path: Path, cli: Cli) -> None:
    # Standard error is captured to a file here: not a terminal, as when piped.
    src = tmp_path / "rollouts.jsonl"
    src.write_bytes(SMALL_ROW * 150_000)
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"), "--max-rows", "150000")
    assert result.code == 0
    err = result.err
    assert "\r" not in err and "\x1b" not in err
    assert err.count("\n") == 1 and err.startswith("normalised 150,000 rows in")


def test_progress_unit_redraws_at_most_every_interval() -> None:
    stream = io.StringIO()
    progress = Progress("job", stream=stream, enabled=True, interval=3600, total=10)
    progress.update(1, force=True)
    for done in range(2, 10):
        progress.update(done)  # within the interval: not drawn
    assert stream.getvalue().count(ERASE_LINE) == 1
    assert stream.getvalue().startswith(ERASE_LINE + "job  1 rows  ")
    assert "  10%  " in stream.getvalue()
    progress.finish()
    assert stream.getvalue().endswith(ERASE_LINE)
    progress.update(10, force=True)  # finished: nothing more
    assert stream.getvalue().count(ERASE_LINE) == 2


def test_progress_unit_percent_of_bytes_and_quiet_mode() -> None:
    stream = io.StringIO()
    progress = Progress("job", stream=stream, enabled=True, size=200, position=lambda: 50)
    progress.update(5, force=True)
    assert "  25%  " in stream.getvalue()
    progress.update(6, read=150, force=True)  # bytes read reported by the caller win
    assert stream.getvalue().rsplit(ERASE_LINE, 1)[1].count("75%") == 1
    quiet = io.StringIO()
    silent = Progress("job", stream=quiet, enabled=False)
    silent.update(5, force=True)
    silent.finish()
    assert quiet.getvalue() == ""
    assert Progress("job", stream=io.StringIO()).enabled is False  # not a terminal


def test_input_size(tmp_path: Path) -> None:
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"x" * 1000)
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(b"x" * 1000))
    assert input_size(str(plain)) == 1000
    assert input_size(str(packed)) is None  # the decompressed size is not known
    assert input_size(str(tmp_path / "missing")) is None


def test_input_size_never_opens_a_pipe(tmp_path: Path) -> None:
    # Opening a named pipe would block, or steal the data from the real reader.
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    found: list[Optional[int]] = []
    probe = threading.Thread(target=lambda: found.append(input_size(str(fifo))), daemon=True)
    probe.start()
    probe.join(timeout=5)
    if probe.is_alive():  # blocked in open(): release it before failing
        with open(fifo, "wb"):
            pass
    assert found == [None]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="needs Linux /proc")
def test_input_position_follows_the_open_file(tmp_path: Path) -> None:
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"x" * 100_000)
    position = input_position(str(plain))
    assert position() is None  # not open yet
    with open(plain, "rb", buffering=0) as handle:
        handle.read(300)
        assert position() == 300
        handle.read(700)
        assert position() == 1000
    assert position() is None  # closed again


# ---- Ctrl-C ----------------------------------------------------------------------------------


def _wait_for_temp(folder: Path, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not temp_files(folder):
        assert proc.poll() is None, "the command ended before it could be interrupted"
        assert time.monotonic() < deadline, "the command never started writing"
        time.sleep(0.005)


def _interrupt(proc: subprocess.Popen[bytes], limit: float) -> tuple[Optional[int], float]:
    """Send SIGINT; the exit code (None: still running after ``limit`` s) and the time taken."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        code: Optional[int] = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - sent


def test_ctrl_c_on_a_big_file_stops_and_leaves_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    src = tmp_path / "big.jsonl"
    src.write_bytes(SMALL_ROW * 2_000_000)  # many seconds on the Python engine
    out = work / "out.jsonl"
    with started(
        cli_argv("normalise", str(src), "-o", str(out), "--max-rows", "2000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env("python"),
    ) as proc:
        _wait_for_temp(work, proc)
        time.sleep(0.1)
        code, took = _interrupt(proc, limit=5)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    assert code == 130, err
    assert took < 3
    assert err == f"agent-rollout normalise: interrupted; {out} was not written\n"
    assert not out.exists()
    assert temp_files(work) == []


def _interrupt_fifo(tmp_path: Path, engine_name: str, keep_writing: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    out = work / "out.jsonl"
    with started(
        cli_argv("normalise", str(fifo), "-o", str(out), "--max-rows", "10000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    ) as proc:
        feeder = FifoFeeder(fifo, keep_writing)
        try:
            assert feeder.started.wait(20)
            _wait_for_temp(work, proc)
            time.sleep(0.2)
            code, took = _interrupt(proc, limit=3)
        finally:
            feeder.close()  # ends the input: a process still running now finishes
            proc.wait(timeout=30)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    assert code == 130, err
    assert took < 2
    assert "interrupted" in err
    assert not out.exists()
    assert temp_files(work) == []


@pytest.mark.parametrize("engine_name", ENGINES)
def test_ctrl_c_while_rows_stream_in(tmp_path: Path, engine_name: str) -> None:
    _interrupt_fifo(tmp_path, engine_name, keep_writing=True)


def test_ctrl_c_while_the_input_stalls_python_engine(tmp_path: Path) -> None:
    _interrupt_fifo(tmp_path, "python", keep_writing=False)


@pytest.mark.skipif("rust" not in ENGINES, reason="the Rust engine is not built")
def test_ctrl_c_while_the_input_stalls_rust_engine(tmp_path: Path) -> None:
    _interrupt_fifo(tmp_path, "rust", keep_writing=False)


@pytest.mark.parametrize("how", ["same", "dot", "link"])
def test_skipping_bad_rows_into_the_input_is_refused(how: str, cli: Cli, tmp_path: Path) -> None:
    """``normalise IN -o IN --skip-bad`` (by another spelling or a link too) replaced the
    input with its good rows: the bad ones lost with it, exit 0. Refused before anything
    is read, the file left as it was, exit 2. In place without ``--skip-bad`` stays: every
    row passes, or nothing is written."""
    src = tmp_path / "rollouts.jsonl"
    text = '{"prompt": "a", "answer": "b", "reward": 1}\n{"prompt": [{"content": "?"}]}\n'
    src.write_text(text, encoding="utf-8")
    out = {"same": src, "dot": tmp_path / "." / "rollouts.jsonl", "link": tmp_path / "l.jsonl"}
    dest = out[how]
    if how == "link":
        dest.symlink_to(src.name)
    result = cli("normalise", str(src), "-o", str(dest), "--skip-bad")
    assert result.code == 2, result.err
    assert result.err == (
        f"{dest}: the output is the input file, and skipping bad rows there loses them; "
        "nothing written (name another output)\n"
    )
    assert src.read_text(encoding="utf-8") == text
    assert cli("normalise", str(src), "-o", str(dest)).code == 1  # a bad row: not written
    assert src.read_text(encoding="utf-8") == text


def test_the_library_refuses_the_input_as_output_too(tmp_path: Path) -> None:
    import agent_rollout as ar

    src = tmp_path / "r.jsonl.gz"
    src.write_bytes(gzip.compress(b'{"prompt": "a", "x": 1}\n'))
    with pytest.raises(ValueError, match="skipping bad rows there loses them"):
        ar.normalise_rollout_file(src, tmp_path / "r.jsonl.gz", on_bad="skip")
    assert gzip.decompress(src.read_bytes()) == b'{"prompt": "a", "x": 1}\n'
