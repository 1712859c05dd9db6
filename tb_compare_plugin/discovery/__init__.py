"""Discovery: find and classify every profile under a logdir (or a CLI path)."""
from .spec import WorkerSpec, RunInfo, split_worker_id
from .paths import classify_path
from .walk import find_runs

__all__ = ["WorkerSpec", "RunInfo", "split_worker_id", "classify_path", "find_runs"]
