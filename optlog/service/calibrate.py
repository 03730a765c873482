"""`optlog calibrate`: measure the ceilings and write them into optlog.yaml under
`hardware.gpus.<kind>`, keeping the file's comments, order and every value a person wrote.

Rules: measured figures go to `measured:` only (with `source`, the device name, the host's thread count
and load, each figure's spread over its trials, and with several GPUs `p2p_gbps` and
`allreduce_busbw_gbps`); the kind's top-level `peak_tflops.<dtype>` and `mem_bw_gbps` are datasheet keys
a person writes, never a measurement (`ceilings()` offers the measured ones as `measured_*`, and under
the plain names where no datasheet value exists). Each figure is a high quantile of its trials, its
spread kept as its uncertainty; a figure whose best trials disagree by more than `max_spread` (default
10 %: the machine was busy throughout) is refused: not stored, the previous measurement of it kept, and
the reason returned. `hardware.default` is set when empty. After a write, stored diagnoses made with other
ceilings are redone and the verdicts that read them re-judged (service.diagnoses).
"""

from __future__ import annotations

import io
import math
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from optlog.config import config_model
from optlog.core.numfmt import fmt_share, fmt_sig, plural
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, Failed, param
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Writes
from optlog.runs.executors.registry import config_sections
from optlog.service.verdicts import rediagnose
from optlog.store import cas
from optlog.telemetry.calibrate import measure
from optlog.yamlio import parse_text, validate

MAX_SPREAD = 0.10


def refusals(m: dict[str, Any], max_spread: float = MAX_SPREAD) -> dict[str, str]:
    """{figure: why} for the figures of measurement `m` that cannot be trusted: those whose best trials
    (the upper half, `upper_spread`) disagree by more than `max_spread` — the machine was busy
    throughout, so even the high quantile is a guess. A wide spread below that is kept as the figure's
    uncertainty (`measured.spread`), not refused: one slow trial says the machine was busy then, and a
    busy 2-core CI machine must still give its ceilings (issue 43)."""
    out: dict[str, str] = {}
    host = m.get("host") or {}
    load = host.get("load_1m_before")
    cpus = host.get("cpus")
    for key, t in (m.get("spread") or {}).items():
        sp = t.get("upper_spread", t.get("spread"))
        if sp is None or sp <= max_spread:
            continue
        why = (f"the best trials disagree by {fmt_share(sp)} (over {t.get('n')} trials: min {fmt_sig(t['min'])}, "
               f"median {fmt_sig(t['median'])}, max {fmt_sig(t['max'])}), more than {fmt_share(max_spread)}")
        if load is not None and cpus:
            why += f"; load average {load} on {plural(cpus, 'CPU')}"
        out[key] = why + ": the machine was busy throughout; re-run when it is idle"
    return out


def write_measured(text: str, m: dict[str, Any], at: str, refused: dict[str, str] | None = None) -> str:
    """The new optlog.yaml text with the measurement `m` merged in (round-trip: comments kept); the
    figures in `refused` are left as they were."""

    y = YAML()
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    doc = y.load(text) if text.strip() else None
    if doc is None:
        doc = CommentedMap()
    if not isinstance(doc, dict):
        raise BadInput("optlog.yaml is not a mapping", file="optlog.yaml")
    hw = doc.get("hardware")
    if not isinstance(hw, dict):
        hw = CommentedMap()
        doc["hardware"] = hw
    gpus = hw.get("gpus")
    if not isinstance(gpus, dict) or not gpus:
        new = CommentedMap()
        if isinstance(gpus, dict):
            new.update(gpus)
        hw["gpus"] = new
        gpus = new
    kind = m["kind"]
    spec = gpus.get(kind)
    if not isinstance(spec, dict):
        spec = CommentedMap()
        gpus[kind] = spec
    if spec.get("count") is None:
        spec["count"] = int(m.get("count") or 1)
    refused = refused or {}
    prev: dict[str, Any] = got if isinstance(got := spec.get("measured"), dict) else {}
    prev_peaks: dict[str, Any] = got if isinstance(got := prev.get("peak_tflops"), dict) else {}
    meas = CommentedMap()
    meas["source"] = f"measured {at} by optlog calibrate ({m.get('backend')})"
    meas["device"] = m.get("device")
    peaks = CommentedMap()
    for k, v in m["peak_tflops"].items():
        if f"peak_tflops.{k}" not in refused:
            peaks[k] = float(v)
        elif k in prev_peaks:
            peaks[k] = prev_peaks[k]
    meas["peak_tflops"] = peaks
    if "mem_bw_gbps" not in refused:
        meas["mem_bw_gbps"] = float(m["mem_bw_gbps"])
    elif prev.get("mem_bw_gbps") is not None:
        meas["mem_bw_gbps"] = prev["mem_bw_gbps"]
    if m.get("host"):
        meas["host"] = CommentedMap((k, v) for k, v in m["host"].items() if v is not None)
    if m.get("spread"):
        sp = CommentedMap()
        for k, t in m["spread"].items():
            row = CommentedMap([("spread", round(float(t["spread"]), 4)), ("n", int(t["n"])),
                                ("min", round(float(t["min"]), 4)), ("max", round(float(t["max"]), 4))])
            if t.get("upper_spread") is not None:
                row["upper_spread"] = round(float(t["upper_spread"]), 4)
                row["quantile"] = float(t.get("quantile", 0.9))
            row.fa.set_flow_style()
            sp[k] = row
        meas["spread"] = sp
    if refused:
        meas["refused"] = CommentedMap(refused.items())
    if m.get("mem_bw_method"):
        meas["mem_bw_method"] = m["mem_bw_method"]
    # the bandwidth GPM's dram_bw_util calls 100 % (the diagnosis's scale, issue 30)
    if m.get("dram_counter_full_gbps") is not None and "mem_bw_gbps" not in refused:
        meas["dram_counter_full_gbps"] = float(m["dram_counter_full_gbps"])
        meas["dram_counter_method"] = m.get("dram_counter_method")
    elif prev.get("dram_counter_full_gbps") is not None:
        meas["dram_counter_full_gbps"] = prev["dram_counter_full_gbps"]
    if m.get("dram_counter_error"):
        meas["dram_counter_error"] = m["dram_counter_error"]
    if m.get("p2p_gbps") is not None:
        rows = CommentedSeq()
        for r in m["p2p_gbps"]:
            s = CommentedSeq(r)
            s.fa.set_flow_style()
            rows.append(s)
        meas["p2p_gbps"] = rows
    if m.get("link_gbps") is not None:  # the ceiling of the link counters (issue 43)
        meas["link_gbps"] = float(m["link_gbps"])
        meas["link_method"] = m.get("link_method")
    if m.get("allreduce_busbw_gbps") is not None:
        meas["allreduce_busbw_gbps"] = float(m["allreduce_busbw_gbps"])
    if m.get("allreduce_error"):
        meas["allreduce_error"] = m["allreduce_error"]
    spec["measured"] = meas
    if hw.get("default") in (None, ""):
        hw["default"] = kind
    buf = io.StringIO()
    y.dump(doc, buf)
    return buf.getvalue()


def calibrate(ctx: Writes, *, quick: bool = False, device: str = "auto", dry_run: bool = False,
              measurement: dict[str, Any] | None = None, max_spread: float = MAX_SPREAD) -> dict[str, Any]:
    path = ctx.ws.config_file
    before = path.read_text() if path.exists() else ""
    ctx.config  # noqa: B018 - a malformed optlog.yaml is reported before measuring anything
    if not (max_spread > 0 and math.isfinite(max_spread)):  # an agent's "1e999" is inf: no bound at all
        raise BadInput(f"{param('max_spread')} must be a finite number > 0, got {max_spread}", field="max_spread")
    if measurement is None:
        ctx.notice("calibrate: measuring matmul TFLOP/s per dtype and memory bandwidth"
                   + (" (and, with several GPUs, the links and allreduce)" if device != "cpu" else " on the CPU") + "…")
        try:
            measurement = measure(quick=quick, device=device)
        except RuntimeError as e:
            raise Failed(str(e)) from None
    at = now_iso()
    refused = refusals(measurement, max_spread)

    base: list[str] = []

    def measured_into(current: str) -> str:
        base[:] = [current]
        text = write_measured(current, measurement, at, refused)
        validate(config_model(config_sections()), parse_text(text, "optlog.yaml"), text, "optlog.yaml")  # still valid
        return text

    if dry_run:
        measured_into(before)
    else:
        # from the file as it is now: an edit saved during the measurement is kept, not replaced
        try:
            cas.update_text(path, measured_into)
        except cas.Changed:
            raise Failed("optlog.yaml kept changing while calibrate tried to write it; nothing was "
                         "written: run calibrate again") from None
        # committed: the ceilings verdicts and diagnoses use are rebuilt from git like the rest
        body = f"measured at {at}"
        if base and base[0] != before:
            body += "\n\noptlog.yaml was edited during the measurement; that edit is kept and committed here too."
        history.record(ctx, [path], f"optlog: calibrate ({measurement['kind']})", body,
                       {TR.EVENT: "calibrate"})
    out = {"kind": measurement["kind"], "measured": measurement, "written": not dry_run, "file": str(path),
           "refused": refused, "rediagnosed": [], "rejudged": []}
    if not dry_run:
        ctx.forget_config()  # the settings just written, not the cached ones
        res = rediagnose(ctx, "ceilings re-measured by optlog calibrate")
        out["rediagnosed"] = res["rediagnosed"]
        out["rejudged"] = [{"hypothesis": r["hypothesis"], "status": r["auto_status"]} for r in res["results"]
                           if r.get("changed")]
    return out
