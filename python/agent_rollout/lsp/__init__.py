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
modules of this package: ``_text`` (positions and encodings), ``_documents``
(open documents and when they are checked), ``_diagnostics``, ``_start`` (the
first answers, before pygls is loaded), ``_actions`` (code actions),
``_help`` (hover and completion), ``_server`` (the handlers).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import BinaryIO, Optional

from agent_rollout._exceptions import MissingPackageError
from agent_rollout._extras import install_hint

__all__ = ["MISSING_PYGLS", "serve"]

MISSING_PYGLS = f"agent-rollout lsp needs pygls 2, which is not installed: {install_hint('lsp')}"


def serve(stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
    """Run the language server on ``stdin``/``stdout`` (the process's own by default)
    until the client says ``exit`` or goes away. Raises ``ImportError`` (with
    ``MISSING_PYGLS``) when pygls is not installed.

    The first answers (``initialize``, the first diagnostics) are given before
    pygls is loaded (``_start``): loading it is most of the server's start.
    """
    if importlib.util.find_spec("pygls") is None:
        raise MissingPackageError(MISSING_PYGLS)
    from agent_rollout import __version__
    from agent_rollout.lsp._start import answer_first

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    early = answer_first(stdin, stdout, __version__)
    if early.ended:
        return
    from agent_rollout.lsp._server import build_server

    build_server(__version__, early.documents).run_after(early, stdin, stdout)
