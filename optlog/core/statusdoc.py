"""`optlog status`'s document from what it reads: the rules (what to show, clipping, the next calls),
standard library only, so the full path (`service.status`, over the validated hypothesis models and
SQLAlchemy) and the first read after a change on plain SQL (`store.plainread`, over the index's
JSON documents and `sqlite3` / psycopg; issue 47) build it with the same code, byte for byte.

A hypothesis is read by attribute (`id`, `title`, `created`, `parent`, `rivals`, `predictions`
with `id`, `status`, `post_hoc`, `verdicts`, `history`, `effective_status()`); a verdict, a status
change and a pre-registration mark by attribute or by key (`core.hypothesis`'s models or their
JSON dumps).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from optlog.core import duestate as DS
from optlog.core import family as F
from optlog.core import jsondoc
from optlog.core import prereg as PH
from optlog.core.shape import fit
from optlog.core.statuses import LIVE_RUN_STATUSES, told_apart
from optlog.core.todos import open_first

OPEN_CAP = 6
LIVE_CAP = 5
TODO_CAP = 5
DUE_CAP = 3
MAX_BYTES = 2048  # whatever the workspace holds


def clip(s: Any, n: int = 100) -> Any:
    return s if not isinstance(s, str) or len(s) <= n else s[: n - 1] + "…"


def _get(x: Any, key: str, default: Any = None) -> Any:
    return x.get(key, default) if isinstance(x, Mapping) else getattr(x, key, default)


def verdict_history(verdicts: list[Any], history: list[Any]) -> list[dict[str, Any]]:
    """A hypothesis's verdicts (auto) and manual status changes, oldest first."""
    out: list[dict[str, Any]] = []
    for v in verdicts:
        ph = _get(v, "post_hoc")  # the post-hoc predictions its status rests on (core.posthoc)
        out.append({"status": _get(v, "status"), "at": _get(v, "at"), "by": _get(v, "by"),
                    "summary": _get(v, "summary", ""), "kind": "auto", **({"post_hoc": list(ph)} if ph else {})})
    for h in history:
        if _get(h, "kind", "manual") == "manual":
            out.append({"status": _get(h, "to"), "at": _get(h, "at"), "by": _get(h, "by"), "summary": _get(h, "why"),
                        "kind": "manual"})
    out.sort(key=lambda r: r["at"])
    return out


def brief(d: Mapping[str, Any]) -> dict[str, Any]:
    """What `status` reads of a hypothesis's JSON dump, in the dump's own shape (so the same reader
    takes either): its links, statuses and title, each prediction's status and mark with what
    carrying over what is due reads (`core.duestate.prediction_view`), its verdicts and status
    changes as `verdict_history` reads them, the latest verdict with what carrying over reads
    (`core.duestate.verdict_view`). Not what is due's digest (`due_digest`: of the whole dump),
    nor what judging from the runs reads (the whole dump). Kept by file hash, it spares a first
    `status` the documents of the hypotheses no change touched (issue 47)."""
    vs = d.get("verdicts") or []
    return {
        "id": d["id"], "title": d["title"], "created": d.get("created"), "parent": d.get("parent"),
        "rivals": d.get("rivals") or [], "status": d["status"], "auto_status": d.get("auto_status"),
        "override": {"status": d["override"]["status"]} if d.get("override") else None,
        "predictions": [{**DS.prediction_view(p), "status": p["status"], "post_hoc": p.get("post_hoc")}
                        for p in d.get("predictions") or []],
        "verdicts": [{"status": v.get("status"), "at": v.get("at"), "by": v.get("by"), "summary": v.get("summary", ""),
                      "post_hoc": v.get("post_hoc"), **(DS.verdict_view(v) if i == len(vs) - 1 else {})}
                     for i, v in enumerate(vs)],
        "history": [{"kind": h.get("kind", "manual"), "to": h.get("to"), "at": h.get("at"), "by": h.get("by"),
                     "why": h.get("why")} for h in d.get("history") or [] if h.get("kind", "manual") == "manual"],
    }


def digest(x: Any) -> str:
    return hashlib.blake2b(json.dumps(x, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


def due_digest(predictions: list[Any], override: Any, last_verdict: Any) -> str:
    """What the judgement of what is due reads of a hypothesis (`service.verdicts.due`): its
    predictions as written, its manual status, its latest verdict, each as its JSON dump."""
    return digest([predictions, override, last_verdict])


def due_from_memo(digests: dict[str, str], gen: int | None, memo: Any, ceil_key: str,
                  states_too: bool = True) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    """What the memo of what is due (`service.verdicts.due`) says of each hypothesis (its digest
    `due_digest` → why its verdict is due, if it is), where the memo was kept under the evidence
    counter `gen` and these ceilings and holds the hypothesis with this digest; the hypotheses it
    does not hold, to work out from the runs; and the prediction states (`core.duestate.State`)
    it kept of those it holds. Both paths (the full one and plain SQL's) read it so.

    The states are kept as one JSON text beside the digests (`due_memo_doc`) and parsed only where
    they are asked for: `states_too`, or any hypothesis to work out (the memo is then kept again,
    states and all). A memo that holds every hypothesis as it is needs none (at 10,000 hypotheses
    they were 2/3 of the memo's 1.5 MB, parsed by every first `status`)."""
    known: dict[str, Any] = {}
    if gen is not None and isinstance(memo, dict) and memo.get("gen") == gen and memo.get("ceilings") == ceil_key:
        known = memo.get("hyps") or {}
    out: dict[str, str] = {}
    work: list[str] = []
    states: dict[str, Any] = {}
    held: list[str] = []
    for h, dg in digests.items():
        k = known.get(h)
        if isinstance(k, list) and len(k) in (2, 3) and k[0] == dg:
            if k[1]:
                out[h] = str(k[1])
            if len(k) == 3:  # (the states inline: a memo an earlier optlog kept)
                states[h] = k[2]
            else:
                held.append(h)
        else:
            work.append(h)
    if held and (states_too or work):
        kept = _memo_states(memo)
        states.update((h, kept[h]) for h in held if h in kept)
    return out, work, states


def _memo_states(memo: dict[str, Any]) -> dict[str, Any]:
    """The memo's states (`due_memo_doc`: one JSON text), or none where it holds no such text."""
    text = memo.get("states")
    try:
        got = jsondoc.loads(text) if isinstance(text, str) else None
    except (ValueError, jsondoc.DuplicateKey):
        return {}  # not ours to trust: worked out again from the runs
    return got if isinstance(got, dict) else {}


def appended_since(gen: int | None, memo: Any, journal: Any, ceil_key: str) -> list[int] | None:
    """The runs appended since the memo of what is due was kept, where every write that moved the
    evidence counter since then only appended runs (`store.db.Database.appended`'s journal, kept
    under the counter it reached: `{"from": counter, "gen": counter, "runs": [[counter, run], ...]}`);
    None where the journal does not say so (the memo is then worked out from the runs)."""
    if not isinstance(memo, dict) or memo.get("ceilings") != ceil_key:
        return None
    return DS.journal_since(memo.get("gen"), gen, journal)


def due_known(digests: dict[str, str], gen: int | None, memo: Any, journal: Any, ceil_key: str,
              views: Callable[[], Mapping[str, DS.View]],
              appended: Callable[[list[int]], Sequence[tuple[int, str, Mapping[str, str]]]]
              ) -> tuple[dict[str, str], list[str], dict[str, Any], bool]:
    """What is due as far as the memo says it (`due_from_memo`), carried over the runs appended
    since it was kept where its journal says only runs were appended (`appended_since`;
    `appended` reads them, `views` gives the hypotheses: `core.duestate.carry_over`): (why each is
    due, the hypotheses to work out from the runs, the states, whether the memo was current). Both
    paths decide it so."""
    out, work, states = due_from_memo(digests, gen, memo, ceil_key, states_too=False)
    if not work:
        return out, work, states, True
    since = appended_since(gen, memo, journal, ceil_key)
    if since is None:
        return out, work, states, False
    out, work, states = due_from_memo(digests, memo["gen"], memo, ceil_key)
    work += DS.carry_over(views(), appended(since), out, states, set(work))
    return out, work, states, False


def due_carried(digests: dict[str, str], gen: int | None, memo: Any, journal: Any, ceil_key: str,
                views: Callable[[Collection[str]], Mapping[str, DS.View]], told: Collection[str],
                appended: Callable[[list[int]], Sequence[tuple[int, str, Mapping[str, str]]]]
                ) -> Mapping[str, str] | None:
    """What is due, where the memo holds every hypothesis as it is and only runs were appended
    since it was kept, up to `core.duestate.LAZY_RUNS` of them: carried over as far as it is read
    (`core.duestate.carry_lazily`: the same answers as `due_known`'s) and the memo left as it was,
    to be carried over again by the next read; else None (`due_known` works it out and the memo
    is kept again). `told`: the hypotheses with a verdict. The first `status` after each run pays
    for the runs since the memo only; one read in LAZY_RUNS runs keeps it again."""
    if gen is None or not isinstance(memo, dict) or memo.get("gen") == gen:
        return None
    since = appended_since(gen, memo, journal, ceil_key)
    if not since or len(since) > DS.LAZY_RUNS:
        return None
    out, work, inline = due_from_memo(digests, memo["gen"], memo, ceil_key, states_too=False)
    if work:
        return None
    return DS.carry_lazily(list(digests), out, _states_reader(memo, inline), views, told, appended(since))


FEW_STATES = 16  # states looked up one by one in the memo's text (`jsondoc.member`); more: the text parsed


def _states_reader(memo: dict[str, Any], inline: dict[str, Any]) -> Callable[[Collection[str]], dict[str, Any]]:
    """The kept states of the hypotheses asked (those `core.duestate.carry_lazily` carries over
    or shows), from the memo's states text: a few looked up in it, more read whole, once (at
    10,000 hypotheses parsing it is ~9 ms of a first `status` that shows three reasons).
    `inline`: those an earlier optlog kept inline."""
    whole: list[dict[str, Any]] = []
    text = memo.get("states")

    def read(ids: Collection[str]) -> dict[str, Any]:
        if not whole and (len(ids) > FEW_STATES or not isinstance(text, str)):
            whole.append(_memo_states(memo))
        got: dict[str, Any] = {}
        for h in ids:
            if h in inline:
                got[h] = inline[h]
            elif whole:
                if h in whole[0]:
                    got[h] = whole[0][h]
            else:
                try:
                    got[h] = jsondoc.member(str(text), h)
                except (KeyError, ValueError):
                    pass  # none kept: carried over as `carry_over` does it (worked out again)
        return got
    return read


def due_memo_doc(gen: int, ceil_key: str, digests: dict[str, str], due: dict[str, str],
                 states: dict[str, Any] | None = None) -> dict[str, Any]:
    """The memo to keep: for every hypothesis judged, its digest and why it is due (None: not
    due); and, as one JSON text (parsed only where asked for: `due_from_memo`), its prediction
    states where they were found (`core.duestate.advance` carries them over appended runs)."""
    st = states or {}
    return {"gen": gen, "ceilings": ceil_key, "hyps": {h: [dg, due.get(h)] for h, dg in digests.items()},
            "states": json.dumps({h: st[h] for h in digests if h in st}, separators=(",", ":"))}


def runs_section(f: Any, live_hyps: set[str]) -> dict[str, Any]:
    """The runs' part of the document from `store.plainread.RunFacts`."""
    if not f.total:
        return {"total": 0, "live": [], "live_total": 0, "launches": [], "invalid": [], "invalid_total": 0,
                "newest": {}, "live_hyps": set(), "made_here": f.made_here}
    for la in f.launches:
        la["ref"] = f"L{la['id']}"
        la["runs"] = la.pop("runs")  # the document's key order: ref, then runs
        la["error"] = clip((la["error"] or "").splitlines()[0] if la["error"] else None)
    live = [{k: v for k, v in r.items() if v is not None} for r in f.live]
    return {"total": f.total, "live": live, "live_total": f.live_total, "launches": f.launches,
            "invalid": [{"run": rid, "reason": clip(why, 80)} for rid, why in f.invalid],
            "invalid_total": f.invalid_total, "newest": f.newest, "live_hyps": live_hyps}


def latest_verdicts(docs: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every verdict and manual status change, newest first (two with one timestamp in the order
    their hypothesis's history recorded them), and each hypothesis's latest one's time."""
    last_at: dict[str, str] = {}
    ranked: list[tuple[str, int, dict[str, Any]]] = []
    for d in docs.values():
        for i, v in enumerate(verdict_history(d.verdicts, d.history)):
            ranked.append((v["at"], i, {"hypothesis": d.id, **v}))
            last_at[d.id] = max(last_at.get(d.id, ""), v["at"])
    ranked.sort(key=lambda x: x[:2], reverse=True)
    return [v for _, _, v in ranked], last_at


def document(workspace: str, docs: Mapping[str, Any], latest: list[dict[str, Any]], last_at: dict[str, str],
             runs: dict[str, Any], why: dict[str, str], all_todos: list[dict[str, Any]], planned: set[str],
             todo_owner: str | None) -> dict[str, Any]:
    """The document: `runs` from `runs_section`, `why` the verdicts due (`service.verdicts.due`),
    `all_todos` the todo list in order, `planned` the hypotheses some plan needs, `todo_owner` the
    agent tool that owns the todo list."""
    return assemble(parts(workspace, docs, latest, last_at, runs, why, planned), all_todos, todo_owner)


def parts(workspace: str, docs: Mapping[str, Any], latest: list[dict[str, Any]], last_at: dict[str, str],
          runs: dict[str, Any], why: Mapping[str, str], planned: set[str]) -> dict[str, Any]:
    """Everything of the document but the todo list's part, as JSON data: `assemble` adds the todo
    list to it. A todo list written changes nothing here, so the first `status` after the agent's
    hook (store.plainstatus) assembles the kept parts with the new list instead of reading every
    hypothesis again (issue 47)."""
    return parts_of(workspace, side(docs, latest, last_at), runs, why, planned)


def side(docs: Mapping[str, Any], latest: list[dict[str, Any]], last_at: dict[str, str]) -> dict[str, Any]:
    """What `parts_of` reads of the hypotheses, as JSON data: a function of the hypotheses alone
    (not of the runs, what is due or the plans), so the first `status` after a run or a launch
    (store.plainstatus) reads it kept by the index's file hashes instead of every hypothesis again
    (issue 47). `latest`, `last_at`: `latest_verdicts` of the same hypotheses."""
    open_h: list[dict[str, Any]] = []
    n_open = 0
    status = statuses(docs)  # once (10,000 at scale): the loop's calls read them too
    for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id), reverse=True):
        st = status[d.id]
        if st not in ("confirmed", "falsified", "superseded"):  # ("testing" while its runs are live: `parts_of`)
            n_open += 1
            if len(open_h) < OPEN_CAP:
                open_h.append({"id": d.id, "title": clip(d.title, 60), "status": st,
                               "predictions": [{"id": p.id, "status": p.status,
                                                **({"post_hoc": True} if PH.is_post_hoc(p.post_hoc) else {}),
                                                **({"preregistration": PH.state(p.post_hoc)} if p.post_hoc else {})}
                                               for p in d.predictions[:3]]})
    return {"total": len(docs), "open_total": n_open, "open": open_h, "latest": latest[:3], "last_at": last_at,
            "loop": _loop_side(docs, status)}


def parts_of(workspace: str, side: dict[str, Any], runs: dict[str, Any], why: Mapping[str, str],
             planned: set[str]) -> dict[str, Any]:
    """`parts` from the hypotheses' `side` and what the runs, what is due and the plans say now."""
    live = runs["live_hyps"]  # DESIGN §5: an open hypothesis is testing while its runs are queued or running
    open_h = [{**h, "status": "testing"} if h["status"] == "open" and h["id"] in live else h for h in side["open"]]
    # newest evidence first (as recorded: for the order only; what is due is decided by the evidence);
    # the reasons of those shown only (`why` may work them out as they are asked: core.duestate.Carried)
    newest = runs["newest"]
    last_at = side["last_at"]
    order = sorted(why, key=lambda h: (newest.get(h) or "", h), reverse=True)
    due = [{"id": h, "evidence_at": newest.get(h), "verdict_at": last_at.get(h), "why": why[h]}
           for h in order[:DUE_CAP]]
    return {
        "workspace": workspace,
        "hypotheses": {"total": side["total"], "open_total": side["open_total"], "open": open_h},
        "live_runs": runs["live"],
        "live_runs_total": runs["live_total"],
        "runs_total": runs["total"],
        "launches": runs["launches"],
        "verdict_due": due,
        "verdict_due_total": len(order),
        "latest_verdicts": [{**v, "summary": clip(v["summary"], 80)} for v in side["latest"]],  # post_hoc: core.posthoc
        "invalidations": {"total": runs["invalid_total"], "latest": runs["invalid"]},
        "run_database_empty": runs["total"] == 0,
        # the calls before the todo list's (`next_calls`: three at most are shown, so three are kept)
        "next": _loop_calls(side["loop"], runs, due, planned)[:3],
        "notice": _notice(not runs.get("made_here", True), side["total"] > 0, runs["total"]),
    }


def assemble(p: dict[str, Any], all_todos: list[dict[str, Any]], todo_owner: str | None) -> dict[str, Any]:
    """The document from its `parts` and the todo list (in order) with its owner."""
    active = open_first(all_todos)
    shown = [{k: v for k, v in (("id", t["id"]), ("content", clip(t["content"], 80)), ("status", t["status"]),
                                ("priority", t["priority"]), ("hypothesis", t["hypothesis"])) if v is not None}
             for t in active[:TODO_CAP]]
    out: dict[str, Any] = {k: p[k] for k in ("workspace", "hypotheses", "live_runs", "live_runs_total", "runs_total",
                                             "launches", "verdict_due", "verdict_due_total", "latest_verdicts")}
    out.update(todos=shown, todos_total=len(active), invalidations=p["invalidations"],
               run_database_empty=p["run_database_empty"], next=(p["next"] + todo_calls(active, todo_owner))[:3])
    for k in ("launches", "verdict_due"):  # sections with nothing to say are left out (small by default)
        if not out[k]:
            del out[k]
    if not out["invalidations"]["total"]:
        del out["invalidations"]
    if "verdict_due" not in out:
        del out["verdict_due_total"]
    if p["notice"]:
        out["notice"] = p["notice"]
    return fit(out, MAX_BYTES, "the totals say how many; hypothesis_list, run_list and todo_list page through them")


def _notice(clone: bool, has_docs: bool, total: int) -> str | None:
    """What the figures beside it do not say already, never contradicting them (issue 31): only
    when `runs_total` is 0; "fresh clone" only in a database that `init` did not make for a new
    workspace here."""
    if total:
        return None
    return "the run database is empty" + (
        " (fresh clone: hypotheses, predictions, verdicts and plans are read from the files)"
        if clone and has_docs else "")


def statuses(docs: Mapping[str, Any]) -> dict[str, str]:
    """Each hypothesis's effective status (its override's, else its verdict's, else as written),
    worked out once for the document's passes over them."""
    return {d.id: d.effective_status() for d in docs.values()}


def predicts(d: Any) -> bool:
    """Whether a hypothesis has predictions: a brief kept by `store.plainstatus` (`Brief`) says so
    from its row, without parsing them."""
    n = getattr(d, "n_predictions", None)
    return bool(d.predictions) if n is None else n > 0


def _undecided_rival(docs: Mapping[str, Any], status: dict[str, str] | None = None) -> tuple[str, str] | None:
    """The newest hypothesis with predictions whose rival (or pivot parent) the evidence has not told
    apart from it (core.statuses.told_apart: both confirmed is not told apart), with that other.

    Only one with a rival (named on either side) or a falsified parent can have such a pair
    (`family.pairs` of one that is not falsified): the others are not looked at, and where there is
    none the family is not built (at 10,000 hypotheses ~25 ms of a first `status`). `status`: each
    one's effective status, where the caller has them."""
    if status is None:
        status = statuses(docs)
    paired = {x.id for x in docs.values() if x.rivals or (x.parent and status.get(x.parent) == "falsified")}
    paired.update(r for x in docs.values() for r in x.rivals if r in docs)
    if not paired:
        return None
    hyps = {x.id: F.Kin(x.id, parent=x.parent, rivals=list(x.rivals), status=status[x.id]) for x in docs.values()}
    rel = F.relations(hyps)  # once: each hypothesis's pairs read its neighbours only
    for d in sorted((docs[h] for h in paired), key=lambda d: (d.created or "", d.id), reverse=True):
        st = status[d.id]
        if not predicts(d) or st == "falsified":
            continue
        for h, o, _rel in F.pairs(hyps, d.id, rel):  # the pairs `next` tells apart (no ancestor it refines)
            other = docs[o.id if h.id == d.id else h.id]
            if predicts(other) and not told_apart(st, other.effective_status()):
                return d.id, other.id
    return None


def next_calls(docs: dict[str, Any], runs: dict[str, Any], due: list[dict[str, Any]],
               active: list[dict[str, Any]], planned: set[str] | None = None,
               todo_owner: str | None = None) -> list[dict[str, Any]]:
    """Up to three calls that move the session on, most urgent first (tool names = CLI paths).

    It follows the loop (issue 31): a falsified hypothesis without a child or a confirmed rival → the
    pivot; a decided one no plan needs → a plan; a todo in progress → `todo_set`, unless an agent's TodoWrite owns
    the list (its next write would undo it)."""
    return (loop_calls(docs, runs, due, planned) + todo_calls(active, todo_owner))[:3]


def loop_calls(docs: dict[str, Any], runs: dict[str, Any], due: list[dict[str, Any]],
               planned: set[str] | None = None, status: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """`next_calls` before the todo list's: every one, most urgent first. `status`: each
    hypothesis's effective status, where the caller has them."""
    return _loop_calls(_loop_side(docs, statuses(docs) if status is None else status), runs, due, planned)


def _loop_side(docs: Mapping[str, Any], status: dict[str, str]) -> dict[str, Any]:
    """What the loop's calls read of the hypotheses (JSON data, kept in `side`): whether there is
    none, the falsified one to pivot from, a pair not told apart, the decided ones newest first
    (the first no plan needs gets a plan: the plans are read each time), the first open one
    without a prediction."""
    children = {d.parent for d in docs.values() if d.parent}
    decided = sorted((docs[h] for h, st in status.items() if st in ("confirmed", "falsified")),
                     key=lambda d: (d.created or "", d.id), reverse=True)
    # a falsified hypothesis's pivot: none where a rival (named on either side) is confirmed, which
    # is what the evidence points at already
    won = {h for h, st in status.items() if st == "confirmed"}
    beaten = {r for h in won for r in docs[h].rivals} \
        | ({d.id for d in docs.values() if d.rivals and won.intersection(d.rivals)} if won else set())
    pivot = next((d.id for d in decided if status[d.id] == "falsified" and d.id not in children
                  and d.id not in beaten), None)
    undecided = _undecided_rival(docs, status)
    unpredicted = next((d.id for d in docs.values() if status[d.id] == "open" and not predicts(d)), None)
    return {"empty": not docs, "pivot": pivot, "undecided": list(undecided) if undecided else None,
            "decided": [[d.id, status[d.id]] for d in decided], "unpredicted": unpredicted}


def _loop_calls(s: dict[str, Any], runs: dict[str, Any], due: list[dict[str, Any]],
                planned: set[str] | None) -> list[dict[str, Any]]:
    """The loop's calls from the hypotheses' `_loop_side` and the launches, what is due, the plans."""
    out: list[dict[str, Any]] = []
    for la in runs["launches"]:
        if la["status"] in LIVE_RUN_STATUSES:
            out.append({"call": "run_wait", "arguments": {"ref": la["ref"]}, "why": f"launch {la['ref']} is {la['status']}"})
        else:
            out.append({"call": "run_logs", "arguments": {"ref": la["ref"]}, "why": f"launch {la['ref']} {la['status']}"})
    for d in due:
        out.append({"call": "verdict", "arguments": {"id": d["id"]}, "why": clip(d["why"], 120)})
    if s["empty"]:
        out.append({"call": "hypothesis_add", "arguments": {"title": "…"}, "why": "no hypothesis yet: say what you believe"})
    if s["pivot"]:
        out.append({"call": "hypothesis_add", "arguments": {"title": "…", "parent": s["pivot"]},
                    "why": f"{s['pivot']} is falsified: pivot to what the evidence points at"})
    if s["undecided"]:
        a, b = s["undecided"]
        out.append({"call": "next", "arguments": {"id": a},
                    "why": f"{a} and {b} are not told apart yet: name the experiment that would"})
    for h, st in s["decided"]:
        if h not in (planned or set()):
            need = h if st == "confirmed" else f"{h}=falsified"
            out.append({"call": "plan_add", "arguments": {"title": "…", "gain": "10-30%", "effort": "M",
                                                          "confidence": 0.5, "needs": [need]},
                        "why": f"{h} is {st} and no plan rests on it: rank what to do next"})
            break
    if s["unpredicted"]:
        h = s["unpredicted"]
        out.append({"call": "prediction_add", "arguments": {"hypothesis": h, "expect": "a > b"},
                    "why": f"{h} has no prediction: pre-register one before measuring"})
    return out


def todo_calls(active: list[dict[str, Any]], todo_owner: str | None) -> list[dict[str, Any]]:
    """`next_calls`' last: the todo in progress to close, unless an agent's TodoWrite owns the list."""
    for t in active if todo_owner is None else ():
        if t["status"] == "in_progress":
            return [{"call": "todo_set", "arguments": {"id": t["id"], "status": "completed"},
                     "why": f"in progress: {clip(t['content'], 60)}"}]
    return []
