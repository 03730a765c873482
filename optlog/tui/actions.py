"""What the dashboard does: each write action is one service verb behind a form (`forms.py`), run
in a thread by `Loading.run_service` (errors become notifications, a reload follows). The verb is
the one the CLI command and the MCP tool call (the catalogue's `hypotheses.hyp_add`, `predictions.verdict`, ...),
with `detail=False` where the dashboard only needs the acknowledgement.

The service layer is imported inside each action: it loads after the first frame."""

from __future__ import annotations

from typing import Any, Callable, cast

from textual import work
from textual.widgets import TabbedContent

from optlog.core import views as VW
from optlog.core.labels import parse_pairs
from optlog.core.statuses import HYP_STATUSES
from optlog.core.todos import PRIORITIES
from optlog.tui.forms import Field, FormScreen
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

    def action_add_hypothesis(self, parent: str | None = None) -> None:
        from optlog.api import hypotheses as H  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        title = f"New hypothesis (pivot from {parent})" if parent else "New hypothesis"
        self._ask(title, [Field("title", "Title", required=True), Field("statement", "Statement"),
                          Field("rationale", "Rationale"), Field("rival", "Rival id (optional)")],
                  lambda v: self.run_verb(H.hyp_add, done="hypothesis added", title=v["title"], statement=v["statement"],
                                          rationale=v["rationale"], parent=parent,
                                          rivals=tuple(x for x in [v["rival"].strip()] if x), detail=False))

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

        def go(v: dict[str, Any]) -> None:
            from optlog.api import predictions as P  # deferred: the verbs (~0.6 s with the service layer) after the first frame

            # the form's "K=V, K=V" text is this face's syntax: parsed here, the verb takes typed selectors
            sel = lambda s, f: tuple(parse_pairs([x.strip() for x in s.split(",") if x.strip()], f).items())  # noqa: E731
            self.run_verb(P.pred_add, done="prediction added", hid=hid, expect=v["expect"], metric=v["metric"] or None,
                          a=sel(v["a"], "--a"), b=sel(v["b"], "--b"), where=v["where"] or None, per=v["per"] or None,
                          margin=float(v["margin"]) if v["margin"] else None, detail=False)

        self._ask(f"New prediction for {hid}", [
            Field("expect", "Expression (a > b, a / b in [0.3, 0.6], …)", required=True),
            Field("metric", "Metric", "total_token_throughput"),
            Field("a", "Group a (K=V, comma-separated)", placeholder="config=tp4pp2"),
            Field("b", "Group b (K=V, comma-separated)", placeholder="config=tp8"),
            Field("per", "Judged per label", "concurrency"),
            Field("where", "Where (optional)"),
            Field("margin", "Margin (optional)"),
        ], go)

    def action_add_note(self) -> None:
        from optlog.api import notes as N  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected
        self._ask(f"New note{' on ' + hid if hid else ''}", [Field("text", "Note", required=True), Field("link", "Link (optional)")],
                  lambda v: self.run_verb(N.note_add, done="note added", text=v["text"], hypothesis=hid,
                                          link=v["link"] or None))

    def action_add_todo(self) -> None:
        from optlog.api import todos as T  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        hid = self.hyps.selected
        self._ask("New todo", [Field("content", "Todo", required=True),
                               Field("priority", "Priority", "medium", choices=list(PRIORITIES)),
                               Field("hypothesis", "Hypothesis (optional)", hid or "")],
                  lambda v: self.run_verb(T.todo_add, done="todo added", text=v["content"], priority=v["priority"],
                                          hypothesis=v["hypothesis"] or None))

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
        self._ask(f"Override the status of {hid}", [Field("status", "Status", choices=list(HYP_STATUSES)),
                                                     Field("why", "Why", required=True)],
                  lambda v: self.run_verb(H.hyp_set, done="status set", hid=hid, status=v["status"], why=v["why"], detail=False))

    def action_invalidate(self) -> None:
        from optlog.api import judging as J  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        rid = self.runs.selected
        if rid is None:
            self.notify("select a run first (3: runs)", severity="warning")
            return
        self._ask(f"Invalidate run {rid}", [Field("why", "Why is this run wrong?", required=True)],
                  lambda v: self.run_verb(J.run_invalidate, done=f"run {rid} invalidated", refs=(str(rid),), why=v["why"]))

    def action_launch(self) -> None:
        from optlog.api import launches as Lh  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        def go(v: dict[str, Any]) -> None:
            self.run_verb(Lh.run_launch, done="launch started", spec=v["spec"].strip(),
                          hypothesis=v["hypothesis"] or None, detach=True)
            self.action_tab("runs")

        self._ask("Launch a run spec", [Field("spec", "Spec file", "runs/", required=True),
                                        Field("hypothesis", "Hypothesis (optional)", self.hyps.selected or "")], go)

    def action_cancel_launch(self) -> None:
        from optlog.api import launches as Lh  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        lid = self.active_launch
        if lid is None:
            self.notify("no launch is running", severity="warning")
            return
        self.run_verb(Lh.run_cancel, done=f"launch {lid} cancelled", ref=f"L{lid}")

    def action_add_plan(self) -> None:
        from optlog.api import plans as Pl  # deferred: the verbs (~0.6 s with the service layer) after the first frame

        def go(v: dict[str, Any]) -> None:
            needs = tuple(x.strip() for x in v["needs"].split(",") if x.strip())
            self.run_verb(Pl.plan_add, done="plan added", title=v["title"], gain=v["gain"], effort=v["effort"],
                          confidence=v["confidence"], needs=needs, detail=False)

        self._ask("New improvement plan", [Field("title", "Title", required=True),
                                           Field("gain", "Gain range (e.g. 10-30%)", required=True),
                                           Field("effort", "Effort", "M", choices=["S", "M", "L"]),
                                           Field("confidence", "Confidence 0-1", "0.5", required=True),
                                           Field("needs", "Needs hypotheses (comma-separated)", self.hyps.selected or "")], go)

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
