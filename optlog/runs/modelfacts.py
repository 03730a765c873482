"""Read a model's facts from its files and its server (the I/O half of `optlog.core.modelfacts`).

    mf = discover("http://127.0.0.1:8080", server_argv)     # at launch, once per server start
    mf = from_path("/models/llama-8b.gguf")                 # a GGUF file or a Hugging Face folder

Where each comes from, best first:
1. **The model's files**, where this machine can read them: the path the server reports (llama.cpp's
   `/props` `model_path`, vLLM's `/v1/models` `root`, SGLang's `/get_model_info` `model_path`) or the
   server command's `-m/--model/--model-path`. A GGUF header (read here: magic, key/values, tensor
   table; the tensor data is never touched, so a 16 GB file costs milliseconds) gives every tensor's
   shape and type; a Hugging Face folder gives `config.json` and the safetensors headers.
2. **The server's own account**: llama-server's `/v1/models` `meta` (`n_params`, `size`, `n_embd`,
   `n_vocab`) when the files are elsewhere (a remote host).

Never raises: what could not be read becomes a note in the result.
"""

from __future__ import annotations

import os
import shlex
import struct
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from optlog.core import modelfacts as MF
from optlog.core import jsondoc

TIMEOUT_S = 3.0
MODEL_FLAGS = ("-m", "--model", "--model-path")
KV_FLAGS = ("-ctk", "--cache-type-k", "--kv-cache-dtype")
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
MAX_HEADER = 100 << 20   # a safetensors header larger than this is not one


class NotGGUF(ValueError):
    pass


# ---------------------------------------------------------------- GGUF header

def _read(f: BinaryIO, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise NotGGUF("truncated header")
    return b


def _str(f: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _read(f, 8))
    if n > 1 << 24:
        raise NotGGUF(f"string of {n} bytes")
    return _read(f, n).decode("utf-8", "replace")


def _value(f: BinaryIO, t: int, keep: bool) -> Any:
    if t in _SCALARS:
        fmt = _SCALARS[t]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if t == 8:
        return _str(f)
    if t == 9:
        et, n = struct.unpack("<IQ", _read(f, 12))
        if et in _SCALARS:
            size = struct.calcsize(_SCALARS[et]) * n
            if not keep or n > 4096:
                f.seek(size, os.SEEK_CUR)
                return None
            return list(struct.unpack("<" + _SCALARS[et][1] * n, _read(f, size)))
        if et == 8:
            for _ in range(n):  # skip: a vocabulary's strings are not needed
                (ln,) = struct.unpack("<Q", _read(f, 8))
                f.seek(ln, os.SEEK_CUR)
            return None
        raise NotGGUF(f"array of type {et}")
    raise NotGGUF(f"value type {t}")


def read_gguf_header(path: str | Path) -> tuple[dict[str, Any], list[tuple[str, tuple[int, ...], int]]]:
    """(key/values without the tokenizer's arrays, [(tensor name, dims, ggml type)]) of a GGUF file."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise NotGGUF(f"{path}: not a GGUF file (no GGUF magic)")
        (version,) = struct.unpack("<I", _read(f, 4))
        if version < 2:
            raise NotGGUF(f"{path}: GGUF version {version} is too old")
        n_tensors, n_kv = struct.unpack("<QQ", _read(f, 16))
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _str(f)
            (t,) = struct.unpack("<I", _read(f, 4))
            v = _value(f, t, keep=not key.startswith("tokenizer."))
            if v is not None:
                meta[key] = v
        tensors = []
        for _ in range(n_tensors):
            name = _str(f)
            (nd,) = struct.unpack("<I", _read(f, 4))
            dims = struct.unpack(f"<{nd}Q", _read(f, 8 * nd))
            t, _off = struct.unpack("<IQ", _read(f, 12))
            tensors.append((name, tuple(int(d) for d in dims), int(t)))
    return meta, tensors


# ---------------------------------------------------------------- Hugging Face folder

def _safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...], int]]:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER:
            raise ValueError(f"{path}: header of {n} bytes")
        doc = jsondoc.loads(f.read(n))
    out = {}
    for name, t in doc.items():
        if name == "__metadata__" or not isinstance(t, dict):
            continue
        a, b = t.get("data_offsets") or (0, 0)
        out[name] = (str(t.get("dtype")), tuple(int(x) for x in t.get("shape") or ()), int(b) - int(a))
    return out


def from_hf_dir(d: Path, kv_bytes: float = 2.0) -> MF.ModelFacts:
    cfg = jsondoc.loads((d / "config.json").read_text())
    shards: list[Path] = []
    idx = d / "model.safetensors.index.json"
    if idx.is_file():
        wm = jsondoc.loads(idx.read_text()).get("weight_map") or {}
        shards = sorted({d / f for f in wm.values()})
    else:
        shards = sorted(d.glob("*.safetensors"))
    tensors: dict[str, tuple[str, tuple[int, ...], int]] = {}
    notes = []
    for s in shards:
        try:
            tensors.update(_safetensors_header(s))
        except (OSError, ValueError) as e:
            notes.append(f"{s.name}: {e}")
            tensors = {}
            break
    what = "config.json + safetensors headers" if tensors else "config.json"
    mf = MF.from_hf(cfg, tensors or None, f"{what} of {d}", kv_bytes, model=str(d))
    mf.notes += notes
    return mf


def from_path(path: str | Path, kv_bytes: float = 2.0) -> MF.ModelFacts | None:
    """Facts from a GGUF file or a Hugging Face folder (or its config.json); None when `path` is
    neither or cannot be read (the reason in the returned facts' notes where it was one of them)."""
    p = Path(path).expanduser()
    try:
        if p.is_file() and p.name == "config.json":
            p = p.parent
        if p.is_dir() and (p / "config.json").is_file():
            return from_hf_dir(p, kv_bytes)
        if p.is_file():
            with open(p, "rb") as f:
                if f.read(4) != b"GGUF":
                    return None
            meta, tensors = read_gguf_header(p)
            return MF.from_gguf(meta, tensors, f"GGUF header of {p}", kv_bytes, model=str(p))
    except (OSError, ValueError, struct.error) as e:
        mf = MF.ModelFacts(model=str(p))
        mf.notes.append(f"{p}: {e}")
        return mf
    return None


# ---------------------------------------------------------------- a running server

def argv_value(argv: list[str], flags: tuple[str, ...]) -> str | None:
    for i, a in enumerate(argv):
        for fl in flags:
            if a == fl and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(fl + "="):
                return a.split("=", 1)[1]
    return None


def kv_bytes_of(argv: list[str]) -> float:
    v = argv_value(argv, KV_FLAGS)
    if v and v.lower().startswith("fp8"):
        return 1.0
    return MF.kv_cache_bytes(v if v and v.lower() != "auto" else None)


def _get(client: Any, url: str) -> Any:
    try:
        r = client.get(url)
        if r.status_code != 200:
            return None
        return r.json()
    except Exception:  # a server that does not offer the endpoint, or not JSON
        return None


def discover(server_url: str | None, argv: list[str] | str | None = None, local: bool = True) -> MF.ModelFacts:
    """What the server and its model files say about the model it serves. `local`: the files the
    server names are on this machine (the local executor); else only the server's own account."""
    args = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in (argv or [])]
    kvb = kv_bytes_of(args)
    out = MF.ModelFacts()
    paths: list[tuple[str, str]] = []
    meta_facts: MF.ModelFacts | None = None
    if server_url:
        import httpx  # deferred: httpx only to ask a server

        u = urlsplit(server_url if "://" in server_url else "http://" + server_url)
        base = f"{u.scheme}://{u.netloc}"
        try:
            with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as c:
                props = _get(c, base + "/props")
                if isinstance(props, dict) and props.get("model_path"):
                    paths.append((str(props["model_path"]), "llama-server /props model_path"))
                models = _get(c, base + "/v1/models")
                data = models.get("data") if isinstance(models, dict) else None
                if isinstance(data, list) and data and isinstance(data[0], dict):
                    d0 = data[0]
                    if isinstance(d0.get("meta"), dict):
                        meta_facts = MF.from_llama_meta(d0["meta"], "llama-server /v1/models meta")
                    if d0.get("root"):
                        paths.append((str(d0["root"]), "/v1/models root"))
                if not paths:
                    info = _get(c, base + "/get_model_info") or _get(c, base + "/server_info")
                    if isinstance(info, dict) and info.get("model_path"):
                        paths.append((str(info["model_path"]), "SGLang model_path"))
        except Exception as e:  # never let discovery break a launch
            out.notes.append(f"{base}: {type(e).__name__}: {e}")
    mp = argv_value(args, MODEL_FLAGS)
    if mp:
        paths.append((mp, "the server command's " + next(f for f in MODEL_FLAGS if f in args or
                                                       any(a.startswith(f + "=") for a in args))))
    if local:
        for p, how in paths:
            mf = from_path(p, kvb)
            if mf is None:
                continue
            if mf.facts:
                for k in mf.sources:
                    mf.sources[k] = f"{mf.sources[k]} (named by {how})"
                out.fill(mf)
                break
            out.notes += mf.notes
    elif paths:
        out.notes.append(f"model files at {paths[0][0]} are on the server's host, not read here")
    if meta_facts is not None:
        out.fill(meta_facts)
    if not out.model and paths:
        out.model = paths[0][0]
    return out
