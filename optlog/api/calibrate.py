"""calibrate: this machine's ceilings measured into optlog.yaml (what the diagnosis reads runs
against)."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import Call, Opt, verb
from optlog.service import calibrate as svc


# some figure was too unsteady to store: the calibration is incomplete (exit 1)
@verb("calibrate", exit=lambda r, _a: 1 if r.get("refused") else 0)
def calibrate(call: Call, *,
              quick: Annotated[bool, Opt(help="Smaller problems (seconds, less precise).")] = False,
              device: Annotated[str, Opt(choices=("auto", "cpu", "cuda"), show_default=True,
                                         help="Measure the GPUs (cuda), the CPU, or whatever is there (auto).")] = "auto",
              dry_run: Annotated[bool, Opt(help="Measure and print, write nothing.")] = False,
              max_spread: Annotated[float, Opt(show_default=True, help="Refuse to store a figure whose best trials "
                                                                       "(the upper half) disagree by more than this: "
                                                                       "the machine was busy throughout.")] = 0.10,
              ) -> Any:
    """Measure this machine's ceilings (matmul TFLOP/s per dtype, memory bandwidth, GPU links) into optlog.yaml."""
    return svc.calibrate(call.ctx, quick=quick, device=device, dry_run=dry_run, max_spread=max_spread)
