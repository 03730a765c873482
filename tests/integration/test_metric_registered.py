"""A new first-class metric is one file plus one registration line (issue 46, item 4): the
`energy_per_token_j` of tests/fixtures/metrics/energy.py (J/token, lower is better, AIPerf's
`energy_per_token`), registered here with `metrics.register(energy.METRIC)`, is seen by every face:
`run import` reads it (the generic reader by its name, the AIPerf reader by AIPerf's spelling),
`run record` stores it and `compare` says its unit and that lower is better, `prediction add` (through
the MCP face) takes it, the verdict and the report show it in J/token. Without the line, the readers
keep it as a tool's own `raw.` figure, and its unit is what its name's `_j` suffix says (J)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _face import face, ok
from optlog.core import metrics

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "metrics" / "energy.py"
AIPERF = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "aiperf" / "profile_export_aiperf.synthetic-fixture-c128.json"
NAME = "energy_per_token_j"


def _load_fixture() -> Any:
    s = importlib.util.spec_from_file_location("optlog_test_energy_metric", FIXTURE)
    assert s is not None and s.loader is not None
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return mod


@pytest.fixture
def energy() -> Iterator[Any]:
    mod = _load_fixture()
    metrics.register(mod.METRIC)  # the one registration line
    try:
        yield mod
    finally:
        metrics.unregister(mod.METRIC.name)


def _files(ws: Any) -> tuple[str, str]:
    (ws.root / "gen.jsonl").write_text(json.dumps({"output_throughput": 900.0, "completed": 40, NAME: 0.41}) + "\n")
    doc = json.loads(AIPERF.read_text())
    doc["energy_per_token"] = {"unit": "J/token", "avg": 0.37, "p50": 0.36, "p90": 0.45, "p99": 0.5}
    (ws.root / "ap.json").write_text(json.dumps(doc))
    return "gen.jsonl", "ap.json"


def _imported(ws: Any, *files: str) -> list[dict[str, float]]:
    out = []
    for f, fmt in zip(files, ("generic", "aiperf")):
        d = ws.j("run", "import", f, "--format", fmt, "--json")
        out += [r["metrics"] for r in d["runs"]]
    return out


def test_without_the_line_it_is_a_tools_own_figure(ws: Any) -> None:
    assert NAME not in metrics.METRICS and metrics.unit(NAME) == "J" and metrics.better(NAME) is None
    gen, ap = _imported(ws, *_files(ws))
    assert NAME not in gen and gen["raw." + NAME] == 0.41
    assert NAME not in ap and ap["raw.energy_per_token"] == 0.37
    for cfg, v in (("fast", 0.3), ("slow", 0.6)):
        ws.cli("run", "record", "--label", f"config={cfg}", "--metric", f"{NAME}={v}")
    assert f"median {NAME} (J) by config" in ws.cli("compare", "--metric", NAME, "--by", "config").out


def test_every_face_sees_it(ws: Any, energy: Any, monkeypatch: Any) -> None:
    gen, ap = _imported(ws, *_files(ws))
    assert gen[NAME] == 0.41 and "raw." + NAME not in gen  # the generic reader: a canonical figure
    assert ap[NAME] == 0.37  # the AIPerf reader: by AIPerf's spelling
    with face(ws, monkeypatch) as call:
        ok(call("hypothesis_add", {"title": "Batching saves energy", "id": "energy"}))
        p = ok(call("prediction_add", {"hypothesis": "energy", "expect": "a < 0.5", "metric": NAME,
                                       "a": {"config": "fast"}, "detail": True}))
        assert p["preregistration"] != "post-hoc", p
        for cfg, vals in (("fast", (0.30, 0.31, 0.32)), ("slow", (0.60, 0.62, 0.61))):
            for v in vals:
                ws.cli("run", "record", "--label", f"config={cfg}", "--metric", f"{NAME}={v}", "--metric",
                       "output_throughput=1000")
        v = ok(call("verdict", {"detail": True}))["results"][0]
    assert "0.31 J/token" in v["summary"], v["summary"]
    r = ws.cli("compare", "--metric", NAME, "--by", "config")
    assert f"median {NAME} (J/token; lower is better) by config" in r.out, r.out
    assert v["status"] == "confirmed", v
    ws.cli("report", "--out", "report.md")
    text = (ws.root / "report.md").read_text()
    assert "energy\\_per\\_token\\_j (J/token) (tested)" in text, text
