"""The exact wording of the package's messages: the one place that pins a whole text.

Other tests assert a message's facts (``support.facts``: the key, the bad value, the
limit; the code, row and path of a ``RolloutRowError``), so rewording a message
changes this file and no other. Each case builds the error the way the package
does, by calling the real function with a small input. The texts the two
engines share are held equal by ``test_parity.py``, ``test_codes.py`` and
``test_errors.py``; the row and input texts here run on both engines as well.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agent_rollout import (
    AgentRolloutError,
    RolloutBadRowsError,
    RolloutDrop,
    RolloutFileError,
    RolloutResult,
    RolloutRowError,
    launch_rollout,
    normalise_rollout_file,
    register_rollout_runner,
    resolve_rollout_func,
    unregister_rollout_runner,
    validate_rollout_backend,
    validate_rollout_func,
)
from agent_rollout._errors import file_error, for_command_line
from agent_rollout._limits import MAX_ROWS_LIMIT
from agent_rollout.backends import require_backend_package
from agent_rollout.backends.nemo_gym import GymRowError
from agent_rollout.config import RolloutFields, RolloutSettings
from support import Cli

MODULE = "agent_rollout_messages_mod"
"""A module the ``rollout_func`` cases resolve (``ROWS = 3``, ``run``, no ``nope``)."""
MISSING = "agent_rollout_no_such_module"


@pytest.fixture(autouse=True)
def rollout_module(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType(MODULE)
    module.ROWS = 3  # type: ignore[attr-defined]
    module.run = lambda prompts: []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, module)


@contextmanager
def absent(name: str) -> Iterator[None]:
    """``name`` cannot be imported in the block (``find_spec`` sees ``None``)."""
    had, before = name in sys.modules, sys.modules.get(name)
    sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if had:
            sys.modules[name] = before  # type: ignore[assignment]
        else:
            del sys.modules[name]


def ruler_without_art() -> None:
    with absent("art.rewards"):
        require_backend_package("ruler")


def returns(value: Any) -> Callable[[list[Any]], Any]:
    """A rollout function that returns ``value`` whatever the prompts."""
    return lambda prompts: value


def gym_seed() -> None:
    launch_rollout("nemo_gym", prompts=["seed"])


MESSAGES = [
    # ---- backend names (agent_rollout.backends) --------------------------------------------
    (
        lambda: validate_rollout_backend(True),
        ValueError,
        "rollout_backend must be a string, got bool",
    ),
    (
        lambda: validate_rollout_backend(None),
        ValueError,
        "rollout_backend must be a string, got NoneType",
    ),
    (
        lambda: validate_rollout_backend(""),
        ValueError,
        "rollout_backend must be a non-empty string",
    ),
    (
        lambda: validate_rollout_backend("art\x00"),
        ValueError,
        "rollout_backend must not contain null bytes",
    ),
    (lambda: validate_rollout_backend("a" * 33), ValueError, "rollout_backend exceeds 32 chars"),
    (
        lambda: validate_rollout_backend("bogus"),
        ValueError,
        "rollout_backend='bogus' is not supported; valid: art, nemo_gym, openenv, ruler",
    ),
    (
        lambda: validate_rollout_backend("open_env"),
        ValueError,
        "rollout_backend='open_env' is not supported; valid: art, nemo_gym, openenv, ruler; "
        "did you mean 'openenv'?",
    ),
    (
        ruler_without_art,
        ImportError,
        "rollout_backend='ruler' requires the 'openpipe-art' package: "
        "pip install 'openpipe-art>=0.5.18,<0.6' 'openai>=2.14,<3'",
    ),
    # ---- rollout_func specs ------------------------------------------------------------------
    (lambda: validate_rollout_func(True), ValueError, "rollout_func must be a string, got bool"),
    (lambda: validate_rollout_func(""), ValueError, "rollout_func must not be empty"),
    (
        lambda: validate_rollout_func("mod:fn\x00"),
        ValueError,
        "rollout_func must not contain null bytes",
    ),
    (lambda: validate_rollout_func("a" * 261), ValueError, "rollout_func must be <= 260 chars"),
    (
        lambda: validate_rollout_func("a:b\n"),
        ValueError,
        "rollout_func='a:b\\n' must match 'module.path:function_name' "
        "(letters, digits, underscore and dots only)",
    ),
    (lambda: resolve_rollout_func(None), ValueError, "rollout_func must not be None"),  # type: ignore[arg-type]
    (
        lambda: resolve_rollout_func(f"{MISSING}:run"),
        ValueError,
        f"rollout_func module '{MISSING}' could not be imported: No module named '{MISSING}'",
    ),
    (
        lambda: resolve_rollout_func(f"{MODULE}:nope"),
        ValueError,
        f"rollout_func '{MODULE}:nope': module '{MODULE}' has no attribute 'nope'",
    ),
    (
        lambda: resolve_rollout_func(f"{MODULE}:runn"),
        ValueError,
        f"rollout_func '{MODULE}:runn': module '{MODULE}' has no attribute 'runn'; "
        "did you mean 'run'?",
    ),
    (
        lambda: resolve_rollout_func(f"{MODULE}:ROWS"),
        ValueError,
        f"rollout_func '{MODULE}:ROWS': resolved attribute is not callable (int)",
    ),
    # ---- launch_rollout's arguments ------------------------------------------------------------
    (
        lambda: launch_rollout("openenv", prompts=["a"]),
        ValueError,
        "rollout_backend='openenv' requires training.rollout_func ('module.path:function_name')",
    ),
    (
        lambda: launch_rollout("openenv", rollout_func=3),  # type: ignore[arg-type]
        ValueError,
        "rollout_func must be a 'module.path:function_name' string or a callable, got int",
    ),
    (
        lambda: launch_rollout("openenv", max_steps=True),
        TypeError,
        "max_steps must be an int, got bool",
    ),
    (
        lambda: launch_rollout("openenv", max_steps=0),
        ValueError,
        "max_steps must be in [1, 100000], got 0",
    ),
    (
        lambda: launch_rollout("openenv", max_rows=2.0),
        TypeError,
        "max_rows must be an int, got float",
    ),  # type: ignore[arg-type]
    (
        lambda: launch_rollout("openenv", max_rows=0),
        ValueError,
        "max_rows must be in [1, 10000000], got 0",
    ),
    (
        lambda: launch_rollout("openenv", prompts="abc"),
        TypeError,
        "prompts must be a sequence, got str",
    ),
    (lambda: launch_rollout("openenv", options=3), TypeError, "options must be a mapping, got int"),  # type: ignore[arg-type]
    (
        gym_seed,
        GymRowError,
        "row 0: row: a Gym row must be an object, got str",
    ),
    # ---- the runner registry and RolloutResult -------------------------------------------------
    (
        lambda: register_rollout_runner("openenv", print),
        ValueError,
        "cannot register a runner for 'openenv': it runs training.rollout_func; "
        "runners are for art, nemo_gym and ruler",
    ),
    (
        lambda: unregister_rollout_runner("openenv"),
        ValueError,
        "cannot unregister a runner for 'openenv': it runs training.rollout_func; "
        "runners are for art, nemo_gym and ruler",
    ),
    (
        lambda: register_rollout_runner("art", None),
        TypeError,
        "runner must be callable, got NoneType",
    ),  # type: ignore[arg-type]
    (lambda: RolloutResult("art", [{"prompt": "a"}]), TypeError, "rows must be a tuple, got list"),  # type: ignore[arg-type]
    (
        lambda: RolloutResult("art", ({"prompt": "a"},), drops=("tie",)),  # type: ignore[arg-type]
        TypeError,
        "drops must hold RolloutDrop items, got str",
    ),
]

ENGINE_MESSAGES = [
    # ---- rows a backend returned (both engines build these) ------------------------------------
    (
        lambda: launch_rollout(
            "openenv",
            rollout_func=returns(
                [{"prompt": "ok"}, {"prompt": [{"role": "user", "content": object()}]}]
            ),
        ),
        RolloutRowError,
        "row 1: prompt[0].content: unsupported value of type 'object' (message values must be "
        "JSON-like: str, int, float, bool, None, list, dict with str keys)",
    ),
    (
        lambda: RolloutResult("art", ({"prompt": "ok"}, {"prompt": ""})),
        RolloutRowError,
        "row 1: prompt: empty prompt (a non-empty str or at least one message is required)",
    ),
    (
        lambda: RolloutResult("art", ({"prompt": "ok"}, {"prompt": [{"content": "no role"}]})),
        RolloutRowError,
        "row 1: prompt[0]: a chat message needs a 'role' (a non-empty str)",
    ),
    (
        lambda: launch_rollout("openenv", rollout_func=returns(None)),
        ValueError,
        "rollout backend 'openenv' must return an iterable of row mappings, got NoneType",
    ),
    (
        lambda: launch_rollout("openenv", rollout_func=returns([])),
        ValueError,
        "rollout backend 'openenv' produced no rows; refusing to train on an empty prompt set",
    ),
    (
        lambda: launch_rollout("openenv", rollout_func=returns([{"prompt": "p"}] * 3), max_rows=2),
        ValueError,
        "rollout backend 'openenv' produced more than 2 rows (max_rows=2; "
        "raise the limit with max_rows= or --max-rows)",
    ),
]


def ids(table: list[tuple[Any, ...]]) -> list[str]:
    """Test ids: the start of each expected text, in words."""
    return ["-".join(re.findall(r"\w+", entry[-1]))[:40] for entry in table]


@pytest.mark.parametrize(("call", "kind", "text"), MESSAGES, ids=ids(MESSAGES))
def test_message(call: Callable[[], Any], kind: type[Exception], text: str) -> None:
    with pytest.raises(kind) as info:
        call()
    assert (str(info.value), isinstance(info.value, kind)) == (text, True)
    assert isinstance(info.value, AgentRolloutError)  # the package's base, builtin kept


@pytest.mark.parametrize(("call", "kind", "text"), ENGINE_MESSAGES, ids=ids(ENGINE_MESSAGES))
def test_engine_message(
    engine: str, call: Callable[[], Any], kind: type[Exception], text: str
) -> None:
    with pytest.raises(kind) as info:
        call()
    assert (str(info.value), isinstance(info.value, kind)) == (text, True)
    assert isinstance(info.value, AgentRolloutError)  # the package's base, builtin kept


def test_drop_text() -> None:
    drop = RolloutDrop(1, "tie", "rollouts 0, 1 share the best reward 1.0 with different answers")
    assert str(drop) == (
        "prompt 1: tie: rollouts 0, 1 share the best reward 1.0 with different answers"
    )


# ---- a config section's warnings and a renaming host's errors (agent_rollout.config) ----------

CONFIG_WARNINGS = [
    (
        {"rollout_backend": "art", "rollout_func": "m:f", "rollout_group_size": "8"},
        "rollout_group_size: '8' is a string; trainers read it as 8: write 8",
    ),
    (
        {"rollout_max_steps": None},
        "rollout_max_steps: null is unset; trainers read it as the default, 64: leave the key out",
    ),
]


@pytest.mark.parametrize(("section", "text"), CONFIG_WARNINGS, ids=ids(CONFIG_WARNINGS))
def test_config_warning(section: dict[str, Any], text: str) -> None:
    [warning] = RolloutSettings.model_validate(section).rollout_warnings
    assert str(warning) == text


def test_errors_spell_our_keys_as_a_renaming_host_does() -> None:
    from pydantic import ConfigDict, ValidationError
    from pydantic.alias_generators import to_camel

    class CamelHost(RolloutFields):
        model_config = ConfigDict(alias_generator=to_camel)

    with pytest.raises(ValidationError) as info:
        CamelHost.model_validate(
            {"rolloutBackend": "nemo_gym", "rolloutJudgeModel": "j", "rolloutMaxSteps": 0}
        )
    assert [error["msg"] for error in info.value.errors()] == [
        "rolloutMaxSteps must be in [1, 100000], got 0",
        "rolloutJudgeModel needs rolloutBackend 'ruler', but rolloutBackend is 'nemo_gym'",
    ]


# ---- a config file's own messages, and text UTF-8 cannot encode (agent_rollout.config) -------

_LONG = "0b" + "1" * 400_000
_CUT = "'0b1111111111111111111111111...1111111111111111111111111111'"


def _config_message(text: str, fmt: str = "yaml", warning: bool = False) -> str:
    from agent_rollout.config import check_bytes

    result = check_bytes(text, format=fmt)
    [issue] = result.warnings if warning else result.issues
    return issue.message


def _settings_message(**section: Any) -> str:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as info:
        RolloutSettings.model_validate(section)
    [error] = info.value.errors()
    return str(error["msg"])


CONFIG_MESSAGES = [
    (lambda: _config_message("null", "json"), "the file must hold a mapping of settings, got null"),
    (
        lambda: _config_message("model: m\nlr: 1\n"),
        "no rollout settings found: looked for a 'training' section, then rollout keys at the "
        "top level; name the section that holds them with --section (section= in Python; a "
        "dotted path such as trainer.rollout for a nested one)",
    ),
    (
        lambda: _config_message("trainer:\n  rl:\n    rollout_backend: art\n"),
        "no rollout settings found: looked for a 'training' section, then rollout keys at the "
        "top level; 'trainer.rl' holds rollout keys: --section trainer.rl",
    ),
    (lambda: _config_message(""), "the file must hold a mapping of settings, got an empty file"),
    (
        lambda: _config_message(f"training:\n  rollout_max_steps: {_LONG}\n", warning=True),
        f"{_CUT} reads as int <int of 400000 bits> under YAML 1.1 (yaml.safe_load, as trainers "
        f"read it) and as str {_CUT} under YAML 1.2 (YAML editors and 1.2 loaders); quote it, "
        "or write it so that both read it alike",
    ),
    (
        lambda: _config_message("x: !!float 1e3e" + "3" * 400_000 + "\n"),
        "bad float '1e3e33333333333333333333333...3333333333333333333333333333': "
        "could not convert string to float",
    ),
    (
        lambda: _settings_message(rollout_backend="nemo_gym", rollout_source="\udce9t.jsonl"),
        "rollout_source must be text UTF-8 can encode, got the surrogate U+DCE9 at index 0 "
        "(what a byte that is not UTF-8 in a command-line argument or file name becomes): no "
        "config file or JSON dump can hold it; use a UTF-8 name",
    ),
]


@pytest.mark.parametrize(("call", "text"), CONFIG_MESSAGES, ids=ids(CONFIG_MESSAGES))
def test_config_message(call: Callable[[], str], text: str) -> None:
    assert call() == text


# ---- files: every bad row, outputs by name, hints on the command line ------------------------


def test_bad_rows_error_text(engine: str, tmp_path: Any) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"prompt": 1}\n{"prompt": "ok"}\n{"prompt": \n')
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, tmp_path / "o.jsonl", on_bad="report")
    assert str(info.value) == (
        f"{src}:1: row 0: prompt: must be a str or a list of chat messages, got 'int'\n"
        f"{src}:3:12: invalid JSON: the line ends inside an object\n"
        f"{src}: 2 bad rows of 3 (prompt of a wrong type: 1, invalid JSON: 1)"
    )
    assert isinstance(info.value, AgentRolloutError)


def test_counts_in_messages_have_thousands_separators(engine: str, cli: Cli, tmp_path: Any) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"prompt": 1}\n' * 1001 + '{"prompt": "ok"}\n' * 1000)
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, tmp_path / "o.jsonl", on_bad="report")
    assert str(info.value).splitlines()[-1] == (
        f"{src}: 1,001 bad rows of 2,001 (the first 20 listed: prompt of a wrong type: 20)"
    )
    done = cli("normalise", str(src), "-o", str(tmp_path / "o.jsonl"))
    assert done.code == 1
    assert done.err.splitlines()[-1] == (
        f"{src}: 1,001 bad rows of 2,001 (the first 20 listed: prompt of a wrong type: 20); "
        "nothing written "
        "(--skip-bad writes the good rows)"
    )
    src.write_text('{"prompt": "ok"}\n' * 1001)
    with pytest.raises(RolloutFileError) as caught:
        normalise_rollout_file(src, tmp_path / "o.jsonl", max_rows=1000)
    assert str(caught.value) == (
        f"{src}:1001: more than 1,000 rows (max_rows=1000; raise the limit with max_rows= or "
        "--max-rows)"
    )


def test_stats_names_its_limits_as_flags(engine: str, cli: Cli, tmp_path: Any) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"prompt": "ok"}\n' * 3)
    done = cli("stats", str(src), "--max-rows", "2")
    assert done.code == 1
    assert done.err == (
        f"{src}:3: more than 2 rows (max_rows=2; raise the limit with --max-rows N)\n"
    )


def test_a_cap_at_the_most_allowed_names_no_knob_to_raise_it() -> None:
    """``normalise`` and ``stats`` default to ``MAX_ROWS_LIMIT``: no flag raises it."""
    error = file_error("file_too_many_rows", "r.jsonl", MAX_ROWS_LIMIT, line=MAX_ROWS_LIMIT + 1)
    text = "r.jsonl:10000001: more than 10,000,000 rows (max_rows=10000000, the most allowed: "
    assert str(error) == text + "split the file)"
    assert for_command_line(str(error)) == str(error)
    below = file_error("file_too_many_rows", "r.jsonl", MAX_ROWS_LIMIT - 1, line=MAX_ROWS_LIMIT)
    assert str(below).endswith("(max_rows=9999999; raise the limit with max_rows= or --max-rows)")


def test_output_name_text(engine: str, tmp_path: Any) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"prompt": "ok"}\n')
    with pytest.raises(ValueError) as info:
        normalise_rollout_file(src, "out.csv")
    assert str(info.value) == (
        "out.csv: the output's name must say its format: end it in .jsonl, .jsonl.gz "
        "(gzip-compressed JSONL) or .parquet ('-': JSONL on standard output)"
    )
    assert isinstance(info.value, AgentRolloutError)


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        (
            "r.jsonl:4: more than 2 rows (max_rows=2; raise the limit with max_rows= or "
            "--max-rows)",
            "r.jsonl:4: more than 2 rows (max_rows=2; raise the limit with --max-rows N)",
        ),
        (
            "r.jsonl:1: more than 8 bytes after gzip decompression, blank lines included "
            "(max_bytes=8; raise the limit with max_bytes= or --max-bytes)",
            "r.jsonl:1: more than 8 bytes after gzip decompression, blank lines included "
            "(max_bytes=8; raise the limit with --max-bytes B)",
        ),
        (
            "row 1: prompt: a str in a table of chat-message prompts (set by row 0); "
            "prompt_kind='messages' wraps each str prompt as one user message",
            "row 1: prompt: a str in a table of chat-message prompts (set by row 0); "
            "--prompt-kind messages wraps each str prompt as one user message",
        ),
    ],
)
def test_hints_on_the_command_line(library: str, command_line: str) -> None:
    assert for_command_line(library) == command_line
