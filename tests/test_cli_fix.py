"""``agent-rollout check --fix`` and ``--diff``: the config layer's fixes, applied to files."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support import Cli

BROKEN = (
    "# GRPO run\n"
    "training:\n"
    "  epochs: 1   # the trainer's own key\n"
    "  rollout_backend: Open-Env\n"
    "  rollout_fucn: pkg.mod:play\n"
    "  rollout_max_steps: 010\n"
)
FIXED = BROKEN.replace("Open-Env", "openenv").replace("fucn", "func").replace("010", "8")


def test_fix_rewrites_the_file_and_reports_each_fix(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    done = cli("check", "--fix", str(path))
    assert done.code == 0, done.out
    assert path.read_text(encoding="utf-8") == FIXED
    lines = done.out.splitlines()
    assert lines[0] == (
        f"{path}:4:20: fixed: training.rollout_backend: "
        "Change rollout_backend 'Open-Env' to 'openenv'"
    )
    assert lines[1].startswith(f"{path}:5:3: fixed: training.rollout_fucn: Rename")
    assert lines[-2:] == [
        "fixed 3 issues in 1 file",
        "checked 1 file: 1 valid, 0 invalid, 0 errors",
    ]
    assert [name for name in os.listdir(tmp_path)] == ["c.yaml"]  # no temporary left


def test_fix_reports_what_remains_and_fails_on_it(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BROKEN + "  rollout_judge_model: j\n", encoding="utf-8")
    done = cli("check", "--fix", "--format", "json", str(path))
    assert done.code == 1
    report = json.loads(done.out)
    entry = report["files"][0]
    assert [fix["location"] for fix in entry["fixed"]] == [
        "training.rollout_backend",
        "training.rollout_fucn",
        "training.rollout_max_steps",
    ]
    assert [error["kind"] for error in entry["errors"]] == ["cross_field"]


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
    assert done.out.endswith("would fix 3 issues in 1 file\n")
    path.write_text(FIXED, encoding="utf-8")
    clean = cli("check", "--diff", str(path))
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
    assert cli("check", "--fix", str(link)).code == 0
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
