"""The TensorBoard plugin: route handlers that parse parameters, ask the comparison service
(:mod:`.service`) and format its answers.  Nothing heavy happens on a request thread: parsing,
comparing, table pages and workbooks run on the service's pools, and a handler waits a bounded
time before answering 202 "loading" with the job's progress (ask again to join the same job).
"""
from __future__ import annotations

import os
from importlib import resources

from tensorboard.plugins import base_plugin

from . import PLUGIN_NAME
from .discovery import split_worker_id
from .discovery.scanner import Scanner
from .comparison import Options
from .http import HttpError, arg, float_arg, int_arg, json_body, json_response, route
from .presenters.relpaths import RelativePaths
from .presenters.runs_json import runs_payload, worker_payload
from .service.compare import WAIT_SECONDS, CompareService  # noqa: F401 - WAIT_SECONDS: older name
from .service.dask_exec import scheduler_address

_MIME = {".js": "text/javascript", ".css": "text/css", ".map": "application/json",
         ".html": "text/html", ".svg": "image/svg+xml", ".png": "image/png"}
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


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
        max_mb = getattr(flags, "profile_compare_max_expanded_mb", None)
        if max_mb and 0 < max_mb < float("inf"):   # read by the loaders, in the parser processes too
            os.environ["TB_COMPARE_MAX_EXPANDED_MB"] = repr(float(max_mb))
        # a Dask scheduler for a cluster run's per-rank work (the flag, else TB_COMPARE_DASK_SCHEDULER,
        # else None = local cores): what the route `cluster` passes to service.cluster.cluster_json
        self.dask_scheduler = scheduler_address(getattr(flags, "profile_compare_dask_scheduler", "") or "")
        self._service = CompareService(self._logdir)
        from .service.cluster_jobs import ClusterJobs
        self._clusters = ClusterJobs(self._service.wait_seconds, self.dask_scheduler)
        self._paths = RelativePaths(self._logdir)      # how the tab sees paths: relative to the logdir

    @property
    def _store(self):
        return self._service.profiles

    def close(self) -> None:
        """Stop the scanner thread, the service's pools and the parser processes (idempotent).
        TensorBoard never calls it; tests and embedders that make plugins do."""
        self._scanner.stop()
        self._service.close()
        self._clusters.close()

    # -- TensorBoard contract ------------------------------------------------------------
    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/static/index.js", tab_name="PROFILE COMPARE",
                                            disable_reload=False)

    def is_active(self):
        self._scanner.start()
        return self._scanner.active

    def get_plugin_apps(self):
        self._scanner.start()
        def r(handler):
            return route(handler, tidy=self._paths.text)
        return {
            "/runs": r(self._runs),
            "/worker": r(self._worker),
            "/load": r(self._load),
            "/analyses": r(self._analyses),
            "/compare/overall": r(self._compare_overall),
            "/compare/memory_curve": r(self._compare_memory_curve),
            "/compare/xlsx": r(self._compare_xlsx),
            "/export": r(self._export),
            "/compare/communication": r(self._compare_communication),
            "/compare/steps": r(self._compare_steps),
            "/compare/*": r(self._compare_view),
            "/cluster": r(self._cluster),
            "/cluster/xlsx": r(self._cluster_xlsx),
            "/static/*": r(self._static),
        }

    def _reply(self, request, obj):
        """A JSON answer as the tab sees it: every path in it relative to the logdir (the one
        place answers are presented; errors go through the same ``RelativePaths`` in ``route``)."""
        return json_response(request, self._paths.obj(obj))

    # -- parameters ----------------------------------------------------------------------
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

    def _pair(self, request):
        """(baseline spec, target spec, Options) named by the query."""
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
        return base, target, opts

    def _comparison(self, request, may_parse: bool = False):
        """The Comparison named by the query (the service's Pending / NotParsed / Unusable
        become 202 / 409 / 422)."""
        return self._service.comparison(*self._pair(request), may_parse)

    # -- routes --------------------------------------------------------------------------
    def _compare_view(self, request):
        from .analyses import analyses
        may_parse = self._accept_post(request)
        view = request.path.rsplit("/compare/", 1)[-1]
        names = {a.name for a in analyses("route")}
        if view not in names:
            raise HttpError(404, f"unknown comparison view {view!r}; views: {', '.join(sorted(names))}")
        order = arg(request, "order", required=False, default="desc")
        if order not in ("asc", "desc"):
            raise HttpError(400, "order must be asc or desc")
        params = dict(sort=arg(request, "sort", required=False, max_len=64), order=order,
                      q=arg(request, "q", required=False, max_len=256),
                      status=arg(request, "status", required=False, max_len=32),
                      min_diff=float_arg(request, "min_diff"),
                      offset=int_arg(request, "offset", 0, 0, 10 ** 9),
                      limit=int_arg(request, "limit", 100, 1, 1000))
        from .analyses import Unavailable
        try:
            return self._reply(request, self._service.table(*self._pair(request), view, params, may_parse))
        except ValueError as e:
            raise HttpError(400, str(e))
        except Unavailable as e:
            raise HttpError(404, str(e))

    def _analyses(self, request):
        """The registered analyses the tab can show (``outputs`` holds "route"); with
        ``baseline`` and ``target``, whether each applies to that pair."""
        from .analyses import analyses
        from .presenters.answers_json import analyses_payload
        sides = []
        for role in ("baseline", "target"):
            wid = arg(request, role, required=False)
            if wid is not None:
                spec = self._spec(wid)
                prof = self._store.loaded(spec)
                sides.append(spec if prof is None else prof)
        if len(sides) == 1:
            raise HttpError(400, "give both baseline and target, or neither")
        return self._reply(request, analyses_payload(analyses("route"), *sides))

    def _compare_xlsx(self, request):
        from tensorboard.backend import http_util
        from .presenters.xlsx_workbook import workbook_filename
        may_parse = self._accept_post(request)          # first: a POST's body becomes the query
        data, cmp = self._service.workbook(*self._pair(request), may_parse)
        return http_util.Respond(request, data, XLSX_MIME,
                                 headers=[("Content-Disposition",
                                           f'attachment; filename="{workbook_filename(cmp)}"')])

    def _export(self, request):
        """Save the workbook into the export folder (for VSCode, where downloads are blocked)."""
        from .presenters.xlsx_workbook import open_target, workbook_filename
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
        data, cmp = self._service.workbook(*self._pair(request), may_parse=True)
        os.makedirs(self._export_dir, exist_ok=True)
        path = os.path.join(self._export_dir, workbook_filename(cmp))
        tmp, finish = open_target(path)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
        except BaseException:
            finish(False)
            raise
        finish(True)
        return json_response(request, {"path": path})  # outside the logdir: absolute

    def _compare_memory_curve(self, request):
        from .presenters.answers_json import memory_curve_payload
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.answer(*self._pair(request), "memory_curve",
                                                           memory_curve_payload, may_parse))

    def _compare_communication(self, request):
        from .presenters.answers_json import communication_payload
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.answer(*self._pair(request), "communication",
                                                           communication_payload, may_parse))

    def _compare_steps(self, request):
        """The step comparison: per step and side the breakdown and phases, each side's
        efficiency, per metric the across-step statistics with the noise verdict."""
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.steps(*self._pair(request), may_parse))

    def _compare_overall(self, request):
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.overview(*self._pair(request), may_parse))

    def _run_info(self, name: str):
        """The discovered run called ``name`` (as the runs route lists it)."""
        snap = self._scanner.snapshot
        if not snap.scanned_at:
            self._scanner.wait_first_scan(10)
            snap = self._scanner.snapshot
        for r in snap.runs:
            if r.name == name:
                return r
        raise HttpError(404, f"unknown run {name!r}: pick one listed by the runs route")

    def _cluster_query(self, request):
        """(run, against or None, step or None) named by the query."""
        run = self._run_info(arg(request, "run"))
        other = arg(request, "against", required=False)
        return run, (self._run_info(other) if other is not None else None), int_arg(request, "step")

    def _cluster(self, request):
        """Every rank of a run (and against a second run): the cluster JSON, as
        ``tb-compare cluster --json`` writes it.  POST computes; GET reads (409 until computed)."""
        may_start = self._accept_post(request)
        return self._reply(request, self._clusters.result(*self._cluster_query(request), may_start))

    def _cluster_xlsx(self, request):
        """The cluster workbook of the same answer (download)."""
        from tensorboard.backend import http_util
        from .presenters.xlsx_cluster import cluster_workbook_filename
        may_start = self._accept_post(request)
        run, other, step = self._cluster_query(request)
        data = self._clusters.workbook(run, other, step, may_start)
        name = cluster_workbook_filename(run.name, other.name if other is not None else None, step)
        return http_util.Respond(request, data, XLSX_MIME,
                                 headers=[("Content-Disposition", f'attachment; filename="{name}"')])

    def _runs(self, request):
        snap = self._scanner.snapshot
        if not snap.scanned_at:
            self._scanner.wait_first_scan(10)
            snap = self._scanner.snapshot
        body = runs_payload(snap, self._store)
        body["env"] = {"vscode": os.environ.get("VSCODE_TENSORBOARD_LAUNCH") == "1",
                       "export_dir": self._export_dir}
        return self._reply(request, body)

    def _worker(self, request):
        may_parse = self._accept_post(request)
        spec = self._spec(arg(request, "id"))
        prof = self._service.profile(spec, may_parse)
        body = worker_payload(spec, self._store)
        body["summary"] = prof.summary()
        return self._reply(request, body)

    def _load(self, request):
        body = json_body(request)
        ids = body.get("workers")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(ids) > 64:
            raise HttpError(400, "body must be {\"workers\": [worker ids]} (at most 64)")
        out = {}
        for wid in ids:
            out[wid] = self._service.start_load(self._spec(wid))
        return self._reply(request, {"workers": out})

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
