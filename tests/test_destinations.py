"""Where output goes: regular files are replaced atomically, nothing else is ever replaced.

Covers ``normalise_rollout_file`` (both engines), the shared writer behind
``run -o`` (``write_canonical``) and both commands end to end: devices (a
null device node of the test's own, as /dev/null is; ``/dev/full``), named
pipes, sockets, ``/dev/stdout``-like paths, symlinks (live, dangling,
loops) and a full disk (a 1 MiB tmpfs mounted for the test; skipped where
mounting is not allowed).
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import socket
import stat
import subprocess
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import RolloutRowError, _files, normalise_rollout_file
from agent_rollout._files import RELEASE_ASIDE_BYTES, destination
from agent_rollout._io import write_rollout_rows
from agent_rollout._jsonl import write_canonical
from support import (
    BUNDLED_PROMPTS,
    ENGINES,
    OFFLINE,
    Cli,
    cli_argv,
    cli_env,
    expected_offline_bytes,
    facts,
    temp_files,
    write_config,
)

ROWS = b'{"prompt":"q","answer":"a","id":1}\n' * 3
EXPECTED = b'{"prompt":"q","answer":"a"}\n' * 3


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(ROWS)
    return path


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    """A null device of our own (major 1, minor 3: what /dev/null is).

    The machine's /dev/null is shared with every other process; a node of
    our own shows what happens to a character device without depending on
    (or disturbing) it. Falls back to /dev/null where mknod is not allowed.
    """
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return Path("/dev/null")
    return node


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


# ---- devices ---------------------------------------------------------------------------------


def test_a_null_device_is_written_not_replaced(engine: str, src: Path, null_device: Path) -> None:
    before = os.stat(null_device)
    report = normalise_rollout_file(src, null_device)
    assert (report.rows, report.bytes_out) == (3, len(EXPECTED))
    after = os.stat(null_device)
    assert is_char_device(null_device)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert temp_files(null_device.parent) == []


def test_a_null_device_through_the_shared_writer(null_device: Path) -> None:
    assert write_canonical([{"prompt": "q"}], str(null_device)) == len(b'{"prompt":"q"}\n')
    assert is_char_device(null_device)


def test_normalise_command_to_a_null_device(
    engine: str, src: Path, null_device: Path, cli: Cli
) -> None:
    result = cli("normalise", str(src), "-o", str(null_device))
    assert result.code == 0, result.err
    assert result.err.endswith(f" -> {null_device}\n")
    assert is_char_device(null_device)
    assert temp_files(null_device.parent) == []


def test_run_command_to_a_null_device(
    engine: str, tmp_path: Path, null_device: Path, cli: Cli
) -> None:
    config = write_config(tmp_path, OFFLINE)
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(null_device))
    assert result.code == 0, result.err
    assert is_char_device(null_device)
    assert temp_files(null_device.parent) == []


def test_dev_full_is_a_clear_error_naming_it(engine: str, src: Path) -> None:
    with pytest.raises(OSError) as info:
        normalise_rollout_file(src, "/dev/full")
    assert info.value.errno == errno.ENOSPC
    assert str(info.value) == "[Errno 28] No space left on device: '/dev/full'"
    assert is_char_device(Path("/dev/full"))
    with pytest.raises(OSError) as again:
        write_canonical([{"prompt": "q"}], "/dev/full")
    assert str(again.value) == str(info.value)


# ---- named pipes -----------------------------------------------------------------------------


class PipeReader:
    """Reads a named pipe to its end on a thread, as a consumer process would."""

    def __init__(self, path: Path) -> None:
        self.data: list[bytes] = []
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as pipe:
            self.data.append(pipe.read())

    def result(self) -> bytes:
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()
        return b"".join(self.data)


def test_a_named_pipe_destination_gets_the_rows(engine: str, src: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = PipeReader(fifo)
    report = normalise_rollout_file(src, fifo)
    assert reader.result() == EXPECTED
    assert report.bytes_out == len(EXPECTED)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temp_files(tmp_path) == []


def test_a_named_pipe_through_the_shared_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = PipeReader(fifo)
    write_canonical([{"prompt": "q", "answer": "a"}] * 3, str(fifo))
    assert reader.result() == EXPECTED
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temp_files(tmp_path) == []


def test_run_command_to_a_named_pipe(engine: str, tmp_path: Path, cli: Cli) -> None:
    config = write_config(tmp_path, OFFLINE)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = PipeReader(fifo)
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(fifo))
    assert result.code == 0, result.err
    assert reader.result() == expected_offline_bytes()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused_not_replaced(engine: str, src: Path, tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(OSError) as info:
            normalise_rollout_file(src, path)
        assert info.value.errno == errno.ENXIO
        assert info.value.filename == str(path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.close()
    assert temp_files(tmp_path) == []


# ---- /dev/stdout and friends -------------------------------------------------------------


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_is_our_standard_output(
    src: Path, engine: str, name: str, cli_bytes: Cli
) -> None:
    # Descriptor 1 is captured to a file here: what the command writes there is its output.
    result = cli_bytes("normalise", str(src), "-o", name)
    assert result.code == 0, result.err
    assert result.out == EXPECTED


@pytest.mark.parametrize("engine_name", ENGINES)
def test_dev_stdout_appends_to_a_file_opened_for_append(
    src: Path, tmp_path: Path, engine_name: str
) -> None:
    """``>> log`` keeps its content and its inode: the descriptor is written, not the path.

    A real process: its standard output is the file opened for append.
    """
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"earlier\n")
    inode = log.stat().st_ino
    with open(log, "ab") as out:
        code = subprocess.run(
            cli_argv("normalise", str(src), "-o", "/dev/stdout"),
            stdout=out,
            stderr=subprocess.PIPE,
            env=cli_env(engine_name),
            timeout=60,
            check=False,
        ).returncode
    assert code == 0
    assert log.read_bytes() == b"earlier\n" + EXPECTED
    assert log.stat().st_ino == inode
    assert temp_files(tmp_path) == []


def test_a_closed_descriptor_is_a_clear_error(engine: str, src: Path) -> None:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)  # now certainly not open
    name = f"/proc/self/fd/{fd}"
    assert destination(name).kind == "fd"
    with pytest.raises(OSError) as info:
        normalise_rollout_file(src, name)
    assert info.value.errno == errno.EBADF
    assert info.value.filename == name


def test_destination_kinds(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert destination("-") == destination("-")
    assert (destination("-").kind, destination("-").fd) == ("fd", 1)
    assert (destination("/dev/stderr").kind, destination("/dev/stderr").fd) == ("fd", 2)
    assert destination(f"/proc/{os.getpid()}/fd/1").fd == 1
    assert destination("/dev/null").kind == "stream"
    assert destination(str(fifo)).kind == "stream"
    assert destination(str(tmp_path / "new.jsonl")).kind == "file"
    (tmp_path / "7").write_bytes(b"")  # a file whose name is a number is just a file
    assert destination(str(tmp_path / "7")).kind == "file"


# ---- symlinks --------------------------------------------------------------------------------


def test_a_dangling_symlink_is_written_through(engine: str, src: Path, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.jsonl"
    link.symlink_to("sub/target.jsonl")  # relative, and the target does not exist yet
    middle = tmp_path / "middle.jsonl"
    middle.symlink_to(link)  # a chain of two
    normalise_rollout_file(src, middle)
    assert middle.is_symlink() and link.is_symlink()
    assert os.readlink(link) == "sub/target.jsonl"
    assert (tmp_path / "sub" / "target.jsonl").read_bytes() == EXPECTED
    assert temp_files(tmp_path) == temp_files(tmp_path / "sub") == []


def test_a_live_symlink_keeps_the_link_and_the_mode(engine: str, src: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    normalise_rollout_file(src, link)
    assert link.is_symlink()
    assert target.read_bytes() == EXPECTED
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def make_loop(tmp_path: Path) -> Path:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.symlink_to(second)
    second.symlink_to(first)
    return first


def test_a_symlink_loop_is_refused(engine: str, src: Path, tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    selfish = tmp_path / "self.jsonl"
    selfish.symlink_to(selfish)
    for dest in (loop, selfish, loop / "inside.jsonl"):
        with pytest.raises(OSError) as info:
            normalise_rollout_file(src, dest)
        assert info.value.errno == errno.ELOOP
        assert info.value.filename == str(dest)
    with pytest.raises(OSError) as shared:
        write_canonical([{"prompt": "q"}], str(loop))
    assert shared.value.errno == errno.ELOOP
    assert str(shared.value) == f"[Errno 40] Too many levels of symbolic links: '{loop}'"
    assert loop.is_symlink() and selfish.is_symlink()
    assert os.readlink(loop) == str(tmp_path / "b.jsonl")
    assert temp_files(tmp_path) == []


def test_a_symlink_loop_exits_2(src: Path, tmp_path: Path, engine: str, cli: Cli) -> None:
    loop = make_loop(tmp_path)
    result = cli("normalise", str(src), "-o", str(loop))
    assert result.code == 2
    assert result.err == (f"{loop}: cannot write file: Too many levels of symbolic links\n")
    config = write_config(tmp_path, OFFLINE)
    ran = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(loop))
    assert ran.code == 2
    assert ran.err.endswith(f"{loop}: cannot write file: Too many levels of symbolic links\n")
    assert loop.is_symlink()


# ---- a full disk -----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: writing more than that fails with ENOSPC, for real."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def big_source(tmp_path: Path) -> Path:
    path = tmp_path / "big.jsonl"
    path.write_bytes((b'{"prompt":"' + b"y" * 1000 + b'","answer":"z"}\n') * 3000)  # 3 MB
    return path


def free_blocks(folder: Path) -> int:
    return os.statvfs(folder).f_bfree


def test_a_full_disk_leaves_nothing_and_names_the_destination(
    engine: str, small_disk: Path, tmp_path: Path
) -> None:
    src = big_source(tmp_path)
    out = small_disk / "out.jsonl"
    out.write_bytes(b"old\n")
    free = free_blocks(small_disk)
    with pytest.raises(OSError) as info:
        normalise_rollout_file(src, out)
    assert info.value.errno == errno.ENOSPC
    assert str(info.value) == f"[Errno 28] No space left on device: '{out}'"
    assert out.read_bytes() == b"old\n"
    assert os.listdir(small_disk) == ["out.jsonl"]
    assert free_blocks(small_disk) == free


def test_a_full_disk_through_the_shared_writer(small_disk: Path) -> None:
    out = small_disk / "rows.jsonl"
    free = free_blocks(small_disk)
    with pytest.raises(OSError) as info:
        write_canonical(({"prompt": "p" * 1000} for _ in range(3000)), str(out))
    assert str(info.value) == f"[Errno 28] No space left on device: '{out}'"
    assert os.listdir(small_disk) == []
    assert free_blocks(small_disk) == free


def test_commands_on_a_full_disk_exit_2(
    small_disk: Path,
    tmp_path: Path,
    engine: str,
    cli: Cli,
    user_modules: Callable[[Path], Path],
) -> None:
    src = big_source(tmp_path)
    out = small_disk / "out.jsonl"
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 2
    assert result.err == f"{out}: cannot write file: No space left on device\n"
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "big_rollout.py").write_text(
        "def rollout(prompts):\n    return [{'prompt': 'p' * 1000, 'answer': 'a'}] * 3000\n",
        encoding="utf-8",
    )
    user_modules(mods)
    config = write_config(tmp_path, "big_rollout:rollout")
    ran = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    assert ran.code == 2, ran.err
    assert ran.err.endswith(f"{out}: cannot write file: No space left on device\n")
    assert os.listdir(small_disk) == []


# ---- an interrupt as the temporary file is made -----------------------------------------------


def watch_temp_creation(
    monkeypatch: pytest.MonkeyPatch, made: Callable[[str], None], before: bool = False
) -> None:
    """Call ``made(path)`` as ``Output`` creates its temporary file (``open`` in mode ``xb``,
    which only it uses): once the file exists, or with ``before`` just before the call.
    What ``made`` raises is raised there, as an interrupt landing at that moment would be."""
    import builtins

    from agent_rollout import _files

    real_open = builtins.open

    def watched(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode != "xb":
            return real_open(file, mode, *args, **kwargs)
        if before:
            made(str(file))
        handle = real_open(file, mode, *args, **kwargs)
        if not before:
            try:
                made(str(file))
            except BaseException:
                handle.close()  # the handle Python never got
                raise
        return handle

    monkeypatch.setattr(_files, "open", watched, raising=False)


@pytest.fixture
def interrupted_on_create(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Ctrl-C landing just after our temporary file is created, before Python holds its handle.

    The window is a few bytecodes wide; under load a real SIGINT once landed in it
    (the twin then left its temporary file). Returns the paths it interrupted.
    """
    interrupted: list[str] = []

    def interrupt(path: str) -> None:
        interrupted.append(path)
        raise KeyboardInterrupt

    watch_temp_creation(monkeypatch, interrupt)
    return interrupted


def test_an_interrupt_as_the_temporary_file_is_made_leaves_nothing(
    tmp_path: Path, interrupted_on_create: list[str]
) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        write_canonical([{"prompt": "q"}], str(out))
    assert len(interrupted_on_create) == 1
    assert not out.exists()
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ["python"], indirect=True)
def test_an_interrupt_as_the_jsonl_temporary_is_made(
    engine: str, src: Path, tmp_path: Path, interrupted_on_create: list[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(KeyboardInterrupt):
        normalise_rollout_file(src, work / "out.jsonl")
    assert interrupted_on_create and os.listdir(work) == []


def test_a_second_interrupt_while_the_temporary_is_closed_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C stops the rows; a second one lands in the flush that closing the
    temporary file does (CPython checks for signals after each write of a flush)."""
    import builtins

    real_open = builtins.open
    closes: list[str] = []

    class InterruptedOnClose:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def write(self, data: bytes) -> int:
            return int(self.handle.write(data))

        def close(self) -> None:
            self.handle.close()  # flushed and closed; then the signal's exception
            closes.append(self.handle.name)
            raise KeyboardInterrupt

    def watched(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        return InterruptedOnClose(handle) if mode == "xb" else handle

    monkeypatch.setattr(_files, "open", watched, raising=False)

    def rows() -> Iterator[dict]:
        for _ in range(5000):
            yield {"prompt": "q"}
        raise KeyboardInterrupt

    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        write_canonical(rows(), str(out))
    assert len(closes) == 1 and closes[0].endswith(".tmp")
    assert os.listdir(tmp_path) == []


def test_an_interrupt_as_the_parquet_temporary_is_made(
    engine: str, src: Path, tmp_path: Path, interrupted_on_create: list[str]
) -> None:
    pytest.importorskip("pyarrow")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(KeyboardInterrupt):
        normalise_rollout_file(src, work / "out.parquet")
    assert interrupted_on_create and os.listdir(work) == []


def test_an_interrupt_as_the_parquet_spool_is_made(
    engine: str,
    src: Path,
    tmp_path: Path,
    null_device: Path,
    interrupted_on_create: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A device gets the finished file, spooled to the temporary folder first.
    pytest.importorskip("pyarrow")
    import tempfile

    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    out = tmp_path / "out.parquet"
    out.symlink_to(null_device)
    with pytest.raises(KeyboardInterrupt):
        normalise_rollout_file(src, out)
    assert interrupted_on_create and Path(interrupted_on_create[0]).parent == spool
    assert os.listdir(spool) == []


def test_the_parquet_spool_is_private(
    tmp_path: Path, null_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device gets the finished Parquet file, spooled first: mode 0600 in the temporary
    folder, whatever another user left at the spool's base name there."""
    pytest.importorskip("pyarrow")
    import tempfile

    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "agent-rollout.parquet").write_bytes(b"")
    os.chmod(spool / "agent-rollout.parquet", 0o666)
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    modes: dict[str, int] = {}

    def note_mode(path: str) -> None:
        modes[path] = stat.S_IMODE(os.stat(path).st_mode)

    watch_temp_creation(monkeypatch, note_mode)
    out = tmp_path / "out.parquet"
    out.symlink_to(null_device)
    src = tmp_path / "in.jsonl"
    src.write_bytes(ROWS)
    normalise_rollout_file(src, out)
    assert [Path(name).parent for name in modes] == [spool]
    assert list(modes.values()) == [0o600]
    assert os.listdir(spool) == ["agent-rollout.parquet"]  # ours removed, theirs kept


def test_an_interrupt_before_the_temporary_exists_spares_another_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads share the process id. An interrupt can land after an output drew its
    temporary name and before the file exists (CPython 3.10); abandoning it then must not
    remove the file of another output to the same destination."""
    from agent_rollout._files import Output

    dest = str(tmp_path / "out.jsonl")
    first = Output(destination(dest), dest).open()

    def interrupt(path: str) -> None:
        raise KeyboardInterrupt

    second = Output(destination(dest), dest)
    watch_temp_creation(monkeypatch, interrupt, before=True)
    try:
        with pytest.raises(KeyboardInterrupt):
            second.open()
        second.abandon()
        assert first.temp is not None and os.path.exists(first.temp)
        monkeypatch.undo()
        first.write(b"{}\n")
        first.commit()
    finally:
        first.abandon()
    assert (tmp_path / "out.jsonl").read_bytes() == b"{}\n"
    assert temp_files(tmp_path) == []


# ---- the file an output replaces is let go of off the caller's thread -----------------------

needs_o_path = pytest.mark.skipif(
    not hasattr(os, "O_PATH") or not os.path.isdir("/proc/self/fd"),
    reason="the replaced file is held with O_PATH and seen in /proc/self/fd (Linux)",
)


def descriptors_on(identity: tuple[int, int]) -> int:
    """How many of this process's descriptors are open on the file ``(st_dev, st_ino)``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        count += (info.st_dev, info.st_ino) == identity
    return count


def identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


class ReleaseThreads:
    """``threading.Thread``, recording the release threads started (``start_later``: they
    wait to be started by ``start_now``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, start_later: bool = False) -> None:
        self.started: list[threading.Thread] = []
        self.waiting: list[threading.Thread] = []
        real = threading.Thread
        owner = self

        class Recording(real):  # type: ignore[valid-type,misc]
            def start(self) -> None:
                if self.name != "agent-rollout-release":
                    return super().start()
                owner.started.append(self)
                if start_later:
                    owner.waiting.append(self)
                else:
                    super().start()

        self.real_start = real.start
        monkeypatch.setattr(threading, "Thread", Recording)

    def start_now(self) -> None:
        for thread in self.waiting:
            self.real_start(thread)
        self.waiting.clear()

    def join(self) -> None:
        for thread in self.started:
            thread.join(timeout=30)
            assert not thread.is_alive()


def many_rows(path: Path, rows: int = 20_000, last: bytes = b"") -> Path:
    path.write_bytes(b'{"prompt":"what is two and two?","answer":"4","id":1}\n' * rows + last)
    return path


@needs_o_path
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_the_replaced_file_is_held_through_the_job_and_let_go_of_on_a_thread(
    engine: str, tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if suffix == "parquet":
        pytest.importorskip("pyarrow")
    src = many_rows(tmp_path / "in.jsonl")
    out = tmp_path / f"out.{suffix}"
    out.write_bytes(b"x" * (RELEASE_ASIDE_BYTES + 1))
    old = identity(out)
    threads = ReleaseThreads(monkeypatch)
    during: list[int] = []
    normalise_rollout_file(src, out, progress=lambda *_: during.append(descriptors_on(old)))
    assert during and during[0] == 1  # held while the job ran (the rename comes last)
    assert [thread.name for thread in threads.started] == ["agent-rollout-release"]
    threads.join()
    assert descriptors_on(old) == 0  # let go of: nothing leaks
    assert identity(out) != old and out.read_bytes()[:4] != b"xxxx"


@needs_o_path
def test_write_canonical_lets_go_of_the_file_it_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "rows.jsonl"
    out.write_bytes(b"x" * RELEASE_ASIDE_BYTES)
    old = identity(out)
    threads = ReleaseThreads(monkeypatch)
    during: list[int] = []
    rows = [{"prompt": "q", "answer": "a"}] * 2048
    write_canonical(rows, str(out), on_row=lambda _: during.append(descriptors_on(old)))
    assert during[0] == 1 and len(threads.started) == 1
    threads.join()
    assert descriptors_on(old) == 0
    assert out.read_bytes() == b'{"prompt":"q","answer":"a"}\n' * 2048


@needs_o_path
@pytest.mark.parametrize("shape", ["small", "two names"])
def test_a_small_or_linked_file_is_not_held(
    engine: str, tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small file is freed quickly inside the rename; one with another name is not freed
    at all: neither is worth a thread."""
    src = many_rows(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    size = RELEASE_ASIDE_BYTES - 1 if shape == "small" else RELEASE_ASIDE_BYTES
    out.write_bytes(b"x" * size)
    old = identity(out)
    if shape == "two names":
        os.link(out, tmp_path / "other-name")
    threads = ReleaseThreads(monkeypatch)
    during: list[int] = []
    normalise_rollout_file(src, out, progress=lambda *_: during.append(descriptors_on(old)))
    assert during and set(during) == {0} and threads.started == []
    if shape == "two names":
        assert (tmp_path / "other-name").read_bytes() == b"x" * size


@needs_o_path
def test_a_file_on_another_kind_of_filesystem_is_not_held(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only where holding it merely moves the freeing (NFS would rename it aside)."""
    monkeypatch.setattr(_files, "LOCAL_FILESYSTEMS", frozenset({"nfs"}))
    src = many_rows(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"x" * RELEASE_ASIDE_BYTES)
    old = identity(out)
    during: list[int] = []
    normalise_rollout_file(src, out, progress=lambda *_: during.append(descriptors_on(old)))
    assert during and set(during) == {0}


@needs_o_path
def test_a_failed_job_lets_go_of_the_file_at_once(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = many_rows(tmp_path / "in.jsonl", last=b'{"answer":"no prompt"}\n')
    out = tmp_path / "out.jsonl"
    before = b"x" * RELEASE_ASIDE_BYTES
    out.write_bytes(before)
    old = identity(out)
    threads = ReleaseThreads(monkeypatch)
    during: list[int] = []
    with pytest.raises(RolloutRowError):
        normalise_rollout_file(src, out, progress=lambda *_: during.append(descriptors_on(old)))
    assert during and during[0] == 1
    assert descriptors_on(old) == 0 and threads.started == []  # closed in the call
    assert out.read_bytes() == before


@needs_o_path
def test_a_child_forked_before_the_thread_lets_go_closes_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = many_rows(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"x" * RELEASE_ASIDE_BYTES)
    old = identity(out)
    threads = ReleaseThreads(monkeypatch, start_later=True)
    normalise_rollout_file(src, out)
    assert descriptors_on(old) == 1  # the release thread has not run yet
    with warnings.catch_warnings():  # 3.12+: forking with threads about (pytest's)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its copy of the descriptor is closed
        os._exit(descriptors_on(old))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    threads.start_now()
    threads.join()
    assert descriptors_on(old) == 0


# ---- the format an output's name says --------------------------------------------------------


@pytest.mark.parametrize("name", ["out.jsonl.gz", "OUT.JSONL.GZ"])
def test_a_jsonl_gz_name_gets_gzip_that_readers_take(
    engine: str, tmp_path: Path, name: str
) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROWS * 20_000)  # several of the Rust engine's chunks: a member each
    dst = tmp_path / name
    report = normalise_rollout_file(src, dst)
    assert dst.read_bytes()[:2] == b"\x1f\x8b"
    with gzip.open(dst, "rb") as unpacked:
        assert unpacked.read() == EXPECTED * 20_000
    assert report.bytes_out == dst.stat().st_size  # the bytes written: compressed
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_json(dst, lines=True)
    assert list(frame.columns) == ["prompt", "answer"] and len(frame) == 60_000
    assert temp_files(tmp_path) == []


def test_a_jsonl_gz_name_through_the_shared_writer(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl.gz"
    write_rollout_rows([{"prompt": "q", "answer": "a"}] * 3, str(dst))
    assert gzip.decompress(dst.read_bytes()) == EXPECTED


@pytest.mark.parametrize("name", ["out.csv", "out.json", "out.gz", "out"])
def test_a_name_that_says_no_format_is_refused(
    engine: str, src: Path, tmp_path: Path, name: str
) -> None:
    dst = tmp_path / name
    with pytest.raises(ValueError, match=r"end it in \.jsonl, \.jsonl\.gz .* or \.parquet"):
        normalise_rollout_file(src, dst)
    assert not dst.exists()
    dst.write_text("kept\n")  # an existing file is left as it was
    with pytest.raises(ValueError, match=facts(name, "must say its format")):
        normalise_rollout_file(src, dst)
    assert dst.read_text() == "kept\n"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("command", ["normalise", "run"])
def test_commands_refuse_a_name_that_says_no_format(
    engine: str, src: Path, tmp_path: Path, cli: Cli, command: str
) -> None:
    dst = tmp_path / "out.csv"
    if command == "normalise":
        args = ["normalise", str(src)]
    else:
        args = ["run", str(write_config(tmp_path, OFFLINE)), "--prompts", str(BUNDLED_PROMPTS)]
    result = cli(*args, "-o", str(dst))
    assert result.code == 2
    assert "argument -o/--output: " in result.err and ".jsonl.gz" in result.err
    assert not dst.exists()


def test_run_writes_the_format_its_output_is_named_for(
    engine: str, tmp_path: Path, cli: Cli
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    config = write_config(tmp_path, OFFLINE)
    for name in ("o.parquet", "o.jsonl.gz", "o.jsonl"):
        dst = tmp_path / name
        args = ["run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(dst)]
        result = cli(*args)
        assert result.code == 0, result.err
    expected = expected_offline_bytes()
    assert (tmp_path / "o.jsonl").read_bytes() == expected
    assert gzip.decompress((tmp_path / "o.jsonl.gz").read_bytes()) == expected
    table = pq.read_table(tmp_path / "o.parquet")
    rows = [json.loads(line) for line in expected.splitlines()]
    assert table.column("prompt").to_pylist() == [row["prompt"] for row in rows]
    assert temp_files(tmp_path) == []
