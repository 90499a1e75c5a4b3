"""``agent-rollout lsp``: the language server, over standard input and output.

An editor starts it and talks to it (see docs/editors.md); it runs until the
editor says ``exit`` or closes the connection. Exit status 0; 2 when pygls
is not installed (``pip install 'agent-rollout[lsp]'``).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the language server over standard input and output: check's diagnostics, "
        "quick fixes, hover and completion in any LSP editor (docs/editors.md). "
        "Needs pip install 'agent-rollout[lsp]'."
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk over standard input and output (the only transport; accepted for "
        "clients that always pass it)",
    )


def run(args: argparse.Namespace) -> int:
    from agent_rollout.lsp import MISSING_PYGLS, serve

    try:
        serve()
    except ImportError as exc:
        if MISSING_PYGLS not in str(exc):
            raise
        sys.stderr.write(f"agent-rollout: {MISSING_PYGLS}\n")
        return 2
    return 0
