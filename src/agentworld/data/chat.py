"""Chat serialization and tokenization with a per-token loss mask.

A conversation is rendered once with the target model's own chat template and
tokenized with character offsets. The span of assistant message ``i`` runs from the end
of the rendering of ``messages[:i]`` with the generation prompt to the end of the
rendering of ``messages[:i + 1]``: the answer text plus the template's end-of-turn
tokens, so the model also learns to stop. Templates that rewrite earlier turns get the
content itself plus the end-of-turn text the template writes after the last turn (see
:func:`assistant_spans`). A token is in the loss when it starts inside the span of an
assistant message selected for the loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentworld.prompts import Message, build_messages, record_response
from agentworld.records.trajectory import Trajectory


@dataclass
class TokenizedChat:
    input_ids: list[int]
    loss_mask: list[int]
    """1 where the token is trained on, 0 where it is context only."""

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def loss_tokens(self) -> int:
        return sum(self.loss_mask)


def trajectory_chat(traj: Trajectory, system: str) -> list[Message]:
    """Non-thinking serialization (CPT): system, then user = action, assistant =
    observation for every turn.

    Every observation is in the stored record form (``**Environment Observation:**``
    line, then the text), exactly as the history of an inference prompt replays it:
    each CPT turn is the context of the next one, so they must look alike. The
    contract's tagged form (optional ``<think>``, then the observation block) is the
    target of single-turn SFT and RL samples, whose history is in record form too.
    """
    history = [(t.action, t.observation) for t in traj.turns[:-1]]
    last = traj.turns[-1]
    messages = build_messages(system, history, last.action)
    messages.append({"role": "assistant", "content": record_response(last.observation)})
    return messages


def _render(tokenizer: Any, messages: Sequence[Message], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=generation_prompt
    )


def assistant_spans(tokenizer: Any, messages: Sequence[Message]) -> tuple[str, list[tuple[int, int]]]:
    """The rendered text and the character span of every assistant message, in order."""
    full = _render(tokenizer, messages, False)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        start_text = _render(tokenizer, messages[:i], True)
        end_text = _render(tokenizer, messages[: i + 1], False)
        if full.startswith(end_text) and end_text.startswith(start_text):
            start, end = len(start_text), len(end_text)
        else:
            # Templates that rewrite earlier turns (Qwen3 drops reasoning from history
            # and adds an empty think block to the last turn only) are not prefix-stable:
            # find the content itself, then the end-of-turn text that follows it.
            start = full.find(m["content"], cursor)
            if start < 0:
                raise ValueError(
                    f"the chat template does not reproduce assistant message {i} verbatim; "
                    "use a tokenizer whose template keeps message content as is"
                )
            end = start + len(m["content"])
            end += _common_prefix(full, end, end_of_turn(end_text, m["content"]))
        spans.append((start, end))
        cursor = end
    return full, spans


def end_of_turn(rendered: str, content: str) -> str:
    """What the template writes after the last assistant message's content in
    ``rendered`` (``<|im_end|>\\n`` for ChatML): the same text then closes every
    earlier assistant turn, so the model learns to stop after each one."""
    at = rendered.rfind(content)
    return rendered[at + len(content) :] if at >= 0 else ""


def _common_prefix(text: str, at: int, prefix: str) -> int:
    """How many leading characters of ``prefix`` ``text`` has at ``at``."""
    if text.startswith(prefix, at):
        return len(prefix)
    n = 0
    while n < len(prefix) and at + n < len(text) and text[at + n] == prefix[n]:
        n += 1
    return n


def tokenize_chat(tokenizer: Any, messages: Sequence[Message], loss_turns: set[int] | None = None) -> TokenizedChat:
    """Tokenize ``messages``; assistant messages whose ordinal (0-based, counting only
    assistant messages) is in ``loss_turns`` are in the loss (all when None)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("a fast tokenizer (tokenizer.json) is needed for character offsets")
    text, spans = assistant_spans(tokenizer, messages)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    selected = [s for k, s in enumerate(spans) if loss_turns is None or k in loss_turns]
    mask = []
    j = 0
    for start, _end in enc["offset_mapping"]:
        while j < len(selected) and start >= selected[j][1]:
            j += 1
        inside = j < len(selected) and selected[j][0] <= start < selected[j][1]
        mask.append(1 if inside else 0)
    return TokenizedChat(list(enc["input_ids"]), mask)


@lru_cache(maxsize=4)
def load_tokenizer(name_or_path: str) -> Any:
    """A fast tokenizer with a chat template from a checkpoint folder, ``folder/file.gguf``,
    or ``smol`` (the embedded SmolLM2 model file). Never downloads."""
    from transformers import AutoTokenizer

    if name_or_path == "smol":
        from agentworld.models.smol import gguf_path

        name_or_path = str(gguf_path())
    path = Path(name_or_path)
    if path.suffix == ".gguf":
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
    elif path.exists():
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    else:
        raise FileNotFoundError(f"tokenizer not found: {name_or_path} (a checkpoint folder, a .gguf file or 'smol')")
    if not tok.chat_template:
        raise ValueError(f"tokenizer {name_or_path} has no chat template")
    return tok
