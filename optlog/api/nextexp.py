"""`optlog next [ID]`: the experiment that would tell rival hypotheses apart (service.nextexp)."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import Arg, Call, verb
from optlog.service import documents, nextexp


def _next_human(d: dict[str, Any]) -> str:
    if not d["pairs"]:
        return d.get("note") or "no rival or parent to tell apart"
    out: list[str] = []
    for e in d["pairs"]:
        h, o = e["hypothesis"], e["other"]
        out.append(f"{h} vs {o} ({e['relation']}): {e['state']}: {e['why']}")
        for row in e["side_by_side"]:
            mine = row.get(h)
            theirs = row.get(o) or []
            if not mine or not theirs:
                continue
            out.append(f"  {row['comparison']}: {mine['prediction']} {mine['expect']} ({mine['status']}) | "
                       + ", ".join(f"{q['prediction']} {q['expect']} ({q['status']})" for q in theirs))
            for lv in row["levels"]:
                out.append(f"    {lv['level']}: {h} {lv.get(h, '–')}, {o} {lv.get(o, '–')}")
        for i, c in enumerate(e["candidates"][:3]):
            mark = "best: " if i == 0 else ""
            lv = ", ".join(map(str, c["levels"]))
            what = "re-run the loaded cells" if c["source"] == "quiet" else f"vary {c['axis']} to {lv}"
            out.append(f"  {mark}{what} ({c['source']}, {c['repeats']} repeats): {c['why']}")
            for hid, rows in c["predicted"].items():
                out.append(f"    {hid}: " + "; ".join(f"{r['level']}: {r['outcome']}" for r in rows))
        if e.get("spec"):
            out.append(f"  wrote {e['spec']} ({e['spec_note']}); nothing launched: optlog run launch {e['spec']}")
            if e.get("cost"):
                out.append(f"  cost: {e['cost']['text']}; its commands: optlog run launch {e['spec']} --dry-run")
        elif e.get("spec_note"):
            out.append(f"  no spec: {e['spec_note']}")
        for n in e.get("notes", []) if e["candidates"] else []:
            out.append(f"  note: {n}")
        for m in e.get("missing", []):
            out.append(f"  missing: {m}")
    return "\n".join(out)


@verb("next", _next_human)
def next_experiment(call: Call, *,
                    hid: Annotated[str | None, Arg(metavar="[ID]", help="Only the pairs of this hypothesis.")] = None,
                    ) -> documents.NextDoc:
    """The run that tells rivals apart. For each hypothesis with a rival or a pivot parent: the outcomes
    side by side, the untested levels where their predictions differ by more than the noise, and the
    best as runs/next-<hyp>.yaml (never launched; docs/next.md)."""
    return nextexp.analyse(call.ctx, hid)
