"""Model actors on a real two-node local Ray cluster (head and worker node on this machine,
one CPU each): losing the worker node mid-run loses no prediction and does not hang the run. The
lost node's actor cannot be restarted (the surviving actor holds the only CPU left), so
its calls must go to the surviving actor instead of waiting for a restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentworld.executors import ExecutorConfig

ray = pytest.importorskip("ray", reason="pip install 'agentworld[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "local"
HANG_GUARD_S = 600
"""Only so that a regression fails instead of hanging the suite; no test measures time."""


@pytest.fixture(scope="module")
def cluster():
    # Both nodes are processes on this machine (ray.cluster_utils), as a multi-node cluster is.
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c, worker
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentworld.models.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", seed=1)


async def test_a_lost_node_loses_no_prediction_and_the_run_ends(cluster, tiny: Path, tmp_path: Path) -> None:
    from agentworld.bench.infer import run_infer, select_samples
    from agentworld.executors.actors import ActorBackend
    from agentworld.models import GenerationConfig, WorldModel
    from agentworld.models.spec import parse_backend_spec
    from agentworld.records.bench import load_bench_dir

    c, worker = cluster
    samples = select_samples(load_bench_dir(BENCH).samples, domains=["terminal", "search"], limit=4)
    backend = ActorBackend.start(parse_backend_spec(f"hf:{tiny}"), ExecutorConfig(kind="ray", workers=2))

    removed: list[bool] = []

    def lose_node(progress) -> None:
        if progress.done == 1 and not removed:
            c.remove_node(worker, allow_graceful=False)  # raylet and its workers, model actor included
            removed.append(True)

    out = tmp_path / "preds.jsonl"
    async with WorldModel(backend, concurrency=2) as wm:
        result = await asyncio.wait_for(
            run_infer(wm, samples, out, config=GenerationConfig(max_tokens=8), on_progress=lose_node), HANG_GUARD_S)
        lost = backend.lost_calls
    assert removed and (result.done, result.failures) == (len(samples), 0)
    assert lost >= 1  # the worker node's actor held or was sent a call, which went to the head's actor
    uids = [json.loads(x)["uid"] for x in out.read_text().splitlines()]
    assert sorted(uids) == sorted(s.uid for s in samples)  # nothing lost, nothing twice
