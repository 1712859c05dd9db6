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
from .http import HttpError, arg, bad_param, float_arg, int_arg, json_body, json_response, route
from .presenters.relpaths import RelativePaths
from .presenters.runs_json import runs_payload, worker_payload
from .service.compare import WAIT_SECONDS, CompareService  # noqa: F401 - WAIT_SECONDS: older name
from .service.dask_exec import scheduler_address
from .service.errors import BadParameter

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


def _close_at_exit(plugin) -> None:
    """Close ``plugin`` (if it still exists) when the interpreter exits, before Python waits for
    the threads still running: TensorBoard's SIGTERM handler calls ``sys.exit`` and a Ctrl-C ends
    its main thread, and then the parses under way are stopped (their children killed,
    half-written cache entries deleted, scratch folders removed) instead of waited for."""
    import weakref
    from .service.parsepool import abort_all, stop_before_threads_join
    ref = weakref.ref(plugin)

    def close() -> None:
        p = ref()
        if p is not None:
            p.close()
        abort_all()                 # the cluster summaries' processes too
    stop_before_threads_join(close)


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
        from .service.name_maps import NameMaps
        self._name_maps = NameMaps(self._export_dir)   # the match editor's saved maps, beside the exports
        _close_at_exit(self)


    @property
    def _store(self):
        return self._service.profiles

    def close(self) -> None:
        """Stop the scanner thread, the service's pools and the parser processes (idempotent).
        TensorBoard never calls it itself: :func:`_close_at_exit` makes it run when TensorBoard
        exits (SIGTERM, Ctrl-C); tests and embedders that make plugins call it too."""
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
        get, post, both = ("GET",), ("POST",), ("GET", "POST")       # HEAD goes with GET

        def r(handler, methods):
            return route(handler, tidy=self._paths.text, methods=methods)
        return {
            "/runs": r(self._runs, get),
            "/worker": r(self._worker, both),
            "/load": r(self._load, post),
            "/analyses": r(self._analyses, get),
            "/compare/overall": r(self._compare_overall, both),
            "/compare/memory_curve": r(self._compare_memory_curve, both),
            "/compare/xlsx": r(self._compare_xlsx, both),
            "/export": r(self._export, post),
            "/compare/communication": r(self._compare_communication, both),
            "/compare/steps": r(self._compare_steps, both),
            "/compare/timeline": r(self._compare_timeline, both),
            "/compare/timeline/item": r(self._compare_timeline_item, both),
            "/compare/timeline/range": r(self._compare_timeline_range, both),
            "/compare/timeline/find": r(self._compare_timeline_find, both),
            "/compare/match_candidates": r(self._compare_match_candidates, both),
            "/compare/matching": r(self._compare_matching, both),
            "/name_maps": r(self._name_maps_list, get),
            "/name_maps/save": r(self._name_maps_save, post),
            "/name_maps/remove": r(self._name_maps_remove, post),
            "/name_maps/edit": r(self._name_maps_edit, post),
            "/compare/*": r(self._compare_view, both),
            "/cluster": r(self._cluster, both),
            "/cluster/xlsx": r(self._cluster_xlsx, both),
            "/static/*": r(self._static, get),
        }

    def _reply(self, request, obj):
        """A JSON answer as the tab sees it: every path in it relative to the logdir (the one
        place answers are presented; errors go through the same ``RelativePaths`` in ``route``)."""
        return json_response(request, self._paths.obj(obj))

    # -- parameters ----------------------------------------------------------------------
    def _snapshot(self):
        snap = self._scanner.snapshot
        if not snap.scanned_at:
            self._scanner.wait_first_scan(10)
            snap = self._scanner.snapshot
        return snap

    def _spec(self, wid: str, param: str = "id"):
        """The discovered worker ``wid`` names; a 400 naming ``param`` and the listed ids otherwise."""
        snap = self._snapshot()
        try:
            split_worker_id(wid)
        except ValueError as e:
            raise bad_param(param, f"parameter {param!r}: {e}", sorted(snap.workers)[:200])
        spec = snap.workers.get(wid)
        if spec is None:
            from .service.params import choices_text
            ids = sorted(snap.workers)
            raise bad_param(param, f"parameter {param!r}: unknown worker {wid[:200]!r} (workers the runs "
                            f"route lists: {choices_text(ids)})", ids[:200])
        return spec

    def _step_arg(self, request, name: str, spec):
        """``base_step`` / ``target_step``: an integer; when it is not one, the 400 names the
        steps known for ``spec`` (parsed, else seen by discovery)."""
        def known():
            prof = self._store.loaded(spec)
            return prof.step_ids() if prof is not None else list(spec.steps)
        v = arg(request, name, required=False)
        if v is None:
            return None
        try:
            return int(v)
        except ValueError:
            return int_arg(request, name, choices=known())

    @staticmethod
    def _accept_post(request) -> bool:
        """POST with a JSON body may start parsing (a cross-site page cannot send one without a
        CORS preflight, which TensorBoard never grants); its fields become the query arguments.
        GET only reads what is already parsed.  Returns whether the request may start work."""
        if request.method in ("GET", "HEAD"):
            return False
        body = json_body(request)
        args = {}
        for k, v in body.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)) and v is not None:
                raise bad_param(str(k)[:64], f"parameter {str(k)[:64]!r} must be a string or a number")
            if v is not None:
                args[str(k)] = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
        from werkzeug.datastructures import ImmutableMultiDict
        request.args = ImmutableMultiDict(args)
        return True

    def _pair(self, request):
        """(baseline spec, target spec, Options) named by the query."""
        base = self._spec(arg(request, "baseline"), "baseline")
        target = self._spec(arg(request, "target"), "target")
        per = arg(request, "per_step", required=False)
        if per not in (None, "0", "1", "auto"):
            raise bad_param("per_step", f"parameter 'per_step' must be 0, 1 or auto, got {per[:40]!r}",
                            ["0", "1", "auto"])
        compat = arg(request, "reference_compat", required=False)
        if compat not in (None, "0", "1"):
            raise bad_param("reference_compat", f"parameter 'reference_compat' must be 0 or 1, got {compat[:40]!r}",
                            ["0", "1"])
        name_map = arg(request, "name_map", required=False, max_len=200)
        opts = Options(base_step=self._step_arg(request, "base_step", base),
                       target_step=self._step_arg(request, "target_step", target),
                       per_step=None if per in (None, "auto") else per == "1", reference_compat=compat == "1",
                       op_name_map=self._name_maps.load(name_map) if name_map is not None else ())
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
        found = {a.name: a for a in analyses("route")}
        if view not in found:
            raise HttpError(404, f"unknown comparison view {view[:200]!r}; views: {', '.join(sorted(found))}")
        order = arg(request, "order", required=False, default="desc")
        if order not in ("asc", "desc"):
            raise bad_param("order", f"parameter 'order' must be asc or desc, got {order[:40]!r}", ["asc", "desc"])
        status = arg(request, "status", required=False, max_len=32)
        if status not in (None, "both", "baseline_only", "target_only"):
            raise bad_param("status", f"parameter 'status' must be both, baseline_only or target_only, got {status!r}",
                            ["both", "baseline_only", "target_only"])
        sort = arg(request, "sort", required=False, max_len=64)
        cols = [c.key for c in found[view].columns]
        if sort is not None and sort not in cols:
            raise bad_param("sort", f"parameter 'sort': the {view} table has no column {sort!r} (columns: {', '.join(cols)})",
                            cols)
        params = dict(sort=sort, order=order,
                      q=arg(request, "q", required=False, max_len=4096),  # a GPU kernel row: a C++ signature
                      status=status,
                      min_diff=float_arg(request, "min_diff"),
                      offset=int_arg(request, "offset", 0, 0, 10 ** 9),
                      limit=int_arg(request, "limit", 100, 1, 1000))
        from .analyses import Unavailable
        try:
            return self._reply(request, self._service.table(*self._pair(request), view, params, may_parse))
        except BadParameter:
            raise
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
                spec = self._spec(wid, role)
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
        for k in ("baseline", "target", "base_step", "target_step", "per_step", "reference_compat", "name_map"):
            v = body.get(k)
            if v is not None:
                if not isinstance(v, (str, int)) or isinstance(v, bool):
                    raise bad_param(k, f"parameter {k!r} must be a string or an integer")
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

    def _compare_match_candidates(self, request):
        """Target-only operators ranked as partners for the baseline operator ``name``
        (name similarity, input shapes, device time), filtered by ``q``."""
        from .engines.match_candidates import candidates
        may_parse = self._accept_post(request)
        name = arg(request, "name", max_len=400)
        q = arg(request, "q", required=False, max_len=200)
        limit = int_arg(request, "limit", 50, 1, 500)
        return self._reply(request, self._service.derived(
            *self._pair(request), ("match_candidates", name, q, limit),
            lambda cmp: candidates(cmp.operators().pairs, name, q, limit), may_parse))

    def _compare_matching(self, request):
        """How many top-level operators the matching paired or left alone, and their device time."""
        from .engines.match_candidates import matching_summary
        may_parse = self._accept_post(request)
        base, target, opts = self._pair(request)
        body = self._service.answer(base, target, opts, "matching",
                                    lambda cmp: matching_summary(cmp.operators().pairs), may_parse)
        return self._reply(request, {**body, "name_map_entries": len(opts.op_name_map)})

    # -- saved name maps (the match editor) ------------------------------------------------
    def _name_maps_list(self, request):
        return json_response(request, {"folder": self._name_maps.folder, "maps": self._name_maps.list()})

    def _name_maps_save(self, request):
        body = json_body(request)
        return json_response(request, self._name_maps.save(body.get("name"), body.get("pairs")))

    def _name_maps_remove(self, request):
        body = json_body(request)
        return json_response(request, self._name_maps.remove(body.get("name")))

    def _name_maps_edit(self, request):
        """One match-editor edit saved at once: {"name", "baseline", "target", "action":
        "pair"|"split", "b_name", "t_name"} -> the saved map and the one before it.  A pair of
        identical names cannot be split by a name map: 422 saying so."""
        from .engines.match_edit import CannotSplit, pair_entries, split_entries
        from .engines.name_map import NameMapper
        from .service.errors import NotParsed, Unusable
        from .service.name_maps import check_pairs
        body = json_body(request)
        action = body.get("action")
        if action not in ("pair", "split"):
            raise bad_param("action", "parameter 'action' must be pair or split", ["pair", "split"])
        names = []
        for k in ("b_name", "t_name"):
            v = body.get(k)
            if not isinstance(v, str) or not v or len(v) > 200:
                raise bad_param(k, f"parameter {k!r} must be an operator name (1 to 200 characters)")
            names.append(v)
        specs = [self._spec(body.get(k) if isinstance(body.get(k), str) else "", k) for k in ("baseline", "target")]
        profs = [self._store.loaded(s) for s in specs]
        if any(p is None for p in profs):
            raise NotParsed("parse both workers before editing their matching", [s.id for s, p in zip(specs, profs) if p is None])
        name = body.get("name")
        from .service.name_maps import sanitise
        stem = sanitise(name)
        before = dict(self._name_maps.load(stem, "name")) if stem in self._name_maps.names() else {}
        if "pairs" in body:                      # the map the tab holds (it may not be saved yet)
            before = check_pairs(body.get("pairs"))
        cross = NameMapper.for_profiles(*profs).cross_device
        try:
            after = (pair_entries if action == "pair" else split_entries)(before, *names, cross)
        except CannotSplit as e:
            raise Unusable(str(e))
        saved = self._name_maps.save(stem, after)
        return json_response(request, {**saved, "previous": before, "changed": after != before})

    def _compare_steps(self, request):
        """The step comparison: per step and side the breakdown and phases, each side's
        efficiency, per metric the across-step statistics with the noise verdict."""
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.steps(*self._pair(request), may_parse))

    def _timeline_query(self, request):
        from .service.timeline import MAX_PX, DEFAULT_PX, Query
        return Query(step=int_arg(request, "step"), start_ms=float_arg(request, "start_ms"),
                     end_ms=float_arg(request, "end_ms"), px=int_arg(request, "px", DEFAULT_PX, 1, MAX_PX),
                     align=arg(request, "align", required=False, max_len=64))

    def _compare_timeline(self, request):
        """Both sides' lanes of one window at a pixel width (``service.timeline``)."""
        from .service import timeline
        may_parse = self._accept_post(request)
        q = self._timeline_query(request)
        return self._reply(request, timeline.timeline(self._service, *self._pair(request), q, may_parse))

    def _compare_timeline_range(self, request):
        """Per side the totals per class of a time range (each side's step window by default)."""
        from .service import timeline
        may_parse = self._accept_post(request)
        q = self._timeline_query(request)
        return self._reply(request, timeline.timeline_range(self._service, *self._pair(request), q, may_parse))

    def _compare_timeline_item(self, request):
        """One item's details and its matched counterpart on the other side."""
        from .service import timeline
        may_parse = self._accept_post(request)
        side = arg(request, "side", max_len=16)
        if side not in ("baseline", "target"):
            raise bad_param("side", f"parameter 'side' must be baseline or target, got {side[:40]!r}",
                            ["baseline", "target"])
        ident = arg(request, "id", max_len=32)
        timeline.parse_id(ident)
        q = self._timeline_query(request)
        return self._reply(request, timeline.timeline_item(self._service, *self._pair(request), side, ident,
                                                           q.step, q.align, may_parse))

    def _compare_timeline_find(self, request):
        """The item a table row (kernel or operator name) opens the timeline at."""
        from .service import timeline
        may_parse = self._accept_post(request)
        side = arg(request, "side", max_len=16)
        if side not in ("baseline", "target"):
            raise bad_param("side", f"parameter 'side' must be baseline or target, got {side[:40]!r}",
                            ["baseline", "target"])
        kind = arg(request, "kind", required=False, default="op", max_len=16)
        if kind not in ("kernel", "op"):
            raise bad_param("kind", f"parameter 'kind' must be kernel or op, got {kind[:40]!r}", ["kernel", "op"])
        name = arg(request, "name", max_len=4096)
        nth = int_arg(request, "nth", 0, 0, 10 ** 9)
        shapes = arg(request, "shapes", required=False, max_len=4096)      # the row's input shapes ("N/A" none)
        q = self._timeline_query(request)
        return self._reply(request, timeline.timeline_find(self._service, *self._pair(request), side, kind, name,
                                                           q.step, nth, may_parse, shapes))

    def _compare_overall(self, request):
        may_parse = self._accept_post(request)
        return self._reply(request, self._service.overview(*self._pair(request), may_parse))

    def _run_info(self, name: str, param: str = "run"):
        """The discovered run called ``name`` (as the runs route lists it); a 400 naming ``param``
        and the runs a cluster analysis takes (two or more workers) otherwise."""
        snap = self._snapshot()
        for r in snap.runs:
            if r.name == name:
                return r
        from .service.cluster_jobs import min_workers_error
        from .service.params import choices_text
        names = sorted(r.name for r in snap.runs if not min_workers_error(r))
        raise bad_param(param, f"parameter {param!r}: unknown run {name[:200]!r} (runs with two or more "
                        f"workers: {choices_text(names)})", names[:200])

    def _cluster_query(self, request):
        """(run, against or None, step or None) named by the query."""
        run = self._run_info(arg(request, "run"))
        other = arg(request, "against", required=False)
        return (run, (self._run_info(other, "against") if other is not None else None),
                int_arg(request, "step"))

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
        snap = self._snapshot()
        body = runs_payload(snap, self._store)
        body["notes"] = snap.notes          # what the walk left out (a link to /, ...)
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
            raise bad_param("workers", "parameter 'workers': the body must be {\"workers\": [worker ids]} (at most 64)")
        specs = [self._spec(wid, "workers") for wid in ids]       # every id checked before any starts
        out = {}
        for wid, spec in zip(ids, specs):
            out[wid] = self._service.start_load(spec)
        return self._reply(request, {"workers": out})

    def _static(self, request):
        name = request.path.rsplit("/static/", 1)[-1]
        if (not name or "/" in name or "\\" in name or name.startswith(".")
                or any(ord(ch) < 32 or ord(ch) == 127 for ch in name)):      # NUL, control characters
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
