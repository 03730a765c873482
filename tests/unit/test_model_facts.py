"""Issue 30, in-process: work counts read from real model files (GGUF headers written by
optlog.testing.gguf_model, a Hugging Face folder with safetensors headers), counters summarised over
the measured phase, GPM's DRAM % put on the calibrated scale, and a diagnosis that says what decided.
The numbers of the diagnosis cases are the H200's (issue 30: dense 8 B F16 at concurrency 1)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from optlog.core import modelfacts as MF
from optlog.core.diagnosis import diagnose
from optlog.core.windows import join_windows
from optlog.runs.modelfacts import argv_value, from_path, kv_bytes_of, read_gguf_header
from optlog.telemetry.store import TIME_FIELD
from optlog.telemetry.summary import steady

gguf = pytest.importorskip("gguf")
from optlog.testing.gguf_model import PRESETS, write_model  # noqa: E402

# the H200 of issue 30: calibrated copy 4,218 GB/s; GPM's DRAM % is of ~4,850 GB/s
H200 = {"measured_peak_tflops_fp16": 660.9, "peak_tflops_fp16": 989.0, "measured_mem_bw_gbps": 4218.0,
        "mem_bw_gbps": 4800.0, "datasheet_mem_bw_gbps": 4800.0, "measured_dram_counter_full_gbps": 4850.0}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    d = tmp_path_factory.mktemp("gguf")
    return {"dense": write_model(d / "dense.gguf", PRESETS["tiny"]),
            "moe": write_model(d / "moe.gguf", PRESETS["tiny-moe"], wtype="q8_0")}


def test_gguf_header_gives_the_shapes_exact_bytes_and_experts(files: dict[str, dict]) -> None:
    for name, s in files.items():
        mf = from_path(s["path"])
        assert mf is not None
        want = s["facts"]
        for k in ("total_params", "active_params", "kv_bytes_per_token", "n_layer", "n_embd", "expert_params",
                  "n_expert", "n_expert_used"):
            if k in want:
                assert mf.facts[k] == want[k], (name, k)
        assert mf.sources["active_params"] == f"GGUF header of {s['path']}"
        # every byte of tensor data is accounted for by type (norms F32, weights F16 / Q8_0 blocks)
        meta, tensors = read_gguf_header(s["path"])
        assert sum(t["bytes"] for t in mf.by_type.values()) == mf.facts["weight_bytes"]
        assert mf.facts["weight_bytes"] < s["bytes"] < mf.facts["weight_bytes"] + 64 * 1024
        assert len(tensors) == len(list(PRESETS["tiny" if name == "dense" else "tiny-moe"].tensors()))
    moe = from_path(files["moe"]["path"])
    assert moe is not None and set(moe.by_type) == {"Q8_0", "F32"}
    assert moe.by_type["Q8_0"]["bytes"] == moe.by_type["Q8_0"]["params"] * 34 / 32
    # bytes per parameter of what a pass reads: Q8_0's 1.0625 plus the F32 norms and router
    assert 1.0625 < moe.facts["param_bytes"] < 1.2


def test_quantised_and_bf16_types_count_their_block_bytes() -> None:
    meta = {"general.architecture": "llama", "llama.block_count": 1, "llama.embedding_length": 256,
            "llama.attention.head_count": 2, "llama.attention.head_count_kv": 1}
    tensors = [("token_embd.weight", (256, 1000), 12), ("blk.0.attn_q.weight", (256, 256), 12),   # Q4_K
               ("blk.0.ffn_up.weight", (256, 512), 30), ("blk.0.ffn_down.weight", (512, 256), 14),  # BF16, Q6_K
               ("blk.0.attn_norm.weight", (256,), 0)]
    mf = MF.from_gguf(meta, tensors, "test")
    assert mf.by_type["Q4_K"]["bytes"] == (256000 + 65536) / 256 * 144
    assert mf.by_type["BF16"]["bytes"] == 256 * 512 * 2 and mf.by_type["Q6_K"]["bytes"] == 512 * 256 / 256 * 210
    # no output.weight: the head is tied to the embedding, so a token multiplies by it
    assert mf.facts["active_params"] == 256000 + 65536 + 2 * 131072 + 256
    assert mf.facts["kv_bytes_per_token"] == 1 * 1 * (128 + 128) * 2
    assert kv_bytes_of(["llama-server", "-ctk", "q8_0"]) == 34 / 32 and kv_bytes_of(["x", "--kv-cache-dtype", "fp8_e4m3"]) == 1
    assert argv_value(["llama-server", "--model=/m.gguf"], ("-m", "--model")) == "/m.gguf"


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    off, head = 0, {}
    for name, (dt, shape, nbytes) in tensors.items():
        head[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(head).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"\0" * off)


def test_hf_folder_fp8_and_nvfp4_moe_from_config_and_safetensors_headers(tmp_path: Path) -> None:
    cfg = {"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 1,
           "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _safetensors(tmp_path / "model.safetensors", {
        "model.embed_tokens.weight": ("BF16", [100, 64], 12800),
        "lm_head.weight": ("BF16", [100, 64], 12800),
        "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [64, 64], 4096),
        "model.layers.0.self_attn.q_proj.weight_scale": ("F32", [], 4),
        **{f"model.layers.0.mlp.experts.{e}.up_proj.weight": ("U8", [128, 32], 4096) for e in range(4)},
    })
    mf = from_path(tmp_path)
    assert mf is not None and mf.sources["active_params"].startswith("config.json + safetensors headers")
    assert mf.facts["expert_params"] == 4 * 128 * 64          # two FP4 parameters per packed byte
    assert mf.facts["active_params"] == 6400 + 4096 + 128 * 64
    assert mf.by_type["NVFP4"]["bytes"] == 4 * 4096 and mf.by_type["F8_E4M3"]["params"] == 4096
    assert mf.facts["kv_bytes_per_token"] == 2 * 1 * 2 * 16 * 2
    # without the weights the config's shapes still give an estimate, said so
    (tmp_path / "model.safetensors").unlink()
    est = from_path(tmp_path)
    assert est is not None and "config shapes" in est.sources["active_params"] and est.facts["param_bytes"] == 0.5625


# ------------------------------------------------------------------ the diagnosis, H200 numbers

DENSE_8B = {"active_params": 7983108096.0, "param_bytes": 2.0, "kv_bytes_per_token": 147456.0}
C1 = {"duration_s": 5.904, "completed": 8, "total_input_tokens": 1032, "total_output_tokens": 1024,
      "mean_inflight": 1.0, "srv_n_decode_delta": 1152, "srv_tokens_predicted_delta": 1152,
      "dram_bw_util": 50.0, "tensor_active": 1.0, "sm_active": 71.0, "gpu_util": 77.0, "telemetry_window_s": 9.0}


def test_issue_30_dense_8b_is_memory_bound_from_facts_found_not_typed() -> None:
    before = diagnose(C1, H200, {})   # what optlog said: no facts, whole-run counters, theoretical scale
    found = {MF.FACT_PREFIX + k: v for k, v in DENSE_8B.items()}
    d = diagnose({**C1, **found}, H200, {}, fact_sources={"active_params": "GGUF header of /m/dense.gguf"})
    assert d.bound == "memory" and d.basis == "roofline-estimate" and 0.6 < d.numbers["mem_frac"] < 0.7
    assert "GGUF header of /m/dense.gguf" in d.evidence and "counters agree" in d.evidence
    assert "whole point" in d.window and "latency-bound if the SMs waited more than" in d.change
    # one scale: 50 % of the theoretical 4,850 GB/s is 57 % of the calibrated 4,218
    assert d.counters["dram_bw_util_cal"] == pytest.approx(50 * 4850 / 4218)
    assert "on the calibrated 4,218 GB/s that is 57%" in d.scale
    assert before.basis == "telemetry-only" and before.bound == "memory"   # the scale alone settles the counters
    assert "counters only" in before.evidence and "work counts would decide" in before.change
    # a label the user gives wins over the facts found
    small = diagnose({**C1, **found}, H200, {"active_params": 1e9})
    # the DRAM counter measured the traffic (issue 43: it decides where present); the label moves the
    # estimate, which then disagrees with it — shown, with its likely cause
    assert small.bound == "memory" and "active_params 1,000,000,000 parameters (a label)" in small.evidence
    assert "counters disagree" in small.evidence and "leaves out" in small.reason
    assert "evidence: estimate from model facts" in small.text()


def test_steady_counters_are_read_and_the_whole_point_kept_beside_them() -> None:
    d = diagnose({**C1, "dram_bw_util_steady": 59.0, "tensor_active_steady": 1.2, "sm_active_steady": 80.0,
                  "telemetry_steady_s": 5.1, "telemetry_steady_windows": 8}, H200, {})
    assert d.counters["dram_bw_util"] == 59.0 and d.counters["dram_bw_util_run"] == 50.0
    assert d.counters["dram_bw_util_cal"] == pytest.approx(59 * 4850 / 4218)   # ≈ 68 %
    assert "decode windows" in d.window and "8 windows, 5.1 s of the 9 s point" in d.window
    assert "GPM reading averages" not in d.window
    # GPM windows as long as the phase (the H200 GEMM probe with the default 10 s): said, not hidden
    coarse = diagnose({**C1, "dram_bw_util_steady": 59.0, "telemetry_steady_s": 2.0, "telemetry_steady_windows": 0,
                       "telemetry_gpm_interval_s": 10.0}, H200, {})
    assert "each GPM reading averages 10 s" in coarse.window


def test_a_small_model_near_a_third_of_the_bandwidth_is_not_memory_bound() -> None:
    # 1 B dense F16 at concurrency 1: 2.4 GB a token at 600 tok/s = 1.4 TB/s, a third of the ceiling
    one_b = {"model_active_params": 1.2e9, "model_param_bytes": 2.0, "duration_s": 10.0, "total_output_tokens": 6000,
             "total_input_tokens": 100, "completed": 20, "mean_inflight": 1.0, "sm_active": 60.0, "dram_bw_util": 30.0}
    d = diagnose(one_b, H200, {})
    assert d.bound == "latency" and 0.3 < d.numbers["mem_frac"] < 0.4
    # issue 43: latency on positive evidence (the SMs idle 40 % of the time, more than DRAM works)
    assert "the SMs idle 40% of the time" in d.reason and "DRAM bandwidth at 34%" in d.reason
    assert "DRAM bandwidth at 34% would bound it" in d.change
    assert d.metrics()["roofline_basis"] == 2.0


def test_steady_summary_weights_each_sample_by_its_stretch_inside_the_windows() -> None:
    # GPM windows of 10 s: [0,10] mostly start-up (DRAM 10), [10,20] all decode (60), [20,30] half (40)
    t = np.array([10.0, 20.0, 30.0])
    cols = {"GPU-a": {TIME_FIELD: t, "dram_bw_util": np.array([10.0, 60.0, 40.0])}}
    win = join_windows([(8.0, 12.0), (11.0, 20.0), (20.0, 25.0), (40.0, 41.0)], 0.0, 30.0)
    assert win == [(8.0, 25.0)]
    s = steady(cols, win, 0.0, decode=True)
    assert s["dram_bw_util_steady"] == pytest.approx((10 * 2 + 60 * 10 + 40 * 5) / 17)
    assert s["dram_bw_util_steady_p50"] == 60.0 and s["telemetry_steady_s"] == 17.0
    assert s["telemetry_steady_windows"] == 1
    assert join_windows([(float(i), i + 0.5) for i in range(100)], max_n=10).__len__() == 10


def test_vllm_and_sglang_name_their_checkpoint_and_its_config_is_read(tmp_path: Path) -> None:
    """vLLM's /v1/models `root` and SGLang's /get_model_info `model_path` name the checkpoint; the
    folder's config.json and safetensors headers give the facts (real HTTP on 127.0.0.1)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from optlog.runs.modelfacts import discover

    cfg = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
           "intermediate_size": 128, "vocab_size": 100, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    routes: dict[str, dict] = {}

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            doc = routes.get(self.path)
            body = json.dumps(doc).encode() if doc is not None else b"{}"
            self.send_response(200 if doc is not None else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        routes["/v1/models"] = {"data": [{"id": "served", "root": str(tmp_path)}]}
        vllm = discover(url + "/v1", ["vllm", "serve", "x", "--kv-cache-dtype", "fp8"])
        assert "config.json of" in vllm.sources["active_params"] and "/v1/models root" in vllm.sources["active_params"]
        assert vllm.facts["kv_bytes_per_token"] == 2 * 2 * 4 * 16 * 1   # fp8 cache: one byte
        routes.clear()
        routes["/get_model_info"] = {"model_path": str(tmp_path)}
        sgl = discover(url, None)
        assert "SGLang model_path" in sgl.sources["active_params"] and sgl.facts["param_bytes"] == 2.0
        # attention + FFN per layer, and the head (the embedding is a lookup, not a matmul)
        assert sgl.facts["active_params"] == 2 * (64 * 64 * 4 + 3 * 64 * 128) + 100 * 64
        assert sgl.facts["total_params"] == sgl.facts["active_params"] + 100 * 64   # untied: its own embedding
    finally:
        srv.shutdown()
