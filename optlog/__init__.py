"""optlog: the lab notebook of inference performance work.

Hypotheses with machine-checkable predictions, benchmark runs with telemetry as evidence,
noise-aware verdicts, ranked plans, and every decision committed to git.
"""

__version__ = "0.1.0"
