"""SQLModel tables. The database is the truth for runs, metrics, telemetry and todos; for
hypotheses, predictions and verdicts it is an index of the YAML files (keyed by content hash).

Times are ISO-8601 UTC text (see core.timeutil). JSON columns hold open-ended dictionaries.
Schema changes go through a new Alembic revision in optlog/store/migrations/versions/.
"""

from __future__ import annotations

from typing import Any, Optional

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, String, Text
from sqlmodel import Field, SQLModel

from optlog.core.plans import PROPOSED


class ChangeCounter(SQLModel, table=True):
    """One row; every write transaction bumps `n`, so watchers (the TUI) notice any change cheaply,
    on SQLite and PostgreSQL alike."""

    __tablename__ = "change_counter"
    id: int = Field(default=1, primary_key=True)
    n: int = 0


class SyncStamp(SQLModel, table=True):
    """Small facts about what this database has taken in from the files (e.g. the mtime of
    runs/evidence/ at the last import), so a command checks for new committed evidence with one stat."""

    __tablename__ = "sync_stamp"
    key: str = Field(primary_key=True)
    value: str = ""


class HypothesisIndex(SQLModel, table=True):
    __tablename__ = "hypothesis"
    id: str = Field(primary_key=True)
    title: str
    status: str = Field(index=True)
    parent: Optional[str] = Field(default=None, index=True)
    rivals: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    file_hash: str
    file_mtime_ns: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, default=0))
    created_at: str
    updated_at: str
    doc: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class PredictionIndex(SQLModel, table=True):
    __tablename__ = "prediction"
    id: str = Field(primary_key=True)
    hypothesis_id: str = Field(index=True)
    version: int = 1
    metric: Optional[str] = None
    expect: str
    status: str = "untested"
    spec: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class VerdictRecord(SQLModel, table=True):
    __tablename__ = "verdict"
    id: Optional[int] = Field(default=None, primary_key=True)
    hypothesis_id: str = Field(index=True)
    prediction_id: Optional[str] = Field(default=None, index=True)
    version: Optional[int] = None
    status: str
    at: str
    by: str
    summary: str = Field(default="", sa_column=Column(Text))
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class Todo(SQLModel, table=True):
    __tablename__ = "todo"
    seq: Optional[int] = Field(default=None, primary_key=True)
    id: str = Field(index=True, unique=True)
    content: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(index=True)
    priority: Optional[str] = None
    hypothesis_id: Optional[str] = Field(default=None, index=True)
    position: int = 0
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: str
    updated_at: str


class Run(SQLModel, table=True):
    __tablename__ = "run"
    id: Optional[int] = Field(default=None, primary_key=True)
    # The run's identity across clones (a random 128-bit hex): the committed evidence file
    # runs/evidence/<uid>.yaml and the import into another clone's database are keyed by it.
    uid: Optional[str] = Field(default=None, sa_column=Column(String(32), unique=True, index=True))
    # "mtime_ns:size" of the evidence file as this database last read or wrote it (import skips it)
    evidence_stamp: Optional[str] = None
    status: str = Field(index=True)
    source: str = "recorded"  # recorded | imported | launched | bench
    name: Optional[str] = None
    hypothesis_id: Optional[str] = Field(default=None, index=True)
    launch_id: Optional[int] = Field(default=None, index=True)
    repeat: int = 0
    created_at: str
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    exit_code: Optional[int] = None
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    cause: Optional[str] = None
    invalidated: bool = Field(default=False, index=True)
    invalid_reason: Optional[str] = Field(default=None, sa_column=Column(Text))
    note: Optional[str] = Field(default=None, sa_column=Column(Text))
    host: Optional[str] = None
    artifacts_dir: Optional[str] = None
    environment: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    raw: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class RunLabel(SQLModel, table=True):
    """Typed label: canonical text for selection, the number (if any) for ordering and ranges."""

    __tablename__ = "run_label"
    __table_args__ = (Index("ix_run_label_key_value", "key", "value"),)
    run_id: int = Field(foreign_key="run.id", primary_key=True, ondelete="CASCADE")
    key: str = Field(primary_key=True)
    value: str
    num: Optional[float] = None


class Metric(SQLModel, table=True):
    __tablename__ = "metric"
    __table_args__ = (Index("ix_metric_name", "name"),)
    run_id: int = Field(foreign_key="run.id", primary_key=True, ondelete="CASCADE")
    name: str = Field(primary_key=True)
    value: float


class Note(SQLModel, table=True):
    __tablename__ = "note"
    id: Optional[int] = Field(default=None, primary_key=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    hypothesis_id: Optional[str] = Field(default=None, index=True)
    run_id: Optional[int] = Field(default=None, index=True)
    link: Optional[str] = None
    by: str = ""
    created_at: str


class EvidenceLink(SQLModel, table=True):
    """A run attached to a hypothesis as evidence (by `--hypothesis` or by a verdict that used it)."""

    __tablename__ = "evidence_link"
    # the primary key (hypothesis_id, run_id) serves lookups by hypothesis; this one by run
    # (status's newest evidence per hypothesis, a run's hypotheses), else a scan per run (0003)
    __table_args__ = (Index("ix_evidence_link_run_id", "run_id"),)
    hypothesis_id: str = Field(primary_key=True)
    run_id: int = Field(foreign_key="run.id", primary_key=True, ondelete="CASCADE")
    kind: str = "linked"
    created_at: str


class Launch(SQLModel, table=True):
    """One `optlog run launch`: the spec, the process that drives it, and its run ids."""

    __tablename__ = "launch"
    id: Optional[int] = Field(default=None, primary_key=True)
    spec_path: Optional[str] = None
    spec: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    status: str = Field(default="queued", index=True)
    pid: Optional[int] = None
    pid_start: Optional[str] = None
    host: Optional[str] = None
    hypothesis_id: Optional[str] = None
    created_at: str
    finished_at: Optional[str] = None
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class ProcessRecord(SQLModel, table=True):
    """A process group a run started, with the leader's start time so a reused PID is never hit."""

    __tablename__ = "process_record"
    id: Optional[int] = Field(default=None, primary_key=True)
    launch_id: Optional[int] = Field(default=None, index=True)
    run_id: Optional[int] = Field(default=None, index=True)
    role: str = "bench"  # server | bench | telemetry
    pid: int
    pgid: int
    start_ticks: Optional[int] = Field(default=None, sa_column=Column(BigInteger))
    host: Optional[str] = None
    alive: bool = Field(default=True, index=True)


class Plan(SQLModel, table=True):
    __tablename__ = "plan"
    id: Optional[int] = Field(default=None, primary_key=True)  # NN: stable creation number
    title: str
    gain_low: float
    gain_high: float
    effort: str
    confidence: float
    status: str = PROPOSED  # one of core.plans.PLAN_ROW_STATUSES
    measured_gain: Optional[float] = None
    needs: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    change: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))  # core.plans.parse_change
    rationale: Optional[str] = Field(default=None, sa_column=Column(Text))
    steps: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    risks: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    validation: Optional[str] = Field(default=None, sa_column=Column(Text))
    why: Optional[str] = Field(default=None, sa_column=Column(Text))
    history: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: str
    updated_at: str


class TelemetryChunk(SQLModel, table=True):
    """Samples of one field of one GPU over a stretch of time, packed (see telemetry.store)."""

    __tablename__ = "telemetry_chunk"
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: Optional[int] = Field(default=None, index=True)
    launch_id: Optional[int] = Field(default=None, index=True)
    gpu: str = ""
    field: str
    t0: float
    n: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
