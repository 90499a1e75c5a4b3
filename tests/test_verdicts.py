"""One verdict per config, whoever reads it (issue 36).

Every reader of this package -- ``check_bytes``/``check_file``,
``load_config``, ``read_config(...).validate`` with a host mixing in
``RolloutFields``, ``RolloutSettings.from_section`` over a dict, an OmegaConf
``DictConfig``, a dataclass or a namespace -- gives the same verdict, the same
values and the same warnings for the same text; the JSON Schema accepts what
they accept; and that verdict is the one the trainer runs with, read by the
real parsers: TRL's ``TrlParser`` (transformers' ``HfArgumentParser``),
OmegaConf (structured, as Hydra composes it), argparse with
``add_rollout_arguments`` and an axolotl-style pydantic host in lax mode.

Where the trainers' parsers disagree among themselves, our verdict is the
stricter side, and only there (asserted, not skipped):

- text an int key's parser converts but is not a plain whole number (``"8 "``,
  ``"+8"``, ``"1_000"``, ``"08"``; pydantic's lax mode also takes ``"8.0"`` and
  a bool): every parser reads an int, we refuse it;
- a number or a bool on a string key: OmegaConf turns it into a string, we
  refuse it, as pydantic and TRL (whose dataclass then holds the number) do;
- an integral float on an int key (``8.0``): OmegaConf refuses it, we read 8,
  as JSON Schema's ``integer``, pydantic and TRL do.

The row engines are not involved: the config layer never calls them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from agent_rollout._limits import MAX_GROUP_SIZE, MAX_PORT, MAX_ROLLOUT_STEPS
from agent_rollout.backends import BACKEND_NAMES
from agent_rollout.config import (
    ROLLOUT_KEYS,
    ConfigError,
    RolloutArguments,
    RolloutFields,
    RolloutSettings,
    add_rollout_arguments,
    check_bytes,
    check_file,
    load_config,
    read_config,
    training_config_schema,
)
from agent_rollout.config._fields import KEY_HELP
from support import facts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
INT_RANGES = {
    "rollout_max_steps": (1, MAX_ROLLOUT_STEPS),
    "rollout_group_size": (1, MAX_GROUP_SIZE),
    "rollout_gym_head_port": (1, MAX_PORT),
}
INT_KEYS = tuple(INT_RANGES)
STR_KEYS = tuple(key for key in ROLLOUT_KEYS if key not in INT_RANGES)
FLAT_SCHEMA = Draft7Validator(training_config_schema(None))


class MixinHost(RolloutFields):
    """A trainer's flat config model mixing our keys in (axolotl's way)."""

    model_config = ConfigDict(extra="allow")
    learning_rate: float = 1e-5
    num_generations: int = 8


class LaxHost(BaseModel):
    """An axolotl-style pydantic host declaring our keys itself, in lax mode."""

    model_config = ConfigDict(extra="ignore")
    rollout_backend: Optional[str] = None
    rollout_func: Optional[str] = None
    rollout_max_steps: Optional[int] = 64
    rollout_group_size: Optional[int] = 4
    rollout_judge_model: Optional[str] = None
    rollout_judge_base_url: Optional[str] = None
    rollout_policy_model: Optional[str] = None
    rollout_policy_base_url: Optional[str] = None
    rollout_source: Optional[str] = None
    rollout_gym_config: Optional[str] = None
    rollout_gym_head_port: Optional[int] = None


assert tuple(LaxHost.model_fields) == ROLLOUT_KEYS


@contextlib.contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def values_of(model: Any) -> dict[str, Any]:
    return {key: getattr(model, key) for key in ROLLOUT_KEYS}


def coerced(model: Any) -> list[tuple[str, str]]:
    return sorted((w.key, w.message) for w in model.rollout_warnings if w.kind == "coerced")


# ------------------------------------------------------------ rendering


def _toml_string(text: str) -> str:
    body = json.dumps(text, ensure_ascii=False)[1:-1].replace("\x7f", "\\u007f")
    return f'"{body}"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise AssertionError(value)


def render(section: dict[str, Any], fmt: str) -> str:
    """The section as a flat config file's text (TRL's and axolotl's layout)."""
    if fmt == "yaml":
        return yaml.safe_dump(section, sort_keys=False, allow_unicode=True)
    if fmt == "json":
        return json.dumps(section, ensure_ascii=False)
    # TOML has no null: a key set to null is left out, which TOML readers give as unset.
    return "".join(
        f"{key} = {_toml_value(value)}\n" for key, value in section.items() if value is not None
    )


def read_back(text: str, fmt: str) -> Any:
    """The values every trainer's reader of that format gets."""
    if fmt == "yaml":
        return yaml.safe_load(text)
    if fmt == "json":
        return json.loads(text)
    return tomllib.loads(text)


def flags(section: dict[str, Any]) -> list[str]:
    """The section's values on a command line: text, as a shell hands them over."""
    return [f"--{key}={value}" for key, value in section.items() if value is not None]


# ------------------------------------------------------------ generated sections

TEXT = st.text(alphabet="abcAB09:._/-é ", max_size=6)
STRING_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "rollout_backend": st.one_of(
        st.sampled_from([*BACKEND_NAMES, "ART", "Ruler", "verl", "", "art\n"]), TEXT
    ),
    "rollout_func": st.one_of(st.sampled_from(["m:f", "pkg.mod:fn", "pkg.mod.fn", ":f"]), TEXT),
    "rollout_judge_model": st.one_of(st.sampled_from(["j", "openai/o4-mini", "a\x00b"]), TEXT),
    "rollout_judge_base_url": st.sampled_from(["http://h", "https://h:1/v1", "ftp://h", "x"]),
    "rollout_policy_model": st.one_of(st.sampled_from(["p", "Qwen/Qwen2.5-0.5B"]), TEXT),
    "rollout_policy_base_url": st.sampled_from(["http://h", "http://127.0.0.1:8000/v1", "h"]),
    "rollout_source": st.one_of(st.sampled_from(["data/gym.jsonl", "/srv/t.jsonl", ""]), TEXT),
    "rollout_gym_config": st.one_of(st.sampled_from(["g.yaml", "a.yaml,b.yaml"]), TEXT),
}
NOT_STRINGS = st.sampled_from([8, 0, -1, 2.5, 8.0, True, False, [], ["a"]])


def int_values(key: str) -> st.SearchStrategy[Any]:
    low, high = INT_RANGES[key]
    return st.one_of(
        st.integers(low - 2, high + 2),
        st.sampled_from([low, high, 4, 8, 64]),
        # A whole number in quotes, in range or not (what a CLI or a quoted YAML value gives).
        st.integers(low - 2, high + 2).map(str),
        st.sampled_from(["8 ", " 8", "+8", "08", "1_000", "8.0", "8\n", "x", "", "\u0668"]),
        st.sampled_from([8.0, float(high), float(high + 1), 2.5, True, False, []]),
    )


def key_value(key: str) -> st.SearchStrategy[Any]:
    if key in INT_RANGES:
        return int_values(key)
    return st.one_of(STRING_VALUES[key], STRING_VALUES[key], NOT_STRINGS)


def base_section(draw: st.DrawFn) -> dict[str, Any]:
    """A valid section of a backend (or none), its optional keys set or not."""
    backend = draw(st.sampled_from([*BACKEND_NAMES, None]))
    maybe = st.booleans()
    section: dict[str, Any] = {}
    if backend is not None:
        section["rollout_backend"] = draw(st.sampled_from([backend, backend.upper()]))
    if backend in ("openenv", "ruler") or (backend == "art" and draw(maybe)):
        section["rollout_func"] = "pkg.mod:fn"
    elif backend in ("art", "nemo_gym") and draw(maybe):
        section["rollout_source"] = "data/rollouts.jsonl"
    if backend == "ruler":
        section["rollout_judge_model"] = "openai/o4-mini"
        if draw(maybe):
            section["rollout_judge_base_url"] = "https://judge.example/v1"
    live = backend == "nemo_gym" and "rollout_source" not in section and draw(maybe)
    if live:
        section["rollout_gym_config"] = "gym.yaml"
        if draw(maybe):
            section["rollout_gym_head_port"] = draw(st.sampled_from([11500, "11500"]))
    if live or (backend in ("art", "ruler") and draw(maybe)):
        section["rollout_policy_model"] = "Qwen/Qwen2.5-0.5B-Instruct"
        section["rollout_policy_base_url"] = "http://127.0.0.1:8000/v1"
    if live or backend in ("art", "ruler"):
        if draw(maybe):
            section["rollout_group_size"] = draw(st.sampled_from([8, "8", 8.0, 4, "4"]))
    if draw(maybe):
        section["rollout_max_steps"] = draw(st.sampled_from([12, "12", 12.0, 64]))
    return section


@st.composite
def sections(draw: st.DrawFn, nulls: bool = True) -> dict[str, Any]:
    """A valid section with up to two keys set to any kind of value (or null)."""
    section = base_section(draw)
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(ROLLOUT_KEYS))
        null = nulls and draw(st.integers(0, 5)) == 0
        section[key] = draw(st.none() if null else key_value(key))
    return section


# ------------------------------------------------------------ the readers


@dataclasses.dataclass
class Verdict:
    values: Optional[dict[str, Any]]
    """None: refused."""
    coerced: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    error_keys: frozenset[str] = frozenset()


def ours_by_check(text: str, fmt: str, base: Path) -> Verdict:
    result = check_bytes(text, format=fmt, section=None, base_dir=str(base))
    said = sorted(
        (issue.location, issue.message) for issue in result.warnings if issue.kind == "coerced"
    )
    if result.settings is None:  # (its warnings are reported too, but raise with nothing else)
        keys = frozenset(issue.location.split(".")[0] for issue in result.issues)
        return Verdict(None, [], keys)
    assert said == coerced(result.settings)
    return Verdict(values_of(result.settings), said)


def ours_by_load_config(path: Path) -> Verdict:
    try:
        settings = load_config(path, section=None)
    except ConfigError:
        return Verdict(None)
    for warning in settings.rollout_warnings:  # each placed in the file
        assert warning.issue is not None and warning.issue.path == str(path)
    return Verdict(values_of(settings), coerced(settings))


def ours_by_document(path: Path) -> Verdict:
    document = read_config(path)
    try:
        host = document.validate(MixinHost)
    except ConfigError:
        return Verdict(None)
    said = sorted(
        (issue.location, issue.message)
        for issue in document.warnings(host)
        if issue.kind == "coerced"
    )
    assert said == coerced(host)
    return Verdict(values_of(host), said)


def ours_by_section(section: Any, base: Path) -> Verdict:
    try:
        settings = RolloutSettings.from_section(section, base_dir=base)
    except ValidationError:
        return Verdict(None)
    return Verdict(values_of(settings), coerced(settings))


def trainer_outcome(parse: Any, base: Path) -> tuple[str, Optional[dict[str, Any]]]:
    """("parser", None): the trainer's parser refused; ("ours", None): ours refused
    what it parsed; ("ran", values): the trainer runs with these."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parsed = parse()
    except (SystemExit, ValidationError, ValueError, TypeError) as exc:
        if isinstance(exc, ValidationError) and exc.title != "LaxHost":
            raise
        return "parser", None
    except Exception as exc:  # OmegaConf's own errors
        if type(exc).__module__.split(".")[0] != "omegaconf":
            raise
        return "parser", None
    verdict = ours_by_section(parsed, base)
    return ("ran", verdict.values) if verdict.values is not None else ("ours", None)


def by_trl(path: Path) -> Any:
    trl = pytest.importorskip("trl")
    parser = trl.TrlParser((RolloutArguments,))
    (arguments,) = parser.parse_args_and_config(
        ["--config", str(path)], fail_with_unknown_args=False
    )
    return arguments


def by_omegaconf(data: dict[str, Any]) -> Any:
    omegaconf = pytest.importorskip("omegaconf")
    ours = {key: value for key, value in data.items() if key in ROLLOUT_KEYS}
    return omegaconf.OmegaConf.merge(omegaconf.OmegaConf.structured(RolloutArguments), ours)


def by_lax_host(data: dict[str, Any]) -> Any:
    return LaxHost.model_validate(data).model_dump(exclude_unset=True)


def by_argparse(argv: list[str]) -> Any:
    parser = argparse.ArgumentParser(prog="train_ppo_ray")
    parser.add_argument("--rollout_batch_size", type=int, default=1024)
    add_rollout_arguments(parser)
    return parser.parse_args(argv)


def by_hf_argument_parser(argv: list[str]) -> Any:
    transformers = pytest.importorskip("transformers")
    (arguments,) = transformers.HfArgumentParser((RolloutArguments,)).parse_args_into_dataclasses(
        argv
    )
    return arguments


PLAIN_NUMBER = re.compile("0|[1-9][0-9]*")


def lax_keys(section: dict[str, Any]) -> frozenset[str]:
    """Keys whose value some trainer's parser converts and we refuse (see the docstring)."""
    found = set()
    for key, value in section.items():
        if key in INT_RANGES and isinstance(value, str) and not PLAIN_NUMBER.fullmatch(value):
            found.add(key)  # text that is not a plain whole number ("8 ", "+8", "1_000")
        elif key in INT_RANGES and isinstance(value, bool):
            found.add(key)  # pydantic's lax mode reads True as 1
        elif key in STR_KEYS and isinstance(value, (bool, int, float)):
            found.add(key)  # a number or a bool on a string key
    return frozenset(found)


def integral_floats(section: dict[str, Any]) -> bool:
    return any(type(section.get(key)) is float for key in INT_KEYS)


def assert_trainer_agrees(name: str, ours: Verdict, outcome: Any, section: Any) -> None:
    how, values = outcome
    event(f"{name}: ours {'took' if ours.values is not None else 'refused'}, trainer {how}")
    if ours.values is not None:
        if how != "ran":
            # OmegaConf refuses 8.0 on an int field; we read 8 (JSON Schema's integer).
            assert name == "omegaconf" and integral_floats(section), (name, outcome, section)
            return
        assert values == ours.values, (name, section)
        return
    if how == "ran":
        # We refuse only what some parser converts and we will not.
        assert ours.error_keys and ours.error_keys <= lax_keys(section), (name, ours, section)


# ------------------------------------------------------------ the properties


@given(sections(), st.sampled_from(["yaml", "json", "toml"]))
def test_every_reader_gives_one_verdict(section: dict[str, Any], fmt: str) -> None:
    text = render(section, fmt)
    data = read_back(text, fmt)
    with folder() as base:
        path = base / f"config.{fmt}"
        path.write_text(text, encoding="utf-8")
        ours = ours_by_check(text, fmt, base)
        # This package's readers: one verdict, the same values, the same warnings.
        assert ours_by_load_config(path) == dataclasses.replace(ours, error_keys=frozenset())
        assert ours_by_document(path) == dataclasses.replace(ours, error_keys=frozenset())
        for section_like in (data, pytest.importorskip("omegaconf").OmegaConf.create(data)):
            got = ours_by_section(section_like, base)
            assert (got.values, got.coerced) == (ours.values, [(k, m) for k, m in ours.coerced])
        # The editor's reading: the schema accepts what the loader accepts.
        assert FLAT_SCHEMA.is_valid(data) == (ours.values is not None)
        # The trainers' readings of the same text.
        outcomes = {
            "omegaconf": trainer_outcome(lambda: by_omegaconf(data), base),
            "lax pydantic": trainer_outcome(lambda: by_lax_host(data), base),
        }
        if fmt == "yaml":  # TRL reads its --config file with yaml.safe_load
            outcomes["trl"] = trainer_outcome(lambda: by_trl(path), base)
        for name, outcome in outcomes.items():
            assert_trainer_agrees(name, ours, outcome, data)


@given(sections(nulls=False))
def test_command_line_flags_get_the_same_verdict(section: dict[str, Any]) -> None:
    # A flag's value is text: the same section with every value as text, in quotes.
    as_text = {key: str(value) for key, value in section.items()}
    with folder() as base:
        ours = ours_by_check(render(as_text, "yaml"), "yaml", base)
        argv = flags(section)
        for name, parse in (
            ("argparse", lambda: by_argparse(argv)),
            ("hf", lambda: by_hf_argument_parser(argv)),
        ):
            assert_trainer_agrees(name, ours, trainer_outcome(parse, base), as_text)


@given(sections(), st.sampled_from(["rollout_fucn", "Rollout-Backend", "rolout_source"]))
def test_our_readers_agree_on_look_alike_keys(section: dict[str, Any], typo: str) -> None:
    section = {**section, typo: "x", "learning_rate": 1e-5}
    text = render(section, "yaml")
    with folder() as base:
        path = base / "config.yaml"
        path.write_text(text, encoding="utf-8")
        ours = ours_by_check(text, "yaml", base)
        assert ours.values is None and typo in ours.error_keys
        assert ours_by_load_config(path).values is None
        assert ours_by_document(path).values is None
        assert ours_by_section(yaml.safe_load(text), base).values is None


def test_the_properties_see_every_outcome() -> None:
    # A quoted number: taken by all, with a warning; "8 ": refused by us and by our argparse
    # kit (argparse's own int would read it; TRL's parser, which we do not type, still does).
    with folder() as base:
        good = {"rollout_backend": "art", "rollout_func": "m:f", "rollout_group_size": "8"}
        ours = ours_by_check(render(good, "yaml"), "yaml", base)
        assert ours.values is not None and ours.values["rollout_group_size"] == 8
        [(key, message)] = ours.coerced
        assert key == "rollout_group_size" and re.search(facts("'8'", "string", "8"), message)
        assert trainer_outcome(lambda: by_lax_host(good), base) == ("ran", ours.values)
        spaced = {**good, "rollout_group_size": "8 "}
        refused = ours_by_check(render(spaced, "yaml"), "yaml", base)
        assert refused.values is None and refused.error_keys == {"rollout_group_size"}
        assert trainer_outcome(lambda: by_argparse(flags(spaced)), base) == ("parser", None)
        # 8.0: ours and pydantic read 8, OmegaConf's structured config refuses it.
        floated = {**good, "rollout_group_size": 8.0}
        assert trainer_outcome(lambda: by_omegaconf(floated), base) == ("parser", None)


# ------------------------------------------------------------ the seven cases of issue 36

GRPO_YAML = """\
output_dir: /tmp/out
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
learning_rate: 1.0e-6
rollout_backend: art
rollout_func: agent_rollout.examples.openenv_rollout:offline_rollout
rollout_group_size: "8"
rollout_max_steps: "12"
"""


def test_1_quoted_numbers_and_null_get_the_trainers_verdict(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    path = tmp_path / "grpo.yaml"
    path.write_text(GRPO_YAML, encoding="utf-8")
    parser = trl.TrlParser((trl.ScriptArguments, RolloutArguments))
    _, rollout = parser.parse_args_and_config(["--config", str(path)], fail_with_unknown_args=False)
    trained = RolloutSettings.from_section(rollout)
    assert (trained.rollout_group_size, trained.rollout_max_steps) == (8, 12)
    # check and load_config: the same values, and a warning at each value.
    result = check_file(path, section=None)
    assert result.issues == [] and result.settings is not None
    assert values_of(result.settings) == values_of(trained)
    assert [(w.line, w.col, w.location, w.kind, w.severity) for w in result.warnings] == [
        (6, 21, "rollout_group_size", "coerced", "warning"),
        (7, 20, "rollout_max_steps", "coerced", "warning"),
    ]
    assert re.search(facts("'8'", "string", "8"), result.warnings[0].message)
    assert values_of(load_config(path, section=None)) == values_of(trained)
    # A pydantic host in lax mode (axolotl) and our mixin read 8 too.
    assert LaxHost.model_validate(yaml.safe_load(GRPO_YAML)).rollout_group_size == 8
    assert MixinHost.model_validate(yaml.safe_load(GRPO_YAML)).rollout_group_size == 8
    # null: unset for the kits, and for check (the default), with a warning.
    path.write_text(GRPO_YAML.replace('"12"', "null"), encoding="utf-8")
    _, rollout = parser.parse_args_and_config(["--config", str(path)], fail_with_unknown_args=False)
    assert RolloutSettings.from_section(rollout).rollout_max_steps == 64
    nulled = check_file(path, section=None)
    assert nulled.settings is not None and nulled.settings.rollout_max_steps == 64
    assert re.search(facts("null", "default", "64"), nulled.warnings[1].message)
    # Not a plain whole number, or out of range: an error everywhere.
    for wrong, message in (
        ('"8 "', facts("rollout_group_size", "int", "'8 '")),
        ('"2000"', facts("rollout_group_size", "1024", "2000")),
    ):
        path.write_text(GRPO_YAML.replace('"8"', wrong), encoding="utf-8")
        [issue] = check_file(path, section=None).issues
        assert (issue.line, issue.col, issue.kind) == (6, 21, "value")
        assert re.search(message, issue.message)
        with pytest.raises(ValidationError, match=message):
            RolloutSettings.from_section(yaml.safe_load(path.read_text()))


def test_2_duplicate_keys_the_trainer_owns_are_warnings(tmp_path: Path) -> None:
    text = (
        "model:\n  name: a\n  name: b\n"
        "learning_rate: 1.0e-6\nlearning_rate: 2.0e-6\n"
        "rollout_backend: openenv\nrollout_func: m:f\n"
    )
    path = tmp_path / "axolotl.yaml"
    path.write_text(text, encoding="utf-8")
    # yaml.safe_load (TRL, axolotl, verl) keeps the last value and trains; so do we.
    assert yaml.safe_load(text)["learning_rate"] == 2e-6
    assert load_config(path, section=None).rollout_backend == "openenv"
    result = check_file(path, section=None)
    assert result.issues == []
    assert [(w.line, w.col, w.location, w.kind, w.severity) for w in result.warnings] == [
        (3, 3, "model.name", "duplicate", "warning"),
        (5, 1, "learning_rate", "duplicate", "warning"),
    ]
    # A key of ours given twice changes what we read: still an error.
    path.write_text(text + "rollout_func: n:g\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, section=None)
    assert [(i.line, i.location, i.kind) for i in caught.value.issues] == [
        (8, "rollout_func", "duplicate")
    ]


def test_3_a_relative_rollout_source_has_one_meaning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trl = pytest.importorskip("trl")
    omegaconf = pytest.importorskip("omegaconf")
    configs = tmp_path / "configs"
    configs.mkdir()
    path = configs / "grpo.yaml"
    path.write_text("rollout_backend: nemo_gym\nrollout_source: data/gym.jsonl\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    beside = str(configs / "data" / "gym.jsonl")
    assert load_config("configs/grpo.yaml", section=None).rollout_source == beside
    parser = trl.TrlParser((RolloutArguments,))
    (rollout,) = parser.parse_args_and_config(["--config", "configs/grpo.yaml"])
    assert RolloutSettings.from_section(rollout, base_dir="configs").rollout_source == beside
    loaded = omegaconf.OmegaConf.load("configs/grpo.yaml")
    assert RolloutSettings.from_section(loaded, base_dir=configs).rollout_source == beside
    assert read_config("configs/grpo.yaml").validate(MixinHost).rollout_source == beside
    # Without the file's folder (text in memory, a command line): as written.
    assert RolloutSettings.from_section(rollout).rollout_source == "data/gym.jsonl"
    # The help text says exactly that.
    assert "base_dir" in KEY_HELP["rollout_source"]
    assert "current folder" in KEY_HELP["rollout_source"]


def test_4_warnings_reach_load_config_and_read_config_callers(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "training:\n  rollout_backend: ruler\n  rollout_func: m:f\n  rollout_max_steps: 010\n",
        encoding="utf-8",
    )
    settings = load_config(path)
    placed = [
        (w.kind, w.key, w.issue.line, w.issue.col) if w.issue else None
        for w in settings.rollout_warnings
    ]
    assert placed == [
        ("incomplete", "rollout_judge_model", 1, 1),
        ("yaml_version", "rollout_max_steps", 4, 22),
    ]
    assert [w.issue for w in settings.rollout_warnings] == check_file(path).warnings
    shown = settings.rollout_warnings[1].issue.format()  # type: ignore[union-attr]
    assert shown.startswith(f"{path}:4:22: warning: training.rollout_max_steps: ")
    assert re.search(facts("'010'", "8", "10", "YAML 1.1", "YAML 1.2"), shown)

    class Host(BaseModel):
        training: MixinHost

    document = read_config(path)
    host = document.validate(Host)
    assert [(i.kind, i.location, i.line, i.col) for i in document.warnings(host)] == [
        ("incomplete", "training.rollout_judge_model", 1, 1),
        ("yaml_version", "training.rollout_max_steps", 4, 22),
    ]


def test_5_alias_generator_hosts_get_their_names_positions_and_our_words(
    tmp_path: Path,
) -> None:
    class CamelHost(RolloutFields):
        model_config = ConfigDict(alias_generator=to_camel, extra="allow")

    path = tmp_path / "camel.yaml"
    path.write_text(
        "rolloutBackend: nemo_gym\nrolloutJudgeModel: j\nrolloutMaxSteps: 0\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        read_config(path).validate(CamelHost)
    cross, value = caught.value.issues
    where = [(i.line, i.col, i.location, i.kind) for i in (cross, value)]
    assert where == [
        (2, 1, "rolloutJudgeModel", "cross_field"),
        (3, 18, "rolloutMaxSteps", "value"),
    ]
    named = facts("rolloutJudgeModel", "rolloutBackend", "ruler", "nemo_gym")
    assert re.search(named, cross.message)
    assert re.search(facts("rolloutMaxSteps", "100000", "0"), value.message)
    # Our words, not pydantic's; and no name the user did not write.
    assert "Input should be" not in value.message
    assert "rollout_" not in cross.message + value.message


def test_6_model_copy_cannot_leave_warnings_stale(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("training:\n  rollout_backend: ruler\n  rollout_func: m:f\n", encoding="utf-8")
    settings = load_config(path)
    assert [w.key for w in settings.rollout_warnings] == ["rollout_judge_model"]
    judged = settings.model_copy(update={"rollout_judge_model": "openai/o4-mini"})
    assert judged.rollout_judge_model == "openai/o4-mini" and judged.rollout_warnings == ()
    # The update is validated: our rules, our words.
    with pytest.raises(ValidationError, match=facts("rollout_max_steps", "100000", "0")):
        settings.model_copy(update={"rollout_max_steps": 0})
    with pytest.raises(ValidationError, match=facts("rollout_gym_config", "rollout_backend")):
        settings.model_copy(update={"rollout_gym_config": "g.yaml"})
    # A host mixing RolloutFields in, too; its own keys are copied as pydantic copies them.
    host = MixinHost.model_validate({"rollout_backend": "openenv"})
    assert [w.key for w in host.rollout_warnings] == ["rollout_func"]
    copied = host.model_copy(update={"rollout_func": "m:f", "learning_rate": 0.5})
    assert (copied.rollout_warnings, copied.learning_rate) == ((), 0.5)


def test_7_our_rollout_func_is_told_apart_from_trls_and_axolotls() -> None:
    help_line = KEY_HELP["rollout_func"]
    assert "GRPOTrainer(rollout_func=...)" in help_line and "trl.rollout_func" in help_line
    parser = argparse.ArgumentParser()
    add_rollout_arguments(parser)
    assert "GRPOTrainer(rollout_func=...)" in " ".join(parser.format_help().split())
    field = {f.name: f for f in dataclasses.fields(RolloutArguments)}["rollout_func"]
    assert field.metadata["help"] == help_line
    docs = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    table = docs[docs.index("### One name, three meanings") :]
    for row in ("| ours: `rollout_func`", "| TRL: `GRPOTrainer(rollout_func=...)`"):
        assert row in table
    assert "| axolotl: `trl.rollout_func`" in table


@pytest.mark.parametrize("quoted", ['"8"', "'8'"])
def test_hydra_composes_a_quoted_number_as_check_reads_it(tmp_path: Path, quoted: str) -> None:
    pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore

    @dataclasses.dataclass
    class Root:
        trainer: dict = dataclasses.field(default_factory=lambda: {"total_epochs": 1})
        agent_rollout: RolloutArguments = dataclasses.field(default_factory=RolloutArguments)

    ConfigStore.instance().store(name="verdict_base", node=Root)
    text = (
        "defaults:\n  - verdict_base\n  - _self_\n"
        f"agent_rollout:\n  rollout_backend: art\n  rollout_func: m:f\n"
        f"  rollout_group_size: {quoted}\n  rollout_max_steps: null\n"
    )
    (tmp_path / "ppo.yaml").write_text(text, encoding="utf-8")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        cfg = compose(config_name="ppo")
    composed = RolloutSettings.from_section(cfg.agent_rollout)
    checked = check_bytes(text, section="agent_rollout")
    assert checked.settings is not None
    assert values_of(composed) == values_of(checked.settings)
    assert (composed.rollout_group_size, composed.rollout_max_steps) == (8, 64)


@pytest.mark.parametrize("text", ["8 ", " 8", "+8", "08", "0_8", "1_0", "\u0668"])
def test_the_argparse_kit_refuses_the_numbers_check_refuses(text: str) -> None:
    """argparse's own ``int`` reads all of these as numbers; ``check`` refuses them."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_rollout_arguments(parser)
    with pytest.raises(argparse.ArgumentError, match="expected a whole number in digits"):
        parser.parse_args(["--rollout_max_steps", text])
    assert parser.parse_args(["--rollout_max_steps", "8"]).rollout_max_steps == 8
    result = check_bytes(f'rollout_max_steps: "{text}"\n', section=None)
    assert result.settings is None, text
