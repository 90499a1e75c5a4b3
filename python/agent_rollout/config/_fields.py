"""The value types of our keys: a check per key and the JSON Schema editors read.

``RolloutBackend`` and ``RolloutFunc`` are annotated ``str`` types other
trainers put in their own models; the others are the types of the fields of
``RolloutFields``. Each check raises a ``PydanticCustomError`` whose message
is our own text (see ``custom_error``); the limits come from
``agent_rollout._limits`` and the backend names from the backend table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Optional

from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from agent_rollout._limits import (
    MAX_BACKEND_NAME_LEN,
    MAX_GROUP_SIZE,
    MAX_JUDGE_MODEL_LEN,
    MAX_PORT,
    MAX_ROLLOUT_FUNC_LEN,
    MAX_ROLLOUT_STEPS,
    MAX_SOURCE_LEN,
    MAX_URL_LEN,
)
from agent_rollout.backends import (
    BACKEND_NAMES,
    ROLLOUT_FUNC_PATTERN,
    ROLLOUT_KEYS,
    validate_rollout_backend,
    validate_rollout_func,
)

# A URL: http or https, a host part, then anything without spaces or control
# characters. Written so that JavaScript, Rust ``regex`` and Python ``re`` read
# it alike; ``fullmatch`` is used in Python.
_URL_CORE = r"https?://[^\u0000-\u0020\u007f/?#]+(?:[/?#][^\u0000-\u0020\u007f]*)?"
_URL_RE = re.compile(_URL_CORE)
_SURROGATE = re.compile("[\ud800-\udfff]")


def custom_error(kind: str, message: str, **facts: str) -> PydanticCustomError:
    """A pydantic error of type ``kind`` whose message is ``message``, as written.

    ``facts`` go into the error's context beside the message (``meant``: the
    key a look-alike stands for), for readers of ``ValidationError.errors()``.
    """
    # The message goes in through the context so that braces in user values
    # are never read as format fields.
    return PydanticCustomError(kind, "{reason}", {"reason": message, **facts})


def _check_backend(value: object) -> str:
    try:
        return validate_rollout_backend(value)
    except ValueError as exc:
        raise custom_error("rollout_backend", str(exc)) from None


def _check_func(value: object) -> str:
    if value is None:
        raise custom_error("rollout_func", "rollout_func must be a string, got NoneType")
    try:
        checked = validate_rollout_func(value)
    except ValueError as exc:
        raise custom_error("rollout_func", str(exc)) from None
    assert checked is not None
    return checked


def _text_checker(key: str, max_len: int) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str):
            raise custom_error(key, f"{key} must be a string, got {type(value).__name__}")
        if not value:
            raise custom_error(key, f"{key} must be a non-empty string")
        if "\x00" in value:
            raise custom_error(key, f"{key} must not contain null bytes")
        if len(value) > max_len:
            raise custom_error(key, f"{key} must be <= {max_len} chars, got {len(value)}")
        surrogate = _SURROGATE.search(value)
        if surrogate is not None:
            # What argv and os.listdir give for bytes that are not UTF-8: a file
            # may be named so, but no config file, JSON dump or Arrow text holds it.
            raise custom_error(
                key,
                f"{key} must be text UTF-8 can encode, got the surrogate "
                f"U+{ord(surrogate.group()):04X} at index {surrogate.start()} (what a byte "
                "that is not UTF-8 in a command-line argument or file name becomes): no "
                "config file or JSON dump can hold it; use a UTF-8 name",
            )
        return str.__str__(value)

    return check


def _url_checker(key: str) -> Callable[[object], str]:
    """The check of a base-URL key: a bounded string, http(s) with a host, no spaces."""
    text = _text_checker(key, MAX_URL_LEN)

    def check(value: object) -> str:
        url = text(value)
        if _URL_RE.fullmatch(url) is None:
            raise custom_error(
                key, f"{key}={url!r} must be an http:// or https:// URL with a host and no spaces"
            )
        return url

    return check


_NO_NEWLINE = {"not": {"pattern": "\n"}}
_NO_NUL = {"not": {"pattern": "\\u0000"}}


def doc(text: str, example: str) -> dict[str, Any]:
    """Hover text: plain ``description`` and a ``markdownDescription`` with an example."""
    return {
        "description": text,
        "markdownDescription": f"{text}\n\nExample:\n\n```yaml\n{example}\n```",
    }


KEY_HELP: Mapping[str, str] = {
    "rollout_backend": "Agent rollout backend: art (OpenPipe ART), ruler (ART groups ranked by an "
    "LLM judge), nemo_gym (NeMo Gym data) or openenv (a rollout_func returns "
    "the rows). Any case is accepted; the canonical name is lower case. Unset: "
    "no agent rollout.",
    "rollout_func": "The rollout function as 'module.path:function_name' (art, openenv, "
    "ruler). It is imported only when the rollout starts (or by "
    "'agent-rollout check --resolve'). It returns rows: not TRL's "
    "GRPOTrainer(rollout_func=...) (a callable returning token ids) nor axolotl's "
    "trl.rollout_func (a dotted path handed to TRL).",
    "rollout_max_steps": "Most steps (turns) one rollout may take: an int in "
    f"[1, {MAX_ROLLOUT_STEPS}].",
    "rollout_group_size": "Trajectories gathered per seed prompt (art and ruler; nemo_gym with "
    f"rollout_gym_config: Gym's num_repeats): an int in [1, {MAX_GROUP_SIZE}].",
    "rollout_judge_model": "The LLM judge RULER ranks trajectories with (ruler only; the "
    "built-in adapter needs it).",
    "rollout_judge_base_url": "Base URL of an OpenAI-compatible server for the judge (ruler "
    "only); unset means the judge model's provider default.",
    "rollout_policy_model": "The policy model the rollouts sample from, as its "
    "OpenAI-compatible server names it (art and ruler: passed to rollout_func as an "
    "art.Model, with rollout_policy_base_url; nemo_gym with rollout_gym_config: the model "
    "Gym's policy server asks for).",
    "rollout_policy_base_url": "Base URL of the OpenAI-compatible server of "
    "rollout_policy_model (art, ruler, and nemo_gym with rollout_gym_config); set both "
    "or neither.",
    "rollout_source": "A data file the backend reads instead of running anything: a NeMo Gym "
    "JSONL file (nemo_gym) or an ART trajectory file (art, instead of "
    "rollout_func). A relative path is read from the config file's folder by "
    "load_config and check, and by from_section(..., base_dir=the folder); "
    "without base_dir (a command line, a parser's dataclass) from the current folder.",
    "rollout_gym_config": "NeMo Gym config files (comma-separated) naming a resources server "
    "and an agent: nemo_gym then runs Gym live against rollout_policy_base_url "
    "(needs nemo-gym, Python 3.12+).",
    "rollout_gym_head_port": "The port of NeMo Gym's head server (nemo_gym with "
    f"rollout_gym_config): an int in [1, {MAX_PORT}]; unset means Gym's default, 11000.",
}
"""What each key means: the hover text of the schema and the help of the adoption kits."""
assert tuple(KEY_HELP) == ROLLOUT_KEYS


INT_RANGES: Mapping[str, tuple[int, int]] = {
    "rollout_max_steps": (1, MAX_ROLLOUT_STEPS),
    "rollout_group_size": (1, MAX_GROUP_SIZE),
    "rollout_gym_head_port": (1, MAX_PORT),
}
"""The integer keys and their ranges. An int, an integral float (``5.0``) or
a whole number in quotes (``"5"``, with a warning) is read as the int; a
bool, a fraction or any other string is refused."""


def integral_float(value: object) -> object:
    """An integral float (``5.0``) as the int it is; any other value as it is.

    JSON Schema's ``integer`` takes ``5.0`` (and JSON readers cannot tell it
    from ``5``), pydantic hosts read it as 5: so do we. ``5.5``, ``True`` and
    ``"5.0"`` stay what they are, and are refused.
    """
    if type(value) is float and value.is_integer():
        return int(value)
    return value


_MAX_INT_TEXT = 20
"""Digits past which a quoted whole number is out of every range anyway (and not converted)."""


def int_text(value: object) -> Optional[int]:
    """The int a whole number in quotes stands for (``"8"`` is 8); ``None`` for any other value.

    Trainers' parsers turn a string into the option's type (argparse and so
    TRL's ``TrlParser``, OmegaConf, a pydantic host in lax mode), so
    ``rollout_group_size: "8"`` trains with 8, and we read it so too (with a
    warning: see ``_rules.coercion_warnings``). Only the plain spelling is
    read: ASCII digits without sign, space, underscore or leading zero.
    ``"8 "``, ``"+8"``, ``"1_000"``, ``"08"`` and ``"8.0"`` stay errors
    although some hosts read them: a config should not depend on that.
    """
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_INT_TEXT:
        return None
    if not (value.isascii() and value.isdigit()) or (value[0] == "0" and len(value) > 1):
        return None
    return int(value)


def _digits_same_length(low: str, high: str) -> str:
    """A pattern for the decimal numbers from ``low`` to ``high``, both of one length."""
    if low == high:
        return low
    if len(low) == 1:
        return f"[{low}-{high}]"
    rest = len(low) - 1
    if low[0] == high[0]:
        return f"{low[0]}(?:{_digits_same_length(low[1:], high[1:])})"
    parts = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:  # the first leading digit's numbers from low up
        parts.append(f"{low[0]}(?:{_digits_same_length(low[1:], '9' * rest)})")
        first += 1
    tail = None
    if high[1:] != "9" * rest:  # the last leading digit's numbers up to high
        tail = f"{high[0]}(?:{_digits_same_length('0' * rest, high[1:])})"
        last -= 1
    if first <= last:
        lead = str(first) if first == last else f"[{first}-{last}]"
        parts.append(lead + ("[0-9]" if rest == 1 else f"[0-9]{{{rest}}}"))
    if tail is not None:
        parts.append(tail)
    return "|".join(parts)


def digits_between(low: int, high: int) -> str:
    """A regular expression (without anchors) for the plain spellings of ``[low, high]``.

    Plain as ``int_text`` reads them: no sign, no leading zero. The JSON
    Schema states with it which quoted numbers the loader takes.
    """
    parts = []
    for length in range(len(str(low)), len(str(high)) + 1):
        start = max(low, 10 ** (length - 1) if length > 1 else 0)
        end = min(high, 10**length - 1)
        if start <= end:
            parts.append(_digits_same_length(str(start), str(end)))
    return "|".join(parts)


def int_schema(low: int, high: int, *, nullable: bool) -> dict[str, Any]:
    """The JSON Schema of an integer key: an int in range, or its plain spelling in quotes
    (read with a warning), or ``null`` where that is unset."""
    options: list[dict[str, Any]] = [
        {"type": "integer", "minimum": low, "maximum": high},
        {
            "type": "string",
            "pattern": f"^(?:{digits_between(low, high)})$",
            "allOf": [_NO_NEWLINE],
        },
    ]
    if nullable:
        options.append({"type": "null"})
    return {"anyOf": options}


def _any_case(name: str) -> str:
    return "".join(f"[{c.upper()}{c}]" if "a" <= c <= "z" else re.escape(c) for c in name)


def backend_in(names: Iterable[str]) -> dict[str, Any]:
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
                {"pattern": backend_in(BACKEND_NAMES)["pattern"]},
            ],
            "maxLength": MAX_BACKEND_NAME_LEN,
            # Python's "$" also matches before a final newline: "art\n" must not pass.
            "allOf": [_NO_NEWLINE],
            **doc(KEY_HELP["rollout_backend"], "rollout_backend: openenv"),
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
            **doc(KEY_HELP["rollout_func"], "rollout_func: my_project.rollouts:play_episode"),
            "examples": ["my_project.rollouts:play_episode"],
        }
    ),
]
"""A ``module.path:function_name`` spec, checked without importing anything."""


def _model_schema(key: str, example: str) -> WithJsonSchema:
    """The schema of a model-name key: a bounded string without NUL."""
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_JUDGE_MODEL_LEN,
            "allOf": [_NO_NUL],
            **doc(KEY_HELP[key], f"{key}: {example}"),
            "examples": [example],
        }
    )


def _url_schema(key: str) -> WithJsonSchema:
    """The schema of a base-URL key of an OpenAI-compatible server."""
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_URL_LEN,
            "pattern": f"^{_URL_CORE}$",
            "patternErrorMessage": "Expected an http:// or https:// URL without spaces.",
            "allOf": [_NO_NEWLINE],
            **doc(KEY_HELP[key], f"{key}: http://127.0.0.1:8000/v1"),
            "examples": ["http://127.0.0.1:8000/v1"],
        }
    )


def _validator(check: Callable[[object], str]) -> PlainValidator:
    return PlainValidator(check, json_schema_input_type=str)


JudgeModel = Annotated[
    str,
    _validator(_text_checker("rollout_judge_model", MAX_JUDGE_MODEL_LEN)),
    _model_schema("rollout_judge_model", "openai/o4-mini"),
]
JudgeBaseUrl = Annotated[
    str,
    _validator(_url_checker("rollout_judge_base_url")),
    _url_schema("rollout_judge_base_url"),
]
PolicyModel = Annotated[
    str,
    _validator(_text_checker("rollout_policy_model", MAX_JUDGE_MODEL_LEN)),
    _model_schema("rollout_policy_model", "Qwen/Qwen2.5-0.5B-Instruct"),
]
PolicyBaseUrl = Annotated[
    str,
    _validator(_url_checker("rollout_policy_base_url")),
    _url_schema("rollout_policy_base_url"),
]

check_source = _text_checker("rollout_source", MAX_SOURCE_LEN)
"""The check of a ``rollout_source`` path (also of the path joined to a config's folder)."""

SourcePath = Annotated[
    str,
    PlainValidator(check_source, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_LEN,
            "allOf": [_NO_NUL],
            **doc(KEY_HELP["rollout_source"], "rollout_source: data/example.jsonl"),
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
            **doc(
                KEY_HELP["rollout_gym_config"],
                "rollout_gym_config: resources_servers/example_single_tool_call/configs/"
                "example_single_tool_call.yaml",
            ),
            "examples": [
                "resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml"
            ],
        }
    ),
]


__all__ = [
    "INT_RANGES",
    "KEY_HELP",
    "GymConfigPaths",
    "JudgeBaseUrl",
    "JudgeModel",
    "PolicyBaseUrl",
    "PolicyModel",
    "RolloutBackend",
    "RolloutFunc",
    "SourcePath",
    "backend_in",
    "check_source",
    "custom_error",
    "digits_between",
    "doc",
    "int_schema",
    "int_text",
    "integral_float",
]
