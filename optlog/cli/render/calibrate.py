"""How the CLI shows the documents of `optlog.api.calibrate`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.core.numfmt import fmt_num, fmt_share, fmt_sig, plural


def _calibrate_human(r: dict[str, Any]) -> str:
    m = r["measured"]
    out = [f"{m['kind']} ({m.get('device')}, {plural(m.get('count'), 'device')}, {m.get('backend')}):"]
    sp = m.get("spread") or {}

    def spread(key: str) -> str:
        t = sp.get(key)
        if not t:
            return ""
        q = t.get("quantile")
        head = f"p{round(100 * q)} of {t['n']}" if q else f"median of {t['n']}"
        return f"  ({head}, spread {fmt_share(t['spread'], places=1)}: ±{fmt_share(t['spread'] / 2, places=1)})"

    out += [f"  peak {dt:<5} {fmt_sig(v):>10} {'TOPS' if dt == 'int8' else 'TFLOP/s'}{spread('peak_tflops.' + dt)}" for dt, v in m["peak_tflops"].items()]
    out.append(f"  memory bandwidth {fmt_num(m['mem_bw_gbps'])} GB/s{spread('mem_bw_gbps')}")
    if m.get("dram_counter_full_gbps"):  # the scale the diagnosis reads GPM's DRAM % on (issue 30)
        out.append(f"  DRAM counter scale {fmt_num(m['dram_counter_full_gbps'])} GB/s = 100 % of GPM dram_bw_util "
                   f"({m.get('dram_counter_method')})")
    elif m.get("dram_counter_error"):
        out.append(f"  DRAM counter scale not measured: {m['dram_counter_error']}")
    h = m.get("host") or {}
    if h:
        out.append(f"  host: {plural(h.get('threads'), 'thread')}, {plural(h.get('cpus'), 'CPU')}, load average "
                   f"{h.get('load_1m_before')} before, {h.get('load_1m_after')} after")
    for k, why in (r.get("refused") or {}).items():
        out.append(f"  REFUSED {k}: {why}")
    if m.get("p2p_gbps"):
        out.append("  copy GB/s (row → column):")
        out += ["    " + " ".join(f"{x:>8}" for x in row) for row in m["p2p_gbps"]]
    if m.get("allreduce_busbw_gbps") is not None:
        out.append(f"  allreduce bus bandwidth {m['allreduce_busbw_gbps']} GB/s")
    out.append(("written to " if r["written"] else "not written (--dry-run): ") + r["file"])
    if r.get("rediagnosed"):
        out.append(f"  re-diagnosed {plural(len(r['rediagnosed']), 'run')} with the new ceilings; re-judged: "
                   + (", ".join(f"{x['hypothesis']} ({x['status']})" for x in r["rejudged"]) or "none changed"))
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "calibrate": _calibrate_human,
}
