"""The ``mindspore-db`` format: a profiler SQLite database (``*.db`` in ASCEND_PROFILER_OUTPUT) of a
MindSpore run on Ascend NPUs.  Recognised and parsed as the rest of the Ascend family
(``ascend_family``), with framework MindSpore."""
from .ascend_family import AscendFormat

DESCRIPTOR = AscendFormat("db", "MindSpore")
