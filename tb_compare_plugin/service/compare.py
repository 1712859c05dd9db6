"""The comparison service the plugin and the CLI share.

One key names a comparison everywhere, :func:`pair_key`: both workers' ids and file
fingerprints and every option.  The in-memory comparison cache, the on-disk overview cache and
the tables, answers and workbooks derived from a comparison are all keyed by it (plus what
the derived result is), so a changed file or option is a new key and nothing stale is served.

Everything heavy runs on the service's own bounded thread pools (parsing in parser
processes), never on the caller's thread: a call waits at most ``wait`` seconds and then
raises :class:`~.errors.Pending` with the job's progress; asking again joins the same job.
The CLI uses the same functions without the caches: :func:`make_comparison`,
:func:`overview`, :func:`steps`, :func:`write_workbook`.
"""
from __future__ import annotations

import io
import os
import threading
import time

from .errors import NotParsed, Pending, Unusable
from ..loaders.errors import LoadError
from .loading import JobCache, ProfileStore, user_message
from .params import check_steps

WAIT_SECONDS = float(os.environ.get("TB_COMPARE_REQUEST_WAIT", "20"))


# ----------------------------------------------------------------------------- shared functions

def pair_key(base, target, options) -> tuple:
    """The one key of a comparison: (ids, file fingerprints, options) of both workers."""
    return (base.id, base.fingerprint, target.id, target.fingerprint, options.key())


def make_comparison(base_profile, target_profile, options, base_spec, target_spec, show_path=None):
    """The Comparison of two loaded workers, with each side's identity from its spec;
    ``show_path``: how the sides' paths are shown (the plugin's: relative to the logdir)."""
    from .. import comparison
    show = show_path or (lambda p: p)
    return comparison.Comparison(base_profile, target_profile, options,
                                 comparison.Side(base_spec.run, base_spec.name, show(base_spec.root)),
                                 comparison.Side(target_spec.run, target_spec.name, show(target_spec.root)))


def overview(cmp) -> dict:
    """The overview answer (``compare/overall``, ``tb-compare --json``)."""
    from ..presenters.overall_json import overall_payload
    return overall_payload(cmp)


def steps(cmp) -> dict:
    """The step comparison answer (``compare/steps``, ``"steps"`` of ``tb-compare --json``):
    ``presenters.steps_json.steps_payload``.  A pair whose steps cannot be compared (the engine
    says why with a ValueError) is Unusable."""
    from ..presenters.steps_json import steps_payload
    try:
        return steps_payload(cmp)
    except ValueError as e:
        raise Unusable(f"the steps cannot be compared: {user_message(e)}") from e


def write_workbook(cmp, target, sheets=None) -> list[str]:
    """The workbook of ``cmp`` into ``target`` (a path, written atomically, or a binary file)."""
    from ..presenters.xlsx_workbook import write_workbook as write
    return write(cmp, target, sheets=sheets)


def workbook_bytes(cmp, sheets=None) -> bytes:
    buf = io.BytesIO()
    write_workbook(cmp, buf, sheets)
    return buf.getvalue()


def warm_imports() -> None:
    """Import every engine once, on one thread: CPython 3.11 can fail ("AST constructor
    recursion depth mismatch") when threads compile modules at once."""
    import importlib
    for mod in ("overall", "communication", "operator", "module", "memory", "memory_curve",
                "memory_peak", "kernel", "api", "steps"):
        importlib.import_module(f"tb_compare_plugin.engines.{mod}")
    for mod in ("analyses", "presenters.xlsx_workbook", "presenters.views", "presenters.overall_json",
                "presenters.steps_json"):
        importlib.import_module(f"tb_compare_plugin.{mod}")


class _Raised:
    """A derived job's expected failure (bad sort column, analysis not applicable), kept as its
    result so every later ask gets the same exception, not a generic stored error."""
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


# ----------------------------------------------------------------------------- the service

class CompareService:
    """Loading, comparisons and their derived answers, cached and computed off the caller's
    thread.  ``close()`` stops its thread pools and parser processes."""

    def __init__(self, logdir: str | None = None, *, wait_seconds: float | None = None,
                 max_comparisons: int = 8, max_tables: int = 64, max_workbooks: int = 2) -> None:
        self.logdir = logdir
        self.wait_seconds = WAIT_SECONDS if wait_seconds is None else wait_seconds
        self.profiles = ProfileStore()
        self.comparisons = JobCache(max_items=max_comparisons, workers=1, name="tbc-compare")
        self.answers = JobCache(max_items=max_tables, workers=2, name="tbc-answer")
        self.workbooks = JobCache(max_items=max_workbooks, workers=1, name="tbc-xlsx")
        self._backends = None
        self._lock = threading.Lock()
        self._closed = False
        from ..presenters.relpaths import RelativePaths
        self._show_path = RelativePaths(logdir or "").text     # workbook banners: relative to the logdir

    # -- set-up and tear-down ----------------------------------------------------------
    def ensure_backends(self) -> None:
        """The disk cache and parser processes, made on first use (never at TensorBoard start)."""
        with self._lock:
            if self._closed:
                raise Unusable("the profile comparison service is shut down")
            if self._backends is None:
                warm_imports()
                from .loading import make_backends
                self._backends = make_backends(self.logdir, start=True)  # fork server warms meanwhile
                self.profiles.disk_cache, self.profiles.pool = self._backends

    @property
    def disk_cache(self):
        return self.profiles.disk_cache

    def close(self) -> None:
        """Stop the thread pools and the parser processes (idempotent).  A job running on a
        pool thread finishes there; nothing new starts."""
        with self._lock:
            self._closed = True
            backends, self._backends = self._backends, None
        for jobs in (self.profiles.cache, self.comparisons, self.answers, self.workbooks):
            jobs.close()
        pool = backends[1] if backends else None
        if pool is not None:
            pool.shutdown()

    # -- profiles ----------------------------------------------------------------------
    def status(self, spec) -> dict:
        return self.profiles.status(spec)

    def start_load(self, spec) -> dict:
        """Start (or retry) parsing ``spec`` in the background; its status."""
        self.ensure_backends()
        if spec.error:
            return {"status": "error", "error": spec.error, "progress": 1.0}
        return self.profiles.request(spec, retry=True)

    def profile(self, spec, may_parse: bool):
        """The parsed profile of ``spec``; Pending while it parses, NotParsed when a read-only
        caller asks for one not parsed yet, Unusable when it cannot be read."""
        if spec.error:
            raise Unusable(spec.error)
        st = self.profiles.status(spec)
        if st["status"] == "error":
            raise Unusable(st["error"])
        self.ensure_backends()
        if not may_parse and not self.profiles.available(spec) and st["status"] != "loading":
            raise NotParsed(f"{spec.id} is not parsed yet; POST load {{\"workers\": [...]}} to parse it")
        prof = self.profiles.loaded(spec)
        if prof is not None:
            return prof
        fut = self.profiles.future(spec)
        try:
            return fut.result(timeout=self.wait_seconds)
        except TimeoutError:
            raise Pending(f"{spec.id} is still loading", self.profiles.status(spec)["progress"])

    # -- comparisons -------------------------------------------------------------------
    def comparison(self, base, target, options, may_parse: bool = False):
        """The Comparison of two discovered workers (cached under :func:`pair_key`).

        Without ``may_parse`` both workers must be parsed already (memory or disk cache):
        otherwise NotParsed, and nothing starts."""
        key = pair_key(base, target, options)
        self.ensure_backends()
        hit = self.comparisons.peek(key)
        if hit is not None:
            return hit
        for spec in (base, target):
            if spec.error:
                raise Unusable(spec.error)
        if not may_parse:
            missing = [s.id for s in (base, target) if not self.profiles.available(s)
                       and self.profiles.status(s)["status"] != "loading"]
            for s in (base, target):
                st = self.profiles.status(s)
                if st["status"] == "error":
                    raise Unusable(st["error"])
            if missing:
                raise NotParsed(f"not parsed yet: {', '.join(missing)}; POST load "
                                "{\"workers\": [...]} (or POST this route) to parse", missing)
        if options.base_step is not None or options.target_step is not None:
            self._check_steps(base, target, options)
        store = self.profiles

        def job(progress):
            fb, ft = store.future(base), store.future(target)
            while not (fb.done() and ft.done()):
                sb, st = store.status(base), store.status(target)
                progress(0.45 * (sb["progress"] + st["progress"]))
                try:
                    fb.result(timeout=0.2) if not fb.done() else ft.result(timeout=0.2)
                except TimeoutError:
                    pass
            cmp = make_comparison(fb.result(), ft.result(), options, base, target, show_path=self._show_path)
            progress(0.95)
            cmp.overall()
            return cmp

        fut = self.comparisons.submit(key, job)
        try:
            return self._wait(self.comparisons, key, fut, "the comparison is still being computed")
        except (LoadError, ValueError) as e:          # the pair cannot be compared (said why)
            raise Unusable(user_message(e)) from e

    def _check_steps(self, base, target, options) -> None:
        """A step option names a step its side holds (BadParameter otherwise), checked on the
        parsed profiles before the comparison job starts, so a bad step is never a job's stored
        failure.  Waits for both parses as the comparison would (Pending with the same progress)."""
        store = self.profiles
        futs = (store.future(base), store.future(target))
        deadline = time.monotonic() + self.wait_seconds
        profs = []
        for fut in futs:
            try:
                profs.append(fut.result(timeout=max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                raise Pending("the comparison is still being computed",
                              0.45 * (store.status(base)["progress"] + store.status(target)["progress"]))
            except (LoadError, ValueError, OSError) as e:
                raise Unusable(user_message(e)) from e
        check_steps(profs[0], profs[1], options, base.id, target.id)

    def _wait(self, jobs: JobCache, key, fut, message: str):
        try:
            out = fut.result(timeout=self.wait_seconds)
        except TimeoutError:
            raise Pending(message, jobs.status(key)["progress"])
        if isinstance(out, _Raised):
            raise out.exc
        return out

    def derived(self, base, target, options, what: tuple, fn, may_parse: bool = False,
                jobs: JobCache | None = None, expected: tuple = ()):
        """``fn(comparison)`` computed on the service's pool and cached under
        (``what``, pair key).  Exceptions of the ``expected`` types are re-raised on every ask."""
        cmp = self.comparison(base, target, options, may_parse)
        jobs = jobs or self.answers
        key = (what, pair_key(base, target, options))
        hit = jobs.peek(key)
        if hit is not None:
            if isinstance(hit, _Raised):
                raise hit.exc
            return hit

        def job(progress):
            progress(0.5)
            try:
                return fn(cmp)
            except expected as e:
                return _Raised(e)
        fut = jobs.submit(key, job)
        return self._wait(jobs, key, fut, f"the {what[0]} answer is still being computed")

    # -- answers -----------------------------------------------------------------------
    def overview(self, base, target, options, may_parse: bool = False) -> dict:
        """The overview; from the disk cache when a run of the same code made it already."""
        from ..analyses import analyses
        disk_key = ["overall", *pair_key(base, target, options),
                    [a.name for a in analyses("json")]]
        self.ensure_backends()
        disk = self.disk_cache
        if disk is not None:
            hit = disk.get_json(disk_key)
            if hit is not None:
                return hit
        body = self.derived(base, target, options, ("overall",), overview, may_parse)
        if disk is not None:
            disk.put_json(disk_key, body)
        return body

    def table(self, base, target, options, name: str, params: dict, may_parse: bool = False) -> dict:
        """One page of the analysis ``name`` (``presenters.views.view_page``)."""
        from ..analyses import Unavailable
        from ..presenters.views import view_page
        what = ("table", name, tuple(sorted(params.items())))
        return self.derived(base, target, options, what, lambda cmp: view_page(cmp, name, **dict(params)),
                            may_parse, expected=(ValueError, Unavailable))

    def steps(self, base, target, options, may_parse: bool = False) -> dict:
        """The step comparison (:func:`steps`), computed once per pair key."""
        return self.derived(base, target, options, ("steps",), steps, may_parse, expected=(Unusable,))

    def answer(self, base, target, options, name: str, fn, may_parse: bool = False):
        """Any other answer ``fn(comparison)`` (memory curves, communication, ...)."""
        return self.derived(base, target, options, (name,), fn, may_parse)

    def workbook(self, base, target, options, may_parse: bool = False, sheets=None):
        """(workbook bytes, the Comparison it came from)."""
        cmp = self.comparison(base, target, options, may_parse)
        sheets = tuple(sorted(sheets)) if sheets is not None else None
        data = self.derived(base, target, options, ("xlsx", sheets), lambda c: workbook_bytes(c, sheets),
                            may_parse, jobs=self.workbooks, expected=(ValueError,))
        return data, cmp
