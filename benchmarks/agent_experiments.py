"""Shared plumbing of the two agent experiments (agent_sim_rl.py, agent_warmup.py).

An experiment is a list of stages, each one ``agentworld`` command. A finished stage leaves
``<out>/.done/<name>.json`` (its wall time) and is skipped on a rerun; a killed stage is
simply run again, and the commands resume by themselves (``agent train`` from its newest
checkpoint, ``agent eval`` from its JSONL, the world-model trainers from theirs). Evaluation
numbers come from ``agent eval``'s own statistics (``agents.rollout.summarize``: Wilson 95%
for success, t 95% for the mean reward), read back from its JSONL.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

ROOT = Path(__file__).resolve().parents[1]
AW = [sys.executable, "-m", "agentworld"]


class EvalSpec(BaseModel):
    """How every arm is evaluated: the real env, the tool protocol agent train teaches."""

    model_config = ConfigDict(extra="forbid")
    tasks: list[str] = ["terminal"]
    seeds: int = 1
    seed_start: int = 0
    max_turns: int = 4
    max_tokens: int = 128
    concurrency: int = 2


class WarmupSpec(BaseModel):
    """Experiment 2's world-model stage: CPT on next-observation prediction over recorded
    trajectories, with the world-model recipe's own builders and trainer."""

    model_config = ConfigDict(extra="forbid")
    sources: list[str] = ["benchmarks/local/trajectories/terminal.jsonl"]
    exclude_bench: str = "benchmarks/local"
    data_config: str = "configs/data/cpt_smol_default.yaml"
    data: dict[str, Any] = {}
    """Overrides of data_config (e.g. max_length)."""
    train_config: str = "configs/train/cpt_smol_default.yaml"
    train: dict[str, Any] = {}
    """Overrides of train_config (e.g. max_steps)."""
    rl_mode: str = "sim"
    """Where the agent training of both arms runs (the same arm as Experiment 1's)."""
    arms: list[str] = []


class ExperimentConfig(BaseModel):
    """Both experiments' YAML (configs/agent/experiments_cpu.yaml, experiments_gpu.yaml): the
    budget and evaluation they share, so one --out folder serves both and the arms they
    have in common (the untrained policy, GRPO from it) run once."""

    model_config = ConfigDict(extra="forbid")
    label: str = ""
    policy: str = "smol"
    """The policy to train: 'smol' (the embedded SmolLM2-135M) or a checkpoint folder."""
    chat_template: str = "qwen2.5"
    policy_options: list[str] = []
    """More options of the evaluated policies' hf backend (e.g. device=cuda)."""
    train_config: str = "configs/agent/train.yaml"
    train: dict[str, Any] = {}
    """Overrides of train_config shared by every training arm (the budget: steps, rollouts...)."""
    sim: dict[str, Any] = {}
    """Overrides of the arm trained in the simulator (world model, perturbations)."""
    real: dict[str, Any] = {}
    eval: EvalSpec = Field(default_factory=EvalSpec)
    bc_config: str = "configs/agent/bc.yaml"
    bc: dict[str, Any] = {}
    """Overrides of bc_config for the behaviour-cloning stage every BC arm starts with (tasks,
    training seeds, steps); its conversations are played once and shared by both experiments."""
    sim_rl_arms: list[str] = []
    """Experiment 1's arms (default: all)."""
    warmup: WarmupSpec = Field(default_factory=WarmupSpec)


def parse_args(argv: list[str] | None, description: str, example: str) -> tuple[Any, ExperimentConfig]:
    """The command line both experiments take, and the config it names (overrides applied)."""
    import argparse

    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=Path, default=ROOT / "configs/agent/experiments_cpu.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/agent_exp/cpu")
    ap.add_argument("--dry-run", action="store_true", help="Check the configs and print the stages; run nothing.")
    ap.add_argument("--report-only", action="store_true", help="Run nothing; tabulate what --out holds now.")
    ap.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=f"Config overrides, dotted: {example}")
    args = ap.parse_args(argv)
    return args, load_config(args.config, args.overrides)


def load_config(path: Path, overrides: list[str]) -> ExperimentConfig:
    """The YAML with ``dotted.key=value`` overrides (values read as YAML), e.g. train.max_steps=2."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"{path}: {exc}") from None
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"override {item!r}: expected KEY=VALUE")
        node = raw
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    try:
        return ExperimentConfig.model_validate(raw)
    except ValueError as exc:
        raise SystemExit(f"{path}: {exc}") from None


def sets(values: dict[str, Any]) -> list[str]:
    """``--set KEY=VALUE`` arguments of an agentworld command (lists as JSON/YAML flow)."""
    out: list[str] = []
    for k, v in values.items():
        out += ["--set", f"{k}={json.dumps(v) if isinstance(v, (list, dict)) else v}"]
    return out


@dataclass
class Stage:
    name: str
    argv: list[str]
    after: Any = None
    """Called with the run's folder after the command succeeded (e.g. to write a file)."""


@dataclass
class Runner:
    out: Path
    dry_run: bool = False
    report_only: bool = False
    """Run nothing: tabulate what the folder holds (arms still running show what they have)."""
    poll_s: float = 10.0
    """How often a stage another process is running is checked."""

    def done_file(self, name: str) -> Path:
        return self.out / ".done" / f"{name}.json"

    def wall(self, name: str) -> float | None:
        f = self.done_file(name)
        return json.loads(f.read_text())["wall_s"] if f.exists() else None

    def run(self, stage: Stage) -> None:
        if self.report_only:
            return
        line = shlex.join(stage.argv)
        if self.done_file(stage.name).exists():
            before = json.loads(self.done_file(stage.name).read_text()).get("argv")
            if before != stage.argv:
                raise SystemExit(f"stage {stage.name} in {self.out} was run with another command:\n  {shlex.join(before)}"
                                 f"\nnow:\n  {line}\nuse another --out, or delete {self.done_file(stage.name)}")
            print(f"== {stage.name}: done before ({self.wall(stage.name)} s), skipped", flush=True)
            return
        print(f"== {stage.name}: {line}", flush=True)
        if self.dry_run:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        if not self._claim(stage.name):  # another run of the same folder played it meanwhile
            return self.run(stage)
        t0 = time.monotonic()
        logf = self.out / "logs" / f"{stage.name}.log"
        logf.parent.mkdir(parents=True, exist_ok=True)
        with logf.open("a", encoding="utf-8") as fh:
            rc = subprocess.run(stage.argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            tail = logf.read_text(encoding="utf-8", errors="replace")[-1500:]
            raise SystemExit(f"stage {stage.name} failed (exit {rc}); log {logf}:\n{tail}")
        if stage.after is not None:
            stage.after(self.out)
        self.done_file(stage.name).parent.mkdir(parents=True, exist_ok=True)
        self.done_file(stage.name).write_text(json.dumps({"wall_s": round(time.monotonic() - t0, 1), "argv": stage.argv}))
        self.lock_file(stage.name).unlink(missing_ok=True)

    def lock_file(self, name: str) -> Path:
        return self.out / ".running" / f"{name}.pid"

    def _claim(self, name: str) -> bool:
        """Take the stage's lock; while a live process holds it (two experiments sharing a
        folder run at once), wait for that one to end and return False."""
        lock = self.lock_file(name)
        lock.parent.mkdir(parents=True, exist_ok=True)
        waited = False
        while True:
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    holder = int(lock.read_text() or 0)
                except (OSError, ValueError):
                    holder = 0
                if holder and _alive(holder):
                    if not waited:
                        print(f"   {name}: run by process {holder}; waiting for it", flush=True)
                    waited = True
                    time.sleep(self.poll_s)
                    continue
                lock.unlink(missing_ok=True)  # its holder died: the stage runs again (and resumes)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            if waited:
                lock.unlink(missing_ok=True)
            return not waited


def _alive(pid: int) -> bool:
    """A running process (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def base_model_path(policy: str) -> Path:
    from agentworld.train.common import resolve_model

    return resolve_model(policy)


def policy_spec(folder: Path | str, cfg: ExperimentConfig) -> str:
    """An hf policy spec for a checkpoint or (chained) adapter folder, with the tool template."""
    return ",".join([f"hf:{folder}", f"chat_template={cfg.chat_template}", *cfg.policy_options])


def train_stage(name: str, cfg: ExperimentConfig, model: str, out_dir: Path, arm: dict[str, Any]) -> Stage:
    values = {**cfg.train, **arm, "model": model, "output_dir": str(out_dir), "chat_template": cfg.chat_template}
    return Stage(name, [*AW, "agent", "train", "--config", cfg.train_config, *sets(values)])


def bc_stage(name: str, cfg: ExperimentConfig, model: str, out_dir: Path, out: Path) -> Stage:
    """Behaviour cloning of the scripted solutions from ``model``; every BC stage of the folder
    reads the same conversations file (played in the real env once)."""
    values = {**cfg.bc, "model": model, "output_dir": str(out_dir), "chat_template": cfg.chat_template,
              "conversations": str(out / "bc_conversations.jsonl")}
    return Stage(name, [*AW, "agent", "bc", "--config", cfg.bc_config, *sets(values)])


def check_bc_config(cfg: ExperimentConfig) -> None:
    from agentworld.agents.bc import load_bc_config
    from agentworld.config import ConfigError

    try:
        load_bc_config(ROOT / cfg.bc_config, {**cfg.bc, "chat_template": cfg.chat_template})
    except ConfigError as exc:
        raise SystemExit(f"bad behaviour-cloning config: {exc}") from None


def eval_stage(name: str, cfg: ExperimentConfig, spec: str, out: Path) -> Stage:
    e = cfg.eval
    argv = [*AW, "agent", "eval", "-m", "real", "-p", spec, "--protocol", "tools", "-n", str(e.seeds),
            "--seed-start", str(e.seed_start), "--max-turns", str(e.max_turns), "--max-tokens", str(e.max_tokens),
            "-c", str(e.concurrency), "-o", str(out / f"{name}.jsonl")]
    for t in e.tasks:
        argv += ["-t", t]
    return Stage(name, argv)


def check_train_configs(cfg: ExperimentConfig, arms: list[dict[str, Any]]) -> None:
    """Fail before anything runs if a training arm's keys are wrong (file:line from the loader)."""
    from agentworld.agents.train import load_agent_config
    from agentworld.config import ConfigError

    for arm in arms:
        try:
            load_agent_config(ROOT / cfg.train_config, {**cfg.train, **arm, "chat_template": cfg.chat_template})
        except ConfigError as exc:
            raise SystemExit(f"bad training config: {exc}") from None


@dataclass
class Row:
    arm: str
    eval_name: str
    train_name: str | None = None
    steps: int | None = None
    note: str = ""


def results(runner: Runner, cfg: ExperimentConfig, rows: list[Row]) -> list[dict[str, Any]]:
    """Each arm's real-env success and reward (agent eval's statistics), wall times and cost a step."""
    from agentworld.agents.rollout import read_episodes, summarize

    out = []
    for r in rows:
        eps, _ = read_episodes(runner.out / f"{r.eval_name}.jsonl")
        overall = summarize(eps)["overall"].get("real") if eps else None
        train_wall = runner.wall(r.train_name) if r.train_name else None
        timing = runner.out / "train" / r.train_name / "timing.json" if r.train_name else None
        per_step = None
        if timing is not None and timing.exists():
            per_step = json.loads(timing.read_text()).get("seconds_per_step")
        if per_step is None and train_wall is not None and r.steps:
            per_step = round(train_wall / r.steps, 1)
        unfinished = runner.wall(r.eval_name) is None or (r.train_name is not None and train_wall is None)
        out.append({"arm": r.arm + (" (unfinished)" if unfinished else ""), "note": r.note, "episodes": len(eps),
                    "errors": overall["errors"] if overall else None,
                    "success": overall["success"] if overall else None, "reward": overall["reward"] if overall else None,
                    "train_steps": r.steps, "train_wall_s": train_wall, "s_per_step": per_step,
                    "eval_wall_s": runner.wall(r.eval_name)})
    return out


def table(rows: list[dict[str, Any]]) -> str:
    def ci(c: dict[str, Any] | None) -> str:
        return "-" if not c else f"{c['value']:.2f} [{c['low']:.2f}, {c['high']:.2f}]"

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:g}"

    head = ["arm", "success [95% CI]", "mean reward [95% CI]", "n (errors)", "train steps", "train wall s",
            "s / step", "eval wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([r["arm"], ci(r["success"]), ci(r["reward"]), f"{r['episodes']} ({num(r['errors'])})",
                                        num(r["train_steps"]), num(r["train_wall_s"]), num(r["s_per_step"]),
                                        num(r["eval_wall_s"])]) + " |")
    return "\n".join(lines) + "\n"


def report(runner: Runner, cfg: ExperimentConfig, rows: list[Row], title: str, name: str) -> None:
    measured = results(runner, cfg, rows)
    text = table(measured)
    print(f"\n{title}{f' ({cfg.label})' if cfg.label else ''}: real terminal env, "
          f"{cfg.eval.seeds} seed(s) x {', '.join(cfg.eval.tasks)}, <= {cfg.eval.max_turns} actions\n")
    print(text)
    if not runner.dry_run:
        js, md = runner.out / f"results-{name}.json", runner.out / f"results-{name}.md"
        js.write_text(json.dumps({"label": cfg.label, "config": cfg.model_dump(), "rows": measured}, indent=2) + "\n")
        md.write_text(text)
        print(f"written: {js}, {md}")
