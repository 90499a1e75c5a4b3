"""The JSON Schema of a whole training config file (``agent-rollout schema``)."""

from __future__ import annotations

from typing import Any, Optional

from agent_rollout.config._models import RolloutSettings


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


__all__ = ["training_config_schema"]
