"""``agent-rollout lsp``: a language server over standard input and output.

It tells an editor what ``agent-rollout check`` says, as you type: the same
issues at the same positions (diagnostics), their fixes (quick fixes and
``source.fixAll.agent-rollout``, the fixes ``check --fix`` applies), what a
rollout key or backend name means (hover), and which keys and backends fit
where the cursor is (completion). Settings come from ``[tool.agent-rollout]``
in the nearest ``pyproject.toml``, with the client's own on top.

Needs pygls (the ``lsp`` extra: ``pip install 'pygls>=2,<3'
'lsprotocol>=2025.0.0'``); nothing here imports it until the server has
answered its first messages, so ``import agent_rollout`` and the other
commands stay free of it, and no answer waits for it but a code action's.
The modules of this package: ``_wire`` (framed messages in and out, and
what a message must be), ``_text`` (positions, encodings and edits),
``_documents`` (open documents and when they are checked),
``_diagnostics``, ``_start`` (``initialize`` read and answered),
``_help`` (hover and completion), ``_session`` (every message, and the
answers that need no pygls), ``_actions`` (code actions), ``_server``
(pygls's part, loaded on a thread).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

from agent_rollout._exceptions import MissingPackageError
from agent_rollout._extras import first_missing, install_hint

if TYPE_CHECKING:
    from agent_rollout.lsp._documents import Documents
    from agent_rollout.lsp._session import Delegate
    from agent_rollout.lsp._start import Client

__all__ = ["MISSING_PYGLS", "serve"]

MISSING_PYGLS = f"agent-rollout lsp needs pygls 2, which is not installed: {install_hint('lsp')}"


def serve(stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> int:
    """Run the language server on ``stdin``/``stdout`` (the process's own by default)
    until the client says ``exit`` or goes away, and return the exit status: 0, or 1
    for an ``exit`` that no ``shutdown`` came before (as the protocol says). Raises
    ``ImportError`` (with ``MISSING_PYGLS``) when pygls is not installed.

    The session (``_session``) answers every message that needs no pygls; pygls
    (``_server``) is loaded on a thread of its own meanwhile, for the rest.
    """
    missing = first_missing("lsp")  # pygls, or its lsprotocol (loaded late, on a thread)
    if missing is not None:  # ``name``: what ``agent-rollout lsp`` says is missing
        raise MissingPackageError(MISSING_PYGLS, name=missing)
    from agent_rollout import __version__
    from agent_rollout.lsp._session import Session

    own_process = stdin is None and stdout is None
    stdin = stdin or _own_stdin()
    stdout = stdout or sys.stdout.buffer
    return Session(__version__, stdout, _load_pygls, own_process).run(stdin)


def _load_pygls(
    version: str,
    documents: Documents,
    client: Client,
    initialize: dict[str, Any],
    write: Callable[[bytes], None],
) -> Delegate:
    """pygls's part of the server (``_session.Loader``: run on the loader thread)."""
    from agent_rollout.lsp._server import build_server

    return build_server(version, documents, client, initialize, write)


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
