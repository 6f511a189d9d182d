"""Behaviour cloning of scripted solutions (``agent bc``): conversations played in the real
terminal sandbox through GRPO's episode objects, the assistant-only loss mask, and a few
SFT steps on a tiny model (checkpoint, saved config, resume, conversations reused)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from agentworld.agents.bc import FINAL_REPLY, build_conversations, load_bc_config, tokenize, tool_call, training_template
from agentworld.agents.protocol import tool_prompt, tool_schemas
from agentworld.agents.tasks import family
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.train.common import load_policy_tokenizer, resolve_model, start_chain

TASKS = ["term-write-file", "term-make-dirs"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.getbasetemp() / "agents-tiny")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two tasks' solutions played once in the real sandbox (seed 1000 each)."""
    path = tmp_path_factory.mktemp("bc") / "conversations.jsonl"
    build_conversations(load_bc_config(None, {"tasks": TASKS, "seeds": 1, "conversations": str(path)}))
    return path


def test_solutions_become_the_tool_protocol_conversation(played: Path) -> None:
    convs = [json.loads(line) for line in played.read_text().splitlines()]
    assert [c["key"] for c in convs] == ["real/term-write-file-1000", "real/term-make-dirs-1000"]
    for conv in convs:
        task = family(conv["family"]).instance(conv["seed"])
        system, user, *turns = conv["messages"]
        assert conv["reward"] == 1.0  # graded by the sandbox, as GRPO's get_reward does
        assert system == tool_prompt(task)[0] and conv["tools"] == tool_schemas("terminal")
        # the reset text (initial state, then the first screen) appended to the task, as TRL does
        assert user["content"].startswith(task.instruction + "\n\n") and user["content"].endswith("root@sandbox:/workspace#")
        calls = [m for m in turns if m.get("tool_calls")]
        assert [m["tool_calls"][0]["function"]["arguments"]["command"] for m in calls] == \
            [tool_call(task, a)[1]["command"] for a in task.solution]
        assert [m["role"] for m in turns] == ["assistant", "tool"] * len(task.solution) + ["assistant"]
        assert turns[-1] == {"role": "assistant", "content": FINAL_REPLY}
        # each result is the sandbox's screen after the command
        assert all("root@sandbox" in m["content"] for m in turns if m["role"] == "tool")


def test_the_loss_mask_covers_exactly_the_assistant_turns(played: Path, tiny: Path) -> None:
    tok = load_policy_tokenizer(tiny, start_chain(str(tiny), resolve_model(str(tiny))), "qwen2.5")
    template = training_template(tok)
    assert template is not None and "{% generation %}" in template.replace("{%- generation %}", "{% generation %}")
    conv = json.loads(played.read_text().splitlines()[1])  # term-make-dirs: three tool calls
    row = tokenize(conv, tok, template)
    ids, mask = row["input_ids"], row["assistant_masks"]
    # the text trained on is the text evaluation renders (the plain template, not the training one)
    plain = tok.apply_chat_template(conv["messages"], tools=conv["tools"], tokenize=False)
    assert tok.decode(ids) == plain
    # what follows each "<|im_start|>assistant" up to its end-of-turn, and nothing else
    expected = "".join(part.removeprefix("assistant") for part in plain.split("<|im_start|>") if part.startswith("assistant"))
    assert expected.count("<tool_call>") == 3 and FINAL_REPLY in expected
    assert tok.decode([i for i, m in zip(ids, mask, strict=True) if m]) == expected
    # masked tokens form one contiguous run per assistant turn
    runs = sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))
    assert runs == 4


@pytest.mark.slow
def test_bc_trains_saves_resumes_and_reuses_conversations(played: Path, tiny: Path, tmp_path: Path) -> None:
    from agentworld.agents.bc import train_bc

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    conversations = tmp_path / "out" / "conversations.jsonl"
    conversations.parent.mkdir()
    conversations.write_text(played.read_text())
    before = conversations.read_text()
    base = {"model": str(tiny), "tasks": TASKS, "seeds": 1, "output_dir": str(tmp_path / "out"), "save_steps": 1,
            "per_device_train_batch_size": 1, "lora": True, "lora_target_modules": ["q_proj", "v_proj"],
            "precision": "fp32", "max_length": 4096}
    first = train_bc(load_bc_config(None, {**base, "max_steps": 1}))
    assert first.global_step == 1 and first.resumed_from is None
    saved = yaml.safe_load((tmp_path / "out" / "checkpoint-1" / "agentworld_train.yaml").read_text())
    assert saved["trainer"] == "agent-bc" and saved["tasks"] == TASKS and saved["mode"] == "real"
    again = train_bc(load_bc_config(None, {**base, "max_steps": 2}))
    assert again.global_step == 2 and again.resumed_from and again.resumed_from.endswith("checkpoint-1")
    assert (tmp_path / "out" / "adapter_model.safetensors").exists()
    assert conversations.read_text() == before  # nothing played again


def test_solutions_played_in_the_simulator(terminal_wm, tmp_path: Path) -> None:
    """``mode: sim``: the same conversation, the results written by the world model."""
    path = tmp_path / "sim.jsonl"
    cfg = load_bc_config(None, {"tasks": ["term-write-file"], "seeds": 1, "mode": "sim", "conversations": str(path)})
    [conv] = build_conversations(cfg, world_model=terminal_wm)
    assert conv["key"] == "sim/term-write-file-1000" and conv["mode"] == "sim" and 0.0 <= conv["reward"] <= 1.0
    assert [m["role"] for m in conv["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv["messages"][3]["content"]  # the simulated screen
    # kept in the conversations file for the next run
    assert json.loads(path.read_text().splitlines()[0])["key"] == conv["key"]
