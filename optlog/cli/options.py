"""The click types of the verb parameter kinds (`optlog.api.verb.Pairs`, `JsonText`): the CLI's
syntax for them (`K=V`, a JSON text), and the checks a value passed already parsed (the MCP face)
gets too. `optlog.cli.commands` gives a generated command these types."""

from __future__ import annotations

import math
from typing import Any

import click

from optlog.api.arguments import json_value
from optlog.core.labels import check_key, parse_pair
from optlog.core.limits import LIMITS


class KeyValue(click.ParamType):
    """`K=V` on the command line → the pair (K, V), so a binding gets typed pairs and never parses
    text. A pair given as a value already (the MCP face passes an object's items) is only checked:
    its key by the label-name rule; its value stays as typed (a verb checks what it needs)."""

    name = "K=V"

    def __init__(self, field: str, *, lists: bool = False) -> None:
        self.field = field
        self.lists = lists  # a value may be a list of scalars (`--set`'s matrix axis: K=[a,b])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, Any]:
        if isinstance(value, tuple) and len(value) == 2:
            return check_key(str(value[0]), self.field), value[1]
        return parse_pair(str(value), self.field)


class JsonValue(click.ParamType):
    """A JSON text on the command line → the value it holds, under the guards every file has (size,
    depth, the text rule); a value given already parsed (the MCP face) gets the same tree checks."""

    name = "JSON"

    def __init__(self, field: str) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return json_value(self.field)(value)  # the same checks as the MCP face's (the verb's argument model)


class BoundedInt(click.types.IntParamType):
    """click's integer, inside what the database stores (±(2^63 − 1): LIMITS.int_max): `--limit
    99999999999999999999` was an internal error in the database driver (issue 42). Named as
    click's, so the help reads the same."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        n = super().convert(value, param, ctx)
        if not -LIMITS.int_max <= n <= LIMITS.int_max:
            self.fail(f"{n} is past the largest whole number optlog stores ({LIMITS.int_max})", param, ctx)
        return n


class FiniteFloat(click.types.FloatParamType):
    """click's float without `inf`, `nan` or a number past the largest double (`1e400` reads as inf):
    a margin or a confidence must be a number (issue 42)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        x = super().convert(value, param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return x
