"""SFT acceptance on real recorded observations: a rollout is kept only when its content
checks out against the real observation, not merely when its mean rule score is high."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.data.config import SFTConfig
from agentworld.data.sft import make_target, rejection
from agentworld.judge import RuleScorer
from agentworld.models.base import Completion
from agentworld.models.runner import to_prediction
from agentworld.prompts import OBS_CLOSE, OBS_OPEN, THINK_OPEN, format_observation
from agentworld.records.bench import BenchSample
from agentworld.records.select import make_sample
from agentworld.records.trajectory import read_trajectories

# A trajectory recorded in the real terminal sandbox, kept as a fixture so that
# re-recording the local benchmark never changes what these tests check.
LOCAL = Path(__file__).parent / "fixtures" / "recorded" / "terminal-train-6.jsonl"


@pytest.fixture(scope="module")
def sample() -> BenchSample:
    # a recorded `tr | sort | uniq -c | sort -rn` turn: nine real output lines
    traj = next(t for t in read_trajectories(LOCAL).items if t.id == "terminal-train-6")
    return make_sample(traj, 4)


def rollout(text: str):
    return to_prediction(Completion(text=text), index=0, latency_s=0.0, backend="test", model="test")


def judged(sample: BenchSample, observation: str, thought: str | None = "Counting the words.", **config):
    pred = rollout(format_observation(observation, thought))
    judgement = RuleScorer().score_sync(sample, pred)
    return pred, judgement, rejection(sample, pred, judgement, SFTConfig(**config))


def without(text: str, *needles: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not any(n in ln for n in needles))


def test_the_real_observation_is_accepted_with_its_reasoning(sample: BenchSample) -> None:
    pred, judgement, (why, check) = judged(sample, sample.ground_truth)
    assert why is None and check.completeness == 1.0 and check.precision == 1.0
    target = make_target(sample, pred, SFTConfig(target="rollout"))
    assert target.startswith(THINK_OPEN) and "Counting the words." in target
    assert target.rstrip().endswith(OBS_CLOSE) and OBS_OPEN in target


def test_a_rollout_that_drops_real_output_lines_is_rejected(sample: BenchSample) -> None:
    for dropped in (("5 mango",), ("5 mango", "3 lemon")):
        _, judgement, (why, check) = judged(sample, without(sample.ground_truth, *dropped))
        assert judgement.total >= 4.0  # a high mean score: the old threshold of 3.0 kept it
        assert why == "incomplete" and check.completeness < 0.95
    # the echoed command line is content the session determines: missing it is fatal
    _, _, (why, check) = judged(sample, without(sample.ground_truth, "uniq -c"), min_completeness=0.5, threshold=1.0)
    assert why == "determined_content_missing" and check.determined < 1.0


def test_invented_lines_and_missing_reasoning_are_rejected(sample: BenchSample) -> None:
    lines = sample.ground_truth.splitlines()
    padded = "\n".join([*lines[:-1], "      2 melon", "      1 quince", lines[-1]])
    _, _, (why, check) = judged(sample, padded)
    assert why == "invented_content" and check.completeness == 1.0 and check.precision < 0.95
    # reasoning: kept by default, dropped on request, required on request
    pred, _, (why, _) = judged(sample, sample.ground_truth, thought=None)
    assert why is None and make_target(sample, pred, SFTConfig()).startswith(OBS_OPEN)
    assert judged(sample, sample.ground_truth, thought=None, reasoning="require")[2][0] == "no_reasoning"
    pred, _, _ = judged(sample, sample.ground_truth)
    assert make_target(sample, pred, SFTConfig(reasoning="drop")).startswith(OBS_OPEN)
