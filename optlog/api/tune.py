"""tune SPEC | tune list | tune show STUDY: a search over a spec's `search:` space (docs/tune.md).

`optlog tune SPEC …` is `optlog tune run SPEC …`: the group runs `run` when its first word is not
one of its verbs (`group(..., default="run")`), so the short spelling of the issue works and the
MCP tools stay derived (tune_run, tune_list, tune_show).
"""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.launches import cancelled_exit, progress
from optlog.api.verb import Arg, Call, Opt, Pairs, group, verb
from optlog.service import tune as svc

group("tune", "Search a spec's `search:` space with Optuna; each trial a launched point (docs/tune.md).", default="run")


@verb("tune run", exit=lambda d, _: cancelled_exit(d) if d.get("cancelled") else 1 if d.get("worker_errors") else 0,
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


@verb("tune list", read_only=True)
def tune_list(call: Call) -> dict[str, Any]:
    """The studies of this workspace."""
    return {"studies": svc.list_studies(call.ctx)}


@verb("tune show", read_only=True)
def tune_show(call: Call, *,
              study: Annotated[str, Arg(metavar="STUDY", help="A study's name (tune_list shows them).")],
              ) -> dict[str, Any]:
    """A study's trials and its best (feasible) trial(s), or its Pareto front."""
    return svc.show(call.ctx, study)
