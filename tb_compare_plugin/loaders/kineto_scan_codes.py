"""The field and status codes of the fast Kineto scanner, shared by :mod:`.kineto_scan` (the Python
side) and :mod:`._kineto_scan_jit` (the numba body), which both import them from here."""

# top-level fields
TOP_KEYS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args")
# numeric fields: index into the numeric columns
NUM_KEYS = ("pid", "tid", "ts", "dur", "id",
            "External id", "external id", "correlation", "stream", "device", "bytes", "Sequence number",
            "Python id", "Python parent id", "Device Id", "Bytes", "Addr", "Total Allocated",
            "Total Reserved", "In msg nelems", "registers per thread", "shared memory", "blocks per SM",
            "est. achieved occupancy %")
N_PID, N_TID, N_TS, N_DUR, N_ID = range(5)
NUM = {k: i for i, k in enumerate(NUM_KEYS)}
# text (string or null) and raw JSON fields
STR_KEYS = ("ph", "cat", "name", "Call stack", "Process Group Name", "Process Group Ranks", "dtype",
            "Collective name")
RAW_KEYS = ("Input Dims", "Input type", "grid", "block")
SPAN_KEYS = STR_KEYS + RAW_KEYS
SPAN = {k: i for i, k in enumerate(SPAN_KEYS)}
N_RAW0 = len(STR_KEYS)
ARG_KEYS = NUM_KEYS[5:] + STR_KEYS[3:] + RAW_KEYS

# kinds
K_ABSENT, K_NULL, K_INT, K_FLOAT, K_STR, K_OTHER, K_HARD = range(7)
NO_NS = -2 ** 63                  # a number whose exact ns the scanner could not give
# statuses
OK, BAD_JSON, MISMATCH, TOO_DEEP, TOO_MANY, ESC_KEY = range(6)
PAUSE = 6                         # (not an end: the scan stopped after the events asked for)
STATUS_TEXT = {BAD_JSON: "JSON the fast scanner does not accept", MISMATCH: "fields of an unexpected type",
               TOO_DEEP: "values nested deeper than 64", TOO_MANY: "more events than the scanner expects",
               ESC_KEY: "escaped keys"}
