"""`python -m optlog.loadgen URL [options]`: `optlog bench` without a workspace (nothing recorded).

For bench steps in run specs (`parser: optlog`): write the result with `--output-file {{ out }}/result.jsonl`;
the file is SGLang bench_serving JSONL, one line per concurrency level.
"""

import sys

from optlog.cli.main import main

if __name__ == "__main__":
    main(["bench", "--no-record", *sys.argv[1:]])
