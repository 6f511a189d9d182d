"""System prompts and chat messages for world models.

The system prompt is our own wording around the five parts of the simulation context
(task description, action space, initial state, demonstrations, simulation
instruction) and the output contract. A benchmark sample that carries its own
``system_str`` is used verbatim. Every change to the wording or to how messages are
assembled bumps ``PROMPT_VERSION`` so cached responses from older prompts are never
reused.

Messages follow the published evaluation (docs/design.md#context-and-messages): earlier observations are
replayed as records store them (a ``**Environment Observation:**`` line, then the
text), never re-wrapped; the model answers under the output contract (optional
``<think>``, then the ``<predicted_observation>`` block).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentworld.domains import get_domain

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.trajectory import SimContext, Trajectory

# 2: history replayed as stored records (marker line, no tags), no empty system message.
PROMPT_VERSION = "aw-prompt-2"
OBS_OPEN, OBS_CLOSE = "<predicted_observation>", "</predicted_observation>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
MARKER = "**Environment Observation:**"
"""The line published AgentWorldBench responses start with; stripped before judging."""

Message = dict[str, str]

# Wordings of the role and the contract. SFT samples one per example so the model does
# not overfit one phrasing; inference uses variant 0.
_ROLES = (
    "You are a world model. You do not play the agent: you play {environment}. The user "
    "messages are the agent's actions; answer each one with the observation the real "
    "environment would return, exactly as it would print it, consistent with everything "
    "that happened earlier in this session.",
    "Act as the environment in an agent episode. The environment is {environment}. Each "
    "user message is an action taken by an agent; reply with the next observation that the "
    "real system would produce. Never explain or comment on the action; only reproduce "
    "the environment's output, faithful to the state built up so far.",
    "Simulate {environment}. You receive an agent's actions one by one and must predict "
    "what the environment shows next, byte for byte where the result is determined by the "
    "session so far and realistically where it depends on state you cannot see.",
)
_CONTRACTS = (
    "You may reason first inside {think_open}...{think_close}. Then write the observation, "
    "and nothing else, inside {obs_open}...{obs_close}. Do not address the reader, do not "
    "describe your answer, do not judge its quality.",
    "Output format: optional private reasoning in {think_open}...{think_close}, followed by "
    "the observation wrapped in {obs_open}...{obs_close}. The wrapped text is shown to the "
    "agent as is, so it must contain only what the environment prints.",
    "Put any deliberation inside {think_open}...{think_close}; put the predicted "
    "observation inside {obs_open}...{obs_close}. Text outside these blocks is discarded.",
)
NUM_VARIANTS = len(_ROLES)


def _section(title: str, body: str | None) -> str:
    return f"## {title}\n{body.strip()}\n" if body and body.strip() else ""


INITIAL_STATE_TITLE = "Initial state of the environment"


def prompt_section(system: str, title: str) -> str:
    """The body of one ``## title`` section of a system prompt written by
    :func:`build_system_prompt` (empty when the prompt has none, as published prompts
    written another way may not)."""
    head = f"## {title}\n"
    start = system.find(head)
    if start < 0 or (start and system[start - 1] != "\n"):
        return ""
    body = system[start + len(head):]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip()


def action_space_text(domain: str, action_space: str | None, tools: list[dict] | None) -> str:
    spec = get_domain(domain)
    text = action_space or spec.action_space
    if tools:
        schemas = json.dumps(tools, ensure_ascii=False, indent=1)
        text = f"{text}\n\nTool schemas:\n{schemas}"
    return text


def build_system_prompt(domain: str, context: SimContext | None = None, *, variant: int = 0) -> str:
    """Our system prompt: role, the five context parts (none: the domain's defaults),
    observation format and contract."""
    spec = get_domain(domain)
    v = variant % NUM_VARIANTS
    ctx = context
    parts = [
        _ROLES[v].format(environment=spec.environment) + "\n",
        _section("Task the agent is working on", ctx.task_description if ctx else ""),
        _section("Action space", action_space_text(spec.name, ctx.action_space if ctx else None,
                                                   ctx.tools if ctx else None)),
        _section(INITIAL_STATE_TITLE, ctx.initial_state if ctx else None),
        _section("Demonstrations", ctx.demonstrations if ctx else None),
        _section("Simulation instruction (follow it in your observations)",
                 ctx.simulation_instruction if ctx else None),
        _section("Observation format", spec.observation_format),
        _section(
            "Output contract",
            _CONTRACTS[v].format(
                think_open=THINK_OPEN, think_close=THINK_CLOSE, obs_open=OBS_OPEN, obs_close=OBS_CLOSE
            ),
        ),
    ]
    return "\n".join(p for p in parts if p).strip() + "\n"


def trajectory_system_prompt(traj: Trajectory, *, variant: int = 0) -> str:
    return build_system_prompt(traj.domain, traj.context, variant=variant)


def format_observation(observation: str, reasoning: str | None = None) -> str:
    """The assistant text for an observation under the output contract: what a world
    model answers, and the target of the current turn in SFT and RL data."""
    think = f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n" if reasoning else ""
    return f"{think}{OBS_OPEN}\n{observation}\n{OBS_CLOSE}"


def record_response(observation: str) -> str:
    """An observation as AgentWorldBench records store it: the marker line, then the text.

    Already-marked text is returned unchanged, so re-encoding a file twice is harmless.
    """
    if observation.lstrip().startswith(MARKER):
        return observation
    return f"{MARKER}\n{observation}"


def chat_messages(system: str, history: Sequence[tuple[str, str]], action: str) -> list[Message]:
    """The published construction, the one place messages are assembled.

    A system message only when ``system`` is non-empty (verbatim), then each earlier
    turn as user = action, assistant = response, both verbatim, then the action to
    answer. Callers pass responses in their stored form (marker included).
    """
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    for act, resp in history:
        messages.append({"role": "user", "content": act})
        messages.append({"role": "assistant", "content": resp})
    messages.append({"role": "user", "content": action})
    return messages


def build_messages(
    system: str, history: Sequence[tuple[str, str]], action: str
) -> list[Message]:
    """Messages from plain observations (trajectories, live sessions, the simulator).

    Each earlier observation is replayed in the stored record form (marker line, then
    the text), so a model sees the same context whether its history comes from a
    benchmark record, a trajectory or its own earlier answers.
    """
    return chat_messages(system, [(a, record_response(o)) for a, o in history], action)


def sample_messages(sample: BenchSample) -> list[Message]:
    """Messages for a benchmark record, exactly as the published evaluation sends them:
    ``prompt[i]``/``response[i]`` verbatim for i < turn_idx - 1, then
    ``prompt[turn_idx - 1]``; ``system_str`` only when non-empty."""
    return chat_messages(sample.system_str, sample.stored_history(), sample.turn_prompt)


def trajectory_messages(traj: Trajectory, turn_idx: int, *, variant: int = 0) -> list[Message]:
    """Messages that ask for the observation of turn ``turn_idx`` (1-based): the same as
    those of the benchmark record that evaluates that turn."""
    from agentworld.records.select import make_sample

    if not 1 <= turn_idx <= len(traj.turns):
        raise IndexError(f"turn_idx {turn_idx} out of range 1..{len(traj.turns)}")
    return sample_messages(make_sample(traj, turn_idx, system_str=trajectory_system_prompt(traj, variant=variant)))
