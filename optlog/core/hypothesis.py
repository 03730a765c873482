"""The hypothesis file (`hypotheses/<id>.yaml`) as typed models, and the rules on ids and statuses.

The file is the truth for what a person writes (title, statement, rationale, rivals, predictions,
overrides) and it carries the verdict history with the values that decided each verdict, so a fresh
clone without the database still tells the whole story.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Optional

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_serializer,
                      model_validator)

from optlog.core import expr as E, text as TX
from optlog.core.statuses import HYP_STATUSES, PRED_STATUSES, STATUS_GLYPH, HypStatus, PredStatus  # noqa: F401 - re-exported
from optlog.core.text import ID_RE, check_id  # noqa: F401 - re-exported

# Text fields: one line (titles, names) or many (statements, reasons); both refuse control characters.
Line = Annotated[str, AfterValidator(TX.line)]
Text = Annotated[str, AfterValidator(TX.text)]
HypId = Annotated[str, AfterValidator(check_id)]


def slugify(title: str, max_len: int = 40) -> str:
    s = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    s = re.sub(r"[^a-zA-Z0-9]+", "-", s).strip("-").lower()
    s = s[:max_len].rstrip("-")
    return s or "hypothesis"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PostHoc(_Doc):
    """The pre-registration mark (core.posthoc): the prediction (this version of it) was written at
    `at`, when runs its groups select already existed: `runs` by number (as the writing clone numbered
    them), `run_uids` by identity (the same in every clone)."""

    at: Optional[Line] = None
    runs: list[int] = Field(default_factory=list)
    run_uids: list[str] = Field(default_factory=list)
    state: Optional[Literal["baseline-known"]] = None
    """None: post-hoc (its outcome could be computed when it was written); "baseline-known": some of
    its groups had runs but its outcome could not be computed then (core.posthoc). Left out of the
    file when None, so marks written before the state existed stay byte for byte what they were."""

    @model_serializer(mode="wrap")
    def _ser(self, handler: Any) -> Any:
        d = handler(self)
        if isinstance(d, dict) and d.get("state", 0) is None:
            d.pop("state")
        return d


def _drop_none_mark(handler: Any, obj: Any) -> Any:
    """A prediction (or version) without the mark serialises as it did before the mark existed: no
    `post_hoc` key. Its file and the verdict engine's fingerprint of it (`core.verdict.fingerprint`
    hashes the dump) stay byte for byte what they were, so no workspace re-judges for this field."""
    d = handler(obj)
    if isinstance(d, dict) and d.get("post_hoc", 0) is None:
        d.pop("post_hoc")
    return d


class PredictionVersion(_Doc):
    """An earlier version of a prediction, kept when it was edited after evidence existed."""

    version: int
    expect: str
    metric: Optional[str] = None
    a: dict[str, Any] = Field(default_factory=dict)
    b: dict[str, Any] = Field(default_factory=dict)
    where: Optional[str] = None
    per: Optional[str] = None
    margin: float = 0.05
    created: Optional[str] = None
    replaced: Optional[str] = None
    post_hoc: Optional[PostHoc] = None

    @model_serializer(mode="wrap")
    def _ser(self, handler: Any) -> Any:
        return _drop_none_mark(handler, self)


def parse_expectation(text: str) -> E.Node:
    """A prediction's `expect` text, parsed: the one place a stored prediction's expression is read
    (issue 46), when the prediction is loaded from its file or made (service.predictions checks it
    against the workspace's ceilings first). Everything after uses `Prediction.expr`."""
    try:
        return E.parse_expect(text, None)
    except E.ExprError as e:
        raise ValueError(f"not a valid prediction expression: {e.pretty()}") from None


def _expect_ok(v: str) -> str:
    """A hand edit must not commit an expression the verdict engine cannot read."""
    parse_expectation(v)
    return v


def _where_ok(v: str | None) -> str | None:
    if v is None:
        return v
    try:
        E.parse_where(v)
    except E.ExprError as e:
        raise ValueError(f"not a valid condition: {e.pretty()}") from None
    return v


class Prediction(_Doc):
    id: Line
    version: int = Field(default=1, ge=1)
    expect: Annotated[str, AfterValidator(_expect_ok)]
    metric: Optional[Line] = None
    a: dict[str, Any] = Field(default_factory=dict)
    b: dict[str, Any] = Field(default_factory=dict)
    where: Annotated[Optional[str], AfterValidator(_where_ok)] = None
    per: Optional[Line] = None
    margin: float = Field(default=0.05, ge=0)
    status: PredStatus = "untested"
    created: Optional[str] = None
    edited_after_evidence: bool = False
    post_hoc: Optional[PostHoc] = None
    """Written when runs its groups select already existed (core.posthoc); None: pre-registered."""
    history: list[PredictionVersion] = Field(default_factory=list)
    _parsed: Optional[tuple[str, E.Node]] = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _parse(self) -> "Prediction":
        self._parsed = (self.expect, parse_expectation(self.expect))
        return self

    @property
    def expr(self) -> E.Node:
        """The expression, typed: parsed when the prediction was loaded or made. Kept with the text
        it was parsed from, so an edit that sets `expect` in place gets its own."""
        if self._parsed is None or self._parsed[0] != self.expect:
            self._parsed = (self.expect, parse_expectation(self.expect))
        return self._parsed[1]

    @property
    def groups(self) -> set[str]:
        """The groups its expression reads (`a`, `b`): `a < 0.05 * peak_tflops` reads a alone."""
        return E.groups(self.expr)

    @model_serializer(mode="wrap")
    def _ser(self, handler: Any) -> Any:
        return _drop_none_mark(handler, self)


class StatusChange(_Doc):
    at: Line
    by: Line
    to: HypStatus
    why: Text
    kind: Literal["manual", "auto"] = "manual"
    from_: Optional[str] = Field(default=None, alias="from")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Override(_Doc):
    status: HypStatus
    why: Text
    by: Line
    at: Line


class Verdict(BaseModel):
    """One verdict reached by the engine (or recorded by hand): kept with the numbers that decided it."""

    model_config = ConfigDict(extra="allow")
    at: str
    by: str
    status: str
    summary: str = ""
    predictions: list[dict[str, Any]] = Field(default_factory=list)


class HypothesisDoc(_Doc):
    id: str
    title: Line
    statement: Text = ""
    rationale: Text = ""
    status: HypStatus = "open"
    auto_status: Optional[HypStatus] = None
    parent: Optional[HypId] = None
    rivals: list[HypId] = Field(default_factory=list)
    created: Optional[Line] = None
    created_by: Optional[Line] = None
    override: Optional[Override] = None
    predictions: list[Prediction] = Field(default_factory=list)
    verdicts: list[Verdict] = Field(default_factory=list)
    history: list[StatusChange] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        return check_id(v)

    @field_validator("title")
    @classmethod
    def _title_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    def to_yaml_data(self) -> dict[str, Any]:
        """Plain data in a stable key order, empty optional parts left out (smaller diffs)."""
        d = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for k in ("rivals", "predictions", "verdicts", "history"):
            if not d.get(k):
                d.pop(k, None)
        for k in ("statement", "rationale"):
            if d.get(k) == "":
                d.pop(k, None)
        for p in d.get("predictions", []):
            for k in ("a", "b", "history"):
                if not p.get(k):
                    p.pop(k, None)
            if not p.get("edited_after_evidence"):
                p.pop("edited_after_evidence", None)
        return d

    def effective_status(self) -> str:
        return self.override.status if self.override else (self.auto_status or self.status)


def link_problems(docs: Mapping[str, Any]) -> list[tuple[str, tuple[Any, ...], str]]:
    """What is wrong with the links between hypotheses: (id, field location, message) for each
    parent or rival that names itself or no hypothesis, and for each parent cycle (reported once,
    at its smallest id). A file that passes its own checks can still break these (a hand edit, a
    deleted file), and a cycle would send every walk up the family tree round for ever."""
    out: list[tuple[str, tuple[Any, ...], str]] = []
    for hid in sorted(docs):
        d = docs[hid]
        if d.parent is not None:
            if d.parent == hid:
                out.append((hid, ("parent",), "a hypothesis cannot be its own parent"))
            elif d.parent not in docs:
                out.append((hid, ("parent",), f"no hypothesis {d.parent!r} (no file hypotheses/{d.parent}.yaml)"))
        for i, r in enumerate(d.rivals):
            if r == hid:
                out.append((hid, ("rivals", i), "a hypothesis cannot be its own rival"))
            elif r not in docs:
                out.append((hid, ("rivals", i), f"no hypothesis {r!r} (no file hypotheses/{r}.yaml)"))
    seen: set[str] = set()
    for hid in sorted(docs):
        path: list[str] = []
        cur: str | None = hid
        while cur is not None and cur in docs and cur not in seen and cur not in path:
            path.append(cur)
            nxt = docs[cur].parent
            cur = nxt if nxt != cur else None
        if cur is not None and cur in path:
            cyc = path[path.index(cur):]
            start = min(cyc)
            i = cyc.index(start)
            ring = cyc[i:] + cyc[:i]
            out.append((start, ("parent",), "parent cycle: " + " → ".join([*ring, start])))
        seen.update(path)
    return out
