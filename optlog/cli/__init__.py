"""The command-line face: parses arguments, calls the service layer, prints text or JSON."""

import gc
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

    _collect_less()
    main()


def _collect_less() -> None:
    """The full CLI's modules (click, the command tree, what they import) live as long as the
    process: they are taken out of the cyclic collector's passes (`gc.freeze`), and its youngest
    generation is collected every 50,000 allocations, not 700. A command reading 10,000
    hypotheses through the models built tens of thousands of objects and the collector walked
    them again and again: the full `status` at 10,000 hypotheses 1.23 s → 0.93 s (medians of
    four on the 10x bench workspace, this entry with and without it). Cycles are still collected, so a long launch, the MCP
    face and the TUI keep their memory in bounds."""
    gc.freeze()
    gc.set_threshold(50_000, *gc.get_threshold()[1:])


def _heed_sigint() -> None:
    """A launch started where SIGINT is ignored (a script's `optlog run launch … &`: a shell ignores
    SIGINT in its background jobs, and a child inherits that) must still be cancelled by SIGINT.
    The launch's own handler (optlog.runs.interrupt) takes over once the verb runs; until then
    Python's default (KeyboardInterrupt, before anything is written) replaces the inherited SIG_IGN,
    so a SIGINT during start-up is not lost either."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
