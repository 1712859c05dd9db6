"""Several ``tb-compare`` command lines in one Python process (test_malformed_cli).

Each job is one run of the CLI's own ``main`` (what ``python -m tb_compare_plugin.cli`` runs,
parser processes on), with file descriptors 1 and 2 pointed at the job's own files while it
runs, so the job's stdout / stderr hold exactly what that run printed, its parser processes'
output included, and an escaping exception prints its traceback there as Python would.  What a
job saves is a new interpreter and its imports per run.

Protocol: one JSON line per job on stdin, ``{"argv": [...], "stdout": PATH, "stderr": PATH}`` and
optionally ``"env": {NAME: value, or null to unset}`` for that run only; one JSON line per job on
stdout when it is over, ``{"rc": N}``.
"""
from __future__ import annotations

import json
import os
import sys
import traceback


def run_job(argv: list, out_path: str, err_path: str) -> int:
    from tb_compare_plugin import cli
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                rc = cli.main(argv)
            except SystemExit as e:             # as the interpreter ends on sys.exit(code)
                if e.code is None or isinstance(e.code, int):
                    rc = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    rc = 1
            except BaseException:               # noqa: BLE001 - what an uncaught exception prints
                traceback.print_exc()
                rc = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return int(rc)


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        env = job.get("env") or {}
        saved = {k: os.environ.get(k) for k in env}
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        try:
            rc = run_job(job["argv"], job["stdout"], job["stderr"])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        sys.stdout.write(json.dumps({"rc": rc}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
