"""``agent-rollout check --fix`` and ``--diff``: the config layer's fixes, applied to files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import Cli, cli_env

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


def test_diff_prints_and_writes_nothing(cli: Cli, tmp_path: Path) -> None:
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
    assert done.out.endswith(f"would fix 2 issues in 1 file; {HELD_BACK} shows it\n")
    unsafe = cli("check", "--diff", "--unsafe-fixes", str(path))
    assert unsafe.code == 1
    assert "\n-  rollout_max_steps: 010\n" in unsafe.out
    assert "\n+  rollout_max_steps: 8\n" in unsafe.out
    assert unsafe.out.endswith("would fix 3 issues in 1 file\n")
    assert path.read_text(encoding="utf-8") == BROKEN and path.stat().st_mtime_ns == before
    path.write_text(SAFE_FIXED, encoding="utf-8")
    held = cli("check", "--diff", str(path))  # nothing safe left: no change, exit 0
    assert (held.code, held.out) == (0, f"would fix 0 issues in 0 files; {HELD_BACK} shows it\n")
    path.write_text(FIXED, encoding="utf-8")
    clean = cli("check", "--diff", "--unsafe-fixes", str(path))
    assert (clean.code, clean.out) == (0, "would fix 0 issues in 0 files\n")


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
