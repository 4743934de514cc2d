"""A method's options: one frozen dataclass per method, beside its program, checked as it is made.

The fields are the option names eval.run logs (params, the `eir.config` tag, the variant) and the
keyword arguments the program takes, in the order they are logged. A field whose default depends
on the setting is None until `resolved(setting)`, so a run logs the value that ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields


class OptionsError(ValueError):
    """An option a method does not take, or a value it does not accept; the message names both."""


@dataclass(frozen=True)
class Options:
    """No options (Direct, Full Pool). A method with some subclasses this, with its fields and checks."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

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


def positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OptionsError(f"{name} must be a positive integer, got {value!r}")


def one_of(name: str, value, choices: tuple, what: str | None = None) -> None:
    if value not in choices:
        raise OptionsError(f"unknown {what or name} {value!r}; choose one of {', '.join(map(str, choices))}")
