"""service/sharejobs.py: the parser process done first takes the other side's remaining side jobs
from the end of their list, claiming each one with a file of its own, while that side's own
process works from the front (issue 19, "the idle core").  Real processes, real claim files, a
real hand-off folder: each job runs exactly once, whatever the interleaving; the values a helper
computes are the ones the side's own process would have; a job that fails in a helper is left
out for the receiver to compute (and fail) itself; and through the real CLI the outputs are
those of a run without sharing (``TB_COMPARE_SHARE_JOBS=0``), with the cache off and on."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tb_compare_plugin.engines import side_work
from tb_compare_plugin.loaders import load
from tb_compare_plugin.service import sharejobs
from tb_compare_plugin.service.handoff import handoff_cache

from conftest import ROOT, SAMPLES
from repeated_traces import repeated_traces

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
JOBS = (("tree", ()), ("breakdown", (None, False)), ("steps", ()), ("api", (None,)), ("kernels", (None,)))
TAKEN = [i for i, (name, _) in enumerate(JOBS) if name in sharejobs.TAKEN]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork server, /dev/shm")

# A helper process: for each folder given, help the share of the "other side" handed off there;
# writes {folder: pickled values} to OUT once done.  With GO: helps in WARM first (its imports and
# first calls done), then waits for GO.
HELPER = """
import os, pickle, sys, time
from tb_compare_plugin.service import sharejobs
out, go, warm, folders = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if warm != "-":
    sharejobs.help_others(sharejobs.share_name(warm, "tmpHELPER", 0), warm)
open(out + ".ready", "w").close()
while go != "-" and not os.path.exists(go):
    time.sleep(0.001)
got = {f: sharejobs.help_others(sharejobs.share_name(f, "tmpHELPER", 0), f) for f in folders}
with open(out, "wb") as fh:
    fh.write(pickle.dumps(got))
"""
# The side's own process: for each folder, its jobs in list order, each claimed first, with a
# pause of its own after each job it runs (its "work"); writes {folder: [indices it ran]}.
OWNER = """
import json, os, sys, time
from tb_compare_plugin.service import sharejobs
out, go, pause, folders = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
jobs = tuple(tuple(j) for j in json.loads(os.environ["JOBS"]))
open(out + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
ran = {}
for k, f in enumerate(folders):
    share = sharejobs.share_name(f, "tmpOWNER", 0)
    ran[f] = []
    for i in range(len(jobs)):
        if sharejobs.child_takes(share, jobs, i):
            ran[f].append(i)
            time.sleep(pause * ((k + i) % 4))
with open(out, "w") as fh:
    json.dump(ran, fh)
"""


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT), "JOBS": json.dumps(JOBS)}


def handed_off_sample(folder: Path, jobs=JOBS):
    """The sample profile in a hand-off folder, its owner's share said to be complete."""
    folder.mkdir(parents=True, exist_ok=True)
    ppath = str(folder / "tmpOWNER")
    prof = load("trace-json", str(GPU))
    assert handoff_cache(str(folder)).put(("handoff", ppath), prof)
    share = sharejobs.share_name(str(folder), ppath, 0)
    sharejobs.handed_off(share, jobs, "handoff", None, None, ("handoff", ppath))
    return prof, share


def answers(values) -> str:
    """The overview, steps, API and kernel tables of a comparison seeded with ``values``."""
    from tb_compare_plugin.comparison import Comparison
    from tb_compare_plugin.presenters.json_encode import encode
    from tb_compare_plugin.service import compare as service
    prof = load("trace-json", str(GPU))
    side_work.seed(prof, pickle.loads(pickle.dumps(values)))
    from tb_compare_plugin.model.derived import DERIVED
    assert set(DERIVED.built(prof)) >= set(values)
    cmp = Comparison(prof, prof)
    return encode({"overview": service.overview(cmp), "steps": service.steps(cmp),
                   "api": cmp.api().to_dict("records"), "kernels": cmp.kernels().to_dict("records")})


def run_helper(tmp_path, folders, go="-", warm="-"):
    out = tmp_path / "helper.out"
    return out, subprocess.Popen([sys.executable, "-c", HELPER, str(out), go, str(warm), *map(str, folders)],
                                 env=_env())


def test_a_helper_takes_the_jobs_from_the_end_and_the_owner_skips_them(tmp_path):
    prof, share = handed_off_sample(tmp_path / "f")
    out, proc = run_helper(tmp_path, [tmp_path / "f"])
    assert proc.wait(120) == 0
    got = pickle.loads(out.read_bytes())[str(tmp_path / "f")]
    lent = got[(sharejobs.LENT, share)]
    # every small job, from the end, up to the op tree (never taken: it is sent as files)
    assert set(lent) == {side_work.key(*JOBS[i]) for i in TAKEN}
    assert sharejobs.helpers_of(share) == [sharejobs.share_name(str(tmp_path / "f"), "tmpHELPER", 0)]
    assert [sharejobs.child_takes(share, JOBS, i) for i in range(len(JOBS))] == [True] + [False] * len(TAKEN)
    # the values are the ones the side's own process computes on its copy: the same answers
    assert answers(lent) == answers(side_work.compute(load("trace-json", str(GPU)), JOBS[1:]))
    own, split = sharejobs.lent_values({"x": 1, (sharejobs.LENT, share): lent})
    assert own == {"x": 1} and split == {share: lent}
    sharejobs.remove(share)
    assert not [p for p in os.listdir(tmp_path / "f") if p.startswith(os.path.basename(share) + ".")]


def test_nothing_is_taken_once_the_owner_has_the_last_job(tmp_path):
    _, share = handed_off_sample(tmp_path / "f")
    assert sharejobs.child_takes(share, JOBS, len(JOBS) - 1)         # the owner got there first
    out, proc = run_helper(tmp_path, [tmp_path / "f"])
    assert proc.wait(120) == 0
    assert pickle.loads(out.read_bytes())[str(tmp_path / "f")] == {}
    assert sharejobs.helpers_of(share) == []                          # not even announced


def test_a_job_is_taken_only_if_the_helper_would_end_it_sooner(tmp_path):
    """The helper's own durations of the same jobs (``child_takes`` / ``ran`` in its own
    process) against the other side's progress (its claim file's time): the job right after
    the one the side's own process has just started is taken; once that one is nearly done, not."""
    jobs = (("steps", ()), ("api", (None,)))
    mine = sharejobs.share_name(str(tmp_path), "tmpMINE", 0)
    for job, seconds in zip(jobs, (0.4, 0.05)):            # this process ran them: 0.4 s and 0.05 s
        assert sharejobs.child_takes(mine, jobs, jobs.index(job))
        time.sleep(seconds)
        sharejobs.ran(job)
    other = sharejobs.share_name(str(tmp_path), "tmpOTHER", 0)
    assert sharejobs._worth_taking(other, jobs, 1, True)           # the other has not started steps
    assert sharejobs.child_takes(other, jobs, 0)                   # now it has
    assert sharejobs._worth_taking(other, jobs, 1, True)           # ~0.45 s left there, 0.065 here
    time.sleep(0.4)
    assert not sharejobs._worth_taking(other, jobs, 1, True)       # its steps are about done
    sharejobs._OWN.clear()


def test_each_job_runs_exactly_once_when_owner_and_helper_race(tmp_path):
    """Owner and helper (warmed up first) start together on 12 hand-offs; the owner pauses
    0-15 ms after its jobs (a different rhythm on each), so they meet at different places."""
    folders = [tmp_path / f"f{k}" for k in range(12)]
    shares = [handed_off_sample(f)[1] for f in folders]
    handed_off_sample(tmp_path / "warm")
    go = tmp_path / "go"
    owner_out = tmp_path / "owner.out"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(owner_out), str(go), "0.005",
                              *map(str, folders)], env=_env())
    helper_out, helper = run_helper(tmp_path, folders, str(go), tmp_path / "warm")
    while not (Path(str(owner_out) + ".ready").exists() and Path(str(helper_out) + ".ready").exists()):
        assert owner.poll() is None and helper.poll() is None
    go.touch()
    assert owner.wait(120) == 0 and helper.wait(120) == 0
    ran = json.loads(owner_out.read_text())
    lent = pickle.loads(helper_out.read_bytes())
    taken_by_helper = 0
    for f, share in zip(folders, shares):
        mine = set(ran[str(f)])
        theirs = {i for i in TAKEN if side_work.key(*JOBS[i]) in lent[str(f)].get((sharejobs.LENT, share), {})}
        assert mine.isdisjoint(theirs), (f, mine, theirs)
        assert mine | theirs == set(range(len(JOBS))), (f, mine, theirs)
        assert 0 in mine                                            # the tree: always the owner's
        # what the helper holds it took from the end: a run of the last jobs
        assert theirs == set(range(len(JOBS) - len(theirs), len(JOBS)))
        taken_by_helper += len(theirs)
    print(f"the helper took {taken_by_helper} of {len(folders) * len(TAKEN)} jobs")


def test_a_job_that_fails_in_the_helper_is_left_for_the_receiver(tmp_path):
    """No such step: the helper claims the job, fails it and leaves it out; the owner skips it;
    the receiver computes it and meets the same error as without sharing."""
    jobs = (("tree", ()), ("api", (987654,)), ("kernels", (None,)))
    _, share = handed_off_sample(tmp_path / "f", jobs)
    out, proc = run_helper(tmp_path, [tmp_path / "f"])
    assert proc.wait(120) == 0
    lent = pickle.loads(out.read_bytes())[str(tmp_path / "f")][(sharejobs.LENT, share)]
    assert set(lent) == {side_work.key("kernels", (None,))}
    assert [sharejobs.child_takes(share, jobs, i) for i in range(3)] == [True, False, False]
    errors = []
    for values in (lent, {}):
        prof = load("trace-json", str(GPU))
        side_work.seed(prof, values)
        side_work.run(prof, jobs)                   # the parent's warm-up: what is missing
        from tb_compare_plugin.engines.api import side_api_stats
        with pytest.raises(ValueError) as e:
            side_api_stats(prof, 987654)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "987654" in errors[0]


# -- through the real CLI ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two traces of the sample's events repeated (so the sides' parses and jobs overlap), of
    slightly different sizes."""
    folder = tmp_path_factory.mktemp("pair")
    return repeated_traces(GPU, folder, {"base": 14, "target": 12})


def run_cli(pair, tmp_path, tag, share, no_cache):
    d = tmp_path / tag
    d.mkdir()
    env = {**os.environ, "TB_COMPARE_CACHE_DIR": str(d / "cache"), "TB_COMPARE_TIMING": str(d / "marks"),
           sharejobs.ENV: share}
    env.pop("TB_COMPARE_SCRATCH_DIR", None)
    r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, pair), "-q",
                        "--json", str(d / "o.json"), "--xlsx", str(d / "o.xlsx")] + (["--no-cache"] if no_cache else []),
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    labels = [line.split(" ", 2)[2] for line in (d / "marks").read_text().splitlines()]
    return r, d, labels


@pytest.mark.parametrize("no_cache", [True, False], ids=["no-cache", "cache"])
def test_cli_outputs_are_those_without_sharing(pair, tmp_path, no_cache):
    import zipfile
    r1, d1, labels = run_cli(pair, tmp_path, "shared", "1", no_cache)
    r0, d0, _ = run_cli(pair, tmp_path, "alone", "0", no_cache)
    assert (d1 / "o.json").read_bytes() == (d0 / "o.json").read_bytes()
    assert r1.stderr == r0.stderr and r1.stdout == r0.stdout
    with zipfile.ZipFile(d1 / "o.xlsx") as a, zipfile.ZipFile(d0 / "o.xlsx") as b:
        assert a.namelist() == b.namelist()
        for n in a.namelist():
            if n != "docProps/core.xml":
                assert a.read(n) == b.read(n), n
    # each side's small jobs ran once: by its own process or taken by the other one
    for name in sharejobs.TAKEN:
        own = labels.count(f"child: job {name}")
        took = labels.count(f"child: took job {name} of the other side")
        skipped = labels.count(f"child: job {name} taken")
        assert own + took == 2 and skipped == took, (name, labels)


# -- through a real parse pool ------------------------------------------------------------------
# Side B (a big trace, its whole job list and per-step statistics) is parsed first; as soon as its
# share says it is handed off, side A (the small sample, one job) starts: A answers while B is
# still in its jobs, and A's child is given B's last ones.
POOL = """
import glob, json, os, pickle, sys, threading, time
from tb_compare_plugin.engines import side_work
from tb_compare_plugin.loaders import load
from tb_compare_plugin.model.derived import DERIVED
from tb_compare_plugin.service.parsepool import ParsePool
big, small, jobs_a, jobs_b = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
jobs_a = tuple((n, tuple(a)) for n, a in jobs_a)
jobs_b = tuple((n, tuple(a)) for n, a in jobs_b)
pool = ParsePool(2)
got = {}
def parse(tag, path, jobs):
    got[tag] = pool.parse("trace-json", path, (tag, path), side_jobs=jobs)
b = threading.Thread(target=parse, args=("b", big, jobs_b))
b.start()
while not glob.glob(os.path.join(pool._progress_dir, "share-*.in")) and b.is_alive():
    time.sleep(0.002)
a = threading.Thread(target=parse, args=("a", small, jobs_a))
a.start()
a.join()
b.join()
pool.shutdown()
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.presenters.json_encode import encode
from tb_compare_plugin.service import compare as service
def answers(prof):
    cmp = Comparison(prof, prof)
    return encode({"overview": service.overview(cmp), "steps": service.steps(cmp),
                   "api": cmp.api().to_dict("records"), "kernels": cmp.kernels().to_dict("records")})
out = {}
for tag, jobs in (("a", jobs_a), ("b", jobs_b)):
    built = DERIVED.built(got[tag])
    out[tag] = {"present": [side_work.key(*j) in built for j in jobs]}
out["equal"] = answers(got["b"]) == answers(load("trace-json", big))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """The sample's events 40 times over (a few seconds to parse)."""
    evs = json.loads(GPU.read_text())["traceEvents"]
    body = json.dumps(evs)[1:-1].encode()
    path = tmp_path_factory.mktemp("big") / "big.pt.trace.json.gz"
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents": [' + body))
        for _ in range(40):
            f.write(z.compress(b"," + body))
        f.write(z.compress(b"]}") + z.flush())
    return path


def test_the_child_that_answers_first_takes_the_others_jobs_in_a_pool(big, tmp_path):
    """Two parses in one pool; the one that answers first is given the other's last jobs.
    Every value arrives in the profile the pool returns, the answers equal to a plain
    computation; the marks show each taken job skipped by its side's own process."""
    jobs_a = [["breakdown", [None, False]]]
    jobs_b = [["tree", []]] + [list(j) for j in JOBS[1:]] + [[n, [s]] for s in range(1, 7) for n in ("api", "kernels")]
    marks = tmp_path / "marks"
    env = {**_env(), "TB_COMPARE_TIMING": str(marks), "TB_COMPARE_CACHE": "0"}
    r = subprocess.run([sys.executable, "-c", POOL, str(big), str(GPU), json.dumps(jobs_a), json.dumps(jobs_b)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert all(out["a"]["present"]) and all(out["b"]["present"]) and out["equal"], out
    labels = [line.split(" ", 2)[2] for line in marks.read_text().splitlines()]
    took = [x for x in labels if x.startswith("child: took job")]
    assert took and len(took) == len([x for x in labels if x.endswith(" taken")]), labels
