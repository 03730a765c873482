"""tune SPEC | tune list | tune show STUDY: a search over a spec's `search:` space (docs/tune.md).

`optlog tune SPEC …` is `optlog tune run SPEC …`: the group runs `run` when its first word is not
one of its commands, so the short spelling of the issue works and the MCP tools stay derived
(tune_run, tune_list, tune_show).
"""

from __future__ import annotations

from typing import Any

import click

from optlog.api.launches import progress
from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import KeyValue
from optlog.api.text import fmt_num, kv, table
from optlog.core.numfmt import fmt_p, fmt_signed, fmt_written
from optlog.service import tune as svc


class _TuneGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        i = 0
        while i < len(args) and args[i] in ("--json", "-C"):  # the global options the group takes itself
            i += 2 if args[i] == "-C" else 1
        if i < len(args) and args[i] not in self.commands and args[i] not in ("-h", "--help"):
            args = [*args[:i], "run", *args[i:]]
        return super().parse_args(ctx, args)


def _human(d: dict[str, Any]) -> str:
    objs = d.get("objectives") or []
    rows = []
    for t in d["trials"]:
        vals = t["values"] or []
        rows.append([t["number"], t["state"] + ("" if t.get("feasible") in (None, True) else " (infeasible)"),
                     kv(t["params"])] + [fmt_num(v) for v in vals] + [t["run"] if t["run"] is not None else "",
                                                                       f"= trial {t['same_as']}" if "same_as" in t else t.get("pruned", "")])
    head = f"study {d['study']} ({d.get('sampler')}): {len(d['trials'])} trial(s)"
    out = head + "\n" + table(rows, ["trial", "state", "params", *objs, "run", ""])
    for b in d["best"]:
        rem = b.get("remeasured") or {}
        if rem:
            parts = [f"{m}={fmt_num(v)} (first reading {fmt_num(f)}, {_above(sh)} the median)"
                     for m, v, f, sh in zip(objs, rem["values"], rem["first"], rem["shrink_pct"])]
            out += f"\nbest: trial {b['number']} {kv(b['params'])} → re-measured median of {rem['n']}: " + ", ".join(parts)
        else:
            out += (f"\nbest: trial {b['number']} {kv(b['params'])} → "
                    + ", ".join(f"{m}={fmt_num(v)}" for m, v in zip(objs, b["values"])) + " (first reading, not re-measured)")
    rm = d.get("remeasure") or {}
    if rm.get("changed"):
        lucky = next(((n, t) for n, t in (rm.get("trials") or {}).items() if int(n) not in (rm.get("winners") or [])), None)
        out += "\nthe re-measure changed the best"
        if lucky:
            n, t = lucky
            out += (f": trial {n} led on its first reading ({fmt_num(t['first'][0])}), its re-measured median is "
                    f"{fmt_num(t['values'][0])} ({_above(t['shrink_pct'][0])} it)")
        if (rm.get("separation") or {}).get("distinct") is False:
            out += "; the two are not told apart, so either may be the better"
    sep = rm.get("separation") or {}
    if sep:
        out += (f"\nbest vs runner-up (trial {sep.get('runner_up')}): "
                + (f"{sep['test']} {fmt_p(sep['p'])}, " + ("told apart" if sep["distinct"] else "not told apart")
                   if sep.get("test") else sep.get("why", "")))
    if not d["best"]:
        out += "\nno feasible completed trial yet"
    c = d.get("claim")
    if c:
        out += f"\nclaim ({c['hypothesis']}): tuning gains ≥ {fmt_written(c['pct'])} % {c['metric']} over the default settings"
        if c.get("verdict"):
            gain = "" if c.get("gain_pct") is None else f", measured {fmt_signed(c['gain_pct'], 3)} %"
            out += (f": {c['verdict']}{gain} (trial {c['tuned']} against {kv(c['default'])}, {c['rounds']} runs each)"
                    + (f"; plan(s) {', '.join(map(str, c['plans']))} got the measured gain" if c.get("plans") else ""))
        else:
            out += ": not judged yet"
    for w in d.get("workers") or []:  # --on: the workers on other hosts
        out += (f"\nworker {w['worker']} on {w['on']}: exit {w['exit_code']}"
                + (f", {w['error']}" if w.get("error") else "") + f" ({w['log']})")
    return out


def _above(pct: float) -> str:
    """`1.69 % above` / `0.22 % below`: which way the first reading was off."""
    return f"{fmt_num(abs(pct))} % {'above' if pct >= 0 else 'below'}"


@click.group("tune", cls=_TuneGroup)
def tune() -> None:
    """Search a spec's `search:` space with Optuna; each trial a launched point (docs/tune.md)."""


@tune.command("run")
@click.argument("spec", metavar="SPEC")
@click.option("--maximize", "maximize", multiple=True, metavar="METRIC", help="A metric to maximise (repeatable: several make a Pareto front).")
@click.option("--minimize", "minimize", multiple=True, metavar="METRIC", help="A metric to minimise (repeatable).")
@click.option("--constraint", "constraints", multiple=True, metavar="EXPR",
              help="A condition every good trial meets, over its metrics: 'p99_ttft_ms <= 200', 'failed == 0' (repeatable).")
@click.option("--trials", type=int, default=None, metavar="N", help="The study's number of trials (default 20; the grid's size for --sampler grid). Again: resumes up to N.")
@click.option("--timeout", "timeout_s", type=float, default=None, metavar="S", help="Start no trial after S seconds.")
@click.option("--workers", type=int, default=1, show_default=True, metavar="N", help="Local worker processes sharing the study.")
@click.option("--on", "on", multiple=True, metavar="EXECUTOR",
              help="Run the workers there instead: ssh:HOST or slurm:NAME (optlog.yaml executors), slurm; repeatable. "
                   "max(--workers, targets) workers, round robin; needs a PostgreSQL workspace.")
@click.option("--study", metavar="NAME", help="The study's name (default: the spec's name); an existing one is resumed.")
@click.option("--sampler", type=click.Choice(["tpe", "nsga2", "random", "grid"]), default=None,
              help="Default tpe for one objective, nsga2 for several.")
@click.option("--seed", type=int, default=None, help="The sampler's seed (reproducible choices with one worker).")
@click.option("--set", "sets", multiple=True, type=KeyValue("--set", lists=True), metavar="K=V",
              help="Set a value the templates use (as run launch --set).")
@click.option("--server-url", metavar="URL", help="Use this already running server (no server start).")
@click.option("--hypothesis", metavar="ID", help="Attach every trial's runs as evidence to this hypothesis.")
@click.option("--remeasure", type=int, default=None, metavar="N",
              help="Re-measure the best and the runner-up (or the front) N times each, interleaved, before naming "
                   "the best (default tune.remeasure in optlog.yaml, 3; 0: no re-measure).")
@click.option("--prune-above", "prune_above", metavar="PARAM",
              help="Do not launch a configuration that an earlier trial, the same but for a lower PARAM (concurrency), "
                   "showed to break an upper-bound constraint ('p99_ttft_ms <= 200'): it is pruned.")
@click.option("--claim", type=float, default=None, metavar="PCT",
              help="Register first the claim 'tuning gains >= PCT % over the default settings' (the spec's params: "
                   "values), judged by a verdict on the best and the default re-measured interleaved (docs/tune.md).")
@agent(args={"spec": "The run spec with a `search:` section: a file under runs/ (name or path)."},
       description="Runs trials in the foreground until the study has --trials trials; keep --trials small.")
@verb(_human, exit=lambda d, _: 130 if d.get("cancelled") else 1 if d.get("worker_errors") else 0)
def tune_run(call: Call, spec: str, maximize: tuple[str, ...], minimize: tuple[str, ...], constraints: tuple[str, ...],
             trials: int | None, timeout_s: float | None, workers: int, on: tuple[str, ...], study: str | None,
             sampler: str | None, seed: int | None, sets: tuple[tuple[str, Any], ...], server_url: str | None,
             hypothesis: str | None, remeasure: int | None, prune_above: str | None,
             claim: float | None) -> dict[str, Any]:
    """Run or resume a study: each trial a launched point; the best (feasible) trial(s) at the end."""
    objectives = [[m, "maximize"] for m in maximize] + [[m, "minimize"] for m in minimize]
    a = svc.TuneArgs(spec=spec, objectives=objectives, constraints=list(constraints), trials=trials, timeout_s=timeout_s,
                     workers=workers, study=study, sampler=sampler, seed=seed, sets=list(sets), server_url=server_url,
                     hypothesis=hypothesis, remeasure=remeasure, prune_above=prune_above, claim=claim,
                     on=list(on))
    return svc.tune(call.ctx, a, on_event=progress() if call.narrate else None)


@tune.command("list")
@agent(read_only=True)
@verb(lambda d: table([[r["study"], r["spec"] or "", ",".join(r["objectives"] or []), r["trials"]] for r in d["studies"]],
                      ["study", "spec", "objectives", "trials"]))
def tune_list(call: Call) -> dict[str, Any]:
    """The studies of this workspace."""
    return svc.list_doc(call.ctx)


@tune.command("show")
@click.argument("study", metavar="STUDY")
@agent(read_only=True, args={"study": "A study's name (tune_list shows them)."})
@verb(_human)
def tune_show(call: Call, study: str) -> dict[str, Any]:
    """A study's trials and its best (feasible) trial(s), or its Pareto front."""
    return svc.show(call.ctx, study)
