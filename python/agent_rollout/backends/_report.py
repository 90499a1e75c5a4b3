"""What a running backend tells the person who started it: progress, notes, verbosity.

A backend calls :func:`report_progress` as rollouts finish and :func:`report_note`
for a fact the caller should see in its summary (NeMo Gym servers that were
reused, say). Both go to the :class:`Reporter` installed for the current
context with :func:`reporting` (``agent-rollout run`` installs one that draws
its progress line and prints the notes); with none installed they do nothing.
A context variable carries it, so it reaches ``asyncio`` tasks and the worker
thread ``run_sync`` copies the context into.

``AGENT_ROLLOUT_DEBUG=1`` (:data:`DEBUG_ENV`, :func:`debug_enabled`) lets the
third-party packages behind a backend (LiteLLM, transformers) print what they
print; otherwise backends keep them quiet. Whoever may be the first to import
such a package does it inside :func:`quiet_imports`: LiteLLM then reads its
bundled price table instead of downloading one (always, debug or not: no
network call at import).

Standard library only.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional, Protocol

__all__ = [
    "DEBUG_ENV",
    "IMPORT_ENV",
    "NOTICE_ENV",
    "Reporter",
    "debug_enabled",
    "quiet_imports",
    "report_note",
    "report_progress",
    "reporting",
]

DEBUG_ENV = "AGENT_ROLLOUT_DEBUG"
"""Set to any non-empty value (``1``): tracebacks and third-party output are shown."""


class Reporter(Protocol):
    """Receives a running backend's reports."""

    def rollouts(self, done: int, total: int) -> None:
        """``done`` of ``total`` rollouts have finished (called again as the count grows)."""

    def note(self, text: str) -> None:
        """One line for the run's summary (``"reused NeMo Gym at 127.0.0.1:11000 ..."``)."""


_reporter: contextvars.ContextVar[Optional[Reporter]] = contextvars.ContextVar(
    "agent_rollout_reporter", default=None
)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Send the reports of backends run inside the block to ``reporter``."""
    token = _reporter.set(reporter)
    try:
        yield reporter
    finally:
        _reporter.reset(token)


def report_progress(done: int, total: int) -> None:
    """Tell the installed reporter that ``done`` of ``total`` rollouts have finished."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter.rollouts(done, total)


def report_note(text: str) -> None:
    """Give the installed reporter one line for the summary."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter.note(text)


def debug_enabled() -> bool:
    """True when ``AGENT_ROLLOUT_DEBUG`` is set and not empty (as ``agent-rollout`` reads it)."""
    return bool(os.environ.get(DEBUG_ENV))


IMPORT_ENV: dict[str, str] = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
"""Set while a backend's packages are imported: LiteLLM (imported by ART) otherwise
fetches its price table from the network at import time, and warns when that fails."""

NOTICE_ENV: dict[str, str] = {"TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}
"""Also set unless ``AGENT_ROLLOUT_DEBUG``: transformers' "PyTorch was not found" notice."""


@contextmanager
def quiet_imports() -> Iterator[None]:
    """Import inside the block with :data:`IMPORT_ENV` (and, unless debugging,
    :data:`NOTICE_ENV`) in the environment; afterwards it is as it was.

    A variable the caller set keeps the caller's value.
    """
    wanted = dict(IMPORT_ENV) if debug_enabled() else {**IMPORT_ENV, **NOTICE_ENV}
    saved = {name: os.environ.get(name) for name in wanted}
    for name, value in wanted.items():
        os.environ.setdefault(name, value)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous
