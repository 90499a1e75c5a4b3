"""One mistake, one diagnostic: a look-alike key is its own error and nothing more.

The cross-field rules read a look-alike (``rolout_backend``) as the key it stands
for when it stands for exactly one that the section does not set spelt right,
and wait for it otherwise (``read_as_meant``); no error but its own is placed at
it. The same one error comes out of every way in: ``RolloutSettings``, a host's
model, ``check_bytes``, ``load_config_bytes`` and ``ConfigDocument.validate``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from agent_rollout.backends import BACKEND_NAMES, LIVE_KEYS, key_backends
from agent_rollout.config import (
    ROLLOUT_KEYS,
    ConfigError,
    RolloutFields,
    RolloutSettings,
    check_bytes,
    load_config_bytes,
    read_config_bytes,
)
from agent_rollout.config._lookalike import meant_keys

VALUES: dict[str, Any] = {
    "rollout_func": st.sampled_from(["pkg.mod:play", "rollouts:run"]),
    "rollout_max_steps": st.integers(1, 64),
    "rollout_group_size": st.integers(1, 16),
    "rollout_judge_model": st.sampled_from(["judge", "openai/gpt-4o-mini"]),
    "rollout_judge_base_url": st.just("http://127.0.0.1:8000/v1"),
    "rollout_policy_model": st.sampled_from(["policy", "Qwen/Qwen2.5-0.5B"]),
    "rollout_policy_base_url": st.just("http://127.0.0.1:8001/v1"),
    "rollout_source": st.sampled_from(["data.jsonl", "runs/trajectories.jsonl"]),
    "rollout_gym_config": st.just("configs/env.yaml"),
    "rollout_gym_head_port": st.integers(11000, 12000),
}


def completed(backend: Any, section: dict[str, Any]) -> dict[str, Any]:
    """``section`` made to obey the rules that are errors (pairs both set, one of two)."""
    if "rollout_func" in section and "rollout_source" in section:
        del section["rollout_source"]
    policy = ("rollout_policy_model", "rollout_policy_base_url")
    live = LIVE_KEYS.get(backend or "")
    if live is not None and any(key in section for key in live[1]):
        section.setdefault(live[0], "configs/env.yaml")
    if any(key in section for key in policy) or (live and live[0] in section):
        section.setdefault("rollout_policy_model", "policy")
        section.setdefault("rollout_policy_base_url", "http://127.0.0.1:8001/v1")
    return section


@st.composite
def valid_sections(draw: st.DrawFn) -> dict[str, Any]:
    """A section the rules accept: a backend (or none) and keys it takes."""
    backend = draw(st.sampled_from([None, *BACKEND_NAMES]))
    section: dict[str, Any] = {} if backend is None else {"rollout_backend": backend}
    for key, values in VALUES.items():
        takes = backend in key_backends(key) or key == "rollout_max_steps"
        if takes and draw(st.booleans()):
            section[key] = draw(values)
    return completed(backend, section)


TYPO_CHARS = "abcdefgijkmnpqrstuvwxyzABCXYZ0189_-"


@st.composite
def typos(draw: st.DrawFn, key: str) -> str:
    """``key`` misspelt: one or two edits (delete, insert, substitute, swap two
    neighbours), or a change the look-alike rule reads through (case, ``-``)."""
    kind = draw(st.sampled_from(["delete", "insert", "substitute", "swap", "case", "dash"]))
    word = key
    for _ in range(draw(st.integers(1, 2)) if kind in ("delete", "insert", "substitute") else 1):
        at = draw(st.integers(0, len(word) - 1))
        if kind == "delete":
            word = word[:at] + word[at + 1 :]
        elif kind == "insert":
            word = word[:at] + draw(st.sampled_from(TYPO_CHARS)) + word[at:]
        elif kind == "substitute":
            word = word[:at] + draw(st.sampled_from(TYPO_CHARS)) + word[at + 1 :]
        elif kind == "swap":
            at = min(at, len(word) - 2)
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        elif kind == "case":
            word = word[:at] + word[at:].upper()
        else:
            word = word.replace("_", "-", draw(st.integers(1, 3)))
    return word


def text_of(section: dict[str, Any], fmt: str) -> str:
    """``section`` as the ``training`` section of a file; our values are strings and ints,
    written alike in the three formats."""
    if fmt == "json":
        return json.dumps({"training": section}, indent=1)
    if fmt == "toml":
        lines = ["[training]", *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in section.items())]
        return "\n".join(lines) + "\n"
    return "training:\n" + "".join(
        f"  {json.dumps(k)}: {json.dumps(v)}\n" for k, v in section.items()
    )


def model_errors(section: dict[str, Any], model: type[BaseModel] = RolloutSettings) -> list[Any]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(section)
    return [(error["type"], tuple(error["loc"])) for error in caught.value.errors()]


class Host(RolloutFields):
    """A trainer's own model with our keys mixed in."""

    learning_rate: float = 1e-5


def assert_one_error_at(typo: str, meant: str, spelt: dict[str, Any], fmt: str) -> None:
    """``spelt`` (valid) holds ``meant`` where the typo'd section holds ``typo``: one error,
    at ``typo``, every way in; the warnings of the section spelt right, no other."""
    section = {typo if key == meant else key: value for key, value in spelt.items()}
    one = [("rollout_unknown_key", (typo,))]
    assert model_errors(section) == one
    assert model_errors(section, Host) == one
    right = check_bytes(text_of(spelt, fmt), format=fmt)
    assert right.issues == []
    result = check_bytes(text_of(section, fmt), format=fmt)
    assert [(i.kind, i.location) for i in result.issues] == [("unknown_key", f"training.{typo}")]
    warned = [(w.kind, w.location, w.message) for w in result.warnings]
    assert warned == [(w.kind, w.location, w.message) for w in right.warnings]
    with pytest.raises(ConfigError) as caught:
        load_config_bytes(text_of(section, fmt), format=fmt)
    assert caught.value.issues == result.issues
    with pytest.raises(ConfigError) as caught:
        read_config_bytes(text_of(section, fmt), format=fmt).validate(Host, under="training")
    assert [(i.kind, i.location) for i in caught.value.issues] == [
        ("unknown_key", f"training.{typo}")
    ]


@given(data=st.data(), fmt=st.sampled_from(["yaml", "json", "toml"]))
def test_a_typo_in_a_valid_section_is_one_error_at_the_typo(data: st.DataObject, fmt: str) -> None:
    spelt = data.draw(valid_sections())
    RolloutSettings.model_validate(spelt)  # the generator's promise: valid as spelt
    assume(spelt)
    meant = data.draw(st.sampled_from(sorted(spelt)))
    typo = data.draw(typos(meant))
    assume(typo not in ROLLOUT_KEYS and meant_keys(typo) == (meant,))
    assert_one_error_at(typo, meant, spelt, fmt)


@given(
    data=st.data(),
    fmt=st.sampled_from(["yaml", "json", "toml"]),
    other=st.one_of(st.sampled_from(BACKEND_NAMES), st.integers(0, 99), st.just("x:y")),
)
def test_a_look_alike_beside_the_key_spelt_right_is_one_error(
    data: st.DataObject, fmt: str, other: Any
) -> None:
    """The key spelt right keeps its value, whatever the look-alike beside it holds."""
    spelt = data.draw(valid_sections())
    assume(spelt)
    meant = data.draw(st.sampled_from(sorted(spelt)))
    typo = data.draw(typos(meant))
    assume(typo not in ROLLOUT_KEYS and meant_keys(typo) == (meant,))
    section = {**spelt, typo: data.draw(st.sampled_from([spelt[meant], other]))}
    one = [("rollout_unknown_key", (typo,))]
    assert model_errors(section) == one
    right = check_bytes(text_of(spelt, fmt), format=fmt)
    result = check_bytes(text_of(section, fmt), format=fmt)
    assert [(i.kind, i.location) for i in result.issues] == [("unknown_key", f"training.{typo}")]
    assert [w.message for w in result.warnings] == [w.message for w in right.warnings]


def test_the_issue_example_is_the_look_alike_error_alone() -> None:
    text = "rolout_backend: art\nrollout_func: pkg.mod:play\nrollout_group_size: 8\n"
    result = check_bytes(text, section=None)
    assert [(i.line, i.col, i.message) for i in result.issues] == [
        (1, 1, "unknown key 'rolout_backend'; did you mean 'rollout_backend'?")
    ]
    assert result.warnings == []
    section = {"rolout_backend": "art", "rollout_func": "pkg.mod:play", "rollout_group_size": 8}
    assert model_errors(section) == [("rollout_unknown_key", ("rolout_backend",))]


def test_a_rule_the_section_breaks_spelt_right_still_speaks_elsewhere() -> None:
    # openenv takes no group size, whatever the backend's key is spelt: said at that key,
    # naming the backend's key as the file spells it.
    text = "rolout_backend: openenv\nrollout_func: m:f\nrollout_group_size: 8\n"
    result = check_bytes(text, section=None)
    assert [(i.line, i.location, i.message) for i in result.issues] == [
        (1, "rolout_backend", "unknown key 'rolout_backend'; did you mean 'rollout_backend'?"),
        (
            3,
            "rollout_group_size",
            "rollout_group_size needs rolout_backend 'art' or 'ruler' or 'nemo_gym', "
            "but rolout_backend is 'openenv'",
        ),
    ]
    # A rule broken at the look-alike itself waits for it: its own error is the one there.
    lone = check_bytes("rollout_fucn: m:f\n", section=None)
    assert [i.kind for i in lone.issues] == ["unknown_key"]
    half = check_bytes("rollout_backend: art\nrollout_polcy_model: p\n", section=None)
    assert [i.kind for i in half.issues] == ["unknown_key"]


def test_an_unresolved_look_alike_holds_its_rules_back() -> None:
    # Nearest to two keys: neither rollout_func's nor rollout_source's rules speak (openenv
    # refuses a source, and misses a rollout_func), nor their warnings.
    assert meant_keys("rollout_sounc") == ("rollout_func", "rollout_source")
    result = check_bytes("rollout_backend: openenv\nrollout_sounc: x\n", section=None)
    assert [i.location for i in result.issues] == ["rollout_sounc"]
    assert result.warnings == []
    # Two look-alikes of the backend: every rule waits (each reads the backend).
    two = {"rolout_backend": "art", "rollout_backnd": "ruler", "rollout_judge_model": "j"}
    assert sorted(model_errors(two)) == [
        ("rollout_unknown_key", ("rollout_backnd",)),
        ("rollout_unknown_key", ("rolout_backend",)),
    ]
    text = "training:\n  rolout_backend: art\n  rollout_backnd: ruler\n  rollout_judge_model: j\n"
    result = check_bytes(text)
    assert [i.kind for i in result.issues] == ["unknown_key", "unknown_key"]
    assert result.warnings == []


def test_a_look_alike_value_is_not_read_for_yaml_versions() -> None:
    # rollout_max_steps: 010 warns (8 or 10?); misspelt, the typo's error is the one issue.
    right = check_bytes("training:\n  rollout_max_steps: 010\n")
    assert [w.kind for w in right.warnings] == ["yaml_version"]
    typo = check_bytes("training:\n  rollout_max_step: 010\n")
    assert ([i.kind for i in typo.issues], typo.warnings) == (["unknown_key"], [])
