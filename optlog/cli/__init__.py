"""The command-line face: parses arguments, calls the service layer, prints text or JSON."""

import signal
import sys

from optlog.cli import fast


def entry() -> None:
    """The `optlog` program: a hot read answered from the read cache (`optlog.cli.fast`, standard
    library only), else the full CLI (click and the command tree)."""
    if fast.serve(sys.argv[1:]):
        sys.exit(0)
    if fast.launching(sys.argv[1:]):
        _heed_sigint()
    from optlog.cli.main import main  # deferred: a cache hit never imports click or the command tree

    main()


def _heed_sigint() -> None:
    """A launch started where SIGINT is ignored (a script's `optlog run launch … &`: a shell ignores
    SIGINT in its background jobs, and a child inherits that) must still be cancelled by SIGINT.
    The launch's own handler (optlog.runs.interrupt) takes over once the verb runs; until then
    Python's default (KeyboardInterrupt, before anything is written) replaces the inherited SIG_IGN,
    so a SIGINT during start-up is not lost either."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
