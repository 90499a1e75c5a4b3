"""NeMo Gym live mode: stopping what a call started, whatever the signals.

A started ``gym`` command runs in a session of its own. It is stopped with
SIGINT first (Gym then stops its servers and its Ray cluster), then SIGKILL
to every process left in its session. While that cleanup runs, SIGINT,
SIGTERM and SIGHUP are recorded, not raised (``Started``'s shield): one
that comes kills what is left at once, and is delivered once the cleanup
is done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_rollout._errors import Terminated

__all__ = ["INTERRUPT_GRACE_S", "Started"]

INTERRUPT_GRACE_S = 3.0
"""After an interrupt, how long Gym gets to stop its servers before what is left is killed."""
_POLL_S = 0.05

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _Shield:
    """While cleanup runs, SIGINT, SIGTERM and SIGHUP are recorded instead of raised.

    Each one sets ``hurry`` (kill what is left at once). ``release`` puts the
    handlers back and, when asked to, delivers the first signal recorded to the
    handler that was in place (Ctrl-C raises ``KeyboardInterrupt`` there; a
    SIGTERM/SIGHUP whose handler was the default raises ``Terminated``). Only
    the main thread runs signal handlers; elsewhere it shields nothing.
    """

    def __init__(self, hurry: threading.Event) -> None:
        self.hurry = hurry
        self.seen: list[int] = []
        self.previous: dict[int, Any] = {}
        self.active = False

    def _record(self, signum: int, frame: object) -> None:
        del frame
        self.seen.append(signum)
        self.hurry.set()

    def install(self) -> None:
        if self.active:
            return
        self.active = True
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in _SIGNALS:
            try:
                previous = signal.signal(signum, self._record)
            except (OSError, ValueError):  # pragma: no cover - not settable here
                continue
            # None: a handler not set from Python; put back the default then.
            self.previous[signum] = signal.SIG_DFL if previous is None else previous

    def release(self, deliver: bool) -> None:
        if not self.active:
            return
        self.active = False
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)
        if not deliver or not self.seen:
            return
        signum = self.seen[0]
        handler = self.previous.get(signum)
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(signum)


def _session_members(session: int) -> list[int]:
    """The live (not zombie) processes of a session, from ``/proc`` (empty elsewhere)."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(session).encode() and fields[0] != b"Z":
            members.append(int(entry))
    return members


def _kill_session(session: int) -> None:
    try:
        os.killpg(session, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _session_members(session):  # what left the group but not the session
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _stop(process: subprocess.Popen[bytes], grace: float, hurry: threading.Event) -> None:
    """Stop ``process`` (a session leader) and everything in its session.

    SIGINT first (Gym's own shutdown); then, once the session is empty, after
    ``grace`` seconds, or as soon as ``hurry`` is set, SIGKILL to whatever is
    left. Waits (up to a few seconds) for the killed processes to go.
    """
    session = process.pid
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while not hurry.is_set() and time.monotonic() < deadline:
        if process.poll() is not None and not _session_members(session):
            break
        hurry.wait(_POLL_S)
    _kill_session(session)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 3
    while _session_members(session) and time.monotonic() < deadline:
        _kill_session(session)
        time.sleep(_POLL_S)


class Started:
    """What one live call started, and how it is stopped.

    ``running(process)`` stops the process and its session when its block
    ends. The first stop installs the :class:`_Shield` for the rest of the
    call (``collect_rollouts`` releases it at the very end), so no signal can
    cut a cleanup short: a signal during it kills what is left at once. After
    an interrupt, Gym gets :data:`INTERRUPT_GRACE_S` to stop, not the whole
    ``shutdown_timeout``.
    """

    def __init__(self, shutdown_timeout: float) -> None:
        self.shutdown_timeout = shutdown_timeout
        self.hurry = threading.Event()
        self.shield = _Shield(self.hurry)
        self.interrupted = False

    @contextmanager
    def running(self, process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
        try:
            yield process
        except BaseException as exc:
            self.shield.install()  # first: a second Ctrl-C must not cut the cleanup short
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self.interrupted = True
            self.stop(process)
            raise
        self.stop(process)

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        self.shield.install()
        short = self.interrupted or bool(self.shield.seen)
        grace = min(self.shutdown_timeout, INTERRUPT_GRACE_S) if short else self.shutdown_timeout
        _stop(process, grace, self.hurry)
