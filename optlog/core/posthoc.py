"""Pre-registration made visible (DESIGN §5, issue 28 item 4): the `post_hoc` mark.

Why: a prediction written before its runs is what makes a verdict decisive; one written after the
numbers were seen can be fitted to them. optlog refuses neither, but it must not let the second pass
for the first. So a prediction added (or edited) when runs its groups select already exist carries
a mark, committed in the hypothesis file (so a clone keeps it): when it was written and which runs
existed then, by number (what a person reads: "runs 1–40") and by uid (a run's identity in every
clone: a clone may number an imported run differently, see service.runfiles). Every verdict on it
says so ("confirmed, post-hoc: written after runs 1–40"), and a hypothesis whose status rests on a
post-hoc prediction says that too.

Pure: the service layer finds the runs and writes the mark; this module decides which runs count,
words the mark and puts it into a verdict's record. It does not touch the verdict engine's
statistics: a post-hoc verdict has the same outcome, only its words and a field differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from optlog.core import expr as E
from optlog.core.prereg import (BASELINE_KNOWN, NOTE, POST_HOC, PRE_REGISTERED, SAID, STATES,  # noqa: F401  (re-exported)
                                 is_post_hoc, mark_field, state)

def said(mark: Any) -> str:
    """The state in a few words: `post-hoc`, `baseline known` (empty when pre-registered)."""
    return "" if not mark else SAID[state(mark)]


def seen_runs(pred: Any, ev: Any) -> list[int]:
    """The counting runs a prediction's groups select (and its `--where` admits) in evidence `ev`
    (core.verdict.Evidence): the numbers its writer could have seen. Only the groups its expression
    reads count (`a < 0.05 * peak_tflops` is about a alone)."""
    used = sorted(pred.groups) or ["a"]
    ids: set[int] = set()
    for g in used:
        ids |= ev.select(pred.a if g == "a" else pred.b)
    if pred.where and ids:
        try:
            cond = E.parse_where(pred.where)
        except E.ExprError:
            return sorted(ids)
        ids = {i for i in ids if E.where_match(cond, ev.runs[i].labels)}
    return sorted(ids)


def ranges(ids: Iterable[int]) -> str:
    """Run numbers as a person reads them: `1–40, 45, 47–48`."""
    xs = sorted(set(int(i) for i in ids))
    out: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}–{xs[j]}")
        i = j + 1
    return ", ".join(out)


def words(mark: Any) -> str:
    """`post-hoc: written after runs 1–40` (the run numbers of the clone that wrote it), or
    `baseline known: written after runs 1–3` for a mark of that state."""
    runs = list(mark_field(mark, "runs") or [])
    name = said(mark) or NOTE
    if not runs:
        return name
    one = len(runs) == 1
    return f"{name}: written after run{'' if one else 's'} {ranges(runs)}"


def record(mark: Any) -> dict[str, Any]:
    """The mark as a verdict's record carries it (plain data): when and after which runs (and its
    state when not post-hoc). The uids stay in the prediction's own mark, once, rather than in every
    verdict appended to the file."""
    out = {"at": mark_field(mark, "at"), "runs": list(mark_field(mark, "runs") or [])}
    if state(mark) == BASELINE_KNOWN:
        out["state"] = BASELINE_KNOWN
    return out


def decorate(res: dict[str, Any], mark: Any) -> dict[str, Any]:
    """A prediction's verdict record with the mark: `post_hoc` set and the explanation led by it
    (`confirmed, post-hoc: written after runs 1–40; a/b = …`; an untested one's line is left as it
    is). Idempotent (a cached record that
    already carries it is returned unchanged), and a copy: the caller's record is not changed."""
    if mark is None:
        if "post_hoc" not in res:
            return res
        out = {k: v for k, v in res.items() if k != "post_hoc"}
        out["explanation"] = _strip(str(res.get("explanation") or ""), res["post_hoc"], str(res.get("status")))
        return out
    rec = record(mark)
    expl = str(res.get("explanation") or "")
    if res.get("status") == "untested":  # no verdict to qualify: the record carries the mark, the line not
        return res if res.get("post_hoc") == rec else {**res, "post_hoc": rec}
    if res.get("post_hoc") == rec and words(rec) in expl:
        return res
    if "post_hoc" in res:
        expl = _strip(expl, res["post_hoc"], str(res.get("status")))
    st = str(res.get("status") or "")
    lead = f"{st}: "
    expl = f"{st}, {words(rec)}; {expl[len(lead):]}" if expl.startswith(lead) else f"{words(rec)}; {expl}"
    return {**res, "post_hoc": rec, "explanation": expl}


def _strip(expl: str, old: Any, status: str) -> str:
    w = words(old)
    if expl.startswith(f"{status}, {w}; "):
        return f"{status}: " + expl[len(f"{status}, {w}; "):]
    if expl.startswith(f"{w}; "):
        return expl[len(f"{w}; "):]
    return expl


def rests_on(status: str, preds: list[dict[str, Any]]) -> list[str]:
    """The post-hoc predictions a hypothesis's status rests on (their ids; [] when none).

    Confirmed rests on every prediction; falsified on the falsified ones, and only when every one
    of them is post-hoc (a pre-registered prediction that fails decides it alone); inconclusive on
    those with evidence. Open and testing rest on nothing."""
    marked = [p for p in preds if is_post_hoc(p.get("post_hoc"))]
    if not marked:
        return []
    if status == "confirmed":
        return [p["id"] for p in marked]
    if status == "falsified":
        deciding = [p for p in preds if p.get("status") == "falsified"]
        return [p["id"] for p in deciding] if deciding and all(is_post_hoc(p.get("post_hoc")) for p in deciding) else []
    if status == "inconclusive":
        return [p["id"] for p in marked if p.get("status") in ("confirmed", "inconclusive")]
    return []


def hypothesis_words(status: str, ids: list[str]) -> str:
    """`confirmed, resting on post-hoc prediction h.p2` (empty when `ids` is)."""
    if not ids:
        return ""
    return f"{status}, resting on post-hoc prediction{'s' if len(ids) > 1 else ''} {', '.join(ids)}"


def verdict_words(verdict: Any) -> str:
    """What a hypothesis verdict's post-hoc predictions were written after: `post-hoc: written after
    runs 1–40` (the runs of every prediction its status rests on, together); empty when none."""
    ids = set(mark_field(verdict, "post_hoc") or [])
    if not ids:
        return ""
    runs: set[int] = set()
    for p in mark_field(verdict, "predictions") or []:
        if isinstance(p, Mapping) and p.get("id") in ids and is_post_hoc(p.get("post_hoc")):
            runs.update(mark_field(p["post_hoc"], "runs") or [])
    return words({"runs": sorted(runs)})


def without_lead(text: str, status: str, lead: str) -> str:
    """`text` (a verdict's summary) without the post-hoc lead `decorate` gave it (`confirmed,
    post-hoc: written after runs 1–40; …` → `confirmed: …`), for a line that says the mark itself."""
    pre = f"{status}, {lead}; "
    return f"{status}: {text[len(pre):]}" if lead and text.startswith(pre) else text


def status_text(status: str, mark: Any) -> str:
    """A prediction's status as a table shows it: `confirmed, post-hoc: written after runs 1–40`
    (`confirmed, baseline known: written after runs 1–3`)."""
    return f"{status}, {words(mark)}" if mark else status
