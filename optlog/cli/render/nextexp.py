"""How the CLI shows the documents of `optlog.api.nextexp`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any


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


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "next": _next_human,
}
