"""Every real result file of tests/fixtures/real/MANIFEST.yaml (files the tools wrote, found in public
repositories, plus the recorded local runs of tests/fixtures/peers) is imported in-process and its
headline figures checked against this test's OWN reading of the file (json/csv, a few lines per
tool, not optlog's parsers), with the labels that say what was run and the number of runs.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from optlog.runs.parsers import detect_format, parse_result, unique

FIX = Path(__file__).resolve().parents[1] / "fixtures"
MANIFEST = yaml.safe_load((FIX / "real" / "MANIFEST.yaml").read_text())["files"]
APPROX = dict(rel=1e-9, abs=1e-9)


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    public = [e for e in MANIFEST if e["repo"]]
    assert len(public) >= 40
    assert len({(e["tool"].split()[0], e["tool_version"]) for e in MANIFEST}) >= 10
    for e in MANIFEST:
        assert (FIX / e["file"]).stat().st_size == e["bytes"], e["file"]
        if e["repo"]:
            assert e["path"] and len(e["commit"]) == 40 and e["tool_version"] and e["cut"], e


def _vllm(raw: Any) -> list[dict[str, Any]]:
    return raw if isinstance(raw, list) else [raw]


def _expect(e: dict[str, Any], data: bytes) -> list[dict[str, Any]]:
    """Per result: {metric: value} and {label: value} this test reads itself, and the status."""
    fmt, text = e["format"], data.decode()
    out: list[dict[str, Any]] = []
    if fmt == "vllm":
        for o in _vllm(json.loads(text)):
            if "completed" not in o:  # statistics only (vLLM ~0.7 nightly results): read, not refused
                m = {k: o[k] for k in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_itl_ms")}
                lab = {"model": o["model_id"], "num_prompts": o["num_prompts"], "request_rate": o["request_rate"]}
                out.append({"m": m, "l": lab, "status": "succeeded", "gone": ["completed", "output_throughput"]})
                continue
            done = o["completed"]
            m = {"completed": done, "failed": o.get("failed", o["num_prompts"] - done)}
            if done:
                m.update(mean_ttft_ms=o["mean_ttft_ms"], p99_itl_ms=o["p99_itl_ms"], output_throughput=o["output_throughput"],
                         duration_s=o["duration"], mean_e2e_latency_ms=o.get("mean_e2el_ms"))
            if "spec_decode_acceptance_length" in o:  # a speculative-decoding run: its figures kept, as raw
                m.update({f"raw.{k}": o[k] for k in ("spec_decode_acceptance_length", "spec_decode_acceptance_rate",
                                                     "spec_decode_accepted_tokens", "spec_decode_draft_tokens")})
            lab = {"model": o["model_id"], "num_prompts": o["num_prompts"], "concurrency": o.get("max_concurrency"),
                   "max_num_seqs": o.get("max_num_seqs"), "repeat": o.get("run_number")}
            out.append({"m": m, "l": lab, "status": "succeeded" if done else "failed", "gone": [] if done else ["mean_ttft_ms"]})
    elif fmt == "vllm-throughput":
        o = json.loads(text)
        out.append({"m": {"duration_s": o["elapsed_time"], "completed": o["num_requests"],
                          "request_throughput": o["requests_per_second"], "total_token_throughput": o["tokens_per_second"]},
                    "l": {}, "status": "succeeded", "gone": ["output_throughput"]})
    elif fmt == "vllm-latency":
        o = json.loads(text)
        out.append({"m": {"mean_e2e_latency_ms": o["avg_latency"] * 1000, "median_e2e_latency_ms": o["percentiles"]["50"] * 1000,
                          "p90_e2e_latency_ms": o["percentiles"]["90"] * 1000, "p99_e2e_latency_ms": o["percentiles"]["99"] * 1000,
                          "raw.iterations": len(o["latencies"])},
                    "l": {}, "status": "succeeded", "gone": []})
    elif fmt == "llmperf" and text.lstrip().startswith("["):
        rows = json.loads(text)
        ok = [r for r in rows if not r["error_code"]]
        m = {"completed": len(ok), "failed": len(rows) - len(ok)}
        if ok:
            m["mean_ttft_ms"] = statistics.fmean(r["ttft_s"] for r in ok) * 1000
            m["mean_e2e_latency_ms"] = statistics.fmean(r["end_to_end_latency_s"] for r in ok) * 1000
            # llmperf's inter_token_latency_s: the time to the last chunk over the output tokens (NTPOT)
            m["mean_ntpot_ms"] = statistics.fmean(r["inter_token_latency_s"] for r in ok) * 1000
        out.append({"m": m, "l": {}, "status": "succeeded" if ok else "failed",
                    "gone": ["mean_itl_ms", "mean_tpot_ms"] if ok else ["mean_ttft_ms"]})
    elif fmt == "llmperf":
        d = json.loads(text)
        m = {"completed": d["results_num_completed_requests"], "failed": d["results_number_errors"],
             "mean_ttft_ms": d["results_ttft_s_mean"] * 1000, "p99_ttft_ms": d["results_ttft_s_quantiles_p99"] * 1000,
             "median_e2e_latency_ms": d["results_end_to_end_latency_s_quantiles_p50"] * 1000,
             "output_throughput": d["results_mean_output_throughput_token_per_s"],
             # llmperf's only per-token statistic: TTFT included, so NTPOT, not ITL (issue 48)
             "mean_ntpot_ms": d["results_inter_token_latency_s_mean"] * 1000,
             "p99_ntpot_ms": d["results_inter_token_latency_s_quantiles_p99"] * 1000}
        lab = {"model": d["model"], "concurrency": d["num_concurrent_requests"], "input_len": d["mean_input_tokens"],
               "output_len": d["mean_output_tokens"], "framework": d.get("framework")}
        out.append({"m": m, "l": lab, "status": "succeeded", "gone": ["mean_itl_ms", "p99_itl_ms"]})
    elif fmt == "llama-bench" and not e["file"].endswith((".json", ".jsonl")):
        # llama-bench's markdown table, captured in a log: each invocation prints its table, then
        # `build: <commit> (<number>)`; a file with several invocations keeps them apart
        blocks: list[list[dict[str, str]]] = [[]]
        builds: list[int] = []
        head: list[str] = []
        for line in text.splitlines():
            if line.startswith("build: "):  # `build: unknown (0)`: built without git, no version
                builds.append(int(line.split("(")[1].split(")")[0]) or None)  # type: ignore[arg-type]
                blocks.append([])
            elif line.startswith("| model"):
                head = [c.strip() for c in line.strip("|").split("|")]
            elif line.startswith("| ") and head and not line.startswith("| ---"):
                blocks[-1].append(dict(zip(head, (c.strip() for c in line.strip("|").split("|")))))
        blocks = [b for b in blocks if b]
        builds += [None] * (len(blocks) - len(builds))  # a table pasted without its `build:` line
        any_depth = "@ d" in text
        for n, (rows, build) in enumerate(zip(blocks, builds), 1):
            for row in rows:
                ts = float(row["t/s"].split("±")[0])
                name = "total_token_throughput" if "+tg" in row["test"] else \
                    "input_throughput" if row["test"].startswith("pp") else "output_throughput"
                # the depth is a label of its own (0 too, where the table names depths); the test is
                # the test without it, `pp 64` (older builds) spelt pp64
                depth = int(row["test"].split("@ d")[1]) if "@ d" in row["test"] else 0 if any_depth else None
                test = row["test"].split(" @ d")[0].replace(" ", "")
                lab = {"model": row["model"], "test": test, "flash_attn": int(row["fa"]) if "fa" in row else None,
                       "depth": depth, "n_gpu_layers": int(row["ngl"]) if "ngl" in row else None,
                       "n_threads": int(row["threads"]) if "threads" in row else None, "tool_version": build,
                       "invocation": n if len(blocks) > 1 else None}
                out.append({"m": {name: ts}, "l": lab, "status": "succeeded", "gone": [],
                            "nolab": (["tool_version", "build"] if build is None else [])
                            + ([] if any_depth else ["depth"])})
    elif fmt == "llama-batched-bench" and e["file"].endswith(".jsonl"):
        for line in text.splitlines():
            if line.strip():
                o = json.loads(line)
                out.append({"m": {"input_throughput": o["speed_pp"], "output_throughput": o["speed_tg"],
                                  "total_token_throughput": o["speed"], "duration_s": o["t"]},
                            "l": {"input_len": o["pp"], "output_len": o["tg"], "concurrency": o["pl"],
                                  "n_kv_max": o["n_kv_max"], "is_pp_shared": o["is_pp_shared"],
                                  "flash_attn": o["flash_attn"], "n_gpu_layers": o["n_gpu_layers"]},
                            "status": "succeeded", "gone": []})
    elif fmt == "llama-batched-bench":
        settings: dict[str, int] = {}
        for line in text.splitlines():
            if line.startswith("main: n_kv_max"):
                settings = {k.strip(): int(v) for k, v in (kv.split("=") for kv in line[len("main:"):].split(","))}
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and cells[0].isdigit():
                pp, tg, b, _n_kv, _t_pp, s_pp, _t_tg, s_tg, t, s_all = cells
                out.append({"m": {"input_throughput": float(s_pp), "output_throughput": float(s_tg),
                                  "total_token_throughput": float(s_all), "duration_s": float(t)},
                            "l": {"input_len": int(pp), "output_len": int(tg), "concurrency": int(b),
                                  "n_kv_max": settings["n_kv_max"], "is_pp_shared": settings["is_pp_shared"],
                                  "flash_attn": settings["flash_attn"], "n_gpu_layers": settings["n_gpu_layers"]},
                            "status": "succeeded", "gone": []})
    elif fmt == "llama-bench":
        rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x.strip()]
        for o in rows:
            name = "total_token_throughput" if o["n_prompt"] and o["n_gen"] else \
                "input_throughput" if o["n_prompt"] else "output_throughput"
            # build 0 / commit "unknown": llama.cpp built from a source without git; not a version
            known = o["build_number"] != 0
            lab = {"model": o["model_type"], "input_len": o["n_prompt"] or None, "output_len": o["n_gen"] or None,
                   "n_gpu_layers": o["n_gpu_layers"], "tool_version": o["build_number"] if known else None,
                   "cpu": o["cpu_info"], "depth": o.get("n_depth")}  # depth 0 included: the baseline
            # every setting the row was run with is a label, the ones newer builds added too
            lab.update({k: o[k] for k in ("no_op_offload", "no_host", "repack", "load_mode", "use_direct_io") if k in o})
            out.append({"m": {name: o["avg_ts"]}, "l": lab, "status": "succeeded", "gone": [],
                        "nolab": [] if known else ["tool_version", "build"]})
    elif fmt == "aiperf" and e["file"].endswith(".csv") and "_aggregate" not in e["file"] and "_sweep" not in e["file"]:
        rows = list(csv.reader(io.StringIO(text)))
        single = {r[0]: float(r[1]) for r in rows if len(r) == 2 and r[0] != "Metric" and r[1]}
        stat = {r[0]: r for r in rows if len(r) > 2}
        m = {"request_throughput": single["Request Throughput (requests/sec)"]}
        head = stat["Metric"]
        ttft = stat.get("Time to First Token (ms)")
        if ttft:
            m["mean_ttft_ms"] = float(ttft[head.index("avg")])
            m["p99_ttft_ms"] = float(ttft[head.index("p99")])
        out.append({"m": m, "l": {}, "status": "succeeded", "gone": []})
    elif fmt == "genai-perf" and e["file"].endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text)))
        single = {r[0]: float(r[1]) for r in rows if len(r) == 2 and r[0] != "Metric"}
        stat = {r[0]: r for r in rows if len(r) > 2}
        head = stat["Metric"]
        ttft, lat = stat["Time To First Token (ms)"], stat["Request Latency (ms)"]
        m = {"request_throughput": single["Request Throughput (per sec)"], "completed": single["Request Count (count)"],
             "mean_ttft_ms": float(ttft[head.index("avg")]), "p99_ttft_ms": float(ttft[head.index("p99")]),
             "mean_e2e_latency_ms": float(lat[head.index("avg")])}
        out.append({"m": m, "l": {"tool": "genai-perf"}, "status": "succeeded", "gone": []})
    elif fmt == "genai-perf":
        d = json.loads(text)
        ic = d["input_config"]
        m = {"request_throughput": d["request_throughput"]["avg"], "completed": d["request_count"]["avg"],
             "output_throughput": d["output_token_throughput"]["avg"], "mean_ttft_ms": d["time_to_first_token"]["avg"],
             "p99_ttft_ms": d["time_to_first_token"]["p99"], "mean_e2e_latency_ms": d["request_latency"]["avg"],
             "mean_tpot_ms": d["inter_token_latency"]["avg"]}
        if "perf_analyzer" in ic:  # the config-file layout: one section per part of the run
            pa, inp = ic["perf_analyzer"], ic["input"]
            lab = {"concurrency": pa["stimulus"]["concurrency"], "model": ic["model_names"][0],
                   "num_prompts": pa["measurement"]["num"] if pa["measurement"]["mode"] == "request_count" else None,
                   "input_len": inp["synthetic_tokens"]["mean"], "output_len": inp["output_tokens"]["mean"],
                   "dataset": inp["prompt_source"], "endpoint": ic["endpoint"]["type"]}
        else:  # the command-line layout: the parsed arguments
            lab = {"concurrency": ic["concurrency"], "model": ic["model"][0], "num_prompts": ic["request_count"],
                   "input_len": ic["synthetic_input_tokens_mean"], "output_len": ic["output_tokens_mean"],
                   "dataset": ic["prompt_source"], "endpoint": ic["endpoint_type"]}
        # genai-perf's backend (default tensorrtllm) is the Triton model's backend: with another
        # service kind (openai here: llama-server) nothing of what was run
        kind = ic["endpoint"]["service_kind"] if "perf_analyzer" in ic else ic["service_kind"]
        backend = ic["endpoint"]["backend"] if "perf_analyzer" in ic else ic["backend"]
        out.append({"m": m, "l": {**lab, "tool": "genai-perf", "backend": backend if kind == "triton" else None},
                    "status": "succeeded", "gone": [], "nolab": [] if kind == "triton" else ["backend"]})
    elif fmt == "aiperf" and ("_aggregate" in e["file"] or "_sweep" in e["file"]) and e["file"].endswith(".csv"):
        # the aggregates' CSV: a table (one row per combination, `{tag}_{stat}_{mean|std|…}` columns;
        # or one row per `{tag}_{stat}` with mean, std, …, unit), then sections, the metadata last
        rows = list(csv.reader(io.StringIO(text)))
        blank = rows.index([])
        last = len(rows) - rows[::-1].index([])  # the last section: `Field,Value` rows (the sweep's titled)
        meta = {r[0]: r[1] for r in rows[last:] if len(r) == 2 and r != ["Field", "Value"]}
        if rows[0][0] == "metric":
            # a sweep's variation names its value; a plain --num-profile-runs aggregate names none
            variation = ast.literal_eval(meta["Variation Values"]) if "Variation Values" in meta else {}
            means = [({"concurrency": variation.get("phases.profiling.concurrency")}, {r[0]: float(r[1]) for r in rows[1:blank]})]
            trials = int(meta["Successful Runs"])
        else:
            means = [({rows[0][0]: int(r[0])}, {h[:-len("_mean")]: float(v) for h, v in zip(rows[0], r) if h.endswith("_mean")})
                     for r in rows[1:blank]]
            trials = int(meta["Number of Successful Runs"]) // int(meta["Number of Combinations"])
        for params, g in means:
            m = {"request_throughput": g["request_throughput_avg"], "completed": g["request_count_avg"],
                 "output_throughput": g["output_token_throughput_avg"], "duration_s": g["benchmark_duration_avg"],
                 "mean_ttft_ms": g["time_to_first_token_avg"], "p99_ttft_ms": g["time_to_first_token_p99"],
                 "mean_e2e_latency_ms": g["request_latency_avg"], "mean_tpot_ms": g["inter_token_latency_avg"],
                 "p99_itl_ms": g["inter_chunk_latency_p99"], "mean_inflight": g["effective_concurrency_avg"]}
            lab = {**params, "aggregation": meta["Aggregation Type"], "model": meta.get("Model"), "trials": trials}
            out.append({"m": m, "l": lab, "status": "succeeded", "gone": []})
    elif fmt == "aiperf" and ("_aggregate" in e["file"] or "_sweep" in e["file"]):
        # AIPerf's aggregates over trials: a sweep's per-combination means, or one variation's
        # confidence aggregate; each figure is `{tag}_{stat}.mean` (the mean over the trials)
        d = json.loads(text)
        meta = d["metadata"]
        combos = d.get("per_combination_metrics") or [{"parameters": meta.get("variation_values", {}), "metrics": d["metrics"]}]
        for c in combos:
            g = {k: v["mean"] for k, v in c["metrics"].items()}
            if "benchmark_duration" in c["metrics"]:
                # AIPerf 0.11: each metric by its tag, its statistics inside (`mean` over the trials of
                # the run's avg, and the run's percentiles), not 0.13's `{tag}_{stat}` keys
                t = c["metrics"]
                assert t["benchmark_duration"]["unit"] == "sec" and t["time_to_first_token"]["unit"] == "ms"
                m = {"request_throughput": g["request_throughput"], "completed": g["request_count"],
                     "output_throughput": g["output_token_throughput"], "duration_s": g["benchmark_duration"],
                     "mean_ttft_ms": g["time_to_first_token"], "median_ttft_ms": t["time_to_first_token"]["p50"],
                     "p99_ttft_ms": t["time_to_first_token"]["p99"], "mean_e2e_latency_ms": g["request_latency"],
                     "p90_e2e_latency_ms": t["request_latency"]["p90"], "mean_tpot_ms": g["inter_token_latency"],
                     "mean_itl_ms": g["inter_chunk_latency"], "p99_itl_ms": t["inter_chunk_latency"]["p99"]}
                lab = {"concurrency": c["parameters"]["concurrency"], "aggregation": meta["aggregation_type"],
                       "trials": meta["num_trials_per_value"]}
                out.append({"m": m, "l": lab, "status": "succeeded", "gone": ["goodput"]})
                continue
            assert c["metrics"]["benchmark_duration_avg"]["unit"] == "sec" and c["metrics"]["time_to_first_token_avg"]["unit"] == "ms"
            m = {"request_throughput": g["request_throughput_avg"], "completed": g["request_count_avg"],
                 "output_throughput": g["output_token_throughput_avg"], "duration_s": g["benchmark_duration_avg"],
                 "mean_ttft_ms": g["time_to_first_token_avg"], "p99_ttft_ms": g["time_to_first_token_p99"],
                 "mean_e2e_latency_ms": g["request_latency_avg"], "mean_tpot_ms": g["inter_token_latency_avg"],
                 "p99_itl_ms": g["inter_chunk_latency_p99"], "mean_inflight": g["effective_concurrency_avg"]}
            # {"concurrency": 1} or {"phases.profiling.concurrency": 1}; none without a sweep
            conc = next(iter(c["parameters"].values()), None)
            lab = {"concurrency": conc, "aggregation": meta["aggregation_type"], "model": meta.get("model"),
                   "trials": meta.get("num_trials_per_value", meta.get("num_successful_runs")),
                   "tool_version": d.get("aiperf_version")}
            out.append({"m": m, "l": lab, "status": "succeeded", "gone": []})
    elif fmt == "aiperf":
        d = json.loads(text)
        m = {"request_throughput": d["request_throughput"]["avg"], "completed": d["request_count"]["avg"],
             "mean_e2e_latency_ms": d["request_latency"]["avg"]}
        if "time_to_first_token" in d:
            m["mean_ttft_ms"] = d["time_to_first_token"]["avg"]
        phase = d["input_config"]["phases"][-1]
        ds = (d["input_config"].get("datasets") or [{}])[0]
        lab = {"concurrency": phase.get("concurrency"), "request_rate": phase.get("rate"),
               "num_prompts": phase.get("requests"), "model": d["input_config"]["models"]["items"][0]["name"],
               "tool_version": d["aiperf_version"], "dataset": ds.get("dataset")}
        m["output_throughput"] = d["output_token_throughput"]["avg"]
        m["duration_s"] = d["benchmark_duration"]["avg"]
        if "inter_chunk_latency" in d:
            m["p99_itl_ms"] = d["inter_chunk_latency"]["p99"]
        slos = d["input_config"].get("slos") or {}
        if "goodput" in d:  # run with --goodput: its figure, and the limits it was measured against
            m.update(goodput=d["goodput"]["avg"], good_requests=d["good_request_count"]["avg"],
                     good_request_frac=d["good_request_fraction"]["avg"])
            names = {"time_to_first_token": "ttft", "request_latency": "e2e_latency", "inter_token_latency": "tpot"}
            lab.update({f"slo_{names[k]}_ms": v for k, v in slos.items()})
        out.append({"m": m, "l": lab, "status": "succeeded", "gone": [] if "goodput" in d else ["goodput"]})
    elif fmt == "guidellm" and e["file"].endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text)))
        cols = list(zip(rows[0], rows[1], rows[2]))
        for row in rows[3:]:
            cell = dict(zip(cols, row))
            m = {"completed": float(cell[("Request Counts", "Successful", "")]),
                 "mean_ttft_ms": float(cell[("Time to First Token", "Successful ms", "Mean")]),
                 "request_throughput": float(cell[("Server Throughput", "Successful Requests/Sec", "Mean")]),
                 "duration_s": float(cell[("Timings", "Duration", "Sec")])}
            kind, _, val = cell[("Benchmark", "Strategy", "")].partition("@")
            out.append({"m": m, "l": {"strategy": kind, "concurrency": int(val)}, "status": "succeeded", "gone": []})
    elif fmt == "guidellm":
        d = json.loads(text)
        for b in d["benchmarks"]:
            met = b["metrics"]
            m = {"mean_ttft_ms": met["time_to_first_token_ms"]["successful"]["mean"],
                 "median_ttft_ms": met["time_to_first_token_ms"]["successful"]["median"],
                 "request_throughput": met["requests_per_second"]["successful"]["mean"], "duration_s": b["duration"]}
            cfg = b.get("config") or b.get("args")
            lab = {"strategy": cfg["strategy"]["type_"]}
            # the measured counts: `request_totals` (in `metrics` from v0.4 on), never the per-request
            # samples, which keep the warm-up's and cool-down's requests too (real 0.5.0.dev0 file: 23
            # successful samples, 19 counted)
            totals = met.get("request_totals") or b.get("request_totals")
            m.update(completed=totals["successful"], failed=totals["errored"])
            if "metadata" in d:  # v0.4 on: the version, the run's arguments, the strategy's streams
                st = cfg["strategy"]
                lab.update(tool_version=d["metadata"]["guidellm_version"],
                           concurrency=1 if st["type_"] == "synchronous" else st.get("max_concurrency"),
                           model=(d.get("args") or {}).get("model"))
            out.append({"m": m, "l": lab, "status": "succeeded", "gone": []})
    elif fmt == "sglang":
        for line in text.splitlines():
            if line.strip():
                o = json.loads(line)  # Python reads SGLang's bare Infinity itself
                m = {"completed": o["completed"], "output_throughput": o["output_throughput"], "duration_s": o["duration"],
                     "median_ttft_ms": o["median_ttft_ms"], "median_itl_ms": o["median_itl_ms"],
                     "mean_e2e_latency_ms": o["mean_e2e_latency_ms"],
                     "total_token_throughput": (o["total_input_tokens"] + o["total_output_tokens"]) / o["duration"]}
                rate = o["request_rate"]
                random = o["dataset_name"] == "random"
                # what was run: a random dataset's lengths are only the upper bound unless the range
                # ratio is 1 (SGLang draws each length from [ratio x len, len]): the ratio is a label
                lab = {"request_rate": "inf" if rate == float("inf") else rate, "dataset": o["dataset_name"],
                       "input_len": o["random_input_len"] if random else None,
                       "output_len": o["random_output_len"] if random else None,
                       "random_range_ratio": o["random_range_ratio"] if random else None, "backend": o["backend"]}
                out.append({"m": m, "l": lab, "status": "succeeded", "gone": []})
    elif fmt == "sglang-one-batch":
        for line in text.splitlines():
            if line.strip():
                o = json.loads(line)
                out.append({"m": {"output_throughput": o["output_throughput"], "duration_s": o["latency"]},
                            "l": {"concurrency": o["batch_size"], "input_len": o["input_len"], "output_len": o["output_len"]},
                            "status": "succeeded", "gone": []})
    else:  # pragma: no cover - a manifest entry without a reading here is a test defect
        raise AssertionError(f"no independent reading for {fmt}")
    return out


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_each_file_is_read_right(entry: dict[str, Any]) -> None:
    path = FIX / entry["file"]
    assert detect_format(path) == entry["format"]
    got = parse_result([path])
    want = _expect(entry, path.read_bytes())
    assert len(got) == len(want)
    for r, w in zip(got, want):
        assert r.status == w["status"], (r.source, r.notes)
        for k, v in w["m"].items():
            if v is not None:
                assert r.metrics.get(k) == pytest.approx(v, **APPROX), (r.source, k)
        for k in w["gone"]:
            assert k not in r.metrics, (r.source, k)
        for k in w.get("nolab", []):
            assert k not in r.labels, (r.source, k, r.labels)
        for k, v in w["l"].items():
            if v is not None:
                assert r.labels.get(k) == v, (r.source, k, r.labels)


def test_the_corpus_imports_each_measurement_once() -> None:
    """All files in one import: the vLLM sweep summaries repeat their run files, llmperf's full
    per-request files repeat their summaries, GuideLLM's, AIPerf's and genai-perf's CSVs repeat
    their JSON (one run, two exports; AIPerf's and genai-perf's CSVs round to 2 places) and
    AIPerf's sweep aggregate its per-concurrency confidence aggregates; every other result is its
    own run."""
    paths = [FIX / e["file"] for e in MANIFEST]
    every = parse_result(paths)
    kept, said = unique(every)
    sweep_runs = sum(1 for e in MANIFEST if "/sweep/" in e["file"] and "summary" not in e["file"])
    whole_individual = sum(1 for e in MANIFEST if "individual" in e["file"] and "first10" not in e["file"])
    guidellm_pairs = sum(1 for e in MANIFEST if e["format"] == "guidellm" and e["file"].endswith(".csv"))
    # an AIPerf sweep aggregate repeats the confidence aggregate of each of its combinations
    aiperf_variations = sum(1 for e in MANIFEST if "/sweep-" in e["file"] and "/concurrency_" in e["file"] and e["file"].endswith(".json"))
    # AIPerf and genai-perf write each run as JSON and as CSV (its figures rounded to 2 places)
    csv_pairs = sum(len(_expect(e, (FIX / e["file"]).read_bytes())) for e in MANIFEST
                    if e["format"] in ("aiperf", "genai-perf") and e["file"].endswith(".csv")
                    and (FIX / e["file"]).with_suffix(".json").exists())
    assert csv_pairs == 13
    assert len(every) - len(kept) == len(said) == sweep_runs + whole_individual + guidellm_pairs + aiperf_variations + csv_pairs
    assert {r.labels["tool"] for r in kept} == {"vllm", "vllm-throughput", "vllm-latency", "llmperf", "llama-bench", "aiperf",
                                                 "genai-perf", "guidellm", "sglang", "sglang-one-batch", "llama-batched-bench"}
