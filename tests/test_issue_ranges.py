"""Each issue `check` reports covers the key or value at fault: ``end_line``/``end_col``.

An editor underlines a range, so the issue's end is where the text starting
at its position ends (exclusive, 1-based, in characters like the start): a
key, a quoted string, a flow collection, a plain value up to a comment.
"""

from __future__ import annotations

import json

import pytest

from agent_rollout.config import check_bytes


def spans(text: str, fmt: str = "yaml", **options: object) -> dict[str, str]:
    """location -> the text each issue's range covers (one line each here)."""
    result = check_bytes(text, format=fmt, **options)  # type: ignore[arg-type]
    lines = text.removeprefix("\ufeff").splitlines()
    out = {}
    for issue in [*result.issues, *result.warnings]:
        assert issue.end_line is not None and issue.end_col is not None, issue
        if issue.end_line == issue.line:
            out[issue.location] = lines[issue.line - 1][issue.col - 1 : issue.end_col - 1]
        else:
            out[issue.location] = f"lines {issue.line}-{issue.end_line}"
    return out


def test_yaml_keys_and_values() -> None:
    text = (
        "training:  # the run\n"
        "  note: '😀 emoji before'  # 😀\n"
        "  rollout_backend: verl   # a comment\n"
        "  rollout_fucn: m:f\n"
        "  rollout_max_steps: 'five'\n"
        "  rollout_group_size: [1, 2]\n"
        "  rollout_gym_head_port: 010\n"
    )
    assert spans(text) == {
        "training.rollout_backend": "verl",
        "training.rollout_fucn": "rollout_fucn",
        "training.rollout_max_steps": "'five'",
        "training.rollout_group_size": "[1, 2]",
        "training.rollout_gym_head_port": "010",
    }


def test_flow_mappings_and_emoji_before_the_error() -> None:
    text = 'training: {note: "😀", rollout_fucn: m:f, rollout_max_steps: x y, rollout_backend: a}\n'
    found = spans(text)
    assert found["training.rollout_fucn"] == "rollout_fucn"
    assert found["training.rollout_max_steps"] == "x y"


def test_json_and_toml() -> None:
    document = {"training": {"note": "😀", "rollout_fucn": "m:f", "rollout_max_steps": [1, 2]}}
    found = spans(json.dumps(document, ensure_ascii=False), "json")
    assert found == {
        "training.rollout_fucn": '"rollout_fucn"',
        "training.rollout_max_steps": "[1, 2]",
    }
    toml = '[training]\nrollout_fucn = "m:f"  # x\nrollout_max_steps = "five" # y\n'
    assert spans(toml, "toml") == {
        "training.rollout_fucn": "rollout_fucn",
        "training.rollout_max_steps": '"five"',
    }


def test_a_multi_line_value_spans_its_lines() -> None:
    text = "training:\n  rollout_max_steps: [1,\n    2]\n"
    assert spans(text) == {"training.rollout_max_steps": "lines 2-3"}


def test_syntax_errors_and_empty_values_are_points_or_tokens() -> None:
    result = check_bytes("training: [\n")
    issue = result.issues[0]  # at the "[" left open, up to the end of its line
    assert (issue.kind, issue.line, issue.col, issue.end_line, issue.end_col) == (
        "syntax",
        1,
        11,
        1,
        12,
    )
    result = check_bytes("training:\n  rollout_backend: !!str\n")  # an empty string
    issue = result.issues[0]
    assert (issue.location, issue.line) == ("training.rollout_backend", 2)
    assert (issue.end_line, issue.end_col) == (2, 25)


def test_json_report_carries_the_end(cli: object, tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    path = tmp_path / "c.yaml"
    path.write_text("training:\n  rollout_fucn: m:f\n", encoding="utf-8")
    done = cli("check", "--format", "json", str(path))  # type: ignore[operator]
    issue = json.loads(done.out)["files"][0]["errors"][0]
    assert (issue["line"], issue["col"], issue["end_line"], issue["end_col"]) == (2, 3, 2, 15)


@pytest.mark.parametrize("header", ["[trainer.rollout]", '[trainer."rollout"]'])
def test_toml_dotted_table_header_places_its_keys(header: str) -> None:
    """A section under a dotted table header was placed at 1:1, not at its keys."""
    text = f"# a comment\n{header}\nrollout_fucn = 'm:f'\n"
    result = check_bytes(text, format="toml", section="trainer.rollout")
    issue = result.issues[0]
    assert (issue.line, issue.col, issue.location) == (3, 1, "trainer.rollout.rollout_fucn")
