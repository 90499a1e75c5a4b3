"""Fix safety (ruff's ``Applicability``): which fixes ``check --fix`` applies alone,
which need ``unsafe_fixes``, which only the editor offers, and the alternatives.

A fix never leaves its key invalid: over a generated corpus of configs with
fixable issues (YAML, JSON, TOML; every fix kind; nested ``training:`` and
flat), each fix and each of its alternatives, applied alone, leaves no issue at
the key it answered, and ``fix_text`` (what ``check --fix`` writes) is
idempotent, with and without the unsafe fixes.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout.backends import ROLLOUT_KEYS
from agent_rollout.config import (
    APPLICABILITIES,
    DISPLAY_ONLY,
    SAFE,
    UNSAFE,
    Fix,
    apply_fixes,
    check_bytes,
    fix_text,
    issue_fixes,
    lookalike_key,
    nearest_key,
)


def fixes_of(text: str, fmt: str = "yaml", yaml_version: str = "1.1") -> list[Fix]:
    result = check_bytes(text, format=fmt, yaml_version=yaml_version)
    return issue_fixes(text, result, format=fmt, yaml_version=yaml_version)


def the_fix(text: str, fmt: str = "yaml", yaml_version: str = "1.1") -> Fix:
    found = fixes_of(text, fmt, yaml_version)
    assert len(found) == 1, [fix.title for fix in found]
    return found[0]


def written(fix: Fix) -> list[str]:
    """What each choice of a one-edit fix writes, the fix first."""
    return [choice.edits[0].text for choice in fix.choices]


RULER = "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n"


# ---- each applicability decision ------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "applicability", "writes"),
    [
        # a look-alike with one key of ours that near: safe
        ("rollout_judge_modle: j", SAFE, ["rollout_judge_model"]),
        ("Rollout-Judge-Model: j", SAFE, ["rollout_judge_model"]),
        # a backend spelt another way: safe
        ("rollout_judge_model: j\n  rollout_backend: RU-LER", SAFE, ["ruler"]),
        # a quoted whole number on an integer key: safe
        ("rollout_max_steps: '12'", SAFE, ["12"]),
        ('rollout_group_size: "08"', SAFE, ["8"]),
        # YAML 1.1/1.2: an integer key that takes both readings: unsafe, the trainer's first
        ("rollout_max_steps: 010", UNSAFE, ["8", "10"]),
        ("rollout_group_size: 017", UNSAFE, ["15", "17"]),
        # ... and one that takes one reading only: that one, safe
        ("rollout_max_steps: 0o10", SAFE, ["8"]),
        ("rollout_max_steps: 1e3", SAFE, ["1000"]),
        ("rollout_max_steps: 1_000", SAFE, ["1000"]),
        ("rollout_max_steps: 1:30", SAFE, ["90"]),
        ("rollout_max_steps: 0b101", SAFE, ["5"]),
        # a string key: the string, never a bool, a number or a date
        ("rollout_judge_model: yes", SAFE, ['"yes"']),
        ("rollout_judge_model: Off", SAFE, ['"Off"']),
        ("rollout_judge_model: 010", SAFE, ['"010"']),
        ("rollout_judge_model: 1e3", SAFE, ['"1e3"']),
        ("rollout_judge_model: 2001-12-14", SAFE, ['"2001-12-14"']),
        # a key of the trainer's own: its type is not ours to know, every reading offered
        ("rollout_batch_size: 010", UNSAFE, ["8", "10", '"010"']),
        ("rollout_use_vllm: on", UNSAFE, ["true", '"on"']),
        ("rollout_tokens: 1e3", UNSAFE, ['"1e3"', "1000.0"]),
        ("rollout_started: 2001-12-14", UNSAFE, ['"2001-12-14"']),
    ],
)
def test_each_fix_kind_has_its_applicability(
    line: str, applicability: str, writes: list[str]
) -> None:
    fix = the_fix(RULER + f"  {line}\n")
    assert fix.applicability == applicability
    assert written(fix) == writes
    assert all(choice.applicability == applicability for choice in fix.choices)
    assert fix.applies() is (applicability == SAFE)
    assert fix.applies(unsafe_fixes=True) is (applicability != DISPLAY_ONLY)


def test_the_applicabilities_are_rufs_three() -> None:
    assert APPLICABILITIES == ("safe", "unsafe", "display-only")


@pytest.mark.parametrize(
    "line",
    [
        "rollout_max_steps: yes",  # no reading an integer key takes
        "rollout_max_steps: 2001-12-14",
        "rollout_backend: on",  # no reading is a backend
        "rollout_max_steps: '0'",  # out of range: unquoting is not the fix
    ],
)
def test_no_fix_where_no_reading_is_valid(line: str) -> None:
    text = f"training:\n  rollout_func: m:f\n  {line}\n"
    assert fixes_of(text) == []
    assert not fix_text(text, unsafe_fixes=True).changed


def test_the_trainers_reading_comes_first_whichever_yaml_it_reads() -> None:
    fix = the_fix(RULER + "  rollout_max_steps: 010\n", yaml_version="1.2")
    assert (fix.applicability, written(fix)) == (UNSAFE, ["10", "8"])
    assert fix.title == "Write 010 as 10 (as the trainer reads it: YAML 1.2)"
    assert fix.alternatives[0].title == "Write 010 as 8 (as yaml.safe_load reads it)"


def test_the_titles_say_which_reading() -> None:
    fix = the_fix(RULER + "  rollout_batch_size: 010\n")
    assert [choice.title for choice in fix.choices] == [
        "Write 010 as 8 (as the trainer reads it: yaml.safe_load)",
        "Write 010 as 10 (as YAML 1.2 reads it)",
        'Write 010 as "010" (a string)',
    ]


def test_a_look_alike_as_near_two_of_ours_is_display_only() -> None:
    # two edits from rollout_func and from rollout_source: the editor offers both, no
    # command picks one
    fix = the_fix("training:\n  rollout_backend: art\n  rollout_ourc: m:g\n")
    assert (fix.applicability, written(fix)) == (DISPLAY_ONLY, ["rollout_func", "rollout_source"])
    assert [choice.title for choice in fix.choices] == [
        "Rename 'rollout_ourc' to 'rollout_func'",
        "Rename 'rollout_ourc' to 'rollout_source'",
    ]


def test_a_look_alike_is_never_renamed_onto_a_key_the_section_holds() -> None:
    fix = the_fix(RULER + "  rollout_ourc: m:g\n")  # rollout_func is held
    assert (fix.applicability, written(fix)) == (DISPLAY_ONLY, ["rollout_source"])


def test_a_look_alikes_value_is_fixed_once_it_is_renamed() -> None:
    text = RULER + "  rollout_judge_modle: yes\n"
    fix = the_fix(text)  # the rename only: the value's fix depends on the key's type
    assert fix.title == "Rename 'rollout_judge_modle' to 'rollout_judge_model'"
    done = fix_text(text)
    assert done.text == RULER + '  rollout_judge_model: "yes"\n'
    assert done.result.issues == done.result.warnings == []


# ---- what fix_text applies ---------------------------------------------------------------------


def test_rollout_judge_model_yes_is_fixed_to_the_string() -> None:
    text = RULER + "  rollout_judge_model: yes\n"
    before = check_bytes(text)
    assert [issue.kind for issue in [*before.issues, *before.warnings]] == [
        "value",
        "yaml_version",
    ]
    done = fix_text(text)
    assert done.text == RULER + '  rollout_judge_model: "yes"\n'
    assert done.result.issues == done.result.warnings == []
    assert done.result.settings is not None
    assert done.result.settings.rollout_judge_model == "yes"


def test_unsafe_fixes_are_held_back_unless_asked_for() -> None:
    text = RULER + "  rollout_fucn2: x\n  rollout_max_steps: 010\n  rollout_group_size: '6'\n"
    safe = fix_text(text)
    assert safe.text == text.replace("'6'", "6")
    assert [fix.title for fix in safe.held_back] == [
        "Write 010 as 8 (as the trainer reads it: yaml.safe_load)"
    ]
    both = fix_text(text, unsafe_fixes=True)
    assert both.text == safe.text.replace("010", "8")
    assert both.held_back == []
    assert [fix.applicability for fix in both.fixes] == [UNSAFE, SAFE]


def test_display_only_fixes_are_never_applied() -> None:
    text = "training:\n  rollout_backend: art\n  rollout_ourc: m:g\n"
    for unsafe in (False, True):
        done = fix_text(text, unsafe_fixes=unsafe)
        assert not done.changed and done.held_back == []


def test_two_typos_of_one_key_are_never_both_renamed_by_their_alternatives() -> None:
    text = "training:\n  rollout_backend: art\n  rollout_fucn: m:f\n  rollout_fnuc: m:g\n"
    fixes = fixes_of(text)
    new, applied = apply_fixes(text, [choice for fix in fixes for choice in fix.choices])
    assert len(applied) == 1 and new.count("rollout_func:") == 1


# ---- the generated corpus: every fix, every alternative, clears its key -------------------------

BASE: dict[str, object] = {
    "rollout_backend": "ruler",
    "rollout_func": "pkg.mod:play",
    "rollout_judge_model": "openai/o4-mini",
    "rollout_max_steps": 12,
    "rollout_group_size": 6,
}
"""A ruler section ``check`` accepts without a warning: every fault is on top of it."""

INT_TEXTS = ["010", "017", "0o10", "1e3", "1_000", "1:30", "0b101", "0x_1f", "+010"]
STRING_TEXTS = ["yes", "No", "on", "OFF", "010", "1e3", "2001-12-14", "0o10", "1:30", "1_0"]
TRAINER_TEXTS = ["010", "on", "2001-12-14", "1e3", "1:30", "0o7"]
BACKENDS = ["ru-ler", "Ru Ler", "ru.ler", "RU_LER"]  # "Ruler" is ruler: no issue
TIE = "rollout_ourc"
"""Two edits from rollout_func and from rollout_source."""


@dataclass
class Entry:
    key: str
    value: object
    raw: Optional[str] = None  # a plain YAML scalar written as it is
    quoted: bool = False  # an int written as a quoted string


@functools.cache
def typos(key: str) -> list[str]:
    """The typos of ``key`` past ``rollout_``: one letter deleted, substituted or inserted
    (a few letters), or two neighbours swapped; those the look-alike rule takes for ``key``
    alone."""
    found = set()
    for at in range(len("rollout_"), len(key) + 1):
        found.add(key[:at] + key[at + 1 :])
        found.add(key[:at] + key[at + 1 : at + 2] + key[at : at + 1] + key[at + 2 :])
        for letter in "aekrsuz_-":
            found.add(key[:at] + letter + key[at + 1 :])
            found.add(key[:at] + letter + key[at:])
    return sorted(
        name
        for name in found
        if name not in ROLLOUT_KEYS and lookalike_key(name) and nearest_key(name) == key
    )


TYPO_KEYS = [key for key in BASE if key != "rollout_backend"]
"""Not the backend's: without it the other keys break cross-field rules, issues at keys
no fix of this one answers."""


def scalar(value: object, fmt: str) -> str:
    if isinstance(value, str) and fmt == "yaml":
        return value  # every string of the corpus is a plain YAML scalar read as a string
    return json.dumps(value)  # a JSON value, and a TOML one for these strings and ints


def render(entries: list[Entry], fmt: str, nested: bool) -> str:
    pairs = []
    for entry in entries:
        if entry.raw is not None:
            value = entry.raw
        elif entry.quoted:
            value = json.dumps(str(entry.value)) if fmt != "yaml" else f"'{entry.value}'"
        else:
            value = scalar(entry.value, fmt)
        pairs.append((entry.key, value))
    if fmt == "json":
        body = ", ".join(f"{json.dumps(key)}: {value}" for key, value in pairs)
        return f'{{"training": {{{body}}}}}\n' if nested else f'{{"lr": 0.1, {body}}}\n'
    if fmt == "toml":
        lines = [f"{key} = {value}" for key, value in pairs]
        head = ["[training]"] if nested else ["lr = 0.1"]
        return "\n".join([*head, *lines]) + "\n"
    indent = "  " if nested else ""
    lines = [f"{indent}{key}: {value}" for key, value in pairs]
    head = ["training:"] if nested else ["lr: 0.1"]
    return "\n".join([*head, *lines]) + "\n"


FAULTS = ["typo", "tie", "backend", "quoted", "yaml_int", "yaml_str", "trainer_key"]
TEXT_FAULTS = ["typo", "tie", "backend", "quoted"]  # JSON and TOML: no YAML reading


@st.composite
def configs(draw: st.DrawFn) -> tuple[str, str]:
    fmt = draw(st.sampled_from(["yaml", "json", "toml"]))
    nested = draw(st.booleans())
    kinds = FAULTS if fmt == "yaml" else TEXT_FAULTS
    chosen = draw(st.lists(st.booleans(), min_size=len(kinds), max_size=len(kinds)))
    faults = [kind for kind, take in zip(kinds, chosen, strict=True) if take]
    faults = faults or [draw(st.sampled_from(kinds))]
    entries = {key: Entry(key, value) for key, value in BASE.items()}
    for fault in faults:
        if fault == "typo":
            key = draw(st.sampled_from(TYPO_KEYS))
            entries[key].key = draw(st.sampled_from(typos(key)))
        elif fault == "tie":
            entries["rollout_func"].key = TIE
        elif fault == "backend":
            entries["rollout_backend"].value = draw(st.sampled_from(BACKENDS))
        elif fault == "quoted":
            key = draw(st.sampled_from(["rollout_max_steps", "rollout_group_size"]))
            entries[key].quoted = True
        elif fault == "yaml_int":
            key = draw(st.sampled_from(["rollout_max_steps", "rollout_group_size"]))
            entries[key].raw = draw(st.sampled_from(INT_TEXTS))
        elif fault == "yaml_str":
            entries["rollout_judge_model"].raw = draw(st.sampled_from(STRING_TEXTS))
        else:
            raw = draw(st.sampled_from(TRAINER_TEXTS))
            entries["rollout_batch_size"] = Entry("rollout_batch_size", None, raw)
    order = draw(st.permutations(list(entries.values())))
    return render(order, fmt, nested), fmt


def issues_at(text: str, fmt: str, location: str) -> list[str]:
    result = check_bytes(text, format=fmt)
    found = [*result.issues, *result.warnings]
    return [f"{issue.kind}: {issue.message}" for issue in found if issue.location == location]


def check_every_fix(text: str, fmt: str) -> list[Fix]:
    """Each fix of ``text``, each of its choices applied alone, leaves no issue at its key;
    ``fix_text`` is idempotent with and without the unsafe fixes."""
    fixes = fixes_of(text, fmt)
    for fix in fixes:
        for choice in fix.choices:
            new, applied = apply_fixes(text, [choice], fmt)
            assert applied == [choice] and new != text
            left = issues_at(new, fmt, fix.issue.location)
            assert left == [], (choice.title, text, new)
    for unsafe in (False, True):
        once = fix_text(text, format=fmt, unsafe_fixes=unsafe)
        again = fix_text(once.text, format=fmt, unsafe_fixes=unsafe)
        assert not again.changed, (text, once.text, again.text)
        fixed = {fix.issue.location for fix in once.fixes}
        left = [*once.result.issues, *once.result.warnings]
        assert not [issue for issue in left if issue.location in fixed], (text, once.text)
    return fixes


@given(configs())
def test_every_fix_of_the_corpus_clears_its_key(config: tuple[str, str]) -> None:
    text, fmt = config
    assert check_every_fix(text, fmt)  # every config of the corpus has a fix


@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
def test_every_fix_kind_in_every_format_and_layout(fmt: str, nested: bool) -> None:
    """The corpus's faults, each once, in each format and layout (what ``configs`` draws)."""
    examples: list[list[Entry]] = []

    def base() -> dict[str, Entry]:
        return {key: Entry(key, value) for key, value in BASE.items()}

    entries = base()
    entries["rollout_func"].key = "rollout_fucn"
    entries["rollout_max_steps"].quoted = True
    entries["rollout_backend"].value = "Ru-Ler"
    examples.append(list(entries.values()))
    entries = base()
    entries["rollout_func"].key = TIE
    examples.append(list(entries.values()))
    if fmt == "yaml":
        for raw in INT_TEXTS:
            entries = base()
            entries["rollout_group_size"].raw = raw
            examples.append(list(entries.values()))
        for raw in STRING_TEXTS:
            entries = base()
            entries["rollout_judge_model"].raw = raw
            entries["rollout_judge_model"].key = "rollout_judge_modl"
            examples.append(list(entries.values()))
        for raw in TRAINER_TEXTS:
            entries = base()
            entries["rollout_batch_size"] = Entry("rollout_batch_size", None, raw)
            examples.append(list(entries.values()))
    kinds = set()
    for example in examples:
        for fix in check_every_fix(render(example, fmt, nested), fmt):
            kinds.add((fix.title.split()[0], fix.applicability))
    want = {("Rename", SAFE), ("Rename", DISPLAY_ONLY), ("Change", SAFE), ("Unquote", SAFE)}
    if fmt == "yaml":
        want |= {("Write", SAFE), ("Write", UNSAFE)}
    assert kinds == want
