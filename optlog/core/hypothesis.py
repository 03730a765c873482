"""The hypothesis file (`hypotheses/<id>.yaml`) as typed models, and the rules on ids and statuses.

The file is the truth for what a person writes (title, statement, rationale, rivals, predictions,
overrides) and it carries the verdict history with the values that decided each verdict, so a fresh
clone without the database still tells the whole story.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from optlog.core.statuses import HYP_STATUSES, PRED_STATUSES, STATUS_GLYPH  # noqa: F401 - re-exported

HypStatus = Literal["open", "testing", "confirmed", "falsified", "inconclusive", "superseded"]
PredStatus = Literal["untested", "confirmed", "falsified", "inconclusive"]

ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def slugify(title: str, max_len: int = 40) -> str:
    s = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    s = re.sub(r"[^a-zA-Z0-9]+", "-", s).strip("-").lower()
    s = s[:max_len].rstrip("-")
    return s or "hypothesis"


def check_id(hid: str) -> str:
    if not ID_RE.match(hid):
        raise ValueError(f"bad id {hid!r}: lower-case letters, digits and '-', starting with a letter or digit")
    return hid


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class Prediction(_Doc):
    id: str
    version: int = Field(default=1, ge=1)
    expect: str
    metric: Optional[str] = None
    a: dict[str, Any] = Field(default_factory=dict)
    b: dict[str, Any] = Field(default_factory=dict)
    where: Optional[str] = None
    per: Optional[str] = None
    margin: float = Field(default=0.05, ge=0)
    status: PredStatus = "untested"
    created: Optional[str] = None
    edited_after_evidence: bool = False
    history: list[PredictionVersion] = Field(default_factory=list)


class StatusChange(_Doc):
    at: str
    by: str
    to: HypStatus
    why: str
    kind: Literal["manual", "auto"] = "manual"
    from_: Optional[str] = Field(default=None, alias="from")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Override(_Doc):
    status: HypStatus
    why: str
    by: str
    at: str


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
    title: str
    statement: str = ""
    rationale: str = ""
    status: HypStatus = "open"
    auto_status: Optional[HypStatus] = None
    parent: Optional[str] = None
    rivals: list[str] = Field(default_factory=list)
    created: Optional[str] = None
    created_by: Optional[str] = None
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
