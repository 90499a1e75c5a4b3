"""Running a backend: ``launch_rollout``, ``RolloutResult`` and the runner registry."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from agent_rollout._engine import normalise_rollout_rows
from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._limits import (
    DEFAULT_ROLLOUT_STEPS,
    MAX_ROLLOUT_ROWS,
    MAX_ROLLOUT_STEPS,
    MAX_ROWS_LIMIT,
    check_int,
    check_max_rows,
)
from agent_rollout.backends import (
    adapter,
    require_backend_package,
    validate_rollout_backend,
    validate_rollout_func,
)
from agent_rollout.backends._ranking import BackendRows, RolloutDrop, refuse_all_dropped
from agent_rollout.backends._report import quiet_imports

__all__ = [
    "RolloutDrop",
    "RolloutResult",
    "launch_rollout",
    "register_rollout_runner",
    "runner_registered",
    "unregister_rollout_runner",
]

RolloutRunner = Callable[..., Any]

_runners: dict[str, RolloutRunner] = {}
_runners_lock = threading.Lock()


def _external_backend(name: object, verb: str) -> str:
    canonical = validate_rollout_backend(name)
    if canonical == "openenv":
        raise RolloutValueError(
            f"cannot {verb} a runner for 'openenv': it runs training.rollout_func; "
            "runners are for art, nemo_gym and ruler"
        )
    return canonical


def register_rollout_runner(name: str, runner: RolloutRunner) -> None:
    """Make ``runner`` produce the rows of an external backend (art, nemo_gym, ruler).

    A registered runner takes precedence over the built-in adapter. It is
    called with keyword arguments ``prompts``, ``model``, ``tokenizer``,
    ``reward_fn``, ``max_steps``, ``rollout_func`` and ``options`` (accept
    ``**kwargs`` to stay compatible with additions) and returns an iterable of
    row mappings, which are normalised like any other backend's.
    """
    canonical = _external_backend(name, "register")
    if not callable(runner):
        raise RolloutTypeError(f"runner must be callable, got {type(runner).__name__}")
    with _runners_lock:
        _runners[canonical] = runner


def runner_registered(name: str) -> bool:
    """A runner is registered for backend ``name`` (a valid name): it runs, not the
    built-in adapter, and needs none of the backend's packages."""
    with _runners_lock:
        return validate_rollout_backend(name) in _runners


def unregister_rollout_runner(name: str) -> None:
    """Remove a registered runner; removing one that is not there does nothing."""
    canonical = _external_backend(name, "unregister")
    with _runners_lock:
        _runners.pop(canonical, None)


@dataclass(frozen=True)
class RolloutResult:
    """A backend's normalised output: ``rows`` replace the trainer's prompt dataset.

    ``drops`` lists the prompts that produced no row and why (``art``,
    ``ruler`` and ``nemo_gym`` rank or collapse rollouts, see
    ``docs/answer.md``); ``unused_fields`` counts, per input field, the rows
    whose field has no place in a row (NeMo Gym ``tools``, say).

    Constructing one directly re-checks ``rows`` (a tuple) with the row rules,
    under the largest cap (``MAX_ROWS_LIMIT``), so a hand-built result cannot
    carry malformed rows; ``launch_rollout`` builds it from rows it has just
    checked and skips the second pass.
    """

    backend: str
    rows: tuple[dict, ...]
    drops: tuple[RolloutDrop, ...] = ()
    unused_fields: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", validate_rollout_backend(self.backend))
        if not isinstance(self.rows, tuple):
            raise RolloutTypeError(f"rows must be a tuple, got {type(self.rows).__name__}")
        checked = normalise_rollout_rows(self.rows, self.backend, max_rows=MAX_ROWS_LIMIT)
        object.__setattr__(self, "rows", checked)
        drops = tuple(self.drops)
        for drop in drops:
            if not isinstance(drop, RolloutDrop):
                raise RolloutTypeError(
                    f"drops must hold RolloutDrop items, got {type(drop).__name__}"
                )
        object.__setattr__(self, "drops", drops)
        object.__setattr__(self, "unused_fields", dict(self.unused_fields))

    @classmethod
    def _checked(
        cls,
        backend: str,
        rows: tuple[dict, ...],
        drops: tuple[RolloutDrop, ...] = (),
        unused_fields: Optional[Mapping[str, int]] = None,
    ) -> RolloutResult:
        result = object.__new__(cls)
        object.__setattr__(result, "backend", backend)
        object.__setattr__(result, "rows", rows)
        object.__setattr__(result, "drops", drops)
        object.__setattr__(result, "unused_fields", dict(unused_fields or {}))
        return result

    def drop_counts(self) -> dict[str, int]:
        """Dropped prompts per reason (``{"tie": 2, ...}``); empty when none was dropped."""
        return dict(Counter(drop.reason for drop in self.drops))


def _rollout_callable(rollout_func: object) -> Union[str, Callable[..., Any], None]:
    if rollout_func is None or isinstance(rollout_func, str):
        return validate_rollout_func(rollout_func)
    if callable(rollout_func):
        return rollout_func
    raise RolloutValueError(
        "rollout_func must be a 'module.path:function_name' string or a callable, "
        f"got {type(rollout_func).__name__}"
    )


def launch_rollout(
    name: str,
    *,
    prompts: Optional[Sequence[Any]] = None,
    rollout_func: Union[str, Callable[..., Any], None] = None,
    model: Any = None,
    tokenizer: Any = None,
    reward_fn: Any = None,
    max_steps: int = DEFAULT_ROLLOUT_STEPS,
    options: Optional[Mapping[str, Any]] = None,
    max_rows: int = MAX_ROLLOUT_ROWS,
) -> RolloutResult:
    """Run the named backend on the seed ``prompts`` and return its normalised rows.

    - ``openenv``: ``rollout_func`` (``module.path:function_name``, imported,
      or a callable) is called with the list of seed prompts, plus ``model``,
      ``tokenizer`` and ``max_steps`` as keywords when its signature names
      them (or takes ``**kwargs``); it returns the rows.
    - ``art``, ``ruler``, ``nemo_gym``: a runner registered with
      :func:`register_rollout_runner` if there is one, else the built-in
      adapter in ``agent_rollout.backends`` (``openenv`` has one too, and no
      runner). A missing backend package raises ``ImportError`` naming what to
      ``pip install``.

    ``rollout_func`` may be a callable instead of a spec, for programmatic
    use; runners receive it as given.
    ``options`` carries backend settings (``group_size``, ``judge_model``,
    ``judge_base_url``, ``source``, ...); ``max_rows`` caps the rows accepted.
    Prompts a backend ranked away or collapsed are in ``RolloutResult.drops``.
    """
    backend = validate_rollout_backend(name)
    steps = check_int(max_steps, "max_steps", MAX_ROLLOUT_STEPS)
    max_rows = check_max_rows(max_rows)
    if prompts is not None and (
        isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence)
    ):
        raise RolloutTypeError(f"prompts must be a sequence, got {type(prompts).__name__}")
    if options is not None and not isinstance(options, Mapping):
        raise RolloutTypeError(f"options must be a mapping, got {type(options).__name__}")
    func_spec = _rollout_callable(rollout_func)
    seed_prompts = list(prompts or [])
    settings = dict(options or {})

    with _runners_lock:
        runner = _runners.get(backend)  # never openenv: it cannot be registered
    if runner is None:
        with quiet_imports():  # finding art.rewards imports art, and LiteLLM with it
            require_backend_package(backend)
        runner = adapter(backend).launch
    raw = runner(
        prompts=seed_prompts,
        model=model,
        tokenizer=tokenizer,
        reward_fn=reward_fn,
        max_steps=steps,
        rollout_func=func_spec,
        options=settings,
    )
    drops: tuple[RolloutDrop, ...] = ()
    unused: dict[str, int] = {}
    if isinstance(raw, BackendRows):
        # Every prompt dropped: say why, rather than "no rows" (nemo_gym relies on this).
        refuse_all_dropped(backend, raw)
        drops, unused = raw.drops, raw.unused_fields
    rows = normalise_rollout_rows(raw, backend, max_rows=max_rows)
    return RolloutResult._checked(backend, rows, drops, unused)
