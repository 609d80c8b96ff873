"""The base of every validated parameter model (task parameters, model and train sections, mixer
and backbone options): unknown keys are errors, numbers are finite, and a boolean is never taken
for a number (pydantic would read ``true`` as 1 pair, ``false`` as 0)."""
from __future__ import annotations

import types
import typing
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_serializer

MAX_SEED = 2**31 - 1  # seeds of runs, sweeps and probes


def _accepts_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts_bool(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return any(isinstance(a, bool) for a in typing.get_args(annotation))
    return origin is typing.Annotated and _accepts_bool(typing.get_args(annotation)[0])


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    # fields added after runs were stored: the dump (and so a run's config and id) leaves them out
    # while they are at their default, so the ids of runs that do not use them stay what they were
    LATE_FIELDS: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler):
        data = handler(self)
        for name in self.LATE_FIELDS:
            if name in data and data[name] == type(self).model_fields[name].default:
                del data[name]
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and not _accepts_bool(cls.model_fields[info.field_name].annotation):
            raise ValueError(f"expected {_kind(cls.model_fields[info.field_name].annotation)}, not a boolean")
        return value


def _kind(annotation: Any) -> str:
    args = typing.get_args(annotation) or (annotation,)
    return "an integer" if int in args else "a number" if float in args else "another type"
