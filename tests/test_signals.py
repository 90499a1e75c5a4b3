"""Signals, stalled inputs and the collector switch, on both engines.

- SIGTERM and SIGHUP mid-run end like Ctrl-C: the destination keeps its old
  content, no temporary file remains, the exit status is 128 + the signal.
- A named pipe nobody writes to: the call waits without holding the
  interpreter (other threads run) and Ctrl-C ends it at once.
- Standard input read twice in one process: a failed first read leaves the
  rest of the input to the second.
- The collector is paused only while rows are built, never while a call
  waits for input, and a ``gc.disable()`` made meanwhile is kept.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import pytest

from agent_rollout import normalise_rollout_file, read_rollout_jsonl
from agent_rollout._errors import Terminated
from support import (
    ENGINES,
    SMALL_ROW,
    FifoFeeder,
    cli_argv,
    cli_env,
    patch_arrow,
    started,
    temp_files,
    use_engine,
)

ROW = b'{"prompt":"a"}\n'


def python_argv(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def wait_for(
    condition: object, proc: subprocess.Popen[bytes], what: str, limit: float = 20
) -> None:
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert proc.poll() is None, f"the process ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def finish(proc: subprocess.Popen[bytes], limit: float) -> tuple[Optional[int], str]:
    try:
        code: Optional[int] = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        code = None
        proc.kill()
        proc.wait(timeout=10)
    assert proc.stderr is not None
    return code, proc.stderr.read().decode()


# ---- SIGTERM and SIGHUP ----------------------------------------------------------------------

TERMINATING = [("SIGTERM", 143), ("SIGHUP", 129)]


@pytest.mark.parametrize(("name", "status"), TERMINATING)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_normalise_ends_cleanly_on_sigterm_and_sighup(
    tmp_path: Path, engine_name: str, name: str, status: int
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    out = work / "out.jsonl"
    out.write_bytes(b"old content\n")
    with started(
        cli_argv("normalise", str(fifo), "-o", str(out), "--max-rows", "10000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    ) as proc:
        feeder = FifoFeeder(fifo, keep_writing=True)  # hundreds of MB if nothing stops it
        try:
            assert feeder.started.wait(20)
            wait_for(lambda: temp_files(work), proc, "the temporary file")
            time.sleep(0.2)
            proc.send_signal(getattr(signal, name))
            code, err = finish(proc, limit=5)
        finally:
            feeder.close()
    assert code == status, err
    assert err == f"agent-rollout normalise: terminated by {name}; {out} was not written\n"
    assert out.read_bytes() == b"old content\n"
    assert temp_files(work) == []


@pytest.mark.parametrize(("name", "status"), TERMINATING)
def test_the_shared_writer_of_run_ends_cleanly(tmp_path: Path, name: str, status: int) -> None:
    """``run -o`` writes with ``write_canonical``: a signal mid-write leaves no temporary file."""
    out = tmp_path / "rows.jsonl"
    out.write_bytes(b"old content\n")
    script = f"""
        import time
        from agent_rollout._jsonl import write_canonical

        def rows():
            for i in range(100_000):
                if i % 100 == 0:
                    time.sleep(0.01)
                yield {{"prompt": "p" * 100}}

        write_canonical(rows(), {str(out)!r})
    """
    with started(
        python_argv(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env()
    ) as proc:
        wait_for(lambda: temp_files(tmp_path), proc, "the temporary file")
        time.sleep(0.2)
        proc.send_signal(getattr(signal, name))
        code, err = finish(proc, limit=5)
    assert code == status, err
    assert out.read_bytes() == b"old content\n"
    assert temp_files(tmp_path) == []


def test_a_handler_the_caller_set_is_left_alone(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW)
    seen: list[int] = []

    def mine(signum: int, frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        normalise_rollout_file(src, tmp_path / "out.jsonl")
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL  # restored after the call


# ---- a SIGTERM whose exception is lost -------------------------------------------------------
#
# Our handler runs in whatever Python code the main thread is in, and some code drops
# exceptions (a finaliser, an extension function that cannot raise: a hostile review
# saw pyarrow's first import of pandas, inside a schema widening, drop it, and the run
# then put its output in place and exited 0). A progress callback that swallows the
# ``Terminated`` stands in for such code here.


def swallowing(signum: int) -> Callable[[int, int, int], None]:
    """A progress callback that, on its first call, takes ``signum`` (our handler runs
    inside ``raise_signal``) and drops the exception it raises."""
    sent: list[bool] = []

    def progress(rows: int, lines: int, bytes_in: int) -> None:
        if not sent:
            sent.append(True)
            try:
                signal.raise_signal(signum)
            except Terminated:
                pass

    return progress


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_lost_sigterm_ends_the_run_there(tmp_path: Path, engine_name: str, suffix: str) -> None:
    """A signal whose exception was lost is raised again right after the callback that
    dropped it: the run reads no further, the destination keeps its old content, and
    the next call runs as if nothing had happened."""
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW * 90_000)  # 1.3 MB: several chunks, a progress call each
    out = tmp_path / f"out.{suffix}"
    out.write_bytes(b"old content\n")
    calls: list[int] = []
    drop = swallowing(signal.SIGTERM)

    def progress(rows: int, lines: int, bytes_in: int) -> None:
        calls.append(rows)
        drop(rows, lines, bytes_in)

    # Our handler goes in only over the default action; the test runner may have its
    # own (a pytest-xdist worker does): the default is put back for the call.
    runners = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with use_engine(engine_name):
            with pytest.raises(Terminated) as caught:
                normalise_rollout_file(src, out, progress=progress)
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
            assert out.read_bytes() == b"old content\n"
            assert temp_files(tmp_path) == []
            small = tmp_path / "small.jsonl"
            small.write_bytes(ROW * 10)
            report = normalise_rollout_file(small, out)  # nothing left over from the first
    finally:
        signal.signal(signal.SIGTERM, runners)
    assert caught.value.code == 128 + signal.SIGTERM
    assert len(calls) == 1
    assert report.rows == 10


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_sigterm_lost_while_widening_ends_the_parquet_run_at_the_next_batch(
    tmp_path: Path, engine_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewed case, without a progress callback: the exception is dropped inside
    a schema widening; the next batch's arrival raises it, nothing is committed."""
    from agent_rollout import arrow

    plain = b'{"prompt":[{"role":"user","content":"hello there"}]}\n'
    keyed = b'{"prompt":[{"role":"user","content":"hello there","name":"x"}]}\n'
    src = tmp_path / "rows.jsonl"
    src.write_bytes(plain * 20_000 + keyed * 40_000)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old content\n")
    merge, add = arrow.merge_schemas, arrow.ParquetSink.add
    dropped: list[int] = []  # batches that arrived after the signal was dropped

    def merge_dropping(*args: object) -> object:
        if not dropped:
            dropped.append(0)
            try:
                signal.raise_signal(signal.SIGTERM)
            except Terminated:
                pass
        return merge(*args)

    def counting_add(self: object, batch: object) -> None:
        if dropped:
            dropped.append(1)
        add(self, batch)  # type: ignore[arg-type]

    patch_arrow(monkeypatch, "merge_schemas", merge_dropping)
    monkeypatch.setattr(arrow.ParquetSink, "add", counting_add)
    runners = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with use_engine(engine_name), pytest.raises(Terminated):
            normalise_rollout_file(src, out)
    finally:
        signal.signal(signal.SIGTERM, runners)
    assert dropped == [0, 1]  # the widening batch, then one more: it raised
    assert out.read_bytes() == b"old content\n"
    assert temp_files(tmp_path) == []


def test_a_signal_the_caller_turned_into_its_own_error_is_not_sent_again() -> None:
    """The caller's code took the ``Terminated`` and raised its own exception from it:
    the signal reached the caller, so it is not sent again."""
    script = """
        import os, signal, tempfile
        from agent_rollout import normalise_rollout_file
        from agent_rollout._errors import Terminated

        class HostAbort(Exception):
            pass

        def progress(rows, lines, bytes_in):
            try:
                signal.raise_signal(signal.SIGTERM)
            except Terminated as exc:
                raise HostAbort("stopping") from exc

        folder = tempfile.mkdtemp()
        src = os.path.join(folder, "rows.jsonl")
        with open(src, "wb") as f:
            f.write(b'{"prompt":"a"}\\n' * 1000)
        try:
            normalise_rollout_file(src, os.path.join(folder, "out.jsonl"), progress=progress)
        except HostAbort:
            print("the caller's error", flush=True)
        print("still running", flush=True)
    """
    done = subprocess.run(python_argv(script), capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"the caller's error\nstill running\n"


@pytest.mark.parametrize("name", [name for name, _ in TERMINATING])
def test_a_lost_signal_is_sent_again_when_the_block_ends(name: str) -> None:
    """A block that ends with neither the exception nor one raised from it sends the
    signal again once the default action is back: the process ends as that signal ends
    it."""
    script = f"""
        import signal, sys
        from agent_rollout._errors import Terminated
        from agent_rollout._files import signals_end_cleanly

        with signals_end_cleanly():
            try:
                signal.raise_signal(signal.{name})
            except Terminated:
                print("dropped", flush=True)
        print("still running", flush=True)
    """
    done = subprocess.run(python_argv(script), capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == -getattr(signal, name), done.stderr
    assert done.stdout == b"dropped\n"


# ---- a named pipe nobody opens ---------------------------------------------------------------


@contextmanager
def writer_later(fifo: Path, data: bytes) -> Iterator[None]:
    """On leaving, open ``fifo`` for writing, write ``data`` and close: a blocked reader ends."""
    try:
        yield
    finally:
        with open(fifo, "wb") as pipe:
            pipe.write(data)


def test_waiting_for_a_writer_lets_other_threads_run(engine: str, tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    got: list[object] = []
    call = threading.Thread(target=lambda: got.append(read_rollout_jsonl(fifo)), daemon=True)
    with writer_later(fifo, ROW * 2):
        call.start()
        time.sleep(0.2)  # the call is now waiting for a writer
        counted = 0
        until = time.monotonic() + 0.3
        while time.monotonic() < until:
            counted += 1
        assert call.is_alive()
    call.join(timeout=20)
    assert got == [({"prompt": "a"},) * 2]
    assert counted > 10_000  # this thread ran all along, not once per switch interval


CTRL_C_SCRIPTS = {
    "read": """
        import sys, time
        from agent_rollout import read_rollout_jsonl
        print("calling", flush=True)
        try:
            read_rollout_jsonl(sys.argv[1])
        except KeyboardInterrupt:
            print(time.monotonic(), flush=True)
            sys.exit(130)
    """,
    "normalise": """
        import sys, time
        from agent_rollout import normalise_rollout_file
        print("calling", flush=True)
        try:
            normalise_rollout_file(sys.argv[1], sys.argv[2])
        except KeyboardInterrupt:
            print(time.monotonic(), flush=True)
            sys.exit(130)
    """,
}


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize(
    ("what", "stalled"),
    [("read", "input"), ("normalise", "input"), ("normalise", "output")],
)
def test_ctrl_c_ends_a_wait_for_a_named_pipe_at_once(
    tmp_path: Path, engine_name: str, what: str, stalled: str
) -> None:
    """Nobody opens the other end of the pipe; Ctrl-C ends the call within half a second."""
    fifo = tmp_path / "pipe.fifo"
    os.mkfifo(fifo)
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW)
    args = [str(fifo), str(tmp_path / "out.jsonl")] if stalled == "input" else [str(src), str(fifo)]
    with started(
        [*python_argv(CTRL_C_SCRIPTS[what]), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"calling\n"
        time.sleep(0.4)  # well inside the blocking open (or the wait for a reader)
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code, err = finish(proc, limit=10)
        assert code == 130, err
        caught = float(proc.stdout.read().decode().strip())
    assert caught - sent < 0.5
    assert temp_files(tmp_path) == []


# ---- standard input, read twice --------------------------------------------------------------


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_failed_read_of_stdin_leaves_the_rest_to_the_next(engine_name: str) -> None:
    script = """
        from agent_rollout import RolloutFileError, read_rollout_jsonl
        try:
            read_rollout_jsonl("-")
        except RolloutFileError as err:
            print("first:", err.code, flush=True)
        print("second:", len(read_rollout_jsonl("-")), flush=True)
    """
    with started(
        python_argv(script),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(engine_name),
    ) as proc:  # a failure kills it
        assert proc.stdin is not None and proc.stdout is not None
        watchdog = threading.Timer(30, proc.kill)  # a hung read fails the test, not the run
        watchdog.start()
        try:
            proc.stdin.write(b"not json\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == b"first: json_syntax\n"
            time.sleep(0.2)  # a reader left behind would be waiting by now
            proc.stdin.write(ROW * 3)
            proc.stdin.close()
            assert proc.stdout.readline() == b"second: 3\n"
        finally:
            watchdog.cancel()
        code, err = finish(proc, limit=10)
    assert code == 0, err


# ---- the collector switch --------------------------------------------------------------------


class SlowWriter:
    """Writes two rows into a named pipe, then waits for ``release`` before the rest."""

    def __init__(self, fifo: Path) -> None:
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._write, args=(fifo,), daemon=True)
        self.thread.start()

    def _write(self, fifo: Path) -> None:
        with open(fifo, "wb") as pipe:
            pipe.write(SMALL_ROW * 2)
            pipe.flush()
            self.release.wait(20)
            pipe.write(SMALL_ROW * 3)

    def finish(self) -> None:
        self.release.set()
        self.thread.join(timeout=20)


def read_in_thread(fifo: Path) -> tuple[threading.Thread, list[object]]:
    got: list[object] = []
    call = threading.Thread(target=lambda: got.append(read_rollout_jsonl(fifo)), daemon=True)
    call.start()
    return call, got


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_runs_while_a_read_waits_for_input(engine: str, tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = SlowWriter(fifo)
    call, got = read_in_thread(fifo)
    try:
        time.sleep(0.4)  # the first rows are in; the call waits for the rest
        assert call.is_alive()
        assert gc.isenabled()
    finally:
        writer.finish()
    call.join(timeout=20)
    assert len(got[0]) == 5  # type: ignore[arg-type]
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_disable_made_while_a_read_waits_is_kept(engine: str, tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = SlowWriter(fifo)
    call, got = read_in_thread(fifo)
    try:
        time.sleep(0.4)
        assert call.is_alive()
        gc.disable()  # another thread's choice, made while the call is in flight
    finally:
        writer.finish()
    call.join(timeout=20)
    assert len(got[0]) == 5  # type: ignore[arg-type]
    assert not gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_callers_setting_is_kept(engine: str, tmp_path: Path, enabled: bool) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW * 50_000)  # several batches
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert len(read_rollout_jsonl(src)) == 50_000
        assert gc.isenabled() is enabled
        normalise_rollout_file(src, tmp_path / "out.jsonl")
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError):
            read_rollout_jsonl(src, max_rows=10)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
