import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld.bench.infer import load_predictions, run_infer, select_samples
from agentworld.launch import launched
from agentworld.models import WorldModel, load_backend
from agentworld.records.bench import load_bench_dir, write_bench_dir
from agentworld.records.select import trajectories_to_samples
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

PROMPT = "root@sandbox:/workspace#"


def make_trajectories(n: int, turns: int = 5, domain: str = "terminal") -> list[Trajectory]:
    """Shell sessions whose words are unique per trajectory, so retrieval can tell them apart."""
    out = []
    for i in range(n):
        steps = []
        for k in range(1, turns + 1):
            word = f"w{i}x{k}"
            steps.append(Turn(action=json.dumps([{"keystrokes": f"echo {word}\n", "duration": 0.5}]),
                              observation=f"{PROMPT} echo {word}\n{word}\n{PROMPT} "))
        out.append(Trajectory(id=f"t{i}", domain=domain, task_description=f"print word {i}", turns=steps))
    return out


def make_bench(tmp: Path, n: int, turns: int = 5) -> tuple[Path, Path]:
    """A benchmark directory (every turn evaluated) and the trajectory file it came from."""
    trajs = make_trajectories(n, turns)
    src = tmp / "trajs.jsonl"
    write_trajectories(src, trajs)
    write_bench_dir(tmp / "bench", trajectories_to_samples(trajs, policy="all"))
    return tmp / "bench", src


@contextlib.contextmanager
def serve(source: Path, *extra: str, timeout: float = 300.0):
    """``agentworld serve`` with the retrieval backend over ``source``; yields its base URL."""
    with launched("serve", "--backend", "retrieval:" + str(source), *extra, timeout=timeout) as url:
        yield f"{url}/v1"


def killed_part_way(cmd: list[str], out: Path, lines: int = 40) -> bytes:
    """Run ``cmd``, SIGKILL it once ``out`` has ``lines`` lines (at most 120 s on), return ``out``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while (not out.exists() or out.read_text().count("\n") < lines) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    return out.read_bytes()


def keys_in(path: Path) -> list[tuple[str, int]]:
    return [(r["uid"], r["sample_index"]) for r in map(json.loads, path.read_text().splitlines())]


def test_select_samples(tmp_path):
    bench, _ = make_bench(tmp_path, 6, turns=3)
    samples = load_bench_dir(bench).samples
    assert len(select_samples(samples, limit=4)) == 4
    assert [s.uid for s in select_samples(samples, ids=["t1:2", "terminal/t2:1/1"])] == ["terminal/t1:2/2", "terminal/t2:1/1"]
    assert select_samples(samples, domains=["mcp"]) == []
    few = {s.uid for s in select_samples(samples, sample=5, seed=3)}
    assert len(few) == 5 and few == {s.uid for s in select_samples(list(reversed(samples)), sample=5, seed=3)}
    assert few != {s.uid for s in select_samples(samples, sample=5, seed=4)}


async def test_resume_skips_finished_and_retries_failed(tmp_path):
    bench, src = make_bench(tmp_path, 4, turns=3)
    samples = load_bench_dir(bench).samples
    out = tmp_path / "preds.jsonl"
    wm = WorldModel(load_backend("retrieval", source=src), concurrency=2)
    first = await run_infer(wm, samples[:5], out, n=2)
    assert first.done == 5 and first.skipped == 0
    again = await run_infer(wm, samples, out, n=2)
    assert again.skipped == 5 and again.done == len(samples) - 5
    keys = keys_in(out)
    assert len(keys) == len(set(keys)) == 2 * len(samples)
    recs = load_predictions(out).records
    assert all(r.prediction.ok for r in recs.values())
    # The backend answers each action with its own recorded observation (it indexed them).
    r = recs[(samples[0].uid, 0)]
    assert r.prediction.observation == samples[0].ground_truth.rstrip()
    # A failed call is stored and counted as done; retry_failed asks again and supersedes it.
    bad = recs[(samples[1].uid, 1)].model_copy(deep=True)
    bad.prediction.error = "APIConnectionError: refused"
    with out.open("a") as fh:
        fh.write(bad.model_dump_json() + "\n" + '{"uid": "torn')
    assert (await run_infer(wm, samples, out, n=2)).done == 0
    res = await run_infer(wm, samples, out, n=2, retry_failed=True)
    assert res.done == 1 and load_predictions(out).records[(samples[1].uid, 1)].prediction.error is None
    await wm.aclose()


@pytest.mark.slow
def test_kill9_during_infer_then_resume(tmp_path):
    bench, src = make_bench(tmp_path, 300, turns=5)
    total = len(load_bench_dir(bench).samples)
    out = tmp_path / "preds.jsonl"
    with serve(src) as url:
        cmd = [sys.executable, "-m", "agentworld", "bench", "infer", str(bench), "-o", str(out), "-b", "openai",
               "--opt", f"base_url={url}", "--opt", "model=wm", "-c", "2"]
        before = killed_part_way(cmd, out)
        done_before = before.count(b"\n")
        assert 40 <= done_before < total, "the run must be killed part way"
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
    after = out.read_bytes()
    # Finished lines are kept as they were (only a torn tail may be cut), none redone.
    assert after.startswith(before[: before.rfind(b"\n") + 1])
    keys = keys_in(out)
    assert len(keys) == len(set(keys)) == total
    assert f"{total - done_before} samples predicted, {done_before} already there" in " ".join(res.stdout.split())
