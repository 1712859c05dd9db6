"""The match editor's edits as changes of a user name map ({from: to}), pure: pair a baseline
name with a target name, split a pair.  Engines apply the user map before the built-in alias
table (:mod:`.name_map`), so mapping one side's name onto the other's key pairs them, and mapping
a name to a key that folds with nothing splits them.  Two identical names always share a key:
no name map can split them (:class:`CannotSplit` says so)."""
from __future__ import annotations

from .name_map import NameMapper

UNPAIRED = " (unpaired)"       # suffix of the key a split name is mapped to


class CannotSplit(ValueError):
    """The pair cannot be split by a name map (identical names)."""


def pair_entries(pairs: dict, b_name: str, t_name: str, cross_device: bool) -> dict:
    """``pairs`` changed so that ``b_name`` (baseline) and ``t_name`` (target) get one key: the
    baseline name is mapped onto the target name's user key (its alias group follows)."""
    out = dict(pairs)
    if b_name == t_name:
        return out
    if out.get(t_name, "").endswith(UNPAIRED):       # split earlier: pairing again undoes that
        del out[t_name]
    if NameMapper(out.items(), cross_device).folds(b_name, t_name):
        return out
    out[b_name] = out.get(t_name, t_name)
    if out[b_name] == b_name:
        del out[b_name]
    return out


def split_entries(pairs: dict, b_name: str, t_name: str, cross_device: bool) -> dict:
    """``pairs`` changed so that ``b_name`` and ``t_name`` no longer share a key: the user's own
    entries pairing them are dropped; if the alias table still folds them, the target name is
    mapped to ``"<name> (unpaired)"``.  CannotSplit for identical names."""
    if b_name == t_name:
        from .match_candidates import IDENTICAL
        raise CannotSplit(f"{b_name!r} has {IDENTICAL}")
    out = dict(pairs)
    if not NameMapper(out.items(), cross_device).folds(b_name, t_name):
        return out                          # not paired: nothing to do
    for n in (b_name, t_name):
        if n in out and not out[n].endswith(UNPAIRED):
            del out[n]
    mapper = NameMapper(out.items(), cross_device)
    if mapper.folds(b_name, t_name):
        out[t_name] = t_name + UNPAIRED
        mapper = NameMapper(out.items(), cross_device)
    if mapper.folds(b_name, t_name):        # another entry maps the baseline name onto it
        raise CannotSplit(f"{b_name!r} and {t_name!r} still share a key after the split")
    return out
