"""optlog's load generator for OpenAI-compatible servers (`optlog bench`, `python -m optlog.loadgen`).

Modules: `core` (pure: SSE decoding, per-request results, SGLang-named aggregates, workload maths),
`client` (the asyncio/httptools hot loop that timestamps bytes at arrival), `workload` (prompts and
dataset files), `runner` (a sweep of concurrency levels on one event loop). The service verb is
`optlog.service.bench`; the catalogue's verb `optlog.api.bench` (the CLI command and the MCP tool).
"""
