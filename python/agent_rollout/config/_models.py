"""The pydantic (v2) models of the rollout keys: ``RolloutFields`` and ``RolloutSettings``.

``RolloutFields`` is the set of ``rollout_*`` keys as a mixin that changes
nothing else of the model it is mixed into; ``RolloutSettings`` is the same
fields as a frozen model of its own, for a whole ``training:`` section. The
value rules are the field types (``agent_rollout.config._fields``), the
cross-field rules and their severity come from ``agent_rollout.config._rules``,
look-alike keys from ``agent_rollout.config._lookalike``; this module turns
them into one validation with errors in our wording, and keeps the warnings
on the validated model (``rollout_warnings``).

Where trainers' parsers convert a value (a whole number in quotes is the
number, ``null`` on a key with a default is unset), the models read it so too
and warn: whoever reads a config, this package gives one verdict, the one the
trainer runs with.
"""

from __future__ import annotations

import os
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
    WithJsonSchema,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from agent_rollout._errors import loc_key, shown
from agent_rollout._exceptions import RolloutValueError
from agent_rollout.backends import ROLLOUT_DEFAULTS, ROLLOUT_KEYS, launch_options
from agent_rollout.config._fields import (
    INT_RANGES,
    KEY_HELP,
    GymConfigPaths,
    JudgeBaseUrl,
    JudgeModel,
    PolicyBaseUrl,
    PolicyModel,
    RolloutBackend,
    RolloutFunc,
    SourcePath,
    check_source,
    custom_error,
    doc,
    int_schema,
    int_text,
    integral_float,
)
from agent_rollout.config._kits import section_values
from agent_rollout.config._lookalike import (
    key_set,
    lookalike_key_schema,
    meant_keys,
    read_as_meant,
)
from agent_rollout.config._rules import (
    RolloutWarning,
    coercion_warnings,
    rule_errors,
    rules_schema,
    section_warnings,
)


def _int_value(key: str) -> BeforeValidator:
    """An integer key's value as trainers' parsers read it: ``5.0`` and ``"5"`` are 5,
    ``null`` is the default (on a key with one); anything else as it is, to be refused."""
    default = ROLLOUT_DEFAULTS.get(key)

    def read(value: object) -> object:
        if value is None and default is not None:
            return default
        number = int_text(value)
        return integral_float(value) if number is None else number

    return BeforeValidator(read)


def _int_check(key: str) -> Any:
    """The range of an integer key (strict: a bool or a string that is not a plain
    whole number is refused), and its JSON Schema."""
    low, high = INT_RANGES[key]
    nullable = key in ROLLOUT_DEFAULTS
    return Field(strict=True, ge=low, le=high), WithJsonSchema(
        int_schema(low, high, nullable=nullable)
    )


_STEPS, _STEPS_SCHEMA = _int_check("rollout_max_steps")
_GROUP, _GROUP_SCHEMA = _int_check("rollout_group_size")
_PORT, _PORT_SCHEMA = _int_check("rollout_gym_head_port")
StepCount = Annotated[int, _STEPS, _int_value("rollout_max_steps"), _STEPS_SCHEMA]
GroupSize = Annotated[int, _GROUP, _int_value("rollout_group_size"), _GROUP_SCHEMA]
Port = Annotated[int, _PORT, _int_value("rollout_gym_head_port"), _PORT_SCHEMA]


def _our_wording(error: Any, key: str, name: str) -> str:
    """A pydantic error on our field ``key`` (spelt ``name`` in the section), in our words."""
    kind = error["type"]
    value = error.get("input")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        got = type(value).__name__
        return f"{name} must be an int, got {got} {shown(value)}"
    if kind in ("greater_than_equal", "less_than_equal") and key in INT_RANGES:
        low, high = INT_RANGES[key]
        return f"{name} must be in [{low}, {high}], got {shown(value)}"
    return f"{name}: {error['msg']} (got {shown(value)})"


def _as_init_error(error: Any, fields: Mapping[Any, str] = {}) -> InitErrorDetails:
    """A pydantic error, in our words when it is on one of our keys.

    ``fields``: the keys a host's aliases spell ours with, and our field
    names; the message then names the key as the section spells it.
    """
    kind = error["type"]
    message = error["msg"]
    loc = tuple(error["loc"])
    key = loc[0] if loc else None
    field = key if key in ROLLOUT_KEYS else fields.get(key) if isinstance(key, str) else None
    if field is not None and not kind.startswith("rollout_"):
        kind, message = "rollout_value", _our_wording(error, field, str(key))
    elif field is not None and key != field and _names_first(message, field):
        message = f"{key}{message[len(field) :]}"
    return InitErrorDetails(type=custom_error(kind, message), loc=loc, input=error["input"])


def _names_first(message: str, key: str) -> bool:
    """The message starts with the key's name (as our value checks word it)."""
    after = message[len(key) : len(key) + 1]
    return message.startswith(key) and not (after.isalnum() or after == "_")


def _is_in(value: Any, keys: set[str]) -> bool:
    return isinstance(value, str) and value in keys


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


def _by_field_name(
    model: type[BaseModel], data: Mapping[Any, Any]
) -> tuple[Mapping[Any, Any], dict[str, str]]:
    """The section with our keys under their field names, where a host gave them aliases,
    and how the section spells each of ours that it spells otherwise.

    A key the section does not hold is spelt as the host's alias names it.
    """
    view: Optional[dict[Any, Any]] = None
    names: dict[str, str] = {}
    for name in ROLLOUT_KEYS:
        if name in data:
            continue
        field = model.model_fields[name]
        for alias in sorted(_alias_names(field)):
            if alias in data:
                view = dict(data) if view is None else view
                view[name] = data[alias]
                names[name] = alias
                break
        else:
            spelt = field.validation_alias if isinstance(field.validation_alias, str) else None
            spelt = spelt if spelt is not None else field.alias
            if spelt is not None and spelt != name:
                names[name] = spelt
    return (data if view is None else view), names


def _read_source_beside(result: Any, info: ValidationInfo, title: str) -> None:
    """A relative ``rollout_source`` read from the ``base_dir`` of the validation context
    (the config file's folder): the one place that joins it; an absolute one as written.

    The joined path is checked as the value was (``check_source``): a folder
    whose name is not UTF-8, or one that takes the path past its length
    limit, is an error at the key, as the same path written whole would be.
    """
    context = info.context
    base = context.get("base_dir") if isinstance(context, Mapping) else None
    source = getattr(result, "rollout_source", None)
    if base is None or not isinstance(source, str) or os.path.isabs(source):
        return
    # The value is checked as written; the joined path is what the backend opens.
    folder = os.path.abspath(os.fsdecode(base))
    joined = os.path.normpath(os.path.join(folder, source))
    try:
        result.__dict__["rollout_source"] = check_source(joined)
    except PydanticCustomError as exc:
        message = f"{exc.message()} (the path read from the folder {shown(folder)})"
        error = InitErrorDetails(
            type=custom_error("rollout_source", message), loc=("rollout_source",), input=joined
        )
        raise ValidationError.from_exception_data(title, [error]) from None


def _check_assignment(
    title: str, model: Any, handler: ModelWrapValidatorHandler[Any], key: Optional[str]
) -> Any:
    """``model.rollout_x = value`` on a host with ``validate_assignment=True``.

    pydantic hands the model itself here, and its handler sets the new value
    in place; so the old values are kept, put back when a rule refuses the
    new one, and the warnings are worked out again from the new values (a
    warning about how another key's value was written stays).
    """
    before = dict(model.__dict__)
    fields_set = set(model.model_fields_set)
    earlier = model._rollout_warnings if isinstance(model, RolloutFields) else ()
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
        kept = [w for w in earlier if w.kind != "incomplete" and w.key != key]
        result._rollout_warnings = (*section_warnings(values), *kept)
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

    def __eq__(self, other: object) -> bool:
        """Equal when the settings are: pydantic's comparison (same model, fields, extra
        keys and private attributes) with the warnings left out. They say how a file
        was read (a quoted number, where a key sat), not what the settings are, so two
        configs that run the same way compare equal; a host's own private attributes
        still count."""
        if not isinstance(other, RolloutFields):
            return super().__eq__(other)
        mine = type(self).__pydantic_generic_metadata__["origin"] or type(self)
        theirs = type(other).__pydantic_generic_metadata__["origin"] or type(other)
        if mine is not theirs:
            return False
        if _host_private(self) != _host_private(other):
            return False
        if (self.__pydantic_extra__ or {}) != (other.__pydantic_extra__ or {}):
            return False
        return all(
            self.__dict__.get(name, _UNSET) == other.__dict__.get(name, _UNSET)
            for name in type(self).__pydantic_fields__
        )

    # pydantic gives a frozen model (RolloutSettings, a frozen host) a hash of its field
    # values when no base defines one: defining __eq__ above set this class's to None.
    __hash__ = None  # type: ignore[assignment]

    @model_validator(mode="wrap")
    @classmethod
    def _check_section(
        cls, data: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if isinstance(data, RolloutFields) and info.field_name in RolloutFields.model_fields:
            return _check_assignment(cls.__name__, data, handler, info.field_name)
        if not isinstance(data, Mapping):
            return handler(data)
        known = _known_keys(cls, info)
        errors: list[InitErrorDetails] = []
        flagged: set[str] = set()
        flagged_locs: set[tuple[Any, ...]] = set()  # as pydantic writes them (``loc_key``)
        typos: dict[Any, tuple[str, ...]] = {}
        for key in data:
            nearest = meant_keys(key, known)
            if nearest:
                meant = nearest[0]
                typos[key] = nearest
                flagged.add(key)
                flagged_locs.add((loc_key(key),))
                errors.append(
                    InitErrorDetails(
                        type=custom_error(
                            "rollout_unknown_key",
                            f"unknown key {key!r}; did you mean {meant!r}?",
                            meant=meant,
                        ),
                        loc=(key,),
                        input=data[key],
                    )
                )
        section, names = _by_field_name(cls, data)
        # The rules read a look-alike as the key it stands for, or wait for it
        # (``read_as_meant``); its own error is the one error at it.
        ruled, typo_names, held = read_as_meant(section, typos)
        fields = {**{alias: key for key, alias in names.items()}, **{k: k for k in ROLLOUT_KEYS}}
        result: Any = None
        try:
            result = handler(data)
        except ValidationError as exc:
            for error in exc.errors():
                # Under the host's extra="forbid" a typo would be reported twice (as an
                # extra key, or, holding a lone surrogate, as a key that is no string).
                if error["type"] == "extra_forbidden" and error["loc"][:1] in flagged_locs:
                    continue
                if error["type"] == "string_unicode" and _is_in(error.get("input"), flagged):
                    continue
                errors.append(_as_init_error(error, fields))
        errors.extend(
            error
            for error in rule_errors(ruled, {**names, **typo_names}, held)
            if error["loc"][0] not in typos
        )
        if errors or result is None:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        if isinstance(result, RolloutFields):
            found = (*section_warnings(section, names), *coercion_warnings(section))
            if found:
                result._rollout_warnings = found
            _read_source_beside(result, info, cls.__name__)
        return result

    @classmethod
    def from_section(
        cls, section: Any, *, known_keys: Iterable[str] = (), base_dir: Any = None
    ) -> Any:
        """Validate a trainer's section; ``known_keys`` are the trainer's own keys.

        ``section`` is a Mapping (a dict, an OmegaConf ``DictConfig``), a
        dataclass instance (``RolloutArguments``, or a host's own dataclass
        holding our keys) or an ``argparse.Namespace``. In a dataclass or a
        namespace (whose parser has its own defaults), keys set to ``None`` are
        unset and left out, and the fields or options are the host's own keys.
        ``base_dir``: the folder of the config file the values were read from;
        a relative ``rollout_source`` is read from there, as ``load_config``
        reads it (without it, from the current folder). Otherwise the same as
        ``model_validate(section, context={"known_keys": ..., "base_dir": ...})``.
        """
        values, declared = section_values(section)
        context: dict[str, Any] = {"known_keys": key_set(known_keys) | declared}
        if base_dir is not None:
            context["base_dir"] = base_dir
        return cls.model_validate(values, context=context)

    def model_copy(self, *, update: Optional[Mapping[str, Any]] = None, deep: bool = False) -> Any:
        """A copy of the model; our keys in ``update`` are validated.

        pydantic's own ``model_copy`` validates nothing, which would let a copy
        break our rules and keep ``rollout_warnings`` of the old values. Our
        keys in ``update`` (field names) go through the same checks as a
        section (``ValidationError`` in our words), and the warnings follow the
        new values; the host's own keys are copied as pydantic copies them.
        """
        ours = {key: value for key, value in (update or {}).items() if key in ROLLOUT_KEYS}
        if not ours:
            return super().model_copy(update=update, deep=deep)
        given = {key: getattr(self, key) for key in ROLLOUT_KEYS if key in self.model_fields_set}
        try:
            checked = RolloutSettings.model_validate({**given, **ours})
        except ValidationError as exc:
            errors = [_as_init_error(error) for error in exc.errors()]
            raise ValidationError.from_exception_data(type(self).__name__, errors) from None
        new_values = {key: getattr(checked, key) for key in ours}
        copied = super().model_copy(update={**(update or {}), **new_values}, deep=deep)
        # A warning that still holds keeps its position; one on how another key's
        # value was written stays.
        earlier = {warning: warning for warning in self._rollout_warnings}
        kept = [w for w in self._rollout_warnings if w.kind != "incomplete" and w.key not in ours]
        found = [earlier.get(warning, warning) for warning in checked.rollout_warnings]
        copied._rollout_warnings = (*found, *kept)
        return copied

    def to_launch_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``agent_rollout.launch_rollout(**kwargs)``.

        ``options`` holds only the keys that apply to the backend, without
        their ``rollout_`` prefix. Raises ``ValueError`` when no backend is set.
        """
        backend = self.rollout_backend
        if backend is None:
            raise RolloutValueError("rollout_backend is not set: there is no rollout to launch")
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


_UNSET = object()


def _host_private(model: RolloutFields) -> dict[str, Any]:
    """A model's private attributes but the warnings (what ``__eq__`` compares)."""
    private = getattr(model, "__pydantic_private__", None) or {}
    return {name: value for name, value in private.items() if name != "_rollout_warnings"}


class RolloutSettings(RolloutFields):
    """The ``rollout_*`` keys of a training config section, as a frozen model.

    Hand it the whole section: keys that belong to the trainer are ignored,
    keys that look like a typo of ours (see the module docstring) are errors.
    To put our keys into a trainer's own model, mix in :class:`RolloutFields`
    (subclassing this class would make the trainer's model frozen too).
    """

    model_config = ConfigDict(frozen=True, json_schema_extra=_extend_schema)


def set_rollout_warnings(model: RolloutFields, warnings: Iterable[RolloutWarning]) -> None:
    """Replace the warnings a validated model keeps (``load_config`` places them in the
    file and adds those about how the file is read)."""
    model._rollout_warnings = tuple(warnings)


__all__ = ["RolloutFields", "RolloutSettings", "set_rollout_warnings"]
