"""``agentworld agent bc``: behaviour cloning of the tasks' scripted solutions, so a small
policy starts GRPO already calling tools.

Each training task (seeds from ``seed_start``, apart from the evaluation seeds) is played
with its scripted solution through the very episode objects GRPO drives
(:mod:`agentworld.agents.train`): in the real environment, or the simulator with
``mode: sim``. The episode becomes the conversation ``agent train`` and ``agent eval
--protocol tools`` hold: the prompt of :func:`~agentworld.agents.protocol.tool_prompt` with
the reset text appended to the user message, one assistant tool call per solution action
(rendered by the chat template), each result as a ``tool`` message, and a final assistant
reply without a tool call. Conversations go to a JSONL file (``conversations``, one line
per task, resumable: a rerun plays only the missing tasks).

The rows are tokenized here, with the chat template's training variant (TRL's, with
``{% generation %}`` markers) giving the assistant-token mask: the loss covers the
assistant turns and nothing else. TRL's ``SFTTrainer`` turns the mask into labels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from agentworld.agents.protocol import tool_prompt, tool_schemas
from agentworld.agents.tasks import AgentTask
from agentworld.agents.train import AgentFields, TerminalEpisode, ToolEpisode, open_runtime, training_tasks
from agentworld.config import opt
from agentworld.domains.terminal.keys import parse_action
from agentworld.models.base import Message
from agentworld.train.config import TrainerSpec, load_train_config, register_trainer

FINAL_REPLY = "The task is done."
"""The assistant's last message: no tool call, which ends the episode in training and eval."""


class BCFields(AgentFields):
    """Behaviour cloning of the tasks' scripted solutions, in the tool protocol GRPO trains."""

    kind: ClassVar[str] = "agent-bc"

    mode: str = opt("real", "Where the scripted solutions are played: real (the registered envs) or sim (the simulator).")
    conversations: str = opt("", "JSONL of the played conversations (resumable; default: <output_dir>/conversations.jsonl).")

    def conversations_path(self) -> Path:
        return Path(self.conversations or Path(self.output_dir) / "conversations.jsonl")


register_trainer("agent-bc", TrainerSpec(
    "AgentBCConfig", BCFields, "trl:SFTConfig",
    {"learning_rate": 2e-4, "max_length": 2048, "per_device_train_batch_size": 2, "logging_steps": 1,
     "save_steps": 50, "num_train_epochs": 1.0},
))


def load_bc_config(path: Any = None, overrides: dict[str, Any] | None = None) -> Any:
    return load_train_config("agent-bc", path, overrides)


def tool_call(task: AgentTask, action: str) -> tuple[str, dict[str, Any]]:
    """The training episode's tool call that sends ``action``: ``terminal(command)`` for a
    typed command line, ``call_tool(name, arguments)`` for a tool action."""
    if task.domain == "terminal":
        batches = parse_action(action)
        # terminal(command) types one line and presses Enter: nothing else can be cloned into it
        if len(batches) != 1 or batches[0].is_key or not batches[0].keystrokes.endswith("\n"):
            raise ValueError(f"{task.id}: solution action {action!r} is not one command line")
        return "terminal", {"command": batches[0].keystrokes[:-1]}
    call = json.loads(action)
    return "call_tool", {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}), ensure_ascii=False)}


def play_solution(task: AgentTask, runtime: Any) -> dict[str, Any]:
    """Play ``task``'s scripted solution through GRPO's episode object; the conversation and its grade."""
    episode: Any = (TerminalEpisode if task.domain == "terminal" else ToolEpisode)(runtime)
    try:
        text = episode.reset(family_name=task.family, seed=task.seed)
        system, user = tool_prompt(task)
        messages: list[Message] = [system, {**user, "content": user["content"] + text}]
        for action in task.solution:
            name, args = tool_call(task, action)
            result = getattr(episode, name)(**args)
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]})
            messages.append({"role": "tool", "name": name, "content": result})
        messages.append({"role": "assistant", "content": FINAL_REPLY})
        reward = episode.get_reward()
    finally:
        episode._close()
    return {"key": f"{runtime.mode}/{task.id}", "family": task.family, "seed": task.seed, "mode": runtime.mode,
            "reward": reward, "messages": messages, "tools": tool_schemas(task.domain)}


def build_conversations(config: Any, *, world_model: Any = None) -> list[dict[str, Any]]:
    """Every task's conversation: read from ``conversations`` where played before, the rest played now."""
    from agentworld.jsonl import JsonlAppender, iter_json_lines

    path = config.conversations_path()
    done: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line, rec in iter_json_lines(path):
            if isinstance(rec, dict) and "key" in rec:
                done[rec["key"]] = rec
            else:
                print(f"[agent-bc] {path}:{line}: not a conversation, skipped", file=sys.stderr, flush=True)
    tasks = training_tasks(config)
    missing = [t for t in tasks if f"{config.mode}/{t.id}" not in done]
    if missing:
        runtime = open_runtime(config, world_model)
        try:
            with JsonlAppender(path) as out:
                for i, task in enumerate(missing, 1):
                    rec = play_solution(task, runtime)
                    out.append(rec)
                    done[rec["key"]] = rec
                    print(f"[agent-bc] played {task.id} ({i}/{len(missing)}): reward {rec['reward']:.2f}",
                          file=sys.stderr, flush=True)
        finally:
            runtime.close_all()
    return [done[f"{config.mode}/{t.id}"] for t in tasks]


def tokenize(conversation: dict[str, Any], tokenizer: Any, template: str | None) -> dict[str, list[int]]:
    """``input_ids`` and ``assistant_masks`` (1 on the assistant turns' tokens) of one conversation."""
    out = tokenizer.apply_chat_template(conversation["messages"], tools=conversation["tools"], tokenize=True,
                                        return_dict=True, return_assistant_tokens_mask=True, chat_template=template)
    if 1 not in out["assistant_masks"]:
        raise ValueError(f"{conversation['key']}: the chat template marks no assistant token")
    return {"input_ids": list(out["input_ids"]), "assistant_masks": list(out["assistant_masks"])}


def training_template(tokenizer: Any) -> str | None:
    """The chat template with ``{% generation %}`` markers (TRL's training variant), or None
    when the tokenizer's own has them."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if has_generation_markers(tokenizer.chat_template):
        return None
    return get_training_chat_template(tokenizer)


def build_trainer(config: Any, *, world_model: Any = None, callbacks: list[Any] | None = None) -> tuple[Any, Any]:
    """TRL's ``SFTTrainer`` over the tokenized conversations, and the tokenizer to save with it."""
    from datasets import Dataset
    from trl import SFTTrainer

    from agentworld.train.common import (
        TrainInputError,
        TrainInputs,
        load_model,
        load_policy_tokenizer,
        make_trainer,
        resolve_model,
        start_chain,
    )

    path = resolve_model(config.model)
    chain = start_chain(config.model, path)
    tokenizer = load_policy_tokenizer(path, chain, config.chat_template)
    conversations = build_conversations(config, world_model=world_model)
    template = training_template(tokenizer)
    rows = [tokenize(c, tokenizer, template) for c in conversations]
    longest = max(len(r["input_ids"]) for r in rows)
    if config.max_length and longest > config.max_length:
        # SFT cuts rows from the end: the assistant turns, the very tokens to learn, would go first
        raise TrainInputError(f"the longest conversation has {longest} tokens, over max_length {config.max_length}",
                              f"set max_length to {longest} or more")
    inputs = TrainInputs(Dataset.from_list(rows), tokenizer, load_model(chain, config), chain)
    return make_trainer(SFTTrainer, config, inputs, callbacks)


def train_bc(config: Any, *, world_model: Any = None) -> Any:
    """Build (or reuse) the conversations, then clone them to ``config.output_dir``, resuming from its newest checkpoint."""
    from agentworld.train.common import run_trainer

    trainer, tokenizer = build_trainer(config, world_model=world_model)
    return run_trainer(trainer, config, tokenizer)
