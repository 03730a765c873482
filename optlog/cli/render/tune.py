"""How the CLI shows the documents of `optlog.api.tune`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import fmt_num, kv, table
from optlog.core.numfmt import fmt_p, fmt_signed, fmt_written, plural


def _human(d: dict[str, Any]) -> str:
    objs = d.get("objectives") or []
    rows = []
    for t in d["trials"]:
        vals = t["values"] or []
        rows.append([t["number"], t["state"] + ("" if t.get("feasible") in (None, True) else " (infeasible)"),
                     kv(t["params"])] + [fmt_num(v) for v in vals] + [t["run"] if t["run"] is not None else "",
                                                                       f"= trial {t['same_as']}" if "same_as" in t else t.get("pruned", "")])
    head = f"study {d['study']} ({d.get('sampler')}): {plural(len(d['trials']), 'trial')}"
    out = head + "\n" + table(rows, ["trial", "state", "params", *objs, "run", ""])
    for b in d["best"]:
        rem = b.get("remeasured") or {}
        if rem:
            parts = [f"{m}={fmt_num(v)} (first reading {fmt_num(f)}, {_above(sh)} the median)"
                     for m, v, f, sh in zip(objs, rem["values"], rem["first"], rem["shrink_pct"])]
            out += f"\nbest: trial {b['number']} {kv(b['params'])} → re-measured median of {rem['n']}: " + ", ".join(parts)
        else:
            out += (f"\nbest: trial {b['number']} {kv(b['params'])} → "
                    + ", ".join(f"{m}={fmt_num(v)}" for m, v in zip(objs, b["values"])) + " (first reading, not re-measured)")
    rm = d.get("remeasure") or {}
    if rm.get("changed"):
        lucky = next(((n, t) for n, t in (rm.get("trials") or {}).items() if int(n) not in (rm.get("winners") or [])), None)
        out += "\nthe re-measure changed the best"
        if lucky:
            n, t = lucky
            out += (f": trial {n} led on its first reading ({fmt_num(t['first'][0])}), its re-measured median is "
                    f"{fmt_num(t['values'][0])} ({_above(t['shrink_pct'][0])} it)")
        if (rm.get("separation") or {}).get("distinct") is False:
            out += "; the two are not told apart, so either may be the better"
    sep = rm.get("separation") or {}
    if sep:
        out += (f"\nbest vs runner-up (trial {sep.get('runner_up')}): "
                + (f"{sep['test']} {fmt_p(sep['p'])}, " + ("told apart" if sep["distinct"] else "not told apart")
                   if sep.get("test") else sep.get("why", "")))
    if not d["best"]:
        out += "\nno feasible completed trial yet"
    c = d.get("claim")
    if c:
        out += f"\nclaim ({c['hypothesis']}): tuning gains ≥ {fmt_written(c['pct'])} % {c['metric']} over the default settings"
        if c.get("verdict"):
            gain = "" if c.get("gain_pct") is None else f", measured {fmt_signed(c['gain_pct'], 3)} %"
            out += (f": {c['verdict']}{gain} (trial {c['tuned']} against {kv(c['default'])}, {c['rounds']} runs each)"
                    + (f"; {'plan' if len(c['plans']) == 1 else 'plans'} {', '.join(map(str, c['plans']))} got the measured gain" if c.get("plans") else ""))
        else:
            out += ": not judged yet"
    for w in d.get("workers") or []:  # --on: the workers on other hosts
        out += (f"\nworker {w['worker']} on {w['on']}: exit {w['exit_code']}"
                + (f", {w['error']}" if w.get("error") else "") + f" ({w['log']})")
    return out


def _above(pct: float) -> str:
    """`1.69 % above` / `0.22 % below`: which way the first reading was off."""
    return f"{fmt_num(abs(pct))} % {'above' if pct >= 0 else 'below'}"


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "tune run": _human,
    "tune list": lambda d: table([[r["study"], r["spec"] or "", ",".join(r["objectives"] or []), r["trials"]] for r in d["studies"]],
                                   ["study", "spec", "objectives", "trials"]),
    "tune show": _human,
}
