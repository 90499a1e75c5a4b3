"""The base of every exception the package raises on purpose, and its builtin families.

``except agent_rollout.AgentRolloutError`` catches anything agent_rollout raises
on purpose. Each class also keeps the builtin base it always had, so an
existing ``except ValueError`` (or ``TypeError``, ``RuntimeError``,
``ImportError``) still catches what it caught. The classes with facts of their
own (``RolloutRowError``, ``ConfigError``...) live in ``_errors`` and derive
from these.

Not ours, on purpose: ``OSError`` (the system's failure to read or write a
file, with its errno, passes through as the ``OSError`` subclass the system
chose, ``FileNotFoundError`` and the rest); ``Terminated``, the ``SystemExit``
a SIGTERM or SIGHUP raises (``except Exception`` must never swallow a signal);
``KeyboardInterrupt``; and a user's own exception, raised by their
``rollout_func`` or iterator and passed through unchanged.
"""

from __future__ import annotations


class AgentRolloutError(Exception):
    """Any error agent_rollout raises on purpose (see the module's docstring)."""


class RolloutValueError(AgentRolloutError, ValueError):
    """A value the package refuses: an unknown backend, a limit out of range, a bad table."""


class RolloutTypeError(AgentRolloutError, TypeError):
    """An argument of a type the package does not take."""


class RolloutRuntimeError(AgentRolloutError, RuntimeError):
    """Work that cannot go on: the Rust engine switched on where it is absent, a backend
    that failed."""


class MissingPackageError(AgentRolloutError, ImportError):
    """An optional package a feature needs is not installed; the message says which."""


__all__ = [
    "AgentRolloutError",
    "MissingPackageError",
    "RolloutRuntimeError",
    "RolloutTypeError",
    "RolloutValueError",
]
