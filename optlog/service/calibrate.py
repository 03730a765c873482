"""`optlog calibrate`: measure the ceilings and write them into optlog.yaml under
`hardware.gpus.<kind>`, keeping the file's comments, order and every value a person wrote.

Rules: measured figures always go to `measured:` (with `source`, `at`, the device name, and with several
GPUs `p2p_gbps` and `allreduce_busbw_gbps`); `peak_tflops.<dtype>` and `mem_bw_gbps` at the top of the
kind are filled only where a person has not written them (datasheet values win there, and
`ceilings()` offers the measured ones as `measured_*`). `hardware.default` is set when empty.
"""

from __future__ import annotations

import io
from typing import Any

from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, Failed
from optlog.service.context import Ctx


def write_measured(text: str, m: dict[str, Any], at: str) -> str:
    """The new optlog.yaml text with the measurement `m` merged in (round-trip: comments kept)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

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
    peaks = spec.get("peak_tflops")
    if not isinstance(peaks, dict):
        peaks = CommentedMap()
        spec["peak_tflops"] = peaks
    filled = []
    for dt, v in m["peak_tflops"].items():
        if dt not in peaks:
            peaks[dt] = float(v)
            filled.append(f"peak_tflops.{dt}")
    if spec.get("mem_bw_gbps") is None:
        spec["mem_bw_gbps"] = float(m["mem_bw_gbps"])
        filled.append("mem_bw_gbps")
    if spec.get("source") is None and filled:
        spec["source"] = f"measured {at[:10]} by optlog calibrate"
    meas = CommentedMap()
    meas["source"] = f"measured {at} by optlog calibrate ({m.get('backend')})"
    meas["device"] = m.get("device")
    meas["peak_tflops"] = CommentedMap((k, float(v)) for k, v in m["peak_tflops"].items())
    meas["mem_bw_gbps"] = float(m["mem_bw_gbps"])
    if m.get("mem_bw_method"):
        meas["mem_bw_method"] = m["mem_bw_method"]
    if m.get("p2p_gbps") is not None:
        from ruamel.yaml.comments import CommentedSeq

        rows = CommentedSeq()
        for r in m["p2p_gbps"]:
            s = CommentedSeq(r)
            s.fa.set_flow_style()
            rows.append(s)
        meas["p2p_gbps"] = rows
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


def calibrate(ctx: Ctx, *, quick: bool = False, device: str = "auto", dry_run: bool = False,
              measurement: dict[str, Any] | None = None) -> dict[str, Any]:
    from optlog.config import Config
    from optlog.telemetry.calibrate import measure
    from optlog.yamlio import parse_text, validate

    path = ctx.ws.config_file
    before = path.read_text() if path.exists() else ""
    ctx.config  # noqa: B018 - a malformed optlog.yaml is reported before measuring anything
    if measurement is None:
        ctx.notice("calibrate: measuring matmul TFLOP/s per dtype and memory bandwidth"
                   + (" (and, with several GPUs, the links and allreduce)" if device != "cpu" else " on the CPU") + "…")
        try:
            measurement = measure(quick=quick, device=device)
        except RuntimeError as e:
            raise Failed(str(e)) from None
    at = now_iso()
    text = write_measured(before, measurement, at)
    validate(Config, parse_text(text, "optlog.yaml"), text, "optlog.yaml")  # still a valid settings file
    if not dry_run:
        from optlog.gitlog import history
        from optlog.yamlio import write_atomic

        write_atomic(path, text)
        # committed: the ceilings verdicts and diagnoses use are rebuilt from git like the rest
        history.record(ctx, [path], f"optlog: calibrate ({measurement['kind']})", f"measured at {at}",
                       {"Optlog-Event": "calibrate"})
    return {"kind": measurement["kind"], "measured": measurement, "written": not dry_run, "file": str(path)}
