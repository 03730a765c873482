"""`optlog` — the JSONL written by `optlog bench --output-file` (the built-in load generator).

It uses SGLang `bench_serving`'s key names (plus `failed`, `duration`, `max_concurrency`), so this is
the SGLang parser under another tool name (see `sglang.py` for the mapping, raw keys and labels).
Auto-detection recognises its lines by `"tool": "optlog"` (or an `optlog_version` key); without
either, such a file is detected as `sglang`, which reads the same numbers.
"""

from __future__ import annotations

from optlog.runs.parsers._common import Doc, ParsedResult
from optlog.runs.parsers.sglang import parse_serving


# optlog's own keys, kept under their names (not `raw.*`): what real servers taught the load generator
# (short streams, output lengths against max_tokens, prompt-cache hits, the server's own counters).
OWN = ("short", "min_output_tokens", "median_output_tokens", "max_output_tokens", "requested_output_tokens",
       "cached_prompt_tokens", "cached_prompt_fraction", "prompt_cache_hit", "client_counted_output_tokens",
       "server_output_tokens", "server_prompt_tokens", "server_cached_prompt_tokens", "output_tokens_agreement",
       "server_predicted_tokens", "server_mean_tpot_ms", "server_median_prompt_ms", "input_tokens_client_counted",
       # each phase's wall time and mean requests in it (issue 43: prefill and decode diagnosed apart)
       "prefill_window_s", "decode_window_s", "mean_prefilling", "mean_decoding")


def parse(doc: Doc) -> list[ParsedResult]:
    out = parse_serving(doc, "optlog")
    for r in out:
        for k in OWN:
            if f"raw.{k}" in r.metrics and k not in r.metrics:
                r.metrics[k] = r.metrics[f"raw.{k}"]
        v = r.raw.get("optlog_version") or r.raw.get("version")
        if v and "tool_version" not in r.labels:
            r.labels["tool_version"] = str(v)
    return out
