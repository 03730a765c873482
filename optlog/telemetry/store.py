"""Compact storage of samples in `telemetry_chunk` rows.

One row holds up to CHUNK samples of one field of one GPU. Times are one extra field per GPU
(`_t`): int32 millisecond deltas from the row's `t0` (a steady tick compresses to almost nothing);
values are float32 (NaN where a sample lacks the field), zlib-compressed. A leading version byte
keeps the format open to change.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Any, Iterable

from optlog.store.telemetryrows import chunks, insert_chunks

if TYPE_CHECKING:
    import numpy as np

CHUNK = 8192
V_FLOAT32 = 1
V_TIME_MS = 2
TIME_FIELD = "_t"


def pack_values(values: Iterable[float]) -> bytes:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    a = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float32)
    return bytes([V_FLOAT32]) + zlib.compress(a.tobytes(), 6)


def pack_times(times: np.ndarray, t0: float) -> bytes:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    ms = np.round((np.asarray(times, dtype=np.float64) - t0) * 1000.0).astype(np.int64)
    d = np.diff(ms, prepend=0).astype(np.int32)
    return bytes([V_TIME_MS]) + zlib.compress(d.tobytes(), 6)


def unpack(data: bytes, t0: float = 0.0) -> np.ndarray:
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    v, body = data[0], zlib.decompress(data[1:])
    if v == V_FLOAT32:
        return np.frombuffer(body, dtype=np.float32).astype(np.float64)
    if v == V_TIME_MS:
        return t0 + np.cumsum(np.frombuffer(body, dtype=np.int32).astype(np.int64)) / 1000.0
    raise ValueError(f"unknown telemetry chunk format {v}")


def columns(samples: list[dict[str, Any]]) -> dict[str, dict[str, np.ndarray]]:
    """Samples (dicts) → per GPU uuid: {"_t": times, field: values (NaN where absent)}."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    by_gpu: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        by_gpu.setdefault(str(s.get("uuid") or s.get("gpu")), []).append(s)
    nan = math.nan
    out: dict[str, dict[str, np.ndarray]] = {}
    for g, rows in by_gpu.items():
        rows.sort(key=_t_of)
        keys: set[str] = set()
        for r in rows:
            keys.update(r)
        keys -= _NOT_VALUES
        cols = {TIME_FIELD: np.array([r["t"] for r in rows], dtype=np.float64)}
        for k in sorted(keys):
            vals = [r.get(k, nan) for r in rows]
            try:
                cols[k] = np.array(vals, dtype=np.float64)
            except (TypeError, ValueError):  # None or a non-number somewhere: slow path
                cols[k] = np.array([float(v) if isinstance(v, (int, float)) else nan for v in vals], dtype=np.float64)
        out[g] = cols
    return out


def _t_of(r: dict[str, Any]) -> float:
    return r["t"]


_NOT_VALUES = {"t", "gpu", "uuid", "as"}


def write_columns(s: Any, cols_by_gpu: dict[str, dict[str, np.ndarray]], *, run_id: int | None,
                  launch_id: int | None) -> int:
    """Add chunk rows for the columns; returns the number of rows. Uses a bulk insert (fast)."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    rows: list[dict[str, Any]] = []
    for gpu, cols in cols_by_gpu.items():
        t = cols[TIME_FIELD]
        for a in range(0, len(t), CHUNK):
            tt = t[a:a + CHUNK]
            if not len(tt):
                continue
            t0 = float(tt[0])
            n = len(tt)
            rows.append(dict(run_id=run_id, launch_id=launch_id, gpu=gpu, field=TIME_FIELD, t0=t0, n=n,
                             data=pack_times(tt, t0)))
            for k, v in cols.items():
                if k == TIME_FIELD:
                    continue
                vv = v[a:a + CHUNK]
                if np.all(np.isnan(vv)):
                    continue
                rows.append(dict(run_id=run_id, launch_id=launch_id, gpu=gpu, field=k, t0=t0, n=n,
                                 data=pack_values(vv)))
    insert_chunks(s, rows)
    return len(rows)


def write_samples(s: Any, samples: list[dict[str, Any]], *, run_id: int | None, launch_id: int | None) -> int:
    return write_columns(s, columns(samples), run_id=run_id, launch_id=launch_id)


def read_columns(s: Any, *, run_id: int | None = None, launch_id: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The stored columns of a run (or of a launch's samples outside any point)."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    parts: dict[str, dict[float, dict[str, np.ndarray]]] = {}
    for c in chunks(s, run_id=run_id, launch_id=launch_id):
        seg = parts.setdefault(c.gpu, {}).setdefault(c.t0, {})
        seg[c.field] = unpack(c.data, c.t0)
    out: dict[str, dict[str, np.ndarray]] = {}
    for gpu, segs in parts.items():
        keys = sorted({k for seg in segs.values() for k in seg})
        cols: dict[str, list[np.ndarray]] = {k: [] for k in keys}
        for t0 in sorted(segs):
            seg = segs[t0]
            n = len(seg.get(TIME_FIELD, []))
            for k in keys:
                cols[k].append(seg[k] if k in seg else np.full(n, np.nan))
        out[gpu] = {k: np.concatenate(v) if v else np.array([]) for k, v in cols.items()}
    return out
