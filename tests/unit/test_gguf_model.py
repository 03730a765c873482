"""The random-weight GGUF writer: files read back with gguf's own reader carry the shapes, types,
hyper-parameters and tokenizer llama.cpp needs; the facts match the parameter count; bad shapes are
refused; a real llama-server (when one is built) loads and serves what it writes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from optlog.testing.gguf_model import PRESETS, ModelShape, write_model  # noqa: E402


def _read(path: Path) -> tuple[dict, dict]:
    r = gguf.GGUFReader(str(path))
    fields = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
    tensors = {t.name: t for t in r.tensors}
    return fields, tensors


def test_dense_f16_reads_back_with_llama_shapes(tmp_path: Path) -> None:
    shape = PRESETS["tiny"]
    s = write_model(tmp_path / "m.gguf", shape, seed=3)
    fields, tensors = _read(tmp_path / "m.gguf")
    assert fields["general.architecture"] == "llama"
    assert fields["llama.embedding_length"] == 64
    assert fields["llama.block_count"] == 2
    assert fields["llama.feed_forward_length"] == 128
    assert fields["llama.attention.head_count"] == 4
    assert fields["llama.attention.head_count_kv"] == 2
    assert fields["llama.rope.dimension_count"] == 16
    assert fields["general.file_type"] == 1
    assert len(fields["tokenizer.ggml.tokens"]) == 512
    assert fields["tokenizer.ggml.model"] == "llama"
    # gguf reports ggml's order (in, out): numpy's (out, in) reversed
    assert list(tensors["blk.1.attn_k.weight"].shape) == [64, 2 * 16]
    assert list(tensors["blk.0.ffn_down.weight"].shape) == [128, 64]
    assert list(tensors["output.weight"].shape) == [64, 512]
    assert tensors["blk.0.attn_q.weight"].tensor_type == gguf.GGMLQuantizationType.F16
    assert tensors["blk.0.attn_norm.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    assert len(tensors) == 1 + 2 * 9 + 2
    # random, not zeros, and each tensor different; norms are ones
    q = np.asarray(tensors["blk.0.attn_q.weight"].data, dtype=np.float32)
    v = np.asarray(tensors["blk.1.attn_q.weight"].data, dtype=np.float32)
    assert 0.01 < float(q.std()) < 0.04 and not np.array_equal(q, v)
    assert np.all(np.asarray(tensors["output_norm.weight"].data) == 1.0)
    total = sum(int(t.n_elements) for t in tensors.values())
    assert s["facts"]["total_params"] == total
    assert s["bytes"] == (tmp_path / "m.gguf").stat().st_size


def test_moe_q8_0_has_expert_tensors_and_active_params(tmp_path: Path) -> None:
    shape = PRESETS["tiny-moe"]
    s = write_model(tmp_path / "moe.gguf", shape, wtype="q8_0")
    fields, tensors = _read(tmp_path / "moe.gguf")
    assert fields["llama.expert_count"] == 8 and fields["llama.expert_used_count"] == 2
    assert fields["general.file_type"] == 7
    assert list(tensors["blk.0.ffn_gate_exps.weight"].shape) == [64, 32, 8]
    assert list(tensors["blk.0.ffn_down_exps.weight"].shape) == [32, 64, 8]
    assert list(tensors["blk.0.ffn_gate_inp.weight"].shape) == [64, 8]
    assert tensors["blk.0.ffn_up_exps.weight"].tensor_type == gguf.GGMLQuantizationType.Q8_0
    # every Q8_0 block's scale is a finite positive f16 (blocks are never split by the tiling)
    raw = np.asarray(tensors["blk.1.ffn_up_exps.weight"].data, dtype=np.uint8).reshape(-1, 34)
    scales = raw[:, :2].copy().view(np.float16).astype(np.float32)
    assert np.all(np.isfinite(scales)) and np.all(scales > 0)
    f = s["facts"]
    exp = 2 * 3 * 8 * 32 * 64
    assert f["expert_params"] == exp
    dense_part = f["total_params"] - exp - 512 * 64        # everything but experts and the embedding
    assert f["active_params"] == pytest.approx(dense_part + exp * 2 / 8)
    assert f["param_bytes"] == pytest.approx(34 / 32)
    assert f["kv_bytes_per_token"] == 2 * 2 * 2 * 16 * 2


def test_vocab_fields_are_copied(tmp_path: Path) -> None:
    src = tmp_path / "vocab.gguf"
    write_model(src, replace(PRESETS["tiny"], n_vocab=300))
    s = write_model(tmp_path / "m.gguf", PRESETS["tiny"], vocab=src)
    fields, tensors = _read(tmp_path / "m.gguf")
    assert s["shape"]["n_vocab"] == 300
    assert len(fields["tokenizer.ggml.tokens"]) == 300
    assert fields["tokenizer.ggml.bos_token_id"] == 1
    assert list(tensors["token_embd.weight"].shape) == [64, 300]


def test_presets_have_the_advertised_sizes() -> None:
    assert 8.0e9 < PRESETS["dense-8b"].facts()["total_params"] < 8.2e9
    moe = PRESETS["moe-128x512"].facts()
    assert 9.5e9 < moe["total_params"] < 10.5e9 and 0.7e9 < moe["active_params"] < 1.0e9


@pytest.mark.parametrize("kw, msg", [({"n_embd": 65}, "multiple of n_head"),
                                     ({"n_head_kv": 3}, "multiple of n_head_kv"),
                                     ({"n_expert": 4, "n_expert_used": 5}, "n_expert_used")])
def test_bad_shapes_are_refused(kw: dict, msg: str) -> None:
    base = dict(n_embd=64, n_layer=1, n_ff=32, n_head=4, n_head_kv=2)
    with pytest.raises(ValueError, match=msg):
        ModelShape(**{**base, **kw})


def test_cli_writes_and_refuses(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "optlog.testing.gguf_model", str(tmp_path / "a.gguf"),
                         "--preset", "tiny", "--n-layer", "1"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["shape"]["n_layer"] == 1
    bad = subprocess.run([sys.executable, "-m", "optlog.testing.gguf_model", str(tmp_path / "b.gguf"),
                          "--preset", "tiny", "--type", "q8_0", "--n-embd", "72", "--n-head", "4"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "Q8_0" in bad.stderr
    assert not (tmp_path / "b.gguf").exists() or (tmp_path / "b.gguf").stat().st_size == 0


def _llama_server() -> str | None:
    cand = os.environ.get("OPTLOG_LLAMA_SERVER") or shutil.which("llama-server")
    if cand:
        return cand
    cache = Path.home() / ".cache" / "optlog" / "llama.cpp"
    found = sorted(p for p in cache.glob("**/llama-server") if p.is_file()) if cache.exists() else []
    return str(found[-1]) if found else None


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tiny", "tiny-moe"])
def test_llama_server_loads_and_serves_it(tmp_path: Path, preset: str) -> None:
    exe = _llama_server()
    if not exe:
        pytest.skip("no llama-server built (scripts/llama-server.sh builds one into ~/.cache/optlog)")
    import httpx
    m = tmp_path / "m.gguf"
    write_model(m, PRESETS[preset])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "server.log").open("w")
    p = subprocess.Popen([exe, "-m", str(m), "--host", "127.0.0.1", "--port", str(port), "-t", "1", "-c", "256",
                          "--parallel", "1"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert p.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", timeout=60,
                       json={"prompt": "hello world", "max_tokens": 8, "ignore_eos": True})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == 8
    finally:
        p.terminate()
        p.wait(10)
