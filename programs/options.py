"""A method's options: one frozen dataclass per method, beside its program, checked as it is made.

The dataclass is the one place an option is declared. Each field, made with `option(...)`, carries
its default, the values it takes and its help; eval.run's flags, the grid's keys, the "not an option
of this method" check and the option's part of a run's variant name are all derived from it
(programs/registry.py gathers every method's). The fields are the option names eval.run logs
(params, the `eir.config` tag, the variant) and the keyword arguments the program takes, in the
order they are logged. A field whose default depends on the setting is None until
`resolved(setting)`, so a run logs the value that ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, asdict, dataclass, field, fields
from typing import ClassVar

POSITIVE_INT, NUMBER = "positive integer", "number"  # the kinds of value an option without choices takes
# How a run's variant name shows an option (RunConfig.variant): `name=value` always; the value alone
# unless it is the default (an ablation); `name=value` unless it is the setting's default.
ALWAYS, BARE, UNLESS_DEFAULT = "always", "bare", "unless_default"


class OptionsError(ValueError):
    """An option a method does not take, or a value it does not accept; the message names both."""


def option(default, help: str, *, kind: str | None = None, choices: tuple | None = None, short: str | None = None,
           variant: str = ALWAYS, shapes_program: bool = True):
    """A field of an Options dataclass, declared once: its `default` (None: the setting's, made by
    `resolved`), the `kind` of value (POSITIVE_INT, NUMBER) or its `choices`, the `help` eval.run
    shows, its `short` name in a variant and how the `variant` shows it. `shapes_program`: False when
    the option changes how outputs are judged, not which predictors the program holds (a compiled
    program then runs under any value)."""
    if (kind is None) == (choices is None):
        raise TypeError("an option takes either a kind or choices")
    return field(default=default, metadata={"help": help, "kind": kind, "choices": choices, "short": short,
                                            "variant": variant, "shapes_program": shapes_program})


def positive_int(name: str | None, value) -> int:
    """`value` when it is a positive integer; the project's one such check (eval.run's flags, the grid,
    a config, an option, a bound), else an OptionsError naming `name` (if given)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OptionsError(f"{name + ' ' if name else ''}must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Options:
    """No options (Direct, Full Pool). A method with some subclasses this with `option(...)` fields."""

    VARIANT_ORDER: ClassVar[tuple[str, ...]] = ()  # options named first in a variant, in this order

    def __post_init__(self) -> None:
        for f in fields(self):
            check(f, getattr(self, f.name))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in cls.declared())

    @classmethod
    def declared(cls) -> tuple[Field, ...]:
        """The option fields, in the order they are logged."""
        return fields(cls)

    @classmethod
    def of(cls, method: str, given: Mapping) -> Options:
        """The options `given` (by name) for `method`; an option it does not take is an OptionsError."""
        unknown = [k for k in given if k not in cls.names()]
        if unknown:
            takes = f"its options: {', '.join(cls.names())}" if cls.names() else "it takes none"
            raise OptionsError(f"{unknown[0]!r} is not an option of method {method} ({takes})")
        return cls(**given)

    def resolved(self, setting: str) -> Options:
        """These options with every setting-dependent default made the value that runs in `setting`."""
        return self

    def as_dict(self) -> dict:
        return asdict(self)

    def variant_parts(self, setting: str) -> tuple[list[str], list[str]]:
        """How a run's variant name shows these (resolved) options, each as its field says (`option`):
        (the values shown bare, which lead the name; the `name=value` parts, which end it, in
        `VARIANT_ORDER` then the declared order)."""
        defaults = type(self)().resolved(setting)
        bare, named = [], []
        order = {name: i for i, name in enumerate(self.VARIANT_ORDER)}
        for f in sorted(self.declared(), key=lambda f: order.get(f.name, len(order))):
            value, how = getattr(self, f.name), f.metadata["variant"]
            if how != ALWAYS and value == getattr(defaults, f.name):
                continue
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            if how == BARE:
                bare.append(shown)
            else:
                named.append(f"{f.metadata['short'] or f.name}={shown}")
        return bare, named

    @classmethod
    def judging(cls) -> tuple[str, ...]:
        """The options that change how outputs are judged, not which predictors the program holds: a
        compiled program need not match them."""
        return tuple(f.name for f in cls.declared() if not f.metadata["shapes_program"])


def check(f: Field, value) -> None:
    """`value` is one the option field `f` takes (None only where its default is None), else an OptionsError."""
    meta = f.metadata
    if value is None and f.default is None:
        return
    if meta["choices"] is not None:
        if value not in meta["choices"]:
            raise OptionsError(f"unknown {f.name} {value!r}; choose one of {', '.join(map(str, meta['choices']))}")
    elif meta["kind"] == POSITIVE_INT:
        positive_int(f.name, value)
    elif not isinstance(value, (int, float)) or isinstance(value, bool):
        raise OptionsError(f"{f.name} must be a number, got {value!r}")
