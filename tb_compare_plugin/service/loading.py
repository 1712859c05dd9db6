"""Loading with progress: parsed profiles held under an LRU bound and computed off the
request path, for the plugin and the CLI alike.

:class:`JobCache` is the one mechanism: a keyed, bounded LRU of results where each
key is computed at most once at a time by a bounded pool, with status and progress
for the UI.  The profile store here and the comparison, table and workbook stores of
:mod:`.compare` are instances of it.  :func:`load_pair` loads a baseline and a target at
once (the CLI's way in).
"""
from __future__ import annotations

import os
import threading
import time
import traceback
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Hashable

from ..loaders.errors import LoadError
from ..timing import mark


def user_message(exc: BaseException) -> str:
    """One line for a user: LoadError/ValueError text, else the exception type and text."""
    if isinstance(exc, (LoadError, ValueError, FileNotFoundError, PermissionError)):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory while processing the profile"
    return f"{type(exc).__name__}: {exc}"


class Job:
    __slots__ = ("future", "progress", "started", "error")

    def __init__(self, future: Future | None = None) -> None:
        self.future = future
        self.progress = 0.0
        self.started = time.time()
        self.error: str | None = None


class JobCache:
    """At most ``max_items`` results, LRU-evicted; at most one computation per key at a time."""

    def __init__(self, max_items: int = 4, workers: int = 1, name: str = "tbc") -> None:
        self.max_items = max_items
        self._lock = threading.Lock()
        self._done: "OrderedDict[Hashable, Any]" = OrderedDict()
        self._errors: "OrderedDict[Hashable, str]" = OrderedDict()
        self._jobs: dict[Hashable, Job] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    # -- queries -----------------------------------------------------------------------
    def peek(self, key: Hashable):
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
        return None

    def status(self, key: Hashable) -> dict:
        with self._lock:
            if key in self._done:
                return {"status": "ok", "error": None, "progress": 1.0}
            if key in self._jobs:
                j = self._jobs[key]
                return {"status": "loading", "error": None, "progress": round(j.progress, 3)}
            if key in self._errors:
                return {"status": "error", "error": self._errors[key], "progress": 1.0}
        return {"status": "not_loaded", "error": None, "progress": 0.0}

    # -- work --------------------------------------------------------------------------
    def submit(self, key: Hashable, fn: Callable[[Callable[[float], None]], Any],
               retry: bool = False) -> Future:
        """Start computing ``key`` unless it is done, under way, or failed (same inputs, same
        failure: retried only when ``retry``).  Returns its future."""
        with self._lock:
            if key in self._done:
                f: Future = Future()
                f.set_result(self._done[key])
                return f
            if key in self._jobs:
                return self._jobs[key].future
            if key in self._errors and not retry:
                f = Future()
                f.set_exception(_StoredError(self._errors[key]))
                return f
            self._errors.pop(key, None)
            job = Job()

            def run():
                def progress(x: float) -> None:
                    job.progress = max(0.0, min(1.0, float(x)))
                try:
                    result = fn(progress)
                except BaseException as e:  # noqa: BLE001 - every failure becomes a status
                    msg = user_message(e)
                    if not isinstance(e, (LoadError, ValueError, FileNotFoundError)):
                        traceback.print_exc()
                    with self._lock:
                        self._jobs.pop(key, None)
                        self._errors[key] = msg
                        while len(self._errors) > 256:
                            self._errors.popitem(last=False)
                    raise
                with self._lock:
                    self._jobs.pop(key, None)
                    self._done[key] = result
                    self._done.move_to_end(key)
                    while len(self._done) > self.max_items:
                        self._done.popitem(last=False)
                return result

            self._jobs[key] = job
            job.future = self._pool.submit(run)
            return job.future

    def get(self, key: Hashable, fn, timeout: float | None = None):
        """Compute (or wait for) ``key`` and return the result; raises the job's exception."""
        hit = self.peek(key)
        return hit if hit is not None else self.submit(key, fn).result(timeout=timeout)

    def close(self) -> None:
        """Stop taking work; queued jobs are cancelled, a running one finishes on its thread."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def forget_errors(self) -> None:
        with self._lock:
            self._errors.clear()

    def clear(self) -> None:
        with self._lock:
            self._done.clear()
            self._errors.clear()


class _StoredError(LoadError):
    """A failure remembered from an earlier attempt (same files, so the same outcome)."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.path, self.problem = "", message

    def __str__(self) -> str:
        return self.problem


def load_profile(spec, progress=None, pool=None, cache=None, side_jobs=()):
    """Parse one discovered worker (used by the store and the CLI): from the persistent cache
    when it holds this worker's files, else in a parser process (``pool``), else here.
    ``side_jobs``: per-side reductions (``engines.side_work``) a parser process computes right
    after its parse, on its own core; their values arrive in the profile's derived-data cache
    (read from the cache or parsed here, nothing is computed: the caller's warm-up does it).

    While it runs, the worker's cache entry is pinned (``ProfileCache.pin``): no process sharing
    the cache evicts it between being stored (by the parser process) and being mapped here.  Once
    mapped, the profile no longer needs its files, so a bound the entry does not fit in is
    restored right after (the next run parses again: slower, never failed)."""
    from ..formats import registry
    if spec.error:
        raise _StoredError(spec.error)
    if cache is None:
        return _finish(spec, _parse(spec, progress, pool, None, side_jobs))
    with cache.pin(spec.fingerprint):
        prof = cache.get(spec.fingerprint)
        parsed = prof is None
        if prof is not None:
            registry.finish(prof)           # facts of its format, also on entries that predate one
        else:
            prof = _parse(spec, progress, pool, cache, side_jobs)
    if parsed:
        cache.evict()
    return _finish(spec, prof)


def _parse(spec, progress, pool, cache, side_jobs=()):
    from ..formats import registry
    # a format registered at run time is unknown to the parser processes' fork server
    if pool is not None and registry.parsed_in_pool(spec.format):
        return pool.parse(spec.format, spec.root, spec.fingerprint, progress, side_jobs=side_jobs)
    prof = registry.load(spec.format, spec.root, progress=progress)
    if cache is not None:
        cache.put(spec.fingerprint, prof)   # best effort: the profile in memory is the answer
    return prof


def _finish(spec, prof):
    if spec.rank is not None and prof.meta.rank is None:
        prof.meta.rank = spec.rank
    return prof


def make_backends(logdir: str | None = None, workers: int = 2, start: bool = False, warm_jit=False,
                  fork_here: bool = False):
    """(cache, pool) as configured by the environment; either may be None.  ``start``: start
    the parser processes' fork server first, so its imports overlap the cache's (numpy, pandas);
    ``warm_jit``: it also loads the numba scanners (``loaders.jit_warm``: big inputs; True: all,
    or a collection of ``jit_warm.parts``: those);
    ``fork_here`` (the CLI, single-threaded): the fork server is a fork of this process, which
    imports the libraries it preloads first (``parsepool``, ``forkserver_fork``).

    A cache folder that cannot be written is reported once (one warning line) and used for
    reading only, or not at all when it is not a folder; the parser processes then hand their
    profiles back without it."""
    from .parsepool import ParsePool, processes_enabled
    pool = ParsePool(workers, warm_jit=warm_jit, fork_here=fork_here) if processes_enabled() else None
    if pool is not None and start:
        pool.start()
    from ..cache import ProfileCache, enabled, warn_unwritable
    cache = None
    if enabled():
        try:
            cache = ProfileCache(logdir=logdir)
        except ValueError as e:
            import logging
            logging.getLogger(__name__).warning("profile_compare: cache disabled: %s", e)
    if cache is not None:
        problem = cache.unwritable()
        if problem is not None:
            warn_unwritable(cache.folder, problem)
            cache.read_only = True
            if not os.path.isdir(cache.root):
                cache = None
    if pool is not None:
        pool.cache = cache if cache is not None and not cache.read_only else None
    return cache, pool


class ProfileStore:
    """Workers parsed on demand, keyed by their files' (path, size, mtime): a changed file
    is a new key, so stale results are never served."""

    def __init__(self, max_profiles: int = 6, workers: int = 2, disk_cache=None, pool=None) -> None:
        self.cache = JobCache(max_profiles, workers, name="tbc-load")
        self.disk_cache, self.pool = disk_cache, pool

    def _load(self, spec, progress):
        return load_profile(spec, progress, self.pool, self.disk_cache)

    def status(self, spec) -> dict:
        return self.cache.status(spec.fingerprint)

    def request(self, spec, retry: bool = False) -> dict:
        self.future(spec, retry)
        return self.status(spec)

    def future(self, spec, retry: bool = False) -> Future:
        """Start (or join) the load of ``spec``; the future resolves to the Profile."""
        return self.cache.submit(spec.fingerprint, lambda p: self._load(spec, p), retry)

    def loaded(self, spec):
        return self.cache.peek(spec.fingerprint)

    def available(self, spec) -> bool:
        """Parsed already (in memory, or in the disk cache): using it costs no parsing."""
        if self.cache.peek(spec.fingerprint) is not None:
            return True
        return self.disk_cache is not None and self.disk_cache.has(spec.fingerprint)

    def get(self, spec, timeout: float | None = None):
        return self.cache.get(spec.fingerprint, lambda p: self._load(spec, p), timeout)


def load_pair(base_spec, target_spec, progress=None, backends=(None, None), warm=None, side_jobs=((), ())):
    """Baseline and target, parsed at once (two parser processes, through the cache when it has
    them); ``progress(frac)`` gets the mean of both sides' progress.

    ``side_jobs``: (baseline's, target's) per-side reductions (``engines.side_work``), computed
    by each side's parser process after its parse, or here as soon as that side is in when no
    parser process ran (read from the cache).  ``warm(profile)``, if given, starts on each side
    as soon as that side is in, on a thread of its own: the core the side's parser process
    leaves idle while the other side still parses.
    """
    cache, pool = backends
    fracs = [0.0, 0.0]
    if any(side_jobs):
        from ..engines import side_work
        jobs = side_jobs

        def warm_side(prof, i, then=warm):
            side_work.run(prof, jobs[i])        # values the parser process sent: nothing to do
            if then is not None:
                then(prof)
    else:
        def warm_side(prof, i, then=warm):
            then(prof)
    if warm is None and not any(side_jobs):
        warm_side = None
    warmers = ThreadPoolExecutor(2, thread_name_prefix="tbc-warm") if warm_side is not None else None

    def prog(i):
        def f(x):
            fracs[i] = x
            if progress is not None:
                progress(sum(fracs) / 2)
        return f

    def one(spec, i):
        prof = load_profile(spec, prog(i), pool, cache, side_jobs[i])
        mark(f"parent: side {i} in")
        if warmers is not None:
            warmers.submit(warm_side, prof, i)  # its errors reach whoever uses the result
        return prof
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="tbc-pair") as ex:
            fb = ex.submit(one, base_spec, 0)
            ft = ex.submit(one, target_spec, 1)
            return fb.result(), ft.result()
    finally:
        if warmers is not None:
            warmers.shutdown(wait=False)
