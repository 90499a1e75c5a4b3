"""``agent-rollout lsp``: the language server, over standard input and output.

An editor starts it and talks to it (see docs/editors.md); it runs until the
editor says ``exit`` or closes the connection. Exit status 0; 1 when the
editor said ``exit`` without ``shutdown`` first (as the protocol says); 2 when
pygls is not installed (``agent-rollout lsp: pygls is not installed: pip install
...``, the line ``main`` writes for every missing package: ``_extras.missing_text``).
"""

from __future__ import annotations

import argparse

from agent_rollout._extras import install_hint

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the language server over standard input and output: check's diagnostics, "
        "quick fixes, hover and completion in any LSP editor (docs/editors.md). "
        f"Needs pygls: {install_hint('lsp')}."
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk over standard input and output (the only transport; accepted for "
        "clients that always pass it)",
    )


def run(args: argparse.Namespace) -> int:
    # Looked for here, so that the line names the module (``name``) and main words it as
    # for every missing package; ``serve`` looks again, for its callers in Python.
    from agent_rollout.lsp import serve

    # Without pygls or lsprotocol: MissingPackageError naming the module, before any answer;
    # main words it as for every missing package (``_extras.missing_text``).
    return serve()
