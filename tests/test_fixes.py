"""The fixes of check's issues (``agent_rollout.config._fixes``): one implementation,
used by ``check --fix``/``--diff`` and the language server's code actions.

Each fix is an edit at a position, so comments, order, quoting style, line
endings and a byte-order mark stay; a fixed config is checked again.
"""

from __future__ import annotations

import pytest

from agent_rollout.backends import backend_meant
from agent_rollout.config import apply_fixes, check_bytes, fix_text, issue_fixes


def fixed(text: str, fmt: str = "yaml", **options: object) -> str:
    return fix_text(text, format=fmt, **options).text  # type: ignore[arg-type]


def titles(text: str, fmt: str = "yaml", yaml_version: str = "1.1") -> list[str]:
    result = check_bytes(text, format=fmt, yaml_version=yaml_version)
    return [fix.title for fix in issue_fixes(text, result, format=fmt, yaml_version=yaml_version)]


def test_a_look_alike_key_is_renamed_in_place() -> None:
    text = "training:\n  rollout_backend: art   # keep me\n  rollout_fucn: m:f  # and me\n"
    assert fixed(text) == (
        "training:\n  rollout_backend: art   # keep me\n  rollout_func: m:f  # and me\n"
    )
    assert titles(text) == ["Rename 'rollout_fucn' to 'rollout_func'"]


@pytest.mark.parametrize(
    ("fmt", "text", "want"),
    [
        ("json", '{"training": {"rollout_fucn": "m:f"}}', '{"training": {"rollout_func": "m:f"}}'),
        ("toml", "[training]\nrollout_fucn = 'm:f'\n", "[training]\nrollout_func = 'm:f'\n"),
        ("toml", "training.rollout_fucn = 'm:f'\n", "training.rollout_func = 'm:f'\n"),
        ("toml", 'training = {rollout_fucn = "m:f"}\n', 'training = {rollout_func = "m:f"}\n'),
        ("yaml", "training: {'rollout_fucn': m:f}\n", "training: {'rollout_func': m:f}\n"),
    ],
)
def test_renames_in_every_format(fmt: str, text: str, want: str) -> None:
    assert fixed(text, fmt) == want


def test_no_rename_onto_a_key_the_section_holds() -> None:
    text = "training:\n  rollout_func: a:b\n  rollout_fucn: m:f\n"
    assert titles(text) == []
    assert fixed(text) == text


def test_two_look_alikes_of_one_key_rename_only_one() -> None:
    text = "training:\n  rollout_backend: art\n  rollout_fucn: m:f\n  rollout_fnuc: m:g\n"
    assert len(titles(text)) == 2  # each is offered on its own
    done = fix_text(text)
    assert done.text.count("rollout_func:") == 1  # never a duplicate key
    assert [issue.location for issue in done.result.issues] == ["training.rollout_fnuc"]


@pytest.mark.parametrize(
    ("value", "want"),
    [("Nemo-Gym", "nemo_gym"), ("'NEMOGYM'", "'nemo_gym'"), ('"open env"', '"openenv"')],
)
def test_a_backend_spelt_another_way_gets_its_canonical_name(value: str, want: str) -> None:
    text = f"training:\n  rollout_backend: {value}\n  rollout_source: d.jsonl\n"
    assert fixed(text) == f"training:\n  rollout_backend: {want}\n  rollout_source: d.jsonl\n"


def test_backend_meant() -> None:
    assert backend_meant("Nemo-Gym") == "nemo_gym"
    assert backend_meant("OPEN.ENV") == "openenv"
    assert backend_meant("verl") is None
    assert titles("training:\n  rollout_backend: verl\n") == []


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("010", "8"),  # unsafe (10 may be meant): applied with unsafe_fixes
        ("0o10", "8"),
        ("1e3", "1000"),  # an integer key reads 1000.0 as 1000
        ("1_000", "1000"),
        ("1:30", "90"),
        ("0b101", "5"),
        ("yes", None),  # no reading an integer key takes: no fix
        ("~", None),  # read alike: no warning at all
    ],
)
def test_yaml_ambiguous_values_become_a_reading_the_key_takes(value: str, want: object) -> None:
    text = f"training:\n  rollout_backend: art\n  rollout_func: m:f\n  rollout_max_steps: {value}\n"
    out = fix_text(text, unsafe_fixes=True)
    if want is None:
        assert not out.changed
        return
    assert out.text == text.replace(f": {value}\n", f": {want}\n")
    assert not any(issue.kind == "yaml_version" for issue in out.result.warnings)
    assert out.result.issues == []


def test_yaml_fix_follows_the_reading_checked_with() -> None:
    text = "training:\n  rollout_max_steps: 010\n"
    assert fixed(text, yaml_version="1.2", unsafe_fixes=True).endswith("rollout_max_steps: 10\n")
    assert fixed(text, unsafe_fixes=True).endswith("rollout_max_steps: 8\n")


@pytest.mark.parametrize(("fmt", "sep"), [("yaml", ": "), ("toml", " = ")])
def test_a_quoted_whole_number_in_range_is_unquoted(fmt: str, sep: str) -> None:
    head = "training:\n  " if fmt == "yaml" else "[training]\n"
    text = f'{head}rollout_backend{sep}"art"\nrollout_group_size{sep}"8"\n'.replace(
        "\nrollout_group", "\n  rollout_group" if fmt == "yaml" else "\nrollout_group"
    )
    out = fix_text(text, format=fmt)
    assert f"rollout_group_size{sep}8\n" in out.text
    assert not [issue for issue in out.result.issues if issue.kind == "value"]
    far = text.replace('"8"', '"0"')
    assert fix_text(far, format=fmt).text == far  # out of range: unquoting is not the fix


def test_fixes_keep_crlf_and_a_byte_order_mark() -> None:
    text = "\ufefftraining:\r\n  rollout_fucn: m:f\r\n  rollout_max_steps: 010\r\n"
    want = "\ufefftraining:\r\n  rollout_func: m:f\r\n  rollout_max_steps: 8\r\n"
    assert fixed(text, unsafe_fixes=True) == want


def test_fixed_text_is_what_check_accepts() -> None:
    text = (
        "# GRPO\n"
        "training:\n"
        "  lr: 1.0e-6  # 😀 trainer key\n"
        "  rollout_backend: Open-Env\n"
        "  rollout_fucn: pkg.mod:play\n"
        "  rollout_max_steps: '12'\n"
        "  rollout_group_sise: 4\n"
    )
    out = fix_text(text)
    assert out.result.issues == [] and out.result.warnings == []
    assert out.result.settings is not None
    assert out.result.settings.rollout_func == "pkg.mod:play"
    assert len(out.fixes) == 4
    assert "  lr: 1.0e-6  # 😀 trainer key\n" in out.text


def test_apply_fixes_skips_overlapping_edits() -> None:
    text = "training:\n  rollout_fucn: m:f\n"
    result = check_bytes(text)
    fixes = issue_fixes(text, result)
    new, applied = apply_fixes(text, [*fixes, *fixes])
    assert new == "training:\n  rollout_func: m:f\n"
    assert applied == fixes


def test_unrelated_and_unparsable_text_has_no_fixes() -> None:
    assert not fix_text("name: ci\non: push\n", skip_unrelated=True).changed
    assert not fix_text("training: [\n").changed


# ---- TOML inline tables and dotted keys: each fix in place, the rest of the line kept -------

INLINE = 'training = { rollout_backend = "Nemo-Gym", rollout_max_steps = "8" }  # keep\n'
AT_FAULT = ("training.rollout_backend", "training.rollout_max_steps")


def test_inline_table_values_are_fixed_in_place() -> None:
    done = fix_text(INLINE, format="toml")
    assert done.text == INLINE.replace('"Nemo-Gym"', '"nemo_gym"').replace('"8"', "8")
    assert [fix.title for fix in done.fixes] == [
        "Change rollout_backend 'Nemo-Gym' to 'nemo_gym'",
        'Unquote "8" (an int)',
    ]
    left = [*done.result.issues, *done.result.warnings]
    assert [issue for issue in left if issue.location in AT_FAULT] == []


def test_inline_table_issues_are_placed_at_their_own_key_or_value() -> None:
    result = check_bytes(INLINE, format="toml")
    found = [*result.issues, *result.warnings]
    where = {issue.location: INLINE[issue.col - 1 : issue.end_col - 1] for issue in found}
    assert where == {AT_FAULT[0]: '"Nemo-Gym"', AT_FAULT[1]: '"8"'}


@pytest.mark.parametrize(
    ("section", "text", "want"),
    [
        # a look-alike key, a value holding its name left alone
        (
            "training",
            'training = { x = "rollout_fucn", rollout_fucn = "m:f" }\n',
            'training = { x = "rollout_fucn", rollout_func = "m:f" }\n',
        ),
        # nested in a table, quoted keys, a date and time with a blank in it
        (
            "a.training",
            '[a]\ntraining = { d = 1979-05-27 07:32:00, "rollout_backend" = "Nemo-Gym",'
            " 'rollout_fucn' = 'm:f' }\n",
            '[a]\ntraining = { d = 1979-05-27 07:32:00, "rollout_backend" = "nemo_gym",'
            " 'rollout_func' = 'm:f' }\n",
        ),
        # dotted keys, in a table and in an inline table
        (
            "training",
            'training.rollout_backend = "Nemo-Gym"\ntraining.rollout_max_steps = "8"\n',
            'training.rollout_backend = "nemo_gym"\ntraining.rollout_max_steps = 8\n',
        ),
        (
            "x.training",
            'x = { training.rollout_backend = "Nemo-Gym", training.rollout_fucn = "m:f" }\n',
            'x = { training.rollout_backend = "nemo_gym", training.rollout_func = "m:f" }\n',
        ),
    ],
)
def test_every_fix_works_in_inline_tables_and_dotted_keys(
    section: str, text: str, want: str
) -> None:
    done = fix_text(text, format="toml", section=section)
    assert done.text == want
    fixed_keys = {fix.issue.location for fix in done.fixes}
    left = {issue.location for issue in [*done.result.issues, *done.result.warnings]}
    assert fixed_keys and not fixed_keys & left


def test_no_rename_onto_a_key_an_inline_table_holds() -> None:
    text = 'training = { rollout_backend = "art", rollout_func = "a:b", rollout_fucn = "c:d" }\n'
    assert titles(text, "toml") == []
    assert fixed(text, "toml") == text  # renamed, the key would be given twice: bad TOML


def test_an_inline_table_under_a_dotted_key_is_placed_and_fixed() -> None:
    text = 'training.rollout = { rollout_backend = "Nemo-Gym" }\ntraining.epochs = 1\n'
    result = check_bytes(text, format="toml", section="training.rollout")
    assert result.key_positions[("training", "rollout", "rollout_backend")] == ((1, 22), (1, 40))
    assert result.key_positions[("training", "epochs")] == ((2, 1), (2, 19))
    assert fixed(text, "toml", section="training.rollout") == text.replace("Nemo-Gym", "nemo_gym")
