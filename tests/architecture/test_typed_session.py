"""Verbs receive a typed session (issue 46, "verbs receive a typed session"): every verb's first
parameter is annotated `Call`, and `Call.ctx` is the type `open_session` returns, so mypy checks
the first argument of every verb's call into the service (a `Workspace` passed where the session
is wanted is an error; `Any` would let it through)."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

from optlog.api import verb as V
from optlog.api.session import open_session


def loose(verbs: dict[tuple[str, ...], Any], call_type: Any, session: Any) -> list[str]:
    """The verbs whose first parameter is not a `Call`, and a `Call` whose session is not typed."""
    out = []
    # the session's name as the annotation spells it (imported for type checking only)
    if get_type_hints(call_type.ctx.fget, localns={session.__name__: session}).get("return") is not session:
        out.append(f"{call_type.__name__}.ctx is not typed as {getattr(session, '__name__', session)}")
    for path, v in sorted(verbs.items()):
        first = next(iter(inspect.signature(v.fn).parameters.values()), None)
        if first is None or get_type_hints(v.fn).get(first.name) is not call_type:
            out.append(f"{' '.join(path)}: its first parameter is not a Call")
    return out


def test_every_verb_gets_the_typed_session() -> None:
    session = get_type_hints(open_session)["return"]
    assert not loose(V.catalogue(), V.Call, session)


def test_the_rule_can_fail() -> None:
    class Untyped:
        @property
        def ctx(self) -> Any: ...

    def bare(call, *, x: int = 1):  # type: ignore[no-untyped-def]
        return {}

    verbs = {("bare",): V.Verb(path=("bare",), fn=bare)}
    session = get_type_hints(open_session)["return"]
    assert loose(verbs, Untyped, session) == ["Untyped.ctx is not typed as Ctx", "bare: its first parameter is not a Call"]
