"""The verdict engine (DESIGN §5): groups, comparability, per-level outcomes, statuses, explanations.

Pure: takes predictions and run data (labels + metrics), returns plain dictionaries. The service
layer loads runs from the database and writes results into the hypothesis files.

Groups. A run belongs to group a when it has every `--a` label (typed: 256 == "256") and matches
`--where`; likewise b. `--per LABEL` splits the groups into levels; a level present in one group only
is skipped (and said). Without `--per` there is one level.

Comparability. Inside a level, the labels outside the selectors and `--per` must agree. Workload
labels (dataset, input/output lengths, prompt count, request rate), the model and software versions
must agree across both groups; other labels (configuration details such as `tp`, `pp`) must agree
within each group — they may differ between the groups, since that is what is being compared.
`repeat` and `seed` are ignored. The reference value of a label is the one most runs share (preferring
one both groups have); runs that differ are listed as not comparable, never pooled. A level left with
only incomparable evidence on a side is `unclear` with that reason.

Statistics per level and comparison (see optlog.core.stats): ≥ 5 repeats a side, Mann–Whitney U with
Holm across levels (ranges: bootstrap CI of the ratio); 3–4, Welch's t on logs with a minimum effect
of the margin; fewer, the margin rules. A group against a constant uses a one-sample t-test on logs
(Holm across levels from 5 repeats): with 5 values a Wilcoxon test can never reach p < 0.05.
Compound expressions combine per-comparison outcomes with three-valued logic.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from optlog.core import comparable as C
from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core import loadshare as LS
from optlog.core.numfmt import fmt_interval, fmt_p, fmt_share, fmt_verdict, fmt_written
from optlog.core.stats import ALPHA, Batch, holm, mean, sig, tier

WORKLOAD_KEYS = frozenset({
    "dataset", "input_len", "output_len", "num_prompts", "prompts", "prompt_count", "random_input_len",
    "random_output_len", "random_range_ratio", "request_rate", "model", "workload", "tokenizer",
})
SOFTWARE_KEYS = frozenset({
    "sglang", "vllm", "torch", "cuda", "driver", "flashinfer", "trtllm", "tensorrt_llm", "nccl", "triton",
    "commit", "image", "software", "python",
})
IGNORED_KEYS = C.IGNORED_KEYS


def must_agree_across_groups(key: str) -> bool:
    k = key.lower()
    return k in WORKLOAD_KEYS or k in SOFTWARE_KEYS or "version" in k or k.endswith("_ver")


class RunRow:
    """One counting run: typed labels, canonical label text (for selection), metrics."""

    __slots__ = ("id", "labels", "metrics", "canon", "config")

    def __init__(self, id: int, labels: dict[str, Any], metrics: dict[str, float],  # noqa: A002
                 canon: dict[str, str] | None = None, config: dict[str, str] | None = None) -> None:
        self.id, self.labels, self.metrics = id, labels, metrics
        self.canon = canon if canon is not None else {k: L.canonical(v) for k, v in labels.items()}
        self.config = config or {}  # rendered values and templates that are not labels (core.comparable)

    def names(self) -> dict[str, str]:
        """Everything the run names (core.comparable.effective): labels over its config."""
        return C.effective(self.canon, self.config)


class Evidence:
    """Runs that count (succeeded, not invalidated), indexed by label for fast selection."""

    def __init__(self, runs: list[RunRow]) -> None:
        self.runs = {r.id: r for r in runs}
        self.index: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.metric_names: set[str] = set()
        self.uids: dict[int, str] = {}  # each run's identity across clones (service.runfiles)
        for r in runs:
            for k, v in r.canon.items():
                self.index[k][v].add(r.id)
            self.metric_names.update(r.metrics)

    def select(self, sel: dict[str, Any]) -> set[int]:
        if not sel:
            return set(self.runs)
        out: set[int] | None = None
        for k, v in sel.items():
            ids = self.index.get(k, {}).get(L.canonical(v), set())
            out = set(ids) if out is None else out & ids
            if not out:
                return set()
        return out or set()

    def has_label(self, key: str, value: Any = None) -> bool:
        if key not in self.index:
            return False
        return value is None or L.canonical(value) in self.index[key]


# ---------------------------------------------------------------- one comparison at one level


@dataclass
class AtomEval:
    kind: str  # two | ratio_range | one | one_range | means | none
    node: Any
    tier: str = "margin"
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    op: str = ">"
    c: float = 0.0
    lo: float = 0.0
    hi: float = 0.0
    handle: int | None = None
    ci_handle: int | None = None  # the rank tier's bootstrap interval of the ratio
    p: float | None = None
    ci: list[float] | None = None
    outcome: str = "unclear"
    reason: str = ""
    method: str = ""
    estimate: float | None = None
    # what the numbers are of: `quantity` (in the expression's terms: "a/b", "a.tflops"), the
    # `statistic` the estimate and the interval are (ratio of means, geometric mean, …), and the
    # `threshold` it is judged against (a number, or [lo, hi] for a range)
    quantity: str = ""
    statistic: str = ""
    threshold: Any = None
    scale: float = 1.0  # x/y = quantity / scale: the tests run on x vs scale·y (`a < b*0.05`: 0.05)


def _side_values(node: Any, runs: list[RunRow], default: str | None, ceilings: dict[str, float]) -> list[float]:
    out = []
    for r in runs:
        def look(ref: E.Ref, r: RunRow = r) -> float | None:
            if ref.group is None:
                return ceilings.get(ref.name)
            return r.metrics.get(ref.metric or default or "")
        v = E.num_eval(node, look)
        if v is not None and not math.isnan(v):
            out.append(v)
    return out


def _plan_atom(node: Any, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float],
               margin: float, batch: Batch) -> AtomEval:
    if isinstance(node, E.InRange):
        lo, hi = E.const_value(node.lo, ceilings), E.const_value(node.hi, ceilings)
        ae = AtomEval("none", node, lo=lo or 0.0, hi=hi or 0.0)
        rp = E.ratio_parts(node.operand)
        ae.threshold = [ae.lo, ae.hi]
        if rp is not None:
            gx, gy = next(iter(E.groups(rp[0]))), next(iter(E.groups(rp[1])))
            ae.kind, ae.x, ae.y = "ratio_range", _side_values(rp[0], grp[gx], default, ceilings), \
                _side_values(rp[1], grp[gy], default, ceilings)
            ae.quantity = quantity_name(rp[0], rp[1])
        elif len(E.groups(node.operand)) == 1:
            g = next(iter(E.groups(node.operand)))
            ae.kind, ae.x = "one_range", _side_values(node.operand, grp[g], default, ceilings)
            ae.quantity = quantity_name(node.operand)
        else:
            ae.kind = "means"
    else:
        assert isinstance(node, E.Cmp)
        lg, rg = E.groups(node.left), E.groups(node.right)
        ae = AtomEval("none", node, op=node.op)
        rp_l = E.ratio_parts(node.left)
        rp_r = E.ratio_parts(node.right)
        if len(lg) == 1 and len(rg) == 1 and lg != rg:
            ae.kind = "two"
            ae.x = _side_values(node.left, grp[next(iter(lg))], default, ceilings)
            ae.y = _side_values(node.right, grp[next(iter(rg))], default, ceilings)
            # `a > b*1.1`, `2*a < b`: the quantity is the ratio of the group references, judged
            # against the ratio of the constants (x/y = (kl·a)/(kr·b) op 1  ⇔  a/b op kr/kl)
            ls, rs = E.scaled_ref(node.left, ceilings), E.scaled_ref(node.right, ceilings)
            if ls and rs and ls[1] > 0 and rs[1] > 0:
                ae.quantity, ae.scale = quantity_name(ls[0], rs[0]), rs[1] / ls[1]
            else:
                ae.quantity = quantity_name(node.left, node.right)
            ae.threshold = ae.scale
        elif (rp_l is not None and not rg) or (rp_r is not None and not lg):
            ratio, const, op = (rp_l, node.right, node.op) if rp_l is not None else (rp_r, node.left, E.FLIP[node.op])
            assert ratio is not None
            k = E.const_value(const, ceilings)
            if k is None or k <= 0:
                ae.kind = "means"
            else:
                gx, gy = next(iter(E.groups(ratio[0]))), next(iter(E.groups(ratio[1])))
                ae.kind, ae.op = "two", op
                ae.x = _side_values(ratio[0], grp[gx], default, ceilings)
                ae.y = [v * k for v in _side_values(ratio[1], grp[gy], default, ceilings)]
                ae.quantity, ae.scale, ae.threshold = quantity_name(ratio[0], ratio[1]), k, k
        elif len(lg) == 1 and not rg or len(rg) == 1 and not lg:
            side, const, op = (node.left, node.right, node.op) if lg else (node.right, node.left, E.FLIP[node.op])
            k = E.const_value(const, ceilings)
            if k is None:
                ae.kind = "means"
            else:
                g = next(iter(E.groups(side)))
                ae.kind, ae.op, ae.c = "one", op, k
                ae.x = _side_values(side, grp[g], default, ceilings)
                ae.quantity, ae.threshold = quantity_name(side), k
        else:
            ae.kind = "means"

    if ae.kind == "means":
        ae.tier = "margin"
        return ae
    n = min(len(ae.x), len(ae.y)) if ae.kind in ("two", "ratio_range") else len(ae.x)
    if n == 0:
        ae.kind = "none"
        return ae
    ae.tier = tier(n)
    if ae.tier != "margin" and len(set(ae.x)) == 1 and (ae.kind in ("one", "one_range") or len(set(ae.y)) == 1):
        # every value equal on each side (0/1 indicators, a constant counter): no spread, so no
        # test applies (a t-test divides by a zero spread); the comparison is decided exactly
        ae.tier = "exact"
        return ae
    positive = all(v > 0 for v in ae.x) and all(v > 0 for v in ae.y)
    if ae.tier != "margin" and not positive and ae.kind != "two":
        ae.tier = "margin"  # logs and ratios need positive values
    if ae.kind == "two":
        if ae.tier == "rank":
            ae.handle = batch.add("mwu", ae.x, ae.y)
            if positive:
                ae.ci_handle = batch.add("boot_ratio", ae.x, ae.y)
        elif ae.tier == "welch":
            if positive:
                ae.handle = batch.add("welch_log", ae.x, ae.y)
            else:
                ae.tier = "margin"
    elif ae.kind == "ratio_range":
        if ae.tier == "rank":
            ae.handle = batch.add("boot_ratio", ae.x, ae.y)
        elif ae.tier == "welch":
            ae.handle = batch.add("welch_log", ae.x, ae.y)
    elif ae.kind == "one":
        if ae.tier != "margin":
            if ae.c > 0:
                ae.handle = batch.add("t_log1", ae.x, ae.c)
            else:
                ae.tier = "margin"
    elif ae.kind == "one_range":
        if ae.tier == "rank":
            ae.handle = batch.add("boot_mean", ae.x)
        elif ae.tier == "welch":
            ae.handle = batch.add("t_log1", ae.x, 1.0)
    return ae


def _margin_cmp(lv: float, rv: float, op: str, m: float) -> tuple[str, str]:
    up = op in (">", ">=")
    hi_t, lo_t = rv * (1 + m) if rv >= 0 else rv * (1 - m), rv * (1 - m) if rv >= 0 else rv * (1 + m)
    if lv > hi_t:
        out = "holds" if up else "fails"
    elif lv < lo_t:
        out = "fails" if up else "holds"
    else:
        out = "unclear"
    return out, f"{fmt_verdict(lv)} vs {fmt_verdict(rv)}, within the ±{fmt_share(m)} margin" if out == "unclear" else f"{fmt_verdict(lv)} vs {fmt_verdict(rv)}"


def _range_outcome(cl: float, ch: float, lo: float, hi: float, m: float, use_margin: bool) -> str:
    if lo <= cl and ch <= hi:
        return "holds"
    flo, fhi = (lo * (1 - m), hi * (1 + m)) if use_margin else (lo, hi)
    if ch < flo or cl > fhi:
        return "fails"
    return "unclear"


def quantity_name(x: Any, y: Any = None) -> str:
    """The tested quantity in the expression's own terms: `a/b`, `a.tflops/b.tflops`, `a.tflops`."""
    def one(n: Any) -> str:
        t = E.unparse(n)
        return t[1:-1] if isinstance(n, E.Bin) and t.startswith("(") else t
    if y is None:
        return one(x)
    wrap = lambda n, t: f"({t})" if isinstance(n, E.Bin) else t  # noqa: E731
    return f"{wrap(x, one(x))}/{wrap(y, one(y))}"


def _ci_text(ci: list[float] | None) -> str:
    return f", 95% CI {fmt_interval(ci[0], ci[1])}" if ci else ""


def _exact_cmp(lv: float, rv: float, op: str) -> str:
    ok = {">": lv > rv, ">=": lv >= rv, "<": lv < rv, "<=": lv <= rv}[op]
    return "holds" if ok else "fails"


def _decide(ae: AtomEval, m: float, results: list[Any]) -> None:
    """Fill outcome/p/ci/estimate/reason (Holm-adjusted p already in ae.p for rank-tier comparisons).

    The estimate and the interval are always of `ae.quantity` as `ae.statistic` says (a ratio a/b
    for two groups, whatever scale the expression writes; a mean for one group), so the numbers a
    reader sees beside each other are of one thing."""
    if ae.kind == "none":
        ae.outcome, ae.reason, ae.method = "unclear", "no values", ""
        return
    r: Any = results[ae.handle] if ae.handle is not None else None
    if ae.kind == "means":
        ae.method = "means"
        ae.outcome, ae.reason = "unclear", "cannot evaluate"
        return
    q = ae.quantity
    if ae.kind == "two":
        mx, my = mean(ae.x), mean(ae.y)
        up = ae.op in (">", ">=")
        k = ae.scale
        ratio_ok = my > 0 and mx >= 0
        ae.statistic = "ratio of means"
        ae.estimate = k * mx / my if my else None
        est = f"{q} = {fmt_verdict(ae.estimate)} vs {fmt_verdict(k)}" if ratio_ok else f"{fmt_verdict(mx)} vs {fmt_verdict(my)}"
        if ae.tier == "exact":
            ae.method = "exact"
            ae.outcome = _exact_cmp(mx, my, ae.op)
            ae.reason = f"all values equal: {est}"
        elif ae.tier == "rank":
            ae.method = "mann-whitney"
            if ae.ci_handle is not None:
                ae.ci = [k * c for c in results[ae.ci_handle]]
            higher = mx > my
            tail = f"{est}{_ci_text(ae.ci)}"
            if ae.p is not None and ae.p < ALPHA:
                ae.outcome = "holds" if higher == up else "fails"
                ae.reason = f"Mann–Whitney {fmt_p(ae.p)} (Holm); {tail}"
            else:
                ae.outcome = "unclear"
                ae.reason = f"within run-to-run noise: Mann–Whitney {fmt_p(ae.p)} (Holm); {tail}"
        elif ae.tier == "welch":
            ae.method = "welch-log"
            p, d, lo, hi = r
            ae.statistic = "ratio of geometric means"
            ae.p, ae.ci, ae.estimate = p, [k * math.exp(lo), k * math.exp(hi)], k * math.exp(d)
            eff = math.exp(d) - 1
            tail = f"{q} = {fmt_verdict(ae.estimate)} (geometric means){_ci_text(ae.ci)} vs {fmt_verdict(k)}"
            if p < ALPHA and abs(eff) >= m:
                ae.outcome = "holds" if (d > 0) == up else "fails"
                ae.reason = f"Welch on logs {fmt_p(p)}, effect {fmt_share(eff, signed=True)}; {tail}"
            else:
                ae.outcome = "unclear"
                why = f"effect {fmt_share(eff, signed=True)} below the ±{fmt_share(m)} minimum" if abs(eff) < m else "not significant"
                ae.reason = f"Welch on logs {fmt_p(p)}, {why}; {tail}"
        else:
            ae.method = "margin"
            ae.outcome, why = _margin_cmp(mx, my, ae.op, m)
            ae.reason = (est + (f", within the ±{fmt_share(m)} margin" if ae.outcome == "unclear" else "")
                         if ratio_ok else why) + f" (margin rule ±{fmt_share(m)}, n={len(ae.x)}+{len(ae.y)})"
        return
    if ae.kind == "ratio_range":
        mx, my = mean(ae.x), mean(ae.y)
        ratio = mx / my if my else math.inf
        ae.estimate, ae.statistic = ratio, "ratio of means"
        rng = f"[{fmt_written(ae.lo)}, {fmt_written(ae.hi)}]"
        if ae.tier == "exact":
            ae.method = "exact"
            ae.outcome = "holds" if ae.lo <= ratio <= ae.hi else "fails"
            ae.reason = f"all values equal: {q} = {fmt_verdict(ratio)} vs {rng}"
        elif ae.tier == "rank":
            ae.method = "bootstrap"
            cl, ch = r
            ae.ci = [cl, ch]
            ae.outcome = _range_outcome(cl, ch, ae.lo, ae.hi, m, False)
            where = {"holds": "inside", "fails": "outside", "unclear": "straddles"}[ae.outcome]
            ae.reason = f"{q} = {fmt_verdict(ratio)}, 95% CI {fmt_interval(cl, ch)} {where} {rng}"
        elif ae.tier == "welch":
            ae.method = "welch-log"
            p, d, lo, hi = r
            cl, ch = math.exp(lo), math.exp(hi)
            ae.p, ae.ci, ae.estimate, ae.statistic = p, [cl, ch], math.exp(d), "ratio of geometric means"
            ae.outcome = _range_outcome(cl, ch, ae.lo, ae.hi, m, True)
            ae.reason = f"{q} = {fmt_verdict(ae.estimate)} (geometric means), 95% CI {fmt_interval(cl, ch)} vs {rng} (±{fmt_share(m)})"
        else:
            ae.method = "margin"
            ae.outcome = _range_outcome(ratio, ratio, ae.lo, ae.hi, m, True)
            ae.reason = f"{q} = {fmt_verdict(ratio)} vs {rng}" + (f", within the ±{fmt_share(m)} margin" if ae.outcome == "unclear" else "")
        return
    if ae.kind == "one":
        mx = mean(ae.x)
        ae.estimate, ae.statistic = mx, "mean"
        up = ae.op in (">", ">=")
        if ae.tier == "exact":
            ae.method = "exact"
            ae.outcome = _exact_cmp(mx, ae.c, ae.op)
            ae.reason = f"all values equal: {q} = {fmt_verdict(mx)} vs {fmt_verdict(ae.c)}"
        elif ae.tier in ("rank", "welch"):
            p, d, lo, hi = r
            if ae.tier == "welch":
                ae.p = p
            p_used = ae.p if ae.p is not None else p
            ae.method = "t-log" + ("+holm" if ae.tier == "rank" else "")
            eff = math.exp(d) - 1
            ae.statistic, ae.estimate = "geometric mean", ae.c * math.exp(d)
            ae.ci = [ae.c * math.exp(lo), ae.c * math.exp(hi)]
            min_eff = ae.tier == "welch"
            tail = f"{q} = {fmt_verdict(ae.estimate)} (geometric mean){_ci_text(ae.ci)} vs {fmt_verdict(ae.c)}"
            if p_used < ALPHA and (not min_eff or abs(eff) >= m):
                ae.outcome = "holds" if (d > 0) == up else "fails"
                ae.reason = f"t on logs {fmt_p(p_used)}; {tail}"
            else:
                ae.outcome = "unclear"
                ae.reason = f"t on logs {fmt_p(p_used)}, not decided; {tail}"
        else:
            ae.method = "margin"
            ae.outcome, why = _margin_cmp(mx, ae.c, ae.op, m)
            ae.reason = f"{q} = {why}"
        return
    if ae.kind == "one_range":
        mx = mean(ae.x)
        ae.estimate, ae.statistic = mx, "mean"
        rng = f"[{fmt_written(ae.lo)}, {fmt_written(ae.hi)}]"
        if ae.tier == "exact":
            ae.method = "exact"
            ae.outcome = "holds" if ae.lo <= mx <= ae.hi else "fails"
            ae.reason = f"all values equal: {q} = {fmt_verdict(mx)} vs {rng}"
            return
        if ae.tier == "rank":
            cl, ch = r
            ae.method = "bootstrap"
        elif ae.tier == "welch":
            p, d, lo, hi = r
            cl, ch = math.exp(lo), math.exp(hi)
            ae.method = "t-log"
            ae.estimate, ae.statistic = math.exp(d), "geometric mean"
        else:
            cl = ch = mx
            ae.method = "margin"
        if ae.method != "margin":
            ae.ci = [cl, ch]
        ae.outcome = _range_outcome(cl, ch, ae.lo, ae.hi, m, ae.tier != "rank")
        ae.reason = f"{q} = {fmt_verdict(ae.estimate)}{_ci_text(ae.ci)} vs {rng}"


def _means_eval(node: Any, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float],
                m: float) -> tuple[str, str]:
    """Fallback for forms without a test: each reference replaced by its group mean, margin rules."""
    cache: dict[str, float | None] = {}

    def look(ref: E.Ref) -> float | None:
        if ref.group is None:
            return ceilings.get(ref.name)
        if ref.name not in cache:
            vals = [r.metrics[ref.metric or default or ""] for r in grp[ref.group] if (ref.metric or default or "") in r.metrics]
            cache[ref.name] = mean(vals) if vals else None
        return cache[ref.name]

    if isinstance(node, E.InRange):
        v, lo, hi = E.num_eval(node.operand, look), E.num_eval(node.lo, look), E.num_eval(node.hi, look)
        if v is None or lo is None or hi is None:
            return "unclear", "no values"
        out = _range_outcome(v, v, lo, hi, m, True)
        return out, f"{fmt_verdict(v)} vs [{fmt_written(lo)}, {fmt_written(hi)}] (judged on means)"
    lv, rv = E.num_eval(node.left, look), E.num_eval(node.right, look)
    if lv is None or rv is None:
        return "unclear", "no values"
    out, why = _margin_cmp(lv, rv, node.op, m)
    return out, why + " (judged on means)"


def _combine(node: Any, outcomes: dict[int, str]) -> str:
    if isinstance(node, (E.Cmp, E.InRange)):
        return outcomes[id(node)]
    if isinstance(node, E.Not):
        o = _combine(node.operand, outcomes)
        return {"holds": "fails", "fails": "holds"}.get(o, "unclear")
    items = [_combine(i, outcomes) for i in node.items]
    if isinstance(node, E.And):
        if "fails" in items:
            return "fails"
        return "holds" if all(i == "holds" for i in items) else "unclear"
    if "holds" in items:
        return "holds"
    return "fails" if all(i == "fails" for i in items) else "unclear"


# ---------------------------------------------------------------- comparability


def _ref_value(values: list[Any], a_vals: list[Any], b_vals: list[Any], two: bool) -> Any:
    """The value most runs share, preferring one both groups have; ties → the smallest value."""
    ca, cb, ct = Counter(a_vals), Counter(b_vals), Counter(values)
    cands = sorted(ct, key=lambda v: L.sort_key(v) if v is not None else (2, 0.0, ""))
    return max(cands, key=lambda v: ((min(ca[v], cb[v]) if two else ct[v]), ct[v], v is not None))


def _fmt_label(k: str, v: Any) -> str:
    return f"{k}={'(none)' if v is None else v}"


def comparability(a_runs: list[RunRow], b_runs: list[RunRow], exclude: set[str], two: bool) -> dict[int, str]:
    """Runs that cannot be pooled with the rest of the level → reason. See the module doc."""
    keys: set[str] = set()
    for r in a_runs + b_runs:
        keys.update(r.labels)
        keys.update(r.config)
    keys -= exclude
    keys -= IGNORED_KEYS | C.FLAG_KEYS
    bad: dict[int, list[str]] = defaultdict(list)
    for k in sorted(keys):
        def val(r: RunRow) -> Any:
            return r.canon[k] if k in r.canon else r.config.get(k)

        def shown(r: RunRow) -> Any:
            return r.labels[k] if k in r.labels else r.config.get(k)
        if must_agree_across_groups(k):
            av, bv = [val(r) for r in a_runs], [val(r) for r in b_runs]
            allv = av + bv
            if len(set(allv)) <= 1:
                continue
            ref = _ref_value(allv, av, bv, two)
            for r in a_runs + b_runs:
                if val(r) != ref:
                    bad[r.id].append(f"{_fmt_label(k, shown(r))} where the others have {_fmt_label(k, ref)}")
        else:
            for grp in (a_runs, b_runs):
                vs = [val(r) for r in grp]
                if len(set(vs)) <= 1:
                    continue
                ref = _ref_value(vs, vs, [], False)
                for r in grp:
                    if val(r) != ref:
                        bad[r.id].append(f"{_fmt_label(k, shown(r))} where the others have {_fmt_label(k, ref)}")
    return {rid: "; ".join(rs) for rid, rs in bad.items()}


# ---------------------------------------------------------------- predictions


def _group_name(sel: dict[str, Any], fallback: str) -> str:
    if not sel:
        return fallback
    if len(sel) == 1:
        k, v = next(iter(sel.items()))
        return str(v) if isinstance(L.typed(v), str) else f"{k}={v}"
    return ",".join(f"{k}={v}" for k, v in sel.items())


def _selector_text(sel: dict[str, Any]) -> str:
    """A selector with its labels named (`m=16`), for messages about what matched nothing."""
    return ",".join(f"{k}={v}" for k, v in sel.items()) or "all runs"


@dataclass
class _Plan:
    pid: str
    pred: Any
    node: Any
    atoms: list[Any]
    levels: list[dict[str, Any]] = field(default_factory=list)  # level record + atom evals
    skipped: list[dict[str, Any]] = field(default_factory=list)
    not_comparable: list[dict[str, Any]] = field(default_factory=list)
    untested_reason: str | None = None


ENGINE_VERSION = 2  # bump when the semantics or the record's shape change: cached verdicts are then redone


def evaluate(preds: list[Any], ev: Evidence, ceilings: dict[str, float],
             cached: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Evaluate predictions (core.hypothesis.Prediction) against the evidence; results by prediction id.

    `cached`: earlier results by prediction id (each carrying its `evidence` fingerprint); a prediction
    whose fingerprint is unchanged reuses its earlier result (same inputs, same deterministic output)
    instead of being recomputed, so judging again without new evidence costs no statistics."""
    out: dict[str, dict[str, Any]] = {}
    todo = []
    for p in preds:
        fp = fingerprint(p, ev, ceilings)
        old = (cached or {}).get(p.id)
        if old is not None and old.get("evidence") == fp:
            out[p.id] = old
        else:
            todo.append((p, fp))
    batch = Batch()
    plans = [(_plan(p, ev, ceilings, batch), fp) for p, fp in todo]
    results = batch.run()
    for pl, fp in plans:
        res = _finish(pl, results, ceilings)
        res["evidence"] = fp
        out[pl.pid] = res
    return {p.id: out[p.id] for p in preds}


def candidate_runs(pred: Any, ev: Evidence) -> set[int]:
    """The runs a prediction's result can depend on: every counting run its groups select. A clone
    that has these runs (same ids, labels, metrics) reaches the same result and fingerprint."""
    try:
        node = E.parse_expect(pred.expect, None)
        used = sorted(E.groups(node))
    except E.ExprError:
        used = ["a", "b"]
    ids: set[int] = set()
    for g in used:
        ids |= ev.select(pred.a if g == "a" else pred.b)
    return ids


def fingerprint(pred: Any, ev: Evidence, ceilings: dict[str, float]) -> str:
    """A hash of everything a prediction's result depends on: the engine version, the prediction as
    written, the ceilings, and the candidate runs (ids, labels, metric values).

    Only what a fresh clone has too (issue 31): a run's labels and metrics travel in its evidence
    file, but what a launched run was rendered with (`raw`, its `config`) and its launch stay in
    the database where it ran, so hashing them made every verdict on launched runs differ in a
    clone and re-commit. A run's config never changes after it is recorded, so its id stands for it."""
    ids = candidate_runs(pred, ev)
    spec = pred.model_dump(mode="json", exclude={"status", "history", "created"})
    h = hashlib.sha1(json.dumps([ENGINE_VERSION, spec, sorted(ceilings.items())], sort_keys=True).encode())
    runs = ev.runs
    h.update("\n".join(f"{i}{sorted(runs[i].canon.items())}{sorted(runs[i].metrics.items())}"
                        for i in sorted(ids)).encode())
    return h.hexdigest()[:16]


def _needed_metrics(node: Any, default: str | None) -> dict[str, set[str]]:
    need: dict[str, set[str]] = defaultdict(set)
    for r in E.refs(node, groups_only=True):
        need[r.group or ""].add(r.metric or default or "")
    return need


def _drop_concurrent(pred: Any, ev: Evidence, ids: dict[str, set[int]], pl: "_Plan") -> None:
    """Runs that overlapped another launch (label `concurrent`) disturb each other: not comparable,
    unless the prediction selects on the label itself (`--a concurrent=true`, `--where concurrent…`)."""
    key = L.CONCURRENT
    if key in (pred.a or {}) or key in (pred.b or {}) or (pred.where and key in str(pred.where)):
        return
    for g in sorted(ids):
        flagged = {i for i in ids[g] if ev.runs[i].canon.get(key) == "true"}
        for i in sorted(flagged):
            pl.not_comparable.append({"run": i, "group": g, "level": {},
                                      "reason": "ran concurrently with another launch (concurrent=true)"})
        ids[g] -= flagged


def _plan(pred: Any, ev: Evidence, ceilings: dict[str, float], batch: Batch) -> _Plan:
    node = E.parse_expect(pred.expect, None)
    pl = _Plan(pred.id, pred, node, E.atoms(node))
    used = E.groups(node)
    two = used == {"a", "b"}
    need = _needed_metrics(node, pred.metric)
    where = E.parse_where(pred.where) if pred.where else None
    sels = {"a": pred.a, "b": pred.b}
    ids: dict[str, set[int]] = {}
    for g in sorted(used):
        s = ev.select(sels[g])
        if where is not None:
            s = {i for i in s if E.where_match(where, ev.runs[i].labels)}
        ids[g] = s
    if two:
        both = ids["a"] & ids["b"]
        for i in sorted(both):
            pl.not_comparable.append({"run": i, "group": "a,b", "level": {}, "reason": "matches both a and b"})
        ids["a"] -= both
        ids["b"] -= both
    _drop_concurrent(pred, ev, ids, pl)
    if not all(ids.values()):
        pl.untested_reason = "no run matches " + " / ".join(
            f"{g} ({_selector_text(sels[g])})" for g in sorted(used) if not ids[g])
        return pl
    # metric presence
    for g in sorted(used):
        for met in sorted(need[g]):
            if met not in ev.metric_names:
                pl.untested_reason = f"no run has metric {met!r}"
                return pl
    # levels
    per = pred.per
    by_level: dict[str, dict[str, list[RunRow]]] = defaultdict(lambda: defaultdict(list))
    level_val: dict[str, Any] = {}
    for g in sorted(used):
        for i in sorted(ids[g]):
            r = ev.runs[i]
            if per:
                if per not in r.labels:
                    pl.not_comparable.append({"run": i, "group": g, "level": {}, "reason": f"no {per} label"})
                    continue
                key = L.canonical(r.labels[per])
                level_val[key] = L.typed(r.labels[per])
            else:
                key = ""
            by_level[key][g].append(r)
    exclude = set(pred.a) | set(pred.b) | ({per} if per else set())
    for key in sorted(by_level, key=lambda k: L.sort_key(level_val.get(k, k))):
        grp = by_level[key]
        level = {per: level_val[key]} if per else {}
        missing = [g for g in sorted(used) if not grp.get(g)]
        if missing:
            present = [g for g in sorted(used) if grp.get(g)]
            pl.skipped.append({"level": level, "reason": f"only in {', '.join(present)}"
                               + f" ({', '.join(_group_name(sels[g], g) for g in present)}); no runs in {', '.join(missing)}"})
            continue
        a_runs, b_runs = list(grp.get("a", [])), list(grp.get("b", []))
        bad = comparability(a_runs, b_runs, exclude, two)
        for g, runs in (("a", a_runs), ("b", b_runs)):
            for r in runs:
                if r.id in bad:
                    pl.not_comparable.append({"run": r.id, "group": g, "level": level, "reason": bad[r.id]})
        use = {g: [r for r in grp.get(g, []) if r.id not in bad] for g in ("a", "b")}
        # runs that lack a metric the expression needs for their group
        for g in sorted(used):
            use[g] = [r for r in use[g] if all(mm in r.metrics for mm in need[g])]
        rec: dict[str, Any] = {"level": level, "grp": use, "atoms": [], "incomparable_only": None}
        lost = [g for g in sorted(used) if not use[g]]
        if lost:
            reasons = sorted({bad[r.id] for g in lost for r in grp.get(g, []) if r.id in bad})
            if reasons:
                rec["incomparable_only"] = "only not-comparable evidence in " + ", ".join(lost) + ": " + "; ".join(reasons[:3])
            else:
                pl.skipped.append({"level": level, "reason": f"no run in {', '.join(lost)} has "
                                   + ", ".join(sorted(need[lost[0]]))})
                continue
        else:
            for at in pl.atoms:
                rec["atoms"].append(_plan_atom(at, use, pred.metric, ceilings, pred.margin, batch))
        pl.levels.append(rec)
    if not pl.levels:
        pl.untested_reason = "no level has runs in both groups" if pl.skipped else "no comparable runs"
    return pl


def _finish(pl: _Plan, results: list[Any], ceilings: dict[str, float]) -> dict[str, Any]:
    pred = pl.pred
    m = pred.margin
    # Holm across levels, per comparison, for the rank tier
    for ai in range(len(pl.atoms)):
        fam = [(rec["atoms"][ai]) for rec in pl.levels if rec["atoms"] and rec["atoms"][ai].tier == "rank"
               and rec["atoms"][ai].kind in ("two", "one")]
        raw = []
        for ae in fam:
            r: Any = results[ae.handle] if ae.handle is not None else None
            raw.append(r if isinstance(r, float) else r[0])
        for ae, padj in zip(fam, holm(raw)):
            ae.p = padj
    levels_out: list[dict[str, Any]] = []
    loaded_ids: set[int] = set()
    load_notes: list[str] = []
    used_runs: set[int] = set()
    default = pred.metric
    tested: dict[str, str | None] = {"a": None, "b": None}
    for ref in E.refs(pl.node, groups_only=True):
        if ref.group in tested and tested[ref.group] is None:
            tested[ref.group] = ref.metric or default
    for rec in pl.levels:
        use = rec["grp"]
        lv: dict[str, Any] = {"level": rec["level"]}
        # a, b: the means of the metric the expression reads of each group (its first reference
        # there), so `a.bound_compute > 0.5` shows bound_compute, not the default metric
        va = [r.metrics[tested["a"]] for r in use["a"] if tested["a"] and tested["a"] in r.metrics]
        vb = [r.metrics[tested["b"]] for r in use["b"] if tested["b"] and tested["b"] in r.metrics]
        ma, mb = (mean(va) if va else None), (mean(vb) if vb else None)
        lv["a"], lv["b"] = sig(ma, 6), sig(mb, 6)
        lv["ratio"] = sig(ma / mb, 4) if ma is not None and mb else None
        lv["n"] = {g: len(use[g]) for g in sorted(E.groups(pl.node))}
        values: dict[str, list[float]] = {}
        for ref in E.refs(pl.node, groups_only=True):
            met = ref.metric or default or ""
            values.setdefault(ref.name, [r.metrics[met] for r in use[ref.group or "a"] if met in r.metrics])
        lv["values"] = values
        lv["runs"] = {g: [r.id for r in use[g]] for g in ("a", "b") if use[g]}
        if rec["incomparable_only"]:
            lv.update(ci=None, p=None, outcome="unclear", reason=rec["incomparable_only"], method=None)
            levels_out.append(lv)
            continue
        for g in ("a", "b"):
            used_runs.update(r.id for r in use[g])
        outcomes: dict[int, str] = {}
        tests = []
        for node, ae in zip(pl.atoms, rec["atoms"]):
            if ae.kind == "means":
                ae.outcome, ae.reason = _means_eval(node, use, default, ceilings, m)
                ae.method = "means"
            else:
                _decide(ae, m, results)
            outcomes[id(node)] = ae.outcome
            tests.append(ae)
        lv["outcome"] = _combine(pl.node, outcomes)
        if len(tests) == 1:
            ae = tests[0]
            lv.update(_numbers(ae))
            if "geometric" in ae.statistic:  # the group centres the estimate is of, beside the means
                geo = {g: _gmean(v) for g, v in (("a", va), ("b", vb)) if v}
                lv["geo"] = {g: sig(x, 6) for g, x in geo.items() if x is not None}
            lv["p"] = sig(ae.p, 3)
            lv["method"] = ae.method
            lv["reason"] = ae.reason
        else:
            lv["ci"], lv["p"], lv["method"] = None, None, "compound"
            lv["reason"] = "; ".join(f"{E.unparse(t.node)}: {t.outcome} ({t.reason})" for t in tests)
            lv["tests"] = [{"expect": E.unparse(t.node), "outcome": t.outcome, "p": sig(t.p, 3), **_numbers(t),
                            "method": t.method, "reason": t.reason}
                           for t in tests]
        loaded = [f"{g} run {r.id}" for g in ("a", "b") for r in use[g] if r.canon.get("loaded") == "true"]
        if loaded:  # runs measured under load (runs.hostload) are named with the numbers they gave
            lv["reason"] += f" [measured under load: {', '.join(loaded)}]"
        if (differs := LS.group_difference(use["a"], use["b"])) is not None:  # core.loadshare
            lv["reason"] += f" [{differs}]"
            load_notes.append(differs)
        levels_out.append(lv)
        loaded_ids.update(r.id for g in ("a", "b") for r in use[g] if r.canon.get("loaded") == "true")

    outs = [lv["outcome"] for lv in levels_out]
    if pl.untested_reason or not levels_out:
        status = "untested"
    elif "fails" in outs:
        status = "falsified"
    elif all(o == "holds" for o in outs):
        status = "confirmed"
    else:
        status = "inconclusive"
    res = {
        "id": pred.id,
        "version": pred.version,
        "expect": pred.expect,
        "metric": pred.metric,
        "a": dict(pred.a),
        "b": dict(pred.b),
        "per": pred.per,
        "where": pred.where,
        "status": status,
        "edited_after_evidence": bool(pred.edited_after_evidence),
        "levels": levels_out,
        "skipped": pl.skipped,
        "not_comparable": pl.not_comparable,
        "runs": sorted(used_runs),
    }
    if loaded_ids:  # present only when it matters, so verdicts on a quiet machine read as before
        res["loaded_runs"] = sorted(loaded_ids)
    if load_notes:  # the groups got clearly different CPU shares or GPU sharing (core.loadshare)
        res["load_differs"] = load_notes[0] if len(set(load_notes)) == 1 else f"{load_notes[0]} (and at other levels)"
    res["explanation"] = explain(res, pl.untested_reason)
    return res


def _gmean(values: list[float]) -> float | None:
    """The geometric mean (None unless every value is positive)."""
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _numbers(ae: AtomEval) -> dict[str, Any]:
    """The tested quantity, its estimate and interval (of the same statistic) and the threshold."""
    thr = ae.threshold
    return {"quantity": ae.quantity or None, "statistic": ae.statistic or None,
            "estimate": sig(ae.estimate, 6) if ae.estimate is not None and math.isfinite(ae.estimate) else None,
            "ci": [sig(c) for c in ae.ci] if ae.ci else None,
            "threshold": [sig(t) for t in thr] if isinstance(thr, list) else sig(thr)}


def _display(quantity: str, a_name: str, b_name: str, metric: str | None) -> str:
    """A quantity as a reader names it: `a/b` → `tp4pp2/tp8`; `a` alone → its metric and group."""
    if quantity == "a/b":
        return f"{a_name}/{b_name}"
    if quantity == "b/a":
        return f"{b_name}/{a_name}"
    one = re.fullmatch(r"([ab])(?:\.(\w+))?", quantity)
    if one:
        met = one.group(2) or metric or "?"
        return f"{met} ({a_name if one.group(1) == 'a' else b_name})"
    return quantity


def explain(res: dict[str, Any], untested_reason: str | None = None) -> str:
    """One line a person reads: `falsified: at concurrency 64, 256, 512 tp4pp2/tp8 = 0.30, 0.39, 0.47;
    expected a > b (v1)`."""
    st = res["status"]
    ver = f"v{res['version']}" + (", edited after evidence" if res.get("edited_after_evidence") else "")
    tail = f"expected {res['expect']} ({ver})"
    if st == "untested":
        return f"untested: {untested_reason or 'no evidence'}; {tail}"
    levels = res["levels"]
    pick = {"falsified": "fails", "confirmed": "holds", "inconclusive": "unclear"}[st]
    chosen = [lv for lv in levels if lv["outcome"] == pick] or levels
    per = res.get("per")
    common = {k for k in set(res["a"]) & set(res["b"]) if L.canonical(res["a"][k]) == L.canonical(res["b"][k])}
    a_name = _group_name({k: v for k, v in res["a"].items() if k not in common}, "a")
    b_name = _group_name({k: v for k, v in res["b"].items() if k not in common}, "b")
    lvtxt = ", ".join(str(next(iter(lv["level"].values()))) for lv in chosen) if per else ""
    where = f"at {per} {lvtxt} " if per else ""
    quants = {lv.get("quantity") for lv in chosen}
    if len(quants) == 1 and None not in quants and all(lv.get("estimate") is not None for lv in chosen):
        stat = chosen[0].get("statistic") or ""
        note = f" ({stat})" if "geometric" in stat else ""
        if all(lv.get("method") == "exact" for lv in chosen):
            note = " (all values equal)"
        nums = f"{_display(chosen[0]['quantity'], a_name, b_name, res.get('metric'))} = " \
            + ", ".join(fmt_verdict(lv["estimate"]) for lv in chosen) + note
    else:
        nums = "; ".join(lv["reason"] for lv in chosen[:2])
    parts = [f"{st}: {where}{nums}"]
    if st == "inconclusive":
        parts.append(chosen[0]["reason"])
    parts.append(tail)
    if res["skipped"]:
        sk = ", ".join(str(next(iter(s["level"].values()), "")) for s in res["skipped"] if s["level"])
        parts.append(f"skipped {per} {sk} (one group only)" if sk else "some levels skipped")
    if res["not_comparable"]:
        parts.append(f"{len(res['not_comparable'])} run(s) not comparable")
    if res.get("loaded_runs"):
        n, of = len(res["loaded_runs"]), len(res["runs"])
        parts.append("every run it used was measured under load" if n >= of else
                     f"{n} of its {of} runs were measured under load")
    if res.get("load_differs"):
        parts.append(res["load_differs"])
    return "; ".join(parts)


def hypothesis_status(pred_statuses: list[str], live_runs: bool) -> str:
    """§5: falsified when any prediction is; confirmed when all are; no evidence → testing/open."""
    if "falsified" in pred_statuses:
        return "falsified"
    if pred_statuses and all(s == "confirmed" for s in pred_statuses):
        return "confirmed"
    if any(s in ("confirmed", "inconclusive") for s in pred_statuses):
        return "inconclusive"
    return "testing" if live_runs else "open"


def run_matches(pred: Any, labels: dict[str, Any]) -> bool:
    """Would a run with these labels be evidence for the prediction (in group a or b)?"""
    where = None
    if pred.where:
        try:
            where = E.parse_where(pred.where)
        except E.ExprError:
            return False
    if where is not None and not E.where_match(where, labels):
        return False
    for sel in (pred.a, pred.b):
        if all(k in labels and L.canonical(labels[k]) == L.canonical(v) for k, v in sel.items()):
            return True
    return False


# ---------------------------------------------------------------- rivals


def comparison_key(pred: Any) -> tuple[Any, ...]:
    def norm(sel: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, L.canonical(v)) for k, v in sel.items()))
    return (pred.metric, norm(pred.a), norm(pred.b), pred.per or "", (pred.where or "").replace(" ", ""))


def region_of(pred: Any, ceilings: dict[str, float]) -> E.Region | None:
    try:
        node = E.parse_expect(pred.expect, None)
    except E.ExprError:
        return None
    return E.ratio_region(node, ceilings)


def rival_overlaps(mine: list[Any], theirs: list[Any], ceilings: dict[str, float]) -> list[tuple[Any, Any]]:
    """Pairs (my prediction, rival prediction) on the same comparison whose predicted regions of a/b
    overlap: an experiment that cannot tell the two hypotheses apart. Swapped a/b is recognised."""
    out = []
    for p in mine:
        rp = region_of(p, ceilings)
        if rp is None:
            continue
        kp = comparison_key(p)
        for q in theirs:
            rq = region_of(q, ceilings)
            if rq is None:
                continue
            kq = comparison_key(q)
            if kq == kp:
                pass
            elif (kq[0], kq[2], kq[1], kq[3], kq[4]) == kp:
                rq = (1 / rq[1] if rq[1] not in (0, math.inf) else (0.0 if rq[1] == math.inf else math.inf),
                      1 / rq[0] if rq[0] != 0 else math.inf)
            else:
                continue
            if E.regions_overlap(rp, rq):
                out.append((p, q))
    return out


def fmt_region(r: E.Region) -> str:
    lo, hi = r
    if hi == math.inf:
        return f"a/b > {fmt_written(lo)}"
    if lo == 0:
        return f"a/b < {fmt_written(hi)}"
    return f"a/b in [{fmt_written(lo)}, {fmt_written(hi)}]"


def rival_message(p: Any, q: Any, rival: str, ceilings: dict[str, float]) -> str:
    """The warning for two rival predictions whose expected outcomes overlap: the experiment cannot
    tell the hypotheses apart."""
    rp, rq = region_of(p, ceilings), region_of(q, ceilings)
    regions = f" ({fmt_region(rp)} vs {fmt_region(rq)})" if rp and rq else ""
    return (f"{p.id} and {q.id} (rival {rival}) predict overlapping outcomes{regions}: "
            "this experiment does not discriminate between them")
