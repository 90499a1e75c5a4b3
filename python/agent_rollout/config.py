"""Pydantic (v2) models for the rollout keys of a training config.

``RolloutBackend`` and ``RolloutFunc`` are annotated ``str`` types that other
trainers put in their own models; ``RolloutSettings`` is the whole set of
``rollout_*`` keys of a ``training:`` section. Every value rule comes from
:mod:`agent_rollout._backends`; this module only adds the cross-field rules, the
look-alike key check and the JSON Schema that editors read.

Look-alike keys: a key of the section that is not one of ours is left to the
trainer, unless it starts with ``rollout_`` or ``rollout-`` (ASCII letters in
any case) or is within two Levenshtein edits (insert, delete, substitute one
character; a swap of two neighbours counts as two) of one of our keys, letters
compared ASCII-case-insensitively. Keys holding a line break are only caught
by the prefix rule. Such keys are errors that name the nearest valid key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    ValidationError,
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
    load_config,
    load_config_bytes,
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
    "RolloutFunc",
    "RolloutSettings",
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
# What each backend cannot run without: every group needs exactly one of its
# keys set (art runs a rollout_func or reads an ART trajectory file).
_REQUIRED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "art": (("rollout_func", "rollout_source"),),
    "openenv": (("rollout_func",),),
    "ruler": (("rollout_func",), ("rollout_judge_model",)),
    "nemo_gym": (),
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


def _check_url(value: object) -> str:
    url = _text_checker("rollout_judge_base_url", MAX_URL_LEN)(value)
    if _URL_RE.fullmatch(url) is None:
        raise _custom(
            "rollout_judge_base_url",
            f"rollout_judge_base_url={url!r} must be an http:// or https:// URL "
            "with a host and no spaces",
        )
    return url


_NO_NEWLINE = {"not": {"pattern": "\n"}}
_NO_NUL = {"not": {"pattern": "\\u0000"}}

RolloutBackend = Annotated[
    str,
    PlainValidator(_check_backend, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "enum": list(BACKEND_NAMES),
            "maxLength": MAX_BACKEND_NAME_LEN,
            "description": (
                "Agent rollout backend: art (OpenPipe ART), ruler (ART groups ranked "
                "by an LLM judge), nemo_gym (NeMo Gym data) or openenv (a rollout_func "
                "returns the rows). The loader also accepts upper-case spellings."
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
            "description": (
                "The rollout function as 'module.path:function_name'. It is imported "
                "only when the rollout starts (or by 'agent-rollout check --resolve')."
            ),
            "examples": ["my_project.rollouts:play_episode"],
        }
    ),
]
"""A ``module.path:function_name`` spec, checked without importing anything."""

JudgeModel = Annotated[
    str,
    PlainValidator(
        _text_checker("rollout_judge_model", MAX_JUDGE_MODEL_LEN), json_schema_input_type=str
    ),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_JUDGE_MODEL_LEN,
            "allOf": [_NO_NUL],
            "description": "The LLM judge RULER ranks trajectories with (ruler only).",
            "examples": ["openai/o4-mini"],
        }
    ),
]

JudgeBaseUrl = Annotated[
    str,
    PlainValidator(_check_url, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_URL_LEN,
            "pattern": f"^{_URL_CORE}$",
            "patternErrorMessage": "Expected an http:// or https:// URL without spaces.",
            "allOf": [_NO_NEWLINE],
            "description": (
                "Base URL of an OpenAI-compatible server for the judge (ruler only); "
                "unset means the judge model's provider default."
            ),
            "examples": ["http://127.0.0.1:8000/v1"],
        }
    ),
]


def _check_policy_url(value: object) -> str:
    url = _text_checker("rollout_policy_base_url", MAX_URL_LEN)(value)
    if _URL_RE.fullmatch(url) is None:
        raise _custom(
            "rollout_policy_base_url",
            f"rollout_policy_base_url={url!r} must be an http:// or https:// URL "
            "with a host and no spaces",
        )
    return url


PolicyModel = Annotated[
    str,
    PlainValidator(
        _text_checker("rollout_policy_model", MAX_JUDGE_MODEL_LEN), json_schema_input_type=str
    ),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_JUDGE_MODEL_LEN,
            "allOf": [_NO_NUL],
            "description": (
                "The policy model the rollouts sample from, as its OpenAI-compatible server "
                "names it (art and ruler: passed to rollout_func as an art.Model; nemo_gym "
                "with rollout_gym_config: the model Gym's policy server asks for)."
            ),
            "examples": ["Qwen/Qwen2.5-0.5B-Instruct"],
        }
    ),
]

PolicyBaseUrl = Annotated[
    str,
    PlainValidator(_check_policy_url, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_URL_LEN,
            "pattern": f"^{_URL_CORE}$",
            "patternErrorMessage": "Expected an http:// or https:// URL without spaces.",
            "allOf": [_NO_NEWLINE],
            "description": (
                "Base URL of the OpenAI-compatible server of rollout_policy_model "
                "(art, ruler, and nemo_gym with rollout_gym_config)."
            ),
            "examples": ["http://127.0.0.1:8000/v1"],
        }
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
            "description": "A NeMo Gym JSONL file (tasks or collected rollouts) (nemo_gym only).",
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
            "description": (
                "NeMo Gym config files (comma-separated) naming a resources server and an "
                "agent: nemo_gym then runs Gym live against rollout_policy_base_url "
                "(needs nemo-gym, Python 3.12+)."
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


def lookalike_key(key: object) -> bool:
    """Whether ``key`` is not one of ours but looks like it was meant to be."""
    if not isinstance(key, str) or key in ROLLOUT_KEYS:
        return False
    folded = _fold(key)
    if folded.startswith(("rollout_", "rollout-")):
        return True
    if "\n" in key:
        return False
    return any(_levenshtein(folded, valid, _MAX_EDITS) <= _MAX_EDITS for valid in ROLLOUT_KEYS)


_ANY_CHAR = r"[\s\S]"  # one character in JavaScript, Rust regex and Python re alike


def _letter(char: str) -> str:
    if "a" <= char <= "z":
        return f"[{char.upper()}{char}]"
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
LOOKALIKE_PREFIX_PATTERN = "^" + _literal("rollout") + "[_-]"


def _near_pattern() -> str:
    # Edit distance splits over a concatenation: d(t, P + S) is the least
    # d(A, P) + d(B, S) over t = A + B. So "within two edits of P + S" is
    # (P within 2)(S exact) | (P within 1)(S within 1) | (P exact)(S within 2),
    # and the last part always starts with 'rollout_', which the prefix rule
    # catches already. That keeps the pattern some kilobytes, not hundreds.
    assert all(key.startswith(_SHARED_PREFIX) for key in ROLLOUT_KEYS)
    suffixes = [key[len(_SHARED_PREFIX) :] for key in ROLLOUT_KEYS]
    exact = "|".join(_literal(suffix) for suffix in suffixes)
    near = "|".join(_within(suffix, 1) for suffix in suffixes)
    return f"^(?:{_within(_SHARED_PREFIX, 2)}(?:{exact})|{_within(_SHARED_PREFIX, 1)}(?:{near}))$"


LOOKALIKE_NEAR_PATTERN = _near_pattern()


def lookalike_key_schema() -> dict[str, Any]:
    """``propertyNames`` schema refusing exactly the keys ``lookalike_key`` refuses."""
    return {
        "anyOf": [
            {"enum": list(ROLLOUT_KEYS)},
            {
                "not": {"pattern": LOOKALIKE_PREFIX_PATTERN},
                "anyOf": [{"not": {"pattern": LOOKALIKE_NEAR_PATTERN}}, {"pattern": "\n"}],
            },
        ],
        "description": "Keys that look like rollout keys but are not one are errors.",
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
                    "properties": {"rollout_backend": {"enum": list(allowed)}},
                },
            }
        )
    for backend, groups in _REQUIRED_KEYS.items():
        for group in groups:
            need = _set(group[0]) if len(group) == 1 else {"oneOf": [_set(key) for key in group]}
            rules.append(
                {
                    "if": {
                        "required": ["rollout_backend"],
                        "properties": {"rollout_backend": {"const": backend}},
                    },
                    "then": need,
                }
            )
    nemo_gym = {
        "required": ["rollout_backend"],
        "properties": {"rollout_backend": {"const": "nemo_gym"}},
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


def _extend_schema(schema: dict[str, Any]) -> None:
    schema["propertyNames"] = lookalike_key_schema()
    schema["allOf"] = _rules_schema()


# ------------------------------------------------------------------ the model


def _is_set(data: Mapping[Any, Any], key: str) -> bool:
    return data.get(key) is not None


def _rule_errors(data: Mapping[Any, Any]) -> list[InitErrorDetails]:
    """The cross-field rules, over the raw section.

    They need the canonical backend only; when the backend itself is invalid
    its own error is reported and these rules are skipped.
    """
    raw_backend = data.get("rollout_backend")
    if raw_backend is None:
        backend: Optional[str] = None
    else:
        try:
            backend = validate_rollout_backend(raw_backend)
        except ValueError:
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
    for group in _REQUIRED_KEYS.get(backend or "", ()):
        present = [key for key in group if _is_set(data, key)]
        if not present:
            needed = " or ".join(group)
            message = f"{needed} is required when rollout_backend is {backend!r}"
            errors.append(
                InitErrorDetails(
                    type=_custom("rollout_missing", message),
                    loc=(group[0],),
                    input=None,
                )
            )
        elif len(present) > 1:
            message = f"set only one of {' and '.join(present)} when rollout_backend is {backend!r}"
            errors.append(
                InitErrorDetails(
                    type=_custom("rollout_cross_field", message),
                    loc=(present[-1],),
                    input=data[present[-1]],
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


def _as_init_error(error: Any) -> InitErrorDetails:
    details = InitErrorDetails(
        type=_custom(error["type"], error["msg"]), loc=tuple(error["loc"]), input=error["input"]
    )
    return details


class RolloutSettings(BaseModel):
    """The ``rollout_*`` keys of a training config section.

    Hand it the whole section: keys that belong to the trainer are ignored,
    keys that look like ours but are not (see the module docstring) are errors.
    """

    model_config = ConfigDict(
        extra="ignore", frozen=True, title="RolloutSettings", json_schema_extra=_extend_schema
    )

    rollout_backend: Optional[RolloutBackend] = Field(
        default=None, description="Agent rollout backend; unset means no agent rollout."
    )
    rollout_func: Optional[RolloutFunc] = None
    rollout_max_steps: int = Field(
        default=DEFAULT_ROLLOUT_STEPS,
        strict=True,
        ge=1,
        le=MAX_ROLLOUT_STEPS,
        description="Most steps (turns) one rollout may take.",
        examples=[DEFAULT_ROLLOUT_STEPS],
    )
    rollout_group_size: int = Field(
        default=DEFAULT_GROUP_SIZE,
        strict=True,
        ge=1,
        le=MAX_GROUP_SIZE,
        description=(
            "Trajectories gathered per prompt (art and ruler; nemo_gym with "
            "rollout_gym_config: Gym's num_repeats)."
        ),
        examples=[DEFAULT_GROUP_SIZE],
    )
    rollout_judge_model: Optional[JudgeModel] = None
    rollout_judge_base_url: Optional[JudgeBaseUrl] = None
    rollout_policy_model: Optional[PolicyModel] = None
    rollout_policy_base_url: Optional[PolicyBaseUrl] = None
    rollout_source: Optional[SourcePath] = None
    rollout_gym_config: Optional[GymConfigPaths] = None

    @model_validator(mode="wrap")
    @classmethod
    def _check_section(
        cls, data: Any, handler: ModelWrapValidatorHandler[RolloutSettings]
    ) -> RolloutSettings:
        if not isinstance(data, Mapping):
            return handler(data)
        errors: list[InitErrorDetails] = []
        for key in data:
            if lookalike_key(key):
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
        result: Optional[RolloutSettings] = None
        try:
            result = handler(data)
        except ValidationError as exc:
            errors.extend(_as_init_error(error) for error in exc.errors())
        errors.extend(_rule_errors(data))
        if errors or result is None:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return result

    def to_launch_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``agent_rollout.launch_rollout(**kwargs)``.

        ``options`` holds only the keys that apply to the backend, without
        their ``rollout_`` prefix. Raises ``ValueError`` when no backend is set.
        """
        backend = self.rollout_backend
        if backend is None:
            raise ValueError("rollout_backend is not set: there is no rollout to launch")
        options: dict[str, Any] = {}
        if backend in ("art", "ruler"):
            options["group_size"] = self.rollout_group_size
        if backend == "ruler":
            options["judge_model"] = self.rollout_judge_model
            options["judge_base_url"] = self.rollout_judge_base_url
        live_gym = backend == "nemo_gym" and self.rollout_gym_config is not None
        if live_gym:
            options["gym_config"] = self.rollout_gym_config
            options["group_size"] = self.rollout_group_size
        if (backend in ("art", "ruler") or live_gym) and (
            self.rollout_policy_model is not None or self.rollout_policy_base_url is not None
        ):
            options["policy_model"] = self.rollout_policy_model
            options["policy_base_url"] = self.rollout_policy_base_url
        if backend in ("art", "nemo_gym") and self.rollout_source is not None:
            options["source"] = self.rollout_source
        return {
            "name": backend,
            "rollout_func": self.rollout_func,
            "max_steps": self.rollout_max_steps,
            "options": options,
        }


def training_config_schema(section: Optional[str] = "training") -> dict[str, Any]:
    """The JSON Schema (draft 7) of a whole training config file.

    Our keys live in ``section`` (``None``: at the top level); every other key
    of the file and of the section is left open for the trainer.
    """
    settings = RolloutSettings.model_json_schema()
    settings.pop("title", None)
    settings["description"] = (
        "Training settings. Only the rollout_* keys are checked here; the trainer's "
        "own keys are left open."
    )
    header = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://agent-rollout.invalid/training-config.schema.json",
        "title": "Training config (agent_rollout keys)",
    }
    if section is None:
        return {**header, **settings}
    return {
        **header,
        "type": "object",
        "required": [section],
        "properties": {section: settings},
    }
