"""The MCP face: optlog's verbs as MCP tools over stdio, for coding agents.

Thin by design: each tool parses nothing itself, calls the same service function the CLI calls and
returns the same JSON document `--json` prints. Expected errors (bad input, unknown ids) come back
as tool errors carrying the CLI's error document, so an agent reads one shape everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from optlog.errors import OptlogError

INSTRUCTIONS = """\
optlog is the lab notebook of an inference-performance session. Record what you believe as a
hypothesis, pre-register machine-checkable predictions, keep your todo list here (todo_write takes
your todowrite list unchanged), record or launch benchmark runs as evidence, then call verdict:
optlog judges each prediction against comparable runs and commits the decision to git. Call
status first when you lose context."""


def _ctx(chdir: str | None) -> Any:
    from optlog.service.context import Ctx

    return Ctx.find(chdir)


def build_server(chdir: str | None = None) -> Any:
    """The MCPServer with every tool registered (separate from `serve` so tests can list tools)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from optlog import __version__

    server = MCPServer("optlog", version=__version__, instructions=INSTRUCTIONS)

    def tool() -> Callable[[Callable[..., Any]], Any]:
        """`server.tool()`, with the text rule (`optlog.core.text.check_tree`) applied to every
        argument before the verb runs: an MCP call is input like any other."""
        import functools

        def deco(fn: Callable[..., Any]) -> Any:
            @functools.wraps(fn)
            def checked(*args: Any, **kwargs: Any) -> Any:
                from optlog.core.text import check_tree

                try:
                    check_tree(kwargs)
                except OptlogError as e:
                    raise ToolError(json.dumps(e.to_json())) from None
                return fn(*args, **kwargs)

            return server.tool()(checked)

        return deco

    def call(fn: Callable[[Any], Any]) -> dict[str, Any]:
        ctx = _ctx(chdir)
        try:
            out = fn(ctx)
            return json.loads(json.dumps(out, default=str))
        except OptlogError as e:
            raise ToolError(json.dumps(e.to_json())) from None
        finally:
            ctx.close()

    # ------------------------------------------------------------ digest and hypotheses
    @tool()
    def status() -> dict[str, Any]:
        """Digest: open hypotheses with their predictions, live runs, latest verdicts, pending todos."""
        from optlog.service.status import status as st

        return call(st)

    @tool()
    def hypothesis_add(title: str, id: str | None = None, statement: str = "", rationale: str = "",
                       parent: str | None = None, rivals: list[str] | None = None) -> dict[str, Any]:
        """Add a hypothesis (committed to git). `parent` makes it a pivot from that hypothesis;
        `rivals` names competing explanations."""
        from optlog.service import hypotheses as H

        def f(ctx: Any) -> Any:
            doc = H.add(ctx, title, hid=id, statement=statement, rationale=rationale, parent=parent,
                        rivals=tuple(rivals or ()))
            return H.show(ctx, doc.id)

        return call(f)

    @tool()
    def hypothesis_list(status: str | None = None) -> dict[str, Any]:
        """List hypotheses (optionally only one status)."""
        from optlog.service import hypotheses as H

        return call(lambda ctx: {"hypotheses": H.list_(ctx, status)})

    @tool()
    def hypothesis_show(id: str) -> dict[str, Any]:
        """One hypothesis: statement, predictions, verdict history, rivals, notes, linked runs."""
        from optlog.service import hypotheses as H

        return call(lambda ctx: H.show(ctx, id))

    @tool()
    def hypothesis_set(id: str, status: str, why: str) -> dict[str, Any]:
        """Set a status by hand (an override kept beside the automatic verdict); `why` is required."""
        from optlog.service import hypotheses as H

        def f(ctx: Any) -> Any:
            H.set_status(ctx, id, status, why)
            return H.show(ctx, id)

        return call(f)

    # ------------------------------------------------------------ predictions and verdicts
    @tool()
    def prediction_add(hypothesis: str, expect: str, metric: str | None = None, a: list[str] | None = None,
                       b: list[str] | None = None, where: str | None = None, per: str | None = None,
                       margin: float | None = None) -> dict[str, Any]:
        """Pre-register a prediction, e.g. expect="a > b", metric="total_token_throughput",
        a=["config=tp4pp2"], b=["config=tp8"], per="concurrency"."""
        from optlog.service import predictions as P

        return call(lambda ctx: P.add(ctx, hypothesis, expect=expect, metric=metric, a=tuple(a or ()),
                                      b=tuple(b or ()), where=where, per=per, margin=margin))

    @tool()
    def verdict(id: str | None = None) -> dict[str, Any]:
        """Judge predictions against the evidence (one hypothesis, or all) and commit the verdicts."""
        from optlog.service import verdicts as V

        return call(lambda ctx: V.evaluate(ctx, hid=id, all=id is None))

    @tool()
    def compare(metric: str, by: str, per: str | None = None, where: str | None = None,
                baseline: str | None = None) -> dict[str, Any]:
        """The side-by-side table: a row per `per` level, a column per `by` group, with ratios
        against `baseline` (a value of the `by` label)."""
        from optlog.service import compare as C

        return call(lambda ctx: C.compare(ctx, metric, by, per, where, baseline))

    # ------------------------------------------------------------ todos and notes
    @tool()
    def todo_write(todos: list[dict[str, Any]]) -> dict[str, Any]:
        """Replace the todo list with your todowrite list (content, status, priority?, id?; other
        keys are kept). Links to hypotheses survive, matched by id, else by content."""
        from optlog.service import todos as T

        return call(lambda ctx: {"todos": T.write(ctx, {"todos": todos}, "<mcp>")})

    @tool()
    def todo_list(status: str | None = None) -> dict[str, Any]:
        """The todo list, in the shape todo_write takes."""
        from optlog.service import todos as T

        return call(lambda ctx: {"todos": T.list_(ctx, status)})

    @tool()
    def todo_set(id: str, status: str | None = None, priority: str | None = None,
                 hypothesis: str | None = None) -> dict[str, Any]:
        """Change one todo's status, priority or hypothesis link."""
        from optlog.service import todos as T

        return call(lambda ctx: T.set_(ctx, id, status, priority, hypothesis))

    @tool()
    def note_add(text: str, hypothesis: str | None = None, link: str | None = None) -> dict[str, Any]:
        """Evidence that is not a number: an observation, a bug report link."""
        from optlog.service import evidence as E

        return call(lambda ctx: E.add_note(ctx, text, hypothesis, link))

    # ------------------------------------------------------------ runs
    @tool()
    def run_record(labels: dict[str, Any], metrics: dict[str, float], hypothesis: str | None = None,
                   note: str | None = None) -> dict[str, Any]:
        """Store a run done elsewhere, e.g. labels={"config": "tp8", "concurrency": 256},
        metrics={"total_token_throughput": 1867}."""
        from optlog.service import evidence as E

        return call(lambda ctx: E.record(ctx, [f"{k}={v}" for k, v in labels.items()],
                                         [f"{k}={v}" for k, v in metrics.items()], hypothesis, note))

    @tool()
    def run_list(status: str | None = None, hypothesis: str | None = None, limit: int | None = 200) -> dict[str, Any]:
        """Runs with labels and metrics."""
        from optlog.service import evidence as E

        return call(lambda ctx: {"runs": E.list_runs(ctx, status=status, hypothesis=hypothesis, limit=limit)})

    @tool()
    def run_show(id: int) -> dict[str, Any]:
        """One run with metrics, telemetry summary, diagnosis, environment and artifacts."""
        from optlog.service import evidence as E

        return call(lambda ctx: E.show_run(ctx, id))

    @tool()
    def run_launch(spec: str, hypothesis: str | None = None, set: list[str] | None = None,
                   server_url: str | None = None, allow_concurrent: bool = False) -> dict[str, Any]:
        """Launch a run spec detached (returns at once with the launch and run ids); poll run_show
        or status for progress. It waits while another launch uses the machine, unless
        allow_concurrent (then overlapping runs are labelled concurrent and not compared)."""
        from optlog.service import launch as Lh

        return call(lambda ctx: Lh.launch(ctx, spec, hypothesis=hypothesis, sets=tuple(set or ()),
                                          server_url=server_url, detach=True, allow_concurrent=allow_concurrent))

    @tool()
    def run_invalidate(id: int | None = None, why: str = "", ids: list[str] | None = None) -> dict[str, Any]:
        """Mark a run wrong (e.g. the kernel returned zeros); verdicts that used it are re-evaluated.
        `ids` takes several run ids and launches ("L3") at once: one commit, one re-judgement."""
        from optlog.service import verdicts as V

        if ids:
            return call(lambda ctx: V.invalidate_many(ctx, [str(x) for x in ids] + ([str(id)] if id is not None else []), why))
        return call(lambda ctx: V.invalidate(ctx, id if id is not None else "", why))

    # ------------------------------------------------------------ plans, report, history
    @tool()
    def plan_list() -> dict[str, Any]:
        """Improvement plans in rank order, each with its score and the reason for its weight."""
        from optlog.service import plans as Pl

        return call(lambda ctx: Pl.list_(ctx))

    @tool()
    def plan_add(title: str, gain: str, effort: str, confidence: float, needs: list[str] | None = None,
                 rationale: str | None = None) -> dict[str, Any]:
        """Add an improvement plan: gain "10-30%", effort S|M|L, confidence 0..1, the hypotheses
        it rests on (its rank follows their verdicts)."""
        from optlog.service import plans as Pl

        return call(lambda ctx: Pl.add(ctx, title, gain=gain, effort=effort, confidence=confidence,
                                       needs=tuple(needs or ()), rationale=rationale))

    @tool()
    def report() -> dict[str, Any]:
        """Write the session report (markdown with plots) to reports/ and commit it."""
        from optlog.service import report as Rp

        return call(lambda ctx: Rp.write(ctx))

    @tool()
    def log(hypothesis: str | None = None) -> dict[str, Any]:
        """The decision timeline from git."""
        from optlog.service import history as Hi

        return call(lambda ctx: Hi.log(ctx, hypothesis))

    return server


def serve(chdir: str | None = None) -> None:
    server = build_server(chdir)
    server.run("stdio")
