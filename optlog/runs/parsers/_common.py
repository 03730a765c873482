"""Shared pieces of the result parsers: the result type, tolerant JSON reading, number handling.

Pure functions of bytes: no database, no files written, no network.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import yaml

from optlog.core import jsondoc
from optlog.core import metrics as metrics_registry
from optlog.core.numfmt import fmt_num, fmt_sig, fmt_written, plural
from optlog.core.units import unit
from optlog.errors import BadInput
from optlog.yamlio import parse_text

# The canonical figures (every reader fills them in under optlog's name) and the figures that identify
# a measurement (`ParsedResult.measurement`: those every reader of one tool computes alike from any of
# the files that tool writes for it) are the metrics registry's: optlog.core.metrics.canonical() and
# identity().
# the decimal places of the rounded exports optlog reads (AIPerf's and genai-perf's CSV): what a
# result read at full precision is also identified by (`ParsedResult.rounded_measurement`)
EXPORT_PLACES = 2
RAW_PREFIX = "raw."
# Lists longer than this (per-request arrays: ttfts, itls, generated texts…) are not kept in `raw`.
MAX_RAW_LIST = 64


@dataclass
class ParsedResult:
    """One benchmark result: what `run import` stores as one run and the launcher stores per point."""

    labels: dict[str, Any]
    metrics: dict[str, float]
    raw: dict[str, Any]
    tool: str
    source: str  # "path" plus ":line N" (JSONL), "#benchmark N" (GuideLLM) — where in the file it came from
    file: str = ""
    index: int = 0  # 0-based position of this result inside its file
    status: str = "succeeded"  # "failed" when the file says no request completed (see `settle`)
    notes: list[str] = field(default_factory=list)  # corrections made, each with its reason
    # decimal places the file printed its figures with (AIPerf's and genai-perf's CSV: 2), None when
    # they are the tool's own floats: a rounded export of a run matches that run by `rounds`
    decimals: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "source": self.source, "labels": self.labels, "metrics": self.metrics,
                **({"status": self.status} if self.status != "succeeded" else {}),
                **({"notes": self.notes} if self.notes else {})}

    def measurement(self, places: int | None = None) -> str | None:
        """What identifies this measurement by its content: the canonical figures (6 significant
        digits; `places` decimal places instead, for `rounded_measurement`) with the duration or
        request count among them, or None when the result has too few to tell one measurement from
        another. The same run read from two files (a sweep's `run=0.json` and its `summary.json`,
        llmperf's summary and its per-request file) has the same identity, whatever its file, labels
        or the figures only one of them carries."""
        figs = {k: self.metrics[k] for k in metrics_registry.identity() if k in self.metrics}
        if len(figs) < 3 or not ({"duration_s", "completed"} & figs.keys()):
            return None
        text = ";".join((f"{k}={v:.6g}" if places is None else f"{k}={v:.{places}f}")  # machine format
                        for k, v in sorted(figs.items()))
        return hashlib.sha256(f"{self.tool}|{text}".encode()).hexdigest()[:24]

    def rounded_measurement(self) -> str | None:
        """The identity of this measurement at the places a rounded export prints (EXPORT_PLACES:
        AIPerf's and genai-perf's CSV), so that a CSV imported apart from its JSON, before or after
        it, is known as the same run (`rounds` tells it within one import)."""
        return self.measurement(self.decimals if self.decimals is not None else EXPORT_PLACES)

    def rounds(self, other: "ParsedResult") -> bool:
        """This result is `other` exported rounded (the CSV beside a JSON of one run): same tool,
        enough identifying figures to tell a measurement (as `measurement`), each one also in
        `other` and equal to it rounded to this result's decimal places."""
        if self.decimals is None or other.decimals is not None or self.tool != other.tool:
            return False
        figs = {k: self.metrics[k] for k in metrics_registry.identity() if k in self.metrics}
        if len(figs) < 3 or not ({"duration_s", "completed"} & figs.keys()):
            return False
        half = 0.5 * 10.0 ** -self.decimals + 1e-9
        return all(k in other.metrics and abs(other.metrics[k] - v) <= half for k, v in figs.items())


@dataclass
class Doc:
    """One input file handed to a parser."""

    path: str
    data: bytes
    key_map: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        try:
            return self.data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise BadInput(f"not UTF-8 text (byte {e.start})", file=self.path) from None


def fail(parser: str, path: str, what: str, line: int | None = None, field_: str | None = None) -> BadInput:
    """The error for a file a parser cannot read: names the parser, the file, the line and what was missing."""
    where = f"line {line}: " if line is not None else ""
    return BadInput(f"{parser}: {where}{what}", file=path, line=line, field=field_)


def num(v: Any) -> float | None:
    """A finite-or-infinite float from a JSON value (numbers, numeric strings, "inf"); None otherwise."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int) and abs(v) > sys.float_info.max:
        raise PastDouble(str(v) if v.bit_length() < 4000 else "")  # (a YAML whole number of 309+ digits)
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        s = v.strip().lower()
        if s in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if s in ("-inf", "-infinity"):
            return -math.inf
        if past_double(s):  # a numeral no double holds: a typo or worse, never a silent inf
            raise PastDouble(v.strip())
        try:
            f = float(s)
        except ValueError:
            return None
    else:
        return None
    return None if math.isnan(f) else f


def finite(v: Any) -> float | None:
    f = num(v)
    return f if f is not None and math.isfinite(f) else None


def obj(d: dict[str, Any], key: str) -> dict[str, Any]:
    """`d[key]` when it is a JSON object, else an empty one (tools leave sections out or null)."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def arr(d: dict[str, Any], key: str) -> list[Any]:
    """`d[key]` when it is a JSON array, else an empty one."""
    v = d.get(key)
    return v if isinstance(v, list) else []


# a decimal numeral as result files write them (JSON, CSV cells, YAML scalars, table cells)
_NUMERAL = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_LEADING_NUMERAL = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


class PastDouble(ValueError):
    """A numeral past the largest double (`1e400`, `-1E+400`): Python reads it as inf, and the
    readers used to drop the metric silently (issue 42). Every reader refuses it with the file,
    the line and the field (`refuse`); the words inf and infinity stay what they say."""

    def __init__(self, token: str, line: int | None = None, field_: str | None = None) -> None:
        super().__init__(token)
        self.token, self.line, self.field = token, line, field_


def past_double(token: str) -> bool:
    """`token` is a decimal numeral whose value no double holds."""
    s = token.strip()
    if not _NUMERAL.fullmatch(s):
        return False
    return math.isinf(float(s))


def check_numeral(text: str, line: int | None = None, field_: str | None = None, *, leading: bool = False) -> None:
    """PastDouble when `text` (or, with `leading`, the numeral it begins with: `1e400 ± 0.72`) is
    a numeral past the largest double."""
    m = _LEADING_NUMERAL.match(text) if leading else None
    token = m.group(1) if m else text.strip()
    if past_double(token):
        raise PastDouble(token, line, field_)


def refuse(e: PastDouble, parser: str, path: str, text: str | None = None) -> BadInput:
    """The error for a numeral past the largest double: the file, its line (found in `text` when
    the reader did not know it) and field."""
    line, fld = e.line, e.field
    if line is None and text is not None and e.token:
        m = re.search(rf"(?<![\w.]){re.escape(e.token)}(?![\w.])", text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            if fld is None:  # the key the line names (`"key": 1e400`, `key: "1e400"`)
                k = re.search(r"[\"']?([\w.\-/ ]+?)[\"']?\s*[:=]\s*[\"']?$", text[text.rfind("\n", 0, m.start()) + 1:m.start()])
                fld = k.group(1).strip() if k else None
    shown = e.token if len(e.token) <= 40 else e.token[:20] + "…"
    return BadInput(f"{parser}: {shown} is past the largest number optlog computes with (about 1.8e308)",
                    file=path, line=line, field=fld)


def _finite_float(token: str) -> float:
    f = float(token)
    if math.isinf(f):
        raise PastDouble(token)
    return f


def _bounded_int(token: str) -> int:
    n = int(token)
    if len(token.lstrip("-")) > 308 and math.isinf(num(token) or 0.0):
        raise PastDouble(token)
    return n


def loads(text: str, parser: str, path: str, line: int | None = None, field_: str | None = None) -> Any:
    """`json.loads` under the number rule: a numeral past the largest double is refused (file, line),
    while the bare Infinity and NaN some tools write (SGLang) stay what they say."""
    try:
        return jsondoc.loads(text, parse_float=_finite_float, parse_int=_bounded_int)
    except jsondoc.DuplicateKey as e:  # a key said twice: Python's reader kept the last silently
        raise e.in_file(path, line or 1) from None
    except PastDouble as e:
        at = text.find(e.token)
        n = (line or 1) + (text.count("\n", 0, at) if at >= 0 else 0)
        raise refuse(PastDouble(e.token, n, field_), parser, path) from None


def csv_rows(doc: Doc, parser: str, heads: int = 1) -> list[list[str]]:
    """The rows of a CSV file, every cell under the number rule: a numeral past the largest double
    is refused with its line and its column's name (the `heads` header rows of its table: the
    first rows, or the first after a blank one) after its row's name."""
    rows: list[list[str]] = []
    reader = csv.reader(io.StringIO(doc.text))
    head: list[list[str]] = []
    start = 1
    for r in reader:
        if not any(c.strip() for c in r):
            head = []
        else:
            if len(head) < heads:
                head.append(r)
            for i, c in enumerate(r):
                if past_double(c):
                    names = [h[i].strip() for h in head if i < len(h) and h[i].strip()]
                    name = " / ".join(dict.fromkeys(names)) or f"column {i + 1}"
                    first = r[0].strip()
                    row = first if i > 0 and first and not _NUMERAL.fullmatch(first) and r not in head else ""
                    raise refuse(PastDouble(c.strip(), start, f"{row}: {name}" if row else name), parser, doc.path)
        rows.append(r)
        start = reader.line_num + 1
    return rows


def load_yaml(doc: Doc, parser: str) -> Any:
    """A YAML result (GuideLLM's `--output kind=yaml`) under the number rule: a scalar that is a
    numeral past the largest double — plain (`1.0e+400` reads as inf; `1e400` as text a reader took
    for inf) or quoted — is refused with its line and key path, before the document is built."""
    text = doc.text
    # each open collection: [is a mapping, the next scalar is a key, the current key or index]
    stack: list[list[Any]] = []

    def here() -> str:
        return ".".join(str(f[2]) for f in stack if f[2] is not None)

    def step() -> None:  # a value ended in the collection on top
        if stack:
            top = stack[-1]
            if top[0]:
                top[1] = True
            else:
                top[2] += 1

    try:
        for ev in yaml.parse(text):
            if isinstance(ev, yaml.ScalarEvent):
                if stack and stack[-1][0] and stack[-1][1]:
                    stack[-1][1], stack[-1][2] = False, ev.value
                    continue
                if past_double(ev.value):
                    raise refuse(PastDouble(ev.value.strip(), ev.start_mark.line + 1 if ev.start_mark else None,
                                            here() or None), parser, doc.path)
                step()
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([True, True, None] if isinstance(ev, yaml.MappingStartEvent) else [False, False, 0])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
                step()
            elif isinstance(ev, yaml.AliasEvent):
                step()
    except yaml.YAMLError:
        pass  # parse_text reports it with its line and column
    return parse_text(text, doc.path)


def load_json(doc: Doc, parser: str) -> Any:
    """Parse a whole-file JSON document. Python's reader accepts bare Infinity/NaN (SGLang writes them)."""
    try:
        return loads(doc.text, parser, doc.path)
    except json.JSONDecodeError as e:
        raise BadInput(f"{parser}: not JSON: {e.msg}", file=doc.path, line=e.lineno, column=e.colno) from None
    except RecursionError:
        raise BadInput(f"{parser}: JSON nested too deeply", file=doc.path, code="too_deep") from None


def jsonl_objects(doc: Doc, parser: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-blank line. A whole-file JSON object or array of
    objects is accepted too (vLLM `--save-result` writes one object, possibly pretty-printed)."""
    text = doc.text
    stripped = text.strip()
    if not stripped:
        raise fail(parser, doc.path, "the file is empty")
    if stripped.startswith("[") or (stripped.startswith("{") and "\n" in stripped and _single_json(stripped)):
        try:
            whole = loads(stripped, parser, doc.path, text.count("\n", 0, text.find(stripped[:1])) + 1)
        except (json.JSONDecodeError, RecursionError):
            whole = None
        if isinstance(whole, dict):
            yield 1, whole
            return
        if isinstance(whole, list):
            for i, o in enumerate(whole):
                if not isinstance(o, dict):
                    raise fail(parser, doc.path, f"item {i + 1} of the array is not a JSON object")
                yield i + 1, o
            return
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        try:
            o = loads(s, parser, doc.path, n)
        except json.JSONDecodeError as e:
            raise BadInput(f"{parser}: line {n}: not JSON: {e.msg}", file=doc.path, line=n, column=e.colno) from None
        except RecursionError:
            raise BadInput(f"{parser}: line {n}: JSON nested too deeply", file=doc.path, line=n, code="too_deep") from None
        if not isinstance(o, dict):
            raise fail(parser, doc.path, "not a JSON object", line=n)
        yield n, o


def _single_json(s: str) -> bool:
    try:
        jsondoc.loads(s)
        return True
    except (json.JSONDecodeError, RecursionError):
        return False


def clean(v: Any, depth: int = 0) -> Any:
    """A JSON-safe copy for `raw`: non-finite floats become "inf"/"-inf"/"nan" (PostgreSQL's JSON
    rejects bare Infinity), long per-request lists are replaced by a note of their length."""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, dict):
        if depth > 12:
            return "<nested too deep>"
        return {str(k): clean(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_RAW_LIST:
            return f"<list of {len(v)} items not kept>"
        return [clean(x, depth + 1) for x in v]
    return v


def split_flat(obj: dict[str, Any], canonical_same: Iterable[str] = ()) -> tuple[dict[str, float], dict[str, Any]]:
    """Split a flat result object into the tool's numeric keys (as `raw.<key>` metrics, except keys
    whose name is already the canonical one, which are stored once under that name) and the
    non-numeric rest (for `raw`)."""
    same = set(canonical_same)
    metrics: dict[str, float] = {}
    rest: dict[str, Any] = {}
    for k, v in obj.items():
        f = finite(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if f is not None:
            if k not in same:
                metrics[RAW_PREFIX + _metric_key(k)] = f
        else:
            rest[k] = v
    return metrics, rest


_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")


def _metric_key(k: str) -> str:
    """A tool key as a valid metric name (letters, digits, '_', '.', '-'); `request_goodput:` → `request_goodput`."""
    s = _BAD_CHARS.sub("_", str(k)).strip("_")
    return s or "_"


def metric_key(k: str) -> str:
    return _metric_key(k)


def put(metrics: dict[str, float], name: str, value: Any) -> None:
    """Set a canonical metric when the value is a finite number."""
    f = finite(value)
    if f is not None:
        metrics[name] = f


def label_value(v: Any) -> Any:
    """A label value from the file: numbers stay numbers, infinity becomes "inf", text is stripped."""
    f = num(v)
    if f is not None:
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return int(f) if f.is_integer() else f
    if isinstance(v, str):
        return v.strip()
    return v


def set_label(labels: dict[str, Any], key: str, value: Any) -> None:
    if value is None or value == "" or isinstance(value, (dict, list)):
        return
    labels[key] = label_value(value)


def total_token_throughput(metrics: dict[str, float], tin: Any, tout: Any, duration: Any) -> None:
    """(input + output tokens) / duration where the file does not give it (DESIGN.md §4)."""
    if "total_token_throughput" in metrics:
        return
    i, o, d = finite(tin), finite(tout), finite(duration)
    if i is not None and o is not None and d:
        metrics["total_token_throughput"] = (i + o) / d
    elif "input_throughput" in metrics and "output_throughput" in metrics:
        metrics["total_token_throughput"] = metrics["input_throughput"] + metrics["output_throughput"]


# ------------------------------------------------------------------ what a result may claim of itself

# Metrics that only mean something when requests completed: what a tool writes as 0.0 for a run in
# which every request failed is a placeholder, never a measurement.
_MEASURED = re.compile(r"(ttft|tpot|itl|e2el|e2e_latency|latency|throughput|_per_s(ec)?\b|tokens_per|goodput|"
                       r"inflight|concurrency|time_to|inter_token|inter_chunk|ts$|_ts\.|speed|rtfx)", re.I)


def settle(r: ParsedResult) -> ParsedResult:
    """The rules every reader's result obeys (DESIGN.md §4), applied once for all readers:

    - a result with 0 completed requests is a `failed` run carrying its counts and duration only
      (tools write 0.0 for the latencies and throughputs of such a run: placeholders);
    - a measured mean in-flight count above the configured cap (`concurrency`) contradicts the
      file: it is left out, with the reason in `notes`."""
    done = r.metrics.get("completed")
    if done is not None and done == 0:
        gone = sorted(k for k in r.metrics if _MEASURED.search(k) and k not in ("completed", "failed"))
        for k in gone:
            del r.metrics[k]
        r.status = "failed"
        r.notes.append(f"no request completed: a failed run; {plural(len(gone), 'latency/throughput value')} the tool "
                       "wrote for it (placeholders) left out")
        return r
    cap = num(r.labels.get("concurrency"))
    mi = r.metrics.get("mean_inflight")
    if cap is not None and math.isfinite(cap) and cap > 0 and mi is not None and mi > cap * 1.01:
        del r.metrics["mean_inflight"]
        r.notes.append(f"mean_inflight {fmt_sig(mi)} is above the configured concurrency {fmt_written(cap)}: it contradicts "
                       "the file, left out")
    return r


def rate_check(metrics: dict[str, float], name: str, amount: float | None, duration: float | None,
               what: str, notes: list[str], factor: float = 1.5) -> None:
    """Replace metric `name` by amount / duration when the file's own figure is off by more than
    `factor` from it (a tool's time-series mean of a rate can be far from tokens over duration),
    saying so in `notes`; set it from them when absent."""
    if amount is None or not duration:
        return
    want = amount / duration
    have = metrics.get(name)
    if have is None:
        metrics[name] = want
        return
    if want > 0 and have > 0 and max(have / want, want / have) <= factor:
        return
    if want == 0 and have == 0:
        return
    metrics[name] = want
    u = unit(name)
    notes.append(f"{name} {fmt_num(have)}{' ' + u if u else ''} contradicts the file's own {what} over its duration "
                 f"({fmt_num(amount)} / {fmt_num(duration)} s = {fmt_num(want)}{' ' + u if u else ''}): corrected to that")
