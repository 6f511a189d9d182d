"""Loss masks under chat templates that rewrite earlier turns (Qwen3-like): every
assistant turn keeps its end-of-turn token in the loss, and nothing else leaks in."""

from __future__ import annotations

import pytest

from agentworld.data.chat import assistant_spans, tokenize_chat
from agentworld.models.tiny import CHAT_TEMPLATE, train_tokenizer

# Like Qwen3's template: reasoning is dropped from assistant turns before the last user
# message, and an assistant turn after it gets a (possibly empty) think block. Rendering
# a prefix of the chat therefore differs from the same turns inside the whole chat.
REWRITING_TEMPLATE = """\
{%- set ns = namespace(last_query=-1) -%}
{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- set content = m.content -%}{%- set reasoning = '' -%}
{%- if '</think>' in content -%}
{%- set reasoning = content.split('</think>')[0].split('<think>')[-1].strip('\\n') -%}
{%- set content = content.split('</think>')[-1].lstrip('\\n') -%}
{%- endif -%}
{%- if loop.index0 > ns.last_query -%}
{{- '<|im_start|>assistant\\n<think>\\n' + reasoning + '\\n</think>\\n\\n' + content -}}
{%- else -%}
{{- '<|im_start|>assistant\\n' + content -}}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- else -%}
{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}
"""

CHAT = [
    {"role": "system", "content": "You simulate a shell."},
    {"role": "user", "content": "ls"},
    {"role": "assistant", "content": "README.md  src"},
    {"role": "user", "content": "cat README.md"},
    {"role": "assistant", "content": "# Demo project"},
    {"role": "user", "content": "pwd"},
    {"role": "assistant", "content": "/workspace"},
]


@pytest.fixture(scope="module")
def tokenizer():
    texts = [m["content"] for m in CHAT] * 3 + ["<think>", "</think>", "assistant user system"]
    return train_tokenizer(texts, vocab_size=300)


def loss_pieces(tok, chat, loss_turns=None) -> list[str]:
    """The decoded runs of consecutive loss tokens."""
    enc = tokenize_chat(tok, chat, loss_turns)
    runs, cur = [], []
    for t, m in zip(enc.input_ids, enc.loss_mask, strict=True):
        if m:
            cur.append(t)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    if cur:
        runs.append(tok.decode(cur))
    return runs


def test_template_rewrites_earlier_turns(tokenizer) -> None:
    tokenizer.chat_template = REWRITING_TEMPLATE
    prefix = tokenizer.apply_chat_template(CHAT[:3], tokenize=False)
    full = tokenizer.apply_chat_template(CHAT, tokenize=False)
    assert not full.startswith(prefix)  # the case the fallback exists for


def test_every_end_of_turn_token_is_in_the_loss(tokenizer) -> None:
    tokenizer.chat_template = REWRITING_TEMPLATE
    assert loss_pieces(tokenizer, CHAT) == [
        "README.md  src<|im_end|>\n",
        "# Demo project<|im_end|>\n",
        "/workspace<|im_end|>\n",  # prefix-stable: its empty think block is in the prompt
    ]
    enc = tokenize_chat(tokenizer, CHAT)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    in_loss = [m for t, m in zip(enc.input_ids, enc.loss_mask, strict=True) if t == im_end]
    assert in_loss == [0, 0, 1, 0, 1, 0, 1]  # system, user, assistant, user, assistant, user, assistant


def test_only_selected_turns_are_in_the_loss(tokenizer) -> None:
    tokenizer.chat_template = REWRITING_TEMPLATE
    assert loss_pieces(tokenizer, CHAT, {1}) == ["# Demo project<|im_end|>\n"]
    assert loss_pieces(tokenizer, CHAT, {0, 2}) == [
        "README.md  src<|im_end|>\n", "/workspace<|im_end|>\n"
    ]


def test_prefix_stable_template_spans_are_unchanged(tokenizer) -> None:
    tokenizer.chat_template = CHAT_TEMPLATE
    text, spans = assistant_spans(tokenizer, CHAT)
    assert [text[a:b] for a, b in spans] == [
        "README.md  src<|im_end|>\n", "# Demo project<|im_end|>\n", "/workspace<|im_end|>\n"
    ]


def test_rewritten_content_is_a_clear_error(tokenizer) -> None:
    tokenizer.chat_template = REWRITING_TEMPLATE
    chat = CHAT[:3] + [{"role": "assistant", "content": "<think>\nhm\n</think>\n\nok"}] + CHAT[3:]
    chat[3], chat[4] = chat[4], chat[3]  # a reasoning turn that the template rewrites
    with pytest.raises(ValueError, match="does not reproduce assistant message"):
        tokenize_chat(tokenizer, chat)
