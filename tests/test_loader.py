"""load_config: YAML, JSON and TOML files, positioned errors, hostile files."""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout.config import (
    MAX_CONFIG_BYTES,
    MAX_NESTING_DEPTH,
    MAX_YAML_EXPANDED_NODES,
    ROLLOUT_KEYS,
    ConfigError,
    ConfigIssue,
    RolloutSettings,
    check_bytes,
    check_file,
    load_config,
    load_config_bytes,
)
from support import facts


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def issues_of(path: Path, **kwargs: object) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == "\n".join(issue.format() for issue in caught.value.issues)
    return caught.value.issues


def lines_of(path: Path, **kwargs: object) -> list[str]:
    return [issue.format() for issue in issues_of(path, **kwargs)]


# ------------------------------------------------------------ valid files


def test_yaml_json_toml_load_the_same_settings(tmp_path: Path) -> None:
    yaml_file = write(
        tmp_path,
        "c.yaml",
        "model: m\ntraining:\n  lr: 1.0e-5\n  rollout_backend: OpenEnv\n"
        "  rollout_func: 'pkg.mod:fn'\n  rollout_max_steps: 8\n",
    )
    json_file = write(
        tmp_path,
        "c.json",
        '{"model": "m", "training": {"lr": 1e-5, "rollout_backend": "OpenEnv",'
        ' "rollout_func": "pkg.mod:fn", "rollout_max_steps": 8}}',
    )
    toml_file = write(
        tmp_path,
        "c.toml",
        'model = "m"\n[training]\nlr = 1e-5\nrollout_backend = "OpenEnv"\n'
        'rollout_func = "pkg.mod:fn"\nrollout_max_steps = 8\n',
    )
    loaded = [load_config(path) for path in (yaml_file, json_file, toml_file)]
    assert loaded[0] == loaded[1] == loaded[2]
    assert loaded[0].rollout_backend == "openenv"
    assert loaded[0].rollout_max_steps == 8


def test_section_none_reads_the_top_level_and_other_sections(tmp_path: Path) -> None:
    flat = write(tmp_path, "flat.yml", "rollout_backend: nemo_gym\nepochs: 3\n")
    assert load_config(flat, section=None).rollout_backend == "nemo_gym"
    other = write(tmp_path, "o.yaml", "rl:\n  rollout_backend: nemo_gym\n")
    assert load_config(other, section="rl").rollout_backend == "nemo_gym"


def test_the_default_reads_training_else_a_flat_top_level(tmp_path: Path) -> None:
    from agent_rollout.config import AUTO_SECTION, check_bytes, fix_text, load_config_bytes

    flat = write(tmp_path, "flat.yml", "rollout_backend: nemo_gym\nepochs: 3\n")
    assert load_config(flat).rollout_backend == "nemo_gym"  # TRL/axolotl: keys at the top
    assert load_config(flat, section=AUTO_SECTION).rollout_backend == "nemo_gym"
    with pytest.raises(ConfigError, match="section 'training' is missing"):
        load_config(flat, section="training")  # named: the only place looked at
    both = "rollout_backend: verl\ntraining:\n  rollout_backend: nemo_gym\n"
    assert load_config_bytes(both).rollout_backend == "nemo_gym"  # training wins
    assert check_bytes(both).section == ("training",)
    assert check_bytes("lr: 1\nrollout_backend: art\nrollout_func: m:f\n").section == ()
    assert check_bytes("a:\n  rollout_backend: art\n", section="a").section == ("a",)
    nothing = check_bytes("lr: 1\n")
    assert nothing.section is None
    [issue] = nothing.issues
    assert (issue.line, issue.col, issue.location, issue.kind) == (1, 1, "", "missing")
    assert "looked for a 'training' section, then rollout keys at the top level" in issue.message
    assert "--section" in issue.message
    # A trainer's own rollout_* key does not make a flat config of ours (OpenRLHF's).
    assert check_bytes("rollout_batch_size: 8\nlr: 1\n").section is None
    # A look-alike at the top level makes it a flat config too: the typo is named, and fixed.
    typo = check_bytes("lr: 1\nrollout_backnd: nemo_gym\n")
    assert typo.section == () and typo.issues[0].kind == "unknown_key"
    fixed = fix_text("lr: 1\nrollout_backnd: nemo_gym\n")
    assert fixed.text == "lr: 1\nrollout_backend: nemo_gym\n" and fixed.result.settings


def test_a_training_mapping_without_our_keys_leaves_a_flat_top_level_read() -> None:
    """A ``training`` mapping of the trainer's own (none of our keys by name) does not hide
    our keys at the top level: check reads them, as ``run`` (``load_config``) does."""
    from agent_rollout.config import check_bytes, load_config_bytes

    text = "training:\n  epochs: 3\nrollout_backend: openenv\nrollout_func: mypkg.good:run\n"
    assert check_bytes(text).section == ()
    settings = load_config_bytes(text)
    assert (settings.rollout_backend, settings.rollout_func) == ("openenv", "mypkg.good:run")
    bogus = check_bytes("training:\n  epochs: 3\nrollout_backend: bogus\n")
    [issue] = bogus.issues
    assert (issue.line, issue.location, issue.kind) == (3, "rollout_backend", "value")
    # The training mapping stays the place when it holds one of ours, or the top level none
    # (a look-alike at the top level chooses nothing).
    for kept in (
        "training:\n  rollout_backend: art\nrollout_func: m:f\n",
        "training:\n  epochs: 3\nlr: 1\n",
        "training:\n  epochs: 3\nrollout_backnd: art\n",
    ):
        assert check_bytes(kept).section == ("training",), kept


def test_the_settings_hint_names_only_a_section_that_reads_back() -> None:
    """The "holds rollout keys" hint names a ``--section`` that finds the keys: never a
    path with a dotted key below the top level, nor one a dotted top-level key shadows."""
    from agent_rollout.config import check_bytes

    def hint(text: str) -> str:
        [issue] = check_bytes(text).issues
        return issue.message

    nested_dot = "trainer:\n  a.b:\n    rollout_backend: bogus\n"
    assert "holds rollout keys" not in hint(nested_dot)
    assert "name the section that holds them with --section" in hint(nested_dot)
    shadowed = "a.b: 1\na:\n  b:\n    rollout_backend: art\n"
    assert "holds rollout keys" not in hint(shadowed)
    # A later mapping that can be named is named; a dotted top-level key reads back whole.
    later = nested_dot + "rl:\n  rollout_backend: art\n"
    assert hint(later).endswith("'rl' holds rollout keys: --section rl")
    assert check_bytes(later, section="rl").settings is not None
    top = "a.b:\n  rollout_backend: art\n"
    assert hint(top).endswith("'a.b' holds rollout keys: --section a.b")
    assert check_bytes(top, section="a.b").settings is not None


def test_yaml_is_read_as_yaml_safe_load_reads_it(tmp_path: Path) -> None:
    # The trainers' reading (PyYAML, YAML 1.1): 010 is 8, 1_000 is 1000, 1:30 is 90,
    # yes is True; a YAML 1.2 loader reads 10, '1_000', '1:30' and 'yes'.
    text = (
        "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n  rollout_judge_model: j\n"
        "  rollout_max_steps: {steps}\n"
    )
    for written, value in (("010", 8), ("1_000", 1000), ("1:30", 90), ("0x10", 16), ("64", 64)):
        path = write(tmp_path, "c.yaml", text.format(steps=written))
        assert load_config(path).rollout_max_steps == value, written
        assert yaml.safe_load(path.read_text())["training"]["rollout_max_steps"] == value
    path = write(tmp_path, "c.yaml", text.format(steps="0o10"))
    assert [i.message for i in issues_of(path)] == [
        "rollout_max_steps must be an int, got str '0o10'"
    ]
    yes = write(tmp_path, "y.yaml", text.format(steps=8).replace("model: j", "model: yes"))
    assert [i.message for i in issues_of(yes)] == ["rollout_judge_model must be a string, got bool"]


def test_yaml_version_1_2_reads_the_core_schema(tmp_path: Path) -> None:
    # For a host whose YAML loader reads YAML 1.2 (the editors' reading).
    path = write(
        tmp_path,
        "c.yaml",
        "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n  rollout_judge_model: yes\n"
        "  rollout_max_steps: 0o10\n",
    )
    settings = load_config(path, yaml_version="1.2")
    assert (settings.rollout_judge_model, settings.rollout_max_steps) == ("yes", 8)
    assert check_file(path, yaml_version="1.2").settings == settings
    assert load_config_bytes(path.read_text(), yaml_version="1.2") == settings
    for reading, steps in (("1.1", 10), ("1.2", 10)):
        assert (
            load_config_bytes(
                "training: {rollout_backend: nemo_gym, rollout_max_steps: 10}", yaml_version=reading
            ).rollout_max_steps
            == steps
        )
    assert (
        load_config_bytes(
            "training: {rollout_backend: nemo_gym, rollout_max_steps: 010}", yaml_version="1.2"
        ).rollout_max_steps
        == 10
    )
    with pytest.raises(ConfigError, match="must be an int, got str '1_000'"):
        load_config_bytes(
            "training: {rollout_backend: nemo_gym, rollout_max_steps: 1_000}", yaml_version="1.2"
        )
    with pytest.raises(ValueError, match=r"yaml_version must be one of 1\.1, 1\.2, got '1\.3'"):
        load_config(path, yaml_version="1.3")


def test_yaml_1_1_and_1_2_differences_on_our_keys_are_warnings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        "training:\n"
        "  rollout_backend: nemo_gym\n"
        "  rollout_max_steps: 010\n"
        "  rollout_gym_config: '010'\n"
        "  rollout_policy_model: 2001-12-14\n"
        "  rollout_policy_base_url: http://h:1/v1\n"
        "  rollout_batch_size: 1e3\n"
        "  epochs: 010\n",
    )
    for reading in ("1.1", "1.2"):
        result = check_file(path, yaml_version=reading)
        found = [(w.line, w.col, w.location, w.kind, w.severity) for w in result.warnings]
        assert found == [
            (3, 22, "training.rollout_max_steps", "yaml_version", "warning"),
            (5, 25, "training.rollout_policy_model", "yaml_version", "warning"),
            (7, 23, "training.rollout_batch_size", "yaml_version", "warning"),
        ], reading
    first = check_file(path).warnings[0]
    assert first.message == (
        "'010' reads as int 8 under YAML 1.1 (yaml.safe_load, as trainers read it) and as "
        "int 10 under YAML 1.2 (YAML editors and 1.2 loaders); quote it, or write it so "
        "that both read it alike"
    )
    assert "reads as date datetime.date(2001, 12, 14) under YAML 1.1" in (
        check_file(path).warnings[1].message
    )
    assert "and as str '2001-12-14' under YAML 1.2" in check_file(path).warnings[1].message
    # JSON and TOML have one reading: no such warning.
    assert check_bytes('{"training": {"rollout_max_steps": 8}}', format="json").warnings == []


def test_yaml_merge_keys_and_anchors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        "base: &base\n  rollout_backend: openenv\n  rollout_func: m:f\n"
        "training:\n  <<: *base\n  rollout_max_steps: 3\n",
    )
    settings = load_config(path)
    assert (settings.rollout_backend, settings.rollout_max_steps) == ("openenv", 3)


def test_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"\xef\xbb\xbftraining:\n  rollout_backend: art\n  rollout_func: m:f\n")
    assert load_config(path).rollout_backend == "art"


# ------------------------------------------------------------ positioned errors


def test_every_error_is_positioned_and_all_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "grpo.yaml",
        "model: m\n"
        "training:\n"
        "  lr: 3\n"
        "  rollout_backend: verl\n"
        "  rollout_fucn: m:f\n"
        "  rollout_max_steps: 0\n",
    )
    assert lines_of(path) == [
        f"{path}:4:20: training.rollout_backend: rollout_backend='verl' is not supported; "
        "valid: art, nemo_gym, openenv, ruler",
        f"{path}:5:3: training.rollout_fucn: unknown key 'rollout_fucn'; "
        "did you mean 'rollout_func'?",
        f"{path}:6:22: training.rollout_max_steps: rollout_max_steps must be in [1, 100000], got 0",
    ]


def test_cross_rules_point_at_the_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        "x: 1\ntraining:\n  rollout_backend: openenv\n  rollout_source: d.jsonl\n",
    )
    issues = issues_of(path)
    assert [(i.line, i.col, i.location, i.kind) for i in issues] == [
        (4, 3, "training.rollout_source", "cross_field"),
    ]
    assert "rollout_source needs rollout_backend 'art' or 'nemo_gym'" in issues[0].message


def test_warnings_point_at_the_section_and_do_not_fail(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "x: 1\ntraining:\n  rollout_backend: ruler\n")
    result = check_file(path)
    assert result.issues == []
    assert result.settings is not None and len(result.settings.rollout_warnings) == 2
    assert [(w.line, w.col, w.location, w.kind, w.severity) for w in result.warnings] == [
        (2, 1, "training.rollout_func", "incomplete", "warning"),
        (2, 1, "training.rollout_judge_model", "incomplete", "warning"),
    ]
    assert result.warnings[1].format() == (
        f"{path}:2:1: warning: training.rollout_judge_model: rollout_judge_model is not set: "
        "the built-in 'ruler' adapter needs it (a runner registered with "
        "register_rollout_runner may not)"
    )
    assert load_config(path).rollout_warnings == result.settings.rollout_warnings
    # Warnings are listed next to errors too.
    bad = write(tmp_path, "b.yaml", "training:\n  rollout_backend: art\n  rollout_max_steps: 0\n")
    result = check_file(bad)
    assert [i.kind for i in result.issues] == ["value"]
    assert [w.kind for w in result.warnings] == ["incomplete"]


def test_json_positions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.json",
        '{\n  "training": {\n    "rollout_backend": "art",\n    "rollout_max_steps": true\n  }\n}',
    )
    assert lines_of(path) == [
        f"{path}:4:26: training.rollout_max_steps: rollout_max_steps must be an int, got bool True",
    ]


def test_toml_positions_tables_dotted_keys_and_multiline_strings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.toml",
        'notes = """\nrollout_backend = "fake"\n"""\n'
        "[training]\n"
        'rollout_backend = "art"\n'
        "rollout_max_steps = 1.5\n"
        "list = [\n  1,\n  2,\n]\n"
        'rollout_fnuc = "x"\n',
    )
    assert [(i.line, i.col, i.location) for i in issues_of(path)] == [
        (6, 21, "training.rollout_max_steps"),
        (11, 1, "training.rollout_fnuc"),
    ]
    dotted = write(tmp_path, "d.toml", 'a = 1\ntraining.rollout_backend = "nope"\n')
    assert [(i.line, i.col) for i in issues_of(dotted)] == [(2, 28)]


def test_toml_inline_table_keys_are_placed_at_their_own(tmp_path: Path) -> None:
    path = write(tmp_path, "c.toml", 'x = 1\ntraining = { rollout_backend = "nope" }\n')
    assert [(i.line, i.col) for i in issues_of(path)] == [(2, 32)]  # the value, not `training`


# ------------------------------------------------------------ bad files


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("c.yaml", "training: [1\n", ":1:11: invalid YAML: expected ',' or ']', but got"),
        ("c.yaml", "a: 1\n---\nb: 2\n", ":2:1: expected a single YAML document"),
        ("c.toml", "[training]\nx = \n", ":2:5: invalid TOML: Invalid value"),
        ("c.yaml", "- 1\n- 2\n", ":1:1: the file must hold a mapping of settings, got list"),
        ("c.yaml", "", ":1:1: the file must hold a mapping of settings, got an empty file"),
        ("c.json", "[]", ":1:1: the file must hold a mapping of settings, got list"),
        ("c.yaml", "model: m\n", ":1:1: no rollout settings found: looked for a 'training' sec"),
        ("c.yaml", "training:\n", ":1:10: training: section must be a mapping, got null"),
        ("c.yaml", "training: 3\n", ":1:11: training: section must be a mapping, got int"),
        ("c.yaml", "x: !!python/object:os.system {}\n", ":1:4: unsupported YAML tag"),
        ("c.yaml", "x: !!python/tuple [1]\n", ":1:4: unsupported YAML tag"),
        ("c.yaml", "a: &x 1\nb: &x 2\n", ":2:4: invalid YAML: found duplicate anchor 'x'"),
        ("c.yaml", "x: =\n", ":1:4: unsupported YAML tag 'tag:yaml.org,2002:value'"),
        ("c.yaml", "x: !!int abc\n", ":1:10: x: bad int 'abc': invalid literal"),
        ("c.yaml", "x: !!bool maybe\n", ":1:11: x: 'maybe' is not a YAML bool"),
        ("c.yaml", "x: a\x01\n", ":1:5: invalid YAML: unacceptable character #x0001"),
        ("c.yaml", "x: {<<: 3}\n", ":1:9: a '<<' merge takes a mapping or a list of them"),
        ("c.yaml", "x: !custom 1\n", ":1:4: unsupported YAML tag '!custom'"),
        ("c.yaml", "x: &a [*a]\n", ":1:8: alias *a names no complete anchor"),
        ("c.yaml", "x: *nope\n", ":1:4: alias *nope names no complete anchor"),
        ("c.yaml", "? [1]\n: 2\n", ":1:3: mapping keys must be scalars"),
        ("c.ini", "a=1", ":1:1: unsupported file type .ini"),
        ("c.json", '{"a": ' + "1" * 5000 + "}", ":1:7: invalid JSON: "),
        ("c.toml", "a = " + "1" * 5000, ":1:5: invalid TOML: "),
        ("c.yaml", "a: " + "1" * 5000, ":1:4: a: bad int '1111"),
    ],
)
def test_bad_files_give_one_clear_positioned_error(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = write(tmp_path, name, text)
    lines = lines_of(path)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}{expected}"), lines[0]


def test_json_syntax_errors_carry_the_interpreters_reason(tmp_path: Path) -> None:
    # The reason is json's own (its wording changed in 3.13): ours is the
    # position and the prefix, so compare with what this interpreter says.
    text = '{"training": {"a": 1,}}'
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        reason = exc.msg
    path = write(tmp_path, "c.json", text)
    # At the trailing comma, the cause (3.13 places it there, 3.10-3.12 just after it).
    assert lines_of(path) == [f"{path}:1:21: invalid JSON: {reason}"]


def test_duplicate_keys_report_both_lines(tmp_path: Path) -> None:
    yaml_file = write(
        tmp_path,
        "c.yaml",
        "training:\n  rollout_backend: art\n  rollout_func: m:f\n  rollout_backend: openenv\n",
    )
    assert lines_of(yaml_file) == [
        f"{yaml_file}:4:3: training.rollout_backend: duplicate key 'rollout_backend' "
        "(first at line 2, column 3); YAML would silently keep this one"
    ]
    json_file = write(
        tmp_path, "c.json", '{"training": {},\n "x": [{"k": 1,\n  "k": 2}],\n "training": {}}'
    )
    # The section given twice is ours (the first one is lost); a key of the trainer's
    # given twice is a warning, for lint.
    assert [(i.line, i.col, i.location, i.kind) for i in issues_of(json_file)] == [
        (4, 2, "training", "duplicate"),
    ]
    assert [
        (i.line, i.col, i.location, i.kind, i.severity) for i in check_file(json_file).warnings
    ] == [
        (3, 3, "x[0].k", "duplicate", "warning"),
    ]
    nested = write(tmp_path, "n.yaml", "training: {}\nx:\n  - {k: 1,\n     k: 2}\n")
    assert load_config(nested) == RolloutSettings()
    assert [(i.line, i.col, i.location, i.kind) for i in check_file(nested).warnings] == [
        (4, 6, "x[0].k", "duplicate"),
    ]


def test_non_utf8_and_unreadable_and_too_big(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_bytes(b"training:\n  rollout_backend: \xff\n")
    assert lines_of(bad) == [f"{bad}:2:20: not UTF-8: byte 0xff"]
    directory = tmp_path / "dir.yaml"
    directory.mkdir()
    assert lines_of(directory)[0].startswith(f"{directory}:1:1: cannot read file: ")
    missing = tmp_path / "missing.json"
    assert lines_of(missing) == [f"{missing}:1:1: cannot read file: No such file or directory"]
    assert issues_of(missing)[0].kind == "unreadable"
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    assert lines_of(big) == [
        f"{big}:1:1: larger than the {MAX_CONFIG_BYTES:,}-byte limit "
        f"({MAX_CONFIG_BYTES + 1:,} bytes)"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)  # no writer ever opens it: reading would block forever
    started = time.perf_counter()
    issues = issues_of(fifo)
    assert time.perf_counter() - started < 1.0
    assert [(issue.format(), issue.kind) for issue in issues] == [
        (f"{fifo}:1:1: cannot read file: it is a FIFO, not a regular file", "unreadable")
    ]


def test_a_device_is_refused(tmp_path: Path) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    assert lines_of(link) == [
        f"{link}:1:1: cannot read file: it is a character device, not a regular file"
    ]


def test_a_big_flow_sequence_is_refused_by_size_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "flow.yaml"
    big.write_text("x: [" + "1," * 1_900_000 + "1]\n")  # 3.8 MB, the size that took 10 s
    started = time.perf_counter()
    issues = issues_of(big)
    assert time.perf_counter() - started < 0.5
    assert "-byte limit" in issues[0].message


def test_relative_rollout_source_is_read_beside_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    path = write(
        configs, "c.yaml", "training: {rollout_backend: nemo_gym, rollout_source: data/t.jsonl}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_config(path).rollout_source == str(configs / "data" / "t.jsonl")
    assert load_config(os.path.relpath(path)).rollout_source == str(configs / "data" / "t.jsonl")
    absolute = write(
        configs, "a.yaml", "training: {rollout_backend: nemo_gym, rollout_source: /srv/t.jsonl}\n"
    )
    assert load_config(absolute).rollout_source == "/srv/t.jsonl"
    # Text without a file: relative to the current directory, left as written.
    text = "training: {rollout_backend: nemo_gym, rollout_source: data/t.jsonl}"
    assert load_config_bytes(text).rollout_source == "data/t.jsonl"


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("training: {rollout_backend: art, rollout_func: 'm:f', bomb: *a8}")
    path = write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    started = time.perf_counter()
    issues = issues_of(path)
    assert time.perf_counter() - started < 2.0
    assert len(issues) == 1
    assert f"expands to more than {MAX_YAML_EXPANDED_NODES:,} values" in issues[0].message


def test_aliases_under_the_limit_are_fine(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.yaml",
        "a: &a [1, 2, 3]\nb: [*a, *a, *a]\ntraining: {rollout_backend: nemo_gym, x: *a}\n",
    )
    assert load_config(path).rollout_backend == "nemo_gym"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "x: " + "[" * 100_000),
        ("deep.json", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        (
            "deep2.json",
            '{"x": ' + "[" * (MAX_NESTING_DEPTH + 5) + "]" * (MAX_NESTING_DEPTH + 5) + "}",
        ),
        ("deep.toml", "x = " + "[" * 1000 + "]" * 1000 + "\n"),
        ("deep2.toml", "x = " + "{a = " * 1000 + "1" + "}" * 1000 + "\n"),
        ("deep3.toml", "x = " + "[" * 400 + "]" * 400 + "\n"),
        ("deep4.toml", "[training]\n" + ".".join(["a"] * 400) + " = 1\n"),
        ("deep5.toml", "[[x]]\n" + "y = " + "[" * 400 + "]" * 400 + "\n"),
    ],
)
def test_deep_nesting_is_refused_without_crashing(tmp_path: Path, name: str, text: str) -> None:
    issues = issues_of(write(tmp_path, name, text))
    assert len(issues) == 1
    assert f"nested deeper than {MAX_NESTING_DEPTH} levels" in issues[0].message
    assert issues[0].line >= 1 and issues[0].col >= 1


def _nested(fmt: str, levels: int) -> str:
    """A config whose deepest list is at nesting level ``levels`` (the root is 1)."""
    inner = levels - 2  # the root and the training section
    if fmt == "yaml":
        return "training:\n  rollout_backend: nemo_gym\n  x: " + "[" * inner + "]" * inner + "\n"
    if fmt == "json":
        return (
            '{"training": {"rollout_backend": "nemo_gym", "x": ' + "[" * inner + "]" * inner + "}}"
        )
    return "[training]\nrollout_backend = 'nemo_gym'\nx = " + "[" * inner + "]" * inner + "\n"


@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
def test_one_nesting_limit_for_every_format(fmt: str) -> None:
    assert load_config_bytes(_nested(fmt, MAX_NESTING_DEPTH), format=fmt).rollout_backend
    with pytest.raises(ConfigError) as caught:
        load_config_bytes(_nested(fmt, MAX_NESTING_DEPTH + 1), format=fmt)
    [issue] = caught.value.issues
    assert issue.message == f"nested deeper than {MAX_NESTING_DEPTH} levels"
    assert issue.line == (1 if fmt == "json" else 3)


def test_stacked_aliases_count_as_nesting() -> None:
    lines = ["a0: &a0 [1]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 1500)]
    lines.append("training: {rollout_backend: nemo_gym, rollout_max_steps: *a1499}")
    with pytest.raises(ConfigError) as caught:
        load_config_bytes("\n".join(lines))
    [issue] = caught.value.issues
    assert issue.message.startswith(f"nested deeper than {MAX_NESTING_DEPTH} levels")
    assert (issue.line, issue.col) == (MAX_NESTING_DEPTH + 1, 7)


def test_huge_integers_are_described_not_printed() -> None:
    huge = "0x" + "f" * 4000  # hex is exempt from the digit limit: a 16000-bit int
    with pytest.raises(ConfigError) as caught:
        load_config_bytes(
            f"training:\n  rollout_backend: nemo_gym\n  rollout_max_steps: {huge}\n"
            f"  rollout_group_size: [{huge}]\n  ? {huge}\n  : 1\n  ? {huge}\n  : 2\n"
        )
    text = str(caught.value)
    assert "<int of 16000 bits>" in text
    assert [issue.line for issue in caught.value.issues] == [3, 4, 4]
    assert sys.get_int_max_str_digits() == 0 or "ffff" not in text
    # The key given twice is not one of ours: a warning, described the same way.
    result = check_bytes(f"training:\n  ? {huge}\n  : 1\n  ? {huge}\n  : 2\n")
    assert result.issues == [] and [w.line for w in result.warnings] == [4]
    assert "<int of 16000 bits>" in result.warnings[0].message


def test_load_config_bytes_and_check_file(tmp_path: Path) -> None:
    settings = load_config_bytes(
        '{"training": {"rollout_backend": "nemo_gym"}}', format="json", source="<mem>"
    )
    assert settings.rollout_backend == "nemo_gym"
    with pytest.raises(ConfigError) as caught:
        load_config_bytes(b"training: {rollout_backend: x}", source="<stdin>")
    assert caught.value.issues[0].format().startswith("<stdin>:1:29: training.rollout_backend:")
    with pytest.raises(ValueError, match="format must be one of"):
        load_config_bytes("", format="ini")
    result = check_file(write(tmp_path, "ok.yaml", "training:\n  rollout_func: m:f\n"))
    assert result.settings is None and result.issues[0].kind == "cross_field"
    assert result.key_positions[("training", "rollout_func")] == ((2, 3), (2, 17))


def test_path_like_and_error_records(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "training: {rollout_max_steps: '5 '}\n")
    issue = issues_of(Path(os.fspath(path)))[0]
    assert issue.as_dict() == {
        "path": str(path),
        "line": 1,
        "col": 31,
        "location": "training.rollout_max_steps",
        "message": "rollout_max_steps must be an int, got str '5 '",
        "kind": "value",
        "severity": "error",
        "end_line": 1,
        "end_col": 35,
    }


FRAGMENTS = st.sampled_from(
    [
        "training",
        ":",
        " ",
        "\n",
        "  ",
        "rollout_backend",
        "art",
        "{",
        "}",
        "[",
        "]",
        ",",
        '"',
        "'",
        "&a",
        "*a",
        "<<",
        "!!str",
        "=",
        "#",
        "- ",
        "0x1",
        "1e3",
        "null",
        "\\",
        "\t",
        "rollout_func",
        "m:f",
        ".",
        "---",
        "\x00",
        "é",
        "[[x]]",
        '"""',
    ]
)


@given(st.lists(FRAGMENTS, max_size=30).map("".join), st.sampled_from(["yaml", "json", "toml"]))
def test_any_text_gives_settings_or_config_error(text: str, fmt: str) -> None:
    try:
        load_config_bytes(text, format=fmt)
    except ConfigError as exc:
        assert exc.issues
        assert all(issue.line >= 1 and issue.col >= 1 for issue in exc.issues)


# ------------------------------------------------------------ trainer layouts


LAYOUTS = {
    # soup-cli: a training: section (the default).
    "soup-cli": ("training", "base: m\ntask: grpo\ntraining:\n  epochs: 1\n  {keys}\n"),
    # TRL / Unsloth scripts: flat, at the top level.
    "trl": (None, "model_name_or_path: m\nnum_generations: 8\n{keys}\n"),
    # axolotl: flat too, next to rl: grpo; its own trl.rollout_func is its TRL
    # setting (a dotted path, not ours) and stays untouched.
    "axolotl": (None, "base_model: m\nrl: grpo\ntrl:\n  rollout_func: my_mod.fn\n{keys}\n"),
    # A nested layout, named with a dotted section.
    "nested": ("trainer.rollout", "trainer:\n  lr: 1\n  rollout:\n    {keys}\n"),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_trainer_layout(tmp_path: Path, layout: str) -> None:
    section, template = LAYOUTS[layout]
    indent = {"soup-cli": "\n  ", "nested": "\n    "}.get(layout, "\n")
    keys = indent.join(["rollout_backend: openenv", "rollout_func: m:f"])
    path = write(tmp_path, "c.yaml", template.format(keys=keys))
    settings = load_config(path, section=section)
    assert (settings.rollout_backend, settings.rollout_func) == ("openenv", "m:f")
    if layout != "nested":  # a training section or a flat config: no section to name
        assert load_config(path) == settings
    text = template.format(keys=keys.replace("_func", "_fucn"))
    typo = write(tmp_path, "t.yaml", text)
    [issue] = [i for i in issues_of(typo, section=section) if i.kind == "unknown_key"]
    assert issue.message == "unknown key 'rollout_fucn'; did you mean 'rollout_func'?"
    assert issue.location == (f"{section}." if section else "") + "rollout_fucn"
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "rollout_fucn" in t)
    assert (issue.line, issue.col) == (line, text.splitlines()[line - 1].index("rollout") + 1)


def test_dotted_section_errors_and_literal_dotted_keys(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "trainer:\n  rollout: 3\n")
    assert lines_of(path, section="trainer.rollout") == [
        f"{path}:2:12: trainer.rollout: section must be a mapping, got int"
    ]
    assert lines_of(path, section="trainer.rl.x") == [
        f"{path}:1:1: trainer.rl: section 'trainer.rl' is missing (expected a mapping of "
        "training settings)"
    ]
    literal = write(tmp_path, "l.json", '{"a.b": {"rollout_backend": "nemo_gym"}}')
    assert load_config(literal, section="a.b").rollout_backend == "nemo_gym"


def test_known_keys_through_the_loader(tmp_path: Path) -> None:
    path = write(
        tmp_path, "c.toml", '[training]\nrollout_backend = "nemo_gym"\nrollout_sauce = 1\n'
    )
    assert [i.kind for i in issues_of(path)] == ["unknown_key"]
    assert load_config(path, known_keys=["rollout_sauce"]).rollout_backend == "nemo_gym"
    text = path.read_text(encoding="utf-8")
    assert load_config_bytes(text, format="toml", known_keys={"rollout_sauce"}).rollout_backend


def test_skip_unrelated_in_the_api() -> None:
    from agent_rollout.config import check_bytes

    assert check_bytes("on: push\n", skip_unrelated=True).skipped
    assert check_bytes("{", format="json", skip_unrelated=True).skipped  # no key of ours
    # Text that does not parse is ours when a key of ours is written in it, as a key.
    assert check_bytes("training: [\n", skip_unrelated=True).skipped
    broken = check_bytes("training:\n  rollout_backend: [art\n", skip_unrelated=True)
    assert not broken.skipped and broken.issues
    assert not check_bytes("x:\n  rolout_backend: art\n", skip_unrelated=True).skipped
    flat = check_bytes("lr: 1\n", section=None, skip_unrelated=True)
    assert flat.skipped
    assert not check_bytes("on: push\n").skipped


def test_skip_unrelated_keys_that_merely_hold_the_word() -> None:
    """verl's own configs (``actor_rollout_ref: {rollout: ...}``) are not ours: a key that
    only contains "rollout" somewhere is not a rollout_* key, so the hook skips the file."""
    from agent_rollout.config import check_bytes

    verl = "actor_rollout_ref:\n  rollout:\n    name: vllm\n    n: 4\ntrainer:\n  epochs: 1\n"
    assert check_bytes(verl, skip_unrelated=True).skipped
    assert check_bytes("jobs:\n  unrolled: {}\n", skip_unrelated=True).skipped
    # One of our keys or a look-alike of one in the top two levels makes it a candidate.
    for text in ("x:\n  Rollout-Backend: art\n", "rollout_fucn: a:b\n"):
        assert not check_bytes(text, skip_unrelated=True).skipped, text


@pytest.mark.parametrize(
    "text",
    [
        "rollout_batch_size: 512\n",  # OpenRLHF's own rollout_* key
        "x:\n  rollout_anything: 1\n",
        "name: m\ntraining: true\n",  # a model card: a training key, no settings
        "training:\nlr: 1\n",
        "[1, 2]\n",
        "",
    ],
)
def test_skip_unrelated_is_no_settings_found_and_none_of_our_keys(text: str) -> None:
    """Skipped exactly when the reading finds no settings and no mapping in the top two
    levels holds one of our keys (or a look-alike): not a training config. The same file
    named without the flag is still an error."""
    from agent_rollout.config import check_bytes

    assert check_bytes(text, skip_unrelated=True).skipped, text
    assert check_bytes(text).issues, text


def test_skip_unrelated_keeps_files_whose_settings_or_keys_are_found() -> None:
    from agent_rollout.config import check_bytes

    def kept(text: str, **options: Any) -> bool:
        return not check_bytes(text, skip_unrelated=True, **options).skipped

    assert not kept("training:\n  epochs: 3\n")  # a training mapping, but none of our keys
    assert kept("training: true\nrollout_backend: art\n")  # flat
    assert kept("training: true\nrl:\n  rollout_backend: art\n")  # elsewhere: named in the error
    assert kept("a:\n  b:\n    rollout_backend: art\n")
    # A named section holding our keys (at any depth), or our keys elsewhere; else skipped.
    assert not kept("trainer:\n  rollout:\n    lr: 1\n", section="trainer.rollout")
    assert kept("a:\n  b:\n    c:\n      rollout_fucn: m:f\n", section="a.b.c")
    assert not kept("a:\n  b:\n    c:\n      rollout_fucn: m:f\n")
    assert kept("trainer:\n  rl:\n    rollout_backend: art\n", section="trainer.rollout")
    # rollout_func alone elsewhere is another tool's (axolotl's trl.rollout_func).
    assert not kept("trainer:\n  rl:\n    rollout_func: m:f\n", section="trainer.rollout")
    assert not kept("trainer:\n  lr: 1\n", section="trainer.rollout")
    assert not kept("lr: 1\nrollout_batch_size: 8\n", section=None)
    assert kept("lr: 1\nrollout_func: m:f\n", section=None)


def test_skip_unrelated_skips_big_files_that_are_not_configs(tmp_path: Path) -> None:
    lock = tmp_path / "package-lock.json"
    lock.write_text(
        '{"packages": {' + ",".join(f'"p{i}": {{"v": "1.0.{i}"}}' for i in range(80_000)) + "}}"
    )
    assert lock.stat().st_size > MAX_CONFIG_BYTES
    result = check_file(lock, skip_unrelated=True)
    assert result.skipped and result.issues == []
    assert "-byte limit" in check_file(lock).issues[0].message  # without the flag: refused
    big = tmp_path / "big.yaml"
    big.write_text("training:\n  rollout_backend: art\n" + "# pad\n" * 300_000)
    refused = check_file(big, skip_unrelated=True)
    assert not refused.skipped and "-byte limit" in refused.issues[0].message


@pytest.mark.parametrize(
    ("text", "warned"),
    [
        # The typo stands for the key it looks like: no "rollout_func is not set" besides it.
        ("training:\n  rollout_backend: openenv\n  rollout_fucn: m:f\n", []),
        # A key the section holds keeps its value: ruler still misses its judge.
        (
            "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n  rolout_backend: art\n",
            ["training.rollout_judge_model"],
        ),
        # A look-alike of the backend is read as the backend: art's own warning, as with
        # the key spelt right.
        ("training:\n  rolloutbackend: art\n", ["training.rollout_func"]),
        # Two look-alikes of one key: the rules that read it wait, and so do the warnings.
        ("training:\n  rolloutbackend: art\n  rolout_backend: ruler\n", []),
    ],
)
def test_a_look_alike_key_changes_no_other_warning(text: str, warned: list[str]) -> None:
    result = check_bytes(text, source="c.yaml")
    assert {issue.kind for issue in result.issues} == {"unknown_key"}
    assert [issue.location for issue in result.warnings] == warned


# ------------------------------------------------------------ look-alike floods


def lookalike_flood(count: int, letters: str = "qxz") -> list[str]:
    """``count`` distinct keys, each two substitutions (by ``letters``) away from one of ours."""
    keys: list[str] = []
    for key in ROLLOUT_KEYS:
        for i, j in itertools.combinations(range(len(key)), 2):
            for a, b in itertools.product(letters, "9" + letters[0]):
                variant = key[:i] + a + key[i + 1 : j] + b + key[j + 1 :]
                if variant not in ROLLOUT_KEYS and variant not in keys:
                    keys.append(variant)
                if len(keys) == count:
                    return keys
    raise AssertionError("not enough look-alikes")


FLOOD_LINES = {  # (head, a key's line, tail, letters of its own: no key is worked out before)
    "json": ('{"training": {\n', '  "{key}": 1,\n', '  "rollout_backend": "art"}}\n', "qxz"),
    "yaml": ("training:\n", "  {key}: 1\n", "  rollout_backend: art\n", "jvw"),
    "toml": ("[training]\n", "{key} = 1\n", 'rollout_backend = "art"\n', "kyq"),
}


@pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
def test_a_look_alike_flood_costs_a_few_comparisons_per_key(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each key is compared with our keys once (its look-alike and its nearest key in one
    pass), never once per rule that asks: the work grows with the keys, by a bound."""
    from agent_rollout.config import _lookalike

    calls = [0]
    for name in ("edit_distance", "distance_upto"):
        original = getattr(_lookalike, name, None)
        if original is None:
            continue

        def counted(*args: object, original: object = original) -> object:
            calls[0] += 1
            return original(*args)  # type: ignore[operator]

        monkeypatch.setattr(_lookalike, name, counted)
    head, line, tail, letters = FLOOD_LINES[fmt]
    keys = lookalike_flood(400, letters)
    text = head + "".join(line.format(key=key) for key in keys) + tail
    result = check_bytes(text, format=fmt, source=f"c.{fmt}")
    assert [issue.line for issue in result.issues] == list(range(2, len(keys) + 2))
    assert all(issue.kind == "unknown_key" for issue in result.issues)
    assert calls[0] <= len(keys) * len(ROLLOUT_KEYS), calls[0] / len(keys)


class CountedList(list):  # type: ignore[type-arg]
    """A list that counts the walks over it."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountedList.walks += 1
        return super().__iter__()

    def __reversed__(self):  # type: ignore[no-untyped-def]
        CountedList.walks += 1
        return super().__reversed__()


def test_yaml_places_keys_from_an_index_built_once_per_mapping() -> None:
    """Placing every key of a mapping walks the mapping once, not once per key."""
    from agent_rollout.config._parse import parse

    keys = lookalike_flood(300)
    parsed = parse("training:\n" + "".join(f"  {key}: 1\n" for key in keys), "yaml")
    section = parsed.walker.root.value[0][1]
    section.value = CountedList(section.value)
    CountedList.walks = 0
    for line, key in enumerate(keys, 2):
        assert parsed.locate(("training", key)) == (2, (line, 3), (line, 3 + len(key) + 2))
    assert CountedList.walks <= 1


# ------------------------------------------------------------ odd values and keys in messages


def test_a_huge_plain_scalar_is_cut_short_in_its_yaml_version_warning() -> None:
    # 0b1...1 is an int to YAML 1.1 and a string to YAML 1.2: a warning naming the text.
    text = "0b" + "1" * 400_000
    result = check_bytes(f"training:\n  rollout_max_steps: {text}\n", source="c.yaml")
    (warning,) = [issue for issue in result.warnings if issue.kind == "yaml_version"]
    assert (warning.line, warning.col, warning.location) == (2, 22, "training.rollout_max_steps")
    assert re.search(facts("<int of 400000 bits>", "YAML 1.1", "YAML 1.2"), warning.message)
    assert len(warning.message) < 500, len(warning.message)


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("yaml", "x: !!float 1e3e3" + "3" * 400_000 + "\n"),
        ("yaml", "x: !!bool maybe" + "e" * 400_000 + "\n"),
        ("yaml", "x: !custom" + "x" * 400_000 + " 1\n"),
        ("json", '{"k' + "e" * 400_000 + '": 1, "k' + "e" * 400_000 + '": 2}'),
    ],
)
def test_huge_values_are_cut_short_in_every_message(fmt: str, text: str) -> None:
    result = check_bytes(text, format=fmt, source=f"c.{fmt}")
    told = [issue for issue in [*result.issues, *result.warnings] if issue.kind != "missing"]
    assert told
    for issue in told:
        assert len(issue.message) < 500, (issue.message[:80], len(issue.message))


@pytest.mark.parametrize(
    ("fmt", "text", "line", "col"),
    [
        ("json", '{"training": {\n  "rollout_backend": "art",\n  "rollout_fun\\ud800": 1}}', 3, 3),
        ("yaml", 'training:\n  rollout_backend: art\n  "rollout_fun\\ud800": 1\n', 3, 3),
    ],
)
def test_a_key_holding_a_lone_surrogate_is_placed_at_its_line(
    fmt: str, text: str, line: int, col: int
) -> None:
    (issue,) = check_bytes(text, format=fmt, source=f"c.{fmt}").issues
    assert (issue.line, issue.col, issue.kind) == (line, col, "unknown_key")
    assert issue.location == "training.rollout_fun\ud800"  # the key itself
    assert re.search(facts("'rollout_fun\\ud800'", "'rollout_func'"), issue.message)


@pytest.mark.parametrize(
    ("fmt", "text", "got"),
    [
        ("json", "null", "null"),
        ("json", " null\n", "null"),
        ("yaml", "null\n", "null"),
        ("yaml", "~\n", "null"),
        ("yaml", "", "an empty file"),
        ("yaml", "# only a comment\n", "an empty file"),
        ("json", "3", "int"),
    ],
)
def test_a_file_of_null_is_not_called_empty(fmt: str, text: str, got: str) -> None:
    (issue,) = check_bytes(text, format=fmt, source=f"c.{fmt}").issues
    assert issue.kind == "structure"
    assert re.search(facts("mapping", f"got {got}"), issue.message)


def test_a_value_utf8_cannot_encode_is_an_error_at_the_value() -> None:
    text = (
        '{"training": {\n  "rollout_backend": "nemo_gym",\n  "rollout_source": "\\udce9t.jsonl"}}'
    )
    (issue,) = check_bytes(text, format="json", source="c.json").issues
    assert (issue.line, issue.col, issue.kind) == (3, 21, "value")
    assert issue.location == "training.rollout_source"
    assert re.search(facts("rollout_source", "U+DCE9", "index 0"), issue.message)


@pytest.mark.skipif(sys.platform != "linux", reason="a folder name that is not UTF-8")
def test_a_relative_source_under_a_folder_named_in_other_bytes_is_an_error(
    tmp_path: Path,
) -> None:
    """The source is read from the config file's folder; when that folder's name is not
    UTF-8, the joined path is refused as the same path written in the file would be."""
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    config = os.path.join(folder, b"c.yaml")
    with open(config, "wb") as handle:
        handle.write(b"training:\n  rollout_backend: nemo_gym\n  rollout_source: data.jsonl\n")
    result = check_file(os.fsdecode(config))
    assert result.settings is None
    (issue,) = result.issues
    assert (issue.line, issue.col, issue.kind) == (3, 19, "value")
    assert issue.location == "training.rollout_source"
    assert re.search(facts("U+DCE9", "caf\\udce9"), issue.message)
    # A UTF-8 folder: the joined path, as before.
    fine = tmp_path / "caf\u00e9"
    fine.mkdir()
    (fine / "c.yaml").write_text(
        "training:\n  rollout_backend: nemo_gym\n  rollout_source: d.jsonl\n"
    )
    settings = load_config(fine / "c.yaml")
    assert settings.rollout_source == str(fine / "d.jsonl")
    assert RolloutSettings.model_validate_json(settings.model_dump_json()) == settings


def test_a_flood_of_duplicate_keys_is_sorted_out_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether a duplicate is in our section is looked up, not found by a walk of the
    section per duplicate: the keys are each asked about once."""
    from agent_rollout.config import check

    asked = [0]
    original = check.lookalike_key

    def counted(key: object, known: object = ()) -> bool:
        asked[0] += 1
        return original(key, known)  # type: ignore[arg-type]

    monkeypatch.setattr(check, "lookalike_key", counted)
    keys = lookalike_flood(300, "bdf")
    body = "".join(
        f'  "{key}": 1,\n  "{key}": 2,\n  "host_{key}": 1,\n  "host_{key}": 2,\n' for key in keys
    )
    text = '{"training": {\n' + body + '  "rollout_backend": "art"}}\n'
    result = check_bytes(text, format="json", source="c.json")
    duplicates = [issue for issue in result.issues if issue.kind == "duplicate"]
    assert [issue.line for issue in duplicates] == [3 + 4 * i for i in range(len(keys))]
    assert [w.line for w in result.warnings if w.kind == "duplicate"] == [
        5 + 4 * i for i in range(len(keys))
    ]
    assert asked[0] <= 2 * (2 * len(keys) + 1), asked[0]
