"""``python -m agent_rollout``: the same as the ``agent-rollout`` command."""

from agent_rollout.cli import main

raise SystemExit(main())
