"""Small, runnable examples that plug into agent_rollout's rollout backends.

``openenv_drill`` is a deterministic OpenEnv environment (server, models and
client built on ``openenv-core``); its ``tasks`` module holds the one
definition of a right answer the examples share (``reference_answer``).
``openenv_rollout`` and ``art_rollout`` hold the rollout functions a training
config names with ``training.rollout_func``; ``scripted_servers`` the scripted
policy and judge that stand in for models. The bundled configs (``art.yaml``,
``ruler.yaml``, ``openenv.yaml``, ``nemo_gym.yaml``, ``nemo_gym_live.yaml``)
run with ``agent-rollout run --serve --example NAME``; ``serving`` is what the
command line calls for that: a bundled config's files, and the servers a
config names, started for a ``with`` block.
"""
