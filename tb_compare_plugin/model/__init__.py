"""The columnar profile model: symbol table, table schemas, time and interval helpers."""
from .symbols import SymbolTable
from .profile import (Profile, ProfileMeta, SCHEMAS, make_table, empty_table,
                      KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, KIND_COMM, KIND_OTHER, OVERLAP_KINDS)

__all__ = ["SymbolTable", "Profile", "ProfileMeta", "SCHEMAS", "make_table", "empty_table",
           "KIND_COMPUTE", "KIND_MEMCPY", "KIND_MEMSET", "KIND_COMM", "KIND_OTHER", "OVERLAP_KINDS"]
