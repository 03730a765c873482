"""How a number reads to a person, in one place: every face (CLI tables, the TUI, the markdown of
reports and plan files, plots, telemetry summaries) formats numbers with these, so the same value
reads the same everywhere. Each variant is a named function, and nothing else in optlog formats a
number for a person (`tests/unit/test_numfmt.py` pins every variant's output;
`tests/architecture/test_number_formats.py` fails on an inline `{x:.1f}` elsewhere).

Verdict texts use the tables' style (`fmt_verdict`, `fmt_amount`, `fmt_interval`, with the
metric's unit): a verdict is recorded again only when its judgement changes, never its wording
(service.verdicts compares the structured record, not its texts), so their style may change. The
record's formats (the last section) are frozen: diagnosis reasons and the point labels of the
committed report plots in reports/*.svg; changing them would rewrite history (the case study under
hypotheses/, reports/ and glb5improvement/ would no longer rebuild to what is committed).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from optlog.core.units import unit


def fmt_num(v: Any) -> str:
    """A measured value in a table cell: thousands separated from 1,000, one decimal from 10,
    three significant digits below; `–` for nothing."""
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:
            return "nan"
        a = abs(v)
        if a >= 1e15:  # past any measured figure (a hostile 1e308 would print 400 characters)
            return f"{v:.3g}"
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 10:
            return f"{v:.1f}"
        if a == 0:
            return "0"
        return f"{v:.3g}"
    return str(v)


def fmt_value(v: Any) -> str:
    """A value a person wrote or a run recorded (labels, selectors, metrics) in markdown: whole
    numbers exact (thousands separated), others to about three significant digits; yes/no for
    booleans; dicts as k=v and lists comma-separated."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        f = float(v)
        if not math.isfinite(f):
            return str(v)
        if f.is_integer() and abs(f) < 1e15:
            return f"{int(f):,}" if abs(f) >= 1_000 else str(int(f))
        a = abs(f)
        if a >= 1e15:
            return f"{f:.3g}"
        if a >= 100:
            return f"{f:,.0f}"
        if a >= 1:
            return f"{f:.3g}" if a < 10 else f"{f:.1f}"
        return f"{f:.3g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_value(x) for x in v)
    return str(v)


def fmt_ratio(v: Any, places: int = 3) -> str:
    """A ratio of two measurements (config vs baseline): three decimals (a plan's ratio span: two);
    `–` when there is none."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    return f"{f:.{places}f}" if math.isfinite(f) else "–"


def fmt_written(v: float) -> str:
    """A number a person wrote (a bound, a confidence, a margin, a power limit): its shortest form,
    as written (`0.5`, `1.2`, `300`)."""
    return f"{v:g}"


def fmt_pct(v: float | None) -> str:
    """A percentage (a plan's measured gain): as written, with its sign when negative."""
    if v is None:
        return "–"
    return f"{v:+g}%" if v < 0 else f"{fmt_written(v)}%"


def fmt_gain(lo: float, hi: float) -> str:
    """A plan's expected gain, a percentage or a range of them."""
    return f"{fmt_written(lo)}%" if lo == hi else f"{fmt_written(lo)}–{fmt_written(hi)}%"


def fmt_sig(v: float, digits: int = 4) -> str:
    """A number to `digits` significant digits: narration ("trial 3: output_throughput=1234"), a
    diagnosis's reason, a confidence interval's ends. Never scientific notation (issue 44): where `g`
    would write `9.704e-06` or `1.235e+05` the same digits are written out (`0.000009704`, `123,500`)."""
    return _positional(f"{v:.{digits}g}")


def _positional(text: str) -> str:
    """`1.1e-05` → `0.000011`, `1.235e+05` → `123,500` (text without an exponent is returned as is;
    past 1e15 or below 1e-12 the exponent stays: no measured figure is there, and a hostile 1e308
    must not print 300 digits)."""
    if "e" not in text or text in ("inf", "-inf", "nan"):
        return text
    d = Decimal(text)
    if not (Decimal("1e-12") <= abs(d) < Decimal("1e15")):
        return text
    return format(d, ",f") if abs(d) >= 1 else format(d, "f")


def fmt_measured(name: str, v: Any) -> str:
    """A measured value named in a console line or a note: `output_throughput=13,897 tok/s`,
    `param_bytes=0.92 bytes/parameter`: the tables' style (`fmt_num`), never scientific notation
    for a measured figure, with the unit its name has (core.units)."""
    u = unit(name)
    x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    return f"{name}={fmt_num(x)}" + (f" {u}" if u else "")


def plural(n: Any, one: str, many: str | None = None) -> str:
    """`1 run`, `3 runs`, `1,200 runs` (`many`: an irregular plural): a count with its noun agreeing,
    never `run(s)`. A count that is not a number (unknown: None) is said as it is, plural."""
    num = isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n)
    return f"{fmt_count(n) if num else n} {one if num and n == 1 else (many or one + 's')}"


def fmt_signed(v: float, digits: int | None = None) -> str:
    """A change or a measured gain, its sign always shown (`+12.5`, `-3`, `+75`): as written, or to
    `digits` significant digits (the caller adds the unit)."""
    return f"{v:+g}" if digits is None else f"{v:+.{digits}g}"


def fmt_count(n: float) -> str:
    """A count a person reads (bytes, characters, nodes, points, runs): whole, thousands separated."""
    return f"{n:,.0f}"


def fmt_seconds(s: float) -> str:
    """A measured duration: seconds to one decimal, `12.3s`."""
    return f"{s:.1f}s"


def fmt_duration(s: float) -> str:
    """An estimated duration a person plans by: `45s` under two minutes, `3.5 min` under two hours,
    `2.4 h` past them."""
    if s < 120:
        return f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def fmt_score(v: float) -> str:
    """A plan's ranking score: two decimals, so close scores stay told apart."""
    return f"{v:.2f}"


def fmt_verdict(x: float | None) -> str:
    """A number inside a verdict's text and the report's verdict tables (one style, issues 43/44):
    thousands separated from 100, one decimal from 10, two decimals down to 0.01, three significant
    digits below; never scientific notation for a measured figure."""
    if x is None:
        return "–"
    a = abs(x)
    if a >= 1e15:  # past any measured figure (a hostile 1e308 would print 309 digits)
        return f"{x:.3g}"
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if a >= 0.01 or x == 0 else f"{x:.3g}"


def fmt_amount(x: float | None, unit: str | None = None) -> str:
    """An estimate or a threshold inside a verdict's text, with its unit: `16,420 tok/s`, `0.47`."""
    return fmt_verdict(x) + (f" {unit}" if unit and x is not None else "")


def fmt_interval(lo: float, hi: float, unit: str | None = None) -> str:
    """A confidence interval inside a verdict's text: `[15,770, 17,460] tok/s` (`fmt_verdict`)."""
    return f"[{fmt_verdict(lo)}, {fmt_verdict(hi)}]" + (f" {unit}" if unit else "")


def axis_ticks(values: Any, n: int = 5) -> tuple[float, float, list[float], list[str]]:
    """A plot axis in the tables' style (issue 44): about `n` round positions (1, 2 or 5 × a power
    of ten) covering the finite `values`, labelled as the tables write a value (`fmt_value`: `14,000`,
    `20`, `0.5`, never plotext's `13859.9` or `1.00`). Returns the axis's ends (the outer ticks), the positions
    and their labels; a label the style cannot tell from its neighbour's is left out."""
    xs = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi - lo <= abs(hi) * 1e-9:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * 0.999)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    places = max(0, -math.floor(math.log10(step))) + 1
    pos = [round(i * step, places) for i in range(first, last + 1)]
    ticks: list[float] = []
    labels: list[str] = []
    for p in pos:
        lab = fmt_value(float(p))
        if lab not in labels:
            ticks.append(p)
            labels.append(lab)
    return pos[0], pos[-1], ticks, labels


# ---------------------------------------------------------------- the record's formats (frozen)

def fmt_p(p: float | None) -> str:
    """A p-value, wherever a person reads one (verdict reasons, the report, tune's narration):
    `p=0.034`, two significant digits (`p=0.00027`, `p=3.1e-07`); `p=–` for none. The verdict
    reasons' format, kept as committed."""
    return "p=–" if p is None else f"p={p:.2g}"


def fmt_share(v: float, signed: bool = False, places: int = 0) -> str:
    """A fraction as a percentage (a margin, an effect, a share of peak, a spread): `5%`, `+12%`;
    whole unless `places`. Inside verdict and diagnosis reasons."""
    return f"{v:+.{places}%}" if signed else f"{v:.{places}%}"


def fmt_whole(v: float, signed: bool = False) -> str:
    """A reading shown whole (a counter's percentage inside a diagnosis reason, a mean token count):
    `87`, `+3`."""
    return f"{v:+.0f}" if signed else f"{v:.0f}"


def fmt_diagnosis(v: float) -> str:
    """A number inside a diagnosis reason (the roofline's and the counters' figures): whole from
    100 (thousands separated, as the tables: `32,700 GB`), two decimals from 1, three significant
    digits below."""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return _positional(f"{v:.3g}")


def fmt_axis(v: float) -> str:
    """A plot's point label (the committed report plots): thousands separated from 100, three
    significant digits below."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
