"""Issue 28, item 5: a scaling claim judged on the real llama-server. Prefill time-to-first-token of
Gemma 3 270M against the prompt length (64–512 tokens, three interleaved cycles, one request of one
output token each: ~3,000 prompt tokens, ~45 s on a loaded 2-core machine at ~15 ms a token)
grows in proportion: the fitted exponent is near 1 (1.0–1.1 measured here), so "proportional, neither
fixed nor quadratic" (`k(input_len) in [0.5, 1.5]`: the interval from 12 single requests on a loaded
machine is about ±0.2) is confirmed and a rival "fixed per-request overhead" (`k(input_len) < 0.3`)
is falsified. The test checks optlog's judgement of what was measured (recomputed from the interval
it reports), not the measurement itself, which a loaded machine may blur. Everything goes
through the MCP face in-process (bench, hypothesis, prediction, verdict, compare), as an agent works."""

from __future__ import annotations

import pytest

from _realserver import LlamaServer
from tests._face import face, ok

pytestmark = pytest.mark.slow

LENGTHS = (64, 128, 256, 512)
CYCLES = 3


def test_ttft_grows_in_proportion_to_the_prompt_length(ws, monkeypatch, real_server):
    binary, model = real_server
    server = LlamaServer(binary, model, parallel=1, ctx=1024)
    try:
        with face(ws, monkeypatch) as tool:
            for cycle in range(CYCLES):  # interleaved: every length once per cycle, so drift spreads evenly
                for n in LENGTHS:
                    ok(tool("bench", {"url": server.url, "concurrency": "1", "num_prompts": 1, "input_len": n,
                                      "output_len": 1, "warmup": 1 if cycle == 0 and n == LENGTHS[0] else 0,
                                      "labels": {"config": "gemma", "repeat": cycle}}))
            ok(tool("hypothesis_add", {"title": "Prefill is linear in the prompt", "id": "linear"}))
            ok(tool("hypothesis_add", {"title": "TTFT is a fixed per-request overhead", "id": "overhead",
                                       "rivals": ["linear"]}))
            ok(tool("prediction_add", {"hypothesis": "linear", "expect": "k(input_len) in [0.5, 1.5]",
                                       "metric": "mean_ttft_ms", "a": ["config=gemma"]}))
            added = ok(tool("prediction_add", {"hypothesis": "overhead", "expect": "k(input_len) < 0.3",
                                               "metric": "mean_ttft_ms", "a": ["config=gemma"]}))
            assert added["warnings"] == []  # the regions are apart: the experiment discriminates
            res = {r["hypothesis"]: r for r in ok(tool("verdict", {"all": True, "detail": True}))["results"]}
            table = ok(tool("compare", {"metric": "mean_ttft_ms", "by": "input_len", "fit": "k"}))
    finally:
        server.stop()
    lin = res["linear"]["predictions"][0]
    lv = lin["levels"][0]
    assert lv["design"] == "fit" and lv["fit"]["levels"] == len(LENGTHS) and lv["fit"]["n"] == len(LENGTHS) * CYCLES
    assert lv["ci"][0] < lv["estimate"] < lv["ci"][1], lv
    print(f"\nTTFT ~ input_len^k: k = {lv['estimate']}, 95% CI {lv['ci']}, r2 = {lv['fit']['r2']}")
    # The measurement is the server's (1.0-1.1 on an idle machine); under load a spike can widen the
    # interval, so the test checks optlog's judgement of what was measured, recomputed from the interval
    # it reports, and only that TTFT grows with the prompt (8x the tokens: no load hides that).
    lo, hi = lv["ci"]
    assert lv["estimate"] > 0, lv
    want = "confirmed" if 0.5 <= lo and hi <= 1.5 else "falsified" if hi < 0.5 or lo > 1.5 else "inconclusive"
    assert lin["status"] == want and res["linear"]["status"] == want, (want, lin["explanation"])
    assert "k(input_len) = " in lv["reason"]
    if want == "confirmed":
        assert "inside in [0.5, 1.5]" in lv["reason"]
    over = res["overhead"]["predictions"][0]
    olo, ohi = over["levels"][0]["ci"]
    want_over = "confirmed" if ohi < 0.3 else "falsified" if olo >= 0.3 else "inconclusive"
    assert over["status"] == want_over, (want_over, over["levels"][0])
    if want_over == "falsified":
        assert "outside < 0.3" in over["levels"][0]["reason"]
    # compare shows the same fit
    (row,) = table["rows"]
    assert row["fit"]["k"] == pytest.approx(lv["estimate"], rel=1e-3) and row["fit"]["n"] == len(LENGTHS) * CYCLES
