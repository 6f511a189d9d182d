"""The Ray executor on a real local Ray cluster (127.0.0.1, 2 CPUs, one per module):
collection episodes as tasks, model actors for bench, Ray Data for the data builder.
Killed workers lose nothing and duplicate nothing."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs.collect import EpisodeJob, failures_path, run_collection
from agentworld.envs.search import CorpusConfig, SearchEngine, build_corpus
from agentworld.executors import ExecutorConfig, ExecutorUnavailable
from agentworld.records.trajectory import read_trajectories

ray = pytest.importorskip("ray", reason="pip install 'agentworld[ray]'")

pytestmark = pytest.mark.slow

RAY = ExecutorConfig(kind="ray")


@pytest.fixture(scope="module", autouse=True)
def cluster():
    # One new cluster for the module (starting Ray takes seconds): address="local" never joins
    # one found on the machine; loopback only. The library reuses this session and leaves it running.
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "small"
    build_corpus(path, CorpusConfig(max_pages=20))
    return path


def _turns(path: Path) -> dict[str, list[tuple[str, str]]]:
    return {t.provenance.job_id: [(x.action, x.observation) for x in t.turns] for t in read_trajectories(path)}


def test_collect_search_on_ray_records_what_local_records(corpus: Path, tmp_path: Path) -> None:
    base = ["collect", "search", "--corpus", str(corpus), "--no-build", "--episodes", "2", "--test-episodes", "2"]
    runner = CliRunner()
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "ray.jsonl"), "--bench-dir", str(tmp_path / "rb"),
                              "--executor", "ray"])
    assert res.exit_code == 0, res.output
    assert "4 recorded" in " ".join(res.output.split())
    local = runner.invoke(app, [*base, "--out", str(tmp_path / "local.jsonl"), "--bench-dir", str(tmp_path / "lb")])
    assert local.exit_code == 0, local.output
    # Scripted episodes replay identically, wherever they ran; the benchmark files match byte for byte.
    assert _turns(tmp_path / "ray.jsonl") == _turns(tmp_path / "local.jsonl")
    assert (tmp_path / "rb" / "search_test.jsonl").read_bytes() == (tmp_path / "lb" / "search_test.jsonl").read_bytes()
    again = runner.invoke(app, [*base, "--out", str(tmp_path / "ray.jsonl"), "--executor", "ray"])
    assert "0 recorded, 4 already there" in " ".join(again.output.split())


def test_executor_options_are_checked() -> None:
    res = CliRunner().invoke(app, ["collect", "search", "--executor", "spark"])
    assert res.exit_code == 2 and "unknown --executor 'spark'" in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["collect", "search", "--ray-workers", "2"])
    assert res.exit_code == 2 and "--executor ray" in res.output


def test_without_ray_installed_the_error_names_the_extra() -> None:
    import subprocess
    import sys

    # A None entry in sys.modules makes `import ray` fail as if Ray were not installed.
    code = ("import sys; sys.modules['ray'] = None; sys.argv = ['agentworld', 'collect', 'search', '--executor', 'ray']; "
            "from agentworld.cli import main; main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "pip install 'agentworld[ray]'" in res.stderr + res.stdout
    assert "Traceback" not in res.stderr


def test_a_node_without_prerequisites_is_reported(corpus: Path, tmp_path: Path) -> None:
    def prereq() -> list[str]:
        return ["no widget on this node"]

    with pytest.raises(ExecutorUnavailable, match="no widget on this node"):
        run_collection([EpisodeJob("j", seed=0)], lambda job: None, out=tmp_path / "t.jsonl", executor=RAY,
                       prereq=prereq, show_progress=False)
    assert not (tmp_path / "t.jsonl").exists() or not (tmp_path / "t.jsonl").read_text()


def _killable_episodes(corpus: Path, marker: Path):
    """Scripted search episodes; the first attempt of ``victim`` writes its worker's pid
    to ``marker`` and waits there to be killed."""
    engine = SearchEngine(corpus)

    def run_one(job: EpisodeJob):
        from agentworld.envs.mcp.episode import run_scripted
        from agentworld.envs.search import SearchEnv, make_task

        if job.job_id == "victim" and not marker.exists():
            marker.write_text(str(os.getpid()))
            time.sleep(120)  # bounded: the test kills this worker long before
        return run_scripted(SearchEnv(engine=engine), make_task(engine, job.seed), trajectory_id=job.job_id,
                            seed=job.seed, environment="search/offline")

    return run_one


def _kill_when_marked(marker: Path) -> threading.Thread:
    def kill() -> None:
        for _ in range(600):  # up to 60 s
            if marker.exists() and marker.read_text():
                os.kill(int(marker.read_text()), signal.SIGKILL)
                return
            time.sleep(0.1)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("retries", [0, 1])
def test_a_killed_worker_loses_nothing_and_duplicates_nothing(corpus: Path, tmp_path: Path, retries: int) -> None:
    out, marker = tmp_path / "kill.jsonl", tmp_path / "victim.pid"
    jobs = [EpisodeJob(f"job-{i}", seed=i) for i in range(3)] + [EpisodeJob("victim", seed=7)]
    run_one = _killable_episodes(corpus, marker)
    executor = ExecutorConfig(kind="ray", max_retries=retries)
    killer = _kill_when_marked(marker)
    first = run_collection(jobs, run_one, out=out, executor=executor, show_progress=False)
    killer.join(timeout=5)
    assert marker.exists()
    if retries:
        # Ray ran the killed episode again on a new worker; the driver wrote it once.
        assert (first.done, first.failed) == (4, 0)
    else:
        assert (first.done, first.failed) == (3, 1) and first.failures[0][0] == "victim"
        assert "victim" in json.loads(failures_path(out).read_text().splitlines()[0])["job_id"]
        rerun = run_collection(jobs, run_one, out=out, executor=executor, show_progress=False)
        assert (rerun.done, rerun.skipped, rerun.failed) == (1, 3, 0)
    ids = [t.provenance.job_id for t in read_trajectories(out)]
    assert sorted(ids) == sorted(j.job_id for j in jobs)


# --- bench: a local model in Ray actors ------------------------------------------------

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "local"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentworld.models.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", seed=1)


def _texts(path: Path) -> dict[str, str]:
    from agentworld.bench.infer import load_predictions

    loaded = load_predictions(path)
    assert not loaded.errors
    return {uid: rec.prediction.text for (uid, _), rec in loaded.records.items()}


def _pid_once_back(actor) -> int:
    """The restarted actor's pid: calls fail while Ray restarts it (reloading the model)."""
    for _ in range(1200):  # bounded, so a never-restarted actor fails the test instead of hanging it
        try:
            return ray.get(actor.pid.remote())
        except ray.exceptions.ActorUnavailableError:
            time.sleep(0.25)
    raise AssertionError("the killed model actor was never restarted")


@pytest.fixture(scope="module")
def ray_predictions(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("infer") / "ray.jsonl"


async def test_model_actors_predict_what_one_process_does_and_a_killed_one_loses_nothing(
        tiny: Path, ray_predictions: Path, tmp_path: Path) -> None:
    from agentworld.bench.infer import run_infer, select_samples
    from agentworld.executors.actors import ActorBackend
    from agentworld.models import GenerationConfig, WorldModel, load_backend
    from agentworld.models.spec import parse_backend_spec
    from agentworld.records.bench import load_bench_dir

    samples = select_samples(load_bench_dir(BENCH).samples, domains=["terminal", "search"], limit=3)
    config = GenerationConfig(max_tokens=8)
    backend = ActorBackend.start(parse_backend_spec(f"hf:{tiny}"), ExecutorConfig(kind="ray", workers=2))
    victim = backend.actors[0]
    pid = ray.get(victim.pid.remote())
    killed: list[int] = []

    def kill_once(progress) -> None:
        if progress.done == 1 and not killed:
            ray.kill(victim, no_restart=False)  # Ray restarts it; the calls it held go to the other actor
            killed.append(pid)

    # Concurrency 2 over 2 actors: each holds one call at a time, unbatched, as -c 1 here.
    async with WorldModel(backend, concurrency=2) as wm:
        result = await run_infer(wm, samples, ray_predictions, config=config, on_progress=kill_once)
        assert _pid_once_back(victim) != pid  # a new worker process holds the model now
    assert killed and (result.done, result.failures) == (6, 0)
    uids = [json.loads(x)["uid"] for x in ray_predictions.read_text().splitlines()]
    assert sorted(uids) == sorted(s.uid for s in samples)  # nothing lost, nothing twice
    async with WorldModel(load_backend("hf", path=tiny), concurrency=1) as wm:
        await run_infer(wm, samples, tmp_path / "local.jsonl", config=config)
    assert _texts(ray_predictions) == _texts(tmp_path / "local.jsonl")
    lines = ray_predictions.read_text().splitlines()
    assert {json.loads(x)["settings"]["backend"] for x in lines} == {"hf"}  # resumable by local runs too


def test_cli_judge_takes_the_executor_options(ray_predictions: Path) -> None:
    if not ray_predictions.exists():
        pytest.skip("needs the predictions of the test above")
    # The rule scorer runs here whatever the executor (only local-model judges go to actors).
    res = CliRunner().invoke(app, ["bench", "judge", str(BENCH), "-p", str(ray_predictions), "-j", "rules",
                                   "--executor", "ray", "--ray-workers", "1"])
    assert res.exit_code == 0, res.output
    assert "6 verdicts" in res.output


# --- data: the CPT builder's chunks in Ray Data --------------------------------------

TRAJECTORIES = BENCH / "trajectories"


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten recorded trajectories per domain, one shard per domain (two tokenizing chunks)."""
    from agentworld.records.trajectory import write_trajectories

    folder = tmp_path_factory.mktemp("shards")
    for f in sorted(TRAJECTORIES.glob("*.jsonl")):
        if not f.name.endswith(".failures.jsonl"):
            write_trajectories(folder / f.name, read_trajectories(f).items[:10])
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    # The resume log lists items as they finished, which no run orders: it is not the dataset.
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".log.jsonl")}


def test_cpt_build_in_ray_data_is_byte_for_byte_the_local_one(tiny: Path, shards: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    outputs = {}
    for name, extra in (("local", ["--set", "workers=2"]), ("ray", ["--executor", "ray", "--ray-workers", "2"])):
        out = tmp_path / name
        res = runner.invoke(app, ["data", "build", "cpt", "-i", str(shards), "-o", str(out), "--exclude-bench",
                                  str(BENCH), "--format", "both", "-s", f"tokenizer={tiny}", "-s", "max_length=32768",
                                  "-s", "seed=3", *extra])
        assert res.exit_code == 0, res.output
        outputs[name] = _files(out)
    ray_files, local_files = outputs["ray"], outputs["local"]
    assert ray_files.keys() == local_files.keys() and any(k.endswith(".parquet") for k in ray_files)
    for name in local_files.keys() - {"config.json", "report.json"}:  # those two name the output folder
        assert ray_files[name] == local_files[name], name
    reports = [json.loads(files["report.json"])["report"] for files in (ray_files, local_files)]
    for r in reports:
        r.pop("output")
    assert reports[0] == reports[1] and reports[0]["rows"] > 0
    res = runner.invoke(app, ["data", "build", "rl", "-i", str(shards), "--executor", "ray"])
    assert res.exit_code == 2 and "ray builds cpt datasets" in res.output
