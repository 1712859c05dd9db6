"""Helpers for the browser tests: Chromium (its launch flags, the skip without it or Playwright,
its start for the `browser` fixture), a TensorBoard URL under --path_prefix, a page of the
plugin's tab, the plugin iframe and its URL keys, console-error collection, screenshots (ART),
reading the plugin's tables, and a VSCode-like outer page."""
from __future__ import annotations

import contextlib
import http.server
import importlib.util
import re
import threading
from pathlib import Path

import pytest

import tbserver
from conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
_NO_BROWSER = ("playwright (Python) is not installed" if importlib.util.find_spec("playwright") is None
               else f"no Chromium at {CHROMIUM} (never `playwright install`)" if not CHROMIUM.exists() else "")
needs_chromium = pytest.mark.skipif(bool(_NO_BROWSER), reason=_NO_BROWSER or "Chromium and Playwright are here")
ART = ROOT / "test-artifacts"          # screenshots
PLUGIN = "profile_compare"
IFRAME = f'iframe[src*="plugin_entry.html?name={PLUGIN}"]'
P = "p.profile_compare."               # the plugin's keys in the URL's hash
CONTENT = "#pc-content"                # the view's content
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
            where = (msg.location or {}).get("url") or ""
            # a failed resource names its URL, so a failing test says which request it was
            self.messages.append(f"{msg.text} [{where}]" if where and msg.text.startswith("Failed to load") else msg.text)

    def _response(self, resp) -> None:
        if resp.status == 404:
            self.not_found.append(resp.url)

    def bad_404s(self) -> list[str]:
        return [u for u in self.not_found if f"/data/plugin/{PLUGIN}/" in u and f"/{PLUGIN}/compare/" not in u]

    def errors(self) -> list[str]:
        bad = self.bad_404s()
        out = [m for m in self.messages if bad or not (m.startswith("Failed to load resource") and "404" in m)]
        return out + [f"404: {u}" for u in bad]


def start_chromium():
    """(a started sync Playwright, a headless Chromium launched by it): the ``browser`` fixture's
    (conftest), which stops both; skips without Playwright or Chromium."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (never `playwright install`)")
    p = playwright_api.sync_playwright().start()
    try:
        return p, p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
    except BaseException:
        p.stop()
        raise


def prefixed_base(server, prefix: str) -> str:
    """The URL of a TensorBoard started with ``--path_prefix prefix``, the prefix included."""
    return server.url if server.url.endswith(prefix) else server.url.rstrip("/") + prefix


class PluginTab:
    """A page of the plugin's tab: its console errors (``console``), the URLs it requested
    (``requests``), the plugin iframe as a frame locator (``f``) and as a frame (``frame``), and
    polling that lets Playwright dispatch the page's events meanwhile (``wait``)."""

    wait_timeout: float = 20

    def __init__(self, page) -> None:
        self.page = page
        self.console = ConsoleWatch(page)
        self.requests: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))

    @staticmethod
    def new_page(browser, width: int, height: int, dark: bool = False):
        """A page of that viewport in the host's light or dark theme."""
        return browser.new_page(viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light")

    @property
    def f(self):
        return plugin_frame(self.page)

    @property
    def frame(self):
        return frame_of(self.page)

    def wait(self, fn, timeout: float | None = None):
        return tbserver.wait_for(fn, self.wait_timeout if timeout is None else timeout, 0.1,
                                 sleep=lambda s: self.page.wait_for_timeout(s * 1000))

    def close(self) -> None:
        self.page.close()


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


# -- reading the plugin's tables ------------------------------------------------------------

_ROWS_JS = """(sel) => {
  const t = document.querySelector(sel);
  if (!t) return null;
  return [...t.querySelectorAll(":scope > tbody > tr")].filter((tr) => tr.getClientRects().length)
    .map((tr) => ({name: (tr.querySelector("td.name .label") || tr.children[0] || {}).innerText?.trim() ?? "",
                   path: tr.querySelector("td.name .label")?.title ?? "",
                   cls: tr.className, cells: [...tr.children].map((td) => td.innerText.trim()),
                   classes: [...tr.children].map((td) => td.className)}));
}"""


def table_rows(frame, selector: str) -> list[dict] | None:
    """Visible body rows of the first table matching selector: {name, path (a tree row's title),
    cls (the row's classes), cells (texts), classes (each cell's)} each."""
    return frame.evaluate(_ROWS_JS, selector)


def headers(frame, selector: str) -> list[str]:
    """Column labels of the first table matching selector (without the sort arrows)."""
    return frame.evaluate("""(s) => [...(document.querySelector(s)?.querySelectorAll('thead th') ?? [])].map((th) => {
      const b = th.querySelector('button.sort');
      return (b && b.firstChild ? b.firstChild.textContent : th.innerText).trim();
    })""", selector)


def column_keys(frame, selector: str) -> list[str]:
    """The server's column keys of a paged table, in display order ("" for a column without one)."""
    return frame.evaluate("""(s) => [...(document.querySelector(s)?.querySelectorAll('thead th') ?? [])]
      .map((th) => th.querySelector('button.sort')?.dataset.key ?? '')""", selector)


def num(text: str) -> float:
    """A number shown by the UI ("+1,234.5 ms", "−0.800", "×1.50") as a float."""
    t = text.replace("\u2212", "-").replace(",", "").replace("×", "").replace("+", "")
    m = re.search(r"-?\d+(?:\.\d+)?", t)
    if not m:
        raise ValueError(f"no number in {text!r}")
    return float(m.group(0))


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
