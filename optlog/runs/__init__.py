"""Runs: run specs, the launcher, executors, result parsers and environment capture."""
