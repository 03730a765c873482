"""The overview: what the agent is doing and what is due. A pane beside the tree on a large
terminal (the live launch, this machine's telemetry while it runs here, the open todos, the
verdicts due and the latest ones); one line above the tree on a small one."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widgets import Static

from optlog.core import views as VW
from optlog.core.numfmt import fmt_num, plural
from optlog.core.spark import sparkline
from optlog.core.statuses import STATUS_GLYPH, reader_text
from optlog.core.todos import TODO_MARK
from optlog.tui.widgets import cut, status_style

OVERVIEW_MIN = (140, 30)  # the terminal size from which the overview is a pane, not a line
OVERVIEW_TODOS = 8
LIVE_POINTS = 120  # readings kept for the sparklines (a minute at the default poll)
_LOG_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)\.\d+Z ")


class OverviewPane(VerticalScroll):
    """Paints the overview pane and the one-line overview (`#overview-line`, above the tree)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._ov: dict[str, Any] | None = None
        self._launches: list[dict[str, Any]] = []
        self._live_series: dict[str, list[float | None]] = {}
        self._live_keys: list[tuple[str, str, str]] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="overview-launch")  # the live launch, one line a fact
        yield Static("", id="overview-telemetry")  # this machine while it runs a launch
        yield Static("", id="overview-text")

    def fit(self, size: Size) -> None:
        """A pane beside the tree on a large terminal, one line above it on a small one (80×24
        keeps the tree and the detail readable)."""
        wide = size.width >= OVERVIEW_MIN[0] and size.height >= OVERVIEW_MIN[1]
        self.display = wide
        self.screen.query_one("#overview-line").display = not wide
        self.screen.query_one("#hyp-pane").set_class(wide, "-wide")

    def show_overview(self, ov: dict[str, Any]) -> None:
        self._ov = ov
        self._paint()

    def show_launches(self, launches: list[dict[str, Any]]) -> None:
        self._launches = launches
        self._paint()

    def _paint(self) -> None:
        if self._ov is None:
            return
        box = self.query_one("#overview-launch", Static)
        box.display = bool(self._launches)
        if self._launches:
            width = box.size.width or self.size.width - 2
            box.update(Text("\n").join(launch_text(la, width if width > 10 else 60) for la in self._launches))
        self.query_one("#overview-text", Static).update(_overview_text(self._ov))
        self.screen.query_one("#overview-line", Static).update(_overview_line(self._ov, self._launches))

    def show_telemetry(self, sampler: Any, reading: dict[str, float] | None) -> None:
        """One more reading of this machine (`sampler` None: no launch runs here any more)."""
        box = self.query_one("#overview-telemetry", Static)
        if sampler is None or reading is None:
            self._live_series, self._live_keys = {}, []
            box.display = False
            return
        for k in set(reading) | set(self._live_series):
            self._live_series.setdefault(k, [None] * max((len(v) for v in self._live_series.values()), default=0))
            self._live_series[k] = (self._live_series[k] + [reading.get(k)])[-LIVE_POINTS:]
        self._live_keys = sampler.series({k for k, v in self._live_series.items() if any(x is not None for x in v)})
        box.display = bool(self._live_keys)
        width = box.size.width or self.size.width - 2
        box.update(_telemetry_text(sampler.kind, self._live_keys, self._live_series, width if width > 20 else 60))


def _todo_doing(t: dict[str, Any]) -> str:
    """A todo as the agent says it: its `activeForm` ("Benchmarking tp8") while in progress."""
    return (t.get("activeForm") if t["status"] == "in_progress" else None) or t["content"]


def _dur(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    h, m, sec = s // 3600, s // 60 % 60, s % 60
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def _point(la: dict[str, Any]) -> tuple[int, int]:
    """(the point being measured, of how many): done + 1 while a point runs."""
    return la["done"] + (1 if la.get("current") else 0), la["total"]


def _bar(done: int, total: int, width: int = 16) -> str:
    full = round(width * done / total) if total else 0
    return "█" * full + "░" * (width - full)


def _telemetry_text(kind: str, keys: list[tuple[str, str, str]], series: dict[str, list[float | None]],
                    width: int = 60) -> Text:
    """This machine's live series as sparklines: `power  ▁▂▅▇█  412 W` (GPU) or load and CPU use."""
    out = Text()
    out.append("This machine, live " + ("(GPUs)" if kind == "gpu" else "(CPU)") + "\n", style="bold")
    for key, label, unit in keys:
        vals = series.get(key) or []
        last = next((v for v in reversed(vals) if v is not None), None)
        now = (fmt_num(last) + (f" {unit}" if unit else "")) if last is not None else "–"
        out.append(f"{label:<9}", style="dim")
        w = max(8, width - 9 - 12)
        out.append(sparkline(vals, w).rjust(w), style="cyan")  # the newest reading beside its value
        out.append(f" {now}\n")
    return out


def study_lines(st: dict[str, Any] | None) -> list[str]:
    """An optlog tune launch's study (service.tune.live_summary): its trials by state, then its best
    so far (the front so far, with several objectives), one line each, shortest first."""
    if not st:
        return []
    states = ", ".join(f"{n} {k}" for k, n in sorted(st["states"].items(), key=lambda kv: (kv[0] != "complete", kv[0])))
    out = [f"study {st['study']}: {plural(st['trials'], 'trial')}" + (f" ({states})" if states else "")]
    objs = st.get("objectives") or []
    best = st.get("best") or []
    if not best:
        return [*out, "no feasible completed trial yet"]
    what = "best" if len(st.get("directions") or []) == 1 else "front"
    out.append(f"{what} so far" + (" (re-measured):" if st.get("remeasured") else " (first readings):"))
    for b in best:
        vals = (b.get("remeasured") or {}).get("values") or b.get("values") or []
        out.append(f"  #{b['number']} " + VW.kv(b["params"]) + " → "
                   + ", ".join(f"{m}={fmt_num(v)}" for m, v in zip(objs, vals)))
    return out


def launch_text(la: dict[str, Any], width: int = 60) -> Text:
    """The live launch as the overview shows it: the point of N with its labels, elapsed and left,
    the failures so far (wrapped: what failed matters), the log's last lines (cut to `width`)."""
    out = Text()
    out.append(f"Launch L{la['id']}  ", style="bold")
    out.append(f"{la['status']}  ", style="yellow")
    out.append(f"{la.get('spec') or ''}\n", style="dim")
    n, total = _point(la)
    between = not la.get("current") or n > total
    out.append((f"{la['done']} of {total} points done  " if between else f"point {n} of {total}  ") if total
               else "starting  ", style="bold")
    out.append(_bar(la["done"], total) + "\n" if total else "\n", style="green")
    cur = la.get("current") or {}
    if cur.get("labels"):
        out.append("now: ", style="dim")
        out.append(cut(VW.kv(cur["labels"]), width - 5 - 12) + f"  (run {cur.get('run')})\n")
    out.append("elapsed ", style="dim")
    out.append(_dur(la.get("elapsed_s")) + "  ")
    out.append("left ", style="dim")
    out.append(("~" + _dur(la["remaining_s"])) if la.get("remaining_s") is not None else "– (after the first point)")
    out.append("   c: cancel\n", style="dim")
    for i, line in enumerate(study_lines(la.get("study"))):
        out.append(cut(line, width) + "\n", style="bold" if i == 0 else "")
    for f in la.get("failed") or []:
        # an error is several lines (what failed, then a stderr tail): its first and last say it
        lines = [ln.strip() for ln in (f.get("error") or "").splitlines() if ln.strip() and not ln.startswith("---")]
        said = lines[0] + (f" … {lines[-1]}" if len(lines) > 1 else "") if lines else ""
        out.append(f"✘ run {f['id']} failed: ", style="red bold")
        out.append(cut(said, 160) + (f" ({f['cause']})" if f.get("cause") else "") + "\n", style="red")
    if la.get("failed_total", 0) > len(la.get("failed") or []):
        out.append(f"  … {la['failed_total']} failed in all\n", style="red")
    for line in la.get("log_tail") or []:
        out.append("│ ", style="dim")  # the log's own ISO stamp, cut to the time of day
        out.append(cut(_LOG_STAMP.sub(r"\1 ", line), width - 2) + "\n", style="dim")
    return out


def _overview_text(ov: dict[str, Any]) -> Text:
    """The overview pane below the live launch: the agent's open todos, the verdicts due, the latest
    verdicts."""
    out = Text()
    todos = ov["todos"]
    out.append(f"Agent's todos  {len(todos)} open of {ov['todos_total']}\n", style="bold")
    for t in todos[:OVERVIEW_TODOS]:
        doing = t["status"] == "in_progress"
        out.append(f"{TODO_MARK[t['status']]} ", style="yellow" if doing else "dim")
        out.append(_todo_doing(t) + (f"  ({t['hypothesis']})" if t.get("hypothesis") else "") + "\n",
                   style="bold" if doing else "")
    if len(todos) > OVERVIEW_TODOS:
        out.append(f"  … {len(todos) - OVERVIEW_TODOS} more (2: todos)\n", style="dim")
    if not todos:
        out.append("  none open\n", style="dim")
    out.append("\nVerdict due\n", style="bold")
    for d in ov["due"]:
        out.append("! ", style="yellow")
        out.append(f"{d['id']}  ", style="bold")
        out.append(f"{d.get('why') or 'its evidence changed'}; verdict {str(d.get('verdict_at') or 'none')[:16]}\n",
                   style="dim")
    if not ov["due"]:
        out.append("  none: every verdict is current\n", style="dim")
    out.append("\nLatest verdicts\n", style="bold")
    for v in ov["verdicts"]:
        out.append(f"{STATUS_GLYPH.get(v['status'], ' ')} ", style=status_style(v["status"]))
        out.append(f"{v['hypothesis']}  ", style="bold")
        out.append(f"{v['status']}  ", style=status_style(v["status"]))
        out.append(f"{str(v['at'])[:16]}\n", style="dim")
        out.append(f"  {reader_text(v['summary'], v['status'])}\n")
    if not ov["verdicts"]:
        out.append("  none yet (v: verdict)\n", style="dim")
    out.rstrip()
    return out


def _overview_line(ov: dict[str, Any], launches: list[dict[str, Any]] | None = None) -> Text:
    """The overview in one line: the live launch's point of N, time left and failures, what the
    agent does now, how many todos are open, what is due, the newest verdict. Separators end a
    span (see `hypotheses._hyp_label`)."""
    todos = ov["todos"]
    doing = [t for t in todos if t["status"] == "in_progress"]
    parts: list[tuple[str, str]] = []
    for la in launches or []:
        n, total = _point(la)
        left = la.get("remaining_s")
        parts += [(f"L{la['id']} ", "bold"), (f"{n}/{total} ", "yellow"),
                  (_dur(la.get("elapsed_s")) + (f" ~{_dur(left)} left" if left is not None else ""), "")]
        if la.get("failed_total"):
            parts.append((f"✘{la['failed_total']} failed", "red"))
    if doing:
        parts += [("doing: ", "dim"), (_todo_doing(doing[0]), "bold")]
    parts.append((f"{len(todos)} open todos", "dim"))
    if ov["due"]:
        parts += [("verdict due: ", "dim"), (", ".join(d["id"] for d in ov["due"]), "yellow")]
    if ov["verdicts"]:
        v = ov["verdicts"][0]
        parts += [("last: ", "dim"), (v["hypothesis"] + " ", "bold"), (v["status"], status_style(v["status"]))]
    out = Text()
    for i, (text, style) in enumerate(parts):
        ends_item = i + 1 < len(parts) and not text.endswith((": ", " "))
        out.append(text + ("  " if ends_item else ""), style=style)
    out.no_wrap = True
    out.overflow = "ellipsis"
    return out
