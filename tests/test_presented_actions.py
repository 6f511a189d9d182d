"""Actions as published AgentWorldBench records present them: read the same as bare ones.

Published user turns frame the action (``### Turn 3``, optionally the current state,
``**Action:**``, a fenced block). Every reader of actions -- the rule scorer, the retrieval
floor, the ledger, the domains' effects, masking and filters, the perturbation targets, the
leakage check -- must give a presented record what it gives the same record with bare
actions. Real samples of every recorded domain (benchmarks/local), android from the
published-format fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld.data.filters import called_tools, is_empty_action
from agentworld.data.masking import trajectory_turn_keys, turn_stats
from agentworld.data.split import bench_trajectories
from agentworld.domains import action_effects
from agentworld.domains.presented import action_of, present, read_presented, tool_call
from agentworld.domains.terminal import parse_action, read_batches, typed_text
from agentworld.domains.terminal.screen import PROMPT_START
from agentworld.envs.web.actions import parse_action as parse_web_action
from agentworld.judge.rules import score_observation
from agentworld.models import load_backend
from agentworld.models.retrieval import load_turns
from agentworld.prompts import sample_messages
from agentworld.records.bench import BenchSample, load_bench_dir, write_bench_dir
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories
from agentworld.sim.ledger import LedgerState, ledger_for
from agentworld.sim.perturb import action_target
from agentworld.tool_calls import read_tool_call

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / "benchmarks" / "local"
FIXTURES = ROOT / "tests" / "fixtures" / "awbench"
DOMAINS = ("terminal", "mcp", "search", "swe", "web", "os")
"""The recorded domains (benchmarks/local); android is read from the fixtures."""
PER_DOMAIN = 6


@pytest.fixture(scope="module")
def samples() -> dict[str, list[BenchSample]]:
    """``PER_DOMAIN`` samples of each domain, spread over its file (later turns, more history)."""
    by_domain = load_bench_dir(LOCAL, strict=True).by_domain()
    out = {}
    for d in DOMAINS:
        pool = by_domain[d]
        out[d] = [pool[i * len(pool) // PER_DOMAIN] for i in range(PER_DOMAIN)]
    return out


def _presented(s: BenchSample) -> BenchSample:
    shown = s.with_presented_actions()
    assert shown.turn_prompt != s.turn_prompt and shown.turn_prompt.startswith(f"### Turn {s.turn_idx}\n")
    return shown


# -- the parser ----------------------------------------------------------------------------

def _actions() -> list[tuple[str, str]]:
    """One real action per domain, android's from the published-format fixtures."""
    out = []
    for d in DOMAINS:
        first = json.loads((LOCAL / f"{d}_test.jsonl").read_text().splitlines()[0])
        out.append((d, first["current_prompt"]))
    first = json.loads((FIXTURES / "android_test.jsonl").read_text().splitlines()[0])
    return [*out, ("android", first["current_prompt"])]


ACTIONS = _actions()


def _variants(action: str, domain: str) -> dict[str, str]:
    """The presented forms a reader meets: headers, labels, fences, blank lines, CRLF."""
    lang = "python" if domain in ("os", "web") else "json"
    out = {
        "published": f"### Turn 3\n**Action:**\n```{lang}\n{action}\n```",
        "with state": f"### Turn 3\n**Current State:**\nURL: http://localhost/\n[1] button 'Go'\n\n**Action:**\n```{lang}\n{action}\n```",
        "state holding a fence": f"## Turn 2\n### Current State\n```\n**Action:**\nnot this\n```\n### Action\n```{lang}\n{action}\n```\n",
        "two-hash header": f"## Turn 12\n\n**Action:**\n\n```{lang}\n{action}\n```\n\n",
        "bold header": f"**Turn 3**\n**Action**:\n```{lang}\n{action}\n```",
        "no header": f"**Action:**\n```{lang}\n{action}\n```",
        "no label": f"### Turn 3\n```{lang}\n{action}\n```",
        "unlabelled fence": f"### Turn 3\n**Action:**\n```\n{action}\n```",
        "other language tag": f"### Turn 3\n**Action:**\n```text\n{action}\n```",
        "tilde fence": f"### Turn 3\nAction:\n~~~\n{action}\n~~~",
        "fence only": f"```{lang}\n{action}\n```",
        "made by present": present(action, domain, turn=3, state="root@box:/w#"),
    }
    out["crlf"] = out["with state"].replace("\n", "\r\n")
    if "\n" not in action and "`" not in action:
        out["inline code"] = f"### Turn 3\n**Action:** `{action}`"
        out["inline"] = f"### Turn 3\n**Action:** {action}"
    return out


@pytest.mark.parametrize(("domain", "action"), ACTIONS, ids=[d for d, _ in ACTIONS])
def test_every_presented_form_reads_back_the_bare_action(domain: str, action: str) -> None:
    for name, text in _variants(action, domain).items():
        # CRLF: the action's own line breaks come back as LF, as a renderer shows them.
        assert action_of(text) == action, name
        assert read_presented(text).framed, name
    assert read_presented(_variants(action, domain)["with state"]).state == "URL: http://localhost/\n[1] button 'Go'"
    assert read_presented(_variants(action, domain)["published"]).turn == 3


@pytest.mark.parametrize(("domain", "action"), ACTIONS, ids=[d for d, _ in ACTIONS])
def test_bare_actions_come_back_byte_for_byte(domain: str, action: str) -> None:
    for text in (action, f"  {action}\n", action.replace("\n", "\r\n")):
        assert action_of(text) == text
        assert not read_presented(text).framed


def test_text_that_only_looks_like_a_frame_later_is_bare() -> None:
    program = "# Turn the volume down\nimport pyautogui\npyautogui.press('volumedown')"
    assert action_of(program) == program  # a comment is no turn header: no number
    assert action_of("action = 'click'\nprint(action)") == "action = 'click'\nprint(action)"
    assert action_of("### Actions\nls") == "### Actions\nls"


def test_present_picks_a_fence_longer_than_the_actions_own() -> None:
    action = json.dumps([{"keystrokes": "cat > a.md << EOF\n```\ncode\n```\nEOF\n", "duration": 1}], indent=1)
    raw = action.replace("\\n", "\n")  # raw line breaks in strings, as some agents send them
    shown = present(raw, "terminal", turn=4)
    assert "\n````json\n" in shown and action_of(shown) == raw


def test_each_domain_reads_its_structured_form_through_the_frame() -> None:
    for domain, action in ACTIONS:
        shown = present(action, domain, turn=2)
        if domain == "terminal":
            assert read_batches(shown) == parse_action(action) and typed_text(shown) == typed_text(action)
            assert typed_text(shown) and "Turn" not in typed_text(shown)
        elif domain in ("mcp", "search", "swe"):
            assert tool_call(shown) == read_tool_call(action) is not None
            assert read_tool_call(shown) is None  # the strict JSON reader alone cannot
        elif domain == "web":
            assert parse_web_action(action_of(shown)) == parse_web_action(action)
        assert action_effects(domain, shown, "") == action_effects(domain, action, "")


# -- the rule scorer -----------------------------------------------------------------------

def _other_command_echo(s: BenchSample) -> str | None:
    """The real screen with its echo line showing another command (``ls -la``)."""
    lines = s.ground_truth.split("\n")
    typed = typed_text(s.action).split("\n", 1)[0]
    if not typed.strip() or typed not in lines[0]:
        return None
    return "\n".join([lines[0].replace(typed, "ls -la /srv"), *lines[1:]])


@pytest.mark.parametrize("domain", DOMAINS)
def test_rule_scores_are_the_same_for_presented_and_bare_records(samples, domain: str) -> None:
    group = samples[domain]
    for k, s in enumerate(group):
        shown = _presented(s)
        wrong = group[(k + 1) % len(group)].ground_truth  # another turn's real observation
        for pred in (s.ground_truth, wrong, ""):
            assert score_observation(shown, pred) == score_observation(s, pred)
        assert set(score_observation(shown, s.ground_truth)[0].values()) == {5}


def test_the_echo_check_runs_on_presented_terminal_records(samples) -> None:
    checked = 0
    for s in samples["terminal"]:
        wrong = _other_command_echo(s)
        if wrong is None:
            continue
        bare, shown = score_observation(s, wrong), score_observation(_presented(s), wrong)
        assert bare == shown
        assert shown[1]["off_action"] and shown[0]["consistency"] == 1
        checked += 1
    assert checked >= 3


def test_a_copy_of_the_presented_action_is_no_answer(samples) -> None:
    for domain in DOMAINS:
        s = samples[domain][0]
        shown = _presented(s)
        for copy in (s.action, shown.action):
            assert score_observation(shown, copy)[1].get("reason") == "action copy", (domain, copy[:60])


# -- the retrieval floor -------------------------------------------------------------------

@pytest.fixture(scope="module")
def floor():
    """The floor over the recorded trajectories (test-split ones are never indexed)."""
    return load_backend("retrieval", source=LOCAL / "trajectories")


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_floor_answers_a_presented_request_as_its_bare_twin(samples, floor, domain: str) -> None:
    for s in samples[domain]:
        shown = _presented(s)
        bare_msgs, shown_msgs = sample_messages(s), sample_messages(shown)
        assert shown_msgs != bare_msgs
        [(score, turn)] = floor.nearest(bare_msgs, domain=domain)
        assert floor.nearest(shown_msgs, domain=domain) == [(score, turn)]
        assert floor.answers(shown_msgs, 1, domain) == floor.answers(bare_msgs, 1, domain)


def test_the_floor_rewrites_the_echo_of_a_presented_terminal_request(samples, floor) -> None:
    rewritten = 0
    for s in samples["terminal"]:
        typed = typed_text(s.action).split("\n", 1)[0]
        [text] = floor.answers(sample_messages(_presented(s)), 1, "terminal")
        [(_, past)] = floor.nearest(sample_messages(s), domain="terminal")
        past_typed = typed_text(past.action).split("\n", 1)[0]
        echoed = any((m := PROMPT_START.match(row)) and row[m.end():] == past_typed for row in past.observation.split("\n"))
        if typed.strip() and past_typed.strip() and past_typed != typed and echoed:
            # The past screen's echo line shows this request's command, not the frame's words.
            assert typed in text and "Turn" not in text
            rewritten += 1
    assert rewritten >= 1


def test_indexed_presented_samples_are_their_bare_turns(samples, tmp_path: Path) -> None:
    group = [s for d in DOMAINS for s in samples[d][:2]]
    write_bench_dir(tmp_path / "bare", group)
    write_bench_dir(tmp_path / "shown", [_presented(s) for s in group])
    assert load_turns(tmp_path / "shown") == load_turns(tmp_path / "bare")


# -- the ledger, masking, filters, perturbations, the leakage check --------------------------

def _trajectories(domain: str, n: int = 40) -> list[Trajectory]:
    return read_trajectories(LOCAL / "trajectories" / f"{domain}.jsonl", strict=True).items[:n]


def _show(traj: Trajectory) -> Trajectory:
    return traj.model_copy(update={"turns": [
        t.model_copy(update={"action": present(t.action, traj.domain, turn=i)}) for i, t in enumerate(traj.turns, 1)]})


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_ledger_records_and_checks_presented_actions_as_bare_ones(domain: str) -> None:
    facts = 0
    for traj in _trajectories(domain):
        rules = ledger_for(domain)
        bare, shown = LedgerState(), LedgerState()
        for t, p in zip(traj.turns, _show(traj).turns, strict=True):
            assert rules.check(shown, p.action, t.observation) == rules.check(bare, t.action, t.observation)
            rules.update(bare, t.action, t.observation)
            rules.update(shown, p.action, t.observation)
            assert shown == bare
            # Counted at every step, where the states are compared: a later program run (swe's
            # `python3 -m pytest`, `python3 reproduce.py`) drops what the ledger knew (9e811ef),
            # so a session's end state may hold no facts although its steps did.
            facts += len(bare.files) + len(bare.env) + len(bare.ids) + len(bare.rows) + len(bare.memory) + len(
                bare.pages) + len(bare.form_values) + len(bare.deleted)
    # The comparison means something only where actions established facts.
    assert facts or domain == "os"


def test_domain_effects_read_presented_actions(samples) -> None:
    found = 0
    for domain in ("terminal", "mcp", "search", "swe"):
        for traj in _trajectories(domain, 10):
            for t in traj.turns:
                bare = action_effects(domain, t.action, t.observation)
                assert action_effects(domain, present(t.action, domain, turn=1), t.observation) == bare
                found += len(bare.ops)
    assert found


def test_masking_and_filters_read_presented_actions() -> None:
    trajs = [t for d in DOMAINS for t in _trajectories(d, 3)]
    bare, shown = list(trajectory_turn_keys(trajs)), list(trajectory_turn_keys([_show(t) for t in trajs]))
    assert shown == bare
    assert [turn_stats(a, o) for _, _, a, o in shown] == [turn_stats(a, o) for _, _, a, o in bare]
    for empty in ("[]", "{}", ""):
        assert is_empty_action(present(empty, "terminal", turn=5))
    assert not is_empty_action(present('[{"keystrokes": "ls\\n", "duration": 1}]', "terminal", turn=5))
    for traj in _trajectories("mcp", 5):
        for t in traj.turns:
            assert called_tools(present(t.action, "mcp", turn=1)) == called_tools(t.action) != [None]


def test_perturbation_targets_read_presented_actions() -> None:
    for domain in ("terminal", "mcp", "swe", "search"):
        for t in _trajectories(domain, 3)[0].turns:
            target = action_target(t.action)
            assert target and action_target(present(t.action, domain, turn=1)) == target


def test_the_leakage_check_rebuilds_bare_turns_from_presented_samples(samples, tmp_path: Path) -> None:
    group = [s for d in DOMAINS for s in samples[d][:2]]
    write_bench_dir(tmp_path / "bare", group)
    write_bench_dir(tmp_path / "shown", [_presented(s) for s in group])
    assert bench_trajectories([tmp_path / "shown"]) == bench_trajectories([tmp_path / "bare"])


def test_presenting_keeps_the_record_and_reading_undoes_it(samples) -> None:
    for d in DOMAINS:
        s = samples[d][0]
        shown = _presented(s)
        assert list(shown.to_record()) == list(s.to_record())
        assert shown.with_bare_actions().to_record() == s.to_record()
        assert s.with_bare_actions() is s
        assert [Turn(action=a, observation=o) for a, o in shown.with_bare_actions().history()] == [
            Turn(action=a, observation=o) for a, o in s.history()]
