"""Rollout keys of a training config: types, rules, checks with positions, JSON Schema.

The public face of the config layer; each part lives in a module of its own:

- ``_parse``: YAML/JSON/TOML text as values with key positions, read as the
  trainers read it (no rollout knowledge);
- ``_document``: a whole file with positions for a host's own model
  (``read_config``, ``ConfigDocument``), and pydantic errors to positioned issues;
- ``_fields``: the value type (check + JSON Schema) and help text of each key;
- ``_kits``: adoption kits for hosts without pydantic (``RolloutArguments``,
  ``add_rollout_arguments``) and what ``from_section`` accepts;
- ``_lookalike``: keys that look like a typo of ours;
- ``_rules``: the cross-field rules and their severity, derived from the
  backend table (``agent_rollout.backends``);
- ``_models``: ``RolloutFields`` (a mixin for a trainer's own model) and
  ``RolloutSettings`` (a frozen model of its own);
- ``_schema``: the JSON Schema of a whole config file;
- ``check``: ``check_file``/``check_bytes`` (every issue, positioned) and
  ``load_config``;
- ``_span``: where the key or value of an issue ends (``end_line``/``end_col``);
- ``_fixes``: the fix of each fixable issue as text edits (``check --fix`` and
  the language server's code actions), each safe, unsafe or display-only,
  ``fix_text``;
- ``_settings``: ``[tool.agent-rollout]`` in the nearest ``pyproject.toml``.

Severity: a rule whose breach means the config cannot be right is an error
(``ValidationError``, ``ConfigError``); a rule that only says the config is
incomplete for the built-in adapter, and may be completed at run time by a
registered runner, is a warning, kept on the validated model
(``rollout_warnings``). Every config the seed's rules accept validates
without error.
"""

from __future__ import annotations

from typing import Any

from agent_rollout._errors import ConfigError, ConfigIssue
from agent_rollout._limits import (
    DEFAULT_GROUP_SIZE,
    MAX_CONFIG_BYTES,
    MAX_GROUP_SIZE,
    MAX_JUDGE_MODEL_LEN,
    MAX_NESTING_DEPTH,
    MAX_PORT,
    MAX_SOURCE_LEN,
    MAX_URL_LEN,
    MAX_YAML_EXPANDED_NODES,
)
from agent_rollout.backends import BACKENDS_WITH_FUNC, ROLLOUT_DEFAULTS, ROLLOUT_KEYS
from agent_rollout.config._document import ConfigDocument, Section, read_config, read_config_bytes
from agent_rollout.config._fields import RolloutBackend, RolloutFunc
from agent_rollout.config._fixes import (
    APPLICABILITIES,
    DISPLAY_ONLY,
    SAFE,
    UNSAFE,
    Applicability,
    Fix,
    FixedText,
    TextEdit,
    apply_fixes,
    fix_text,
    issue_fixes,
)
from agent_rollout.config._kits import RolloutArguments, add_rollout_arguments
from agent_rollout.config._lookalike import (
    LOOKALIKE_PAIRS_PATTERN,
    lookalike_key,
    lookalike_key_schema,
    near_pattern,
    nearest_key,
)
from agent_rollout.config._models import RolloutFields, RolloutSettings
from agent_rollout.config._parse import DEFAULT_YAML_VERSION, YAML_VERSIONS, format_for_suffix
from agent_rollout.config._rules import RolloutWarning, section_warnings
from agent_rollout.config._schema import training_config_schema
from agent_rollout.config._settings import (
    CheckSettings,
    find_settings,
    read_settings,
    settings_values,
)
from agent_rollout.config._span import split_lines
from agent_rollout.config.check import (
    AUTO_SECTION,
    CheckResult,
    check_bytes,
    check_file,
    load_config,
    load_config_bytes,
    section_path,
)


def __getattr__(name: str) -> Any:
    if name == "LOOKALIKE_NEAR_PATTERN":  # kept as a module constant, built on first use
        return near_pattern()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "APPLICABILITIES",
    "AUTO_SECTION",
    "BACKENDS_WITH_FUNC",
    "DEFAULT_GROUP_SIZE",
    "DEFAULT_YAML_VERSION",
    "DISPLAY_ONLY",
    "LOOKALIKE_PAIRS_PATTERN",
    "MAX_CONFIG_BYTES",
    "MAX_GROUP_SIZE",
    "MAX_JUDGE_MODEL_LEN",
    "MAX_NESTING_DEPTH",
    "MAX_PORT",
    "MAX_SOURCE_LEN",
    "MAX_URL_LEN",
    "MAX_YAML_EXPANDED_NODES",
    "ROLLOUT_DEFAULTS",
    "ROLLOUT_KEYS",
    "SAFE",
    "UNSAFE",
    "YAML_VERSIONS",
    "Applicability",
    "CheckResult",
    "CheckSettings",
    "ConfigDocument",
    "ConfigError",
    "ConfigIssue",
    "Fix",
    "FixedText",
    "RolloutArguments",
    "RolloutBackend",
    "RolloutFields",
    "RolloutFunc",
    "RolloutSettings",
    "RolloutWarning",
    "Section",
    "TextEdit",
    "add_rollout_arguments",
    "apply_fixes",
    "check_bytes",
    "check_file",
    "find_settings",
    "fix_text",
    "format_for_suffix",
    "issue_fixes",
    "load_config",
    "load_config_bytes",
    "lookalike_key",
    "lookalike_key_schema",
    "near_pattern",
    "nearest_key",
    "read_config",
    "read_config_bytes",
    "read_settings",
    "section_path",
    "section_warnings",
    "settings_values",
    "split_lines",
    "training_config_schema",
]
