"""Executors: where a run's processes execute. `base` is the interface (`Executor`, `ExecutorKind`),
one file per kind (`local`, `ssh`, `slurm`), and `registry` the one table of kinds everything else
reads (see docs/executors.md and docs/architecture.md)."""
