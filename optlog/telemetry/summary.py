"""Per-run telemetry summaries (stored as metrics) and the `run show` view.

Metric names (documented in README "Telemetry"): for each sampled field F (gpu_power_w, gpu_power_frac,
gpu_util, sm_clock_mhz, mem_used_gib, gpu_temp_c, pcie_rx_gbps, nvlink_gbps, sm_occupancy, sm_active,
tensor_active, dram_bw_util, …): `F` (= the mean, so `a.tensor_active < 20` works), `F_mean`, `F_p5`,
`F_p50`, `F_p95`, `F_max` — over the samples of all the run's GPUs pooled, warm-up excluded.
`throttle_<reason>_s`: seconds each clock-event reason was active (per GPU, averaged over GPUs).
`energy_j` (all GPUs, whole point), `tokens_per_joule`, `telemetry_samples`, `telemetry_gpus`,
`telemetry_window_s` (the point's length as the session saw it). Link rates (NVLink, PCIe) also per
GPU: `F_gpu_max`, `F_steady_gpu_max` — the busiest GPU's mean (issue 43).
Over the measured phase only (issue 30; what the diagnosis reads): `F_steady`, `F_steady_p50`,
`telemetry_steady_s`, `telemetry_steady_windows` (`steady`).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from optlog.core.diagnosis import diagnose, same, stored
from optlog.core.numfmt import fmt_num, fmt_seconds, plural
from optlog.needs import Reads
from optlog.store.runrows import labels_metrics
from optlog.store.runrows import run as run_row
from optlog.telemetry.fields import SUMMARISED, THROTTLE_BITS, THROTTLE_EVIDENCE
from optlog.telemetry.store import TIME_FIELD, read_columns

if TYPE_CHECKING:
    import numpy as np

STATS = ("mean", "p5", "p50", "p95", "max")
LINK_FIELDS = ("nvlink_tx_gbps", "nvlink_rx_gbps", "pcie_tx_gbps", "pcie_rx_gbps")
"""Fields also summarised per GPU, the busiest GPU's mean kept as `<field>[_steady]_gpu_max` (with two or
more GPUs): one pipeline stage's boundary can load its links while the others' idle (issue 43)."""
SPARK = "▁▂▃▄▅▆▇█"


def _window(t: np.ndarray, start: float | None, end: float | None, warmup_s: float) -> np.ndarray:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    m = np.ones(len(t), dtype=bool)
    if start is not None:
        m &= t >= start + warmup_s
    if end is not None:
        m &= t <= end
    return m


def summarize(cols_by_gpu: dict[str, dict[str, np.ndarray]], start: float | None = None, end: float | None = None,
              warmup_s: float = 0.0) -> dict[str, float]:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    out: dict[str, float] = {}
    pooled: dict[str, list[np.ndarray]] = {}
    gpu_means: dict[str, list[float]] = {}
    throttle_s: dict[str, float] = {name: 0.0 for name in THROTTLE_BITS.values()}
    have_throttle = False
    ngpu = 0
    nsamp = 0
    for cols in cols_by_gpu.values():
        t = cols.get(TIME_FIELD)
        if t is None or not len(t):
            continue
        st = float(t[0]) if start is None else start
        m = _window(t, st, end, warmup_s)
        if not m.any():
            continue
        ngpu += 1
        nsamp += int(m.sum())
        for f in SUMMARISED:
            v = cols.get(f)
            if v is None:
                continue
            v = v[m]
            v = v[~np.isnan(v)]
            if len(v):
                pooled.setdefault(f, []).append(v)
                if f in LINK_FIELDS:
                    gpu_means.setdefault(f, []).append(float(v.mean()))
        thr = cols.get("throttle")
        if thr is not None:
            tt = t[m]
            th = thr[m]
            if len(tt) >= 2:
                dt = np.diff(tt)
                dt = np.append(dt, np.median(dt))  # the last sample holds for a typical interval
            else:
                dt = np.zeros(len(tt))
            ok = ~np.isnan(th)
            if ok.any():
                have_throttle = True
                bits = th[ok].astype(np.int64)
                for bit, name in THROTTLE_BITS.items():
                    throttle_s[name] += float(dt[ok][(bits & bit) != 0].sum())
    for f, parts in pooled.items():
        v = np.concatenate(parts)
        p5, p50, p95 = np.percentile(v, [5, 50, 95])
        mean = float(v.mean())
        out[f] = mean
        out[f"{f}_mean"] = mean
        out[f"{f}_p5"] = float(p5)
        out[f"{f}_p50"] = float(p50)
        out[f"{f}_p95"] = float(p95)
        out[f"{f}_max"] = float(v.max())
        if len(gpu_means.get(f, ())) > 1:
            out[f"{f}_gpu_max"] = max(gpu_means[f])
    if have_throttle and ngpu:
        for name, s in throttle_s.items():
            out[f"throttle_{name}_s"] = s / ngpu
    if ngpu:
        out["telemetry_gpus"] = float(ngpu)
        out["telemetry_samples"] = float(nsamp)
    return out


def steady(cols_by_gpu: dict[str, dict[str, np.ndarray]], windows: list[tuple[float, float]], start: float,
           decode: bool, suffix: str = "_steady") -> dict[str, float]:
    """Summaries over the measured phase: `<field>_steady` (mean) and `<field>_steady_p50` of each
    field, each sample weighted by the part of the stretch it describes that falls inside `windows`.

    A sample describes the stretch since the one before it of the same field (GPM values are averages
    over their window, 10 s by default; the first one of a point starts at the point's `start`), so a
    GPM reading whose window was mostly prefill, gaps or server start-up counts for little.
    `telemetry_steady_s` is the windows' length, `telemetry_steady_windows` their number when they
    are decode windows (0: the bench's measured start/end). `suffix` "_prefill": the same over the
    requests' prefill windows (`telemetry_prefill_s`, `telemetry_prefill_windows`). Throttling: the
    share of the windows' time each clock-event reason of `THROTTLE_EVIDENCE` held
    (`throttle_<reason><suffix>`, 0–1: a power cap engaged for the whole phase reads 1)."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    if not windows:
        return {}
    w0 = np.array([a for a, _ in windows])
    w1 = np.array([b for _, b in windows])
    vals: dict[str, list[np.ndarray]] = {}
    wts: dict[str, list[np.ndarray]] = {}
    per_gpu: dict[str, list[float]] = {}  # the link fields' mean on each GPU (the busiest GPU's link)
    for cols in cols_by_gpu.values():
        t = cols.get(TIME_FIELD)
        if t is None or not len(t):
            continue
        for f in (*SUMMARISED, "throttle"):
            v = cols.get(f)
            if v is None:
                continue
            ok = ~np.isnan(v)
            tt, vv = t[ok], v[ok]
            if not len(tt):
                continue
            prev = np.concatenate([[min(start, float(tt[0]))], tt[:-1]])
            a = np.maximum(prev[:, None], w0[None, :])
            b = np.minimum(tt[:, None], w1[None, :])
            inside = np.clip(b - a, 0.0, None).sum(axis=1)
            keep = inside > 0
            if keep.any():
                vals.setdefault(f, []).append(vv[keep])
                wts.setdefault(f, []).append(inside[keep])
                if f in LINK_FIELDS:
                    per_gpu.setdefault(f, []).append(float((vv[keep] * inside[keep]).sum() / inside[keep].sum()))
    out: dict[str, float] = {}
    for f in vals:
        v = np.concatenate(vals[f])
        w = np.concatenate(wts[f])
        if f == "throttle":
            bits = v.astype(np.int64)
            for bit, name in THROTTLE_BITS.items():
                if name in THROTTLE_EVIDENCE:
                    out[f"throttle_{name}{suffix}"] = float(w[(bits & bit) != 0].sum() / w.sum())
            continue
        out[f"{f}{suffix}"] = float((v * w).sum() / w.sum())
        if len(per_gpu.get(f, ())) > 1:
            out[f"{f}{suffix}_gpu_max"] = max(per_gpu[f])
        order = np.argsort(v)
        cw = np.cumsum(w[order])
        out[f"{f}{suffix}_p50"] = float(v[order][np.searchsorted(cw, cw[-1] / 2)])
    if out:
        name = suffix.lstrip("_")
        out[f"telemetry_{name}_s"] = float((w1 - w0).sum())
        out[f"telemetry_{name}_windows"] = float(len(windows)) if decode else 0.0
    return out


def output_tokens(metrics: dict[str, float]) -> float | None:
    for k in ("total_output_tokens", "output_tokens", "completion_tokens"):
        if metrics.get(k) is not None:
            return float(metrics[k])
    ot, dur = metrics.get("output_throughput"), metrics.get("duration_s")
    if ot is not None and dur is not None:
        return float(ot) * float(dur)
    return None


def energy_metrics(energy_j: float | None, metrics: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    if energy_j is None or energy_j <= 0:
        return out
    out["energy_j"] = energy_j
    tok = output_tokens(metrics)
    if tok:
        out["tokens_per_joule"] = tok / energy_j
    return out


def sparkline(v: np.ndarray, width: int = 40) -> str:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    v = v[~np.isnan(v)]
    if not len(v):
        return ""
    if len(v) > width:
        idx = np.linspace(0, len(v), width + 1).astype(int)
        v = np.array([v[a:b].mean() for a, b in zip(idx[:-1], idx[1:]) if b > a])
    lo, hi = float(v.min()), float(v.max())
    if hi - lo < 1e-12:
        return SPARK[0] * len(v)
    return "".join(SPARK[min(7, int((x - lo) / (hi - lo) * 7.999))] for x in v)


SHOW = ("gpu_power_w", "gpu_power_frac", "gpu_util", "sm_active", "sm_occupancy", "tensor_active", "dram_bw_util",
        "sm_clock_mhz", "mem_used_gib", "gpu_temp_c", "pcie_rx_gbps", "pcie_tx_gbps", "nvlink_gbps")


PLOT_FIELDS = ("gpu_power_w", "tensor_active", "dram_bw_util")
"""Telemetry over time the TUI plots for a run (downsampled to about 200 points)."""


def run_telemetry(ctx: Reads, run_id: int, metrics: dict[str, float]) -> dict[str, Any]:
    """For `run show`: stored samples' sparklines, the summaries and the diagnosis."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    out: dict[str, Any] = {}
    cols: dict[str, dict[str, np.ndarray]] = {}
    labels: dict[str, Any] = {}
    sources: dict[str, str] | None = None
    try:
        with ctx.db.read() as s:
            cols = read_columns(s, run_id=run_id)
            labels = labels_metrics(s, [run_id])[0][run_id]
            r = run_row(s, run_id)
            mf = ((getattr(r, "environment", None) or {}).get("model_facts") or {}) if r is not None else {}
            sources = mf.get("sources") if isinstance(mf, dict) else None
    except Exception as e:  # telemetry must never break `run show`
        out["error"] = f"telemetry unreadable: {e}"
    try:
        ceilings = ctx.config.ceilings()
    except Exception:
        ceilings = {}
    lines: list[str] = []
    fields: dict[str, Any] = {}
    if cols:
        n = max(len(c.get(TIME_FIELD, [])) for c in cols.values())
        lines.append(f"telemetry: {plural(len(cols), 'GPU')}, {n} samples each")
        for f in SHOW:
            series = [c[f] for c in cols.values() if f in c]
            if not series:
                continue
            # mean over GPUs per sample index (GPUs are sampled together)
            L = min(len(x) for x in series)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an index where no GPU has the field
                v = np.nanmean(np.vstack([x[:L] for x in series]), axis=0) if L else np.array([])
            if not len(v) or np.all(np.isnan(v)):
                continue
            if f in PLOT_FIELDS:
                t = next(iter(c[TIME_FIELD] for c in cols.values() if TIME_FIELD in c), None)
                if t is not None and len(t) >= L:
                    step = max(1, L // 200)  # about one point per plot column
                    t0 = float(t[0])
                    out.setdefault("series", {})[f] = [
                        (round(float(t[i]) - t0, 3), float(v[i])) for i in range(0, L, step) if not np.isnan(v[i])
                    ]
            stats = {k: metrics.get(f"{f}_{k}") for k in STATS}
            fields[f] = {"samples": int(L), **{k: v for k, v in stats.items() if v is not None}}
            st = " ".join(f"{k} {fmt_num(stats[k])}" for k in ("mean", "p95", "max") if stats[k] is not None)
            lines.append(f"  {f:<16} {sparkline(v)}  {st}")
        thr = {k: v for k, v in metrics.items() if k.startswith("throttle_") and v > 0}
        if thr:
            lines.append("  throttle: " + ", ".join(f"{k[9:-2]} {fmt_seconds(v)}" for k, v in sorted(thr.items())))
    if "energy_j" in metrics:
        energy = f"  energy {fmt_num(float(metrics['energy_j']))} J"
        if "tokens_per_joule" in metrics:
            energy += f", {fmt_num(float(metrics['tokens_per_joule']))} tokens/J"
        lines.append(energy)
    old = stored(metrics)
    inputs = {k: v for k, v in metrics.items() if k not in old}
    dg = diagnose(inputs, ceilings, labels, fact_sources=sources)
    if dg.bound is not None or dg.basis != "none" or cols:
        lines.append(dg.text())
    out["fields"] = fields
    out["diagnosis"] = dg.to_json()
    if old and not same(old, dg.metrics()):
        # predictions read the stored one: say so until `optlog verdict` or `calibrate` redoes it
        out["diagnosis"]["stored_differs"] = True
        lines.append("  stored diagnosis (what predictions read) was made with other ceilings or other inputs "
                     f"(peak_tflops={old.get('roofline_peak_tflops')}, mem_bw_gbps={old.get('roofline_mem_bw_gbps')}): "
                     "`optlog verdict` or `optlog calibrate` redoes it and re-judges")
    out["text"] = "\n".join(lines)
    return out
