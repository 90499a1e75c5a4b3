"""``agent-rollout check --fix`` and ``--diff``: the config layer's fixes, applied to files.

``--diff`` prints a unified diff that real ``git apply`` and ``patch`` apply to
give, byte for byte, what ``--fix`` writes, whatever the file's line ends, last
line, characters and name; its summary goes to standard error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import ENGINES, Cli, cli_env

BROKEN = (
    "# GRPO run\n"
    "training:\n"
    "  epochs: 1   # the trainer's own key\n"
    "  rollout_backend: Open-Env\n"
    "  rollout_fucn: pkg.mod:play\n"
    "  rollout_max_steps: 010\n"
)
SAFE_FIXED = BROKEN.replace("Open-Env", "openenv").replace("fucn", "func")
"""The safe fixes: ``010`` may be 8 (as the trainer reads it) or 10, an unsafe fix."""
FIXED = SAFE_FIXED.replace("010", "8")
HELD_BACK = "1 unsafe fix held back (it may change what a value means): --unsafe-fixes"


def test_fix_rewrites_the_file_and_reports_each_fix(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    assert path.read_text(encoding="utf-8") == SAFE_FIXED
    lines = done.out.splitlines()
    assert lines[0] == (
        f"{path}:4:20: fixed: training.rollout_backend: "
        "Change rollout_backend 'Open-Env' to 'openenv'"
    )
    assert lines[1].startswith(f"{path}:5:3: fixed: training.rollout_fucn: Rename")
    assert lines[2] == f"fixed 2 issues in 1 file; {HELD_BACK} applies it"
    assert lines[3].startswith(f"{path}:6:22: warning: training.rollout_max_steps: '010' reads")
    assert lines[4:] == ["checked 1 file: 1 valid, 0 invalid, 0 errors, 1 warning"]
    assert [name for name in os.listdir(tmp_path)] == ["c.yaml"]  # no temporary left
    unsafe = cli("check", "--fix", "--unsafe-fixes", str(path))
    assert unsafe.code == 0, unsafe.out
    assert path.read_text(encoding="utf-8") == FIXED
    assert unsafe.out.splitlines() == [
        f"{path}:6:22: fixed: training.rollout_max_steps: "
        "Write 010 as 8 (as the trainer reads it: yaml.safe_load)",
        "fixed 1 issue in 1 file",
        "checked 1 file: 1 valid, 0 invalid, 0 errors",
    ]


def test_unsafe_fixes_applies_them_all_in_one_run(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    done = cli("check", "--fix", "--unsafe-fixes", str(path))
    assert path.read_text(encoding="utf-8") == FIXED
    assert done.out.splitlines()[-2:] == [
        "fixed 3 issues in 1 file",
        "checked 1 file: 1 valid, 0 invalid, 0 errors",
    ]


def test_fix_twice_changes_nothing_the_second_time(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    cli("check", "--fix", str(path))
    before = path.stat().st_mtime_ns
    again = cli("check", "--fix", str(path))
    assert path.read_text(encoding="utf-8") == SAFE_FIXED
    assert path.stat().st_mtime_ns == before  # not written at all
    assert again.out.splitlines()[0] == f"fixed 0 issues in 0 files; {HELD_BACK} applies it"


def test_unsafe_fixes_goes_with_fix_or_diff(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    done = cli("check", "--unsafe-fixes", str(path))
    assert done.code == 2
    assert "--unsafe-fixes goes with --fix or --diff" in done.err
    assert path.read_text(encoding="utf-8") == BROKEN


def test_a_string_key_is_fixed_to_a_string_by_the_installed_command(tmp_path: Path) -> None:
    """``rollout_judge_model: yes`` is the string "yes", never ``true`` (which the key
    refuses): through the console script pip installs, as a user runs it."""
    command = Path(sys.executable).with_name("agent-rollout")
    if not command.exists():
        pytest.skip("no agent-rollout console script beside this Python")
    path = tmp_path / "judge.yaml"
    text = "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n  rollout_judge_model: yes\n"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [str(command), "check", "--fix", str(path)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text(encoding="utf-8") == text.replace(": yes", ': "yes"')
    assert done.stdout.splitlines() == [
        f"{path}:4:24: fixed: training.rollout_judge_model: "
        'Write yes as "yes" (as YAML 1.2 reads it)',
        "fixed 1 issue in 1 file",
        "checked 1 file: 1 valid, 0 invalid, 0 errors",
    ]


def test_fix_reports_what_remains_and_fails_on_it(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN + "  rollout_judge_model: j\n", encoding="utf-8")
    done = cli("check", "--fix", "--format", "json", str(path))
    assert done.code == 1
    report = json.loads(done.out)
    entry = report["files"][0]
    assert [(fix["location"], fix["applicability"]) for fix in entry["fixed"]] == [
        ("training.rollout_backend", "safe"),
        ("training.rollout_fucn", "safe"),
    ]
    assert [(fix["location"], fix["applicability"]) for fix in entry["held_back"]] == [
        ("training.rollout_max_steps", "unsafe")
    ]
    assert entry["held_back"][0]["fix"].startswith("Write 010 as 8 (as the trainer reads it")
    assert [error["kind"] for error in entry["errors"]] == ["cross_field"]
    assert [warning["kind"] for warning in entry["warnings"]] == ["yaml_version"]


def test_diff_prints_and_writes_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    before = path.stat().st_mtime_ns
    done = cli("check", "--diff", str(path))
    assert done.code == 1
    assert path.read_text(encoding="utf-8") == BROKEN and path.stat().st_mtime_ns == before
    assert f"--- {path}\n+++ {path}\n" in done.out
    assert "\n-  rollout_fucn: pkg.mod:play\n" in done.out
    assert "\n+  rollout_func: pkg.mod:play\n" in done.out
    assert "\n   epochs: 1   # the trainer's own key\n" in done.out  # context, as it was
    assert "rollout_max_steps: 8" not in done.out  # unsafe: held back
    assert done.err == f"would fix 2 issues in 1 file; {HELD_BACK} shows it\n"
    unsafe = cli("check", "--diff", "--unsafe-fixes", str(path))
    assert unsafe.code == 1
    assert "\n-  rollout_max_steps: 010\n" in unsafe.out
    assert "\n+  rollout_max_steps: 8\n" in unsafe.out
    assert unsafe.err == "would fix 3 issues in 1 file\n"
    assert path.read_text(encoding="utf-8") == BROKEN and path.stat().st_mtime_ns == before
    path.write_text(SAFE_FIXED, encoding="utf-8")
    held = cli("check", "--diff", str(path))  # nothing safe left: no change, exit 0
    assert (held.code, held.out) == (0, "")
    assert held.err == f"would fix 0 issues in 0 files; {HELD_BACK} shows it\n"
    path.write_text(FIXED, encoding="utf-8")
    clean = cli("check", "--diff", "--unsafe-fixes", str(path))
    assert (clean.code, clean.out, clean.err) == (0, "", "would fix 0 issues in 0 files\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # no diff: nothing to stop commands around
    assert cli("check", "--diff", "--unsafe-fixes", str(path)).out == ""


def test_fix_leaves_valid_and_unrelated_files_alone(cli: Cli, tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(FIXED, encoding="utf-8")
    other = tmp_path / "ci.yaml"
    other.write_text("on: push\njobs: {}\n", encoding="utf-8")
    stamps = [good.stat().st_mtime_ns, other.stat().st_mtime_ns]
    done = cli("check", "--fix", "--skip-unrelated", str(good), str(other))
    assert done.code == 0
    assert [good.stat().st_mtime_ns, other.stat().st_mtime_ns] == stamps
    assert done.out.startswith("fixed 0 issues in 0 files\n")


def test_fix_writes_through_a_symlink(cli: Cli, tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text(BROKEN, encoding="utf-8")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    assert cli("check", "--fix", "--unsafe-fixes", str(link)).code == 0
    assert link.is_symlink() and real.read_text(encoding="utf-8") == FIXED


def test_fix_and_diff_take_files_not_stdin(cli: Cli) -> None:
    done = cli("check", "--fix", "-")
    assert done.code == 2 and "--fix and --diff take files" in done.err
    assert cli("check", "--fix", "--diff", "x.yaml").code == 2  # one or the other


def test_fix_edits_a_toml_inline_table_in_place(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    text = (
        'model = "m"\n'
        'training = { rollout_backend = "Nemo-Gym", rollout_max_steps = "8", '
        'rollout_gym_config = "gym.yaml" }  # ours\n'
    )
    path.write_text(text, encoding="utf-8")
    done = cli("check", "--fix", str(path))
    assert path.read_text(encoding="utf-8") == (
        text.replace('"Nemo-Gym"', '"nemo_gym"').replace('"8"', "8")
    )
    assert f"{path}:2:32: fixed: training.rollout_backend:" in done.out
    assert f"{path}:2:64: fixed: training.rollout_max_steps:" in done.out
    again = cli("check", "--format", "json", str(path))
    found = json.loads(again.out)["files"][0]
    left = {issue["location"] for issue in [*found["errors"], *found["warnings"]]}
    assert not left & {"training.rollout_backend", "training.rollout_max_steps"}


# ---- --diff applies, byte for byte ------------------------------------------------------------

_KEYS = "  rollout_backend: Open-Env{end}  rollout_max_step: 8"
DIFF_TEXTS: dict[str, str] = {
    "lf.yaml": "training:\n" + _KEYS.format(end="\n") + "\n",
    "no final newline.yaml": "training:\n  rollout_max_step: 8",
    "crlf.yaml": "training:\r\n" + _KEYS.format(end="\r\n") + "\r\n",
    "crlf, no final newline.yaml": "training:\r\n" + _KEYS.format(end="\r\n"),
    "cr.yaml": "training:\r" + _KEYS.format(end="\r") + "\r",
    "mixed.yaml": "# ends\r\ntraining:\n" + _KEYS.format(end="\r") + "\n",
    "separators.yaml": 'note: "a\u2028b\x85c\u2029d"\ntraining:\n'
    + _KEYS.format(end="\n")
    + '\nlast: "x\u2028y"\n',
    "bom.yaml": "\ufefftraining:\n" + _KEYS.format(end="\n") + "\n",
    "caf\u00e9 \u65e5\u672c.yaml": "# caf\u00e9 \u2713 \u65e5\u672c\ntraining:\n"
    + _KEYS.format(end="\n"),
    "tabs.yaml": '# \ttab\nnote: "a\tb"\ntraining:\n' + _KEYS.format(end="\n"),
    "tabs.json": '{\n\t"training": {\n\t\t"rollout_backend": "Open-Env",\t"rollout_max_step": 8}}',
    "crlf.toml": '[training]\r\nrollout_backend = "Open-Env"\r\nrollout_max_step = 8\r\n',
    'odd "name" \\ ##[x].yaml': "training:\n" + _KEYS.format(end="\n") + "\n",
    "line\nbreak\x1b.yaml": "training:\n" + _KEYS.format(end="\n") + "\n",
    "r\udce9sultat.yaml": "training:\n" + _KEYS.format(end="\n") + "\n",  # not UTF-8
    "sub/in a folder.yaml": "training:\n" + _KEYS.format(end="\n") + "\n",
}
"""Every line-end style, no final newline, line separators and NEL inside strings, a
BOM, non-ASCII, tabs; file names with spaces, quotes, a backslash, ``##[``, a newline,
an escape, a byte that is not UTF-8."""

_GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _files_in(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and ".git" not in path.parts
    }


def _apply(patch: bytes, original: Path, into: Path, *command: str) -> dict[str, bytes]:
    """``command`` (``git apply``, ``patch``) run on ``patch`` in a copy of ``original``;
    the files it leaves (git's own folder aside)."""
    shutil.copytree(original, into)
    env = {**os.environ, **_GIT_ENV}
    if command[0] == "git":
        subprocess.run(["git", "init", "-q", "."], cwd=into, env=env, check=True)
    done = subprocess.run(
        command, cwd=into, input=patch, capture_output=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return _files_in(into)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.skipif(shutil.which("patch") is None, reason="patch is not installed")
@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_diff_applies_with_git_and_patch_to_what_fix_writes(
    tmp_path: Path, engine_name: str
) -> None:
    """``check --diff`` through the installed command, applied by real ``git apply`` (in a
    repository) and ``patch`` (``-p0``, and without ``-p`` for names with no folder),
    gives byte for byte what ``check --fix`` writes; stdout holds the diff alone, the
    summary is on stderr. Under GitHub Actions the diff is between ``::stop-commands::``
    lines, and applies the same."""
    command = Path(sys.executable).with_name("agent-rollout")
    if not command.exists():
        pytest.skip("no agent-rollout console script beside this Python")
    original = tmp_path / "original"
    (original / "sub").mkdir(parents=True)
    for name, text in DIFF_TEXTS.items():
        (original / os.fsencode(name).decode("utf-8", "surrogateescape")).write_bytes(
            text.encode("utf-8")
        )
    nested = "sub/in a folder.yaml"
    top = sorted(set(DIFF_TEXTS) - {nested})

    def check(option: str, folder: Path, *names: str, **env: str) -> Any:
        return subprocess.run(
            [str(command), "check", option, *names],
            cwd=folder,
            capture_output=True,
            env={**cli_env(engine_name), **env},
            timeout=120,
            check=False,
        )

    diff = check("--diff", original, *top)
    assert diff.returncode == 1, diff.stderr
    assert re.fullmatch(rb"would fix \d+ issues in 15 files\n", diff.stderr), diff.stderr
    assert diff.stdout.startswith(b"--- ")
    # Each file's header: quoted as git quotes an odd name, else as it is.
    assert b'--- "odd \\"name\\" \\\\ ##\\133x].yaml"\n' in diff.stdout
    assert b'--- "line\\nbreak\\033.yaml"\n' in diff.stdout
    assert b'--- "r\\351sultat.yaml"\n' in diff.stdout
    assert b"--- no final newline.yaml\t\n+++ no final newline.yaml\t\n" in diff.stdout
    assert "--- caf\u00e9 \u65e5\u672c.yaml\t\n".encode() in diff.stdout
    assert b"\n-  rollout_max_step: 8\n\\ No newline at end of file\n+" in diff.stdout
    assert b"\n-  rollout_backend: Open-Env\r\n" in diff.stdout  # the CR kept
    assert '\n note: "a\u2028b\x85c\u2029d"\n'.encode() in diff.stdout  # one line

    fixed_folder = tmp_path / "fixed"
    shutil.copytree(original, fixed_folder)
    fixed = check("--fix", fixed_folder, *DIFF_TEXTS)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    before, wanted = _files_in(original), _files_in(fixed_folder)
    assert all(wanted[name] != data for name, data in before.items())

    github = check("--diff", original, *top, GITHUB_ACTIONS="true")
    first, _, rest = github.stdout.partition(b"\n")
    token = re.fullmatch(rb"::stop-commands::([0-9a-f]{32})", first)
    assert token is not None, github.stdout[:200]
    assert rest == diff.stdout + b"::" + token.group(1) + b"::\n"

    for label, patch in (("plain", diff.stdout), ("github", github.stdout)):
        for tool in (["git", "apply"], ["patch", "-p0"], ["patch"]):
            into = tmp_path / f"{label}-{'-'.join(tool)}"
            assert _apply(patch, original, into, *tool) == {**wanted, nested: before[nested]}
    # A path in a folder: git strips one folder unless told -p0.
    in_folder = check("--diff", original, nested)
    assert in_folder.stdout.startswith(b"--- sub/in a folder.yaml\t\n")
    for tool in (["git", "apply", "-p0"], ["patch", "-p0"]):
        into = tmp_path / f"folder-{'-'.join(tool)}"
        assert _apply(in_folder.stdout, original, into, *tool) == {**before, nested: wanted[nested]}
