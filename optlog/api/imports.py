"""run import: peer benchmark result files (SGLang, vLLM, AIPerf/genai-perf, GuideLLM, JSON) → runs.
A part of the `run` group (`optlog.api.runs`): imported only when `run import` is used."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Detail, pairs
from optlog.api.verb import Arg, Call, Opt, Pairs, verb
from optlog.runs.parsers import ALIASES, FORMATS
from optlog.service import documents, imports

# The parser registry is the one vocabulary of formats: every name and alias it knows is accepted.
FORMAT_NAMES = (*FORMATS, *ALIASES)


@verb("run import")
def run_import(call: Call, *,
               files: Annotated[tuple[str, ...], Arg(metavar="FILE…")],
               fmt: Annotated[str | None, Opt("--format", choices=FORMAT_NAMES, case_sensitive=False,
                                              help="The tool that wrote the files (default: detected from the "
                                                   "content).")] = None,
               key_map: Annotated[tuple[tuple[str, Any], ...], Pairs(), Opt(
                   metavar="NAME=PATH[:UNIT]",
                   help="Take metric NAME (or label.NAME) from the dotted PATH of each result (repeatable); "
                        "UNIT (s, ms, us, ns, min) converts into NAME's unit (mean_ttft_ms=ttft_s_mean:s).")] = (),
               labels: Annotated[tuple[tuple[str, Any], ...], Pairs(), Opt(
                   "--label", metavar="K=V", help="A label for every imported run; wins over the file's "
                                                  "(repeatable).")] = (),
               hypothesis: Annotated[str | None, Opt(metavar="ID", help="Attach the runs as evidence to this "
                                                                        "hypothesis.")] = None,
               detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                             help="Every imported run, or only their ids and statuses.")] = True,
               ) -> documents.RunImport:
    """Import result files: one run per JSONL line, per GuideLLM benchmark, per AIPerf file.

    Nothing is written unless every file parses.
    """
    doc = imports.import_files(call.ctx, files, fmt, pairs(key_map, "key_map"), pairs(labels, "labels"), hypothesis)
    if not detail:
        doc = {**doc, "runs": [{"id": r["id"], "status": r["status"]} for r in doc["runs"]]}
    return cast(documents.RunImport, doc)
