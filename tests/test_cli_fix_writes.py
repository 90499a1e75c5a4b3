"""How ``check --fix`` writes a user's file, as an editor saves it, on both engines.

- Only if the file is still what was read: a save made while it was being fixed
  (in place, by rename, a deletion, bytes changed under the same size and
  time) is kept, the file is reported not fixed (exit 1), no temporary file.
- SIGTERM and SIGHUP while it writes: the file as it was, no temporary file,
  exit 128 + the signal.
- The file's owner, group and mode are kept; a file with other hard links is
  written in place (one inode, every name fixed); where the owner cannot be
  kept (not root), in place, and a file this user may not write is not fixed
  (exit 2), never replaced. As before: a read-only file stays so, a second run
  writes nothing, a file that is not UTF-8 is left as it is.
- Its extended attributes are kept, no more and no fewer: ``user.*``, the POSIX
  ACL (another user keeps the write access it gave), none added by the folder's
  default ACL; one that carries access and cannot be set (a ``security.*`` label,
  not root) makes it a write in place.
- A file this user may write in a folder they may not is written in place.
- The texts of an edit refused and of a file not fixed live in
  ``_errors.EDIT_MESSAGES``, nowhere else.
- ``--diff`` on a path that cannot be read (missing, a FIFO) is a usage error
  naming it, as plain ``check`` and ``--fix`` are; nothing waits on a FIFO.
- The summary writes every count with thousands separators.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import agent_rollout.config
from support import ENGINES, Cli, cli_env, temp_files

BROKEN = "training:\n  rollout_backend: Open-Env\n  rollout_fucn: pkg.mod:play\n"
FIXED = "training:\n  rollout_backend: openenv\n  rollout_func: pkg.mod:play\n"
SAVED = "training:\n  rollout_backend: Open-Env\n  rollout_func: pkg.mod:run\n"
"""What the user's editor saves while ``--fix`` works on ``BROKEN``."""
NOT_FIXED = "not fixed: the file changed while it was being fixed; run again"
CANNOT_WRITE = "not fixed: cannot write file: Permission denied"


def run_python(
    code: str, engine_name: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter on ``engine_name``'s engine; output as text."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=cli_env(engine_name),
        timeout=timeout,
        check=False,
    )


def editor_saves(monkeypatch: pytest.MonkeyPatch, save: Callable[[], None]) -> None:
    """``save`` runs between ``--fix``'s read of the file and its write (after the fixes
    are computed from what was read): the race, made certain."""
    fix_text = agent_rollout.config.fix_text

    def fix_then_save(*args: Any, **kwargs: Any) -> Any:
        fixed = fix_text(*args, **kwargs)
        save()
        return fixed

    monkeypatch.setattr(agent_rollout.config, "fix_text", fix_then_save)


def in_place(path: Path, text: str) -> Callable[[], None]:
    return lambda: path.write_text(text, encoding="utf-8")


def by_rename(path: Path, text: str) -> Callable[[], None]:
    def save() -> None:
        saved = path.with_name("saved~")
        saved.write_text(text, encoding="utf-8")
        os.replace(saved, path)

    return save


def same_size_and_time(path: Path, text: str) -> Callable[[], None]:
    """Other bytes of the same length, the modification time set back: only the bytes
    tell."""

    def save() -> None:
        before = path.stat()
        changed = text.replace("Open-Env", "Open-Gym")
        assert len(changed) == len(text)
        path.write_text(changed, encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = path.stat()
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        )

    return save


SAVES = {"in place": in_place, "by rename": by_rename}


@pytest.mark.parametrize("how", sorted(SAVES))
@pytest.mark.parametrize("links", [1, 2])
def test_a_save_made_while_fixing_is_kept(
    cli: Cli, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, links: int
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    if links == 2:
        os.link(path, tmp_path / "other-name.yaml")
    editor_saves(monkeypatch, SAVES[how](path, SAVED))
    done = cli("check", "--fix", str(path))
    assert path.read_text(encoding="utf-8") == SAVED
    assert done.code == 1, done.out + done.err
    lines = done.out.splitlines()
    assert lines[0] == "fixed 0 issues in 0 files"
    assert lines[1] == f"{path}:1:1: {NOT_FIXED}"
    assert ": fixed: " not in done.out
    # What remains is the file as saved: its backend spelling, not the key it fixed.
    assert "rollout_backend='Open-Env' is not supported" in done.out
    assert "rollout_fucn" not in done.out
    assert temp_files(tmp_path) == []


def test_bytes_changed_under_the_same_size_and_time_are_kept(
    cli: Cli, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    editor_saves(monkeypatch, same_size_and_time(path, BROKEN))
    done = cli("check", "--fix", str(path))
    assert done.code == 1
    assert path.read_text(encoding="utf-8") == BROKEN.replace("Open-Env", "Open-Gym")
    assert f"{path}:1:1: {NOT_FIXED}" in done.out.splitlines()
    assert temp_files(tmp_path) == []


def test_a_file_deleted_while_fixing_is_not_made_again(
    cli: Cli, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    editor_saves(monkeypatch, path.unlink)
    done = cli("check", "--fix", "--format", "json", str(path))
    assert not path.exists() and os.listdir(tmp_path) == []
    assert done.code == 2  # it is now a path that cannot be read
    entry = json.loads(done.out)["files"][0]
    assert entry["fixed"] == []
    assert [(e["kind"], e["message"]) for e in entry["errors"]] == [
        ("changed", NOT_FIXED),
        ("unreadable", "cannot read file: No such file or directory"),
    ]


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_save_made_while_fixing_is_kept_by_the_command(tmp_path: Path, engine_name: str) -> None:
    """The same race, in a real ``agent-rollout`` process."""
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    script = f"""
        import sys
        import agent_rollout.config
        from agent_rollout.cli import main

        fix_text = agent_rollout.config.fix_text

        def fix_then_save(*args, **kwargs):
            fixed = fix_text(*args, **kwargs)
            with open({str(path)!r}, "w", encoding="utf-8") as file:
                file.write({SAVED!r})
            return fixed

        agent_rollout.config.fix_text = fix_then_save
        sys.exit(main(["check", "--fix", {str(path)!r}]))
    """
    done = run_python(script, engine_name)
    assert done.returncode == 1, done.stderr
    assert path.read_text(encoding="utf-8") == SAVED
    assert f"{path}:1:1: {NOT_FIXED}\n" in done.stdout
    assert temp_files(tmp_path) == []


# ---- SIGTERM and SIGHUP while the file is written ---------------------------------------------


def fix_with_a_signal_while_writing(path: Path, name: str, engine_name: str) -> Any:
    """``check --fix path`` in a process that sends itself ``name`` once the fixed bytes
    are written (to the temporary file, or held for a write in place), before the file
    is replaced: a real signal, at that moment every time."""
    script = f"""
        import os, signal, sys, time
        from agent_rollout import _files
        from agent_rollout.cli import main

        write = _files.Output.write

        def write_then_signal(self, data):
            write(self, data)
            os.kill(os.getpid(), signal.{name})
            time.sleep(30)  # the signal ends the process before this does

        _files.Output.write = write_then_signal
        sys.exit(main(["check", "--fix", {str(path)!r}]))
    """
    return run_python(script, engine_name)


@pytest.mark.parametrize("links", [1, 2])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_sigterm_while_fixing_leaves_the_file_and_no_temporary(
    tmp_path: Path, engine_name: str, links: int
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    if links == 2:
        os.link(path, tmp_path / "other-name.yaml")
    done = fix_with_a_signal_while_writing(path, "SIGTERM", engine_name)
    assert done.returncode == 143, done.stderr
    assert done.stderr == "agent-rollout check: terminated by SIGTERM\n"
    assert path.read_text(encoding="utf-8") == BROKEN
    assert temp_files(tmp_path) == []
    assert path.stat().st_nlink == links


def test_sighup_while_fixing_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    done = fix_with_a_signal_while_writing(path, "SIGHUP", ENGINES[0])
    assert done.returncode == 129, done.stderr
    assert path.read_text(encoding="utf-8") == BROKEN
    assert temp_files(tmp_path) == []


# ---- owner, group, mode and hard links -----------------------------------------------------

root_only = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root"
)


@root_only
def test_fix_keeps_the_owner_group_and_mode(cli: Cli, engine: str, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    os.chown(path, 1234, 1235)
    os.chmod(path, 0o640)
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    info = path.stat()
    assert path.read_text(encoding="utf-8") == FIXED
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 1235, 0o640)
    assert temp_files(tmp_path) == []


def test_fix_writes_a_hard_linked_file_in_place(cli: Cli, engine: str, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    os.chmod(path, 0o600)
    other = tmp_path / "other-name.yaml"
    os.link(path, other)
    inode = path.stat().st_ino
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    assert done.out.startswith(f"{path}:2:20: fixed: training.rollout_backend: ")
    for name in (path, other):  # one file still, fixed under both names
        info = name.stat()
        assert (info.st_ino, info.st_nlink, stat.S_IMODE(info.st_mode)) == (inode, 2, 0o600)
        assert name.read_text(encoding="utf-8") == FIXED
    assert temp_files(tmp_path) == []
    again = cli("check", "--fix", str(path))  # and a second run has nothing to do
    assert again.out.startswith("fixed 0 issues in 0 files\n")


def test_what_held_still_holds(cli: Cli, engine: str, tmp_path: Path) -> None:
    """Kept from before: a read-only file is fixed and stays read-only, a second run
    changes nothing, a file that is not UTF-8 is left byte for byte."""
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    os.chmod(path, 0o444)
    assert cli("check", "--fix", str(path)).code == 0
    assert path.read_text(encoding="utf-8") == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    stamp = path.stat().st_mtime_ns
    assert cli("check", "--fix", str(path)).out.startswith("fixed 0 issues in 0 files\n")
    assert path.stat().st_mtime_ns == stamp
    latin = tmp_path / "latin.yaml"
    raw = BROKEN.encode("utf-8") + b"# caf\xe9\n"
    latin.write_bytes(raw)
    assert cli("check", "--fix", str(latin)).code == 1
    assert latin.read_bytes() == raw
    assert temp_files(tmp_path) == []


@contextmanager
def acting_as(uid: int, gid: int) -> Iterator[None]:
    """This process's effective user and group (no supplementary groups) for the block."""
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


@root_only
def test_a_file_whose_owner_cannot_be_kept_is_written_in_place_or_not_at_all(
    cli: Cli, engine: str
) -> None:
    """Run as another user, in a folder everyone may write: root's file that user may
    write is fixed in place (still root's); one they may not write is not fixed (exit 2),
    where a rename would have given it to them."""
    cli("check", "--diff", os.devnull)  # what the command imports, imported as root
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        os.chmod(folder, 0o777)
        writable = folder / "writable.yaml"
        readable = folder / "readable.yaml"
        for path, mode in ((writable, 0o666), (readable, 0o644)):
            path.write_text(BROKEN, encoding="utf-8")
            os.chmod(path, mode)
        inode = writable.stat().st_ino
        with acting_as(1234, 1234):
            done = cli("check", "--fix", str(writable), str(readable))
        assert done.code == 2, done.out + done.err
        assert writable.read_text(encoding="utf-8") == FIXED
        info = writable.stat()
        assert (info.st_ino, info.st_uid, info.st_gid) == (inode, 0, 0)
        assert readable.read_text(encoding="utf-8") == BROKEN
        assert readable.stat().st_uid == 0
        assert f"{readable}:1:1: {CANNOT_WRITE}" in done.out
        assert temp_files(folder) == []


@root_only
def test_a_writable_file_in_a_folder_this_user_may_not_write_is_written_in_place(
    cli: Cli, engine: str
) -> None:
    """No temporary file can be made beside it: the file itself, which this user may
    write, is fixed in place (as editors save), after the same check; one they may not
    write is still not fixed (exit 2)."""
    cli("check", "--diff", os.devnull)  # what the command imports, imported as root
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        os.chmod(folder, 0o755)  # root's: nobody else may make a file in it
        writable = folder / "writable.yaml"
        readable = folder / "readable.yaml"
        for path in (writable, readable):
            path.write_text(BROKEN, encoding="utf-8")
            os.chmod(path, 0o644)
        os.chown(writable, 1234, 1234)
        inode = writable.stat().st_ino
        with acting_as(1234, 1234):
            done = cli("check", "--fix", str(writable), str(readable))
        assert done.code == 2, done.out + done.err
        assert writable.read_text(encoding="utf-8") == FIXED
        info = writable.stat()
        assert (info.st_ino, info.st_uid, stat.S_IMODE(info.st_mode)) == (inode, 1234, 0o644)
        assert f"{writable}:2:20: fixed: training.rollout_backend: " in done.out
        assert readable.read_text(encoding="utf-8") == BROKEN
        assert f"{readable}:1:1: {CANNOT_WRITE}" in done.out
        assert sorted(os.listdir(folder)) == ["readable.yaml", "writable.yaml"]


# ---- extended attributes and ACLs --------------------------------------------------------------

_ACL_ACCESS = "system.posix_acl_access"
_ACL_DEFAULT = "system.posix_acl_default"
_UNDEFINED_ID = 0xFFFFFFFF


def posix_acl(*users: tuple[int, int], mode: int = 0o644) -> bytes:
    """A POSIX ACL as Linux stores it in ``system.posix_acl_access`` (what ``setfacl``
    writes): the mode's owner, group and other entries, ``users`` (uid, permission bits)
    each, and a mask that lets their bits through."""
    entries = [(0x01, (mode >> 6) & 7, _UNDEFINED_ID)]  # ACL_USER_OBJ
    entries += [(0x02, bits, uid) for uid, bits in users]  # ACL_USER
    entries.append((0x04, (mode >> 3) & 7, _UNDEFINED_ID))  # ACL_GROUP_OBJ
    mask = (mode >> 3) & 7
    for _, bits in users:
        mask |= bits
    entries.append((0x10, mask, _UNDEFINED_ID))  # ACL_MASK
    entries.append((0x20, mode & 7, _UNDEFINED_ID))  # ACL_OTHER
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def attributes(path: Path) -> dict[str, bytes]:
    return {name: os.getxattr(path, name) for name in os.listxattr(path)}


def set_attribute(path: Path, name: str, value: bytes) -> None:
    """``os.setxattr``; the test is skipped where the platform or ``path``'s filesystem
    has no extended attributes of ``name``'s kind."""
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this platform")
    try:
        os.setxattr(path, name, value)
    except OSError as err:
        if err.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            pytest.skip(f"this filesystem refuses {name}: {err.strerror}")
        raise


def may_write(path: Path, uid: int) -> bool:
    """Whether user ``uid`` (group ``uid``, no other groups) may open ``path`` to write."""
    with acting_as(uid, uid):
        try:
            os.close(os.open(path, os.O_WRONLY))
        except PermissionError:
            return False
    return True


def test_fix_keeps_extended_attributes(cli: Cli, engine: str, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    set_attribute(path, "user.k", b"v")
    os.setxattr(path, "user.xdg.origin.url", b"https://example.invalid/c.yaml")
    before = attributes(path)
    inode = path.stat().st_ino
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    assert path.read_text(encoding="utf-8") == FIXED
    assert path.stat().st_ino != inode  # replaced by a new file, which was given them
    assert attributes(path) == before
    assert temp_files(tmp_path) == []


@root_only
def test_fix_keeps_the_acl_and_the_access_it_gives(cli: Cli, engine: str) -> None:
    """An ACL letting user 1000 write root's 0644 file (``setfacl -m u:1000:rw``): after
    ``--fix`` user 1000 may still write it, and user 1001 still may not."""
    cli("check", "--diff", os.devnull)  # what the command imports, imported as root
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        os.chmod(folder, 0o755)
        path = folder / "c.yaml"
        path.write_text(BROKEN, encoding="utf-8")
        os.chmod(path, 0o644)
        set_attribute(path, _ACL_ACCESS, posix_acl((1000, 6)))
        os.setxattr(path, "user.k", b"v")
        before = (attributes(path), stat.S_IMODE(path.stat().st_mode))
        assert may_write(path, 1000) and not may_write(path, 1001)
        done = cli("check", "--fix", str(path))
        assert done.code == 0, done.out
        assert path.read_text(encoding="utf-8") == FIXED
        assert (attributes(path), stat.S_IMODE(path.stat().st_mode)) == before
        assert may_write(path, 1000) and not may_write(path, 1001)
        assert temp_files(folder) == []


def test_fix_adds_no_acl_from_the_folders_default(cli: Cli, engine: str, tmp_path: Path) -> None:
    """A folder whose default ACL was set after the file was made: the replacement, made
    in it, would inherit an ACL the file never had; it is taken off."""
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    os.chmod(path, 0o644)
    set_attribute(tmp_path, _ACL_DEFAULT, posix_acl((1000, 6), mode=0o755))
    assert attributes(path) == {}
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    assert path.read_text(encoding="utf-8") == FIXED
    assert attributes(path) == {}
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@root_only
def test_an_acl_or_label_the_new_file_cannot_get_makes_it_a_write_in_place(
    cli: Cli, engine: str
) -> None:
    """The owner (not root) fixes their file, which root gave a ``security.*`` attribute
    (as a security module labels files) that only root may set: a new file could not
    carry it, so the file is written in place, keeping it, never replaced without it."""
    cli("check", "--diff", os.devnull)  # what the command imports, imported as root
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        os.chown(folder, 1234, 1234)
        path = folder / "c.yaml"
        path.write_text(BROKEN, encoding="utf-8")
        os.chown(path, 1234, 1234)
        label = "security.agent-rollout-test"
        set_attribute(path, label, b"confined")
        os.setxattr(path, "user.k", b"v")
        before = attributes(path)
        inode = path.stat().st_ino
        with acting_as(1234, 1234):
            done = cli("check", "--fix", str(path))
        assert done.code == 0, done.out + done.err
        assert path.read_text(encoding="utf-8") == FIXED
        assert (path.stat().st_ino, attributes(path)) == (inode, before)
        assert temp_files(folder) == []


# ---- --diff on a path that cannot be read; FIFOs ----------------------------------------------


def test_diff_of_a_missing_file_is_a_usage_error(cli: Cli, engine: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    done = cli("check", "--diff", str(missing))
    assert done.code == 2
    assert done.err == (
        f"{missing}:1:1: cannot read file: No such file or directory\n"
        "would fix 0 issues in 0 files\n"
    )
    assert done.out == ""


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("option", ["--diff", "--fix"])
def test_a_fifo_is_a_usage_error_and_nothing_waits(
    tmp_path: Path, engine_name: str, option: str
) -> None:
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)  # nobody writes to it: opened to be read, it would wait for ever
    done = subprocess.run(
        [sys.executable, "-m", "agent_rollout", "check", option, str(fifo)],
        capture_output=True,
        text=True,
        env=cli_env(engine_name),
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    line = f"{fifo}:1:1: cannot read file: it is a FIFO, not a regular file\n"
    assert line in (done.stderr if option == "--diff" else done.stdout)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_fifo_swapped_in_while_fixing_is_not_waited_on(tmp_path: Path, engine_name: str) -> None:
    """The file is checked, then a FIFO takes its place before ``--fix`` reads it to fix
    it: not fixed, reported, no wait."""
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    script = f"""
        import os, sys
        import agent_rollout.config
        from agent_rollout.cli import main

        check_file = agent_rollout.config.check_file
        swapped = []

        def check_then_swap(*args, **kwargs):
            result = check_file(*args, **kwargs)
            if not swapped:
                swapped.append(True)
                os.unlink({str(path)!r})
                os.mkfifo({str(path)!r})
            return result

        agent_rollout.config.check_file = check_then_swap
        sys.exit(main(["check", "--fix", {str(path)!r}]))
    """
    done = run_python(script, engine_name, timeout=30)
    assert done.returncode == 2, done.stderr
    assert f"{path}:1:1: {NOT_FIXED}\n" in done.stdout
    assert stat.S_ISFIFO(path.stat().st_mode)
    assert temp_files(tmp_path) == []


# ---- the summary --------------------------------------------------------------------------


def test_the_summary_writes_every_count_with_separators(
    cli: Cli, engine: str, tmp_path: Path
) -> None:
    for number in range(1001):
        (tmp_path / f"ci-{number}.yaml").write_text("on: push\n", encoding="utf-8")
    done = cli("check", str(tmp_path))
    assert done.code == 0
    assert done.out == (
        "checked 1,001 files: 0 valid, 0 invalid, 0 errors, 1,001 skipped (not training configs)\n"
    )


# ---- the messages ---------------------------------------------------------------------------


def _code_strings(path: Path) -> list[str]:
    """The string literals of the module at ``path`` that are code (a bare string
    statement, a docstring, is not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_the_texts_of_an_edit_live_in_the_message_table(tmp_path: Path) -> None:
    """One rule, one home: ``FileChanged`` and the "not fixed: ..." issues are formatted
    from ``_errors.EDIT_MESSAGES``; neither ``_edit`` nor ``cli._fix`` spells them."""
    from agent_rollout import _edit, _errors
    from agent_rollout.cli import _fix

    messages = _errors.EDIT_MESSAGES
    assert messages[_fix.CHANGED] == NOT_FIXED
    assert messages[_fix.UNWRITABLE].format(why="Permission denied") == CANNOT_WRITE
    shown = str(tmp_path / "r\udce9sultat.yaml")
    assert str(_edit.FileChanged(shown)) == messages["file_changed"].format(
        path=_errors.shown_path(shown)
    )
    pieces = {piece for text in messages.values() for piece in re.split(r"\{\w+\}|: ", text)}
    for module in (_edit, _fix):
        strings = _code_strings(Path(module.__file__))
        spelt = [piece for piece in pieces if len(piece) > 6 for s in strings if piece in s]
        assert spelt == [], module.__name__
