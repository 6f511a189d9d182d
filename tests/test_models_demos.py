"""Demonstrations in context (``demos=K``): the nearest train-split turns of the same
domain, over the real recorded trajectories of benchmarks/local, applied by the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld.bench.infer import load_predictions, run_infer
from agentworld.models import BackendError, BackendSpecError, GenerationConfig, WorldModel, load_backend
from agentworld.models.demos import TITLE, Demonstrations, DemoSettings, insert_section
from agentworld.models.spec import parse_backend_spec
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.prompts import build_messages, build_system_prompt, sample_messages
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import read_trajectories

LOCAL = Path(__file__).resolve().parents[1] / "benchmarks" / "local"
TRAJS = LOCAL / "trajectories"


@pytest.fixture(scope="module")
def demos() -> Demonstrations:
    return Demonstrations.load(DemoSettings(3, str(TRAJS)))


@pytest.fixture(scope="module")
def splits() -> dict[str, tuple[str, str | None]]:
    out = {}
    for path in sorted(TRAJS.glob("*.jsonl")):
        for t in read_trajectories(path).items:
            out[t.id] = (t.domain, t.provenance.split)
    return out


def test_same_domain_train_split_only(demos: Demonstrations, splits) -> None:
    bench = load_bench_dir(LOCAL).by_domain()
    for domain, samples in bench.items():
        for s in samples[::25]:
            found = demos.nearest(domain, s.action, s.history())
            assert len(found) == 3
            for turn in found:
                assert splits[turn.trajectory_id] == (domain, "train"), (s.uid, turn.trajectory_id)


def test_never_the_own_trajectory_nor_a_turn_of_this_session(demos: Demonstrations) -> None:
    traj = next(t for t in read_trajectories(TRAJS / "terminal.jsonl").items if t.provenance.split == "train")
    turn = traj.turns[1]
    history = [(t.action, t.observation) for t in traj.turns[:1]]
    plain = demos.nearest("terminal", turn.action, history)
    assert any(t.trajectory_id == traj.id for t in plain)  # its own turn is the nearest...
    kept = demos.nearest("terminal", turn.action, history, exclude_trajectory=traj.id)
    assert kept and all(t.trajectory_id != traj.id for t in kept)  # ...unless excluded
    # A turn this session already shows is no demonstration either.
    same = demos.nearest("terminal", traj.turns[0].action, [])
    session = [(same[0].action, same[0].observation)]
    assert all((t.action, t.observation) != session[0] for t in demos.nearest("terminal", same[0].action, session))


def test_rendered_where_the_system_prompt_puts_demonstrations(demos: Demonstrations) -> None:
    system = build_system_prompt("terminal")
    action = json.dumps([{"keystrokes": "ls -l\n", "duration": 1.0}])
    msgs = demos.apply(build_messages(system, [("ls", "a.txt")], action), "terminal")
    text = msgs[0]["content"]
    assert text.index(TITLE) < text.index("## Observation format") and text.index("## Action space") < text.index(TITLE)
    assert text.count("\nExample ") == 3 and msgs[1:] == build_messages(system, [("ls", "a.txt")], action)[1:]
    # A published system_str without our sections: at its end. No system message: one is added.
    assert insert_section("Play a terminal.", "## Demonstrations\nx\n") == "Play a terminal.\n\n## Demonstrations\nx\n"
    bare = demos.apply(build_messages("", [], action), "terminal")
    assert bare[0]["role"] == "system" and bare[0]["content"].startswith(TITLE)
    # A domain the source has no turns of: unchanged.
    assert demos.apply(build_messages(system, [], action), "android") == build_messages(system, [], action)


def test_spec_options_of_every_backend(tmp_path: Path) -> None:
    for text in ("smol,demos=2", "hf:ckpt,demos=4,demo_source=x.jsonl", "openai:m@http://h/v1,demos=1",
                 "retrieval:t.jsonl,demos=0"):
        spec = parse_backend_spec(text)
        assert "demos" in spec.runner_options() and "demos" not in spec.backend_kwargs()
    with pytest.raises(BackendSpecError, match="demos='two' of the smol backend must be an integer"):
        parse_backend_spec("smol,demos=two")
    with pytest.raises(BackendSpecError, match="must be 0 or more"):
        load_backend(f"retrieval:{TRAJS / 'terminal.jsonl'},demos=-1")
    with pytest.raises(BackendError, match="demo_source=PATH"):
        load_backend(f"retrieval:{TRAJS / 'terminal.jsonl'},demos=2,demo_source={tmp_path / 'none'}")
    # Benchmark sample files are test data: never a demonstration source.
    with pytest.raises(BackendError, match="no train-split trajectories"):
        load_backend(f"retrieval:{TRAJS / 'terminal.jsonl'},demos=2,demo_source={LOCAL / 'terminal_test.jsonl'}")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", seed=1)


async def test_runner_applies_demos_for_any_backend(ckpt: Path, tmp_path: Path) -> None:
    """A tiny hf model sees the demonstrations (more prompt tokens); the cache keeps
    runs with and without them apart; a request without a domain is refused."""
    from agentworld.models import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    sample = load_bench_dir(LOCAL).by_domain()["terminal"][0]
    cfg = GenerationConfig(max_tokens=4)
    plain = WorldModel(load_backend("hf", path=ckpt), cache=cache)
    with_demos = WorldModel(load_backend("hf", path=ckpt, demos=2, demo_source=str(TRAJS)), cache=cache)
    [a] = await plain.predict_sample(sample, cfg)
    [b] = await with_demos.predict_sample(sample, cfg)
    assert a.error is None and b.error is None and not b.cached
    assert b.prompt_tokens > a.prompt_tokens
    [again] = await with_demos.predict_sample(sample, cfg)
    assert again.cached and len(cache) == 2
    [refused] = await with_demos.predict(sample_messages(sample), cfg)
    assert refused.error and "needs the request's domain" in refused.error
    await plain.backend.aclose()


async def test_bench_infer_records_demos_settings(tmp_path: Path) -> None:
    samples = [s for ss in load_bench_dir(LOCAL).by_domain().values() for s in ss[:2]]
    out = tmp_path / "preds.jsonl"
    wm = WorldModel(load_backend("retrieval", source=TRAJS, demos=1, demo_source=str(TRAJS)))
    progress = await run_infer(wm, samples, out)
    assert progress.done == len(samples) and progress.failures == 0
    records = load_predictions(out).records.values()
    assert all(r.settings["demos"] == 1 and r.settings["demo_source"].startswith("trajectories@") for r in records)
