"""The user's ``--op-name-map`` as engines take it: read from a JSON or YAML file, or an inline
dict (``"{'aten::a': 'aten::b'}"``, parsed with ``json``/``ast.literal_eval``, never ``eval``),
into ((from, to), ...).  The CLI and the routes call this; engines read no file."""
from __future__ import annotations

import ast
import json
import os
from typing import Iterable, Mapping

MAX_NAME_LEN = 200          # the reference's limit per key and value


def _check_pairs(items: Iterable, origin: str) -> tuple[tuple[str, str], ...]:
    out = []
    for k, v in items:
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"op name map {origin}: keys and values must be strings, got {k!r}: {v!r}")
        if len(k) > MAX_NAME_LEN or len(v) > MAX_NAME_LEN:
            raise ValueError(f"op name map {origin}: names are limited to {MAX_NAME_LEN} characters")
        out.append((k, v))
    return tuple(out)


def _parse_yaml(text: str, origin: str) -> dict:
    try:
        import yaml  # optional dependency
    except ImportError:
        yaml = None
    if yaml is not None:
        return yaml.safe_load(text) or {}
    out = {}
    for line in text.splitlines():  # minimal "key: value" form
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" not in line:
            raise ValueError(f"op name map {origin}: cannot read line {line!r} (expected 'from: to')")
        k, v = line.rsplit(": ", 1) if ": " in line else line.rsplit(":", 1)
        out[k.strip().strip("'\"")] = v.strip().strip("'\"")
    return out


def _parse_text(text: str, origin: str) -> dict:
    text = text.strip()
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    return _parse_yaml(text, origin)


def parse_name_map(spec) -> tuple[tuple[str, str], ...]:
    """The user's name map as ((from, to), ...).

    ``spec``: None/"" (no map), a mapping, a sequence of pairs, a path to a JSON/YAML file, or an
    inline dict literal.  Raises ValueError with a plain-words message on anything else.
    """
    if spec is None or spec == "" or spec == ():
        return ()
    if isinstance(spec, Mapping):
        return _check_pairs(spec.items(), "argument")
    if isinstance(spec, (list, tuple)):
        return _check_pairs(spec, "argument")
    if not isinstance(spec, str):
        raise ValueError(f"op name map: expected a dict, a file path or a dict literal, got {type(spec).__name__}")
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as fh:
            text = fh.read()
        origin = f"file {spec}"
        data = (_parse_yaml(text, origin) if spec.lower().endswith((".yaml", ".yml"))
                else _parse_text(text, origin))
    else:
        origin = "argument"
        data = _parse_text(spec, origin)
    if not isinstance(data, Mapping):
        raise ValueError(f"op name map {origin}: expected a mapping of operator names, got {type(data).__name__}")
    return _check_pairs(data.items(), origin)
