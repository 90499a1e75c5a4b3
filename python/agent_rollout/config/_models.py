"""The pydantic (v2) models of the rollout keys: ``RolloutFields`` and ``RolloutSettings``.

``RolloutFields`` is the set of ``rollout_*`` keys as a mixin that changes
nothing else of the model it is mixed into; ``RolloutSettings`` is the same
fields as a frozen model of its own, for a whole ``training:`` section. The
value rules are the field types (``agent_rollout.config._fields``), the
cross-field rules and their severity come from ``agent_rollout.config._rules``,
look-alike keys from ``agent_rollout.config._lookalike``; this module turns
them into one validation with errors in our wording, and keeps the warnings
on the validated model (``rollout_warnings``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Optional

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import InitErrorDetails

from agent_rollout._errors import shown
from agent_rollout._limits import MAX_GROUP_SIZE, MAX_PORT, MAX_ROLLOUT_STEPS
from agent_rollout.backends import ROLLOUT_DEFAULTS, ROLLOUT_KEYS, launch_options
from agent_rollout.config._fields import (
    KEY_HELP,
    GymConfigPaths,
    JudgeBaseUrl,
    JudgeModel,
    PolicyBaseUrl,
    PolicyModel,
    RolloutBackend,
    RolloutFunc,
    SourcePath,
    custom_error,
    doc,
    integral_float,
)
from agent_rollout.config._kits import section_values
from agent_rollout.config._lookalike import (
    key_set,
    lookalike_key,
    lookalike_key_schema,
    nearest_key,
)
from agent_rollout.config._rules import (
    RolloutWarning,
    rule_errors,
    rules_schema,
    section_warnings,
)

INT_RANGES: Mapping[str, tuple[int, int]] = {
    "rollout_max_steps": (1, MAX_ROLLOUT_STEPS),
    "rollout_group_size": (1, MAX_GROUP_SIZE),
    "rollout_gym_head_port": (1, MAX_PORT),
}
"""The integer keys and their ranges (strict ints: an integral float such as
``5.0`` is read as 5, as JSON Schema's ``integer`` reads it; a bool, a
fraction or a numeric string is refused)."""


_INTEGRAL = BeforeValidator(integral_float)
StepCount = Annotated[int, Field(strict=True, ge=1, le=MAX_ROLLOUT_STEPS), _INTEGRAL]
GroupSize = Annotated[int, Field(strict=True, ge=1, le=MAX_GROUP_SIZE), _INTEGRAL]
Port = Annotated[int, Field(strict=True, ge=1, le=MAX_PORT), _INTEGRAL]


def _our_wording(error: Any) -> str:
    """A pydantic error on one of our fields, in the wording of our own rules."""
    key = str(error["loc"][0])
    kind = error["type"]
    value = error.get("input")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        got = type(value).__name__
        return f"{key} must be an int, got {got} {shown(value)}"
    if kind in ("greater_than_equal", "less_than_equal") and key in INT_RANGES:
        low, high = INT_RANGES[key]
        return f"{key} must be in [{low}, {high}], got {shown(value)}"
    return f"{key}: {error['msg']} (got {shown(value)})"


def _as_init_error(error: Any) -> InitErrorDetails:
    kind = error["type"]
    message = error["msg"]
    if error["loc"] and error["loc"][0] in ROLLOUT_KEYS and not kind.startswith("rollout_"):
        kind, message = "rollout_value", _our_wording(error)
    return InitErrorDetails(
        type=custom_error(kind, message), loc=tuple(error["loc"]), input=error["input"]
    )


def _alias_names(field: Any) -> set[str]:
    """The top-level keys a field is read from besides its name (str, choices, paths)."""
    names: set[str] = set()
    for alias in (field.alias, field.validation_alias):
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            first = choice.path[0] if isinstance(choice, AliasPath) and choice.path else choice
            if isinstance(first, str):
                names.add(first)
    return names


def _known_keys(model: type[BaseModel], info: ValidationInfo) -> frozenset[str]:
    """Keys that are the host's: its own fields and aliases, the aliases a host gives our
    fields (an ``alias_generator``), and ``known_keys`` in the context."""
    known: set[str] = set()
    for name, field in model.model_fields.items():
        if name not in ROLLOUT_KEYS:
            known.add(name)
        known.update(_alias_names(field))
    context = info.context
    if isinstance(context, Mapping):
        extra = context.get("known_keys")
        if extra is not None:
            known.update(key for key in key_set(extra) if isinstance(key, str))
    return frozenset(known)


def _by_field_name(model: type[BaseModel], data: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """The section with our keys under their field names, where a host gave them aliases."""
    view: Optional[dict[Any, Any]] = None
    for name in ROLLOUT_KEYS:
        if name in data:
            continue
        for alias in sorted(_alias_names(model.model_fields[name])):
            if alias in data:
                view = dict(data) if view is None else view
                view[name] = data[alias]
                break
    return data if view is None else view


def _check_assignment(title: str, model: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
    """``model.rollout_x = value`` on a host with ``validate_assignment=True``.

    pydantic hands the model itself here, and its handler sets the new value
    in place; so the old values are kept, put back when a rule refuses the
    new one, and the warnings are worked out again from the new values.
    """
    before = dict(model.__dict__)
    fields_set = set(model.model_fields_set)
    try:
        result = handler(model)
    except ValidationError as exc:
        errors = [_as_init_error(error) for error in exc.errors()]
        raise ValidationError.from_exception_data(title, errors) from None
    # As the section would read: the keys given so far (defaults are not given).
    given = result.model_fields_set
    values = {key: getattr(result, key) for key in ROLLOUT_KEYS if key in given}
    broken = rule_errors(values)
    if broken:
        model.__dict__.clear()
        model.__dict__.update(before)
        object.__setattr__(model, "__pydantic_fields_set__", fields_set)
        raise ValidationError.from_exception_data(title, broken)
    if isinstance(result, RolloutFields):
        result._rollout_warnings = section_warnings(values)
    return result


class RolloutFields(BaseModel):
    """The ``rollout_*`` keys, as a mixin for a trainer's own pydantic model.

    Mixing it in adds the fields, their rules and the look-alike check, and
    nothing else: the host keeps its own ``frozen``, ``title`` and ``extra``
    policy and its own JSON Schema header. The host's own fields (and
    aliases) are never flagged as look-alikes; a typo of one of our keys is
    reported once, in our wording, even under ``extra="forbid"``. Warnings
    are on ``rollout_warnings`` of the validated instance.
    """

    _rollout_warnings: tuple[RolloutWarning, ...] = PrivateAttr(default=())

    rollout_backend: Optional[RolloutBackend] = None
    rollout_func: Optional[RolloutFunc] = None
    rollout_max_steps: StepCount = Field(
        default=ROLLOUT_DEFAULTS["rollout_max_steps"],
        examples=[ROLLOUT_DEFAULTS["rollout_max_steps"]],
        json_schema_extra=doc(KEY_HELP["rollout_max_steps"], "rollout_max_steps: 32"),
    )
    rollout_group_size: GroupSize = Field(
        default=ROLLOUT_DEFAULTS["rollout_group_size"],
        examples=[ROLLOUT_DEFAULTS["rollout_group_size"]],
        json_schema_extra=doc(KEY_HELP["rollout_group_size"], "rollout_group_size: 8"),
    )
    rollout_judge_model: Optional[JudgeModel] = None
    rollout_judge_base_url: Optional[JudgeBaseUrl] = None
    rollout_policy_model: Optional[PolicyModel] = None
    rollout_policy_base_url: Optional[PolicyBaseUrl] = None
    rollout_source: Optional[SourcePath] = None
    rollout_gym_config: Optional[GymConfigPaths] = None
    rollout_gym_head_port: Optional[Port] = Field(
        default=None,
        examples=[11000],
        json_schema_extra=doc(KEY_HELP["rollout_gym_head_port"], "rollout_gym_head_port: 11500"),
    )

    @property
    def rollout_warnings(self) -> tuple[RolloutWarning, ...]:
        """What the built-in adapter will miss (empty when nothing is)."""
        return self._rollout_warnings

    @model_validator(mode="wrap")
    @classmethod
    def _check_section(
        cls, data: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if isinstance(data, RolloutFields) and info.field_name in RolloutFields.model_fields:
            return _check_assignment(cls.__name__, data, handler)
        if not isinstance(data, Mapping):
            return handler(data)
        known = _known_keys(cls, info)
        errors: list[InitErrorDetails] = []
        flagged: set[str] = set()
        for key in data:
            if lookalike_key(key, known):
                flagged.add(key)
                errors.append(
                    InitErrorDetails(
                        type=custom_error(
                            "rollout_unknown_key",
                            f"unknown key {key!r}; did you mean {nearest_key(key)!r}?",
                        ),
                        loc=(key,),
                        input=data[key],
                    )
                )
        result: Any = None
        try:
            result = handler(data)
        except ValidationError as exc:
            for error in exc.errors():
                # Under the host's extra="forbid" a typo would be reported twice.
                if error["type"] == "extra_forbidden" and error["loc"][:1] in {
                    (key,) for key in flagged
                }:
                    continue
                errors.append(_as_init_error(error))
        section = _by_field_name(cls, data)
        errors.extend(rule_errors(section))
        if errors or result is None:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        if isinstance(result, RolloutFields):
            found = section_warnings(section)
            if found:
                result._rollout_warnings = found
        return result

    @classmethod
    def from_section(cls, section: Any, *, known_keys: Iterable[str] = ()) -> Any:
        """Validate a trainer's section; ``known_keys`` are the trainer's own keys.

        ``section`` is a Mapping (a dict, an OmegaConf ``DictConfig``), a
        dataclass instance (``RolloutArguments``, or a host's own dataclass
        holding our keys) or an ``argparse.Namespace``; keys set to ``None``
        are unset and left out, and the fields of a dataclass or the options
        of a namespace are the host's own keys. Otherwise the same as
        ``model_validate(section, context={"known_keys": ...})``.
        """
        values, declared = section_values(section)
        known = key_set(known_keys) | declared
        return cls.model_validate(values, context={"known_keys": known})

    def to_launch_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``agent_rollout.launch_rollout(**kwargs)``.

        ``options`` holds only the keys that apply to the backend, without
        their ``rollout_`` prefix. Raises ``ValueError`` when no backend is set.
        """
        backend = self.rollout_backend
        if backend is None:
            raise ValueError("rollout_backend is not set: there is no rollout to launch")
        options = launch_options(backend, {key: getattr(self, key) for key in ROLLOUT_KEYS})
        return {
            "name": backend,
            "rollout_func": self.rollout_func,
            "max_steps": self.rollout_max_steps,
            "options": options,
        }


def _extend_schema(schema: dict[str, Any], model: Optional[type] = None) -> None:
    # Only RolloutSettings' own schema gets the section rules: a host model
    # that mixes RolloutFields in keeps its schema to itself.
    if model is not None and model is not RolloutSettings:
        return
    schema["propertyNames"] = lookalike_key_schema()
    schema["allOf"] = rules_schema()


class RolloutSettings(RolloutFields):
    """The ``rollout_*`` keys of a training config section, as a frozen model.

    Hand it the whole section: keys that belong to the trainer are ignored,
    keys that look like a typo of ours (see the module docstring) are errors.
    To put our keys into a trainer's own model, mix in :class:`RolloutFields`
    (subclassing this class would make the trainer's model frozen too).
    """

    model_config = ConfigDict(frozen=True, json_schema_extra=_extend_schema)


__all__ = ["RolloutFields", "RolloutSettings"]
