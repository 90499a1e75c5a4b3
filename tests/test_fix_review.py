"""Defects a hostile review of ``check`` and ``--fix`` found (issue 44), each held here.

YAML cases run with both of PyYAML's parsers (the C one where it is present,
and the pure-Python one, forced by ``AGENT_ROLLOUT_PURE_YAML=1``): positions
and verdicts must not depend on which read the text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_rollout.config import (
    ConfigError,
    RolloutSettings,
    check_bytes,
    fix_text,
    issue_fixes,
    load_config_bytes,
    read_config_bytes,
)
from support import Cli

RULER = "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n"
OPENENV = "training:\n  rollout_backend: openenv\n  rollout_func: m:f\n"


@pytest.fixture(params=["libyaml", "pure"], autouse=True)
def yaml_parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AGENT_ROLLOUT_PURE_YAML", "1" if request.param == "pure" else "0")
    yield request.param


# ---------------------------------------------------------------- 1: anchors, tags, aliases


def test_a_fix_of_an_anchored_scalar_keeps_the_anchor() -> None:
    text = RULER + "  rollout_judge_model: &J yes\n"
    result = check_bytes(text)
    [warning] = result.warnings
    assert (warning.line, warning.col, warning.end_col) == (4, 27, 30)  # at 'yes', not '&J'
    done = fix_text(text)
    assert done.text == RULER + '  rollout_judge_model: &J "yes"\n'
    assert done.result.settings is not None
    assert done.result.settings.rollout_judge_model == "yes"


def test_a_safe_fix_never_changes_what_an_alias_of_the_anchor_reads() -> None:
    text = "x: &V yes\ny: *V\n" + RULER + "  rollout_judge_model: &J yes\nz: *J\n"
    result = check_bytes(text)
    [fix] = issue_fixes(text, result)
    assert fix.applicability == "unsafe"  # 'z' reads True now; "yes" would change it
    assert fix_text(text).text == text


def test_an_alias_value_is_placed_at_the_alias_and_gets_no_fix() -> None:
    text = "x: &V yes\n" + RULER + "  rollout_judge_model: *V\n"
    result = check_bytes(text)
    assert {(i.line, i.col) for i in [*result.issues, *result.warnings]} == {(5, 24)}
    assert issue_fixes(text, result) == []
    done = fix_text(text)
    assert done.text == text and not done.changed


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("&B Nemo-Gym", "&B nemo_gym"),  # the backend's name after the anchor
        ("!!str Nemo-Gym", "!!str nemo_gym"),
    ],
)
def test_a_backend_spelling_fix_keeps_anchor_and_tag(value: str, want: str) -> None:
    text = f"training:\n  rollout_backend: {value}\n  rollout_func: m:f\n"
    assert fix_text(text).text == f"training:\n  rollout_backend: {want}\n  rollout_func: m:f\n"


def test_a_quoted_number_fix_keeps_an_anchor_and_leaves_a_tagged_string() -> None:
    anchored = OPENENV + '  rollout_max_steps: &n "10"\n'
    assert fix_text(anchored).text == OPENENV + "  rollout_max_steps: &n 10\n"
    tagged = OPENENV + '  rollout_max_steps: !!str "10"\n'
    assert issue_fixes(tagged, check_bytes(tagged)) == []  # unquoted it is still a string


def test_a_backend_given_by_alias_gets_no_fix() -> None:
    text = "b: &B Nemo-Gym\ntraining:\n  rollout_backend: *B\n  rollout_func: m:f\n"
    result = check_bytes(text)
    assert issue_fixes(text, result) == []


# ---------------------------------------------------------------- 2: odd tagged scalars


@pytest.mark.parametrize(
    "value",
    [
        "!!int",
        "!!float",
        "!!int _",
        '!!float "_"',
        "!!int -",
        '!!int "0b"',
        "!!timestamp x",
        "!!timestamp 2020-13-45",
        '!!timestamp "2020-01-01 10:00:00 +99:99"',
        "!!bool x",
        "!!float .",
    ],
)
@pytest.mark.parametrize("yaml_version", ["1.1", "1.2"])
def test_an_odd_tagged_scalar_is_a_value_issue(value: str, yaml_version: str) -> None:
    text = OPENENV + f"  rollout_max_steps: {value}\n"
    result = check_bytes(text, yaml_version=yaml_version)  # never raises
    [issue] = result.issues
    assert issue.line == 4 and issue.col >= 22
    with pytest.raises(ConfigError):
        load_config_bytes(text, yaml_version=yaml_version)


def test_check_reports_an_empty_int_and_exits_1(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(OPENENV + "  rollout_max_steps: !!int\n", encoding="utf-8")
    done = cli("check", str(path))
    assert done.code == 1, done.err
    assert f"{path}:4:22: training.rollout_max_steps: bad int '': not a YAML int" in done.out


def test_an_empty_int_is_named_and_placed_at_its_tag() -> None:
    [issue] = check_bytes(OPENENV + "  rollout_max_steps: !!int\n").issues
    assert (issue.line, issue.col, issue.location) == (4, 22, "training.rollout_max_steps")
    assert issue.message == "bad int '': not a YAML int"


# ---------------------------------------------------------------- 7: a bad scalar's location


def test_a_too_long_int_is_named_as_other_value_issues_are() -> None:
    text = OPENENV + "  rollout_max_steps: " + "9" * 5000 + "\n"
    [issue] = check_bytes(text).issues
    assert issue.location == "training.rollout_max_steps"
    assert "Exceeds the limit" in issue.message
    assert issue.format().startswith("<stdin>:4:22: training.rollout_max_steps: bad int")


# ---------------------------------------------------------------- 4, 7: a look-alike given twice


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        (
            "json",
            '{"training": {"rollout_backend": "openenv", "rollout_func": "m:f", '
            '"rolout_max_steps": "5", "rolout_max_steps": 6}}',
        ),
        ("yaml", OPENENV + "  rolout_max_steps: '5'\n  rolout_max_steps: 6\n"),
    ],
)
def test_a_look_alike_given_twice_is_not_renamed(fmt: str, text: str) -> None:
    done = fix_text(text, format=fmt)
    assert not done.changed  # renamed, the dead "5" would be read
    [issue] = done.result.issues
    assert issue.kind == "duplicate"


def test_a_look_alike_given_twice_is_one_issue_at_its_place() -> None:
    text = "training:\n  rollout_func: m:f\n  rolout_backend: art\n  rolout_backend: art\n"
    issues = check_bytes(text).issues
    assert [(i.line, i.col, i.kind) for i in issues] == [(4, 3, "duplicate")]
    with pytest.raises(ConfigError) as raised:
        read_config_bytes(text).validate(RolloutSettings, under="training")
    assert [(i.line, i.col, i.kind) for i in raised.value.issues] == [(4, 3, "duplicate")]


# ---------------------------------------------------------------- 5: a rename keeps the value


def test_a_renamed_key_whose_value_is_bad_is_reported_after_the_fix(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(OPENENV + "  rolout_max_steps: 0\n", encoding="utf-8")
    done = cli("check", "--fix", str(path))
    assert path.read_text(encoding="utf-8") == OPENENV + "  rollout_max_steps: 0\n"
    assert done.code == 1
    assert f"{path}:4:22: training.rollout_max_steps: rollout_max_steps must be in" in done.out


# ---------------------------------------------------------------- 3: environment variables


ENV_FILES = {
    "ci.yml": (
        "name: ci\non: [push]\nenv:\n  ROLLOUT_BACKEND: openenv\njobs:\n  t:\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n"
    ),
    "compose.yaml": (
        "x-env: &env\n  ROLLOUT_BACKEND: openenv\n  ROLLOUT_FUNC: m:f\n"
        "services:\n  app:\n    image: app\n    environment: *env\n"
    ),
    "launch.json": (
        '{\n  // debug\n  "configurations": [\n'
        '    {"name": "t", "env": {"ROLLOUT_BACKEND": "openenv"}}\n  ]\n}\n'
    ),
    "devcontainer.json": '{\n  "containerEnv": {"ROLLOUT_BACKEND": "openenv",},\n}\n',
    "flat.json": '{"ROLLOUT_BACKEND": "openenv", "ROLOUT_FUNC": "m:f"}\n',
}


@pytest.mark.parametrize("name", sorted(ENV_FILES))
def test_environment_variable_names_make_no_file_ours(name: str) -> None:
    fmt = "json" if name.endswith(".json") else "yaml"
    assert check_bytes(ENV_FILES[name], format=fmt, skip_unrelated=True).skipped


def test_a_config_with_a_mis_cased_key_is_still_ours() -> None:
    text = "training:\n  Rollout_Backend: openenv\n  rollout_func: m:f\n"
    result = check_bytes(text, skip_unrelated=True)
    assert not result.skipped
    assert [i.kind for i in result.issues] == ["unknown_key"]
    # A name in capitals in a file that is ours is still a look-alike of our key.
    text = "training:\n  ROLLOUT_BACKEND: openenv\n  rollout_func: m:f\n"
    result = check_bytes(text, skip_unrelated=True)
    assert [(i.location, i.kind) for i in result.issues] == [
        ("training.ROLLOUT_BACKEND", "unknown_key")
    ]


def test_check_skips_a_workflow_and_a_launch_json(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "ci.yml").write_text(ENV_FILES["ci.yml"], encoding="utf-8")
    (tmp_path / "launch.json").write_text(ENV_FILES["launch.json"], encoding="utf-8")
    done = cli("check", "--skip-unrelated", str(tmp_path / "ci.yml"), str(tmp_path / "launch.json"))
    assert done.code == 0, done.out
    assert "2 skipped (not training configs)" in done.out + done.err


# ---------------------------------------------------------------- 6: comments in JSON


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ('{\n  // c\n  "training": {}\n}\n', (2, 3)),
        ('{\n  "name": "dev", // comment\n  "x": 1\n}\n', (2, 18)),
        ('{"a": 1 /* c */}\n', (1, 9)),
        ("[1,\n /* c */ 2]\n", (2, 2)),
    ],
)
def test_a_comment_in_json_is_the_error_where_json_loads_finds_it(
    text: str, pos: tuple[int, int]
) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(text)
    assert (raised.value.lineno, raised.value.colno) == pos
    [issue] = check_bytes(text, format="json").issues
    assert (issue.line, issue.col) == pos
    assert issue.message.endswith("(found a comment: JSON has none)")
