"""Start a real `tensorboard` process on 127.0.0.1 (port 0) for tests, and stop it."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

_URL_RE = re.compile(r"(http://127\.0\.0\.1:\d+\S*)")


def tensorboard_exe() -> list[str]:
    exe = Path(sys.executable).with_name("tensorboard")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("tensorboard")
    if found:
        return [found]
    return [sys.executable, "-m", "tensorboard.main"]


class TensorBoard:
    def __init__(self, logdir, *extra: str, env: dict | None = None, timeout: float = 60,
                 cwd=None) -> None:
        """``cwd``: where the process starts (default: this one's); a folder outside the source
        tree makes sure the plugin is found as installed, not through files lying in the tree."""
        self.lines: list[str] = []
        cmd = tensorboard_exe() + ["--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", *extra]
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
                                     cwd=cwd)
        self.url = None
        found = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.lines.append(line)
                m = _URL_RE.search(line)
                if m and not self.url:
                    self.url = m.group(1).rstrip("/")
                    found.set()
        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(timeout):
            self.stop()
            raise RuntimeError("tensorboard did not start:\n" + "".join(self.lines[-40:]))

    def get(self, path: str, timeout: float = 60):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.status, r.read()

    def post_json(self, path: str, body: dict, timeout: float = 120):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def get_json(self, path: str, timeout: float = 60):
        status, body = self.get(path, timeout)
        return json.loads(body)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def wait_for(fn, timeout: float = 60, interval: float = 0.3, sleep=time.sleep):
    """Poll fn() until it returns a truthy value; return it (or raise TimeoutError).
    ``sleep(seconds)`` waits between polls (the browser tests let the page run meanwhile)."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        sleep(interval)
    raise TimeoutError(f"condition not met in {timeout}s (last: {last!r})")
