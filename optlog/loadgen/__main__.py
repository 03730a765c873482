"""`python -m optlog.loadgen URL [options]`: `optlog bench` without a workspace (nothing recorded).

For bench steps in run specs (`parser: optlog`): write the result with `--output-file {{ out }}/result.jsonl`;
the file is SGLang bench_serving JSONL, one line per concurrency level.

An entry-point shim: the load generator is a library below the faces, so this runs the CLI's
`bench --no-record` as `python -m optlog` would, without importing the CLI layer from here.
"""

import runpy
import sys

if __name__ == "__main__":
    sys.argv = ["optlog", "bench", "--no-record", *sys.argv[1:]]
    runpy.run_module("optlog", run_name="__main__", alter_sys=True)
