"""The agent experiments' plumbing: evaluation with the protocol ``agent train`` teaches, and
the benchmark scripts' stages (dry run, resume, refusal of a changed stage)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.agents.protocol import TOOL_SYSTEM, ToolCallProtocol, protocol_for, tool_prompt
from agentworld.agents.tasks import family
from agentworld.agents.train import dataset_rows, load_agent_config
from agentworld.cli import app
from agentworld.envs.terminal.task import cmd
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.records.trajectory import SimContext

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import agent_experiments  # noqa: E402
import agent_sim_rl  # noqa: E402
import agent_warmup  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.getbasetemp() / "agents-tiny")


def test_the_tool_protocol_is_the_training_prompt(tiny: Path) -> None:
    task = family("term-make-dirs").instance(1000)
    cfg = load_agent_config(None, {"tasks": ["term-make-dirs"], "seeds": 1})
    [row] = dataset_rows(cfg)
    proto = protocol_for("terminal", "tools")
    assert isinstance(proto, ToolCallProtocol) and proto.role == "tool"
    system, user = proto.start(task, "$ ", SimContext(initial_state="cwd: /workspace"))
    # the same system prompt and task message as training, the reset text appended as TRL does
    assert row["prompt"] == tool_prompt(task) and system["content"] == row["prompt"][0]["content"]
    assert system["content"].startswith(TOOL_SYSTEM)
    assert user["content"] == row["prompt"][1]["content"] + "\n\ncwd: /workspace\n\n$"
    assert [t["function"]["name"] for t in system["tools"]] == ["terminal"]
    # the hf backend renders the tools through the chat template (TRL's Qwen2.5 one here)
    from agentworld.models.hf import HFBackend

    text = HFBackend(tiny, chat_template="qwen2.5").prompt_text([system, user])
    assert "<tools>" in text and '"name": "terminal"' in text and TOOL_SYSTEM in text


def test_the_tool_protocol_reads_tool_calls() -> None:
    term, tools = protocol_for("terminal", "tools"), protocol_for("mcp", "tools")
    call = '<tool_call>{"name": "terminal", "arguments": {"command": "ls -la"}}</tool_call>'
    assert term.parse(call).action == cmd("ls -la")
    assert term.parse("All done.").done
    assert term.parse('<tool_call>{"name": "other", "arguments": {}}</tool_call>').invalid
    inner = '<tool_call>{"name": "call_tool", "arguments": {"name": "read_graph", "arguments": "{}"}}</tool_call>'
    assert json.loads(tools.parse(inner).action or "") == {"name": "read_graph", "arguments": {}}
    with pytest.raises(ValueError, match="unknown protocol"):
        protocol_for("terminal", "keystrokes")


def test_eval_with_the_tool_protocol_in_the_real_terminal(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.jsonl"
    res = CliRunner().invoke(app, ["agent", "eval", "-t", "term-write-file", "-n", "1", "-m", "real", "--protocol", "tools",
                                   "-p", f"hf:{tiny},chat_template=qwen2.5", "--max-tokens", "8", "--max-turns", "2",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    [line] = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["error"] is None and line["settings"]["protocol"] == "tools" and line["grade"]["decided_by"] == ["sandbox"]
    bad = CliRunner().invoke(app, ["agent", "eval", "-p", "idle", "--protocol", "nope", "-o", str(tmp_path / "x.jsonl")])
    assert bad.exit_code != 0 and "unknown --protocol" in bad.output


@pytest.mark.parametrize("script", [agent_sim_rl, agent_warmup])
def test_dry_run_checks_the_configs_and_prints_the_stages(script, tmp_path: Path, capsys) -> None:
    script.main(["--dry-run", "--out", str(tmp_path), "train.max_steps=1"])
    text = capsys.readouterr().out
    assert "== eval-untrained" in text and "== train-bc-sim" in text and "--protocol tools" in text
    assert "max_steps=1" in text and not any(tmp_path.iterdir())  # a dry run writes nothing
    # GRPO starts from the behaviour-cloned policy; every BC stage reads one conversations file
    assert "== bc: " in text and f"--set model={tmp_path}/train/bc " in text
    assert text.count(f"conversations={tmp_path}/bc_conversations.jsonl") >= 2
    if script is agent_warmup:
        assert "== warmup-cpt" in text and "== eval-warm-bc-sim" in text
        assert "== warm-bc: " in text and f"--set model={tmp_path}/train/warmup-cpt " in text
    with pytest.raises(SystemExit, match="max_step"):  # a typo in the BC stage fails before anything runs
        script.main(["--dry-run", "--out", str(tmp_path), "bc.max_step=1"])
    with pytest.raises(SystemExit, match="learning_rat"):  # a typo in the budget fails before anything runs
        script.main(["--dry-run", "--out", str(tmp_path), "train.learning_rat=1"])


def test_the_gpu_config_loads() -> None:
    cfg = agent_experiments.load_config(ROOT / "configs/agent/experiments_gpu.yaml", [])
    assert cfg.train["use_vllm"] is True and cfg.warmup.rl_mode == "sim"
    with pytest.raises(SystemExit, match="extra"):
        agent_experiments.load_config(ROOT / "configs/agent/experiments_gpu.yaml", ["evals.seeds=1"])


def test_stages_resume_and_refuse_a_changed_command(tmp_path: Path) -> None:
    runner = agent_experiments.Runner(tmp_path)
    marker = tmp_path / "made"
    stage = agent_experiments.Stage("make", [sys.executable, "-c", f"open({str(marker)!r}, 'x').close()"])
    runner.run(stage)
    assert marker.exists() and runner.wall("make") is not None
    runner.run(stage)  # done before: skipped (the command would fail: the file exists)
    with pytest.raises(SystemExit, match="another command"):
        runner.run(agent_experiments.Stage("make", [sys.executable, "-c", "pass"]))
    with pytest.raises(SystemExit, match="failed"):
        runner.run(agent_experiments.Stage("boom", [sys.executable, "-c", "raise SystemExit(3)"]))
    assert not runner.done_file("boom").exists()


def test_a_stage_another_process_runs_is_waited_for(tmp_path: Path) -> None:
    """Two experiments sharing a folder: a stage held by a live process is not run twice;
    when its holder dies without finishing, the stage runs (and its command resumes)."""
    import subprocess

    runner = agent_experiments.Runner(tmp_path, poll_s=0.1)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    runner.lock_file("s").parent.mkdir(parents=True)
    runner.lock_file("s").write_text(str(holder.pid))
    marker = tmp_path / "ran"
    runner.run(agent_experiments.Stage("s", [sys.executable, "-c", f"open({str(marker)!r}, 'x').close()"]))
    assert holder.poll() is not None and marker.exists() and runner.done_file("s").exists()
    assert not runner.lock_file("s").exists()
