"""The ``art`` backend: importing ART, and calling LiteLLM, quietly (no network, no notices)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from agent_rollout.backends import require_backend_package
from agent_rollout.backends._report import debug_enabled, quiet_imports

__all__ = ["import_art", "quiet_litellm"]

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


def import_art() -> ModuleType:
    """Import ``art`` (and ``art.rewards``) with no network call and no notices; the module.

    The import runs inside :func:`~agent_rollout.backends._report.quiet_imports`
    (LiteLLM's bundled price table instead of a download; transformers'
    notice off unless ``AGENT_ROLLOUT_DEBUG``). Raises the install hint's
    ``ImportError`` when openpipe-art is missing.
    """
    require_backend_package("art")
    with quiet_imports():
        import art
        import art.rewards
    return art


@contextmanager
def quiet_litellm() -> Iterator[None]:
    """While the block runs, LiteLLM neither logs nor prints (unless ``AGENT_ROLLOUT_DEBUG``).

    LiteLLM prints a "Give Feedback / Get Help" banner to standard output on
    every failed call (which would land in the rows written to ``-o -``) and
    logs through handlers of its own. Its loggers are disabled and
    ``litellm.suppress_debug_info`` set for the block, then put back.
    """
    if debug_enabled():
        yield
        return
    import litellm

    loggers = [logging.getLogger(name) for name in _LITELLM_LOGGERS]
    disabled = [logger.disabled for logger in loggers]
    suppress = litellm.suppress_debug_info
    litellm.suppress_debug_info = True
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        litellm.suppress_debug_info = suppress
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was
