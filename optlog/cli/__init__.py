"""The command-line face: parses arguments, calls the service layer, prints text or JSON."""

import sys

from optlog.cli import fast


def entry() -> None:
    """The `optlog` program: a hot read answered from the read cache (`optlog.cli.fast`, standard
    library only), else the full CLI (click and the command tree)."""
    if fast.serve(sys.argv[1:]):
        sys.exit(0)
    from optlog.cli.main import main  # deferred: a cache hit never imports click or the command tree

    main()
