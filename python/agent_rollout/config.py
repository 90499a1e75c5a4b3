"""Pydantic (v2) models for the rollout keys of a training config.

``RolloutBackend`` and ``RolloutFunc`` are annotated ``str`` types that other
trainers put in their own models. ``RolloutFields`` is the set of
``rollout_*`` keys as a mixin that changes nothing else of the model it is
mixed into; ``RolloutSettings`` is the same fields as a frozen model of its
own, for a whole ``training:`` section. Every value rule comes from
:mod:`agent_rollout._backends`; this module adds the cross-field rules, their
severity, the look-alike key check and the JSON Schema that editors read.

Severity: a rule whose breach means the config cannot be right is an error
(``ValidationError``); a rule that only says the config is incomplete for the
built-in adapter, and may be completed at run time by a registered runner,
is a warning, kept on the validated model (``rollout_warnings``). Every config
the seed's rules accept validates without error.

Look-alike keys: a key of the section that is not one of ours is left to the
trainer unless it is within two Levenshtein edits (insert, delete, substitute
one character; a swap of two neighbours counts as two) of one of our keys,
ASCII letters compared case-insensitively and ``-`` read as ``_``. Keys
holding a line break, and keys the host declares as its own (the fields of a
model ``RolloutFields`` is mixed into, ``known_keys``), are never flagged.
Such keys are errors that name the nearest valid key.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Optional

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from agent_rollout._backends import (
    BACKEND_NAMES,
    DEFAULT_ROLLOUT_STEPS,
    MAX_BACKEND_NAME_LEN,
    MAX_ROLLOUT_FUNC_LEN,
    MAX_ROLLOUT_STEPS,
    ROLLOUT_FUNC_PATTERN,
    validate_rollout_backend,
    validate_rollout_func,
)
from agent_rollout._loader import (
    CheckResult,
    ConfigError,
    ConfigIssue,
    check_bytes,
    check_file,
    key_set,
    load_config,
    load_config_bytes,
    shown,
)

__all__ = [
    "BACKENDS_WITH_FUNC",
    "DEFAULT_GROUP_SIZE",
    "MAX_GROUP_SIZE",
    "MAX_JUDGE_MODEL_LEN",
    "MAX_SOURCE_LEN",
    "MAX_URL_LEN",
    "ROLLOUT_KEYS",
    "CheckResult",
    "ConfigError",
    "ConfigIssue",
    "RolloutBackend",
    "RolloutFields",
    "RolloutFunc",
    "RolloutSettings",
    "RolloutWarning",
    "check_bytes",
    "check_file",
    "load_config",
    "load_config_bytes",
    "lookalike_key",
    "lookalike_key_schema",
    "nearest_key",
    "training_config_schema",
]

DEFAULT_GROUP_SIZE = 4
MAX_GROUP_SIZE = 1024
MAX_JUDGE_MODEL_LEN = 200
MAX_URL_LEN = 2048
MAX_SOURCE_LEN = 4096

BACKENDS_WITH_FUNC: tuple[str, ...] = ("art", "openenv", "ruler")
"""Backends that take ``rollout_func`` (``art`` may read ``rollout_source`` instead)."""

# Adding a key: its field on RolloutFields (type + json_schema), its name in
# ROLLOUT_KEYS, and its backends here; the rules, schema, look-alike check and
# launch options follow from these tables.

# Which backends each optional key applies to (the key is an error elsewhere).
_KEY_BACKENDS: Mapping[str, tuple[str, ...]] = {
    "rollout_func": BACKENDS_WITH_FUNC,
    "rollout_group_size": ("art", "ruler", "nemo_gym"),
    "rollout_judge_model": ("ruler",),
    "rollout_judge_base_url": ("ruler",),
    "rollout_policy_model": ("art", "ruler", "nemo_gym"),
    "rollout_policy_base_url": ("art", "ruler", "nemo_gym"),
    "rollout_source": ("art", "nemo_gym"),
    "rollout_gym_config": ("nemo_gym",),
}
# What each backend cannot run without, whoever runs it (error). None today:
# every backend can be completed at run time (see _EXPECTED_KEYS).
_REQUIRED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {}
# What the built-in adapter needs, but the caller may supply at run time
# (warning): art runs a rollout_func or reads an ART trajectory file; ruler
# runs a rollout_func and asks a judge model (a runner registered with
# register_rollout_runner may need neither); openenv calls rollout_func, which
# launch_rollout(rollout_func=...) may pass as a callable. The seed's config
# rules accept all three without these keys.
_EXPECTED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "art": (("rollout_func", "rollout_source"),),
    "ruler": (("rollout_func",), ("rollout_judge_model",)),
    "openenv": (("rollout_func",),),
}
# How each backend's missing keys can be supplied at run time (warning text).
_RUN_TIME_HINT: Mapping[str, str] = {
    "openenv": "(launch_rollout(rollout_func=...) may pass it at run time)",
}
_RUNNER_HINT = "(a runner registered with register_rollout_runner may not)"
# The launch option each key becomes (without its rollout_ prefix).
_OPTION_NAMES: Mapping[str, str] = {
    "rollout_group_size": "group_size",
    "rollout_judge_model": "judge_model",
    "rollout_judge_base_url": "judge_base_url",
    "rollout_policy_model": "policy_model",
    "rollout_policy_base_url": "policy_base_url",
    "rollout_source": "source",
    "rollout_gym_config": "gym_config",
}

# A URL: http or https, a host part, then anything without spaces or control
# characters. Written so that JavaScript, Rust ``regex`` and Python ``re`` read
# it alike; ``fullmatch`` is used in Python.
_URL_CORE = r"https?://[^\u0000-\u0020\u007f/?#]+(?:[/?#][^\u0000-\u0020\u007f]*)?"
_URL_RE = re.compile(_URL_CORE)


def _custom(kind: str, message: str) -> PydanticCustomError:
    # The message goes in through the context so that braces in user values
    # are never read as format fields.
    return PydanticCustomError(kind, "{reason}", {"reason": message})


def _check_backend(value: object) -> str:
    try:
        return validate_rollout_backend(value)
    except ValueError as exc:
        raise _custom("rollout_backend", str(exc)) from None


def _check_func(value: object) -> str:
    if value is None:
        raise _custom("rollout_func", "rollout_func must be a string, got NoneType")
    try:
        checked = validate_rollout_func(value)
    except ValueError as exc:
        raise _custom("rollout_func", str(exc)) from None
    assert checked is not None
    return checked


def _text_checker(key: str, max_len: int) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str):
            raise _custom(key, f"{key} must be a string, got {type(value).__name__}")
        if not value:
            raise _custom(key, f"{key} must be a non-empty string")
        if "\x00" in value:
            raise _custom(key, f"{key} must not contain null bytes")
        if len(value) > max_len:
            raise _custom(key, f"{key} must be <= {max_len} chars, got {len(value)}")
        return str.__str__(value)

    return check


def _url_checker(key: str) -> Callable[[object], str]:
    """The check of a base-URL key: a bounded string, http(s) with a host, no spaces."""
    text = _text_checker(key, MAX_URL_LEN)

    def check(value: object) -> str:
        url = text(value)
        if _URL_RE.fullmatch(url) is None:
            raise _custom(
                key, f"{key}={url!r} must be an http:// or https:// URL with a host and no spaces"
            )
        return url

    return check


_NO_NEWLINE = {"not": {"pattern": "\n"}}
_NO_NUL = {"not": {"pattern": "\\u0000"}}


def _doc(text: str, example: str) -> dict[str, Any]:
    """Hover text: plain ``description`` and a ``markdownDescription`` with an example."""
    return {
        "description": text,
        "markdownDescription": f"{text}\n\nExample:\n\n```yaml\n{example}\n```",
    }


def _any_case(name: str) -> str:
    return "".join(f"[{c.upper()}{c}]" if "a" <= c <= "z" else re.escape(c) for c in name)


def _backend_in(names: Iterable[str]) -> dict[str, Any]:
    """The backend is one of ``names``, in any case (as the loader reads it)."""
    return {"type": "string", "pattern": "^(?:" + "|".join(_any_case(n) for n in names) + ")$"}


_BACKEND_HELP = {
    "art": "OpenPipe ART: `rollout_func` plays one episode per call, gathered in groups "
    "of `rollout_group_size`; or `rollout_source` names an ART trajectory file.",
    "nemo_gym": "NVIDIA NeMo Gym data (`rollout_source`, a Gym JSONL file) converted to rows; "
    "with `rollout_gym_config`, Gym run live against `rollout_policy_base_url`.",
    "openenv": "OpenEnv protocol: `rollout_func` gets the seed prompts and returns the rows.",
    "ruler": "ART groups ranked by an LLM judge (`rollout_judge_model`), RULER.",
}
assert tuple(sorted(_BACKEND_HELP)) == BACKEND_NAMES

RolloutBackend = Annotated[
    str,
    PlainValidator(_check_backend, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            # The loader folds case (as validate_rollout_backend always has), so
            # the schema accepts any case too; the enum is what editors complete.
            "anyOf": [
                {
                    "enum": list(BACKEND_NAMES),
                    "enumDescriptions": [
                        _BACKEND_HELP[name].replace("`", "") for name in BACKEND_NAMES
                    ],
                    "markdownEnumDescriptions": [_BACKEND_HELP[name] for name in BACKEND_NAMES],
                },
                {"pattern": _backend_in(BACKEND_NAMES)["pattern"]},
            ],
            "maxLength": MAX_BACKEND_NAME_LEN,
            **_doc(
                "Agent rollout backend: art (OpenPipe ART), ruler (ART groups ranked by an "
                "LLM judge), nemo_gym (NeMo Gym data) or openenv (a rollout_func returns "
                "the rows). Any case is accepted; the canonical name is lower case. Unset: "
                "no agent rollout.",
                "rollout_backend: openenv",
            ),
            "examples": ["openenv", "art"],
        }
    ),
]
"""A rollout backend name: any case in, the canonical lower-case name out."""

RolloutFunc = Annotated[
    str,
    PlainValidator(_check_func, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ROLLOUT_FUNC_LEN,
            "pattern": f"^{ROLLOUT_FUNC_PATTERN}$",
            "patternErrorMessage": (
                "Expected 'module.path:function_name' (letters, digits, underscore "
                "and dots; the function name after the colon)."
            ),
            "allOf": [_NO_NEWLINE],
            **_doc(
                "The rollout function as 'module.path:function_name' (art, openenv, "
                "ruler). It is imported only when the rollout starts (or by "
                "'agent-rollout check --resolve').",
                "rollout_func: my_project.rollouts:play_episode",
            ),
            "examples": ["my_project.rollouts:play_episode"],
        }
    ),
]
"""A ``module.path:function_name`` spec, checked without importing anything."""


def _model_schema(key: str, text: str, example: str) -> WithJsonSchema:
    """The schema of a model-name key: a bounded string without NUL."""
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_JUDGE_MODEL_LEN,
            "allOf": [_NO_NUL],
            **_doc(text, f"{key}: {example}"),
            "examples": [example],
        }
    )


def _url_schema(key: str, text: str) -> WithJsonSchema:
    """The schema of a base-URL key of an OpenAI-compatible server."""
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_URL_LEN,
            "pattern": f"^{_URL_CORE}$",
            "patternErrorMessage": "Expected an http:// or https:// URL without spaces.",
            "allOf": [_NO_NEWLINE],
            **_doc(text, f"{key}: http://127.0.0.1:8000/v1"),
            "examples": ["http://127.0.0.1:8000/v1"],
        }
    )


def _validator(check: Callable[[object], str]) -> PlainValidator:
    return PlainValidator(check, json_schema_input_type=str)


JudgeModel = Annotated[
    str,
    _validator(_text_checker("rollout_judge_model", MAX_JUDGE_MODEL_LEN)),
    _model_schema(
        "rollout_judge_model",
        "The LLM judge RULER ranks trajectories with (ruler only; the built-in adapter needs it).",
        "openai/o4-mini",
    ),
]
JudgeBaseUrl = Annotated[
    str,
    _validator(_url_checker("rollout_judge_base_url")),
    _url_schema(
        "rollout_judge_base_url",
        "Base URL of an OpenAI-compatible server for the judge (ruler only); "
        "unset means the judge model's provider default.",
    ),
]
PolicyModel = Annotated[
    str,
    _validator(_text_checker("rollout_policy_model", MAX_JUDGE_MODEL_LEN)),
    _model_schema(
        "rollout_policy_model",
        "The policy model the rollouts sample from, as its OpenAI-compatible server "
        "names it (art and ruler: passed to rollout_func as an art.Model; nemo_gym "
        "with rollout_gym_config: the model Gym's policy server asks for).",
        "Qwen/Qwen2.5-0.5B-Instruct",
    ),
]
PolicyBaseUrl = Annotated[
    str,
    _validator(_url_checker("rollout_policy_base_url")),
    _url_schema(
        "rollout_policy_base_url",
        "Base URL of the OpenAI-compatible server of rollout_policy_model "
        "(art, ruler, and nemo_gym with rollout_gym_config).",
    ),
]

SourcePath = Annotated[
    str,
    PlainValidator(_text_checker("rollout_source", MAX_SOURCE_LEN), json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_LEN,
            "allOf": [_NO_NUL],
            **_doc(
                "A data file the backend reads instead of running anything: a NeMo Gym "
                "JSONL file (nemo_gym) or an ART trajectory file (art, instead of "
                "rollout_func). A relative path in a config file is read from the "
                "file's directory.",
                "rollout_source: data/example.jsonl",
            ),
            "examples": ["data/example.jsonl"],
        }
    ),
]

GymConfigPaths = Annotated[
    str,
    PlainValidator(_text_checker("rollout_gym_config", MAX_SOURCE_LEN), json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_LEN,
            "allOf": [_NO_NUL],
            **_doc(
                "NeMo Gym config files (comma-separated) naming a resources server and an "
                "agent: nemo_gym then runs Gym live against rollout_policy_base_url "
                "(needs nemo-gym, Python 3.12+).",
                "rollout_gym_config: resources_servers/example_single_tool_call/configs/"
                "example_single_tool_call.yaml",
            ),
            "examples": [
                "resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml"
            ],
        }
    ),
]

ROLLOUT_KEYS: tuple[str, ...] = (
    "rollout_backend",
    "rollout_func",
    "rollout_max_steps",
    "rollout_group_size",
    "rollout_judge_model",
    "rollout_judge_base_url",
    "rollout_policy_model",
    "rollout_policy_base_url",
    "rollout_source",
    "rollout_gym_config",
)

# ---------------------------------------------------------------- look-alikes

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_MAX_EDITS = 2


def _fold(key: str) -> str:
    return key.translate(_ASCII_LOWER)


def _levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance of ``a`` and ``b``, or ``limit + 1`` once it is over ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def nearest_key(key: str) -> str:
    """The valid key closest to ``key`` (ties go to the first in ROLLOUT_KEYS)."""
    folded = _fold(key).replace("-", "_")

    def distance(valid: str) -> int:
        # A key cut short ('rollout_group') is closest to the key it starts.
        whole = _levenshtein(folded, valid, 64)
        return min(whole, _levenshtein(folded, valid[: len(folded)], 64) + 1)

    return min(ROLLOUT_KEYS, key=distance)


def lookalike_key(key: object, known_keys: Collection[str] = ()) -> bool:
    """Whether ``key`` is not one of ours but looks like a typo of one.

    It does when it is within two edits of one of our keys (see the module
    docstring). Keys in ``known_keys`` (the host trainer's own) never do.
    """
    if not isinstance(key, str) or key in ROLLOUT_KEYS or key in known_keys:
        return False
    if "\n" in key:
        return False
    folded = _fold(key).replace("-", "_")
    return any(_levenshtein(folded, valid, _MAX_EDITS) <= _MAX_EDITS for valid in ROLLOUT_KEYS)


_ANY_CHAR = r"[\s\S]"  # one character in JavaScript, Rust regex and Python re alike


def _letter(char: str) -> str:
    """One character of a key, as the look-alike rule reads it (case-folded, '-' is '_')."""
    if "a" <= char <= "z":
        return f"[{char.upper()}{char}]"
    if char == "_":
        return "[_-]"
    return re.escape(char)


def _literal(text: str) -> str:
    return "".join(_letter(char) for char in text)


def _within(word: str, edits: int, start: int = 0) -> str:
    """A regex for the strings within ``edits`` Levenshtein edits of ``word[start:]``."""
    rest = word[start:]
    if edits == 0:
        return _literal(rest)
    if not rest:
        return f"(?:{_ANY_CHAR}){{0,{edits}}}"
    alternatives = (
        _letter(rest[0]) + _within(word, edits, start + 1),  # keep
        _ANY_CHAR + _within(word, edits - 1, start + 1),  # substitute
        _ANY_CHAR + _within(word, edits - 1, start),  # insert
        _within(word, edits - 1, start + 1),  # delete
    )
    return "(?:" + "|".join(alternatives) + ")"


_SHARED_PREFIX = "rollout_"


def _near_pattern() -> str:
    # Edit distance splits over a concatenation: d(t, P + S) is the least
    # d(A, P) + d(B, S) over t = A + B. So "within two edits of P + S" is
    # (P within 2)(S exact) | (P within 1)(S within 1) | (P exact)(S within 2),
    # with P the shared 'rollout_' prefix: a few tens of kilobytes instead of
    # the megabytes a pattern per whole key would take. '-' reads as '_'.
    assert all(key.startswith(_SHARED_PREFIX) for key in ROLLOUT_KEYS)
    suffixes = [key[len(_SHARED_PREFIX) :] for key in ROLLOUT_KEYS]
    exact = "|".join(_literal(suffix) for suffix in suffixes)
    near = "|".join(_within(suffix, 1) for suffix in suffixes)
    far = "|".join(_within(suffix, 2) for suffix in suffixes)
    return (
        f"^(?:{_within(_SHARED_PREFIX, 2)}(?:{exact})"
        f"|{_within(_SHARED_PREFIX, 1)}(?:{near})"
        f"|{_literal(_SHARED_PREFIX)}(?:{far}))$"
    )


@functools.lru_cache(maxsize=1)
def near_pattern() -> str:
    """The look-alike regex (about 70 kB), built on first use: the schema needs
    it, validation does not (it computes the distance directly)."""
    return _near_pattern()


def __getattr__(name: str) -> Any:
    if name == "LOOKALIKE_NEAR_PATTERN":  # kept as a module constant, built lazily
        return near_pattern()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _bigram_pattern() -> str:
    # Each edit touches at most two of the seven letter pairs of 'rollout_', so
    # a key within two edits of ours holds at least three of them: a key that
    # holds none cannot be a look-alike. Cheap, and checked before the long
    # pattern (validators that compile patterns per use pay for its length).
    pairs = [_SHARED_PREFIX[i : i + 2] for i in range(len(_SHARED_PREFIX) - 1)]
    return "|".join(_literal(pair) for pair in pairs)


LOOKALIKE_PAIRS_PATTERN = _bigram_pattern()


def lookalike_key_schema() -> dict[str, Any]:
    """``propertyNames`` schema refusing exactly the keys ``lookalike_key`` refuses.

    The first alternatives are necessary conditions that settle most keys
    cheaply (length, letter pairs); the long pattern decides the rest.
    """
    shortest = min(len(key) for key in ROLLOUT_KEYS)
    longest = max(len(key) for key in ROLLOUT_KEYS)
    return {
        "anyOf": [
            {"enum": list(ROLLOUT_KEYS)},
            {"maxLength": shortest - _MAX_EDITS - 1},
            {"minLength": longest + _MAX_EDITS + 1},
            {"not": {"pattern": LOOKALIKE_PAIRS_PATTERN}},
            {"pattern": "\n"},
            {"not": {"pattern": near_pattern()}},
        ],
        "description": "Keys within two edits of a rollout key (typos of one) are errors.",
    }


def _set(key: str) -> dict[str, Any]:
    return {"required": [key], "properties": {key: {"not": {"type": "null"}}}}


def _rules_schema() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for key, allowed in _KEY_BACKENDS.items():
        rules.append(
            {
                "if": _set(key),
                "then": {
                    "required": ["rollout_backend"],
                    "properties": {"rollout_backend": _backend_in(allowed)},
                },
            }
        )
    # Required groups (errors): exactly one key of each set. Expected groups
    # (warnings) are not rules here, but "only one of" them still is.
    needs: list[tuple[str, dict[str, Any]]] = []
    for backend, groups in _REQUIRED_KEYS.items():
        for group in groups:
            need = _set(group[0]) if len(group) == 1 else {"oneOf": [_set(key) for key in group]}
            needs.append((backend, need))
    for backend, groups in _EXPECTED_KEYS.items():
        for group in groups:
            if len(group) > 1:
                needs.append((backend, {"not": {"allOf": [_set(key) for key in group]}}))
    for backend, need in needs:
        rules.append(
            {
                "if": {
                    "required": ["rollout_backend"],
                    "properties": {"rollout_backend": _backend_in([backend])},
                },
                "then": need,
            }
        )
    nemo_gym = {
        "required": ["rollout_backend"],
        "properties": {"rollout_backend": _backend_in(["nemo_gym"])},
    }
    policy = ("rollout_policy_model", "rollout_policy_base_url")
    rules.append(  # nemo_gym live: the policy keys and group size only with rollout_gym_config
        {
            "if": {"allOf": [nemo_gym, {"not": _set("rollout_gym_config")}]},
            "then": {
                "properties": {key: {"type": "null"} for key in (*policy, "rollout_group_size")}
            },
            "else": {"if": nemo_gym, "then": {"allOf": [_set(key) for key in policy]}},
        }
    )
    return rules


def _extend_schema(schema: dict[str, Any], model: Optional[type] = None) -> None:
    # Only RolloutSettings' own schema gets the section rules: a host model
    # that mixes RolloutFields in keeps its schema to itself.
    if model is not None and model is not RolloutSettings:
        return
    schema["propertyNames"] = lookalike_key_schema()
    schema["allOf"] = _rules_schema()


# ------------------------------------------------------------------ the model


@dataclass(frozen=True)
class RolloutWarning:
    """A config that validates but is incomplete for the built-in adapter."""

    key: str
    """The key to set (the first of the alternatives), e.g. ``rollout_judge_model``."""
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def _is_set(data: Mapping[Any, Any], key: str) -> bool:
    return data.get(key) is not None


def _canonical_backend(data: Mapping[Any, Any]) -> tuple[bool, Optional[str]]:
    """(usable, backend): usable is False when the backend itself is invalid."""
    raw_backend = data.get("rollout_backend")
    if raw_backend is None:
        return True, None
    try:
        return True, validate_rollout_backend(raw_backend)
    except ValueError:
        return False, None


def _rule_errors(data: Mapping[Any, Any]) -> list[InitErrorDetails]:
    """The cross-field rules that are errors, over the raw section.

    They need the canonical backend only; when the backend itself is invalid
    its own error is reported and these rules are skipped.
    """
    usable, backend = _canonical_backend(data)
    if not usable:
        return []
    errors: list[InitErrorDetails] = []
    for key, allowed in _KEY_BACKENDS.items():
        if not _is_set(data, key) or backend in allowed:
            continue
        names = " or ".join(repr(name) for name in allowed)
        got = "is not set" if backend is None else f"is {backend!r}"
        errors.append(
            InitErrorDetails(
                type=_custom(
                    "rollout_cross_field",
                    f"{key} needs rollout_backend {names}, but rollout_backend {got}",
                ),
                loc=(key,),
                input=data[key],
            )
        )
    groups = (*_REQUIRED_KEYS.get(backend or "", ()), *_EXPECTED_KEYS.get(backend or "", ()))
    for group in groups:
        present = [key for key in group if _is_set(data, key)]
        if len(present) > 1:
            message = f"set only one of {' and '.join(present)} when rollout_backend is {backend!r}"
            errors.append(
                InitErrorDetails(
                    type=_custom("rollout_cross_field", message),
                    loc=(present[-1],),
                    input=data[present[-1]],
                )
            )
    for group in _REQUIRED_KEYS.get(backend or "", ()):
        if not any(_is_set(data, key) for key in group):
            message = f"{' or '.join(group)} is required when rollout_backend is {backend!r}"
            errors.append(
                InitErrorDetails(
                    type=_custom("rollout_missing", message), loc=(group[0],), input=None
                )
            )
    if backend == "nemo_gym":  # the live keys mean nothing without a Gym config to run
        live = _is_set(data, "rollout_gym_config")
        for key in ("rollout_policy_model", "rollout_policy_base_url", "rollout_group_size"):
            if not live and _is_set(data, key):
                kind, message = (
                    "rollout_cross_field",
                    (f"{key} needs rollout_gym_config when rollout_backend is 'nemo_gym'"),
                )
            elif live and key != "rollout_group_size" and not _is_set(data, key):
                kind, message = (
                    "rollout_missing",
                    f"{key} is required when rollout_gym_config is set",
                )
            else:
                continue
            errors.append(
                InitErrorDetails(type=_custom(kind, message), loc=(key,), input=data.get(key))
            )
    return errors


def section_warnings(data: Mapping[Any, Any]) -> tuple[RolloutWarning, ...]:
    """The warnings a section gets: keys the built-in adapter needs that are unset."""
    usable, backend = _canonical_backend(data)
    if not usable or backend is None:
        return ()
    found = []
    for group in _EXPECTED_KEYS.get(backend, ()):
        if any(_is_set(data, key) for key in group):
            continue
        if len(group) == 1:
            unset, needs = f"{group[0]} is not set", "it"
        else:
            unset = f"neither {' nor '.join(group)} is set"
            needs = "one of them"
        found.append(
            RolloutWarning(
                group[0],
                f"{unset}: the built-in {backend!r} adapter needs {needs} "
                + _RUN_TIME_HINT.get(backend, _RUNNER_HINT),
            )
        )
    return tuple(found)


def _our_wording(error: Any) -> str:
    """A pydantic error on one of our fields, in the wording of our own rules."""
    key = str(error["loc"][0])
    kind = error["type"]
    value = error.get("input")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        got = type(value).__name__
        return f"{key} must be an int, got {got} {shown(value)}"
    if kind in ("greater_than_equal", "less_than_equal"):
        field = RolloutFields.model_fields[key]
        low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
        high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
        return f"{key} must be in [{low}, {high}], got {shown(value)}"
    return f"{key}: {error['msg']} (got {shown(value)})"


def _as_init_error(error: Any) -> InitErrorDetails:
    kind = error["type"]
    message = error["msg"]
    if error["loc"] and error["loc"][0] in ROLLOUT_KEYS and not kind.startswith("rollout_"):
        kind, message = "rollout_value", _our_wording(error)
    return InitErrorDetails(
        type=_custom(kind, message), loc=tuple(error["loc"]), input=error["input"]
    )


def _alias_names(field: Any) -> set[str]:
    """The top-level keys a field is read from besides its name (str, choices, paths)."""
    names: set[str] = set()
    for alias in (field.alias, field.validation_alias):
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            first = choice.path[0] if isinstance(choice, AliasPath) and choice.path else choice
            if isinstance(first, str):
                names.add(first)
    return names


def _known_keys(model: type[BaseModel], info: ValidationInfo) -> frozenset[str]:
    """Keys that are the host's: its own fields and aliases, the aliases a host gives our
    fields (an ``alias_generator``), and ``known_keys`` in the context."""
    known: set[str] = set()
    for name, field in model.model_fields.items():
        if name not in ROLLOUT_KEYS:
            known.add(name)
        known.update(_alias_names(field))
    context = info.context
    if isinstance(context, Mapping):
        extra = context.get("known_keys")
        if extra is not None:
            known.update(key for key in key_set(extra) if isinstance(key, str))
    return frozenset(known)


def _by_field_name(model: type[BaseModel], data: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """The section with our keys under their field names, where a host gave them aliases."""
    view: Optional[dict[Any, Any]] = None
    for name in ROLLOUT_KEYS:
        if name in data:
            continue
        for alias in sorted(_alias_names(model.model_fields[name])):
            if alias in data:
                view = dict(data) if view is None else view
                view[name] = data[alias]
                break
    return data if view is None else view


def _check_assignment(title: str, model: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
    """``model.rollout_x = value`` on a host with ``validate_assignment=True``.

    pydantic hands the model itself here, and its handler sets the new value
    in place; so the old values are kept, put back when a rule refuses the
    new one, and the warnings are worked out again from the new values.
    """
    before = dict(model.__dict__)
    fields_set = set(model.model_fields_set)
    try:
        result = handler(model)
    except ValidationError as exc:
        errors = [_as_init_error(error) for error in exc.errors()]
        raise ValidationError.from_exception_data(title, errors) from None
    # As the section would read: the keys given so far (defaults are not given).
    given = result.model_fields_set
    values = {key: getattr(result, key) for key in ROLLOUT_KEYS if key in given}
    rule_errors = _rule_errors(values)
    if rule_errors:
        model.__dict__.clear()
        model.__dict__.update(before)
        object.__setattr__(model, "__pydantic_fields_set__", fields_set)
        raise ValidationError.from_exception_data(title, rule_errors)
    if isinstance(result, RolloutFields):
        result._rollout_warnings = section_warnings(values)
    return result


class RolloutFields(BaseModel):
    """The ``rollout_*`` keys, as a mixin for a trainer's own pydantic model.

    Mixing it in adds the fields, their rules and the look-alike check, and
    nothing else: the host keeps its own ``frozen``, ``title`` and ``extra``
    policy and its own JSON Schema header. The host's own fields (and
    aliases) are never flagged as look-alikes; a typo of one of our keys is
    reported once, in our wording, even under ``extra="forbid"``. Warnings
    are on ``rollout_warnings`` of the validated instance.
    """

    _rollout_warnings: tuple[RolloutWarning, ...] = PrivateAttr(default=())

    rollout_backend: Optional[RolloutBackend] = None
    rollout_func: Optional[RolloutFunc] = None
    rollout_max_steps: int = Field(
        default=DEFAULT_ROLLOUT_STEPS,
        strict=True,
        ge=1,
        le=MAX_ROLLOUT_STEPS,
        description="Most steps (turns) one rollout may take.",
        examples=[DEFAULT_ROLLOUT_STEPS],
        json_schema_extra=_doc(
            f"Most steps (turns) one rollout may take: an int in [1, {MAX_ROLLOUT_STEPS}].",
            "rollout_max_steps: 32",
        ),
    )
    rollout_group_size: int = Field(
        default=DEFAULT_GROUP_SIZE,
        strict=True,
        ge=1,
        le=MAX_GROUP_SIZE,
        examples=[DEFAULT_GROUP_SIZE],
        json_schema_extra=_doc(
            "Trajectories gathered per seed prompt (art and ruler; nemo_gym with "
            f"rollout_gym_config: Gym's num_repeats): an int in [1, {MAX_GROUP_SIZE}].",
            "rollout_group_size: 8",
        ),
    )
    rollout_judge_model: Optional[JudgeModel] = None
    rollout_judge_base_url: Optional[JudgeBaseUrl] = None
    rollout_policy_model: Optional[PolicyModel] = None
    rollout_policy_base_url: Optional[PolicyBaseUrl] = None
    rollout_source: Optional[SourcePath] = None
    rollout_gym_config: Optional[GymConfigPaths] = None

    @property
    def rollout_warnings(self) -> tuple[RolloutWarning, ...]:
        """What the built-in adapter will miss (empty when nothing is)."""
        return self._rollout_warnings

    @model_validator(mode="wrap")
    @classmethod
    def _check_section(
        cls, data: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if isinstance(data, RolloutFields) and info.field_name in RolloutFields.model_fields:
            return _check_assignment(cls.__name__, data, handler)
        if not isinstance(data, Mapping):
            return handler(data)
        known = _known_keys(cls, info)
        errors: list[InitErrorDetails] = []
        flagged: set[str] = set()
        for key in data:
            if lookalike_key(key, known):
                flagged.add(key)
                errors.append(
                    InitErrorDetails(
                        type=_custom(
                            "rollout_unknown_key",
                            f"unknown key {key!r}; did you mean {nearest_key(key)!r}?",
                        ),
                        loc=(key,),
                        input=data[key],
                    )
                )
        result: Any = None
        try:
            result = handler(data)
        except ValidationError as exc:
            for error in exc.errors():
                # Under the host's extra="forbid" a typo would be reported twice.
                if error["type"] == "extra_forbidden" and error["loc"][:1] in {
                    (key,) for key in flagged
                }:
                    continue
                errors.append(_as_init_error(error))
        section = _by_field_name(cls, data)
        errors.extend(_rule_errors(section))
        if errors or result is None:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        if isinstance(result, RolloutFields):
            found = section_warnings(section)
            if found:
                result._rollout_warnings = found
        return result

    @classmethod
    def from_section(cls, section: Mapping[str, Any], *, known_keys: Iterable[str] = ()) -> Any:
        """Validate a trainer's section; ``known_keys`` are the trainer's own keys.

        The same as ``model_validate(section, context={"known_keys": ...})``.
        """
        return cls.model_validate(section, context={"known_keys": key_set(known_keys)})

    def to_launch_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``agent_rollout.launch_rollout(**kwargs)``.

        ``options`` holds only the keys that apply to the backend, without
        their ``rollout_`` prefix. Raises ``ValueError`` when no backend is set.
        """
        backend = self.rollout_backend
        if backend is None:
            raise ValueError("rollout_backend is not set: there is no rollout to launch")
        options: dict[str, Any] = {}
        for key, option in _OPTION_NAMES.items():
            value = getattr(self, key)
            if backend in _KEY_BACKENDS[key] and value is not None:
                options[option] = value
        if backend == "nemo_gym" and self.rollout_gym_config is None:
            # File mode: the live keys are refused by the rules; the group size
            # keeps its default but means nothing here.
            options.pop("group_size", None)
        return {
            "name": backend,
            "rollout_func": self.rollout_func,
            "max_steps": self.rollout_max_steps,
            "options": options,
        }


class RolloutSettings(RolloutFields):
    """The ``rollout_*`` keys of a training config section, as a frozen model.

    Hand it the whole section: keys that belong to the trainer are ignored,
    keys that look like a typo of ours (see the module docstring) are errors.
    To put our keys into a trainer's own model, mix in :class:`RolloutFields`
    (subclassing this class would make the trainer's model frozen too).
    """

    model_config = ConfigDict(frozen=True, json_schema_extra=_extend_schema)


def training_config_schema(section: Optional[str] = "training") -> dict[str, Any]:
    """The JSON Schema (draft 7) of a whole training config file.

    Our keys live in ``section`` (``None``: at the top level; a dotted path
    nests); every other key of the file and of the section is left open for
    the trainer.
    """
    settings = RolloutSettings.model_json_schema()
    settings.pop("title", None)
    settings.pop("markdownDescription", None)
    settings["description"] = (
        "Training settings. Only the rollout_* keys are checked here; the trainer's "
        "own keys are left open."
    )
    # No $id: there is no public URL it could resolve to; editors take the
    # schema by path (modeline or settings), which needs none.
    header = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Training config (agent_rollout keys)",
    }
    if not section:
        return {**header, **settings}
    # A dotted section ("trainer.rollout") nests, as the loader reads it.
    body: dict[str, Any] = settings
    for part in reversed(section.split(".")):
        body = {"type": "object", "required": [part], "properties": {part: body}}
    return {**header, **body}
