"""Small, runnable examples that plug into agent_rollout's rollout backends.

``openenv_drill`` is a deterministic OpenEnv environment (server, models and
client built on ``openenv-core``); ``openenv_rollout`` holds the rollout
functions a training config names with ``training.rollout_func``.
"""
