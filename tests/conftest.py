"""Shared fixtures: where the real corpus and golden data live, and skips when absent; plugins
made by tests are stopped when the test (or module) that made them is done."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TB_COMPARE_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
GOLDEN = SHARED / "spec" / "golden"
SAMPLES = ROOT / "samples"

# every test run gets its own parsed-profile cache, outside the repo and the user's cache
if "TB_COMPARE_CACHE_DIR" not in os.environ:
    import tempfile
    os.environ["TB_COMPARE_CACHE_DIR"] = tempfile.mkdtemp(prefix="tbc-test-cache-")

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"real profiler corpus not found at {CORPUS} (it ships beside the repo as ../shared; "
           "a fresh clone has none)")
needs_golden = pytest.mark.skipif(
    not GOLDEN.is_dir(), reason=f"reference golden data not found at {GOLDEN}")
needs_samples = pytest.mark.skipif(not (SAMPLES / "expected.json").is_file(), reason="samples/ is missing")


def deviations_block(name: str) -> dict:
    """The machine-readable block ``<!-- NAME-deviations: begin -->`` of docs/deviations.md (a
    JSON code block), read by the golden tests so that prose and test name the same figures."""
    import json
    import re
    text = (ROOT / "docs" / "deviations.md").read_text()
    m = re.search(rf"<!-- {name}-deviations: begin -->\s*```json\n(.*?)```\s*<!-- {name}-deviations: end -->",
                  text, re.S)
    assert m, f"docs/deviations.md: the machine-readable {name}-deviations block is missing"
    return json.loads(m.group(1))


class _Chromium:
    """The one headless Chromium of a run of consecutive tests asking for ``browser`` (the browser
    test modules follow one another): launched by the first, closed right after the last of the
    run (``pytest_runtest_teardown``), so that one launch serves several modules.  Not kept for
    the whole session: a live sync Playwright marks an asyncio loop as running in this thread,
    which other tests (``asyncio.run``, Dask) must not see."""
    playwright = None
    chromium = None

    @classmethod
    def get(cls):
        if cls.chromium is None:
            from browser_util import start_chromium
            cls.playwright, cls.chromium = start_chromium()
        return cls.chromium

    @classmethod
    def close(cls) -> None:
        if cls.playwright is not None:
            playwright, chromium, cls.playwright, cls.chromium = cls.playwright, cls.chromium, None, None
            try:
                chromium.close()
            finally:
                playwright.stop()


class _ModuleBrowser:
    """The shared Chromium as one test module sees it: the module's pages are opened in one
    browser context of its own (``new_page(viewport=..., color_scheme=...)`` gives a page of that
    size and theme, as ``Browser.new_page`` does), which is closed when the module ends (nothing of
    one module runs on in the next).  One context rather than one per page: Chromium keeps
    TensorBoard's 6 MB ``index.js`` (served ``Cache-Control: private, max-age=86400``) and its
    compiled code for the module's later pages (test_browser.py alone, CPU of every process:
    60.4 -> 55.8 s, test_browser_issue14.py 48.3 -> 44.5 s, two interleaved pairs each); the pages
    share nothing else the tests read (the plugin keeps no cookies or storage)."""

    def __init__(self, chromium) -> None:
        self._chromium = chromium
        self._context = None

    def new_page(self, viewport: dict | None = None, color_scheme: str | None = None):
        if self._context is None:
            self._context = self._chromium.new_context()
        page = self._context.new_page()
        if viewport is not None:
            page.set_viewport_size(viewport)
        page.emulate_media(color_scheme=color_scheme or "light")
        return page

    def close_pages(self) -> None:
        if self._context is not None:
            context, self._context = self._context, None
            context.close()

    def __getattr__(self, name):
        return getattr(self._chromium, name)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a test module (skipped without Playwright): one launch shared with
    the modules that follow it, each module's pages closed when it ends."""
    b = _ModuleBrowser(_Chromium.get())
    yield b
    b.close_pages()


def _close_chromium_after(item, nextitem) -> None:
    if _Chromium.chromium is not None and (nextitem is None or "browser" not in nextitem.fixturenames):
        _Chromium.close()


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"real profiler corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def golden() -> Path:
    if not GOLDEN.is_dir():
        pytest.skip(f"reference golden data not found at {GOLDEN}")
    return GOLDEN

# ------------------------------------------------------------------------- plugins made by tests
_LIVE_PLUGINS: list = []            # in creation order; stopped by the fixtures below


def track_plugin(plugin):
    """Register a plugin a test made, so it is stopped when that test (or the module fixture
    that made it) ends.  Returns the plugin."""
    _LIVE_PLUGINS.append(plugin)
    return plugin


def stop_plugin(plugin) -> None:
    """Stop a plugin's scanner thread, the service's pools and its parser processes."""
    plugin.close()


def _stop_made_since(n: int) -> None:
    while len(_LIVE_PLUGINS) > n:
        stop_plugin(_LIVE_PLUGINS.pop())


@pytest.fixture(scope="module", autouse=True)
def _stop_module_plugins():
    n = len(_LIVE_PLUGINS)
    yield
    _stop_made_since(n)


@pytest.fixture(autouse=True)
def _stop_test_plugins():
    n = len(_LIVE_PLUGINS)
    yield
    _stop_made_since(n)


def _tbc_environment() -> dict:
    return {k: v for k, v in os.environ.items() if k.startswith("TB_COMPARE_")}


@pytest.fixture(autouse=True)
def _same_tb_compare_environment():
    """Each test leaves the ``TB_COMPARE_*`` environment as it found it: a test that runs the
    CLI's ``main`` in this process (``--no-cache`` sets ``TB_COMPARE_CACHE=0`` for the rest of a
    real run) must not change what later tests, and the CLI processes they start, see -- which
    tests run after which depends on how the suite is run."""
    before = _tbc_environment()
    yield
    if _tbc_environment() != before:
        for k in _tbc_environment():
            if k not in before:
                del os.environ[k]
        os.environ.update(before)


# property tests draw the same examples on every run (a CI run must not depend on luck)
try:
    from hypothesis import settings as _hyp_settings
    _hyp_settings.register_profile("repeatable", derandomize=True, print_blob=True)
    _hyp_settings.load_profile("repeatable")
except ImportError:  # pragma: no cover
    pass


def kill_children_while(busy) -> int:
    """SIGKILL every parser process of this test process (as the OOM killer would) until
    ``busy()`` is false; returns how many were killed."""
    import multiprocessing
    import signal
    import time
    killed = set()
    while busy():
        for p in multiprocessing.active_children():
            if p.pid not in killed:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                    killed.add(p.pid)
                except OSError:
                    pass
        time.sleep(0.005)
    return len(killed)


# ------------------------------------------------------------------------- cluster runs and Dask

# The 8-rank cluster bench/gen_cluster.py builds from the corpus's 2-rank Ascend run, with a
# planted slow rank (5, +25 ms) and slow link (2 -> 3, 0.8 of the bandwidth cut).
GEN8 = {"ranks": 8, "steps": 2, "seed": 7, "slow_rank": 5, "slow_rank_extra_ms": 25.0, "slow_link": (2, 3),
        "bandwidth_cut": 0.8}


@pytest.fixture(scope="session")
def gen8_run(tmp_path_factory) -> Path:
    """The generated 8-rank run (folder ``gen8``), built once for every module that reads it;
    tests that change a rank work on a copy."""
    import sys
    sys.path.insert(0, str(ROOT))
    from bench import gen_cluster
    if not gen_cluster.DEFAULT_SOURCE.is_dir():
        pytest.skip(f"corpus run missing: {gen_cluster.DEFAULT_SOURCE}")
    dest = tmp_path_factory.mktemp("clusters") / "gen8"
    gen_cluster.generate(gen_cluster.Plan(**GEN8), dest)
    return dest


class _Dask:
    """The one ``distributed.LocalCluster`` of the tests asking for ``dask_scheduler``: started by
    the first of them, closed right after the last (``pytest_runtest_teardown``), not at the
    session's end, so that its worker processes (children of this process) are gone before
    tests that kill or count this process's children."""
    cluster = None

    @classmethod
    def close(cls) -> None:
        if cls.cluster is not None:
            cluster, cls.cluster = cls.cluster, None
            try:
                cluster.close()
            except Exception:  # noqa: BLE001 - one already gone
                pass


def _accepts(address: str) -> bool:
    """Whether the scheduler at ``address`` (tcp://HOST:PORT) takes a connection now."""
    import socket
    from urllib.parse import urlparse
    u = urlparse(address)
    try:
        with socket.create_connection((u.hostname, u.port), timeout=5):
            return True
    except OSError:
        return False


@pytest.fixture
def dask_scheduler():
    """Address of a LocalCluster (2 worker processes, one thread each), shared by the tests that
    ask for it: started by the first, closed after the last (``_close_dask_after``).  Looked up per
    test, not cached for the session: a cluster found closed or not taking connections is started
    again rather than handed out (a full run once gave a test a scheduler that never answered)."""
    distributed = pytest.importorskip("distributed")
    if _Dask.cluster is not None and not _accepts(_Dask.cluster.scheduler_address):
        _Dask.close()
    if _Dask.cluster is None:
        _Dask.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                 dashboard_address=None)
    return _Dask.cluster.scheduler_address


def pytest_sessionstart(session):
    """In each pytest-xdist worker (scripts/test.sh runs two), before its tests: numba's JIT cache
    is filled by tests/jit_prewarm.py, each compiled part made by one of the workers (a clean
    clone compiles them all, ~110 s of CPU; without this every worker and CLI / TensorBoard
    process meeting a part first compiled it too, side by side).  ``TB_COMPARE_TEST_PREWARM=0``
    leaves the compiles to the tests.

    In the xdist controller (``-n``): the workers' rewritten test modules are written once
    (tests/rewrite_cache.py), while the workers start."""
    if not hasattr(session.config, "workerinput"):
        if getattr(session.config.option, "numprocesses", None):
            from rewrite_cache import write_for_workers
            write_for_workers(session.config, ROOT / "tests")
        return
    if os.environ.get("TB_COMPARE_TEST_PREWARM") == "0":
        return
    import hashlib
    import subprocess
    import sys
    import tempfile
    key = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]
    prefix = os.path.join(tempfile.gettempdir(), f"tbc-jit-prewarm-{key}-")
    subprocess.run([sys.executable, str(ROOT / "tests" / "jit_prewarm.py"), prefix], cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900, check=False)


def pytest_collection_modifyitems(session, config, items):
    """In a pytest-xdist worker: the test files in the order of their time, longest first
    (``tests/file_seconds.json``: seconds per file, summed from a run's ``--junitxml``; a file not
    listed counts 20 s).  scripts/test.sh runs ``--dist loadfile --no-loadscope-reorder``, so the
    workers are handed whole files in this order: the long ones start first and the short ones
    fill the end, where xdist's own order (most tests first) left files of 1-4 slow tests (the
    browser ones) to the end, one worker busy with them while the other had nothing left.

    The files whose tests take the ``browser`` fixture are one block, at the place of the longest
    of them: a worker takes its next file from the front of that order, so the browser files it
    runs follow one another and share one Chromium launch (~1.7 s of CPU a launch; when they were
    spread among the other files, each of the eight launched its own)."""
    if not hasattr(config, "workerinput"):
        return
    import json
    seconds = json.loads((ROOT / "tests" / "file_seconds.json").read_text())
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.path.name, i)
    browser_files = {item.path.name for item in items if "browser" in item.fixturenames}
    block = max((seconds.get(name, 20) for name in browser_files), default=0)

    def key(item):
        name = item.path.name
        own = seconds.get(name, 20)
        if name in browser_files:
            return (-block, 0, -own, first[name])
        return (-own, 1, 0, first[name])
    items.sort(key=key)


def pytest_sessionfinish(session, exitstatus):
    _Dask.close()


def _close_dask_after(item) -> None:
    if _Dask.cluster is not None:
        items = item.session.items
        rest = items[items.index(item) + 1:] if item in items else []
        if not any("dask_scheduler" in getattr(i, "fixturenames", ()) for i in rest):
            _Dask.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After an item's fixtures are finalized (a module's pages closed): the shared Chromium and
    the Dask cluster are closed once no test to come (the next one, for Chromium) needs them."""
    yield
    _close_dask_after(item)
    _close_chromium_after(item, nextitem)
