"""What every function reads (:class:`FunctionEnvironment`), a workflow step's model, and the checks
the other models' variables use (:mod:`.claims`, :mod:`.bus`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from ..errors import ConfigurationError

__all__ = ["FunctionEnvironment", "StepEnvironment", "variable"]

# Plain dataclasses, not pydantic models: every function validates its environment at init, and
# importing pydantic and building a validator cost a step more than the whole of the rest of the
# kit's init (bench/speed.py --cold). The checks and their messages are pydantic's lax ones.


class _Invalid(ValueError):
    """One variable's problem, worded as pydantic words it."""


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Input should be a valid string")
    return value


def _nonempty_text(value: Any) -> str:
    if not _text(value):
        raise _Invalid("String should have at least 1 character")
    return value


def _positive_int(value: Any) -> int:
    """An int of at least 1, from an int or its decimal text (``" 60 "``, ``"1_000"``, ``"60.0"``, as pydantic reads them)."""
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            whole, dot, zeros = text.partition(".")
            number = int(whole) if dot and whole.lstrip("+-").isdigit() and set(zeros) <= {"0"} else None
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if not isinstance(number, int):
        raise _Invalid("Input should be a valid integer, unable to parse string as an integer"
                       if isinstance(value, str) else "Input should be a valid integer")
    if number < 1:
        raise _Invalid("Input should be greater than or equal to 1")
    return int(number)


def _positive_number(value: Any) -> float:
    """A number above 0, from a number or its decimal text (``"2.5"``, as pydantic reads a float)."""
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _Invalid("Input should be a valid number, unable to parse string as a number") from None
    if isinstance(number, bool) or not isinstance(number, int | float) or math.isnan(number):
        raise _Invalid("Input should be a valid number")
    if number <= 0:
        raise _Invalid("Input should be greater than 0")
    return float(number)


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _names(value: Any) -> tuple[str, ...]:
    """Names from a comma-separated text, or from a sequence of texts."""
    if isinstance(value, str):
        return tuple(name.strip() for name in value.split(",") if name.strip())
    if not isinstance(value, list | tuple):
        raise _Invalid("Input should be a valid tuple")
    return tuple(_text(name) for name in value)


def variable(check: Callable[[Any], Any], default: Any = MISSING) -> Any:
    """An environment variable: ``check`` validates (and converts) its value; no ``default``: required."""
    return field(default=default, metadata={"check": check})


@dataclass(frozen=True, kw_only=True)
class FunctionEnvironment:
    """What every inferbus function reads.

    Attributes
    ----------
    POWERTOOLS_SERVICE_NAME
        The component (and step) the function belongs to: logs, metrics and traces carry it.
    POWERTOOLS_METRICS_NAMESPACE
        The CloudWatch namespace of its EMF metrics.
    POWERTOOLS_LOG_LEVEL
        ``INFO`` unless you change it.
    INFERBUS_MODELS
        The models it loads, by their names in ``models/manifest.json`` (comma-separated).
    """

    # Variables the Lambda service or an AWS tool sets, never inferbus's stack: the template
    # check (tests/infra) allows them beside the model's own fields.
    PLATFORM_VARIABLES: ClassVar[frozenset[str]] = frozenset({
        "AWS_LAMBDA_EXEC_WRAPPER", "AWS_FIS_CONFIGURATION_LOCATION", "AWS_FIS_POLL_MAX_WAIT_MILLISECONDS",
    })

    POWERTOOLS_SERVICE_NAME: str = variable(_nonempty_text)
    POWERTOOLS_METRICS_NAMESPACE: str = variable(_nonempty_text)
    POWERTOOLS_LOG_LEVEL: str = variable(_text, "INFO")
    INFERBUS_MODELS: tuple[str, ...] = variable(_names, ())

    def __post_init__(self) -> None:
        values, problems = self._checked({item.name: getattr(self, item.name) for item in fields(self)})
        if problems:
            raise ValueError(f"{type(self).__name__}: {'; '.join(problems)}")
        for name, value in values.items():
            object.__setattr__(self, name, value)  # the converted value (frozen: set once, here)

    @classmethod
    def variable_names(cls) -> frozenset[str]:
        """The names of the variables it reads."""
        return frozenset(item.name for item in fields(cls))

    @classmethod
    def _checked(cls, environ: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Each variable's converted value, and a ``"NAME: problem"`` per missing or malformed one (in
        declaration order); variables it does not read are ignored."""
        values, problems = {}, []
        for item in fields(cls):
            if item.name not in environ:
                if item.default is MISSING:
                    problems.append(f"{item.name}: Field required")
                continue
            try:
                values[item.name] = item.metadata["check"](environ[item.name])
            except _Invalid as error:
                problems.append(f"{item.name}: {error}")
        return values, problems

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> FunctionEnvironment:
        """Validate ``environ`` (default ``os.environ``).

        Raises
        ------
        ConfigurationError
            Naming every missing or malformed variable, on one line.
        """
        environ = os.environ if environ is None else environ
        values, problems = cls._checked(environ)
        if problems:
            service = environ.get("POWERTOOLS_SERVICE_NAME", "this function")
            raise ConfigurationError(f"{service}: the function's environment is incomplete or wrong ({cls.__name__}): "
                                     f"{'; '.join(problems)}. The CDK stack sets it; redeploy, or see docs/extending.md")
        return cls(**values)

    def as_variables(self) -> dict[str, str]:
        """The Lambda ``Environment.Variables`` (strings; lists comma-separated; unset values left out)."""
        variables = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None or value == ():
                continue
            variables[item.name] = ",".join(value) if isinstance(value, tuple) else str(value)
        return variables


@dataclass(frozen=True, kw_only=True)
class StepEnvironment(FunctionEnvironment):
    """A workflow step: it returns its answer to the state machine and publishes nothing itself."""
