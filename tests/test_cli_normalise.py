"""`agent-rollout normalise`, through the real entry point and in process.

Subprocess tests run ``python -m agent_rollout``; ``AGENT_ROLLOUT_PURE_PYTHON=1``
in their environment picks the pure-Python engine. The helpers at the top
(``cli``, ``run_in_pty``, ...) are shared with ``test_cli_run.py``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

import agent_rollout
from agent_rollout import _engine
from agent_rollout.cli import main
from agent_rollout.cli._progress import ERASE_LINE, Progress, input_position, input_size

PACKAGE_ROOT = Path(agent_rollout.__file__).resolve().parent.parent
ENGINES = ["python", "rust"] if _engine.native_available() else ["python"]
SMALL_ROW = b'{"prompt":"q","answer":"a","id":7}\n'


# ---- shared helpers ----------------------------------------------------------------------


def cli_env(engine: Optional[str] = None, extra_path: Optional[Path] = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(extra_path) if extra_path else "", str(PACKAGE_ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env.pop("AGENT_ROLLOUT_DEBUG", None)
    env.pop("AGENT_ROLLOUT_PURE_PYTHON", None)
    if engine == "python":
        env["AGENT_ROLLOUT_PURE_PYTHON"] = "1"
    return env


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent_rollout", *args]


def cli(
    *args: str,
    stdin: bytes = b"",
    engine: Optional[str] = None,
    extra_path: Optional[Path] = None,
    env: Optional[dict[str, str]] = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        cli_argv(*args),
        input=stdin,
        capture_output=True,
        env=env or cli_env(engine, extra_path),
        timeout=60,
        check=False,
    )


def run_in_pty(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with standard error on a pseudo-terminal; (exit code, stdout, stderr)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: every writer of the terminal has gone
                    break
                if not data:
                    break
                seen.append(data)
            elif proc.poll() is not None:
                break
        assert proc.stdout is not None
        out = proc.stdout.read()
        code = proc.wait(timeout=10)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    return code, out, b"".join(seen)


def temp_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def canonical(rows: list[dict]) -> bytes:
    return b"".join(
        (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode() for row in rows
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


def test_file_to_file_in_process(
    engine: str, rollouts: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["normalise", str(rollouts), "-o", str(out)]) == 0
    assert out.read_bytes() == canonical(EXPECTED_ROWS)
    captured = capfd.readouterr()
    assert captured.out == ""
    summary = captured.err.strip()
    assert "\n" not in summary and "\r" not in summary  # one line, no progress when not a TTY
    assert summary.startswith(
        "normalised 3 rows in, 3 rows out, 1 blank line skipped, 2 dropped keys, "
    )
    assert summary.endswith(f" rows/s, engine {engine} -> {out}")
    assert temp_files(tmp_path) == []


def test_stdout_is_the_default_output(
    engine: str, rollouts: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["normalise", str(rollouts)]) == 0
    captured = capfd.readouterr()
    assert captured.out.encode() == canonical(EXPECTED_ROWS)
    assert captured.err.startswith("normalised 3 rows in, 3 rows out")
    assert "->" not in captured.err


@pytest.mark.parametrize("engine_name", ENGINES)
def test_stdin_to_stdout_through_the_entry_point(rollouts: Path, engine_name: str) -> None:
    result = cli("normalise", "-", stdin=rollouts.read_bytes(), engine=engine_name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == canonical(EXPECTED_ROWS)
    assert result.stderr.decode().endswith(f"engine {engine_name}\n")


@pytest.mark.parametrize("engine_name", ENGINES)
def test_gzip_input(tmp_path: Path, engine_name: str) -> None:
    src = tmp_path / "rollouts.jsonl.gz"
    src.write_bytes(gzip.compress(("\n".join(INPUT_LINES) + "\n").encode()))
    out = tmp_path / "out.jsonl"
    result = cli("normalise", str(src), "-o", str(out), engine=engine_name)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == canonical(EXPECTED_ROWS)


def test_existing_output_is_replaced(engine: str, rollouts: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    assert main(["normalise", str(rollouts), "-o", str(out)]) == 0
    assert out.read_bytes() == canonical(EXPECTED_ROWS)


# ---- exit 1: invalid input -----------------------------------------------------------------

BAD_FILES = [
    (
        ['{"prompt": "a"}', '{"prompt": "b", "answer": 3}'],
        ":2: row 1: answer: must be a str or None, got 'int'",
    ),
    (['{"prompt": "a"}', "", '{"prompt": "b",'], ":3:16: invalid JSON"),
    (['{"prompt": ""}'], ":1: row 0: prompt: empty prompt"),
    (["", "  "], ": no rows (the file is empty or blank)"),
]


@pytest.mark.parametrize(("lines", "message"), BAD_FILES)
def test_invalid_input_exits_1_and_keeps_the_old_output(
    engine: str,
    tmp_path: Path,
    lines: list[str],
    message: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text("previous contents\n")
    assert main(["normalise", str(src), "-o", str(out)]) == 1
    err = capfd.readouterr().err
    assert err.startswith(f"{src}{message}"), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out.read_text() == "previous contents\n"
    assert temp_files(tmp_path) == []


def test_bad_utf8_names_line_and_byte(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"prompt": "ok"}\n{"prompt": "\xff"}\n')
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"), engine=engine)
    assert result.returncode == 1
    assert result.stderr.decode() == f"{src}:2: invalid UTF-8 at byte 13 of the line\n"
    assert not (tmp_path / "out.jsonl").exists()


def test_row_cap(engine: str, rollouts: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["normalise", str(rollouts), "--max-rows", "2"]) == 1
    err = capfd.readouterr().err
    assert err == (
        f"{rollouts}:4: more than 2 rows (max_rows=2; raise the limit with max_rows= or "
        "--max-rows)\n"
    )


def test_stdin_errors_name_stdin() -> None:
    result = cli("normalise", "-", stdin=b'{"prompt": "a"}\n[1]\n')
    assert result.returncode == 1
    assert result.stderr.decode().startswith("<stdin>:2: row 1: a rollout row must be a mapping")


# ---- exit 2: usage and I/O -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-rows", "0"], "argument --max-rows: must be in [1, 10,000,000], got 0"),
        (["--max-rows", "many"], "argument --max-rows: expected a whole number, got 'many'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_exit_2(rollouts: Path, args: list[str], message: str) -> None:
    result = cli("normalise", str(rollouts), *args)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert result.stdout == b""


def test_missing_input_argument_exits_2() -> None:
    result = cli("normalise")
    assert result.returncode == 2
    assert "the following arguments are required: IN" in result.stderr.decode()


def test_unreadable_input_exits_2(
    engine: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert main(["normalise", str(missing), "-o", str(tmp_path / "out.jsonl")]) == 2
    err = capfd.readouterr().err
    assert err.startswith("agent-rollout normalise: [Errno 2] No such file or directory")
    assert str(missing) in err
    assert not (tmp_path / "out.jsonl").exists()


def test_unwritable_output_exits_2(
    engine: str, rollouts: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-dir" / "out.jsonl"
    assert main(["normalise", str(rollouts), "-o", str(out)]) == 2
    err = capfd.readouterr().err
    assert err.startswith("agent-rollout normalise: [Errno 2] No such file or directory")
    assert "no-such-dir" in err


def test_reader_leaving_early_is_not_an_error(tmp_path: Path) -> None:
    src = tmp_path / "many.jsonl"
    src.write_bytes(SMALL_ROW * 200_000)
    proc = subprocess.Popen(
        cli_argv("normalise", str(src), "--max-rows", "200000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 0
    assert first == b'{"prompt":"q","answer":"a"}\n'
    assert "Traceback" not in err and "Errno" not in err


# ---- progress ------------------------------------------------------------------------------


def test_progress_is_drawn_on_a_terminal(tmp_path: Path) -> None:
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


def test_no_progress_when_piped(tmp_path: Path) -> None:
    src = tmp_path / "rollouts.jsonl"
    src.write_bytes(SMALL_ROW * 150_000)
    result = cli("normalise", str(src), "-o", str(tmp_path / "out.jsonl"), "--max-rows", "150000")
    assert result.returncode == 0
    err = result.stderr.decode()
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
    proc = subprocess.Popen(
        cli_argv("normalise", str(src), "-o", str(out), "--max-rows", "2000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env("python"),
    )
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


class _FifoFeeder:
    """Writes rollout rows into a named pipe from a thread, the way a producer would."""

    def __init__(self, path: Path, keep_writing: bool) -> None:
        self.path = path
        self.keep_writing = keep_writing
        self.started = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        block = SMALL_ROW * 30_000  # about 1 MB
        try:
            with open(self.path, "wb") as pipe:
                for _ in range(4):
                    pipe.write(block)
                pipe.flush()
                self.started.set()
                for _ in range(500):
                    if self.stop.wait(0.02):
                        break
                    if self.keep_writing:
                        pipe.write(block)
                        pipe.flush()
        except BrokenPipeError:
            pass
        finally:
            self.started.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=20)


def _interrupt_fifo(tmp_path: Path, engine_name: str, keep_writing: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    out = work / "out.jsonl"
    proc = subprocess.Popen(
        cli_argv("normalise", str(fifo), "-o", str(out), "--max-rows", "10000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    )
    feeder = _FifoFeeder(fifo, keep_writing)
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
