"""The JSON Schema: committed copy, editor-facing content, and editor/loader agreement.

The agreement property: over generated configs (every key, in and out of
range, of every type, trailing newlines, any case, set or unset, defaults
written back), the schema (draft 7, checked with the ``jsonschema`` package)
accepts a config exactly when ``load_config`` does, warnings included (they
do not fail either). Both read backend names in any case, both read an
integral float such as ``64.0`` as the integer it is (JSON Schema's
``integer`` takes it, so the loader does too), and both take a key holding
its default (``rollout_group_size: 4``) as unset for the cross-field rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from agent_rollout.backends import BACKEND_NAMES
from agent_rollout.cli.schema import render_schema
from agent_rollout.config import (
    LOOKALIKE_NEAR_PATTERN,
    ROLLOUT_KEYS,
    ConfigError,
    load_config_bytes,
    lookalike_key,
    training_config_schema,
)

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "schema" / "training-config.schema.json"
SCHEMA = training_config_schema()
VALIDATOR = Draft7Validator(SCHEMA)
NAMES = Draft7Validator(SCHEMA["definitions"]["rollout_settings"]["propertyNames"])
MANY = max(300, settings().max_examples)


def schema_accepts(doc: Any) -> bool:
    return VALIDATOR.is_valid(doc)


SURROGATE_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")


def _yaml_escape(match: re.Match[str]) -> str:
    high, low = int(match.group(1), 16), int(match.group(2), 16)
    return f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08x}"


def loader_accepts(doc: Any, fmt: str, section: str = "training") -> bool:
    # JSON text is also YAML 1.2 text, except that YAML spells a character
    # outside the BMP as one \U escape rather than a surrogate pair.
    text = json.dumps(doc)
    if fmt == "yaml":
        text = SURROGATE_PAIR.sub(_yaml_escape, text)
    try:
        load_config_bytes(text, format=fmt, source="<generated>", section=section)
    except ConfigError:
        return False
    return True


# ------------------------------------------------------------ the committed file


def test_committed_schema_is_current() -> None:
    assert COMMITTED.exists(), "run: agent-rollout schema -o schema/training-config.schema.json"
    assert COMMITTED.read_text(encoding="utf-8") == render_schema(), (
        "schema/training-config.schema.json is stale; regenerate it with: "
        "agent-rollout schema -o schema/training-config.schema.json"
    )


def test_schema_is_valid_draft_7() -> None:
    Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"


# ------------------------------------------------------------ what editors show


def test_every_rollout_key_has_hover_text_and_completion_data() -> None:
    section = SCHEMA["definitions"]["rollout_settings"]
    assert set(section["properties"]) == set(ROLLOUT_KEYS)
    for key, prop in section["properties"].items():
        text = json.dumps(prop)
        assert '"description"' in text, key
        assert '"examples"' in text or '"default"' in text, key
        assert '"markdownDescription"' in text, key
        assert "Example:" in text and "```yaml" in text, key
    backend = section["properties"]["rollout_backend"]["anyOf"][0]
    assert backend["anyOf"][0]["enum"] == list(BACKEND_NAMES)
    assert len(backend["anyOf"][0]["markdownEnumDescriptions"]) == len(BACKEND_NAMES)
    func = section["properties"]["rollout_func"]["anyOf"][0]
    assert func["patternErrorMessage"]


def test_no_unresolvable_id() -> None:
    # No public URL serves the schema, so it names none; editors load it by path.
    assert "$id" not in SCHEMA


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return found + [
            p for key, value in node.items() if key != "pattern" for p in _patterns(value)
        ]
    if isinstance(node, list):
        return [p for value in node for p in _patterns(value)]
    return []


PATTERNS = sorted(set(_patterns(SCHEMA)))
SAMPLES = [
    "a:b",
    "pkg.mod:fn",
    "http://127.0.0.1:8000/v1",
    "http://a b",
    "ftp://h",
    "x\x00y",
    "rolout_func",
    "Rollout-x",
    "rollout_judge_modle",
    "roll_func",
    "ROLLOUT_SOURCE",
    "résumé",
    "",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterns_read_the_same_in_python_and_ecmascript(pattern: str) -> None:
    # regress implements ECMAScript regular expressions (what editors run).
    regress = pytest.importorskip("regress")
    ecma = regress.Regex(pattern, "u")
    python = re.compile(pattern)
    for sample in SAMPLES:
        assert (ecma.find(sample) is not None) == (python.search(sample) is not None), sample


@given(st.text(alphabet="rolutfncbakemxsp_gizdjRLO-é\n", max_size=24))
@settings(max_examples=MANY)
def test_lookalike_patterns_match_the_python_rule(key: str) -> None:
    by_schema = (
        key not in ROLLOUT_KEYS
        and "\n" not in key
        and re.search(LOOKALIKE_NEAR_PATTERN, key) is not None
    )
    assert by_schema == lookalike_key(key)
    assert NAMES.is_valid(key) == (not lookalike_key(key))


EDITS = st.lists(
    st.tuples(st.integers(0, 30), st.sampled_from("ids"), st.sampled_from("aoluRTX_-9é")),
    max_size=3,
)


@given(st.sampled_from(ROLLOUT_KEYS), EDITS)
@settings(max_examples=MANY)
def test_lookalike_rule_on_edited_keys(key: str, edits: list[tuple[int, str, str]]) -> None:
    chars = list(key)
    for at, op, char in edits:
        at = min(at, len(chars))
        if op == "i":
            chars.insert(at, char)
        elif chars and at < len(chars):
            chars[at : at + 1] = [char] if op == "s" else []
    edited = "".join(chars)
    expected = edited != key and (edited not in ROLLOUT_KEYS) and len(edits) <= 2
    if expected:
        assert lookalike_key(edited)
    assert NAMES.is_valid(edited) == (not lookalike_key(edited))


# ------------------------------------------------------------ agreement property

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
URLS = ["http://h", "https://h:1/v1?q=1#f", "ftp://h", "http://", "http://a b", "http://h\n", 1]
MODELS = st.one_of(
    st.sampled_from(["j", "", "a\x00b", "m" * 200, "m" * 201, 3, False, "j\n"]), TEXT
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "rollout_backend": st.one_of(
        st.sampled_from([*BACKEND_NAMES, "verl", "", "x" * 40, "art\x00", "art\n", "Ruler\n"]),
        st.sampled_from([True, 3, 1.5, [], {}]),
        st.sampled_from(BACKEND_NAMES).map(str.upper),
        TEXT,
    ),
    "rollout_func": st.sampled_from(
        ["m:f", "pkg.mod:fn", "a:b\n", "nocolon", "", "a" * 130 + ":f", ":f", 5, True, [], "é:f"]
    ),
    "rollout_max_steps": st.one_of(
        st.sampled_from([0, 1, 64, 100_000, 100_001, -3, True, "5", 1.5, [], "64", 5.0, 64.0]),
        st.sampled_from([0.0, 100_000.0, 100_001.0, 1e300, -0.0, 2.5e2]),
        st.integers(-5, 200_000),
        # Whole numbers in quotes (taken, with a warning) and strings that are not quite.
        st.integers(-5, 200_000).map(str),
        st.sampled_from(["0", "05", "+5", "5 ", " 5", "5\n", "1_000", "5.0", "\u0665", "1e3", ""]),
    ),
    "rollout_group_size": st.one_of(
        st.sampled_from([0, 1, 4, 4.0, 8, 8.0, 1024, 1025, 1024.0, False, True, "4", 2.5]),
        st.sampled_from(["8", "1024", "1025", "0", "04", "4 ", "4\n"]),
    ),
    "rollout_judge_model": MODELS,
    "rollout_judge_base_url": st.sampled_from(URLS),
    "rollout_policy_model": MODELS,
    "rollout_policy_base_url": st.sampled_from(URLS),
    "rollout_source": st.one_of(st.sampled_from(["d.jsonl", "", "a\x00b", 2, "s" * 4097]), TEXT),
    "rollout_gym_config": st.one_of(
        st.sampled_from(["gym.yaml", "a.yaml,b.yaml", "", "a\x00b", 2, "g" * 4097]), TEXT
    ),
    "rollout_gym_head_port": st.one_of(
        st.sampled_from([0, 1, 11000, 11000.0, 65535, 65536, -1, True, "11000", 1.5, []]),
        st.integers(0, 70_000).map(str),
    ),
}
OTHER_KEYS = st.one_of(
    st.sampled_from(
        ["lr", "epochs", "rollouts", "rollout", "rollout_fucn", "Rollout-Backend", "rollout_n"]
    ),
    st.text(alphabet="rolutfncbakemxsp_gizdjRLO-", max_size=16),
)


@st.composite
def sections(draw: st.DrawFn) -> Any:
    section: dict[str, Any] = {}
    for key, values in VALUES.items():
        if draw(st.integers(0, 9)) < 5:
            section[key] = draw(st.one_of(st.none(), values))
    if draw(st.booleans()):
        # Bias towards configs that pass, so both outcomes are exercised.
        backend = draw(st.sampled_from(BACKEND_NAMES))
        section["rollout_backend"] = backend
        if backend in ("art", "openenv", "ruler"):
            section["rollout_func"] = "m:f"
        if backend == "ruler":
            section["rollout_judge_model"] = "judge"
        if backend in ("art", "ruler", "nemo_gym") and draw(st.booleans()):
            # The policy pair, whole or half (refused by both), and nemo_gym's live mode.
            for key, value in (
                ("rollout_policy_model", "p"),
                ("rollout_policy_base_url", "http://h"),
            ):
                if draw(st.integers(0, 3)):
                    section[key] = value
            if backend == "nemo_gym" and draw(st.booleans()):
                section["rollout_gym_config"] = "gym.yaml"
                section.pop("rollout_source", None)
    for key in draw(st.lists(OTHER_KEYS, max_size=3)):
        section[key] = draw(st.sampled_from([1, "x", None, [1]]))
    return section


@st.composite
def documents(draw: st.DrawFn) -> Any:
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(st.sampled_from([[], 3, "text", None]))
    if shape == 1:
        return {"model": "m"}
    if shape == 2:
        return {"training": draw(st.sampled_from([None, [], 3, "x"]))}
    return {"model": "m", "training": draw(sections())}


@given(documents(), st.sampled_from(["json", "yaml"]))
@settings(max_examples=MANY)
def test_schema_accepts_exactly_what_the_loader_accepts(doc: Any, fmt: str) -> None:
    assert schema_accepts(doc) == loader_accepts(doc, fmt)


@given(sections(), st.sampled_from(BACKEND_NAMES))
@settings(max_examples=100)
def test_backend_case_is_read_alike(section: dict[str, Any], backend: str) -> None:
    lower = {**section, "rollout_backend": backend}
    for spelling in (backend.upper(), backend.title()):
        other = {"training": {**section, "rollout_backend": spelling}}
        assert loader_accepts(other, "json") == loader_accepts({"training": lower}, "json")
        assert schema_accepts(other) == loader_accepts(other, "json")


@pytest.mark.parametrize(
    ("key", "backend"),
    [
        ("rollout_max_steps", "art"),
        ("rollout_group_size", "art"),
        ("rollout_gym_head_port", "nemo_gym"),
    ],
)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_integral_floats_are_read_alike(key: str, backend: str, fmt: str) -> None:
    # JSON Schema's integer takes 8.0 (JSON readers cannot tell it from 8), so the loader
    # does too; a whole number in quotes is 8 to both (the trainers' parsers read it so),
    # a fraction, a bool or any other string is refused by both.
    live = {"rollout_gym_config": "g.yaml", "rollout_policy_model": "p"}
    base = (
        {"rollout_backend": backend, "rollout_func": "m:f"}
        if backend == "art"
        else {
            "rollout_backend": backend,
            **live,
            "rollout_policy_base_url": "http://h",
        }
    )
    for value, accepted in (
        (8.0, True),
        (8, True),
        ("8", True),
        (8.5, False),
        (True, False),
        ("8 ", False),
        ("8.0", False),
        ("08", False),
    ):
        doc = {"training": {**base, key: value}}
        assert schema_accepts(doc) is accepted, value
        assert loader_accepts(doc, fmt) is accepted, value
    text = "training:\n" + "".join(f"  {k}: {v}\n" for k, v in base.items()) + f"  {key}: 8.0\n"
    settings = load_config_bytes(text)
    assert getattr(settings, key) == 8 and type(getattr(settings, key)) is int


@pytest.mark.parametrize("value", ["art\n", "ART\n", "openenv\n"])
def test_a_trailing_newline_is_refused_by_both(value: str) -> None:
    # A YAML block scalar (`rollout_backend: |`) ends with a newline; Python's "$" would
    # let it through the pattern, so the schema says "no newline" as the loader does.
    doc = {"training": {"rollout_backend": value, "rollout_func": "m:f"}}
    assert not schema_accepts(doc) and not loader_accepts(doc, "yaml")
    text = "training:\n  rollout_backend: |\n    art\n  rollout_func: m:f\n"
    with pytest.raises(ConfigError, match="is not supported"):
        load_config_bytes(text)


@pytest.mark.parametrize(
    "section",
    [
        # A key at its default is unset: a dump of the model validates again.
        {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_group_size": 4},
        {"rollout_backend": "nemo_gym", "rollout_group_size": 4.0},
        {"rollout_group_size": 4, "rollout_max_steps": 64},
        {
            "rollout_backend": "art",
            "rollout_policy_model": "p",
            "rollout_policy_base_url": "http://h",
        },
    ],
)
def test_defaults_and_whole_pairs_pass_both(section: dict[str, Any]) -> None:
    doc = {"training": section}
    assert schema_accepts(doc) and loader_accepts(doc, "json")


@pytest.mark.parametrize(
    "section",
    [
        {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_group_size": 5},
        {"rollout_backend": "art", "rollout_func": "m:f", "rollout_policy_model": "p"},
        {"rollout_backend": "RULER", "rollout_policy_base_url": "http://h"},
        {"rollout_backend": "nemo_gym", "rollout_gym_head_port": 11000},
        {"rollout_backend": "art", "rollout_gym_head_port": 11000},
        {
            "rollout_backend": "nemo_gym",
            "rollout_gym_config": "g.yaml",
            "rollout_policy_model": "p",
            "rollout_policy_base_url": "http://h",
            "rollout_gym_head_port": 70000,
        },
    ],
)
def test_half_pairs_and_misplaced_keys_fail_both(section: dict[str, Any]) -> None:
    doc = {"training": section}
    assert not schema_accepts(doc) and not loader_accepts(doc, "json")


def test_property_sees_both_outcomes() -> None:
    good = {
        "training": {"rollout_backend": "ruler", "rollout_func": "m:f", "rollout_judge_model": "j"}
    }
    bad = {"training": {"rollout_backend": "openenv", "rollout_source": "x.jsonl"}}
    assert schema_accepts(good) and loader_accepts(good, "yaml")
    assert not schema_accepts(bad) and not loader_accepts(bad, "yaml")
    # Warnings are not errors for either.
    for backend in ("ruler", "art", "openenv"):
        warned = {"training": {"rollout_backend": backend}}
        assert schema_accepts(warned) and loader_accepts(warned, "yaml")


def test_dotted_section_schema_nests_like_the_loader() -> None:
    schema = Draft7Validator(training_config_schema("trainer.rollout"))
    good = {"trainer": {"lr": 1, "rollout": {"rollout_backend": "Art"}}}
    bad = {"trainer": {"rollout": {"rollout_backend": "verl"}}}
    assert schema.is_valid(good) and loader_accepts(good, "json", section="trainer.rollout")
    assert not schema.is_valid(bad) and not loader_accepts(bad, "json", section="trainer.rollout")
    assert not schema.is_valid({"trainer": {}})
    assert json.loads(render_schema("training")) == training_config_schema("training")
    assert json.loads(render_schema("")) == training_config_schema(None)


def test_the_default_schema_reads_a_file_as_check_does_by_default() -> None:
    """A flat trainer config (our keys at the top level) is valid for the default schema
    exactly when ``check`` with no section accepts it, and so is a ``training`` section;
    a file with neither is refused by both."""
    cases = [
        {"learning_rate": 1e-6, "rollout_backend": "openenv", "rollout_func": "m.n:f"},
        {"learning_rate": 1e-6, "rollout_backend": "verl"},
        {"training": {"rollout_backend": "art"}, "rollout_backend": "verl"},
        {"training": {"rollout_backend": "verl"}},
        {"training": 5, "rollout_backend": "art"},
        {"training": 5},
        {"learning_rate": 1e-6},
        {"learning_rate": 1e-6, "rollout_backnd": "art"},
        {"rollout_batch_size": 8},
        # A training mapping of the trainer's own does not hide our keys at the top level.
        {"training": {"epochs": 3}, "rollout_backend": "openenv", "rollout_func": "m.n:f"},
        {"training": {"epochs": 3}, "rollout_backend": "bogus"},
        {"training": {"epochs": 3}, "rollout_backnd": "bogus"},
        {"training": {"epochs": 3}, "lr": 1},
        {"training": {"rollout_backend": "art"}, "rollout_func": 5},
        {"training": {"rollout_backnd": "art"}, "rollout_backend": "art"},
        {"training": {"rollout_backnd": "art"}},
        {"training": {"epochs": 3}, "rollout_func": 5},
    ]
    for doc in cases:
        try:
            load_config_bytes(json.dumps(doc), format="json")
            by_check = True
        except ConfigError:
            by_check = False
        assert schema_accepts(doc) == by_check, doc
    assert schema_accepts(cases[0]) and not schema_accepts(cases[1])
    assert schema_accepts(cases[9]) and not schema_accepts(cases[10])
