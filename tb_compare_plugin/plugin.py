"""The TensorBoard plugin: thin route handlers over discovery, the profile store and the
engines.  Nothing heavy happens on a request thread: parsing and comparing run in the
store's pool, and a handler waits a bounded time before answering 202 "loading".
"""
from __future__ import annotations

import os
from importlib import resources

from tensorboard.plugins import base_plugin

from . import PLUGIN_NAME
from .discovery import split_worker_id
from .discovery.scanner import Scanner
from .comparison import Comparison, Options, Side
from .http import HttpError, arg, float_arg, int_arg, json_body, json_response, route
from .presenters.overall_json import overall_payload
from .presenters.runs_json import runs_payload, worker_payload
from .presenters.views import VIEWS, ViewUnavailable, view_page
from .store import JobCache, ProfileStore

WAIT_SECONDS = float(os.environ.get("TB_COMPARE_REQUEST_WAIT", "20"))
_MIME = {".js": "text/javascript", ".css": "text/css", ".map": "application/json",
         ".html": "text/html", ".svg": "image/svg+xml", ".png": "image/png"}


def export_dir(flag: str, logdir: str) -> str:
    """Where workbooks are saved from the tab: the flag, $TB_COMPARE_EXPORT_DIR, or
    ~/tb_compare_exports; never inside the logdir (falls back to the default then)."""
    default = os.path.join(os.path.expanduser("~"), "tb_compare_exports")
    d = os.path.abspath(os.path.expanduser(flag or os.environ.get("TB_COMPARE_EXPORT_DIR", "") or default))
    if logdir:
        ld = os.path.realpath(logdir)
        real = os.path.realpath(d)
        if real == ld or real.startswith(ld.rstrip(os.sep) + os.sep):
            d = default
    return d


class ProfileComparePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context):
        flags = getattr(context, "flags", None)
        self._logdir = getattr(context, "logdir", "") or ""
        interval = getattr(flags, "profile_compare_scan_interval", None) or 5.0
        self._scanner = Scanner(self._logdir, interval)
        self._export_dir = export_dir(getattr(flags, "profile_compare_export_dir", "") or "", self._logdir)
        self._backends = None
        self._store = ProfileStore()
        self._init_lock = __import__("threading").Lock()
        self._comparisons = JobCache(max_items=8, workers=1, name="tbc-compare")

    # -- TensorBoard contract ------------------------------------------------------------
    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/static/index.js", tab_name="PROFILE COMPARE",
                                            disable_reload=False)

    def _ensure_backends(self) -> None:
        """Cache and parser processes, created on first use (never at TensorBoard start-up)."""
        with self._init_lock:
            if self._backends is None:
                # import every engine once, here, under the lock: CPython 3.11 can fail
                # ("AST constructor recursion depth mismatch") when threads compile modules at once
                import importlib
                for mod in ("overall", "communication", "operator", "module", "memory", "memory_curve",
                            "memory_peak", "kernel", "api"):
                    importlib.import_module(f"tb_compare_plugin.engines.{mod}")
                importlib.import_module("tb_compare_plugin.presenters.xlsx_workbook")
                from .store import make_backends
                self._backends = make_backends(self._logdir, start=True)   # fork server warms while the user picks
                self._store.disk_cache, self._store.pool = self._backends

    def is_active(self):
        self._scanner.start()
        return self._scanner.active

    def get_plugin_apps(self):
        self._scanner.start()
        return {
            "/runs": route(self._runs),
            "/worker": route(self._worker),
            "/load": route(self._load),
            "/compare/overall": route(self._compare_overall),
            "/compare/memory_curve": route(self._compare_memory_curve),
            "/compare/xlsx": route(self._compare_xlsx),
            "/export": route(self._export),
            "/compare/communication": route(self._compare_communication),
            "/compare/*": route(self._compare_view),
            "/static/*": route(self._static),
        }

    # -- helpers -------------------------------------------------------------------------
    def _spec(self, wid: str):
        try:
            split_worker_id(wid)
        except ValueError as e:
            raise HttpError(400, str(e))
        snap = self._scanner.snapshot
        spec = snap.workers.get(wid)
        if spec is None:
            if not snap.scanned_at:
                self._scanner.wait_first_scan(10)
                spec = self._scanner.snapshot.workers.get(wid)
            if spec is None:
                raise HttpError(404, f"unknown worker {wid!r}: pick one listed by the runs route")
        return spec

    def _profile_or_202(self, spec):
        """The parsed profile, or an HttpError 202 with progress while it loads."""
        self._ensure_backends()
        prof = self._store.loaded(spec)
        if prof is not None:
            return prof
        fut = self._store.future(spec)
        try:
            return fut.result(timeout=WAIT_SECONDS)
        except TimeoutError:
            st = self._store.status(spec)
            raise HttpError(202, f"{spec.id} is still loading", status="loading", progress=st["progress"])

    @staticmethod
    def _accept_post(request) -> bool:
        """POST with a JSON body may start parsing (a cross-site page cannot send one without a
        CORS preflight, which TensorBoard never grants); its fields become the query arguments.
        GET only reads what is already parsed.  Returns whether the request may start work."""
        if request.method == "GET":
            return False
        body = json_body(request)
        args = {}
        for k, v in body.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)) and v is not None:
                raise HttpError(400, f"field {k!r} must be a string or a number")
            if v is not None:
                args[str(k)] = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
        from werkzeug.datastructures import ImmutableMultiDict
        request.args = ImmutableMultiDict(args)
        return True

    def _comparison(self, request, may_parse: bool = False) -> Comparison:
        """The Comparison named by the query (cached), or HttpError 202 while it is computed.

        Without ``may_parse`` (plain GET) both workers must be parsed already (memory or disk
        cache): otherwise 409, and the client POSTs ``load`` (or this route) to start."""
        base = self._spec(arg(request, "baseline"))
        target = self._spec(arg(request, "target"))
        per = arg(request, "per_step", required=False)
        if per not in (None, "0", "1", "auto"):
            raise HttpError(400, "per_step must be 0, 1 or auto")
        compat = arg(request, "reference_compat", required=False)
        if compat not in (None, "0", "1"):
            raise HttpError(400, "reference_compat must be 0 or 1")
        opts = Options(base_step=int_arg(request, "base_step"), target_step=int_arg(request, "target_step"),
                       per_step=None if per in (None, "auto") else per == "1", reference_compat=compat == "1")
        key = (base.fingerprint, target.fingerprint, opts.key())
        self._ensure_backends()
        hit = self._comparisons.peek(key)
        if hit is not None:
            return hit
        for spec in (base, target):
            if spec.error:
                raise HttpError(422, spec.error)
        if not may_parse:
            missing = [s.id for s in (base, target) if not self._store.available(s)
                       and self._store.status(s)["status"] != "loading"]
            for s in (base, target):
                st = self._store.status(s)
                if st["status"] == "error":
                    raise HttpError(422, st["error"])
            if missing:
                raise HttpError(409, f"not parsed yet: {', '.join(missing)}; POST load "
                                     "{\"workers\": [...]} (or POST this route) to parse", status="not_loaded",
                                workers=missing)

        def job(progress):
            fb, ft = self._store.future(base), self._store.future(target)
            while not (fb.done() and ft.done()):
                sb, st = self._store.status(base), self._store.status(target)
                progress(0.45 * (sb["progress"] + st["progress"]))
                try:
                    fb.result(timeout=0.2) if not fb.done() else ft.result(timeout=0.2)
                except TimeoutError:
                    pass
            cmp = Comparison(fb.result(), ft.result(), opts, Side(base.run, base.name, base.root),
                             Side(target.run, target.name, target.root))
            progress(0.95)
            cmp.overall()
            return cmp

        fut = self._comparisons.submit(key, job)
        try:
            return fut.result(timeout=WAIT_SECONDS)
        except TimeoutError:
            st = self._comparisons.status(key)
            raise HttpError(202, "the comparison is still being computed", status="loading",
                            progress=st["progress"])

    # -- routes --------------------------------------------------------------------------
    def _compare_view(self, request):
        may_parse = self._accept_post(request)
        view = request.path.rsplit("/compare/", 1)[-1]
        if view not in VIEWS:
            raise HttpError(404, f"unknown comparison view {view!r}; views: {', '.join(sorted(VIEWS))}")
        order = arg(request, "order", required=False, default="desc")
        if order not in ("asc", "desc"):
            raise HttpError(400, "order must be asc or desc")
        params = dict(sort=arg(request, "sort", required=False, max_len=64), order=order,
                      q=arg(request, "q", required=False, max_len=256),
                      status=arg(request, "status", required=False, max_len=32),
                      min_diff=float_arg(request, "min_diff"),
                      offset=int_arg(request, "offset", 0, 0, 10 ** 9),
                      limit=int_arg(request, "limit", 100, 1, 1000))
        cmp = self._comparison(request, may_parse)
        try:
            return json_response(request, view_page(cmp, view, **params))
        except ValueError as e:
            raise HttpError(400, str(e))
        except ViewUnavailable as e:
            raise HttpError(404, str(e))

    def _compare_xlsx(self, request):
        from io import BytesIO
        from tensorboard.backend import http_util
        from .presenters.xlsx_workbook import workbook_filename, write_workbook
        cmp = self._comparison(request, self._accept_post(request))
        buf = BytesIO()
        write_workbook(cmp, buf)
        name = workbook_filename(cmp)
        return http_util.Respond(request, buf.getvalue(),
                                 "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                                 headers=[("Content-Disposition", f'attachment; filename="{name}"')])

    def _export(self, request):
        """Save the workbook into the export folder (for VSCode, where downloads are blocked)."""
        from .presenters.xlsx_workbook import workbook_filename, write_workbook
        body = json_body(request)
        args = {}
        for k in ("baseline", "target", "base_step", "target_step", "per_step", "reference_compat"):
            v = body.get(k)
            if v is not None:
                if not isinstance(v, (str, int)) or isinstance(v, bool):
                    raise HttpError(400, f"{k} must be a string or an integer")
                args[k] = str(v)
        from werkzeug.datastructures import MultiDict
        request.args = MultiDict(args)
        cmp = self._comparison(request, may_parse=True)
        os.makedirs(self._export_dir, exist_ok=True)
        path = os.path.join(self._export_dir, workbook_filename(cmp))
        write_workbook(cmp, path)
        return json_response(request, {"path": path})

    def _compare_memory_curve(self, request):
        cmp = self._comparison(request, self._accept_post(request))
        body = dict(cmp.memory_curves())
        peak = cmp.memory_peak()
        body["attribution"] = peak.head(50).to_dict(orient="records")
        return json_response(request, body)

    def _compare_communication(self, request):
        cmp = self._comparison(request, self._accept_post(request))
        res = cmp.communication()
        return json_response(request, {"rows": res.to_list(), "notes": list(getattr(res, "notes", []))})

    def _compare_overall(self, request):
        may_parse = self._accept_post(request)
        key = self._overall_key(request)
        disk = self._store.disk_cache
        if key is not None and disk is not None:
            hit = disk.get_json(key)
            if hit is not None:
                return json_response(request, hit)
        body = overall_payload(self._comparison(request, may_parse))
        if key is not None and disk is not None:
            disk.put_json(key, body)
        return json_response(request, body)

    def _overall_key(self, request):
        """Disk-cache key of a finished overview: both workers' files and every option."""
        try:
            base = self._spec(arg(request, "baseline"))
            target = self._spec(arg(request, "target"))
        except HttpError:
            return None
        compat = request.args.get("reference_compat")
        if compat not in (None, "", "0", "1"):
            return None                     # _comparison answers 400
        self._ensure_backends()
        return ["overall", base.id, base.fingerprint, target.id, target.fingerprint,
                request.args.get("base_step"), request.args.get("target_step"), request.args.get("per_step"),
                compat == "1"]

    def _runs(self, request):
        snap = self._scanner.snapshot
        if not snap.scanned_at:
            self._scanner.wait_first_scan(10)
            snap = self._scanner.snapshot
        body = runs_payload(snap, self._store)
        body["env"] = {"vscode": os.environ.get("VSCODE_TENSORBOARD_LAUNCH") == "1",
                       "export_dir": self._export_dir}
        return json_response(request, body)

    def _worker(self, request):
        may_parse = self._accept_post(request)
        spec = self._spec(arg(request, "id"))
        if spec.error:
            raise HttpError(422, spec.error)
        st = self._store.status(spec)
        if st["status"] == "error":
            raise HttpError(422, st["error"])
        if not may_parse and not self._store.available(spec) and st["status"] != "loading":
            raise HttpError(409, f"{spec.id} is not parsed yet; POST load {{\"workers\": [...]}} to parse it",
                            status="not_loaded")
        prof = self._profile_or_202(spec)
        body = worker_payload(spec, self._store)
        body["summary"] = prof.summary()
        return json_response(request, body)

    def _load(self, request):
        body = json_body(request)
        ids = body.get("workers")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(ids) > 64:
            raise HttpError(400, "body must be {\"workers\": [worker ids]} (at most 64)")
        out = {}
        self._ensure_backends()
        for wid in ids:
            spec = self._spec(wid)
            out[wid] = self._store.request(spec, retry=True) if not spec.error else {
                "status": "error", "error": spec.error, "progress": 1.0}
        return json_response(request, {"workers": out})

    def _static(self, request):
        name = request.path.rsplit("/static/", 1)[-1]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise HttpError(404, "no such file")
        ext = os.path.splitext(name)[1]
        if ext not in _MIME:
            raise HttpError(404, "no such file")
        try:
            data = resources.files("tb_compare_plugin").joinpath("static", name).read_bytes()
        except (FileNotFoundError, IsADirectoryError, OSError):
            raise HttpError(404, f"no such file: {name}")
        from tensorboard.backend import http_util
        return http_util.Respond(request, data, _MIME[ext])
