"""What a format descriptor is: everything the rest of tb-compare needs to know about one
input format, in one object.

A descriptor answers four questions and nothing else:

* ``recognise(path, run=None)`` -> :class:`WorkerSpec` or None: is this file or folder a worker
  of this format?  Cheap (stat, a bounded header read), never a parse.  ``run`` is the run name
  when discovery walks a logdir; None when a user named the path (the CLI), and then the
  descriptor also accepts entry points inside a worker (a ``trace_view.json``, a ``.db``) and
  picks the run name itself.  Descriptors of one family may share one recogniser function
  (the four Ascend/MindSpore formats do): the registry calls a shared function once.
* ``peek(path)`` -> dict of header facts (``rank``, ``steps``, ``has``, ``error``) without a parse.
* ``load(root, progress, options)`` -> :class:`Profile`, by calling the parsing machinery in
  ``loaders/``; ``options`` is a mapping of load options, passed to the loader when it takes them
  by keyword (none of the built-in loaders takes one today).
  The descriptor then records on ``profile.meta`` the facts engines ask (``finish``).
* ``capabilities``: what a profile of this format can hold (kernels, steps, memory, modules,
  communication, links, pmu, overlap, ...), for analyses and views to ask before they run.

``facts`` are ProfileMeta fields describing how the source wrote its data (e.g. that device task
types come from a profiler database); engines read these instead of the format id.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

Progress = Optional[Callable[[float], None]]

# Everything a format may declare it can hold (keep in step with docs/formats section of README).
CAPABILITIES = frozenset({
    "kernels",          # device activity (kernels / device tasks)
    "steps",            # step markers
    "memory",           # allocations and/or memory records
    "modules",          # nn.Module python_function events
    "communication",    # collective ops (and their tasks)
    "links",            # host -> device launch links (flows / correlation ids)
    "pmu",              # per-kernel PMU counters (Cube/Vector split)
    "overlap",          # the profiler's own Overlap Analysis intervals
    "call_stacks",      # host op call stacks
})


class FormatDescriptor:
    """One input format.  Subclass (or instantiate with functions) and list it in ``registry``."""

    id: str = ""
    device: str = "GPU"                   # best guess before parsing
    framework: str = "PyTorch"
    capabilities: frozenset = frozenset()
    facts: Mapping = {}                   # ProfileMeta field -> value, set on every loaded profile
    modules: tuple = ()                   # modules parser processes import ahead (its loader)
    hint: str = ""                        # what a user names for it, for error messages

    def recognise(self, path: str, run: str | None = None):
        """The :class:`~tb_compare_plugin.discovery.spec.WorkerSpec` for ``path``, or None."""
        return None

    def fallback(self, path: str):
        """For a path the user named that no format recognised: this format's spec for it (which
        may carry the error saying why it cannot be read), or None.  Asked after every
        ``recognise``, so a format that claims broadly (any ``.json``) leaves room for others."""
        return None

    def peek(self, path: str) -> dict:
        return {}

    def parse(self, root: str, progress: Progress = None, options: Mapping | None = None):
        """Parse ``root`` into a Profile (the format's loader).  Override this, not ``load``."""
        raise NotImplementedError

    def load(self, root: str, progress: Progress = None, options: Mapping | None = None):
        """Parse ``root`` and record this format's facts on the profile."""
        return self.finish(self.parse(root, progress, options))

    def finish(self, profile):
        """Record the format's facts and capabilities on ``profile.meta`` (idempotent: also
        applied to profiles read back from the cache, which may predate a fact)."""
        meta = profile.meta
        for name, value in self.facts.items():
            setattr(meta, name, value)
        meta.capabilities = sorted(self.capabilities)
        return profile

    def __repr__(self) -> str:
        return f"<format {self.id}>"
