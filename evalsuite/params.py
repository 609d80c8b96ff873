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
    # fields added after runs were stored whose default computes something else than those runs did:
    # name -> the value those runs had. The dump leaves the field out at that value (so the old runs
    # keep their ids, and a run that asks for the old behaviour is one of them), and a stored section
    # read back without it gets that value (``stored_section``), never the new default
    LEGACY: ClassVar[dict[str, Any]] = {}

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler):
        data = handler(self)
        for name in self.LATE_FIELDS:
            if name in data and data[name] == type(self).model_fields[name].default:
                del data[name]
        for name, value in self.LEGACY.items():
            if name in data and data[name] == value:
                del data[name]
        return data

    @classmethod
    def stored_section(cls, values: dict) -> dict:
        """``values`` as a stored section means them: a ``LEGACY`` field it leaves out at the value
        runs stored before the field had."""
        return {**{k: v for k, v in cls.LEGACY.items() if k not in values}, **values}

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and not _accepts_bool(cls.model_fields[info.field_name].annotation):
            raise ValueError(f"expected {_kind(cls.model_fields[info.field_name].annotation)}, not a boolean")
        return value


def _kind(annotation: Any) -> str:
    args = typing.get_args(annotation) or (annotation,)
    return "an integer" if int in args else "a number" if float in args else "another type"
