"""One definition per vocabulary (issue 18.4): statuses, run orders, trailer keys and events, the plan
prefix default, parser formats and aliases. Each is written once; the lists the faces offer are
computed from it, and no other module spells its words.

Modules that still spell a word themselves are listed in SPELLED_ELSEWHERE; the list only shrinks
(a listed file that no longer spells it fails), like the import allowlist in tests/architecture.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from optlog.config import PlansSettings
from optlog.paths import DEFAULT_PLAN_PREFIX
from optlog.core import plans as PL
from optlog.core import statuses as ST
from optlog.core.hypothesis import HypothesisDoc
from optlog.core.todos import TODO_STATUSES
from optlog.gitlog import trailers as TR
from optlog.runs import order as O
from optlog.runs.parsers import ALIASES, FORMATS, canonical_format
from optlog.runs.spec import RunSpec

ROOT = Path(__file__).resolve().parents[2]

# word -> the files that still spell it outside its home (shrink only)
SPELLED_ELSEWHERE: dict[str, set[str]] = {
    "trailer keys": set(),
    "the plan prefix default": set(),
    "the live run statuses": set(),
    "the plan statuses": set(),
}
# the plan statuses no other vocabulary shares (todos have `in_progress`, a launch's progress `done`)
PLAN_ONLY = set(PL.PLAN_ROW_STATUSES) - {"in_progress", "done"}


def _constants(rel: str) -> list[tuple[int, str]]:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _files() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "optlog").rglob("*.py"))


def _spellers(is_word, home: str) -> set[str]:  # noqa: ANN001
    return {rel for rel in _files() if rel != home and any(is_word(v) for _, v in _constants(rel))}


def _values(rel: str) -> set[str]:
    """The strings a module writes as values: its constants less the keys of its dict displays (a JSON
    document's `"removed": True` names a field, not a status)."""
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    keys = {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k is not None}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in keys}


def _live_pair(rel: str) -> bool:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    return any(isinstance(n, ast.Tuple) and [getattr(e, "value", None) for e in n.elts] == ["queued", "running"]
               for n in ast.walk(tree))


@pytest.mark.parametrize("what", sorted(SPELLED_ELSEWHERE))
def test_each_word_is_spelled_once(what: str) -> None:
    if what == "trailer keys":
        found = _spellers(lambda v: v in TR.KEYS or (v.startswith("Optlog-") and v[7:8].isupper()),
                          "optlog/gitlog/trailers.py")
    elif what == "the plan statuses":
        found = {rel for rel in _files() if rel != "optlog/core/plans.py" and _values(rel) & PLAN_ONLY}
    elif what == "the plan prefix default":
        found = _spellers(lambda v: v == DEFAULT_PLAN_PREFIX, "optlog/paths.py")
    else:
        found = {rel for rel in _files() if rel != "optlog/core/statuses.py" and _live_pair(rel)}
    allowed = SPELLED_ELSEWHERE[what]
    assert found <= allowed, f"{what} spelled outside its home: {sorted(found - allowed)}"
    assert allowed <= found, f"no longer spelled there: remove from SPELLED_ELSEWHERE[{what!r}]: {sorted(allowed - found)}"


def test_every_trailer_key_is_in_the_vocabulary() -> None:
    """A key spelled anywhere (while the allowlist lasts) is one optlog reads back."""
    spelled = {v for rel in _files() for _, v in _constants(rel) if v.startswith("Optlog-") and v[7:8].isupper()}
    assert spelled <= set(TR.KEYS), sorted(spelled - set(TR.KEYS))


def _committed_events() -> dict[str, set[str]]:
    """Every event a module commits: `"Optlog-Event": "x"` / `{TR.EVENT: "x"}` in a dict, `event="x"` in
    a call, and the default of a parameter named `event`."""
    out: dict[str, set[str]] = {}
    for rel in _files():
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        for n in ast.walk(tree):
            vals: list[ast.expr] = []
            if isinstance(n, ast.Dict):
                vals = [v for k, v in zip(n.keys, n.values) if k is not None and
                        (getattr(k, "value", None) == TR.EVENT or (isinstance(k, ast.Attribute) and k.attr == "EVENT"))]
            elif isinstance(n, ast.Call):
                vals = [k.value for k in n.keywords if k.arg == "event"]
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = n.args
                pos = a.posonlyargs + a.args
                pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + \
                    [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                vals = [d for p, d in pairs if p.arg == "event"]
            for v in vals:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.setdefault(rel, set()).add(v.value)
    return out


def test_every_committed_event_is_in_the_vocabulary() -> None:
    events = _committed_events()
    unknown = {rel: sorted(v - set(TR.EVENTS)) for rel, v in events.items() if v - set(TR.EVENTS)}
    assert not unknown, unknown
    assert set().union(*events.values()) == set(TR.EVENTS), "an event no verb commits is in EVENTS"


def test_the_status_lists_are_computed_from_the_checked_types() -> None:
    assert ST.HYP_STATUSES == get_args(ST.HypStatus) and ST.PRED_STATUSES == get_args(ST.PredStatus)
    assert ST.LIVE_RUN_STATUSES == ("queued", "running") and set(ST.LIVE_RUN_STATUSES) < set(ST.RUN_STATUSES)
    assert set(ST.STATUS_GLYPH) == set(ST.HYP_STATUSES) | set(ST.PRED_STATUSES)
    with pytest.raises(ValidationError):
        HypothesisDoc(id="h", title="t", status="bogus")  # type: ignore[arg-type]
    from optlog.core.todos import TODO_MARK  # one list's marks for `todo list` and the dashboard
    from optlog.tui.panes.todos import TODO_NEXT  # the dashboard's own cycle (textual stays out of the rest)

    assert set(TODO_MARK) == set(TODO_NEXT) == set(TODO_STATUSES)


def test_the_plan_status_lists_are_computed_from_one_type() -> None:
    """What a person sets, what a row holds (`removed` too), what is ranked: one definition."""
    assert PL.PLAN_STATUSES == get_args(PL.PlanStatus) and PL.REMOVED not in PL.PLAN_STATUSES
    assert PL.PLAN_ROW_STATUSES == (*PL.PLAN_STATUSES, PL.REMOVED)
    assert set(PL.ACTIVE) < set(PL.PLAN_STATUSES) and PL.PROPOSED in PL.ACTIVE


def test_run_orders_are_the_spec_models_type() -> None:
    assert O.ORDERS == get_args(O.Order) and O.DEFAULT in O.ORDERS
    assert RunSpec.model_fields["order"].annotation == (O.Order | None)


def test_the_plan_prefix_default_is_the_settings_default() -> None:
    assert PlansSettings().prefix == DEFAULT_PLAN_PREFIX


def test_every_format_name_and_alias_resolves() -> None:
    assert {canonical_format(n) for n in [*FORMATS, *ALIASES]} == set(FORMATS)
    assert set(ALIASES.values()) <= set(FORMATS) and not set(ALIASES) & set(FORMATS)
