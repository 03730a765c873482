"""How the CLI shows the documents of `optlog.api.bench`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import fmt_num, table


def _table(d: dict[str, Any]) -> str:
    rows = []
    for r in d["runs"]:
        m = r["metrics"]
        rows.append([r["id"] if r["id"] is not None else "-", r["labels"].get("concurrency", "∞"),
                     m["completed"], m["failed"] if not m.get("short") else f"{m['failed']} ({m['short']} short)", fmt_num(m["request_throughput"]), fmt_num(m["output_throughput"]),
                     fmt_num(m["mean_ttft_ms"]), fmt_num(m["p99_ttft_ms"]), fmt_num(m["mean_tpot_ms"]),
                     fmt_num(m["mean_itl_ms"]), fmt_num(m["p99_itl_ms"]), fmt_num(m["mean_e2e_latency_ms"]),
                     fmt_num(m["mean_inflight"]), fmt_num(m["duration"])])
    out = table(rows, ["run", "conc", "ok", "failed", "req/s", "out tok/s", "ttft ms", "p99 ttft", "tpot ms",
                       "itl ms", "p99 itl", "e2e ms", "inflight", "dur s"])
    for r in d["runs"]:
        if r["errors"]:
            c = r["labels"].get("concurrency", "∞")
            out += f"\nc={c} errors: " + ", ".join(f"{k} {n}" for k, n in r["errors"].items())
            if r.get("example_error"):
                out += f" (e.g. {r['example_error']})"
    if d.get("output_file"):
        out += f"\nwrote {d['output_file']}"
    return out


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "bench": _table,
}
