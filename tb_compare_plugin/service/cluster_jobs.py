"""The plugin's cluster answers: :func:`.cluster.cluster_json` of a discovered run (and of a second
run) computed off the request thread, at most one job per key, the answer kept in memory.

Like the pair routes (:mod:`.compare`): a caller that may start work (POST) waits at most
``wait_seconds`` and then gets :class:`~.errors.Pending` with the job's progress (ask again to join
the same job); a read-only caller (GET) gets the answer when it is computed, Pending while it is
under way, and :class:`~.errors.NotParsed` (nothing started) otherwise.  A run that cannot be
analysed (fewer than two workers, no rank readable, no Dask) is :class:`~.errors.Unusable`, with
one line saying why; a step no rank holds is :class:`~.errors.BadParameter` (400), every time.  The key holds every worker's id and file
fingerprint, the step and the Dask scheduler, so changed files are a new job.
"""
from __future__ import annotations

from .errors import BadParameter, NotParsed, Pending, Unusable
from .loading import JobCache, user_message


class _Refused:
    """A job's answer that is a bad parameter (a step no rank holds: known only once the ranks are
    summarised): kept as the key's result, so every ask gets the same 400, never a stored 422."""
    __slots__ = ("exc",)

    def __init__(self, exc: BadParameter) -> None:
        self.exc = exc


def min_workers_error(run) -> str | None:
    """Why ``run`` (a RunInfo) cannot be analysed as a cluster, or None."""
    n = len(run.workers)
    if n >= 2:
        return None
    return (f"run {run.name} has {n} worker(s); a cluster analysis needs two or more ranks "
            "(compare single workers in the pair views)")


def run_key(run) -> tuple:
    return (run.name, tuple(sorted((w.id, repr(w.fingerprint), w.error or "") for w in run.workers)))


class ClusterJobs:
    """Cluster JSON and workbooks of discovered runs (``close()`` stops its threads)."""

    def __init__(self, wait_seconds: float, scheduler: str | None = None, cache_factory=None) -> None:
        self.wait_seconds = wait_seconds
        self.scheduler = scheduler
        self._cache_factory = cache_factory
        self.results = JobCache(max_items=4, workers=1, name="tbc-cluster")
        self.workbooks = JobCache(max_items=2, workers=1, name="tbc-cluster-xlsx")

    def close(self) -> None:
        self.results.close()
        self.workbooks.close()

    def _wait(self, jobs: JobCache, key, fut, what: str):
        try:
            out = fut.result(timeout=self.wait_seconds)
        except TimeoutError:
            raise Pending(f"{what} is still being computed", jobs.status(key)["progress"])
        except Unusable:
            raise
        except Exception as e:  # noqa: BLE001 - ValueError (no rank readable), DaskUnavailable, ...
            raise Unusable(user_message(e)) from e
        if isinstance(out, _Refused):
            raise out.exc
        return out

    def key(self, run, against=None, step: int | None = None) -> tuple:
        return (run_key(run), run_key(against) if against is not None else None, step, self.scheduler)

    def result(self, run, against=None, step: int | None = None, may_start: bool = False) -> dict:
        """The cluster JSON (``cluster_json``) of ``run`` (a RunInfo), against ``against``."""
        for r in (run, against):
            if r is not None and min_workers_error(r):
                raise Unusable(min_workers_error(r))
        key = self.key(run, against, step)
        hit = self.results.peek(key)
        if isinstance(hit, _Refused):
            raise hit.exc
        if hit is not None:
            return hit
        st = self.results.status(key)
        if st["status"] == "error" and not may_start:       # a POST tries again (Dask back, ...)
            raise Unusable(st["error"])
        if not may_start and st["status"] != "loading":
            raise NotParsed(f"the cluster analysis of {run.name} is not computed yet; POST cluster "
                            "(same parameters) to compute it")
        scheduler, cache_factory = self.scheduler, self._cache_factory

        def job(progress):
            from .cluster import DEFAULT, RunRef, cluster_json
            refs = [RunRef(r.name, r.path, list(r.workers)) for r in (run, against) if r is not None]
            cache = cache_factory() if cache_factory is not None else DEFAULT
            try:
                return cluster_json(refs[0], refs[1] if len(refs) > 1 else None, cache=cache,
                                    scheduler=scheduler, progress=lambda f: progress(0.95 * f), step=step)
            except BadParameter as e:
                return _Refused(e)

        fut = self.results.submit(key, job, retry=may_start)
        return self._wait(self.results, key, fut, f"the cluster analysis of {run.name}")

    def workbook(self, run, against=None, step: int | None = None, may_start: bool = False) -> bytes:
        """The cluster workbook (``presenters.xlsx_cluster``) of the same answer."""
        data = self.result(run, against, step, may_start)
        key = self.key(run, against, step)
        hit = self.workbooks.peek(key)
        if hit is not None:
            return hit

        def job(progress):
            from ..presenters.xlsx_cluster import cluster_workbook_bytes
            progress(0.5)
            return cluster_workbook_bytes(data)

        fut = self.workbooks.submit(key, job)
        return self._wait(self.workbooks, key, fut, f"the cluster workbook of {run.name}")
