"""Random-weight GGUF models of realistic shapes, for serving a real llama.cpp server in tests and proofs.

Why: speed, batching and telemetry of a server depend on a model's *shape* (widths, layers, heads,
experts), not on what its weights say. Real checkpoints are gigabytes behind a registry; these are
written in seconds from a shape. Outputs are meaningless text, the compute is real.

How:
- `ModelShape` describes a llama-architecture model, dense or mixture-of-experts (Mixtral-style
  `llama.expert_count` / `expert_used_count` with `ffn_gate_inp` and `ffn_{gate,up,down}_exps`, which
  llama.cpp's `llama` arch loads). `facts()` gives what optlog's roofline estimate needs (active and
  total parameters, KV bytes per token).
- `write_model` streams: every tensor's info is declared first, then the data is written one tensor at
  a time, each tiled from one small pool of random values (rows do not repeat: the pool's length is
  prime), so peak memory is one tensor, and an 8 B F16 model (16 GB) is bound by disk speed.
- The tokenizer: the `tokenizer.*` fields of a vocab-only GGUF (llama.cpp ships
  `models/ggml-vocab-llama-spm.gguf`) are copied; without one a minimal byte-level SentencePiece
  vocabulary is synthesised (enough for llama.cpp to tokenize any text through byte fallback).
- Types: F16 (default) or Q8_0 for the 2-D weights; norms and the router stay F32.

CLI: `python -m optlog.testing.gguf_model OUT.gguf --preset dense-8b [--vocab VOCAB.gguf] [--type q8_0]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np

# a prime number of elements: tiling tensors from it never repeats a row exactly
_POOL_ELEMS = 4_194_301
_Q8_BLOCK = 32            # elements per Q8_0 block
_Q8_BLOCK_BYTES = 34      # f16 scale + 32 int8


@dataclass(frozen=True)
class ModelShape:
    """A llama-architecture model. `n_expert > 0` makes every layer's FFN a mixture of experts, each
    expert of width `n_ff`, `n_expert_used` of them per token."""

    n_embd: int
    n_layer: int
    n_ff: int
    n_head: int
    n_head_kv: int
    n_vocab: int = 32000
    n_expert: int = 0
    n_expert_used: int = 0
    n_ctx_train: int = 8192
    rope_base: float = 10000.0
    rms_eps: float = 1e-5

    def __post_init__(self) -> None:
        for k in ("n_embd", "n_layer", "n_ff", "n_head", "n_head_kv", "n_vocab"):
            if getattr(self, k) <= 0:
                raise ValueError(f"{k} must be > 0, got {getattr(self, k)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")
        if self.n_head % self.n_head_kv:
            raise ValueError(f"n_head {self.n_head} is not a multiple of n_head_kv {self.n_head_kv}")
        if self.n_expert and not 0 < self.n_expert_used <= self.n_expert:
            raise ValueError(f"n_expert_used must be in 1..{self.n_expert}, got {self.n_expert_used}")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def tensors(self) -> Iterator[tuple[str, tuple[int, ...], bool]]:
        """(name, numpy shape (out, in) / (expert, out, in), is_matrix) in file order."""
        e, f, kv = self.n_embd, self.n_ff, self.n_head_kv * self.head_dim
        yield "token_embd.weight", (self.n_vocab, e), True
        for i in range(self.n_layer):
            b = f"blk.{i}."
            yield b + "attn_norm.weight", (e,), False
            yield b + "attn_q.weight", (e, e), True
            yield b + "attn_k.weight", (kv, e), True
            yield b + "attn_v.weight", (kv, e), True
            yield b + "attn_output.weight", (e, e), True
            yield b + "ffn_norm.weight", (e,), False
            if self.n_expert:
                x = self.n_expert
                yield b + "ffn_gate_inp.weight", (x, e), False   # the router: small, kept F32
                yield b + "ffn_gate_exps.weight", (x, f, e), True
                yield b + "ffn_up_exps.weight", (x, f, e), True
                yield b + "ffn_down_exps.weight", (x, e, f), True
            else:
                yield b + "ffn_gate.weight", (f, e), True
                yield b + "ffn_up.weight", (f, e), True
                yield b + "ffn_down.weight", (e, f), True
        yield "output_norm.weight", (e,), False
        yield "output.weight", (self.n_vocab, e), True

    def facts(self, param_bytes: float = 2.0, kv_bytes: float = 2.0) -> dict[str, float]:
        """Model facts for optlog's roofline estimate: parameters in all, parameters one token's forward
        pass multiplies by (`active_params`: the embedding lookup is no matmul, so it is left out; of the
        experts only `n_expert_used`), bytes per parameter, KV-cache bytes per token (F16 K and V)."""
        total = 0
        active = 0.0
        for name, shape, _ in self.tensors():
            n = int(np.prod(shape))
            total += n
            if name == "token_embd.weight":
                continue
            if name.endswith("_exps.weight"):
                active += n * self.n_expert_used / self.n_expert
            else:
                active += n
        expert_params = sum(int(np.prod(s)) for n, s, _ in self.tensors() if n.endswith("_exps.weight"))
        out = {"total_params": float(total), "active_params": float(active), "param_bytes": param_bytes,
               "kv_bytes_per_token": float(2 * self.n_layer * self.n_head_kv * self.head_dim * kv_bytes),
               "n_layer": float(self.n_layer), "n_embd": float(self.n_embd)}
        if self.n_expert:
            out.update({"expert_params": float(expert_params), "n_expert": float(self.n_expert),
                        "n_expert_used": float(self.n_expert_used)})
        return out


PRESETS: dict[str, ModelShape] = {
    # Llama-3-8B's body (36 layers instead of 32 to make up for the 32k vocabulary): 8.1 B params
    "dense-8b": ModelShape(n_embd=4096, n_layer=36, n_ff=14336, n_head=32, n_head_kv=8, n_ctx_train=8192,
                           rope_base=500000.0),
    # Llama-3.2-1B-like: 1.2 B
    "dense-1b": ModelShape(n_embd=2048, n_layer=16, n_ff=8192, n_head=32, n_head_kv=8),
    # many small experts (GLM/Qwen3-MoE style): 128 experts of width 512, 8 used; 9.9 B total, 0.9 B active
    "moe-128x512": ModelShape(n_embd=2048, n_layer=24, n_ff=512, n_head=32, n_head_kv=4,
                              n_expert=128, n_expert_used=8),
    # tiny ones for CPU tests
    "tiny": ModelShape(n_embd=64, n_layer=2, n_ff=128, n_head=4, n_head_kv=2, n_vocab=512, n_ctx_train=512),
    "tiny-moe": ModelShape(n_embd=64, n_layer=2, n_ff=32, n_head=4, n_head_kv=2, n_vocab=512, n_ctx_train=512,
                           n_expert=8, n_expert_used=2),
}


def _gguf() -> Any:
    try:
        import gguf  # deferred: optional extra (models)
    except ImportError as e:  # pragma: no cover - the extra is installed in CI
        raise RuntimeError("writing GGUF models needs the `gguf` package: pip install 'optlog[models]'") from e
    return gguf


def _copy_vocab(writer: Any, vocab: Path) -> int:
    """Copy every `tokenizer.*` field of a vocab-only GGUF; returns its vocabulary size."""
    gguf = _gguf()
    reader = gguf.GGUFReader(str(vocab))
    n_vocab = 0
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        val = field.contents()
        writer.add_key_value(name, val, vtype, sub_type=sub)
        if name == "tokenizer.ggml.tokens":
            n_vocab = len(val)
    if not n_vocab:
        raise ValueError(f"{vocab}: no tokenizer.ggml.tokens field (not a vocab GGUF?)")
    return n_vocab


def _synth_vocab(writer: Any, n_vocab: int) -> None:
    """A byte-level SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then filler pieces."""
    gguf = _gguf()
    if n_vocab < 259:
        raise ValueError(f"a synthesised vocabulary needs n_vocab >= 259, got {n_vocab}")
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    i = 0
    while len(toks) < n_vocab:
        toks.append(f"\u2581t{i}")
        types.append(gguf.TokenType.NORMAL)
        i += 1
    writer.add_tokenizer_model("llama")
    writer.add_token_list(toks)
    writer.add_token_scores([0.0] * 259 + [-float(k) for k in range(n_vocab - 259)])
    writer.add_token_types([int(t) for t in types])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)


class _Pool:
    """Random values tiled into tensors without building more than one tensor at a time."""

    def __init__(self, seed: int, std: float) -> None:
        rng = np.random.default_rng(seed)
        self.f16 = (rng.standard_normal(_POOL_ELEMS, dtype=np.float32) * std).astype(np.float16)
        nblk = _POOL_ELEMS // _Q8_BLOCK
        blocks = np.empty((nblk, _Q8_BLOCK_BYTES), np.uint8)
        scale = (rng.uniform(0.5, 1.5, nblk) * std * 3 / 127).astype(np.float16)
        blocks[:, :2] = scale.view(np.uint8).reshape(nblk, 2)
        blocks[:, 2:] = rng.integers(-127, 128, (nblk, _Q8_BLOCK), dtype=np.int8).view(np.uint8)
        self.q8 = blocks.reshape(-1)
        self.offset = 0

    @staticmethod
    def _tile(src: np.ndarray, n: int, start: int, step: int) -> np.ndarray:
        """`n` values of `src` from `start` on, wrapping; `start` is aligned down to `step` (whole Q8_0
        blocks: `len(src)` and `n` are multiples of it, so no block is ever split)."""
        out = np.empty(n, src.dtype)
        pos, s = 0, start % len(src)
        s -= s % step
        while pos < n:
            k = min(n - pos, len(src) - s)
            out[pos:pos + k] = src[s:s + k]
            pos += k
            s = 0
        return out

    def take(self, n: int, kind: str) -> np.ndarray:
        self.offset += 7_919_993  # a prime stride: each tensor starts elsewhere in the pool
        if kind == "q8_0":
            return self._tile(self.q8, n, self.offset * _Q8_BLOCK_BYTES, _Q8_BLOCK_BYTES)
        return self._tile(self.f16, n, self.offset, 1)


def _layout(shape: tuple[int, ...], is_matrix: bool, wtype: str) -> tuple[str, tuple[int, ...]]:
    """(storage kind, numpy shape of the stored array) of one tensor."""
    if not is_matrix:
        return "f32", shape
    if wtype == "q8_0":
        if shape[-1] % _Q8_BLOCK:
            raise ValueError(f"Q8_0 needs rows that are a multiple of {_Q8_BLOCK}, got shape {shape}")
        return "q8_0", (*shape[:-1], shape[-1] // _Q8_BLOCK * _Q8_BLOCK_BYTES)
    return "f16", shape


def write_model(path: Path | str, shape: ModelShape, *, vocab: Path | str | None = None, wtype: str = "f16",
                seed: int = 0, std: float = 0.02, name: str = "optlog-random") -> dict[str, Any]:
    """Write `shape` with random weights to `path` (streamed). Returns a summary: path, bytes, seconds,
    the shape and its `facts()` (vocabulary size as written)."""
    gguf = _gguf()
    wtype = wtype.lower()
    if wtype not in ("f16", "q8_0"):
        raise ValueError(f"wtype must be f16 or q8_0, got {wtype!r}")
    t0 = time.monotonic()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    if vocab is not None:
        n_vocab = _copy_vocab(w, Path(vocab))
        shape = replace(shape, n_vocab=n_vocab)
    else:
        _synth_vocab(w, shape.n_vocab)
    w.add_name(name)
    w.add_vocab_size(shape.n_vocab)
    w.add_context_length(shape.n_ctx_train)
    w.add_embedding_length(shape.n_embd)
    w.add_block_count(shape.n_layer)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_head)
    w.add_head_count_kv(shape.n_head_kv)
    w.add_rope_dimension_count(shape.head_dim)
    w.add_rope_freq_base(shape.rope_base)
    w.add_layer_norm_rms_eps(shape.rms_eps)
    if shape.n_expert:
        w.add_expert_count(shape.n_expert)
        w.add_expert_used_count(shape.n_expert_used)
    # llama_ftype: 1 = mostly F16, 7 = mostly Q8_0
    w.add_file_type(7 if wtype == "q8_0" else 1)
    layouts = []
    for tname, tshape, is_matrix in shape.tensors():
        kind, stored = _layout(tshape, is_matrix, wtype)
        layouts.append((tname, kind, stored))
        if kind == "q8_0":
            w.add_tensor_info(tname, stored, np.dtype(np.uint8), int(np.prod(stored)),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            dt = np.dtype(np.float32 if kind == "f32" else np.float16)
            w.add_tensor_info(tname, stored, dt, int(np.prod(stored)) * dt.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    pool = _Pool(seed, std)
    for tname, kind, stored in layouts:
        n = int(np.prod(stored))
        if kind == "f32":
            arr = np.ones(n, np.float32) if tname.endswith("norm.weight") else pool.take(n, "f16").astype(np.float32)
        else:
            arr = pool.take(n, kind)
        w.write_tensor_data(arr.reshape(stored))
        del arr
    w.close()
    size = path.stat().st_size
    return {"path": str(path), "bytes": size, "seconds": round(time.monotonic() - t0, 2), "type": wtype,
            "shape": asdict(shape), "facts": shape.facts(param_bytes=(_Q8_BLOCK_BYTES / _Q8_BLOCK
                                                                        if wtype == "q8_0" else 2.0))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m optlog.testing.gguf_model", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF whose tokenizer.* fields are copied")
    ap.add_argument("--type", dest="wtype", choices=("f16", "q8_0"), default="f16")
    ap.add_argument("--seed", type=int, default=0)
    for k in ("n_embd", "n_layer", "n_ff", "n_head", "n_head_kv", "n_expert", "n_expert_used", "n_vocab"):
        ap.add_argument("--" + k.replace("_", "-"), dest=k, type=int, help=f"override the preset's {k}")
    a = ap.parse_args(argv)
    over = {k: getattr(a, k) for k in ("n_embd", "n_layer", "n_ff", "n_head", "n_head_kv", "n_expert",
                                       "n_expert_used", "n_vocab") if getattr(a, k) is not None}
    try:
        shape = replace(PRESETS[a.preset], **over)
        summary = write_model(a.out, shape, vocab=a.vocab, wtype=a.wtype, seed=a.seed)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
