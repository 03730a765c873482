"""run import: peer benchmark result files (SGLang, vLLM, AIPerf/genai-perf, GuideLLM, JSON) → runs."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import KeyValue, pairs
from optlog.api.text import runs_table
from optlog.runs.parsers import ALIASES, FORMATS
from optlog.service import imports

# The parser registry is the one vocabulary of formats: every name and alias it knows is accepted.
FORMAT_NAMES = (*FORMATS, *ALIASES)


def _human(d: dict[str, Any]) -> str:
    n = len(d["runs"])
    head = f"imported {n} run{'s' if n != 1 else ''}"
    for a in d.get("already_imported", []):
        head += f"\n{a['file']}: already run{'s' if len(a['runs']) != 1 else ''} {', '.join(map(str, a['runs']))} ({a['why']})"
    return head + "\n" + runs_table(d) if n else head


@click.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE…")
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES, case_sensitive=False), default=None,
              help="The tool that wrote the files (default: detected from the content).")
@click.option("--key-map", "key_map", multiple=True, type=KeyValue("--key-map"), metavar="NAME=PATH[:UNIT]",
              help="Take metric NAME (or label.NAME) from the dotted PATH of each result (repeatable); "
                   "UNIT (s, ms, us, ns, min) converts into NAME's unit (mean_ttft_ms=ttft_s_mean:s).")
@click.option("--label", "labels", multiple=True, type=KeyValue("--label"), metavar="K=V", help="A label for every imported run; wins over the file's (repeatable).")
@click.option("--hypothesis", metavar="ID", help="Attach the runs as evidence to this hypothesis.")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Every imported run, or only their ids and statuses.")
@agent(defaults={"detail": False})
@verb(_human)
def run_import(call: Call, files: tuple[str, ...], fmt: str | None, key_map: tuple[tuple[str, Any], ...],
               labels: tuple[tuple[str, Any], ...], hypothesis: str | None, detail: bool) -> Any:
    """Import result files: one run per JSONL line, per GuideLLM benchmark, per AIPerf file.

    Nothing is written unless every file parses.
    """
    return imports.import_doc(call.ctx, files, fmt, pairs(key_map), pairs(labels), hypothesis, detail)
