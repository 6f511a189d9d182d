"""``check_env`` over every registered environment, and the checker against broken ones.

A new environment joins by registering: it is checked with no constructor arguments and
the default probe action unless it has an entry in ``SETUPS`` below.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentworld.envs import Env, EnvCheckError, EpisodeOver, Reset, Step, check_env, check_registered, registered
from agentworld.envs.checker import DEFAULT_ACTION
from agentworld.records.trajectory import SimContext

pytestmark = pytest.mark.timeout(600)


@dataclass
class Setup:
    kwargs: dict[str, Any] = field(default_factory=dict)
    actions: list[str] = field(default_factory=lambda: [DEFAULT_ACTION])
    options: dict[str, Any] | None = None
    ends: bool = False
    """Whether ``actions`` reach the end of the episode (so EpisodeOver is exercised)."""


def _call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def _keys(text: str) -> str:
    return json.dumps([{"keystrokes": text, "duration": 5.0}])


def _need_sandbox() -> None:
    from agentworld.envs.sandbox import SandboxUnavailable, ensure_rootfs
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
        ensure_rootfs(build=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"sandbox prerequisites missing: {exc}")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup.sh)")


def _terminal(tmp_path: Path) -> Setup:
    _need_sandbox()
    # `exit` ends the shell: terminated, so the step after it must raise.
    return Setup(actions=[_keys("echo conformance\n"), _keys("exit\n")], ends=True)


def _swe(tmp_path: Path) -> Setup:
    _need_sandbox()
    from agentworld.envs.swe import tool_call

    return Setup(kwargs={"max_steps": 1}, options={"repo": "inflection"},
                 actions=[tool_call("bash", command="git status --short")], ends=True)


def _mcp(tmp_path: Path) -> Setup:
    from agentworld.envs.mcp import missing_servers

    if problems := missing_servers(["filesystem"]):
        pytest.skip("MCP prerequisites missing: " + "; ".join(problems))
    return Setup(kwargs={"servers": ["filesystem"], "root": tmp_path / "mcp"},
                 actions=[_call("list_directory", path="/workspace/files"), DEFAULT_ACTION])


def _search(tmp_path: Path) -> Setup:
    from agentworld.envs.search import CorpusConfig, build_corpus
    from agentworld.envs.search.sources import available_sources

    if missing := [s for s, ok in available_sources().items() if not ok]:
        pytest.skip(f"search corpus sources not installed: {missing} (scripts/setup.sh)")
    build_corpus(tmp_path / "corpus", CorpusConfig(max_pages=5))
    return Setup(kwargs={"corpus": tmp_path / "corpus"}, options={"task": "find the bash manual"},
                 actions=[_call("web_search", query="bash"), DEFAULT_ACTION])


def _os(tmp_path: Path) -> Setup:
    from agentworld.envs.os.rootfs import desktop_rootfs
    from agentworld.envs.sandbox import SandboxUnavailable

    _need_sandbox()
    try:
        desktop_rootfs(build=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"desktop root filesystem missing: {exc}")
    return Setup(options={"task": "calc_keyboard"}, actions=["import pyautogui\npyautogui.write('42')", "DONE"], ends=True)


def _sim(tmp_path: Path) -> Setup:
    from agentworld.models import WorldModel, load_backend
    from agentworld.records.trajectory import Trajectory, Turn, write_trajectories
    from agentworld.sim import Scenario

    store = tmp_path / "trajs.jsonl"
    write_trajectories(store, [Trajectory(id="t", domain="terminal", turns=[
        Turn(action="pwd", observation="/workspace"), Turn(action="ls", observation="notes.txt")])])
    wm = WorldModel(load_backend("retrieval", source=store, domain="terminal"))
    scenario = Scenario(id="conformance", domain="terminal", task="look around", max_turns=2)
    return Setup(kwargs={"world_model": wm, "scenario": scenario}, actions=["pwd", "ls"], ends=True)


def _fictional(tmp_path: Path) -> Setup:
    from agentworld.sim.worlds import WorldSize, build_world, save_questions, write_questions

    db = build_world(tmp_path / "w.sqlite", seed=3, size=WorldSize(countries=2, cities=4, people=12, organizations=5, works=6))
    save_questions(db, write_questions(db, seed=3, count=3))
    return Setup(kwargs={"world": db}, actions=[_call("web_search", query="founder"), _call("submit_answer", answer=["x"])],
                 ends=True)


def _android(tmp_path: Path) -> Setup:
    # No device here: the stand-in adb of tests/_android_adb.py serves hand-made dumps.
    from _android_adb import SERIAL, fake_adb

    screens = sorted((Path(__file__).parent / "fixtures" / "android").glob("handmade_clock_*.xml"))
    exe = fake_adb(tmp_path / "adb", screens)
    return Setup(kwargs={"serial": SERIAL, "adb_path": str(exe), "settle_s": 0},
                 actions=['{"action": "tap", "element": 1}', DEFAULT_ACTION])


def _web(tmp_path: Path) -> Setup:
    from agentworld.envs.web.sites import missing

    if problems := missing() + ([] if Path("/usr/bin/chromium").exists() else ["chromium (apt)"]):
        pytest.skip("web prerequisites missing: " + "; ".join(problems))
    return Setup(options={"task": "look around", "start_url": "http://docs.test/library/json.html"},
                 actions=["scroll(0, 600)", DEFAULT_ACTION])


SETUPS: dict[str, Callable[[Path], Setup]] = {
    "android-v1": _android,
    "terminal-v1": _terminal,
    "swe-v1": _swe,
    "mcp-v1": _mcp,
    "search-v1": _search,
    "os-v1": _os,
    "sim-v1": _sim,
    "fictional-search-v1": _fictional,
    "web-v1": _web,
}
MARKS = {"terminal-v1": [pytest.mark.sandbox], "os-v1": [pytest.mark.sandbox], "swe-v1": [pytest.mark.sandbox, pytest.mark.slow]}


@pytest.mark.parametrize("env_id", [pytest.param(e, marks=MARKS.get(e, [])) for e in registered()])
def test_registered_env_keeps_the_contract(env_id: str, tmp_path: Path) -> None:
    setup = SETUPS.get(env_id, lambda _: Setup())(tmp_path)
    report = check_registered(env_id, kwargs=setup.kwargs, actions=setup.actions, options=setup.options, seed=3)
    # Envs whose episodes can end are driven to the end, so EpisodeOver is exercised.
    assert report.ended == setup.ends and report.steps >= 1


@pytest.mark.parametrize("env_id", [pytest.param(e, marks=MARKS.get(e, [])) for e in registered()])
def test_registered_env_passes_gymnasiums_check_env(env_id: str, tmp_path: Path) -> None:
    """Gymnasium's own checker over the adapter: seeded resets give the same observation
    and info, and step info says what happened, not how long it took."""
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    from agentworld.envs import make
    from agentworld.envs.gym import GymEnv

    setup = SETUPS.get(env_id, lambda _: Setup())(tmp_path)
    # Gymnasium's checker steps past one step and reads an early end as a fault.
    env = GymEnv(make(env_id, **{k: v for k, v in setup.kwargs.items() if k != "max_steps"}))
    try:
        gymnasium_check_env(env, skip_render_check=True)
    finally:
        env.close()


# -- the checker catches what it should ----------------------------------------------------


class _Good(Env):
    domain = "terminal"
    deterministic_reset = True

    def __init__(self) -> None:
        self.n = 0
        self.closed = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.n = 0
        return Reset(f"seed {seed}", {"seed": seed})

    def step(self, action: str) -> Step:
        if self.n >= 2:
            raise EpisodeOver("over")
        self.n += 1
        return Step(f"ran {action}", 0.0, False, self.n >= 2, {"n": self.n})

    def context(self) -> SimContext:
        return SimContext(task_description="t", tools=[{"name": "x"}])

    def close(self) -> None:
        self.closed += 1


def test_a_conforming_env_passes_and_is_closed() -> None:
    env = _Good()
    report = check_env(env, actions=["a", "b", "c"])
    assert env.closed == 2 and report.ended and report.steps == 2


class _StepReturnsTuple(_Good):
    def step(self, action: str) -> Any:
        return ("obs", 0.0, False, False, {})


class _InfoWithObject(_Good):
    def step(self, action: str) -> Step:
        return Step("o", 0.0, False, False, {"when": {"at": object()}})


class _InfoWithTuple(_Good):
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        return Reset("o", {"size": (1, 2)})


class _InfoWithNan(_Good):
    def step(self, action: str) -> Step:
        return Step("o", 0.0, False, False, {"loss": float("nan")})


class _BadContextKey(_Good):
    def context(self) -> dict[str, Any]:
        return {"task_description": "t", "task": "t"}


class _ContextClashesWithRecorder(_Good):
    def context(self) -> dict[str, Any]:
        return {"id": "mine"}


class _AutoResets:
    """Duck-typed (no Env base class, so no EpisodeOver guard): restarts by itself."""

    domain = "terminal"

    def __init__(self) -> None:
        self.n = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.n = 0
        return Reset("o", {})

    def step(self, action: str) -> Step:
        self.n = self.n + 1 if self.n < 2 else 1
        return Step("o", 0.0, False, self.n >= 2, {})

    def context(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class _RandomReset(_Good):
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.n = 0
        self.k = getattr(self, "k", 0) + 1
        return Reset(f"episode {self.k}", {})


class _CloseTwiceFails(_Good):
    def close(self) -> None:
        self.closed += 1
        if self.closed > 1:
            raise RuntimeError("already closed")


class _ObservationNotStr(_Good):
    def step(self, action: str) -> Step:
        return Step(["o"], 0.0, False, False, {})  # type: ignore[arg-type]


class _RewardNotNumber(_Good):
    def step(self, action: str) -> Step:
        return Step("o", "1", False, False, {})  # type: ignore[arg-type]


class _TerminatedNotBool(_Good):
    def step(self, action: str) -> Step:
        return Step("o", 0.0, 0, False, {})  # type: ignore[arg-type]


@pytest.mark.parametrize(("cls", "prop", "detail"), [
    (_StepReturnsTuple, "step 1 result", "not Step"),
    (_ObservationNotStr, "step 1 result", "observation is list"),
    (_RewardNotNumber, "step 1 result", "reward '1'"),
    (_TerminatedNotBool, "step 1 result", "terminated is int"),
    (_InfoWithObject, "step 1 info", "when.at is a object"),
    (_InfoWithTuple, "reset info", "size is a tuple"),
    (_InfoWithNan, "step 1 info", "loss is nan"),
    (_BadContextKey, "context keys", "'task' are not simulation-context fields"),
    (_ContextClashesWithRecorder, "context keys", "'id'"),
    (_AutoResets, "step after the end", "did not raise EpisodeOver"),
    (_RandomReset, "deterministic reset", "another first observation"),
    (_CloseTwiceFails, "close #2", "already closed"),
])
def test_the_checker_names_the_env_and_the_broken_property(cls: type[Env], prop: str, detail: str) -> None:
    with pytest.raises(EnvCheckError) as err:
        check_env(cls(), actions=["a", "b"], env_id="bad-v0")
    assert err.value.prop == prop and detail in err.value.detail, str(err.value)
    assert str(err.value).startswith(f"bad-v0: {prop}: ")


def test_every_env_class_raises_episode_over_after_the_end_without_code_of_its_own() -> None:
    class Plain(Env):
        domain = "terminal"

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
            return Reset("start", {})

        def step(self, action: str) -> Step:
            return Step(action, 0.0, action == "stop", False, {})

    class Louder(Plain):
        def step(self, action: str) -> Step:
            return super().step(action.upper().lower())

    for cls in (Plain, Louder):
        env = cls()
        env.reset()
        assert env.step("go").observation == "go" and not env.episode_over
        assert env.step("stop").terminated and env.episode_over
        with pytest.raises(EpisodeOver, match="terminal episode is over"):
            env.step("go")
        env.reset()
        assert env.step("go").observation == "go"


def test_a_restored_simulator_session_steps_again(tmp_path: Path) -> None:
    from agentworld.envs import make

    sim = make("sim-v1", **_sim(tmp_path).kwargs)
    sim.reset()
    before = sim.snapshot()
    sim.step("pwd")
    assert sim.step("ls").truncated and sim.episode_over
    with pytest.raises(EpisodeOver):
        sim.step("pwd")
    sim.restore(before)
    assert not sim.episode_over and sim.step("pwd").observation == "/workspace"


def test_an_env_that_does_not_promise_determinism_may_differ() -> None:
    class Free(_RandomReset):
        deterministic_reset = False

    check_env(Free(), actions=["a", "b"])


def test_close_without_reset_is_checked_on_a_fresh_instance() -> None:
    from agentworld.envs.base import _REGISTRY

    class ResetFirst(_Good):
        def close(self) -> None:
            if self.n == 0 and not getattr(self, "was_reset", False):
                raise RuntimeError("close before reset")

        def reset(self, **kw: Any) -> Reset:
            self.was_reset = True
            return super().reset(**kw)

    _REGISTRY["reset-first-v0"] = ResetFirst
    try:
        with pytest.raises(EnvCheckError, match="reset-first-v0: close without reset #1: raised RuntimeError"):
            check_registered("reset-first-v0", actions=["a", "b"])
    finally:
        _REGISTRY.pop("reset-first-v0")
