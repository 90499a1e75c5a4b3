"""``agent-rollout lsp``: a language server over standard input and output.

It tells an editor what ``agent-rollout check`` says, as you type: the same
issues at the same positions (diagnostics), their fixes (quick fixes and
``source.fixAll.agent-rollout``, the fixes ``check --fix`` applies), what a
rollout key or backend name means (hover), and which keys and backends fit
where the cursor is (completion). Settings come from ``[tool.agent-rollout]``
in the nearest ``pyproject.toml``, with the client's own on top.

Needs pygls (the ``lsp`` extra: ``pip install 'pygls>=2,<3'
'lsprotocol>=2025.0.0'``); nothing here imports it until the server starts,
so ``import agent_rollout`` and the other commands stay free of it. The
modules of this package: ``_wire`` (framed messages in and out, and what a
message must be), ``_text`` (positions, encodings and edits), ``_documents``
(open documents and when they are checked), ``_diagnostics``, ``_start`` (the
first answers, before pygls is loaded), ``_actions`` (code actions),
``_help`` (hover and completion), ``_server`` (the handlers).
"""

from __future__ import annotations

import importlib.util
import io
import sys
from typing import BinaryIO, Optional

from agent_rollout._exceptions import MissingPackageError
from agent_rollout._extras import install_hint

__all__ = ["MISSING_PYGLS", "serve"]

MISSING_PYGLS = f"agent-rollout lsp needs pygls 2, which is not installed: {install_hint('lsp')}"


def serve(stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> int:
    """Run the language server on ``stdin``/``stdout`` (the process's own by default)
    until the client says ``exit`` or goes away, and return the exit status: 0, or 1
    for an ``exit`` that no ``shutdown`` came before (as the protocol says). Raises
    ``ImportError`` (with ``MISSING_PYGLS``) when pygls is not installed.

    The first answers (``initialize``, the first diagnostics) are given before
    pygls is loaded (``_start``): loading it is most of the server's start.
    """
    if importlib.util.find_spec("pygls") is None:
        raise MissingPackageError(MISSING_PYGLS)
    from agent_rollout import __version__
    from agent_rollout.lsp._start import answer_first

    stdin = stdin or _own_stdin()
    stdout = stdout or sys.stdout.buffer
    early = answer_first(stdin, stdout, __version__)
    if early.ended:
        return 0
    from agent_rollout.lsp._server import build_server

    return build_server(__version__, early.documents).run_after(early, stdin, stdout)


def _own_stdin() -> BinaryIO:
    """Standard input through a reader of the server's own, not ``sys.stdin.buffer``.

    The server reads on a daemon thread, which may still wait in a read when the
    process ends (a client that keeps its end open after ``exit``); were it
    ``sys.stdin.buffer``'s lock it held, Python would abort at exit, unable to
    close standard input ("could not acquire lock ... possibly due to daemon
    threads").
    """
    try:
        raw = io.FileIO(sys.stdin.fileno(), "rb", closefd=False)
    except (AttributeError, OSError, ValueError):  # no file behind it (an embedding host)
        return sys.stdin.buffer
    return io.BufferedReader(raw)
