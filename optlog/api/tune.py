"""tune SPEC | tune list | tune show STUDY: a search over a spec's `search:` space (docs/tune.md).

`optlog tune SPEC …` is `optlog tune run SPEC …`: the group runs `run` when its first word is not
one of its verbs (`group(..., default="run")`), so the short spelling of the issue works and the
MCP tools stay derived (tune_run, tune_list, tune_show).
"""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.launches import cancelled_exit, progress
from optlog.api.text import fmt_num, kv, table
from optlog.api.verb import Arg, Call, Opt, Pairs, group, verb
from optlog.core.numfmt import fmt_p, fmt_signed, fmt_written, plural
from optlog.service import tune as svc

group("tune", "Search a spec's `search:` space with Optuna; each trial a launched point (docs/tune.md).", default="run")


def _human(d: dict[str, Any]) -> str:
    objs = d.get("objectives") or []
    rows = []
    for t in d["trials"]:
        vals = t["values"] or []
        rows.append([t["number"], t["state"] + ("" if t.get("feasible") in (None, True) else " (infeasible)"),
                     kv(t["params"])] + [fmt_num(v) for v in vals] + [t["run"] if t["run"] is not None else "",
                                                                       f"= trial {t['same_as']}" if "same_as" in t else t.get("pruned", "")])
    head = f"study {d['study']} ({d.get('sampler')}): {plural(len(d['trials']), 'trial')}"
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
                    + (f"; {'plan' if len(c['plans']) == 1 else 'plans'} {', '.join(map(str, c['plans']))} got the measured gain" if c.get("plans") else ""))
        else:
            out += ": not judged yet"
    for w in d.get("workers") or []:  # --on: the workers on other hosts
        out += (f"\nworker {w['worker']} on {w['on']}: exit {w['exit_code']}"
                + (f", {w['error']}" if w.get("error") else "") + f" ({w['log']})")
    return out


def _above(pct: float) -> str:
    """`1.69 % above` / `0.22 % below`: which way the first reading was off."""
    return f"{fmt_num(abs(pct))} % {'above' if pct >= 0 else 'below'}"


@verb("tune run", _human, exit=lambda d, _: cancelled_exit(d) if d.get("cancelled") else 1 if d.get("worker_errors") else 0,
      description="Runs trials in the foreground until the study has --trials trials; keep --trials small.")
def tune_run(call: Call, *,
             spec: Annotated[str, Arg(metavar="SPEC", help="The run spec with a `search:` section: a file under runs/ (name or path).")],
             maximize: Annotated[tuple[str, ...], Opt(metavar="METRIC", help="A metric to maximise (repeatable: several make a Pareto front).")] = (),
             minimize: Annotated[tuple[str, ...], Opt(metavar="METRIC", help="A metric to minimise (repeatable).")] = (),
             constraints: Annotated[tuple[str, ...], Opt(
                 "--constraint", metavar="EXPR",
                 help="A condition every good trial meets, over its metrics: 'p99_ttft_ms <= 200', 'failed == 0' (repeatable).")] = (),
             trials: Annotated[int | None, Opt(metavar="N", help="The study's number of trials (default 20; the grid's size for --sampler grid). Again: resumes up to N.")] = None,
             timeout_s: Annotated[float | None, Opt("--timeout", metavar="S", help="Start no trial after S seconds.")] = None,
             workers: Annotated[int, Opt(show_default=True, metavar="N", help="Local worker processes sharing the study.")] = 1,
             on: Annotated[tuple[str, ...], Opt(
                 metavar="EXECUTOR",
                 help="Run the workers there instead: ssh:HOST or slurm:NAME (optlog.yaml executors), slurm; repeatable. "
                      "max(--workers, targets) workers, round robin; needs a PostgreSQL workspace.")] = (),
             study: Annotated[str | None, Opt(metavar="NAME", help="The study's name (default: the spec's name); an existing one is resumed.")] = None,
             sampler: Annotated[str | None, Opt(choices=("tpe", "nsga2", "random", "grid"),
                                                help="Default tpe for one objective, nsga2 for several.")] = None,
             seed: Annotated[int | None, Opt(help="The sampler's seed (reproducible choices with one worker).")] = None,
             sets: Annotated[tuple[tuple[str, Any], ...], Pairs(lists=True), Opt(
                 "--set", metavar="K=V", help="Set a value the templates use (as run launch --set).")] = (),
             server_url: Annotated[str | None, Opt(metavar="URL", help="Use this already running server (no server start).")] = None,
             hypothesis: Annotated[str | None, Opt(metavar="ID", help="Attach every trial's runs as evidence to this hypothesis.")] = None,
             remeasure: Annotated[int | None, Opt(
                 metavar="N", help="Re-measure the best and the runner-up (or the front) N times each, interleaved, before naming "
                                   "the best (default tune.remeasure in optlog.yaml, 3; 0: no re-measure).")] = None,
             prune_above: Annotated[str | None, Opt(
                 metavar="PARAM", help="Do not launch a configuration that an earlier trial, the same but for a lower PARAM (concurrency), "
                                       "showed to break an upper-bound constraint ('p99_ttft_ms <= 200'): it is pruned.")] = None,
             claim: Annotated[float | None, Opt(
                 metavar="PCT", help="Register first the claim 'tuning gains >= PCT % over the default settings' (the spec's params: "
                                     "values), judged by a verdict on the best and the default re-measured interleaved (docs/tune.md).")] = None,
             ) -> dict[str, Any]:
    """Run or resume a study: each trial a launched point; the best (feasible) trial(s) at the end."""
    objectives = [[m, "maximize"] for m in maximize] + [[m, "minimize"] for m in minimize]
    a = svc.TuneArgs(spec=spec, objectives=objectives, constraints=list(constraints), trials=trials, timeout_s=timeout_s,
                     workers=workers, study=study, sampler=sampler, seed=seed, sets=list(sets), server_url=server_url,
                     hypothesis=hypothesis, remeasure=remeasure, prune_above=prune_above, claim=claim,
                     on=list(on))
    return svc.tune(call.ctx, a, on_event=progress() if call.narrate else None)


@verb("tune list", lambda d: table([[r["study"], r["spec"] or "", ",".join(r["objectives"] or []), r["trials"]] for r in d["studies"]],
                                   ["study", "spec", "objectives", "trials"]), read_only=True)
def tune_list(call: Call) -> dict[str, Any]:
    """The studies of this workspace."""
    return svc.list_doc(call.ctx)


@verb("tune show", _human, read_only=True)
def tune_show(call: Call, *,
              study: Annotated[str, Arg(metavar="STUDY", help="A study's name (tune_list shows them).")],
              ) -> dict[str, Any]:
    """A study's trials and its best (feasible) trial(s), or its Pareto front."""
    return svc.show(call.ctx, study)
