"""The ``ascend-text`` format: the text export (``trace_view.json`` + CSVs in ASCEND_PROFILER_OUTPUT) of a
PyTorch run on Ascend NPUs.  Recognised and parsed as the rest of the Ascend family
(``ascend_family``), with framework PyTorch."""
from .ascend_family import AscendFormat

DESCRIPTOR = AscendFormat("text", "PyTorch")
