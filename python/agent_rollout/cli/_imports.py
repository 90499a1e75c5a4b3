"""How the commands import the user's code: from the current folder first, as
``python -m agent_rollout`` does (the ``agent-rollout`` script has its own folder on
``sys.path`` instead of the current one)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def current_folder_first() -> Iterator[None]:
    """The current folder first on ``sys.path`` for the block; restored after."""
    entry = os.getcwd()
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        try:
            sys.path.remove(entry)  # the first one: ours, unless the user's code put another
        except ValueError:
            pass  # the user's code took it out


__all__ = ["current_folder_first"]
