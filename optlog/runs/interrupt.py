"""The signals that end a launch (SIGINT, SIGTERM, SIGHUP), heard from the first line of `run launch`
to its last, whatever the launch is doing.

Why one module: a signal is a fact of the whole process, and a launch spends its time in very
different places — planning, writing its rows and record, waiting for the machine lock, starting a
server and polling its health, the sanity check's HTTP request, the bench, telemetry, tearing the
server down. A handler installed only when the driver loop starts left the first seconds to the
defaults: SIGTERM killed optlog with its launch row `running`, and a SIGINT that the shell ignores
in a background job (`optlog run launch … &` in a script; every child inherits SIG_IGN) was never
heard at all. So `scope()` installs one handler for the three signals as the launch verb begins
(the detached driver does the same), and the code says, region by region, what a signal does there:

- **raise** (the default of a scope; planning, where nothing is written yet; and the driver's waits
  on other processes: a health poll, an HTTP request, a model's facts): the handler raises
  `Interrupted` at once. A blocking call is cut short: Python retries a system call interrupted by
  a signal (PEP 475) unless the handler raises.
- **note** (`noting()`: writing the launch's rows and record, the driver's own steps): the handler
  records the signal and the driver cancels at its next step (`received()`), so no row or commit
  is left half written by the signal itself.

After the first signal every grace period still to come or under way (a server's `stop.timeout_s`,
the wait after SIGTERM before SIGKILL) is cut to `CANCEL_GRACE_S`; a second signal cuts it to
nothing (`grace_left`): a cancelled launch ends within seconds even if its server ignores its stop
signal. SIGINT and SIGTERM are always heard (an inherited SIG_IGN included); a SIGHUP that was
ignored when optlog started (`nohup optlog run launch …`) stays ignored: that is what nohup asks.

Signals reach only the main thread: off it, `scope()` changes nothing and `received()` stays None.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from optlog.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
CANCEL_GRACE_S = 5.0  # what is left of any grace period once a launch is cancelled by a signal


class _State:
    def __init__(self) -> None:
        self.depth = 0  # nested scopes: the outermost installs the handlers and restores them
        self.old: dict[signal.Signals, object] = {}
        self.raising = True
        self.signum: int | None = None  # the first signal received in the scope
        self.at: float | None = None  # when (time.monotonic)
        self.count = 0


_S = _State()


def _handler(signum: int, _frame: FrameType | None) -> None:
    _S.count += 1
    if _S.signum is None:
        _S.signum, _S.at = signum, time.monotonic()
    if _S.raising:
        raise Interrupted(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def scope(*, raising: bool = True) -> Iterator[None]:
    """Hear SIGINT, SIGTERM and SIGHUP inside the block (see the module doc); nested scopes share
    the outermost's handlers and received signal, and set their own mode."""
    if not _main_thread():
        yield
        return
    outer = _S.depth > 0
    if not outer:
        _S.old = {}
        for sig in SIGNALS:
            cur = signal.getsignal(sig)
            if sig == signal.SIGHUP and cur == signal.SIG_IGN:
                continue  # nohup: the hangup is to be ignored
            _S.old[sig] = cur
        _S.signum, _S.at, _S.count = None, None, 0
    was = _S.raising
    _S.depth += 1
    try:
        if not outer:
            for sig in _S.old:
                signal.signal(sig, _handler)
        with _mode(raising):
            yield
    finally:
        _S.depth -= 1
        _S.raising = was
        if not outer:
            for sig, h in _S.old.items():
                signal.signal(sig, h)  # type: ignore[arg-type]
            _S.old = {}
            _S.signum, _S.at, _S.count = None, None, 0


@contextmanager
def _mode(raising: bool) -> Iterator[None]:
    was = _S.raising
    _S.raising = raising
    try:
        if raising and _S.signum is not None and _S.depth > 0 and _main_thread():
            raise Interrupted(_S.signum)  # it came while noted: this wait is not to begin
        yield
    finally:
        _S.raising = was


@contextmanager
def noting() -> Iterator[None]:
    """Inside: a signal is recorded, not raised (the caller looks at `received()` at its next step)."""
    with _mode(False):
        yield


@contextmanager
def raising() -> Iterator[None]:
    """Inside: a signal raises `Interrupted` at once (also on entry, if one was already noted)."""
    with _mode(True):
        yield


def active() -> bool:
    """A scope is open (in the main thread)."""
    return _S.depth > 0 and _main_thread()


def received() -> int | None:
    """The first signal received in the open scope, or None."""
    return _S.signum if _S.depth > 0 else None


def grace_left(t0: float, grace_s: float) -> float:
    """Seconds left of a grace period of `grace_s` that began at `t0` (time.monotonic): cut to
    CANCEL_GRACE_S from the first signal, to 0 after a second one."""
    now = time.monotonic()
    end = t0 + max(0.0, grace_s)
    if _S.depth > 0 and _S.at is not None:
        if _S.count > 1:
            return 0.0
        end = min(end, max(t0, _S.at) + CANCEL_GRACE_S)
    return max(0.0, end - now)
