"""Helpers for the browser tests: Chromium launch flags, the plugin iframe, console-error
collection, and a contract mock of the comparison-view routes (docs/api.md) so the tables,
charts and call stacks can be exercised before (or independently of) the real routes."""
from __future__ import annotations

import contextlib
import http.server
import json
import math
import re
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlparse

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
PLUGIN = "profile_compare"
IFRAME = f'iframe[src*="plugin_entry.html?name={PLUGIN}"]'
HARMLESS = ("Multiple instances of Three.js",)


class ConsoleWatch:
    """Console errors and page errors of a page (all frames), minus known harmless ones.

    Chromium logs every 404 as "Failed to load resource". Two kinds are expected and ignored:
    a plugin compare route that does not exist (yet) for a pair — the UI shows "not
    available" — and TensorBoard's own absolute /font-roboto/ URLs under --path_prefix (a
    TensorBoard issue). A 404 on any other plugin URL (runs, load, static, ...) is an error."""

    def __init__(self, page) -> None:
        self.messages: list[str] = []
        self.not_found: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))
        page.on("response", self._response)

    def _console(self, msg) -> None:
        if msg.type == "error" and not any(h in msg.text for h in HARMLESS):
            self.messages.append(msg.text)

    def _response(self, resp) -> None:
        if resp.status == 404:
            self.not_found.append(resp.url)

    def bad_404s(self) -> list[str]:
        return [u for u in self.not_found if f"/data/plugin/{PLUGIN}/" in u and f"/{PLUGIN}/compare/" not in u]

    def errors(self) -> list[str]:
        bad = self.bad_404s()
        out = [m for m in self.messages if bad or not (m.startswith("Failed to load resource") and "404" in m)]
        return out + [f"404: {u}" for u in bad]


def plugin_frame(page):
    return page.frame_locator(IFRAME)


def frame_of(page):
    for f in page.frames:
        if f"plugin_entry.html?name={PLUGIN}" in f.url:
            return f
    raise AssertionError("plugin iframe not found")


def hash_params(page) -> dict[str, str]:
    h = page.evaluate("location.hash")
    out = {}
    for part in h.lstrip("#").split("&"):
        if "=" in part:
            k, v = part.split("=", 1)
            from urllib.parse import unquote
            out[unquote(k)] = unquote(v)
    return out


def shoot(page, path: Path, full: bool = True, scroll_to=None) -> None:
    """Screenshot the plugin: the whole content (the viewport grown to the iframe's height,
    scrolled to the top), or the current viewport scrolled to `scroll_to` (a locator)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    vp = page.viewport_size
    try:
        if scroll_to is not None:
            scroll_to.scroll_into_view_if_needed()
        else:
            frame_of(page).evaluate("window.scrollTo(0, 0)")
    except Exception:  # noqa: BLE001 - a screenshot must never fail a test
        pass
    if full:
        try:
            h = frame_of(page).evaluate("document.documentElement.scrollHeight")
            page.set_viewport_size({"width": vp["width"], "height": max(vp["height"], min(int(h) + 90, 4000))})
        except Exception:  # noqa: BLE001 - a screenshot must never fail a test
            pass
    page.screenshot(path=str(path))
    page.set_viewport_size(vp)


# -- contract mock of the view routes ----------------------------------------------------

def _op_rows(prefix: str, n: int, unit_scale: float = 1.0) -> list[dict]:
    rows = []
    for i in range(n):
        b = round((i * 37 % 101) * 0.37 * unit_scale, 3)
        t = round(b * (0.5 + (i * 13 % 17) / 10), 3)
        status = "both"
        if i % 11 == 3:
            t, status = 0.0, "baseline_only"
        elif i % 13 == 5:
            b, status = 0.0, "target_only"
        rows.append({"name": f"{prefix}{i:03d}", "base_ms": b, "base_count": i % 7 + 1, "target_ms": t,
                     "target_count": i % 5 + 1, "diff_ms": round(t - b, 3),
                     "ratio": round(t / b, 4) if b else None, "status": status})
    return rows


def _module_rows() -> list[dict]:
    rows, path = [], []
    names = [(0, "AlexNet_0"), (1, "features_0"), (2, "Conv2d_0"), (2, "ReLU_1"), (2, "Conv2d_3"),
             (1, "avgpool_0"), (1, "classifier_0"), (2, "Linear_1"), (2, "Dropout_2"), (0, "Optimizer.step#SGD.step")]
    for i, (d, n) in enumerate(names):
        path = path[:d] + [n]
        b = 10.0 / (d + 1) + i
        t = b * (1.3 if i % 2 else 0.8)
        rows.append({"name": n, "depth": d, "path": "/ " + "/ ".join(path), "base_ms": round(b, 3),
                     "base_count": 1, "target_ms": round(t, 3), "target_count": 1, "diff_ms": round(t - b, 3),
                     "ratio": round(t / b, 4), "status": "both",
                     "base_call_stack": "/home/me/train.py(12): main;\n/home/me/model.py(40): forward",
                     "target_call_stack": "/home/me/train.py(12): main\n/home/me/model.py(41): forward"})
    return rows


OP_COLUMNS = [{"key": "name", "label": "Name", "type": "text"},
              {"key": "base_ms", "label": "Baseline", "type": "ms"},
              {"key": "base_count", "label": "Baseline calls", "type": "count"},
              {"key": "target_ms", "label": "Target", "type": "ms"},
              {"key": "target_count", "label": "Target calls", "type": "count"},
              {"key": "diff_ms", "label": "Diff", "type": "ms"},
              {"key": "ratio", "label": "Ratio", "type": "ratio"}]


def _memory_rows() -> list[dict]:
    rows = []
    for i in range(40):
        b = (i * 7919 % 97) * 1048576 * 3
        t = int(b * (0.6 + (i % 9) / 8))
        rows.append({"name": f"aten::empty_{i}", "base_bytes": b, "target_bytes": t, "diff_bytes": t - b,
                     "ratio": round(t / b, 4) if b else None, "status": "both"})
    return rows


MEM_COLUMNS = [{"key": "name", "label": "Operator", "type": "text"},
               {"key": "base_bytes", "label": "Baseline allocated", "type": "bytes"},
               {"key": "target_bytes", "label": "Target allocated", "type": "bytes"},
               {"key": "diff_bytes", "label": "Diff", "type": "bytes"},
               {"key": "ratio", "label": "Ratio", "type": "ratio"}]


def _curve(n: int, scale: float, period: float) -> dict:
    t = [i * 0.5 for i in range(n)]
    alloc = [round(scale * (0.55 + 0.35 * math.sin(x / period) ** 2 + 0.05 * (i % 7) / 7), 3) for i, x in enumerate(t)]
    reserved = [round(max(alloc[: i + 1]) * 1.1, 3) for i in range(n)]
    k = max(range(n), key=alloc.__getitem__)
    return {"t_ms": t, "allocated_mb": alloc, "reserved_mb": reserved,
            "peak": {"t_ms": t[k], "allocated_mb": alloc[k], "reserved_mb": reserved[k]}}


MEMORY_CURVE = {"baseline": _curve(600, 2000, 40), "target": _curve(500, 2600, 31),
                "attribution": [{"side": "target", "name": "aten::conv2d", "allocated_mb": 812.5, "share": 0.31},
                                {"side": "target", "name": "aten::addmm", "allocated_mb": 402.25, "share": 0.15},
                                {"side": "baseline", "name": "aten::conv2d", "allocated_mb": 700.0, "share": 0.35}]}

VIEWS = {
    "operator": (OP_COLUMNS, _op_rows("aten::op_", 120)),
    "kernel": ([dict(c, type="us") if c["type"] == "ms" else c for c in OP_COLUMNS], _op_rows("kernel_", 60, 1000)),
    "api": (OP_COLUMNS, _op_rows("aten::api_", 30)),
    "communication": (OP_COLUMNS, _op_rows("hcom_allReduce_", 8)),
    "module": (OP_COLUMNS, _module_rows()),
    "memory": (MEM_COLUMNS, _memory_rows()),
}


def _page(view: str, q: dict[str, str]) -> dict:
    cols, rows = VIEWS[view]
    rows = list(rows)
    if q.get("q"):
        rows = [r for r in rows if q["q"].lower() in r["name"].lower()]
    if q.get("min_diff"):
        md = float(q["min_diff"])
        key = "diff_bytes" if view == "memory" else "diff_ms"
        rows = [r for r in rows if abs(r[key]) >= md * (1048576 if view == "memory" else 1)]
    if q.get("sort") and view != "module":
        k = q["sort"]
        rows.sort(key=lambda r: (r.get(k) is None, r.get(k) if r.get(k) is not None else 0),
                  reverse=q.get("order") == "desc")
    off, lim = int(q.get("offset", 0)), int(q.get("limit", 50))
    return {"columns": cols, "rows": rows[off: off + lim], "total": len(rows), "offset": off, "limit": lim,
            "summary": {"rows": len(rows), "baseline_only": sum(r["status"] == "baseline_only" for r in rows),
                        "target_only": sum(r["status"] == "target_only" for r in rows)}}


class ContractMock:
    """Answers compare/<view>, compare/memory_curve and export as docs/api.md describes."""

    ROUTE = re.compile(rf"/data/plugin/{PLUGIN}/(compare/(\w+)|export)(\?|$)")

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.exports: list[dict] = []

    def install(self, page) -> None:
        page.route(self.ROUTE, self._handle)

    def last(self, view: str) -> dict[str, str]:
        for v, q in reversed(self.requests):
            if v == view:
                return q
        raise AssertionError(f"no request for {view}")

    def _handle(self, route) -> None:
        req = route.request
        u = urlparse(req.url)
        m = self.ROUTE.search(u.path + ("?" if u.query else ""))
        what = m.group(2) or "export"
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        self.requests.append((what, q))
        if what == "export":
            self.exports.append(json.loads(req.post_data or "{}"))
            return route.fulfill(status=200, content_type="application/json",
                                 body=json.dumps({"path": "/home/me/tb-compare-exports/comparison.xlsx"}))
        if what == "memory_curve":
            return route.fulfill(status=200, content_type="application/json", body=json.dumps(MEMORY_CURVE))
        if what in VIEWS:
            return route.fulfill(status=200, content_type="application/json", body=json.dumps(_page(what, q)))
        return route.fallback()


VSCODE_SIM = """<!doctype html><html><head><meta charset="utf-8"><title>VSCode sim</title></head>
<body style="margin:0;overflow:hidden">
<iframe id="tb" sandbox="allow-scripts allow-forms allow-same-origin allow-pointer-lock" src="{src}"
 style="border:0;transform:scale(0.8);transform-origin:0 0;width:125vw;height:125vh"></iframe>
<script>window.received=[];window.addEventListener("message",function(e){{
 if(e.data&&e.data.filename)window.received.push({{origin:e.origin,data:e.data}});}});</script>
</body></html>"""


@contextlib.contextmanager
def serve_html(html: str):
    """Serve one HTML page from a throwaway loopback server: another origin (another port)
    than TensorBoard, as VSCode's webview is. (A page fulfilled by page.route would count as
    a public origin, and Chromium then refuses to frame the loopback TensorBoard.)"""
    body = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/index.html"
    finally:
        srv.shutdown()
        srv.server_close()
