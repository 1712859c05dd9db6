"""Saved operator name maps: the match editor's edits, kept as JSON files
``<export_dir>/name_maps/<name>.json`` holding ``{"from": "to", ...}`` — exactly what
``tb-compare --op-name-map FILE`` reads (read back through the same reader,
:func:`..name_map_input.parse_name_map`).  The folder sits beside the tab's export folder, never
inside the logdir.  Names are sanitised to a safe file name; writes are atomic (a temporary file
in the same folder, renamed into place), so a reader never sees half a map.

A bad name or a map that is not one is :class:`.errors.BadParameter` naming the request field.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading

from ..name_map_input import MAX_NAME_LEN, parse_name_map
from .errors import BadParameter

SUBDIR = "name_maps"
MAX_MAP_NAME = 80            # characters of a map's (sanitised) name
MAX_PAIRS = 2000             # entries of one saved map
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sanitise(name) -> str:
    """A map name as a safe file stem: letters, digits, ``.``, ``_``, ``-`` (other runs become
    ``_``), no leading dot, at most MAX_MAP_NAME characters; BadParameter('name') when nothing is left."""
    if not isinstance(name, str):
        raise BadParameter("name", "parameter 'name': a map's name must be a string")
    stem = _UNSAFE.sub("_", name.strip()).strip("._-")[:MAX_MAP_NAME].rstrip("._-")
    if not stem:
        raise BadParameter("name", f"parameter 'name': {name[:80]!r} leaves no usable file name "
                           "(use letters, digits, '.', '_' or '-')")
    return stem


def check_pairs(pairs, field: str = "pairs") -> dict[str, str]:
    """``pairs`` ({"from": "to"}) as a plain dict of strings; BadParameter(field) otherwise."""
    if not isinstance(pairs, dict):
        raise BadParameter(field, f"parameter {field!r} must be a JSON object {{\"from\": \"to\", ...}}")
    if len(pairs) > MAX_PAIRS:
        raise BadParameter(field, f"parameter {field!r}: at most {MAX_PAIRS} entries in a map")
    out = {}
    for k, v in pairs.items():
        if not isinstance(k, str) or not isinstance(v, str) or not k or not v:
            raise BadParameter(field, f"parameter {field!r}: names must be non-empty strings, got {str(k)[:80]!r}: {str(v)[:80]!r}")
        if len(k) > MAX_NAME_LEN or len(v) > MAX_NAME_LEN:
            raise BadParameter(field, f"parameter {field!r}: names are limited to {MAX_NAME_LEN} characters")
        if k != v:                          # an identity entry changes nothing
            out[k] = v
    return out


class NameMaps:
    """The saved maps in ``folder`` (``<export_dir>/name_maps``), made on first save."""

    def __init__(self, export_dir: str) -> None:
        self.folder = os.path.join(export_dir, SUBDIR)
        self._lock = threading.Lock()

    def path(self, name: str) -> str:
        return os.path.join(self.folder, sanitise(name) + ".json")

    def names(self) -> list[str]:
        try:
            files = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(f[:-5] for f in files if f.endswith(".json") and not f.startswith(".")
                      and sanitise(f[:-5]) == f[:-5])

    def list(self) -> list[dict]:
        """Every saved map: name, path, entries ({from: to}), count, modified (epoch s).  A file
        that cannot be read is listed with its ``error`` instead of entries."""
        out = []
        for name in self.names():
            p = self.path(name)
            item = {"name": name, "path": p}
            try:
                item["modified"] = os.path.getmtime(p)
                pairs = dict(parse_name_map(p))
                item.update(pairs=pairs, count=len(pairs))
            except (OSError, ValueError) as e:
                item.update(pairs={}, count=0, error=f"cannot read {p}: {e}")
            out.append(item)
        return out

    def load(self, name: str, field: str = "name_map") -> tuple[tuple[str, str], ...]:
        """The saved map ``name`` as Options.op_name_map ((from, to), ...); BadParameter(field)
        naming the saved maps when there is none of that name."""
        stem = sanitise(name) if isinstance(name, str) and name.strip() else ""
        p = os.path.join(self.folder, stem + ".json") if stem else ""
        if not stem or stem != name or not os.path.isfile(p):
            from .params import choices_text
            names = self.names()
            raise BadParameter(field, f"parameter {field!r}: no saved name map {str(name)[:80]!r} in "
                               f"{self.folder} (saved maps: {choices_text(names)})", names)
        try:
            return parse_name_map(p)
        except (OSError, ValueError) as e:
            raise BadParameter(field, f"parameter {field!r}: the saved map {p} cannot be read: {e}")

    def save(self, name: str, pairs) -> dict:
        """Write ``pairs`` as ``<name>.json`` atomically (replacing a map of that name)."""
        stem = sanitise(name)
        entries = check_pairs(pairs)
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, stem + ".json")
        text = json.dumps(entries, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        return {"name": stem, "path": path, "pairs": entries, "count": len(entries)}

    def remove(self, name: str) -> dict:
        """Delete the saved map ``name``; BadParameter('name') when there is none."""
        self.load(name, "name")               # exists and is one of ours
        path = self.path(name)
        with self._lock:
            os.unlink(path)
        return {"removed": sanitise(name), "path": path}
