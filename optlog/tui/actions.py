"""What the dashboard does: each write action is one service verb behind a form made from the verb's
parameters (`forms.verb_form`: the action names the parameters it asks for), run
in a thread by `Loading.run_service` (errors become notifications, a reload follows). The verb is
the one the CLI command and the MCP tool call (the catalogue's `hypotheses.hyp_add`, `predictions.verdict`, ...),
with `detail=False` where the dashboard only needs the acknowledgement.

The service layer is imported inside each action: it loads after the first frame."""

from __future__ import annotations

from typing import Any, Callable, cast

from textual import work
from textual.widgets import TabbedContent

from optlog.core import views as VW
from optlog.tui.forms import Field, FormScreen, verb_form, verb_values
from optlog.tui.loading import Loading, verb_call
from optlog.tui.messages import LogLoaded
from optlog.tui.panes.todos import TODO_NEXT, TodosTable

TAB_FOCUS = {"hyp": "#hyp-tree", "todos": "#todo-table", "runs": "#runs-table", "plans": "#plan-table", "log": "#log-table"}


class Actions(Loading):
    """The keys' actions (the app binds them; the command palette lists them)."""

    def action_tab(self, tab: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab
        self.query_one(TAB_FOCUS[tab]).focus()
        if tab == "log":
            self.action_show_log()

    def action_reload(self) -> None:
        self.reload()

    def _ask(self, title: str, fields: list[Field], then: Callable[[dict[str, Any]], None]) -> None:
        def cb(vals: dict[str, Any] | None) -> None:
            if vals is not None:
                then(vals)

        self.push_screen(FormScreen(title, fields), cb)

    def _ask_verb(self, title: str, fn: Callable[..., Any], names: tuple[str, ...],
                  then: Callable[[dict[str, Any]], None], values: dict[str, Any] | None = None,
                  required: tuple[str, ...] = ()) -> None:
        """A form for the parameters `names` of the verb `fn` (`forms.verb_form`: each field made from
        the parameter's declaration), then `then` with the verb's typed arguments."""

        def typed(vals: dict[str, Any]) -> None:
            try:
                kw = verb_values(fn, vals)
            except ValueError as e:
                self.notify(str(e), severity="error")
                return
            then(kw)

        self._ask(title, verb_form(fn, names, values, required), typed)

    def action_add_hypothesis(self, parent: str | None = None) -> None:
        from optlog.api import hypotheses as H  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        title = f"New hypothesis (pivot from {parent})" if parent else "New hypothesis"
        self._ask_verb(title, H.hyp_add, ("title", "statement", "rationale", "rivals"),
                       lambda kw: self.run_verb(H.hyp_add, done="hypothesis added", parent=parent, detail=False, **kw))

    def action_pivot(self) -> None:
        if not self.hyps.selected:
            self.notify("select the hypothesis to pivot from", severity="warning")
            return
        self.action_add_hypothesis(parent=self.hyps.selected)

    def action_add_prediction(self) -> None:
        hid = self.hyps.selected
        if not hid:
            self.notify("select a hypothesis first", severity="warning")
            return

        from optlog.api import predictions as P  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        # the form's "K=V, K=V" text is this face's syntax: `verb_values` parses it into the typed selectors
        self._ask_verb(f"New prediction for {hid}", P.pred_add, ("expect", "metric", "a", "b", "per", "where", "margin"),
                       lambda kw: self.run_verb(P.pred_add, done="prediction added", hid=hid, detail=False, **kw),
                       values={"metric": "total_token_throughput", "per": "concurrency"})

    def action_add_note(self) -> None:
        from optlog.api import notes as N  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected
        self._ask_verb(f"New note{' on ' + hid if hid else ''}", N.note_add, ("text", "link"),
                       lambda kw: self.run_verb(N.note_add, done="note added", hypothesis=hid, **kw))

    def action_add_todo(self) -> None:
        from optlog.api import todos as T  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected
        self._ask_verb("New todo", T.todo_add, ("text", "priority", "hypothesis"),
                       lambda kw: self.run_verb(T.todo_add, done="todo added", **kw), values={"hypothesis": hid})

    def _todo_status(self, to: Callable[[str], str]) -> None:
        from optlog.api import todos as T  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        tid = self.query_one("#todo-table", TodosTable).selected()
        if tid is None:
            self.notify("no todo selected (2: todos)", severity="warning")
            return

        def advance(c: Any) -> Any:
            call = verb_call(c)
            now = next((t["status"] for t in T.todo_list(call)["todos"] if t["id"] == tid), "pending")
            return T.todo_set(call, tid=tid, status=to(now))

        self.run_service(advance)

    def action_advance_todo(self) -> None:
        if self.query_one("#tabs", TabbedContent).active != "todos":
            return
        self._todo_status(lambda s: TODO_NEXT.get(s, "pending"))

    def action_cancel_todo(self) -> None:
        self._todo_status(lambda s: "cancelled")

    def action_verdict(self) -> None:
        from optlog.api import predictions as P  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        def summary(res: dict[str, Any]) -> None:
            lines = [VW.verdict_head(r) for r in res.get("results", [])]  # as `optlog verdict` prints them
            self.notify("\n".join(lines) or "no predictions to judge", title="verdict", timeout=8)

        self.run_verb(P.verdict, then=summary, all_=True, detail=False)

    def action_next_experiment(self) -> None:
        """`optlog next` for the selected hypothesis (all pairs without one): the best candidate of
        each pair, and the spec it wrote (nothing is launched)."""
        from optlog.api import nextexp as NX  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected

        def summary(res: dict[str, Any]) -> None:
            lines = []
            for e in res.get("pairs", []):
                c = e["candidates"][0] if e["candidates"] else None
                lines.append(f"{e['hypothesis']} vs {e['other']}: {e['state']}"
                             + (("; re-run the loaded cells on a quiet machine" if c["source"] == "quiet" else
                                 f"; vary {c['axis']} to {', '.join(map(str, c['levels']))}") if c else "")
                             + (f"; wrote {e['spec']}" if e.get("spec") else "")
                             + ("; missing: " + "; ".join(e["missing"][:2]) if e.get("missing") else ""))
            self.notify("\n".join(lines) or res.get("note") or "no rival or parent to tell apart",
                        title="next experiment", timeout=12)

        self.run_verb(NX.next_experiment, then=summary, hid=hid)

    def action_override(self) -> None:
        from optlog.api import hypotheses as H  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected
        if not hid:
            self.notify("select a hypothesis first", severity="warning")
            return
        self._ask_verb(f"Override the status of {hid}", H.hyp_set, ("status", "why"),
                       lambda kw: self.run_verb(H.hyp_set, done="status set", hid=hid, detail=False, **kw),
                       required=("why",))

    def action_invalidate(self) -> None:
        from optlog.api import judging as J  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        rid = self.runs.selected
        if rid is None:
            self.notify("select a run first (3: runs)", severity="warning")
            return
        self._ask_verb(f"Invalidate run {rid}", J.run_invalidate, ("why",),
                       lambda kw: self.run_verb(J.run_invalidate, done=f"run {rid} invalidated", refs=(str(rid),), **kw),
                       required=("why",))

    def action_launch(self) -> None:
        from optlog.api import launches as Lh  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        def go(kw: dict[str, Any]) -> None:
            self.run_verb(Lh.run_launch, done="launch started", **{**kw, "spec": kw["spec"].strip()}, detach=True)
            self.action_tab("runs")

        self._ask_verb("Launch a run spec", Lh.run_launch, ("spec", "hypothesis"), go,
                       values={"spec": "runs/", "hypothesis": self.hyps.selected}, required=("spec",))

    def action_cancel_launch(self) -> None:
        from optlog.api import launches as Lh  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        lid = self.active_launch
        if lid is None:
            self.notify("no launch is running", severity="warning")
            return
        self.run_verb(Lh.run_cancel, done=f"launch {lid} cancelled", ref=f"L{lid}")

    def action_add_plan(self) -> None:
        from optlog.api import plans as Pl  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        self._ask_verb("New improvement plan", Pl.plan_add, ("title", "gain", "effort", "confidence", "needs"),
                       lambda kw: self.run_verb(Pl.plan_add, done="plan added", detail=False, **kw),
                       values={"effort": "M", "confidence": "0.5", "needs": self.hyps.selected})

    def action_render_plans(self) -> None:
        from optlog.api import plans as Pl  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        self.run_verb(Pl.plan_render, done="plans rendered and committed", detail=False)

    def action_report(self) -> None:
        from optlog.api import plans as Pl  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        self.run_verb(Pl.report, then=lambda r: self.notify(f"report written: {r.get('file', '')}"))

    @work(thread=True, exclusive=True, group="log", exit_on_error=False)
    def action_show_log(self) -> None:
        try:
            from optlog.api import history as Hi  # deferred: the verbs (~0.6 s with the service layer) after the first frame

            events = Hi.log(verb_call(self.ctx)).get("events", [])  # `optlog log`'s verb
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, f"log: {e}", severity="error")
            return
        self.post_message(LogLoaded(cast(list[dict[str, Any]], events)))
        self.call_from_thread(setattr, self.query_one("#tabs", TabbedContent), "active", "log")
