"""Shared pieces of the result parsers: the result type, tolerant JSON reading, number handling.

Pure functions of bytes: no database, no files written, no network.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from optlog.errors import BadInput

CANONICAL = (
    "completed", "failed", "duration_s", "request_throughput", "input_throughput", "output_throughput",
    "total_token_throughput", "mean_inflight",
    *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2e_latency") for s in ("mean", "median", "p90", "p95", "p99")),
)
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

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "source": self.source, "labels": self.labels, "metrics": self.metrics}


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
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        s = v.strip().lower()
        if s in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if s in ("-inf", "-infinity"):
            return -math.inf
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


def load_json(doc: Doc, parser: str) -> Any:
    """Parse a whole-file JSON document. Python's reader accepts bare Infinity/NaN (SGLang writes them)."""
    try:
        return json.loads(doc.text)
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
            whole = json.loads(stripped)
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
            o = json.loads(s)
        except json.JSONDecodeError as e:
            raise BadInput(f"{parser}: line {n}: not JSON: {e.msg}", file=doc.path, line=n, column=e.colno) from None
        except RecursionError:
            raise BadInput(f"{parser}: line {n}: JSON nested too deeply", file=doc.path, line=n, code="too_deep") from None
        if not isinstance(o, dict):
            raise fail(parser, doc.path, "not a JSON object", line=n)
        yield n, o


def _single_json(s: str) -> bool:
    try:
        json.loads(s)
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
