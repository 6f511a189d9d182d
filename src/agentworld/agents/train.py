"""``agentworld agent train``: multi-turn GRPO of the policy on agent tasks, with TRL's own
environment hook.

TRL's ``GRPOTrainer(environment_factory=...)`` plays every rollout as a tool-calling
conversation: it resets one environment object per rollout with the dataset row, offers
the object's public methods to the model as tools, runs the calls the model makes, and
scores the finished rollout with the object's ``get_reward``. Here each object wraps one
task episode -- in the real environment or the simulator (``sim-v1`` over a world
model) -- and its reward is the task's graded reward. Tool calls use the chat template's
tool protocol; a policy whose template has none (SmolLM2, tiny test models) speaks the
Qwen2.5 one TRL ships (``chat_template: qwen2.5``).

The config is generated from ``trl.GRPOConfig`` like the world-model trainers'
(:mod:`agentworld.train.config`), saved in every checkpoint, and a rerun resumes from the
newest checkpoint in the output folder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import field_validator

from agentworld.agents.protocol import reset_text, tool_prompt
from agentworld.agents.tasks import AgentTask, TaskContext, expand, family
from agentworld.config import opt
from agentworld.envs.terminal.task import cmd
from agentworld.records.trajectory import Trajectory
from agentworld.train.config import TrainerSpec, TrainFields, load_train_config, register_trainer


class AgentFields(TrainFields):
    """Multi-turn GRPO of an agent policy on seeded tasks, rewarded by the task grader."""

    kind: ClassVar[str] = "agent"

    tasks: list[str] = opt(["terminal"], "Task families or domains (terminal, mcp, search) to train on.")
    seeds: int = opt(16, "Seeded tasks per family (seeds seed_start .. seed_start+seeds-1).")
    seed_start: int = opt(1000, "First task seed (keep training seeds apart from evaluation seeds).")
    mode: str = opt("sim", "Where the episodes run: sim (the simulator over world_model) or real.")
    world_model: str = opt("smol", "Backend spec of the simulator's world model (mode: sim).")
    world_model_options: dict[str, Any] = opt({}, "More options of the world model's backend.")
    world: str = opt("", "Fictional world database for search tasks.")
    perturbations: str = opt("", "Perturbation spec (YAML, configs/perturbations/) applied to simulated episodes.")
    chat_template: str = opt("qwen2.5", "The policy's tool-calling chat template: qwen2.5 (TRL's) where the model's own "
                             "cannot render tool calls, or own.")

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        if v not in ("sim", "real"):
            raise ValueError("mode must be sim or real")
        return v

    @field_validator("world_model")
    @classmethod
    def _spec(cls, value: str) -> str:
        from agentworld.models.spec import check_spec_text

        return check_spec_text(value)


register_trainer("agent", TrainerSpec(
    "AgentTrainConfig", AgentFields, "trl:GRPOConfig",
    {"learning_rate": 1e-5, "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 256,
     "max_tool_calling_iterations": 6, "temperature": 1.0, "beta": 0.0, "logging_steps": 1, "save_steps": 50},
))


def load_agent_config(path: Any = None, overrides: dict[str, Any] | None = None) -> Any:
    return load_train_config("agent", path, overrides)


class _Runtime:
    """What every episode object of one run shares: the mode, the world model, the task
    context, and the environments open right now (closed by :meth:`close_all` when the run
    ends early: TRL keeps no handle on them)."""

    def __init__(self, config: Any, world_model: Any = None):
        self.mode = config.mode
        self.context = TaskContext(world=config.world or None)
        self.wm = world_model
        self.perturbations = None
        self._open: dict[int, Any] = {}
        self._lock = threading.Lock()
        if config.perturbations:
            from agentworld.sim.perturb import PerturbationSpec

            self.perturbations = PerturbationSpec.load(config.perturbations)

    def open(self, task: AgentTask) -> Any:
        from agentworld.envs.base import make
        from agentworld.envs.record import RecordTurns

        if self.mode == "sim":
            from agentworld.sim.env import SimEnv

            env: Any = SimEnv(self.wm, task.scenario(), checks=getattr(task, "sim_checks", list)(),
                              perturbations=self.perturbations)
        else:
            env = RecordTurns(make(task.env_id, **task.env_kwargs))
        with self._lock:
            self._open[id(env)] = env
        return env

    def close(self, env: Any) -> None:
        with self._lock:
            self._open.pop(id(env), None)
        env.close()

    def close_all(self) -> int:
        """Close every environment still open (sandboxes, tmux servers); returns how many."""
        with self._lock:
            envs, self._open = list(self._open.values()), {}
        for env in envs:
            try:
                env.close()
            except Exception as exc:  # noqa: BLE001 - close the others whatever one does
                print(f"[agent] closing an episode failed: {exc}", file=sys.stderr, flush=True)
        return len(envs)


def open_runtime(config: Any, world_model: Any = None) -> _Runtime:
    """The run's runtime; in sim mode with the config's world model unless one is given."""
    if config.mode == "sim" and world_model is None:
        from agentworld.models import WorldModel, load_backend

        world_model = WorldModel(load_backend(config.world_model, **config.world_model_options))
    return _Runtime(config, world_model)


class _Stopped(SystemExit):
    """SIGTERM (or SIGHUP) arrived: the run ends as Ctrl-C would, closing its episodes."""


@contextlib.contextmanager
def closing_episodes(runtime: _Runtime) -> Iterator[None]:
    """Close the runtime's open episodes however the run ends: normally, on an exception,
    Ctrl-C (SIGINT), SIGTERM or SIGHUP -- the last two otherwise kill the process without
    unwinding and leave the real env's sandboxes running."""
    def stop(signum: int, _frame: Any) -> None:
        raise _Stopped(128 + signum)

    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)} if main else {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        closed = runtime.close_all()
        if closed:
            print(f"[agent] closed {closed} open episode(s)", file=sys.stderr, flush=True)


class _Episode:
    """One task episode as TRL drives it: ``reset`` from a dataset row, tools, ``get_reward``."""

    def __init__(self, runtime: _Runtime):
        self._rt = runtime
        self._env: Any = None
        self._task: AgentTask | None = None
        self._steps = 0

    def reset(self, family_name: str = "", seed: int = 0, **_: Any) -> str:
        self._close()
        self._task = family(family_name).instance(int(seed), self._rt.context)
        self._env = self._rt.open(self._task)
        if self._rt.mode == "sim":
            first = self._env.reset(seed=self._task.seed)
            if hasattr(self._task, "seed_ledger"):
                self._task.seed_ledger(self._env.ledger)
        else:
            first = self._env.reset(seed=self._task.seed, options=self._task.reset_options)
        self._steps = 0
        return reset_text(self._env.context().initial_state, first.observation)

    def _act(self, action: str) -> str:
        if self._env is None or self._env.episode_over or self._steps >= (self._task.max_turns if self._task else 0):
            return "The episode is over."
        self._steps += 1
        return self._env.step(action).observation

    def _trajectory(self) -> Trajectory:
        from agentworld.records.trajectory import Provenance

        if self._rt.mode == "sim":
            return self._env.record(trajectory_id="train")
        return self._env.trajectory(trajectory_id="train", provenance=Provenance(source="real"))

    def get_reward(self) -> float:
        if self._env is None or self._task is None:
            return 0.0
        try:
            return self._task.grade(self._env, self._trajectory()).reward
        finally:
            self._close()

    def _close(self) -> None:
        if self._env is not None:
            env, self._env = self._env, None
            self._rt.close(env)


class TerminalEpisode(_Episode):
    def terminal(self, command: str) -> str:
        """Type a command line into the Linux terminal and press Enter.

        Args:
            command: The shell command line to run.

        Returns:
            What the terminal shows after the command.
        """
        return self._act(cmd(command))


class ToolEpisode(_Episode):
    def call_tool(self, name: str, arguments: str) -> str:
        """Call one of the environment's tools (listed in the task) by name.

        Args:
            name: The tool's name.
            arguments: The tool's arguments as a JSON object.

        Returns:
            The tool's result.
        """
        try:
            args: Any = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError:
            args = arguments
        return self._act(json.dumps({"name": name, "arguments": args}, ensure_ascii=False))


def training_tasks(config: Any) -> list[AgentTask]:
    """The tasks a run trains on: every family of ``config.tasks`` at seeds ``seed_start`` ..
    ``seed_start + seeds - 1``."""
    context = TaskContext(world=config.world or None)
    return [family(name).instance(seed, context) for name in expand(list(config.tasks))
            for seed in range(config.seed_start, config.seed_start + config.seeds)]


def dataset_rows(config: Any) -> list[dict[str, Any]]:
    """One row per (family, seed): the prompt, and what ``reset`` needs to rebuild the task."""
    return [{"prompt": tool_prompt(task), "environment": "terminal" if task.domain == "terminal" else "tools",
             "family_name": task.family, "seed": task.seed} for task in training_tasks(config)]


def build_trainer(config: Any, *, world_model: Any = None, callbacks: list[Any] | None = None,
                  runtime: _Runtime | None = None) -> tuple[Any, Any]:
    """TRL's ``GRPOTrainer`` over the task episodes, and the tokenizer to save with it."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from agentworld.train.common import TrainInputs, load_model, load_policy_tokenizer, make_trainer, resolve_model, start_chain

    runtime = runtime or open_runtime(config, world_model)
    path = resolve_model(config.model)
    chain = start_chain(config.model, path)
    tokenizer = load_policy_tokenizer(path, chain, config.chat_template, padding_side="left")
    rows = dataset_rows(config)
    inputs = TrainInputs(Dataset.from_list(rows), tokenizer, load_model(chain, config), chain)
    factories = {"terminal": functools.partial(TerminalEpisode, runtime), "tools": functools.partial(ToolEpisode, runtime)}
    used = {r["environment"] for r in rows}
    return make_trainer(GRPOTrainer, config, inputs, callbacks,
                        environment_factory={k: v for k, v in factories.items() if k in used})


def train_agent(config: Any, *, world_model: Any = None) -> Any:
    """Run multi-turn GRPO to ``config.output_dir``, resuming from its newest checkpoint."""
    from agentworld.train.common import run_trainer

    runtime = open_runtime(config, world_model)
    with closing_episodes(runtime):
        trainer, tokenizer = build_trainer(config, runtime=runtime)
        return run_trainer(trainer, config, tokenizer)
