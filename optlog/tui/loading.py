"""How the dashboard reads: the first frame's quick tree, opening the workspace after it, the full
load, polling one cheap change token, the live sampler, and the detail loads. All in thread workers
(database, git, files and subprocesses block); what they read reaches the panes as typed messages
(`optlog.tui.messages`), whose handlers the app names by class.

The service layer is imported inside the workers: it costs ~0.6 s (SQLAlchemy, pydantic), and the
first frame is painted from the stdlib-only quick tree before it loads.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

from textual import work
from textual.app import App
from textual.css.query import NoMatches
from textual.message import Message
from textual.worker import Worker

from optlog.core import text as TX
from optlog.api.session import Ctx
from optlog.errors import plain
from optlog.tui.messages import (HypothesesLoaded, HypothesisDetailLoaded, HypothesisSelected, LaunchesLoaded,
                                 LoadFinished, MetricsChosen, OverviewLoaded, PlansLoaded, RunDetailLoaded,
                                 RunDiffAsked, RunDiffLoaded, RunSelected, RunsLoaded, TelemetrySampled, TodosLoaded)
from optlog.tui.panes.hypotheses import HypothesesPane
from optlog.tui.panes.runs import RunsPane

A = TypeVar("A", bound=App[None])
M = TypeVar("M", bound=Message)


def applies(fn: Callable[[A, M], None]) -> Callable[[A, M], None]:
    """A handler that applies loaded data: in one batch (one repaint); a load that finished while
    the app was closing finds no widgets, and that is no error."""

    @functools.wraps(fn)
    def apply(app: A, msg: M) -> None:
        try:
            with app.batch_update():
                fn(app, msg)
        except NoMatches:
            pass

    return apply


def verb_call(ctx: Ctx) -> Any:
    """The `Call` a verb gets from the dashboard: its context; narration has no channel here (a
    verb's outcome is the notification)."""
    from optlog.api.verb import Call  # deferred: the catalogue loads after the first frame

    return Call(chdir=None, ctx=lambda: ctx, narrate=False, say=lambda _text: None)


class Loading(App[None]):
    """The reading half of the app (OptlogApp wires the panes it fills)."""

    hyps: HypothesesPane
    runs: RunsPane

    def __init__(self, ctx: Ctx, poll_s: float = 0.5) -> None:
        super().__init__()
        self.ctx = ctx
        self.poll_s = poll_s
        self.token: Any = None
        self.run_metrics: list[str] | None = None  # the runs' metric columns; None: the service's default choice
        self.active_launch: int | None = None
        self._launches: list[dict[str, Any]] = []  # live launches, for the overview's launch pane
        self._live: Any = None  # telemetry.live sampler, while a launch runs on this machine
        self._polling: Worker[None] | None = None
        ctx.on_notice = self._notice

        # opening the database (SQLAlchemy, pydantic and YAML imports, schema check, launch recovery)
        # starts once the first frame is painted from the index (`quick_tree`): started earlier, it
        # would compete with Textual's own start-up for the interpreter
        self._warm = threading.Thread(target=self._warm_up, name="optlog-warm-up", daemon=True)
        self._full_started = False
        # the first frame's tree, read (stdlib only, ~30 ms) while Textual sets itself up
        self._quick: list[dict[str, Any]] | None = None
        self._quick_thread = threading.Thread(target=self._read_quick, name="optlog-quick-tree", daemon=True)
        self._quick_thread.start()

    def notify(self, message: str, *args: Any, **kw: Any) -> None:
        """Every notification passes the output rule (an error's text may quote data)."""
        super().notify(TX.shown(str(message)), *args, **kw)

    def _notice(self, text: str) -> None:
        """Narration from the service layer, from whichever thread it came (a parameter it names by
        its name: the dashboard has no spelling of its own)."""
        text = plain(text)
        if threading.get_ident() == self._thread_id:
            self.notify(text)
        else:
            self.call_from_thread(self.notify, text)

    # ------------------------------------------------------------------ the first frame
    def _read_quick(self) -> None:
        from optlog.api.dashboard import quick_tree  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self._quick = quick_tree(self.ctx.ws)
        except Exception:  # noqa: BLE001 - the full load paints it, or says what is wrong
            self._quick = None

    def _warm_up(self) -> None:
        try:
            name = self.ctx.config.name
            self.call_from_thread(setattr, self, "sub_title", name)  # the workspace name
            self.ctx.open()  # the database, identity, recovery and committed evidence (Ctx.open)
            from optlog.api import dashboard  # noqa: F401 # deferred: the service layer (~0.6 s) after the first frame
        except Exception:  # noqa: BLE001 - the first load reports it
            pass

    def _start_full(self) -> None:
        """Open the database and load everything (once): after the first frame, or at once when
        there is no quick tree to paint."""
        if self._full_started:
            return
        self._full_started = True
        self._warm.start()
        self.reload()
        self.set_interval(self.poll_s, self._tick)

    def _tick(self) -> None:
        """The poll timer: one poll at a time. A slow poll (a full reload on a loaded machine) is let
        finish: a new one would only mark it cancelled while its thread runs on, reading twice."""
        if self._polling is None or self._polling.is_finished:
            self._polling = self.poll()

    def start_loading(self) -> None:
        """From on_mount: the quick tree (once read) first, then the full start."""
        if self._quick_thread.is_alive():
            self.quick_load()
        else:  # read already: the very first frame shows the tree
            self._after_quick()

    @work(thread=True, exclusive=True, group="quick", exit_on_error=False)
    def quick_load(self) -> None:
        self._quick_thread.join()
        self.call_from_thread(self._after_quick)

    def _after_quick(self) -> None:
        """Paint the quick tree if there is one, then (or at once) open the database and load."""
        if self._quick and not self._full_started:  # else the full load won the race
            self.hyps.paint(TX.shown_tree(self._quick))
            self.call_after_refresh(self._start_full)
        elif not self._quick:
            self._start_full()

    # ------------------------------------------------------------------ workers
    def run_service(self, fn: Callable[[Ctx], Any], done: str | None = None, then: Callable[[Any], None] | None = None) -> None:
        """Call a service verb in a thread; errors become notifications; reload afterwards."""

        def job() -> None:
            try:
                res = fn(self.ctx)
            except Exception as e:  # noqa: BLE001 - every failure is shown, none crashes the app
                self.call_from_thread(self.notify, str(e), severity="error", timeout=8)
                return
            if done:
                self.call_from_thread(self.notify, done)
            if then is not None:
                self.call_from_thread(then, res)
            self.call_from_thread(self.reload)

        self.run_worker(job, thread=True, group="action", exit_on_error=False)

    def run_verb(self, verb: Callable[..., Any], done: str | None = None, then: Callable[[Any], None] | None = None,
                 **args: Any) -> None:
        """Call a verb of the catalogue (`optlog.api`), the one the CLI command and the MCP tool
        call, with this dashboard's context: as `run_service`, in a thread."""
        self.run_service(lambda c: verb(verb_call(c), **args), done=done, then=then)

    def _db_ready(self) -> bool:
        """The database is open (or failed to: the load says so). Before the full start, a reload is
        moot: the full start loads everything anyway."""
        if not self._full_started:
            return False
        self._warm.join()
        return True

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll(self) -> None:
        if not self._db_ready():
            return
        from optlog.api.dashboard import change_token  # deferred: the service layer (~0.6 s) after the first frame

        try:
            tok = change_token(self.ctx)
        except Exception:
            return
        if tok != self.token:
            self.token = tok
            self._load_all()
        elif self.active_launch is not None:  # elapsed time and the log move between database writes
            from optlog.api.dashboard import live_launches  # deferred: the service layer (~0.6 s) after the first frame

            try:
                self.post_message(LaunchesLoaded(live_launches(self.ctx)))
            except Exception:  # noqa: BLE001 - the next reload says what is wrong
                pass
        self._sample_live()

    def _sample_live(self) -> None:
        """One reading of this machine while one of the live launches runs here (poll's thread)."""
        here = any(la.get("here") for la in self._launches)
        if not here:
            if self._live is not None:
                self._live.close()
                self._live = None
                self.post_message(TelemetrySampled(None, None))
            return
        try:
            if self._live is None:
                from optlog.api.dashboard import live_sampler  # deferred: the service layer (~0.6 s) after the first frame

                self._live = live_sampler()
            reading = self._live.read()
        except Exception:  # noqa: BLE001 - telemetry is a view; the launch's own record is the evidence
            return
        self.post_message(TelemetrySampled(self._live, reading))

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def reload(self) -> None:
        if not self._db_ready():
            return
        from optlog.api.dashboard import change_token  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.token = change_token(self.ctx)
        except Exception:
            pass
        self._load_all()

    def _load_all(self) -> None:
        """What is on screen, in the order a person looks: the tree first (one read of the hypothesis
        files, which the overview, the detail and the plans reuse), then todos and the overview,
        launches, the selected detail, the ranked plans, and the runs."""
        from optlog.api import dashboard as D  # deferred: the service layer (~0.6 s) after the first frame

        shown = self.hyps.selected  # None on the first load: the tree's first node loads its own detail
        try:
            roots, docs = D.hypotheses_view(self.ctx)
            self.post_message(HypothesesLoaded(roots, docs))
            todos = D.todos(self.ctx)
            self.post_message(TodosLoaded(todos))
            self.post_message(OverviewLoaded(D.overview(self.ctx, todos, docs)))  # no second read
            self.post_message(LaunchesLoaded(D.live_launches(self.ctx)))
            if shown:
                self.post_message(HypothesisDetailLoaded(D.hypothesis_detail(self.ctx, shown, docs)))
            self.post_message(PlansLoaded(list(D.plans(self.ctx, docs=docs)["plans"])))
            # last: every run (0.2-0.6 s at 10,000) is for the Runs tab, not the first screen
            self.post_message(RunsLoaded(D.runs_index(self.ctx, self.run_metrics)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, f"could not load: {e}", severity="error", timeout=8)
        self.post_message(LoadFinished())

    # ------------------------------------------------------------------ what a pane asks for
    def on_hypothesis_selected(self, msg: HypothesisSelected) -> None:
        self.load_hyp_detail(msg.hid)

    def on_run_selected(self, msg: RunSelected) -> None:
        self.load_run_detail(msg.rid)

    def on_run_diff_asked(self, msg: RunDiffAsked) -> None:
        self.load_run_diff(msg.a, msg.b)

    def on_metrics_chosen(self, msg: MetricsChosen) -> None:
        self.run_metrics = msg.metrics
        self.reload()

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_hyp_detail(self, hid: str) -> None:
        from optlog.api import dashboard as D  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(HypothesisDetailLoaded(D.hypothesis_detail(self.ctx, hid)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")

    @work(thread=True, exclusive=True, group="run-detail", exit_on_error=False)
    def load_run_detail(self, rid: int) -> None:
        from optlog.api import dashboard as D  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(RunDetailLoaded(D.run_detail(self.ctx, rid)))  # `run show`'s verb
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")

    @work(thread=True, exclusive=True, group="run-diff", exit_on_error=False)
    def load_run_diff(self, a: int, b: int) -> None:
        from optlog.api.dashboard import runs_diff  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(RunDiffLoaded(runs_diff(self.ctx, a, b)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")
