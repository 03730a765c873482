"""The JSON contract: the documents the service verbs return, which the CLI prints under `--json`
and the MCP tools return as their structured result.

Each class is one document (or one item of a list document). A verb's return type names its class,
so mypy checks the verbs against it; `docs/json.md` is generated from these classes
(`python scripts/json_docs.py`, checked by `tests/architecture/test_json_docs.py`), and the MCP
output schemas (`optlog.mcp.schemas`) are derived from them. So the contract is written once.

Rules the documents keep:
* a key that is `NotRequired` may be absent (sections with nothing to say are left out: small by
  default); every other key is always there, possibly `null`;
* documents may gain keys (a new key is not a break); a key is never renamed or removed;
* the list documents carry `total`, `offset` and `next_offset` only when a page was asked for
  (`--limit`/`--offset`): see `optlog.service.envelope`.

Statuses are typed as `Annotated[str, Vocab(...)]` over the one vocabulary (`optlog.core.statuses`,
`optlog.core.todos`), so the schemas' enums come from there and are never spelt twice.

No `from __future__ import annotations` here: the classes are read at run time (their required
keys, the MCP schemas, docs/json.md), which needs real annotations.
"""

from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, TypedDict

from optlog.core import posthoc as PH
from optlog.core.statuses import HYP_STATUSES, LAUNCH_VIEW_STATUSES, PRED_STATUSES, RUN_STATUSES
from optlog.core.todos import PRIORITIES, TODO_STATUSES


@dataclass(frozen=True)
class Vocab:
    """Metadata on a `str`: the values it takes (a schema's `enum`)."""

    values: tuple[str, ...]


HypStatus = Annotated[str, Vocab(tuple(HYP_STATUSES))]
PredStatus = Annotated[str, Vocab(tuple(PRED_STATUSES))]
RunStatus = Annotated[str, Vocab(tuple(RUN_STATUSES))]
LaunchViewStatus = Annotated[str, Vocab(LAUNCH_VIEW_STATUSES)]  # a run's statuses, or waiting for the machine
TodoStatus = Annotated[str, Vocab(tuple(TODO_STATUSES))]
Priority = Annotated[str, Vocab(tuple(PRIORITIES))]
Preregistration = Annotated[str, Vocab(PH.STATES)]  # core.posthoc: pre-registered, baseline-known, post-hoc


class PageFacts(TypedDict):
    """The page facts a list document carries when a page was asked for."""

    total: NotRequired[int]
    """How many items match in all."""
    offset: NotRequired[int]
    """How many were skipped."""
    next_offset: NotRequired[int | None]
    """The offset of the next page; null at the end."""


# ---------------------------------------------------------------- hypotheses and predictions


class PredictionRef(TypedDict):
    """A prediction as an acknowledgement names it."""

    id: str
    status: PredStatus


class PostHoc(TypedDict):
    """The pre-registration mark (docs/verdicts.md): the prediction was written at `at`, when these
    runs its groups select already existed (`runs`: as the writing clone numbered them; `run_uids`:
    the same runs in every clone)."""

    at: str | None
    runs: list[int]
    run_uids: NotRequired[list[str]]
    """In the prediction's own mark (`prediction add|edit|show|list`), not in a verdict's record."""
    state: NotRequired[Annotated[str, Vocab((PH.BASELINE_KNOWN,))]]
    """Present when only a baseline was known: some of its groups had runs, but its outcome could
    not be computed when it was written (weaker than pre-registered, not post-hoc)."""


class StatusPrediction(TypedDict):
    """A prediction in `status`."""

    id: str
    status: PredStatus
    post_hoc: NotRequired[bool]
    """Present (true) when it was written after runs its groups select existed and its outcome could
    be computed then (post-hoc)."""
    preregistration: NotRequired[Preregistration]
    """Present when not pre-registered (docs/verdicts.md)."""


class PredictionLine(TypedDict):
    """A prediction inside a hypothesis summary."""

    id: str
    version: int
    metric: str | None
    expect: str
    status: PredStatus


class HypothesisSummary(TypedDict):
    """One item of `hypothesis list` (`--fields` keeps only the keys asked for)."""

    id: str
    title: str
    status: HypStatus
    """The effective status: a manual override, else the automatic verdict."""
    auto_status: HypStatus | None
    override: dict[str, Any] | None
    parent: str | None
    children: list[str]
    rivals: list[str]
    predictions: list[PredictionLine]
    created: str | None


class HypothesisList(PageFacts):
    """`optlog hypothesis list --json`."""

    hypotheses: list[HypothesisSummary]


class HypothesisShow(HypothesisSummary):
    """`optlog hypothesis show ID --json` (and what a hypothesis write returns with `--detail`)."""

    statement: str
    rationale: str
    created_by: str | None
    verdicts: list[dict[str, Any]]
    """The verdict history: at, status, kind, by, summary."""
    verdict_details: list[dict[str, Any]]
    history: list[dict[str, Any]]
    file: str
    notes: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    disagreement: NotRequired[str]
    """Present when a manual status disagrees with the automatic verdict."""


class HypothesisBrief(TypedDict):
    """`optlog hypothesis show ID --brief --json` (an agent's default): no evidence values."""

    id: str
    title: str
    status: HypStatus
    parent: str | None
    children: list[str]
    rivals: list[str]
    statement: NotRequired[str]
    predictions: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    """The last two verdicts, summaries cut to 160 characters."""
    verdicts_total: int
    notes_total: int
    runs_total: int
    disagreement: NotRequired[str]


class HypothesisAck(TypedDict):
    """What a hypothesis write (add, set, edit) acknowledges with under `--brief`."""

    id: str
    status: HypStatus
    title: str
    parent: str | None
    predictions: list[PredictionRef]


class Prediction(TypedDict):
    """One prediction (`prediction add|edit|list|show`)."""

    id: str
    hypothesis: str
    version: int
    status: PredStatus
    expect: str
    metric: str | None
    a: dict[str, Any]
    b: dict[str, Any]
    where: str | None
    per: str | None
    margin: float
    created: str | None
    edited_after_evidence: bool
    post_hoc: PostHoc | None
    """Set when it was written after runs its groups select existed (not pre-registered)."""
    preregistration: Preregistration
    """Its pre-registration state (docs/verdicts.md); `post_hoc` carries the runs it was written after."""
    history: list[dict[str, Any]]
    new_version: NotRequired[bool]
    """Writes only: the edit made a new version (evidence existed)."""
    warnings: NotRequired[list[str]]
    """Writes only: labels or metrics no run has yet, rivals that predict the same."""


class PredictionAck(TypedDict):
    """What a prediction write acknowledges with under `--brief`."""

    id: str
    version: int
    status: PredStatus
    expect: str
    post_hoc: NotRequired[PostHoc]
    """Present when it was written after runs its groups select existed."""
    preregistration: NotRequired[Preregistration]
    """Present when not pre-registered (docs/verdicts.md)."""
    new_version: NotRequired[bool]
    warnings: NotRequired[list[str]]


class PredictionList(PageFacts):
    """`optlog prediction list --json`."""

    predictions: list[Prediction]


class VerdictPrediction(TypedDict):
    id: str
    status: PredStatus
    explanation: NotRequired[str | None]
    line: NotRequired[str | None]
    """`--brief`: the explanation in one line."""
    post_hoc: NotRequired[PostHoc]
    """Written after runs its groups select existed; its explanation leads with it."""
    load_differs: NotRequired[str]
    """The groups got clearly different CPU shares, or GPU sharing (docs/evidence.md); its
    explanation ends with it."""
    loaded_runs: NotRequired[list[int]]
    """The runs it used that were measured under load (label `loaded=true`)."""
    quiet: NotRequired[dict[str, Any]]
    """With loaded runs: the same prediction judged on the quiet runs alone (`runs`, `status`,
    `levels` with `estimate`/`ci`/`outcome`, `thin`: too few to judge or no interval, `differs`:
    not the verdict's status, `summary`); its explanation says it (docs/verdicts.md)."""
    levels: NotRequired[list[dict[str, Any]]]


class VerdictResult(TypedDict):
    hypothesis: str
    status: HypStatus
    auto_status: HypStatus | None
    changed: bool
    """Whether this evaluation changed anything (verdicts are idempotent)."""
    disagreement: NotRequired[str]
    post_hoc: NotRequired[list[str]]
    """The post-hoc predictions its automatic status rests on (always in the detail; in `--brief`
    only when there are any)."""
    predictions: list[VerdictPrediction]


class VerdictDoc(TypedDict):
    """`optlog verdict [ID] --json` (`--brief` adds `warnings_total` and keeps five warnings)."""

    results: list[VerdictResult]
    warnings: list[str]
    warnings_total: NotRequired[int]
    committed: Any


class NextCandidate(TypedDict):
    """One experiment that would tell a pair apart (core.discriminate.Candidate), best first."""

    source: str
    """`claims` (regions apart at an untested level), `repeats` (apart, but unclear for noise),
    `scaling` (fitted exponents apart), `roofline` (the named bounds move differently along the axis)."""
    axis: str | None
    levels: list[Any]
    """The new levels of `axis`."""
    reference: list[Any]
    """The measured levels the predictions are relative to (kept in the spec)."""
    repeats: int
    """Repeats a point so that the noise measured so far cannot hide the difference."""
    metric: str | None
    predicted: dict[str, list[dict[str, Any]]]
    """Each hypothesis's predicted outcome per level: `[{level, outcome}]`."""
    separation: float
    """The predicted gap over the measured noise (larger discriminates better)."""
    why: str
    also: NotRequired[dict[str, list[Any]]]
    """Other axes the new points move with it (a concurrency that would cap more slots)."""


class NextCost(TypedDict):
    """The cost of a written spec (core.costing): its runs and an estimated time from the runs measured."""

    runs: int
    estimate_s: float | None
    """The estimate; null when no run of the launch it derives from has a duration."""
    low_s: float | None
    """Every run as long as the median measured at its level (nearest level for a new one)."""
    high_s: float | None
    """The same, scaled by the requests its bench sends against the measured runs' (no overlap)."""
    axis: str | None
    by_level: list[dict[str, Any]]
    """The medians it used: `level`, `median_s`, `runs`."""
    text: str


class NextPair(TypedDict):
    """A hypothesis and its rival or pivot parent, at least one undecided."""

    hypothesis: str
    other: str
    relation: str
    """What `other` is to `hypothesis`: `rival`, `parent` or `child`."""
    statuses: dict[str, str]
    bounds: dict[str, str | None]
    """The bound each names (memory, compute, latency, communication), or null."""
    state: str
    """`discriminated`, `partly` (one falsified, the other not confirmed), `neither` (both falsified),
    `not yet`."""
    why: str
    side_by_side: list[dict[str, Any]]
    """Per comparison: each side's predictions with their status, and `levels` with each side's outcome."""
    noise: NotRequired[float | None]
    """The largest sd of log values of one group at one level measured so far."""
    notes: list[str]
    candidates: list[NextCandidate]
    best: NotRequired[int]
    spec: NotRequired[str | None]
    """The run spec written for the best candidate (`runs/next-<hyp>.yaml`), never launched."""
    spec_note: NotRequired[str]
    """How the spec was derived, what the checks changed in it (a label-only axis not raised, the bench's
    request count made to fill the batch) and what to check; or why it was not written."""
    cost: NotRequired[NextCost]
    """What the written spec costs, before anything is launched."""
    resources: NotRequired[dict[str, int | None]]
    """The target's `cpus`, `gpus`, smallest `gpu_memory_mib` and `host_memory_mib` from the environment
    captured with the runs measured (null: unknown): no candidate asks for more threads or GPUs than it
    has, nor a batch whose KV cache and weights its memory cannot hold (`notes` say the figures)."""
    missing: NotRequired[list[str]]
    """When no candidate: what optlog lacks (a label never varied, a metric never measured, …)."""


class NextDoc(TypedDict):
    """`optlog next [HYP] --json` (docs/next.md)."""

    hypothesis: str | None
    pairs: list[NextPair]
    note: NotRequired[str]


# ---------------------------------------------------------------- runs


class RunSummary(TypedDict):
    """One item of `run list` (`--fields` keeps only the keys asked for)."""

    id: int
    uid: str
    status: RunStatus
    source: str
    name: str | None
    hypothesis: str | None
    created_at: str
    invalidated: bool
    labels: dict[str, Any]
    metrics: dict[str, float]


class RunList(PageFacts):
    """`optlog run list --json`."""

    runs: list[RunSummary]


class RunShow(TypedDict, total=False):
    """`optlog run show ID --json`: a run summary plus its details. `--brief` drops environment, raw
    and artifacts (adding `artifacts_total`) and cuts telemetry to its text."""

    id: int
    status: RunStatus
    labels: dict[str, Any]
    metrics: dict[str, float]
    telemetry: dict[str, Any]
    environment: dict[str, Any]
    raw: Any
    artifacts: list[dict[str, Any]]
    artifacts_total: int


class RunFailure(TypedDict):
    id: int
    status: RunStatus
    cause: str | None
    error: str | None


class RunWait(TypedDict):
    """`optlog run wait REF --json`: a run's (`run`) or a launch's (`launch`, `runs`) status.
    `--brief` turns a launch's `runs` into counts by status with `run_ids` and the first `failures`.
    A running launch that waits for the machine lock is `waiting`, with `waiting_for` (the holder)."""

    status: LaunchViewStatus
    waiting_for: NotRequired[str]
    run: NotRequired[int]
    launch: NotRequired[int | None]
    ref: NotRequired[str]
    error: NotRequired[str | None]
    cause: NotRequired[str | None]
    exit_code: NotRequired[int | None]
    progress: NotRequired[dict[str, Any]]
    runs: NotRequired[Any]
    run_ids: NotRequired[list[int]]
    failures: NotRequired[list[RunFailure]]
    timed_out: NotRequired[bool]
    """True when the wait gave up before the run finished."""


class RunImport(TypedDict):
    """`optlog run import FILE… --json` (`--brief`: each run only its id and status)."""

    runs: list[dict[str, Any]]
    already_imported: NotRequired[list[dict[str, Any]]]
    repeated: NotRequired[list[dict[str, Any]]]  # results left out: the same measurement as another (source, why)


class Note(TypedDict):
    id: int
    text: str
    hypothesis: str | None
    link: str | None
    run: int | None
    by: str | None
    created_at: str


class NoteList(PageFacts):
    """`optlog note list --json`."""

    notes: list[Note]


# ---------------------------------------------------------------- todos


class Todo(TypedDict):
    """A todo: the todowrite item (other keys the writer sent, e.g. activeForm, are kept)."""

    id: str
    content: str
    status: TodoStatus
    priority: Priority | None
    hypothesis: str | None


class TodoList(PageFacts):
    """`optlog todo list --json` (and `todo write` with `--detail`): the todowrite shape."""

    todos: list[Todo]


class TodoWriteAck(TypedDict):
    """`optlog todo write --brief --json`."""

    todos: list[dict[str, Any]]
    """Each todo's id and status."""
    total: int


# ---------------------------------------------------------------- status, log, plans


class StatusHypothesis(TypedDict):
    id: str
    status: HypStatus
    title: str
    predictions: list[StatusPrediction]


class StatusHypotheses(TypedDict):
    total: int
    open_total: int
    open: list[StatusHypothesis]


class NextCall(TypedDict):
    call: str
    """A tool (an MCP tool name; the CLI command is the same words)."""
    arguments: dict[str, Any]
    why: str


class StatusDoc(TypedDict):
    """`optlog status --json`: the digest an agent starts from (small by default: at most a few items
    per section, the totals beside them)."""

    workspace: str
    hypotheses: StatusHypotheses
    live_runs: list[dict[str, Any]]
    live_runs_total: int
    runs_total: int
    launches: NotRequired[list[dict[str, Any]]]
    verdict_due: NotRequired[list[dict[str, Any]]]
    verdict_due_total: NotRequired[int]
    latest_verdicts: list[dict[str, Any]]
    todos: list[dict[str, Any]]
    todos_total: int
    invalidations: NotRequired[dict[str, Any]]
    run_database_empty: bool
    next: list[NextCall]
    """At most three suggested calls."""
    notice: NotRequired[str]


class LogEvent(TypedDict, total=False):
    """One decision of `optlog log` (`--brief`: sha, at, event, subject, runs, pivot)."""

    sha: str
    at: str
    event: str
    subject: str
    hypothesis: str | None
    runs: list[Any]
    actor: str | None
    pivot: dict[str, Any]
    body: str
    hand_edit: list[str]


class ShallowCut(TypedDict):
    """Where a shallow clone's history is cut: the oldest commit's date, the boundary commits."""

    cut: bool
    since: str | None
    boundary: list[str]


class LogDoc(PageFacts):
    """`optlog log --json`: the decision timeline from git."""

    events: list[LogEvent]
    notice: NotRequired[str]
    shallow: NotRequired[ShallowCut]


class PlanAck(TypedDict):
    """What a plan write acknowledges with under `--brief`."""

    id: int
    title: str
    rank: int | None
    score: float
    status: str
    reason: str
    file: str


class PlanList(TypedDict):
    """`optlog plan list --json`: plans in rank order and the calibration of past predictions."""

    plans: list[dict[str, Any]]
    calibration: dict[str, Any]


class PlanRenderBrief(TypedDict):
    """`optlog plan render --brief --json`."""

    files: list[str]
    changed: list[str]
    commit: str | None


# The documents docs/json.md lists, in its order (title → class).
DOCUMENTS: dict[str, type] = {
    "status": StatusDoc,
    "hypothesis list": HypothesisList,
    "hypothesis item": HypothesisSummary,
    "hypothesis show": HypothesisShow,
    "hypothesis show --brief": HypothesisBrief,
    "hypothesis add|set|edit --brief": HypothesisAck,
    "prediction": Prediction,
    "prediction add|edit --brief": PredictionAck,
    "prediction list": PredictionList,
    "verdict": VerdictDoc,
    "verdict result": VerdictResult,
    "next": NextDoc,
    "next pair": NextPair,
    "next candidate": NextCandidate,
    "run list": RunList,
    "run item": RunSummary,
    "run show": RunShow,
    "run wait": RunWait,
    "run import": RunImport,
    "note list": NoteList,
    "todo list": TodoList,
    "todo item": Todo,
    "todo write --brief": TodoWriteAck,
    "log": LogDoc,
    "plan list": PlanList,
    "plan add|set --brief": PlanAck,
    "plan render --brief": PlanRenderBrief,
}
