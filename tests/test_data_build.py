"""End to end: CPT, SFT and RL datasets from recorded trajectories, loss mask checked token by token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.chat import load_tokenizer, trajectory_chat
from agentworld.data.config import CPTConfig, RLConfig, SFTConfig
from agentworld.data.cpt import build_cpt
from agentworld.data.filters import FilterReport, filter_trajectories, loss_skipped
from agentworld.data.masking import categorize, keep_turn, turn_stats
from agentworld.data.packing import IGNORE_INDEX
from agentworld.data.rl import build_rl
from agentworld.data.sft import build_sft
from agentworld.judge import RuleScorer
from agentworld.models import WorldModel, load_backend
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.prompts import record_response, trajectory_system_prompt
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples" / "trajectories.jsonl"
RECORDED = ROOT / "benchmarks" / "local" / "trajectories"
P = "root@sandbox:/workspace# "


def keys(cmd: str) -> str:
    return json.dumps([{"keystrokes": cmd + "\n", "duration": 1.0}])


def shell(tid: str, steps: list[tuple[str, str]]) -> Trajectory:
    turns = [Turn(action=keys(c), observation=f"{P}{c}\n{o}{P}") for c, o in steps]
    return Trajectory(id=tid, domain="terminal", task_description="Work in the shell.", turns=turns)


def extra_trajectories() -> list[Trajectory]:
    retry = shell(
        "shell-retry",
        [
            ("pythn3 -V", "bash: pythn3: command not found\n"),
            ("python3 -V", "Python 3.11.2\n"),
            ("echo 'x = 41' > a.py", ""),
            ("export GREETING=hello-world", ""),
            ("cat a.py", "x = 41\n"),
            ("echo $GREETING", "hello-world\n"),
            ("echo $GREETING", "hello-world\n"),
        ],
    )
    tools = [{"name": "read_file"}, {"name": "write_file"}]
    bad_tool = Trajectory(
        id="mcp-undeclared",
        domain="mcp",
        tools=tools,
        turns=[
            Turn(action=json.dumps({"name": "read_file", "arguments": {"path": "a"}}), observation="{}"),
            Turn(action=json.dumps({"name": "rm_rf", "arguments": {}}), observation="{}"),
        ],
    )
    short = shell("shell-short", [("ls", "a.py\n")])
    return [retry, bad_tool, short]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("trajs")
    trajs = read_trajectories(EXAMPLES).items + extra_trajectories()
    write_trajectories(d / "trajectories.jsonl", trajs)
    return d


def with_recorded(data_dir: Path, folder: Path, per_domain: int) -> list[str]:
    """``data_dir`` plus a frozen sample of the recorded trajectories (the first
    ``per_domain`` of each domain's file) written under ``folder``."""
    paths = [str(data_dir)]
    recorded = sorted(RECORDED.glob("*.jsonl")) if RECORDED.is_dir() else []
    sample: list[Trajectory] = []
    for f in recorded:
        if not f.name.endswith(".failures.jsonl"):
            sample += read_trajectories(f).items[:per_domain]
    if sample:
        write_trajectories(folder / "recorded.jsonl", sample)
        paths.append(str(folder))
    return paths


@pytest.fixture(scope="module")
def inputs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The examples and hand-built trajectories, plus a frozen sample of the recorded ones
    (a few per domain: enough to exercise every recorded domain, small enough to be fast)."""
    return with_recorded(data_dir, tmp_path_factory.mktemp("recorded"), 3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def test_cpt_loss_mask_token_by_token(tmp_path: Path, data_dir: Path, inputs: list[str], tiny: Path) -> None:
    knowledge = tmp_path / "knowledge.jsonl"
    knowledge.write_text(json.dumps({"title": "bash(1)", "domain": "terminal", "text": "BASH is a shell."}) + "\n")
    cfg = CPTConfig(
        inputs=inputs, output_dir=str(tmp_path / "cpt"), tokenizer=str(tiny), max_length=8192, workers=1,
        knowledge=[str(knowledge)],
    )
    report = build_cpt(cfg)
    # The hand-built one, plus any sampled recording whose script calls a tool no server
    # declares on purpose (the everything template does).
    undeclared = sum(1 for t in read_trajectories(Path(inputs[-1]) / "recorded.jsonl").items if t.domain == "mcp"
                     and {json.loads(u.action)["name"] for u in t.turns} - {x["name"] for x in t.tools}) if len(inputs) > 1 else 0
    assert report.prepared["filters"]["mcp"]["dropped_undeclared_tool"] == 1 + undeclared
    assert report.prepared["filters"]["terminal"]["dropped_too_few_turns"] == 1
    assert report.knowledge_samples == 1
    ds = Dataset.from_parquet(str(tmp_path / "cpt" / "train.parquet"))
    assert set(ds.column_names) >= {"input_ids", "labels", "position_ids", "seq_lengths"}
    krow = next(r for r in ds if any(x.startswith("knowledge:") for x in r["sample_ids"]))
    kdx = next(i for i, x in enumerate(krow["sample_ids"]) if x.startswith("knowledge:"))
    ks = sum(krow["seq_lengths"][:kdx])
    kids, klabels = krow["input_ids"][ks : ks + krow["seq_lengths"][kdx]], krow["labels"][ks : ks + krow["seq_lengths"][kdx]]
    tok = load_tokenizer(str(tiny))
    assert tok.decode([t for t, lab in zip(kids, klabels, strict=True) if lab != IGNORE_INDEX]) == "BASH is a shell.<|im_end|>\n"
    assert report.samples == sum(len(r) for r in ds["seq_lengths"])

    # the sample of the retry trajectory, cut out of its packed row by seq_lengths
    row = next(r for r in ds if "traj:shell-retry" in r["sample_ids"])
    k = row["sample_ids"].index("traj:shell-retry")
    start = sum(row["seq_lengths"][:k])
    end = start + row["seq_lengths"][k]
    ids, labels, pos = row["input_ids"][start:end], row["labels"][start:end], row["position_ids"][start:end]
    assert pos == list(range(end - start))  # positions restart for every packed sample

    [traj] = filter_trajectories([t for t in extra_trajectories() if t.id == "shell-retry"], report=FilterReport())
    chat = trajectory_chat(traj, trajectory_system_prompt(traj))
    assert tok.decode(ids) == tok.apply_chat_template(chat, tokenize=False)
    assert all(lab in (IGNORE_INDEX, t) for lab, t in zip(labels, ids, strict=True))

    # independent expectation: kept turns are the seeded draws minus the retry garbage turn
    kept = [
        i
        for i, t in enumerate(traj.turns, start=1)
        if keep_turn(0, traj.id, i, categorize(turn_stats(t.action, t.observation))) and not loss_skipped(t)
    ]
    assert loss_skipped(traj.turns[0]) and 1 not in kept
    runs: list[tuple[int, int]] = []
    for i, lab in enumerate(labels):
        if lab != IGNORE_INDEX and (not runs or runs[-1][1] != i):
            runs.append((i, i + 1))
        elif lab != IGNORE_INDEX:
            runs[-1] = (runs[-1][0], i + 1)
    assert len(runs) == len(kept) and kept
    for (a, b), turn_idx in zip(runs, kept, strict=True):
        # CPT turns are in the stored record form, as inference prompts replay history.
        expected = record_response(traj.turns[turn_idx - 1].observation) + "<|im_end|>\n"
        assert tok.decode(ids[a:b]) == expected
        assert tok.decode(ids[:a]).endswith("<|im_start|>assistant\n")


def test_held_out_split_is_written_and_excluded(tmp_path: Path, inputs: list[str], tiny: Path) -> None:
    # Rows long enough that no training trajectory is cut down to no loss tokens (a recorded
    # filesystem episode's tool schemas alone run past 8192 tiny-tokenizer tokens) and
    # dropped: then every training trajectory must be packed, and only those.
    cfg = CPTConfig(inputs=inputs, output_dir=str(tmp_path / "cpt"), tokenizer=str(tiny), test_fraction=0.5, seed=3,
                    max_length=32768)
    report = build_cpt(cfg)
    assert report.dropped_no_loss == 0
    split = json.loads((tmp_path / "cpt" / "split.json").read_text())
    assert split["test"] and split["train"] and not set(split["test"]) & set(split["train"])
    held = read_trajectories(tmp_path / "cpt" / "test_trajectories.jsonl").items
    assert sorted(t.id for t in held) == sorted(split["test"])
    assert report.prepared["leakage"]["ok"]
    ds = Dataset.from_parquet(str(tmp_path / "cpt" / "train.parquet"))
    packed = {sid for ids in ds["sample_ids"] for sid in ids}
    assert packed == {f"traj:{t}" for t in split["train"]}


def test_sft_rejection_sampling_and_resume(tmp_path: Path, data_dir: Path) -> None:
    # One recorded trajectory per domain: every domain's rollouts go through the rule
    # scorer and the content checks; more of them (web pages cost ~1 s a query to
    # judge) would test the same logic again.
    inputs = with_recorded(data_dir, tmp_path / "recorded", 1)
    # The floor indexes every input: it answers each domain from that domain's turns only.
    floor = tmp_path / "floor"
    floor.mkdir()
    for i, folder in enumerate(inputs):
        for f in sorted(Path(folder).glob("*.jsonl")):
            (floor / f"{i}-{f.name}").symlink_to(f)
    wm = WorldModel(load_backend("retrieval", source=str(floor)), concurrency=2)
    cfg = SFTConfig(inputs=inputs, output_dir=str(tmp_path / "sft"), turn_policy="all", k=3, threshold=3.0)
    report = build_sft(cfg, world_model=wm, scorer=RuleScorer())
    per = report.per_domain
    term = per["terminal"]
    assert term["rollouts"] == 3 * term["queries"] and term["queries"] >= 10
    assert 0 < term["kept"] <= term["queries"]
    assert report.retention("terminal") == term["kept"] / term["queries"]
    ds = Dataset.from_parquet(str(tmp_path / "sft" / "train.parquet"))
    assert len(ds) == sum(c["kept"] for c in per.values())
    row = ds[0]
    assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
    assert row["completion"][0]["content"].startswith("<predicted_observation>")
    assert row["score"] >= 3.0
    assert len(set(ds["variant"])) > 1  # system-prompt wording sampled per sample

    calls = wm.stats.calls
    again = build_sft(cfg, world_model=wm, scorer=RuleScorer())
    assert wm.stats.calls == calls  # resumed from the log: no query rolled out twice
    assert again.to_dict()["per_domain"] == report.to_dict()["per_domain"]

    # Above the top of the scale nothing passes. A few queries show it, as long as some of
    # their rollouts passed at 3.0 (re-judging every query would prove nothing more).
    strict = SFTConfig(inputs=inputs, output_dir=str(tmp_path / "sft5"), turn_policy="all", threshold=5.01,
                       max_queries=8)
    assert build_sft(strict, world_model=wm, scorer=RuleScorer()).retention() == 0.0
    kept_before = {r["key"] for r in _log(tmp_path / "sft") if r["kept"]}
    rejected = _log(tmp_path / "sft5")
    assert len(rejected) == 8 and {r["key"] for r in rejected} & kept_before
    candidates = [c for r in rejected for c in r["candidates"]]
    assert not any(c["passed"] for c in candidates)
    assert any(c["reject"] == "below_threshold" and c["total"] >= 3.0 for c in candidates)


def _log(out_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (out_dir / "sft.log.jsonl").read_text().splitlines()]


def test_rl_pool_one_turn_per_trajectory(tmp_path: Path, inputs: list[str], tiny: Path) -> None:
    cfg = RLConfig(inputs=inputs, output_dir=str(tmp_path / "rl"), tokenizer=str(tiny), max_prompt_tokens=100_000)
    report = build_rl(cfg)
    ds = Dataset.from_parquet(str(tmp_path / "rl" / "train.parquet"))
    assert len(ds["trajectory_id"]) == len(set(ds["trajectory_id"])) == report.rows
    row = next(r for r in ds if r["trajectory_id"] == "shell-retry")
    specs = json.loads(row["verifiers"])
    assert row["verifier_kinds"] and {s["kind"] for s in specs} == set(row["verifier_kinds"])
    assert row["prompt"][-1]["content"] == extra_trajectories()[0].turns[row["turn_idx"] - 1].action
    assert row["ground_truth"] == extra_trajectories()[0].turns[row["turn_idx"] - 1].observation
    assert all(n <= cfg.max_prompt_tokens for n in ds["prompt_tokens"])

    capped = RLConfig(inputs=inputs, output_dir=str(tmp_path / "rl-cap"), tokenizer=str(tiny), max_prompt_tokens=50)
    rep = build_rl(capped)
    assert rep.rows == 0 and rep.per_domain["terminal"]["dropped_too_long"] >= 1


def test_cli_build_and_mask_stats(tmp_path: Path, data_dir: Path, tiny: Path) -> None:
    runner = CliRunner()
    cfg = tmp_path / "rl.yaml"
    cfg.write_text(f"inputs: [{data_dir}]\noutput_dir: {tmp_path / 'out'}\ntokenizer: {tiny}\n")
    res = runner.invoke(app, ["data", "build", "rl", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "train.parquet").exists()
    cfg.write_text(f"inputs: [{data_dir}]\nmax_prompt_token: 5\n")
    res = runner.invoke(app, ["data", "build", "rl", "--config", str(cfg)])
    assert res.exit_code == 2 and "max_prompt_tokens" in res.output
    res = runner.invoke(app, ["data", "mask-stats", str(data_dir), "--workers", "1"])
    assert res.exit_code == 0 and "terminal" in res.output and "echo" in res.output


@pytest.mark.slow
def test_tokenizing_in_worker_processes_gives_the_same_samples(tiny: Path) -> None:
    from agentworld.data.cpt import Job, tokenize_jobs

    trajs = read_trajectories(EXAMPLES).items + extra_trajectories()
    jobs = [
        Job(t.id, t.domain, trajectory_chat(t, trajectory_system_prompt(t)), [0] if i % 2 else None)
        for i, t in enumerate(trajs * 2)
    ]
    one = sorted(tokenize_jobs(str(tiny), jobs, 1, batch_size=1))
    many = sorted(tokenize_jobs(str(tiny), jobs, 2, batch_size=1))
    assert one == many and len(one) == len(jobs)


def test_sft_backend_and_scorer_from_the_config(tmp_path: Path, data_dir: Path, tiny: Path) -> None:
    # a random tiny model as the rollout source: the real generation path, judged by rules
    cfg = SFTConfig(
        inputs=[str(data_dir)],
        output_dir=str(tmp_path / "sft-hf"),
        backend="hf",
        backend_options={"path": str(tiny)},
        k=2,
        max_tokens=8,
        max_queries=2,
        temperature=0.0,
    )
    report = build_sft(cfg)
    counts = report.per_domain["terminal"]
    assert counts["queries"] == 2 and counts["rollouts"] == 4 and counts["errors"] == 0
    rows = Dataset.from_parquet(str(tmp_path / "sft-hf" / "train.parquet")) if counts["kept"] else []
    assert len(rows) == counts["kept"] <= 2
    log = [json.loads(x) for x in (tmp_path / "sft-hf" / "sft.log.jsonl").read_text().splitlines()]
    assert len(log) == 2 and all(len(r["candidates"]) == 2 for r in log)


def test_sft_queries_without_an_answer_are_retried_not_logged(tmp_path: Path, data_dir: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on: connections are refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = SFTConfig(
        inputs=[str(data_dir)],
        output_dir=str(tmp_path / "sft-down"),
        backend="openai",
        backend_options={"model": "m", "base_url": f"http://127.0.0.1:{port}/v1", "api_key": "x", "max_retries": 0},
        max_queries=2,
    )
    report = build_sft(cfg)
    assert report.per_domain["terminal"]["failed_queries"] == 2
    assert len(report.call_errors) == 2 and "Connection" in report.call_errors[0]
    assert not (tmp_path / "sft-down" / "sft.log.jsonl").exists() or not (
        tmp_path / "sft-down" / "sft.log.jsonl"
    ).read_text().strip()


def test_sft_truth_targets_with_demonstrations(tmp_path: Path, inputs: list[str]) -> None:
    """k: 0 keeps every query with the real observation as target, loading no backend;
    demos: K puts the nearest turns of other training trajectories in the prompt, as the
    runner does at inference."""
    from agentworld.models.demos import TITLE
    from agentworld.parsing import parse_prediction

    cfg = SFTConfig(inputs=inputs, output_dir=str(tmp_path / "sft"), turn_policy="all", k=0, demos=2,
                    backend="openai:none@http://127.0.0.1:9/v1", output_format="jsonl")
    report = build_sft(cfg)
    rows = [json.loads(line) for line in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    assert rows and report.retention() == 1.0 and len(rows) == report.rows
    trajs = {t.id: t for f in inputs for p in sorted(Path(f).glob("*.jsonl")) for t in read_trajectories(p).items}
    with_demos = 0
    for row in rows:
        truth = trajs[row["trajectory_id"]].turns[row["turn_idx"] - 1].observation
        assert parse_prediction(row["completion"][0]["content"]).observation.strip() == truth.strip()
        system = row["prompt"][0]["content"]
        if TITLE in system:
            with_demos += 1
            demos = system[system.index(TITLE):]
            # never a turn of the query's own trajectory (its observations would give the answer away)
            # (an observation other trajectories also recorded may show up through them)
            # (demonstrations cut observations at 1,200 characters)
            own = {t.observation[:1100] for t in trajs[row["trajectory_id"]].turns if len(t.observation) > 40}
            others = {t.observation[:1100] for tid, o in trajs.items() if tid != row["trajectory_id"] for t in o.turns}
            assert all(o not in demos for o in own - others)
            assert system.index(TITLE) < system.index("## Output contract")
    assert with_demos >= len(rows) // 2
