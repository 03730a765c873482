"""Model facts (work counts) from what a model's own files and its server say: pure.

Why: the roofline estimate of a serving run (`core.diagnosis.estimate_work`) needs the parameters one
token's forward pass multiplies by, the bytes each weight occupies, the experts of an MoE and the KV
bytes per token. A user does not know to type them; the model file and the server know them exactly.
This module turns what was read (a GGUF header's tensor table, a Hugging Face `config.json` and its
safetensors headers, llama-server's `/v1/models` meta) into one vocabulary of facts, each with the
place it came from. The reading (files, HTTP) is `optlog.runs.modelfacts`.

Facts (all numbers): `total_params`, `active_params` (per token: matmul weights, the embedding lookup
left out unless the output head shares it; of the routed experts only `n_expert_used / n_expert`),
`param_bytes` (bytes per parameter averaged over the weights a pass reads), `weight_bytes`,
`kv_bytes_per_token`, `n_layer`, `n_embd`, `n_head`, `n_head_kv`, `head_dim`, `n_ff`, `n_vocab`, and
for MoE `expert_params`, `n_expert`, `n_expert_used`. Beside them, per storage type (F16, BF16, Q8_0,
Q4_K, F8_E4M3, NVFP4 …) the parameters and bytes (`by_type`).

Stored with a run as metrics named `model_<fact>` (metrics, not labels: a run launched before optlog
read them must stay comparable with one after); a label of the fact's own name (`active_params=…`)
that a user gave wins over them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

# ggml type id → (name, elements per block, bytes per block) — ggml.h / gguf-py constants
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}

# safetensors dtype → bytes per element
ST_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
            "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "U16": 2, "U32": 4, "U64": 8, "F4": 0.5}

FACT_PREFIX = "model_"
# what the roofline estimate reads, by the name a label would use
ESTIMATE_FACTS = ("active_params", "param_bytes", "kv_bytes_per_token", "expert_params", "n_expert", "n_expert_used")
NUMERIC_FACTS = ESTIMATE_FACTS + ("total_params", "weight_bytes", "n_layer", "n_embd", "n_head", "n_head_kv",
                                  "head_dim", "n_ff", "n_vocab")


@dataclass
class ModelFacts:
    """Facts with the place each came from (`sources[fact]`: "gguf header of /m.gguf", "llama-server
    /v1/models meta", …) and the per-type breakdown."""

    facts: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    by_type: dict[str, dict[str, float]] = field(default_factory=dict)
    model: str | None = None            # the file or checkpoint they describe
    notes: list[str] = field(default_factory=list)

    def put(self, name: str, value: float | None, source: str) -> None:
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            return
        self.facts[name] = float(value)
        self.sources[name] = source

    def fill(self, other: "ModelFacts") -> None:
        """Take the facts `other` has and this lacks (first source wins)."""
        for k, v in other.facts.items():
            if k not in self.facts:
                self.facts[k] = v
                self.sources[k] = other.sources.get(k, "")
        if not self.by_type and other.by_type:
            self.by_type = dict(other.by_type)
        self.model = self.model or other.model
        self.notes += [n for n in other.notes if n not in self.notes]

    def metrics(self) -> dict[str, float]:
        """As run metrics: `model_<fact>`."""
        return {FACT_PREFIX + k: v for k, v in self.facts.items()}

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "facts": dict(self.facts), "sources": dict(self.sources),
                "by_type": {k: dict(v) for k, v in self.by_type.items()}, **({"notes": self.notes} if self.notes else {})}


def from_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The `model_<fact>` metrics of a run as facts by their plain names."""
    out: dict[str, float] = {}
    for k in NUMERIC_FACTS:
        v = metrics.get(FACT_PREFIX + k)
        if isinstance(v, (int, float)) and math.isfinite(float(v)):
            out[k] = float(v)
    return out


def effective(labels: dict[str, Any], metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The facts a diagnosis uses: labels a user gave win over the `model_*` facts optlog found;
    returns (facts, where each estimate fact came from: "label" or "found")."""
    found = from_metrics(metrics)
    out: dict[str, Any] = dict(found)
    where = {k: "found" for k in found}
    for k in NUMERIC_FACTS + ("active_params_per_token",):
        if labels.get(k) is not None:
            out[k] = labels[k]
            where[k] = "label"
    return out, where


# ---------------------------------------------------------------- GGUF tensor tables

def _tensor_kind(name: str) -> str:
    """expert | embedding | output | norm-or-bias | weight, from llama.cpp's tensor names."""
    if "_exps." in name or name.endswith("_exps"):
        return "expert"
    if name.startswith("token_embd."):
        return "embedding"
    if name.startswith("output.") or name == "output":
        return "output"
    return "weight"


def from_gguf(meta: dict[str, Any], tensors: Iterable[tuple[str, tuple[int, ...], int]], source: str,
              kv_bytes: float = 2.0, model: str | None = None) -> ModelFacts:
    """Facts from a GGUF header: `meta` its key/values, `tensors` (name, dims, ggml type id).

    Bytes are exact per tensor type (block sizes); active parameters count every matrix a token
    multiplies by (1-D tensors — norms, biases — are parameters but read as bytes only), the routed
    experts at `expert_used_count / expert_count`, the embedding only when no separate `output.weight`
    exists (tied head). KV bytes per token = 2 · layers · kv heads · head dim · `kv_bytes` (the cache
    type: F16 unless the server was told otherwise)."""
    mf = ModelFacts(model=model)
    arch = str(meta.get("general.architecture") or "llama")

    def m(key: str) -> Any:
        return meta.get(f"{arch}.{key}")

    total = 0.0
    weight_bytes = 0.0
    dense_p = dense_b = 0.0
    exp_p = exp_b = 0.0
    emb_p = emb_b = 0.0
    has_output = False
    n_vocab = None
    for name, dims, t in tensors:
        n = float(math.prod(int(d) for d in dims)) if dims else 1.0
        tname, blk, bb = GGML_TYPES.get(int(t), (f"type{t}", 1, 0))
        nbytes = n / blk * bb if bb else 0.0
        total += n
        weight_bytes += nbytes
        bt = mf.by_type.setdefault(tname, {"params": 0.0, "bytes": 0.0})
        bt["params"] += n
        bt["bytes"] += nbytes
        kind = _tensor_kind(name)
        if kind == "expert":
            exp_p += n
            exp_b += nbytes
        elif kind == "embedding":
            emb_p += n
            emb_b += nbytes
            if len(dims) >= 2:
                n_vocab = int(dims[-1]) if len(dims) == 2 else n_vocab
        else:
            if kind == "output":
                has_output = True
            dense_p += n
            dense_b += nbytes
    if not has_output:  # tied embeddings: the output head multiplies by the embedding matrix
        dense_p += emb_p
        dense_b += emb_b
    n_exp = _num(m("expert_count"))
    k_used = _num(m("expert_used_count"))
    active, read_bytes = _active(mf, source, dense_p, dense_b, exp_p, exp_b, n_exp, k_used)
    mf.put("total_params", total, source)
    mf.put("active_params", active, source)
    if active > 0:
        mf.put("param_bytes", read_bytes / active, source)
    mf.put("weight_bytes", weight_bytes, source)
    n_layer = _num(m("block_count"))
    n_embd = _num(m("embedding_length"))
    n_head = _first(m("attention.head_count"))
    n_head_kv = m("attention.head_count_kv")
    mf.put("n_layer", n_layer, source)
    mf.put("n_embd", n_embd, source)
    mf.put("n_head", n_head, source)
    mf.put("n_ff", _first(m("feed_forward_length")), source)
    mf.put("n_vocab", _num(m("vocab_size")) or n_vocab, source)
    head_dim = _num(m("attention.key_length")) or (n_embd / n_head if n_embd and n_head else None)
    v_dim = _num(m("attention.value_length")) or head_dim
    mf.put("head_dim", head_dim, source)
    if n_head_kv is None:
        n_head_kv = n_head
    if isinstance(n_head_kv, (list, tuple)):  # per-layer counts (some architectures)
        kv_heads_sum = float(sum(float(x) for x in n_head_kv))
        mf.put("n_head_kv", max(float(x) for x in n_head_kv) if n_head_kv else None, source)
    else:
        kv_heads_sum = (_num(n_head_kv) or 0.0) * (n_layer or 0.0)
        mf.put("n_head_kv", _num(n_head_kv), source)
    if kv_heads_sum and head_dim and v_dim:
        mf.put("kv_bytes_per_token", kv_heads_sum * (head_dim + v_dim) * kv_bytes, source)
    return mf


# ---------------------------------------------------------------- Hugging Face checkpoints

def from_hf(config: dict[str, Any], tensors: dict[str, tuple[str, tuple[int, ...], int]] | None, source: str,
            kv_bytes: float = 2.0, model: str | None = None) -> ModelFacts:
    """Facts from a Hugging Face `config.json` and, where read, its safetensors headers
    (`tensors[name] = (dtype, shape, nbytes)`).

    With the headers the counts are exact (experts: tensors under `.experts.`; FP8 and NVFP4 weights
    counted by their bytes: a packed FP4 byte holds two parameters, scales are bytes only); without
    them the parameters are computed from the config's shapes and `torch_dtype` (an estimate, said so)."""
    tc = config.get("text_config")
    cfg: dict[str, Any] = tc if isinstance(tc, dict) else config
    mf = ModelFacts(model=model)
    n_layer = _num(cfg.get("num_hidden_layers"))
    n_embd = _num(cfg.get("hidden_size"))
    n_head = _num(cfg.get("num_attention_heads"))
    n_head_kv = _num(cfg.get("num_key_value_heads")) or n_head
    head_dim = _num(cfg.get("head_dim")) or (n_embd / n_head if n_embd and n_head else None)
    n_ff = _num(cfg.get("intermediate_size"))
    n_vocab = _num(cfg.get("vocab_size"))
    n_exp = _num(cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts"))
    k_used = _num(cfg.get("num_experts_per_tok") or cfg.get("moe_topk"))
    for k, v in (("n_layer", n_layer), ("n_embd", n_embd), ("n_head", n_head), ("n_head_kv", n_head_kv),
                 ("head_dim", head_dim), ("n_ff", n_ff), ("n_vocab", n_vocab)):
        mf.put(k, v, source)
    if n_layer and n_head_kv and head_dim:
        mf.put("kv_bytes_per_token", 2 * n_layer * n_head_kv * head_dim * kv_bytes, source)
    quant = config.get("quantization_config") or {}
    qname = str(quant.get("quant_method") or quant.get("quant_algo") or "").lower() if isinstance(quant, dict) else ""
    fp4 = "fp4" in qname or "nvfp4" in json_text(quant)
    if tensors:
        total = dense_p = dense_b = exp_p = exp_b = emb_p = emb_b = 0.0
        has_head = False
        for name, (dtype, shape, nbytes) in tensors.items():
            n = float(math.prod(int(d) for d in shape)) if shape else 1.0
            scale = name.endswith(("_scale", "_scale_2", ".scales", "weight_scale_inv", "input_scale"))
            tname = dtype
            if fp4 and dtype == "U8" and name.endswith(".weight"):
                n *= 2  # two FP4 parameters per byte
                tname = "NVFP4"
            bt = mf.by_type.setdefault(tname, {"params": 0.0, "bytes": 0.0})
            bt["bytes"] += nbytes
            if scale:
                dense_b += nbytes  # read with their weights, no parameters of their own
                continue
            bt["params"] += n
            total += n
            if ".experts." in name and ".shared_expert" not in name:
                exp_p += n
                exp_b += nbytes
            elif "embed_tokens" in name:
                emb_p += n
                emb_b += nbytes
            else:
                has_head = has_head or name.startswith("lm_head")
                dense_p += n
                dense_b += nbytes
        if not has_head:
            dense_p += emb_p
            dense_b += emb_b
        active, read_b = _active(mf, source, dense_p, dense_b, exp_p, exp_b, n_exp, k_used)
        mf.put("total_params", total, source)
        mf.put("active_params", active, source)
        mf.put("weight_bytes", sum(t["bytes"] for t in mf.by_type.values()), source)
        if active:
            mf.put("param_bytes", read_b / active, source)
        return mf
    # shapes only: attention + FFN (or experts) per layer, embedding and head
    if not (n_layer and n_embd and n_head and head_dim and n_vocab):
        return mf
    est = source + " (config shapes; no safetensors headers read)"
    attn = n_embd * n_head * head_dim * 2 + n_embd * (n_head_kv or n_head) * head_dim * 2
    moe_ff = _num(cfg.get("moe_intermediate_size")) or n_ff or 0.0
    ffn = 3 * n_embd * (n_ff or 0.0)
    per_layer_dense = attn
    exp_total = 0.0
    if n_exp and k_used:
        exp_total = n_layer * n_exp * 3 * n_embd * moe_ff
    else:
        per_layer_dense += ffn
    tied = bool(cfg.get("tie_word_embeddings", False))
    dense = n_layer * per_layer_dense + n_vocab * n_embd
    total = dense + exp_total + (0 if tied else n_vocab * n_embd)
    active = dense + (exp_total * k_used / n_exp if exp_total and n_exp and k_used else 0.0)
    mf.put("total_params", total, est)
    mf.put("active_params", active, est)
    if exp_total:
        mf.put("expert_params", exp_total, est)
        mf.put("n_expert", n_exp, est)
        mf.put("n_expert_used", k_used, est)
    dt = str(cfg.get("torch_dtype") or config.get("torch_dtype") or config.get("dtype") or "").lower()
    pb = 0.5625 if fp4 else 1.0 if ("fp8" in qname or "float8" in dt) else 4.0 if dt == "float32" else 2.0 if dt else None
    mf.put("param_bytes", pb, est)
    return mf


def json_text(v: Any) -> str:
    return str(v).lower()


# ---------------------------------------------------------------- a server's own account

def from_llama_meta(meta: dict[str, Any], source: str) -> ModelFacts:
    """Facts from llama-server's `/v1/models` `meta` (`n_params`, `size` in bytes, `n_embd`, `n_vocab`):
    the parameter count and bytes per parameter; the embedding (`n_vocab · n_embd`) is taken out of the
    active parameters (a lookup, no matmul; a tied head would put it back — the header says which)."""
    mf = ModelFacts()
    n = _num(meta.get("n_params"))
    size = _num(meta.get("size"))
    emb = (_num(meta.get("n_vocab")) or 0.0) * (_num(meta.get("n_embd")) or 0.0)
    mf.put("total_params", n, source)
    if n:
        mf.put("active_params", n - emb if n > 2 * emb else n, source + " (n_params less the embedding)")
    if n and size:
        mf.put("param_bytes", size / n, source)
        mf.put("weight_bytes", size, source)
    mf.put("n_embd", _num(meta.get("n_embd")), source)
    mf.put("n_vocab", _num(meta.get("n_vocab")), source)
    return mf


def kv_cache_bytes(cache_type: str | None) -> float:
    """Bytes per KV element for a llama.cpp `--cache-type-k` value (f16 when not given)."""
    t = (cache_type or "f16").upper()
    for tid, (name, blk, bb) in GGML_TYPES.items():
        if name == t:
            return bb / blk
    return 2.0



def _active(mf: Any, source: str, dense_p: float, dense_b: float, exp_p: float, exp_b: float,
            n_exp: float | None, k_used: float | None) -> tuple[float, float]:
    """Parameters and bytes a token reads: every dense one, and of the experts the share the router
    uses (k of n). With expert counts unknown every expert counts (an upper bound, never a guess).
    One rule for the GGUF and the safetensors readers; the expert facts are stored when known."""
    if exp_p and n_exp and k_used:
        mf.put("expert_params", exp_p, source)
        mf.put("n_expert", n_exp, source)
        mf.put("n_expert_used", k_used, source)
        return dense_p + exp_p * k_used / n_exp, dense_b + exp_b * k_used / n_exp
    return dense_p + exp_p, dense_b + exp_b

def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (list, tuple)):
        return _first(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _first(v: Any) -> float | None:
    if isinstance(v, (list, tuple)):
        vals = [f for f in (_num(x) for x in v) if f]
        return max(vals) if vals else None
    return _num(v)
