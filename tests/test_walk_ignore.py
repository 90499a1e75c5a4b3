"""``check DIR`` reads git's ignore rules itself: it runs nothing a folder carries, and its
verdicts are git's (``cli._ignore``, ``cli._walk``).

Real git is run here only by the tests, on repositories they made, to compare.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent_rollout._limits import MAX_IGNORE_FILE_BYTES, MAX_IGNORE_GLOB_BYTES
from agent_rollout.cli._gitfiles import read_index
from agent_rollout.cli._ignore import repository_around
from agent_rollout.cli._walk import config_files
from agent_rollout.cli._wildmatch import wildmatch
from support import Cli, cli_env, cli_process

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX shells, FIFOs and names")

BAD = "training:\n  rollout_backend: verl\n"
"""A config ``check`` reports (exit 1): seen in the output when the walk did not leave it out."""


@pytest.fixture
def quiet_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with no git config: the user's own settings do not reach these tests."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    return home


SAFE_GIT = [GIT or "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/nonexistent"]
"""Real git, for setting up and comparing: the test's own runs start no hook nor monitor."""


def git(*args: str | Path) -> None:
    subprocess.run(
        [*SAFE_GIT, "-c", "user.name=t", "-c", "user.email=t@t", *map(str, args)],
        capture_output=True,
        check=True,
        timeout=60,
    )


def ignored_by_git(repo: Path, paths: list[str], *, no_index: bool = False) -> set[str]:
    """Which of ``paths`` ``git check-ignore`` says are ignored (no name here holds a
    pathspec's magic: this git reads them as pathspecs)."""
    done = subprocess.run(
        [*SAFE_GIT, "-C", str(repo), "check-ignore", "--stdin", "-z"]
        + (["--no-index"] if no_index else []),
        input="".join(path + "\0" for path in paths).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return {path.decode() for path in done.stdout.split(b"\0") if path}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def walked(folder: Path) -> list[str]:
    """The config files the walk finds under ``folder``, relative to it, '/' between names."""
    found = config_files(str(folder))
    assert found.unreadable == []
    return [Path(path).relative_to(folder).as_posix() for path in found.files]


# ---- the walk runs no program ----------------------------------------------------------------


@posix_only
def test_check_runs_no_git_found_on_path(tmp_path: Path, quiet_home: Path) -> None:
    """A ``git`` first on PATH would run: the walk starts no program at all."""
    marker = tmp_path / "git-ran"
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    repo = tmp_path / "repo"
    write(repo, {"a.yaml": BAD, ".gitignore": "out/\n", "out/b.yaml": BAD, "sub/c.yaml": BAD})
    write(repo, {".git/HEAD": "ref: refs/heads/main\n", ".git/objects/.keep": ""})
    (repo / ".git" / "refs").mkdir()  # a repository by its look: made without git
    env = cli_env()
    env["PATH"] = f"{fake.parent}{os.pathsep}{env.get('PATH', '')}"
    done = cli_process("check", str(repo), env=env)
    assert not marker.exists()
    assert done.returncode == 1, done.stderr
    assert b"a.yaml:2:20:" in done.stdout and b"out/b.yaml" not in done.stdout


HOOKS = (
    "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit "
    "prepare-commit-msg commit-msg post-commit pre-rebase post-checkout post-merge pre-push "
    "pre-receive update proc-receive post-receive post-update reference-transaction "
    "push-to-checkout pre-auto-gc post-rewrite sendemail-validate fsmonitor-watchman "
    "p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change"
).split()


def _arm(repo: Path, markers: Path, label: str) -> None:
    """Every command a repository's config or git folder can make git run, each leaving a
    marker file named for it if it ever runs."""
    markers.mkdir(exist_ok=True)

    def touch(what: str) -> str:
        return f"touch '{markers}/{label}-{what}'"

    for key, value in {
        "core.fsmonitor": touch("fsmonitor"),
        "core.pager": touch("pager"),
        "pager.check-ignore": touch("pager-check-ignore"),
        "diff.external": touch("diff-external"),
        "core.sshCommand": touch("ssh"),
        "core.editor": touch("editor"),
        "alias.check-ignore": "!" + touch("alias-check-ignore"),
        "alias.ls-files": "!" + touch("alias-ls-files"),
        "alias.status": "!" + touch("alias-status"),
    }.items():
        git("-C", repo, "config", key, value)
    hooks = repo / ".git" / "hooks"
    for hook in HOOKS:
        (hooks / hook).write_text(f"#!/bin/sh\n{touch('hook-' + hook)}\n", encoding="utf-8")
        (hooks / hook).chmod(0o755)


@posix_only
@needs_git
def test_check_runs_nothing_a_repository_configures(
    cli: Cli, tmp_path: Path, quiet_home: Path
) -> None:
    """core.fsmonitor (git ran it for ``check-ignore``), hooks, pagers, diff.external and
    aliases, top level and in a nested clone: none runs, and the ignores still hold."""
    markers = tmp_path / "markers"
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "nested"
    write(outer, {".gitignore": "ignored.yaml\n", "a.yaml": BAD, "ignored.yaml": BAD})
    git("init", "-q", outer)
    git("-C", outer, "add", ".")
    git("-C", outer, "commit", "-q", "-m", "first")
    git("clone", "-q", outer, inner)
    write(inner, {"new.yaml": BAD, "ignored.yaml": BAD})
    _arm(outer, markers, "outer")
    _arm(inner, markers, "nested")
    for folder in (outer, inner):
        done = cli("check", str(folder))
        assert sorted(os.listdir(markers)) == []
        assert done.code == 1
        assert "a.yaml:2:20:" in done.out
        assert "ignored.yaml" not in done.out


# ---- names git would read as pathspecs -------------------------------------------------------


@posix_only
@needs_git
def test_files_named_like_pathspecs_leave_the_ignores_alone(
    cli: Cli, tmp_path: Path, quiet_home: Path
) -> None:
    """``:(glob)x.yaml`` and ``:!x.yaml`` made git's ``check-ignore`` fail for the whole
    batch (exit 128), read as "nothing ignored": ignored configs were checked."""
    write(
        tmp_path,
        {
            ".gitignore": "ignored.yaml\n",
            "ignored.yaml": BAD,
            ":(glob)x.yaml": BAD,
            ":!x.yaml": BAD,
            ":(exclude)*.yaml": BAD,
        },
    )
    git("init", "-q", tmp_path)
    assert walked(tmp_path) == [":!x.yaml", ":(exclude)*.yaml", ":(glob)x.yaml"]
    done = cli("check", str(tmp_path))
    assert "ignored.yaml" not in done.out
    assert done.out.count(":2:20:") == 3


# ---- tracked files ---------------------------------------------------------------------------


@needs_git
@pytest.mark.parametrize(
    ("version", "hashes"), [(2, "sha1"), (3, "sha1"), (4, "sha1"), (4, "sha256")]
)
def test_a_tracked_file_is_checked_though_ignored(
    tmp_path: Path, quiet_home: Path, version: int, hashes: str
) -> None:
    """The index (versions 2, 3 and 4: v4 compresses each name against the one before;
    SHA-1 or SHA-256 object names) says which files are tracked; git never ignores those."""
    names = ["deep/er/one.yaml", "deep/er/two.yaml", "deep/three.yaml", "kept.yaml", "out.yaml"]
    write(tmp_path, {".gitignore": "*.yaml\n!kept.yaml\n", **dict.fromkeys(names, BAD)})
    git("init", "-q", f"--object-format={hashes}", tmp_path)
    git("-C", tmp_path, "add", "-f", "deep/er/one.yaml", "deep/three.yaml")
    if version == 3:  # version 3 is written when an entry needs extended flags
        git("-C", tmp_path, "add", "--intent-to-add", "-f", "deep/er/two.yaml")
    git("-C", tmp_path, "update-index", "--index-version", str(version))
    assert (tmp_path / ".git" / "index").read_bytes()[4:8] == version.to_bytes(4, "big")
    tracked = ["deep/er/one.yaml", "deep/three.yaml"] + (
        ["deep/er/two.yaml"] if version == 3 else []
    )
    assert sorted(walked(tmp_path)) == sorted(["kept.yaml", *tracked])
    assert sorted(walked(tmp_path / "deep")) == sorted(p[5:] for p in tracked)


@needs_git
@pytest.mark.parametrize("version", [2, 4])
def test_the_index_reader_keeps_what_is_asked_for(
    tmp_path: Path, quiet_home: Path, version: int
) -> None:
    """A name past 4,094 bytes (its length is not in the entry), submodules (kept whatever
    is asked for), and only the names asked for."""
    git("init", "-q", tmp_path)
    blob = (
        subprocess.run(
            [*SAFE_GIT, "-C", str(tmp_path), "hash-object", "-w", "--stdin"],
            input=b"",
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .strip()
    )
    long = "/".join(["d" * 200] * 30) + "/x.yaml"
    listing = [f"100644 {blob}\t{long}", f"160000 {blob}\tsub/module", f"100644 {blob}\tb.txt"]
    subprocess.run(
        [*SAFE_GIT, "-C", str(tmp_path), "update-index", "--index-info"],
        input="".join(line + "\n" for line in listing).encode(),
        check=True,
        timeout=60,
    )
    git("-C", tmp_path, "update-index", "--index-version", str(version))
    tracked = read_index(str(tmp_path / ".git" / "index"), 20, lambda name: name.endswith(b".yaml"))
    assert tracked is not None
    assert sorted(tracked.names) == sorted([long.encode(), b"sub/module"])
    assert tracked.holds(long.encode()) and tracked.holds(b"sub/module") and tracked.holds(b"sub")
    assert tracked.holds(b"d" * 200)  # a folder: it holds a tracked name
    assert not tracked.holds(b"b.txt")  # tracked, but not asked for


@needs_git
@pytest.mark.parametrize("damage", ["missing", "garbage", "version 5", "truncated", "split"])
def test_an_index_that_cannot_be_read_tracks_nothing(
    tmp_path: Path, quiet_home: Path, damage: str
) -> None:
    """A missing, corrupt or split index (whose entries live in a second file), or one of
    another version: no file counts as tracked, the ignore rules still apply."""
    write(tmp_path, {".gitignore": "*.yaml\n!kept.yaml\n", "kept.yaml": BAD, "tracked.yaml": BAD})
    git("init", "-q", tmp_path)
    git("-C", tmp_path, "add", "-f", "tracked.yaml", ".gitignore")
    index = tmp_path / ".git" / "index"
    assert walked(tmp_path) == ["kept.yaml", "tracked.yaml"]
    data = index.read_bytes()
    if damage == "missing":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(b"not an index at all")
    elif damage == "version 5":
        index.write_bytes(data[:4] + (5).to_bytes(4, "big") + data[8:])
    elif damage == "truncated":
        index.write_bytes(data[:40])
    else:
        git("-C", tmp_path, "update-index", "--split-index")
        assert b"link" in index.read_bytes()
    assert walked(tmp_path) == ["kept.yaml"]


# ---- files that are not regular files, or too large ------------------------------------------


@posix_only
@needs_git
def test_rule_files_that_are_fifos_are_passed_over(tmp_path: Path, quiet_home: Path) -> None:
    """Opening a FIFO waits for a writer (git hangs on a ``.gitignore`` that is one): each
    rule file that is not a regular file gives no rules, and the walk goes on."""
    repo = tmp_path / "repo"
    write(repo, {"a.yaml": BAD, "sub/b.yaml": BAD, "c.yaml": BAD, ".gitignore": "c.yaml\n"})
    git("init", "-q", repo)
    os.mkfifo(repo / "sub" / ".gitignore")
    (repo / ".git" / "info" / "exclude").unlink()
    os.mkfifo(repo / ".git" / "info" / "exclude")
    os.mkfifo(tmp_path / "global-ignore")
    git("-C", repo, "config", "core.excludesFile", tmp_path / "global-ignore")
    os.mkfifo(quiet_home / ".gitconfig")
    result: list[list[str]] = []
    thread = threading.Thread(target=lambda: result.append(walked(repo)), daemon=True)
    thread.start()
    thread.join(30)
    assert result == [["a.yaml", "sub/b.yaml"]]


@needs_git
def test_a_rule_file_past_the_limit_is_not_read(tmp_path: Path, quiet_home: Path) -> None:
    write(tmp_path, {"a.yaml": BAD, "b.yaml": BAD})
    git("init", "-q", tmp_path)
    rules = "a.yaml\n" + "#" * (MAX_IGNORE_FILE_BYTES - len("a.yaml\n"))
    (tmp_path / ".gitignore").write_text(rules, encoding="utf-8")
    assert walked(tmp_path) == ["b.yaml"]
    (tmp_path / ".gitignore").write_text(rules + "\n", encoding="utf-8")
    assert walked(tmp_path) == ["a.yaml", "b.yaml"]


# ---- where the rules come from ---------------------------------------------------------------


@needs_git
def test_global_excludes_and_info_exclude(tmp_path: Path, quiet_home: Path) -> None:
    """``info/exclude``, ``core.excludesFile`` (``~`` expanded, through ``include.path``) or
    else ``$XDG_CONFIG_HOME/git/ignore``; ``.gitignore`` decides before them."""
    repo = tmp_path / "repo"
    names = ["by-info.yaml", "by-global.yaml", "by-xdg.yaml", "kept.yaml"]
    write(repo, dict.fromkeys(names, BAD))
    git("init", "-q", repo)
    (repo / ".git" / "info" / "exclude").write_text("by-info.yaml\nkept.yaml\n", "utf-8")
    (repo / ".gitignore").write_text("!kept.yaml\n", "utf-8")
    write(quiet_home, {".config/git/ignore": "by-xdg.yaml\n"})
    assert walked(repo) == ["by-global.yaml", "kept.yaml"]
    more = '[core]\n\texcludesFile = "~/mine/ignore" ; a comment\n'
    write(quiet_home, {"mine/ignore": "by-global.yaml\n", "more.inc": more})
    git("config", "-f", quiet_home / ".gitconfig", "include.path", "~/more.inc")
    assert walked(repo) == ["by-xdg.yaml", "kept.yaml"]
    for config in (quiet_home / ".gitconfig", repo / ".git" / "config"):
        with open(config, "a", encoding="utf-8") as text:  # each includes itself: a loop
            text.write(f"[include]\n\tpath = {config}\n")
    assert walked(repo) == ["by-xdg.yaml", "kept.yaml"]


@needs_git
def test_a_subfolder_given_reads_the_rules_above_it(tmp_path: Path, quiet_home: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "/sub/x/\n*.json\n",
            "sub/.gitignore": "!keep.json\nb.yaml\n",
            "sub/a.yaml": BAD,
            "sub/b.yaml": BAD,
            "sub/keep.json": "{}",
            "sub/other.json": "{}",
            "sub/x/c.yaml": BAD,
        },
    )
    git("init", "-q", tmp_path)
    assert walked(tmp_path / "sub") == ["a.yaml", "keep.json"]
    assert walked(tmp_path / "sub" / "x") == ["c.yaml"]  # named: the user's, ignored or not
    link = tmp_path.parent / f"{tmp_path.name}-link"
    try:
        link.symlink_to(tmp_path / "sub", target_is_directory=True)
    except (OSError, NotImplementedError):
        return
    assert walked(link) == ["a.yaml", "keep.json"]  # the repository of where it leads


@needs_git
def test_nested_repositories_and_worktrees(tmp_path: Path, quiet_home: Path) -> None:
    """A linked work tree (a ``.git`` file) reads the shared ``info/exclude`` and its own
    index; a nested clone its own rules; a ``.git`` file leading nowhere ignores nothing
    below it; a ``.git`` folder that is no repository leaves its folder to the one around."""
    main, linked = tmp_path / "main", tmp_path / "linked"
    write(main, {".gitignore": "*.yml\n", "a.yaml": BAD, "t.yml": BAD, "u.yml": BAD})
    git("init", "-q", main)
    git("-C", main, "add", "-f", ".")
    git("-C", main, "commit", "-q", "-m", "first")
    git("-C", main, "worktree", "add", "-q", linked)
    (main / ".git" / "info" / "exclude").write_text("a.yaml\n", "utf-8")
    git("-C", linked, "rm", "-q", "--cached", "u.yml", "a.yaml")
    assert (linked / ".git").is_file()
    assert walked(linked) == ["t.yml"]
    assert walked(main) == ["a.yaml", "t.yml", "u.yml"]

    (main / ".gitignore").write_text("*.yml\nb.yaml\nc.yaml\nd.yaml\n", "utf-8")
    write(main, {"clone/.gitignore": "own.yaml\n", "clone/own.yaml": BAD, "clone/b.yaml": BAD})
    git("init", "-q", main / "clone")
    write(main, {"broken/.git": "gitdir: nowhere\n", "broken/c.yaml": BAD})
    write(main, {"fake/.git/HEAD": "nonsense", "fake/d.yaml": BAD, "fake/e.yaml": BAD})
    assert walked(main) == [
        "a.yaml",
        "t.yml",
        "u.yml",
        "broken/c.yaml",
        "clone/b.yaml",
        "fake/e.yaml",
    ]
    assert walked(main / "clone") == ["b.yaml"]
    assert walked(main / "broken") == ["c.yaml"]
    assert walked(main / "fake") == ["e.yaml"]


@needs_git
def test_a_folder_git_ignores_is_not_walked_unless_it_holds_tracked_configs(
    tmp_path: Path, quiet_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {".gitignore": "out/\n", "out/a/b.yaml": BAD, "data/x.yaml": BAD})
    write(tmp_path, {f"out/many/{i}.txt": "" for i in range(5)})
    git("init", "-q", tmp_path)
    listed: list[str] = []
    scandir = os.scandir

    def spy(path: str) -> Any:
        listed.append(Path(path).relative_to(tmp_path).as_posix())
        return scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    assert walked(tmp_path) == ["data/x.yaml"]
    assert sorted(listed) == [".", "data"]
    git("-C", tmp_path, "add", "-f", "out/a/b.yaml")
    listed.clear()
    assert walked(tmp_path) == ["data/x.yaml", "out/a/b.yaml"]
    assert "out/many" not in listed


def test_outside_a_work_tree_nothing_is_ignored(tmp_path: Path, quiet_home: Path) -> None:
    write(tmp_path, {".gitignore": "*.yaml\n", "a.yaml": BAD, "b/.gitignore": "*\n"})
    write(tmp_path, {"b/c.yaml": BAD})
    assert walked(tmp_path) == ["a.yaml", "b/c.yaml"]


# ---- what the walk reads ---------------------------------------------------------------------

FIXABLE = "training:\n  rollout_backnd: nemo_gym\n"
"""A config ``--fix`` rewrites (the key's typo)."""


def reported(out: str) -> list[str]:
    """The files a ``check`` report names an issue in (``path:line:column: ...``)."""
    return [line.split(":")[0] for line in out.splitlines() if re.match(r"[^:]+:\d+:\d+: ", line)]


@posix_only
def test_symbolic_links_to_files_are_not_followed(
    cli: Cli, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link inside a folder leads anywhere (``/etc/passwd``, another user's file): the
    walk neither reads nor fixes what it points to, as ripgrep does not by default; the
    same link named on the command line is read, and fixed through."""
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    write(outside, {"victim.yaml": FIXABLE, "secret.yaml": BAD})
    write(repo, {"own.yaml": BAD})
    (repo / "c.yaml").symlink_to(outside / "victim.yaml")
    (repo / "d.yaml").symlink_to(outside / "secret.yaml")
    (repo / "p.yaml").symlink_to("/etc/passwd")
    monkeypatch.chdir(repo)
    for args in (["--fix", "."], ["."]):
        done = cli("check", *args)
        assert done.code == 1, args
        assert reported(done.out) == ["own.yaml"], args
        assert done.out.splitlines()[-1].startswith("checked 1 file:"), args
    diff = cli("check", "--diff", ".")
    assert "would fix 0 issues in 0 files" in diff.out + diff.err
    assert (outside / "victim.yaml").read_text("utf-8") == FIXABLE
    assert walked(repo) == ["own.yaml"]
    assert cli("check", "d.yaml").out.startswith("d.yaml:2:20:")  # named: read
    fixed = cli("check", "--fix", "c.yaml")
    assert "fixed 1 issue in 1 file" in fixed.out.splitlines()
    assert (outside / "victim.yaml").read_text("utf-8") != FIXABLE
    assert (repo / "c.yaml").is_symlink()


@needs_git
def test_a_folder_named_is_read_though_git_ignores_it(
    cli: Cli, engine: str, tmp_path: Path, quiet_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ruff lints a folder named on its command line: the folder (or a folder above
    it) being ignored does not count; below it the rules still apply, its own
    ``.gitignore`` and the patterns above that match paths below it."""
    write(
        tmp_path,
        {
            ".gitignore": "out/\nbuild2/\nsub/*.yaml\n",
            "out/a.yaml": BAD,
            "out/deep/b.yaml": BAD,
            "out/.gitignore": "skip.yaml\n",
            "out/skip.yaml": BAD,
            "build2/x/c.yaml": BAD,
            "sub/d.yaml": BAD,
            "sub/e.yml": BAD,
            "top.yaml": BAD,
        },
    )
    git("init", "-q", tmp_path)
    monkeypatch.chdir(tmp_path)

    def checked(*args: str) -> list[str]:
        return reported(cli("check", *args).out)

    assert checked(".") == ["top.yaml", "sub/e.yml"]
    assert checked("out") == ["out/a.yaml", "out/deep/b.yaml"]
    assert checked("build2/x") == ["build2/x/c.yaml"]
    assert checked("sub") == ["sub/e.yml"]
    assert checked("out/deep", "build2") == ["out/deep/b.yaml", "build2/x/c.yaml"]
    assert walked(tmp_path / "out") == ["a.yaml", "deep/b.yaml"]


def _hostile(size: int, *, distinct: bool) -> str:
    """The review's ``.gitignore``, up to ``size`` bytes: lines of ``*a*a...*ab`` (63
    stars; ``distinct``: each line its own, ``b0q``, ``b1q``..., else one line again
    and again)."""
    lines, total = [], 0
    while True:
        line = "*a" * 63 + (f"b{len(lines)}q" if distinct else "b") + "\n"
        if total + len(line) > size:
            return "".join(lines)
        lines.append(line)
        total += len(line)


@needs_git
def test_a_hostile_gitignore_is_bounded_and_keeps_gits_verdicts(
    tmp_path: Path, quiet_home: Path
) -> None:
    """A 1 MiB ``.gitignore`` of star-heavy lines took 10 s a file name: a file past
    ``MAX_IGNORE_GLOB_BYTES`` of them is not applied (named in ``not_applied``), one at
    the limit, or of one line repeated, is, with git's verdicts. What each costs is
    ``benches/bench_walk.py``'s to time, beside git."""
    names = [f"{'a' * 200}{i}.yaml" for i in range(10)]
    write(tmp_path, dict.fromkeys(names, BAD))
    write(tmp_path, {f"{'a' * 70}b5q/x.yaml": BAD, "z.yaml": BAD})
    git("init", "-q", tmp_path)
    gitignore = tmp_path / ".gitignore"

    gitignore.write_text(_hostile(MAX_IGNORE_FILE_BYTES, distinct=True), "utf-8")
    found = config_files(str(tmp_path))
    assert found.not_applied == [str(gitignore)]
    assert len(found.files) == 12

    for text in (
        _hostile(MAX_IGNORE_GLOB_BYTES, distinct=True),  # at the limit: applied
        _hostile(MAX_IGNORE_FILE_BYTES, distinct=False),  # the same line: matched once
    ):
        gitignore.write_text(text, "utf-8")
        found = config_files(str(tmp_path))
        assert found.not_applied == []
        by_git = ignored_by_git(tmp_path, [*names, f"{'a' * 70}b5q", "z.yaml"])
        assert by_git == ({f"{'a' * 70}b5q"} if "b5q" in text else set())
        expected = sorted([*names, "z.yaml", *([] if by_git else [f"{'a' * 70}b5q/x.yaml"])])
        assert sorted(walked(tmp_path)) == expected


def test_the_walks_modules_keep_no_limit_of_their_own() -> None:
    """Every limit lives in ``_limits`` (one home): the walk's modules define none."""
    cli_folder = Path(__file__).resolve().parent.parent / "python" / "agent_rollout" / "cli"
    found = []
    for module in ("_walk.py", "_ignore.py", "_gitfiles.py", "_wildmatch.py"):
        tree = ast.parse((cli_folder / module).read_text("utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.Assign) or isinstance(node.value, ast.Call):
                continue  # a number is a limit, not a table of bytes (``frozenset(...)``)
            for target in node.targets:
                name = target.id if isinstance(target, ast.Name) else ""
                if "MAX" in name or name.endswith(("_BYTES", "_DEPTH")):
                    found.append(f"{module}: {name}")
    assert found == ["_gitfiles.py: _INDEX_BLOCK_BYTES"]  # how much one read asks for


# ---- fidelity: the verdicts are git's --------------------------------------------------------

DIRS = ["a", "d", "ab", "x", "aba"]
FILES = ["x.yaml", "a.yaml", "ab.yml", "b.json", "c.toml", "b", "#x", "!a", "a b", "abab.yaml"]
TOKENS = [
    "a",
    "b",
    "d",
    "x",
    "ab",
    ".yaml",
    ".y*",
    "*",
    "**",
    "?",
    "[ab]",
    "[!a]",
    "[^x]",
    "[a-c]",
    "[]a]",
    "[[:alpha:]]",
    "[[:digit:]]",
    "\\x",
    "\\*",
    "\\#",
    "\\!",
    "#",
    "!",
    " ",
]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    segments = draw(
        st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3), min_size=1, max_size=3)
    )
    text = "/".join("".join(parts) for parts in segments)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()):
        text += "/"
    if draw(st.integers(0, 3)) == 0:
        text = "!" + text
    return text + draw(st.sampled_from(["", "", "", " ", "  ", "\\ "]))


STARRY = ["*", "*", "**", "a", "b", "?", "[ab]", "[!b]", "y", ".", "\\*"]
"""Parts of patterns made mostly of stars, where a matcher that backtracks goes wrong
or slow: ``*a*b*``, ``a*/*b``, ``**/*a**``."""


@st.composite
def starry_patterns(draw: st.DrawFn) -> str:
    names = draw(
        st.lists(st.lists(st.sampled_from(STARRY), min_size=1, max_size=7), min_size=1, max_size=3)
    )
    text = "/".join("".join(parts) for parts in names)
    return ("!" if draw(st.integers(0, 4)) == 0 else "") + text


rule_files = st.lists(
    st.one_of(patterns(), starry_patterns(), st.sampled_from(["", "#c", "*", "**"])), max_size=6
)


@st.composite
def trees(draw: st.DrawFn) -> list[str]:
    paths = draw(
        st.lists(
            st.tuples(st.lists(st.sampled_from(DIRS), max_size=3), st.sampled_from(FILES)),
            min_size=1,
            max_size=14,
        )
    )
    return sorted({"/".join([*folders, name]) for folders, name in paths})


def _folders_of(files: list[str]) -> list[str]:
    return sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)})


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=trees(),
    ignores=st.dictionaries(st.sampled_from(["", "a", "a/d", "d", "ab/x"]), rule_files),
    exclude=rule_files,
    global_rules=rule_files,
    global_by_config=st.booleans(),
    tracked=st.sets(st.integers(0, 13), max_size=4),
    version=st.sampled_from([2, 3, 4]),
    crlf=st.booleans(),
    start=st.integers(0, 5),
)
def test_verdicts_are_gits(
    files: list[str],
    ignores: dict[str, list[str]],
    exclude: list[str],
    global_rules: list[str],
    global_by_config: bool,
    tracked: set[int],
    version: int,
    crlf: bool,
    start: int,
) -> None:
    """Random rules at several depths (negations, anchors, ``**``, classes, folders only,
    escapes, trailing spaces), info/exclude and the global file, some files tracked: for
    every file and folder, ignored here exactly when ``git check-ignore`` says so; and the
    walk finds the config files git does not ignore."""
    folders = _folders_of(files)
    assume(not set(files) & set(folders))
    newline = "\r\n" if crlf else "\n"
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        home, repo = Path(scratch) / "home", Path(scratch) / "repo"
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.delenv("GIT_CONFIG_GLOBAL", raising=False)
        write(repo, dict.fromkeys(files, ""))
        git("init", "-q", repo)
        for where, lines in ignores.items():
            if where in folders or not where:
                (repo / where / ".gitignore").write_bytes(
                    newline.join(lines).encode() + newline.encode()
                )
        (repo / ".git" / "info" / "exclude").write_text("\n".join(exclude), "utf-8")
        if global_by_config:
            write(home, {"rules/ignore": "\n".join(global_rules)})
            with open(repo / ".git" / "config", "a", encoding="utf-8") as config:
                config.write("[core]\n\texcludesFile = ~/rules/ignore\n")
        else:
            write(home, {".config/git/ignore": "\n".join(global_rules)})
        chosen = [files[i] for i in sorted(tracked) if i < len(files)]
        if chosen:
            git("--literal-pathspecs", "-C", repo, "add", "-f", "--", *chosen)
        if version != 2 and chosen:
            git("-C", repo, "update-index", "--index-version", str(version))
        asked = files + folders
        by_git = ignored_by_git(repo, asked)

        around = repository_around(str(repo), lambda name: True)
        assert around is not None
        repository, inside = around
        assert inside == b""
        ours = {path for path in asked if repository.ignored(path.encode(), is_dir=path in folders)}
        assert ours == by_git

        top = ["", *folders][start % (len(folders) + 1)]
        expected = sorted(
            f[len(top) + 1 :] if top else f
            for f in files
            if f not in by_git
            and (not top or f.startswith(top + "/"))
            and f.rpartition(".")[2] in ("yaml", "yml", "json", "toml")
            and "." in f.rpartition("/")[2]
        )
        found = sorted(walked(repo / top))
        named = {top} | {folder for folder in folders if top.startswith(folder + "/")}
        if named & by_git:  # a folder named is read, ignored or not: more may be found
            assert set(found) >= set(expected)
        else:
            assert found == expected


# ---- patterns against real git, one by one ---------------------------------------------------

EXAMPLES = [
    # man gitignore's examples
    ("doc/frotz/", ["doc/frotz/a.yaml", "a/doc/frotz/b.yaml", "doc/frotz.yaml"]),
    ("frotz/", ["frotz/a.yaml", "a/frotz/b.yaml", "frotz.yaml"]),
    ("*.yaml", ["a.yaml", "d/b.yaml", "yaml"]),
    ("/*.c", ["cat-file.c", "mozilla-sha1/sha1.c"]),
    ("**/foo", ["foo/a.yaml", "x/foo/b.yaml", "x/y/foo", "xfoo/c.yaml"]),
    ("**/foo/bar", ["foo/bar", "x/foo/bar", "x/y/foo/bar/z.yaml"]),
    ("abc/**", ["abc/a.yaml", "abc/d/e.yaml", "x/abc/f.yaml"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b", "a/xb", "x/a/b"]),
    ("foo/*", ["foo/test.json", "foo/bar/hello.c"]),
    ("foo/", ["foo/a.yaml", "bar/foo/b.yaml", "baz/foo"]),
    ("/foo", ["foo", "x/foo"]),
    ("\\#hash.yaml", ["#hash.yaml"]),
    ("\\!bang.yaml", ["!bang.yaml"]),
    ("trailing.yaml   ", ["trailing.yaml"]),
    ("space\\ ", ["space ", "space"]),
    # the quirks a port must keep
    ("d/a**", ["d/a/x/y.yaml", "d/ab.yaml", "d/x/a.yaml"]),  # the literal part is cut first
    ("d**/e", ["d/x/e", "dx/e", "dx/y/e"]),
    ("a**b", ["a/b", "axb", "a/x/b"]),
    ("x/**y", ["x/y", "x/zy", "x/z/y"]),
    ("[a-]b/c", ["ab/c", "-b/c", "bb/c"]),
    ("[[:alpha:]][[:digit:]]", ["a1", "d/b2", "11"]),
    ("[!a]x/", ["bx/f", "ax/f"]),
    ("*/", ["a/f.yaml", "f.yaml"]),
    ("**", ["a.yaml", "d/b.yaml"]),
    ("/**/", ["a.yaml", "d/b.yaml"]),
    ("a/b//", ["a/b/c"]),
    ("//a", ["a"]),
    ("a\\", ["a"]),
    ("[", ["[", "a"]),
]


@needs_git
@pytest.mark.parametrize(("pattern", "paths"), EXAMPLES)
def test_patterns_match_as_git_does(
    tmp_path: Path, quiet_home: Path, pattern: str, paths: list[str]
) -> None:
    """Each path, and each folder above it, ignored here exactly when git says so."""
    folders = _folders_of(paths)
    assert not set(folders) & set(paths)
    write(tmp_path, dict.fromkeys(paths, ""))
    (tmp_path / ".gitignore").write_text(pattern + "\n", "utf-8")
    git("init", "-q", tmp_path)
    asked = [*paths, *folders]
    by_git = ignored_by_git(tmp_path, asked, no_index=True)
    around = repository_around(str(tmp_path), lambda name: False)
    assert around is not None
    ours = {path for path in asked if around[0].ignored(path.encode(), is_dir=path in folders)}
    assert ours == by_git


# ---- wildmatch itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "anywhere", "in_path"),
    [
        ("foo*bar", "foo/baz/bar", True, False),  # "*" crosses "/" only without WM_PATHNAME
        ("foo/**/bar", "foo/bar", False, True),  # "/**/" may be a single "/"
        ("foo/**/bar", "foo/x/y/bar", True, True),
        ("**/foo", "foo", False, True),
        ("a**b", "a/x/b", True, False),  # "**" not between slashes is one "*"
        ("*/x", "a/b/x", True, False),
        ("t[!a-g]n", "ton", True, True),
        ("t[^a-g]n", "ten", False, False),
        ("a[]]b", "a]b", True, True),
        ("a[]-]b", "a-b", True, True),
        ("[[:digit:][:upper:]]", "A", True, True),
        ("[[:nope:]]", "n", False, False),  # an unknown class matches nothing
        ("foo\\*", "foo*", True, True),
        ("foo\\*", "foox", False, False),
        ("\\", "\\", False, False),  # a backslash at the end matches nothing
        ("[a-", "-", False, False),  # a class never closed
        ("a?b", "a/b", True, False),
    ],
)
def test_wildmatch(pattern: str, text: str, anywhere: bool, in_path: bool) -> None:
    assert wildmatch(pattern.encode(), text.encode(), pathname=False) is anywhere
    assert wildmatch(pattern.encode(), text.encode(), pathname=True) is in_path


def test_wildmatch_of_many_stars_stays_quick() -> None:
    """Backtracking takes time exponential in the stars of a pattern that fails (git's
    own ``wildmatch`` still does for ``**/**/...``): each answer is computed once here."""
    assert not wildmatch(b"*a" * 64 + b"b", b"a" * 2000, pathname=True)
    assert not wildmatch(b"**/" * 64 + b"b", b"a/" * 200, pathname=True)
    assert not wildmatch(b"a/**/" * 64 + b"b", b"a/" * 200, pathname=True)


@needs_git
def test_check_names_an_ignore_file_it_did_not_apply(
    cli: Cli, tmp_path: Path, quiet_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files a rule file left unapplied would have kept out are checked: the run says
    why, once, on standard error, in the command's words."""
    write(tmp_path, {"a.yaml": BAD, "kept/b.yaml": BAD})
    git("init", "-q", tmp_path)
    (tmp_path / ".gitignore").write_text(
        "kept/\n" + _hostile(MAX_IGNORE_FILE_BYTES, distinct=True), "utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = cli("check", ".")
    assert reported(result.out) == ["a.yaml", "kept/b.yaml"]
    assert result.err == (
        "agent-rollout check: note: .gitignore: ignore rules not "
        f"applied (with the others above them, over {MAX_IGNORE_GLOB_BYTES // 1024} KiB of "
        "wildcard patterns); the files they match are checked\n"
    )
