"""The JSON Schema of a whole training config file (``agent-rollout schema``)."""

from __future__ import annotations

from typing import Any

from agent_rollout.backends import ROLLOUT_KEYS
from agent_rollout.config._document import AUTO_SECTION, DEFAULT_SECTION, Section
from agent_rollout.config._models import RolloutSettings


def training_config_schema(section: Section = AUTO_SECTION) -> dict[str, Any]:
    """The JSON Schema (draft 7) of a whole training config file.

    Our keys live in ``section`` (``None``: at the top level; a dotted path
    nests); every other key of the file and of the section is left open for
    the trainer. ``AUTO_SECTION`` (the default) reads the file as ``check`` does
    by default: the ``training`` mapping when the file has one, unless it holds
    none of our keys while the top level holds one; else the top level, which
    must then hold one of our keys (a look-alike of one is flagged by the
    settings' ``propertyNames``, as ``check`` flags it).
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
    if section is AUTO_SECTION:
        # One copy of the settings' schema, referred to from both layouts, and one of
        # "holds one of our keys" (exact names: a look-alike does not choose the layout).
        settings_ref = {"$ref": "#/definitions/rollout_settings"}
        holds_ours = {"$ref": "#/definitions/holds_a_rollout_key"}
        return {
            **header,
            "type": "object",
            "definitions": {
                "rollout_settings": settings,
                "holds_a_rollout_key": {"anyOf": [{"required": [key]} for key in ROLLOUT_KEYS]},
            },
            # The training mapping, unless it holds none of our keys while the top level
            # holds one (``config.check._section_read``).
            "if": {
                "required": [DEFAULT_SECTION],
                "properties": {DEFAULT_SECTION: {"type": "object"}},
                "anyOf": [
                    {"properties": {DEFAULT_SECTION: holds_ours}},
                    {"not": holds_ours},
                ],
            },
            "then": {"properties": {DEFAULT_SECTION: settings_ref}},
            "else": {"allOf": [settings_ref, holds_ours]},
        }
    if not section:
        return {**header, **settings}
    # A dotted section ("trainer.rollout") nests, as the loader reads it.
    body: dict[str, Any] = settings
    for part in reversed(section.split(".")):
        body = {"type": "object", "required": [part], "properties": {part: body}}
    return {**header, **body}


__all__ = ["training_config_schema"]
