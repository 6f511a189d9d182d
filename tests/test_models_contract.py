"""The output contract forced on the backends whose prompt we render, on a tiny real checkpoint."""

from __future__ import annotations

import asyncio

import pytest

from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.models.contract import OBSERVATION_BLOCK, AnswerBlock
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.parsing import Status, parse_prediction
from agentworld.prompts import OBS_CLOSE, OBS_OPEN, build_messages, build_system_prompt

HISTORY = [('[{"keystrokes": "ls\\n", "duration": 1.0}]', "README.md  src  tests\nroot@sandbox:/workspace#")]


def _msgs(i: int) -> list[dict[str, str]]:
    return build_messages(build_system_prompt("terminal"), HISTORY, f'[{{"keystrokes": "cat file{i}\\n"}}]')


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    backend = load_backend("hf", path=str(build_tiny_checkpoint(tmp_path_factory.mktemp("tiny"))), max_batch=4)
    yield backend
    asyncio.run(backend.aclose())


def test_the_prefix_is_forced_unless_the_template_opens_reasoning() -> None:
    assert OBSERVATION_BLOCK.prefix("<|im_start|>assistant\n") == OBS_OPEN
    # the contract text in a system prompt closes its think tag: still forced
    assert OBSERVATION_BLOCK.prefix("reason inside <think>...</think>\n<|im_start|>assistant\n") == OBS_OPEN
    assert OBSERVATION_BLOCK.prefix("<|im_start|>assistant\n<think>\n") == ""
    assert OBSERVATION_BLOCK.cut("a\n</predicted_observation>\nmore") == ("a\n</predicted_observation>", True)
    assert OBSERVATION_BLOCK.cut("a\nb") == ("a\nb", False)


def test_world_model_answers_always_open_the_block(tiny) -> None:
    """A random model never writes the tags by itself: every answer still parses as an
    opened block (complete or cut off), never as missing or untagged text."""
    wm = WorldModel(tiny)
    for max_tokens in (4, 40):
        for i in range(3):
            [pred] = wm.predict_sync(_msgs(i), GenerationConfig(max_tokens=max_tokens))
            assert pred.error is None and pred.text.startswith(OBS_OPEN)
            assert parse_prediction(pred.text).status in (Status.complete, Status.truncated)
            assert pred.status in (Status.complete, Status.truncated, Status.unclosed), pred.text
    [free] = tiny.generate_once(_msgs(0), GenerationConfig(max_tokens=40))
    assert not free.text.startswith(OBS_OPEN)  # policies and judges call complete(): free text
    assert parse_prediction(free.text).status in (Status.missing, Status.untagged)


def test_generation_stops_at_the_closing_tag_and_keeps_it(tiny) -> None:
    greedy = GenerationConfig(max_tokens=40)
    [opened] = asyncio.run(tiny.complete_block(_msgs(1), greedy, OBSERVATION_BLOCK))
    body = opened.text[len(OBS_OPEN):]
    assert opened.finish_reason == "length" and OBS_CLOSE not in body and len(body) > 12
    close = body[6:10]  # a "closing tag" this model writes, to see where generation stops
    [closed] = asyncio.run(tiny.complete_block(_msgs(1), greedy, AnswerBlock(OBS_OPEN, close)))
    assert closed.finish_reason == "stop" and closed.text.endswith(close)
    assert closed.text == OBS_OPEN + body[: body.index(close) + len(close)]
    assert (closed.completion_tokens or 0) < (opened.completion_tokens or 0)
