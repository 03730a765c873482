"""How the CLI shows the documents of `optlog.api.history`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any


def _human_log(r: dict[str, Any]) -> str:
    if r.get("notice") and not r["events"]:
        return r["notice"]
    if not r["events"]:
        return "no decisions recorded yet"
    out = []
    for e in r["events"]:
        head = f"{str(e['at'])[:16].replace('T', ' ')}  {e['sha'][:8]}  {e['subject']}"
        out.append(head)
        meta = [f"event {e['event']}"]
        if e.get("hypothesis"):
            meta.append(f"hypothesis {e['hypothesis']}")
        if e.get("runs"):
            meta.append("runs " + ",".join(str(x) for x in e["runs"]))
        if e.get("actor"):
            meta.append(f"by {e['actor']}")
        out.append("    " + " · ".join(meta))
        if e.get("pivot"):
            out.append(f"    ⇒ pivot: {e['pivot']['from']} → {e['pivot']['to']}")
        if e.get("hand_edit"):
            out.append(f"    includes a hand edit of {', '.join(e['hand_edit'])}")
        body = (e.get("body") or "").strip()
        if body:
            for line in body.splitlines():
                out.append(f"    │ {line}" if line.strip() else "    │")
    if r.get("notice"):  # a shallow clone: the timeline above is cut
        out.append(r["notice"])
    return "\n".join(out)


def _sync_human(r: dict[str, Any]) -> str:
    if r.get("notice"):
        return r["notice"]
    if not r["committed"]:
        return f"{r['hypotheses']} hypothesis files valid; nothing to commit"
    return "\n".join(f"committed {c['sha'][:8]} {c['subject']}" for c in r["committed"])


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "log": _human_log,
    "sync": _sync_human,
}
