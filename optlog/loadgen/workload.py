"""Prompts for a benchmark: random ones aimed at a token count, or a ShareGPT-style dataset file.

Dataset files (JSON list or JSONL), one record per conversation, any of:
  {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}]}  (ShareGPT;
      also "conversation", and "role"/"content" keys)
  {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}
  {"prompt": "...", "output_len": 128}   (also "text"/"input" for the prompt, "max_tokens" for the length)
The first human/user turn is the prompt; the reply's length (words × 4/3, about one token per 0.75
words) sets max_tokens unless --output-len is given.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from optlog.core.limits import LIMITS
from optlog.errors import BadInput
from optlog.loadgen.core import random_prompt
from optlog.paths import read_regular
from optlog.core import jsondoc

DEFAULT_OUTPUT_LEN = 128


def random_prompts(n: int, input_len: int, output_len: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(random_prompt(rng, input_len), output_len) for _ in range(n)]


def derived_seed(seed: int, nonce: int, level: int) -> int:
    """One seed per (run seed, per-invocation nonce, level): fresh prompts that are still reproducible."""
    return (seed * 1_000_003 + nonce * 7_919 + level * 104_729 + 17) & 0xFFFFFFFF


def fresh_prompts(base: list[tuple[str, int]], *, dataset: bool, input_len: int, seed: int, nonce: int,
                  level: int) -> list[tuple[str, int]]:
    """The prompts of one level, none of which a server has seen at another level or in another run.

    Why: a server with a prompt cache (llama.cpp's slots, vLLM/SGLang prefix caching) answers a
    prompt it has seen from its cache, so reusing one seeded set at every level measures the cache.
    Random prompts are drawn again from a seed derived from (seed, nonce, level); dataset prompts
    keep their text behind a short tag unique to the level, which changes the very first tokens.
    """
    if dataset:
        return [(f"[{nonce:08x}.{level}.{i}] {p}", mt) for i, (p, mt) in enumerate(base)]
    rng = random.Random(derived_seed(seed, nonce, level))
    return [(random_prompt(rng, input_len), mt) for _, mt in base]


def _turns(rec: dict[str, Any]) -> list[tuple[str, str]]:
    conv = rec.get("conversations", rec.get("conversation", rec.get("messages")))
    if not isinstance(conv, list):
        return []
    out = []
    for t in conv:
        if not isinstance(t, dict):
            continue
        who = str(t.get("from", t.get("role", ""))).lower()
        val = t.get("value", t.get("content"))
        if isinstance(val, list):  # OpenAI content parts
            val = " ".join(str(p.get("text", "")) for p in val if isinstance(p, dict))
        if isinstance(val, str):
            out.append((who, val))
    return out


def _record(rec: Any, output_len: int | None) -> tuple[str, int] | None:
    if not isinstance(rec, dict):
        return None
    prompt: str | None = None
    reply: str | None = None
    turns = _turns(rec)
    if turns:
        for i, (who, val) in enumerate(turns):
            if who in ("human", "user") and val.strip():
                prompt = val
                nxt = turns[i + 1] if i + 1 < len(turns) else None
                if nxt and nxt[0] in ("gpt", "assistant", "chatgpt", "bard", "model"):
                    reply = nxt[1]
                break
    else:
        for k in ("prompt", "text", "input"):
            if isinstance(rec.get(k), str) and rec[k].strip():
                prompt = rec[k]
                break
    if not prompt:
        return None
    if output_len:
        mt = output_len
    elif isinstance(rec.get("output_len"), int) and rec["output_len"] > 0:
        mt = rec["output_len"]
    elif isinstance(rec.get("max_tokens"), int) and rec["max_tokens"] > 0:
        mt = rec["max_tokens"]
    elif reply:
        mt = max(1, math.ceil(len(reply.split()) * 4 / 3))
    else:
        mt = DEFAULT_OUTPUT_LEN
    return prompt, mt


def load_dataset(path: str, output_len: int | None) -> list[tuple[str, int]]:
    """All usable (prompt, max_tokens) records of a file; BadInput (with file and line) if unreadable."""
    data = read_regular(Path(path), LIMITS.dataset_bytes, shown=path, field="dataset", what="dataset")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"cannot read the dataset: {e}", file=path, field="dataset") from None
    stripped = text.lstrip()
    records: list[Any]
    if stripped.startswith("["):
        try:
            records = jsondoc.loads(text)
        except jsondoc.DuplicateKey as e:
            raise e.in_file(path) from None
        except RecursionError:
            raise BadInput("nested too deeply", file=path, field="dataset") from None
        except json.JSONDecodeError as e:
            raise BadInput(f"not valid JSON: {e.msg}", file=path, line=e.lineno, column=e.colno,
                           field="dataset") from None
    else:
        records = []
        for ln, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(jsondoc.loads(line))
            except jsondoc.DuplicateKey as e:
                raise e.in_file(path, ln) from None
            except RecursionError:
                raise BadInput("nested too deeply", file=path, line=ln, field="dataset") from None
            except json.JSONDecodeError as e:
                raise BadInput(f"not a JSON line: {e.msg}", file=path, line=ln, column=e.colno,
                               field="dataset") from None
    out = [r for r in (_record(rec, output_len) for rec in records) if r is not None]
    if not out:
        raise BadInput("the dataset holds no usable prompt (expected ShareGPT conversations, chat "
                       "messages, or {\"prompt\": ...} records)", file=path, field="dataset")
    return out


def sample(records: list[tuple[str, int]], n: int, seed: int) -> list[tuple[str, int]]:
    """n records: a seeded shuffle, cycled when the file has fewer than n."""
    rng = random.Random(seed)
    order = list(range(len(records)))
    rng.shuffle(order)
    return [records[order[i % len(order)]] for i in range(n)]
