"""Paths as the tab shows them: relative to the logdir.

The server knows workers by absolute paths, and loaders name files that way in their errors and
warnings; the tab's user knows the logdir.  :class:`RelativePaths` rewrites every string of a
route's answer (errors, warnings, notes, file lists) so a path under the logdir reads relative to
it (``run/worker0.pt.trace.json: ...``) and the logdir itself reads ``.``.  The plugin applies it
once, where it presents answers and errors; the CLI keeps the paths it was given.
"""
from __future__ import annotations

import os
import re


class RelativePaths:
    def __init__(self, logdir: str) -> None:
        roots = set()
        if logdir:
            for r in (os.path.abspath(logdir), os.path.realpath(logdir)):
                r = r.rstrip(os.sep)
                if r:
                    roots.add(r)
        self.roots = sorted(roots, key=len, reverse=True)
        alts = "|".join(re.escape(r) for r in self.roots)
        # a root followed by a separator (then the relative rest), or standing alone
        self._re = re.compile(rf"(?:{alts})(?:{re.escape(os.sep)}+|(?![\w.\-]))") if self.roots else None

    def text(self, s: str) -> str:
        if self._re is None or not any(r in s for r in self.roots):
            return s
        return self._re.sub(lambda m: "" if m.group(0)[-1:] == os.sep else ".", s)

    def obj(self, o):
        """``o`` (JSON-like: dicts, lists, strings, numbers) with every string rewritten."""
        if self._re is None:
            return o
        if isinstance(o, str):
            return self.text(o)
        if isinstance(o, dict):
            return {k: self.obj(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [self.obj(v) for v in o]
        return o
