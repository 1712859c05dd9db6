"""Imported last by the parser processes' fork server (``parsepool._preload``): what the preload
made is moved to the collector's permanent generation (``gc.freeze``), then the collector is on
again.  Every parser process forked from here starts with it on, and its collections never walk
the preloaded modules (nor touch, and so copy, their pages)."""
from __future__ import annotations

import gc

from ..timing import mark

gc.freeze()
gc.enable()
mark("fork server: preload done")
