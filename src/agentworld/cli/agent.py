"""``agentworld agent``: agents playing seeded tasks in real environments and the simulator."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from agentworld.cli._backend import backend_spec, open_backend
from agentworld.cli._common import console, fail, out, progress, report_line_errors

app = typer.Typer(help="Agents: roll out, evaluate (real vs simulated, with confidence intervals) over seeded tasks.",
                  no_args_is_help=True)

TaskOpt = Annotated[list[str] | None, typer.Option("--task", "-t", help="A task family or a domain (terminal, mcp, search); repeatable. Default: terminal.")]
SeedsOpt = Annotated[int, typer.Option("--seeds", "-n", min=1, help="Seeded tasks per family.")]
SeedStartOpt = Annotated[int, typer.Option("--seed-start", help="First task seed (seeds are SEED_START .. SEED_START+N-1).")]
PolicyOpt = Annotated[str, typer.Option("--policy", "-p", metavar="SPEC", help="The agent: a backend spec (openai:MODEL@URL, hf:PATH, smol,packaged=false...), or scripted (the task's solution) or idle (stops at once).")]
PolicyOptOpt = Annotated[list[str] | None, typer.Option("--policy-opt", metavar="KEY=VALUE", help="An option of the policy's backend (repeatable).")]
WmOpt = Annotated[str, typer.Option("--world-model", "-w", metavar="SPEC", help="The simulator's world model (backend spec) for --mode sim.")]
WmOptOpt = Annotated[list[str] | None, typer.Option("--wm-opt", metavar="KEY=VALUE", help="An option of the world model's backend (repeatable).")]
WorldOpt = Annotated[Path | None, typer.Option("--world", help="Fictional world database for search tasks (agentworld sim world build).")]
JudgeOpt = Annotated[str | None, typer.Option("--judge", metavar="SPEC", help="An LLM judge (backend spec) for simulated checks the ledger cannot decide; default: the rule judge.")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Rollout JSONL (one graded episode with its trajectory per line; resumable).")]
ConcOpt = Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Episodes in flight.")]
TurnsOpt = Annotated[int | None, typer.Option("--max-turns", min=1, help="Actions per episode (default: the task's own).")]
TempOpt = Annotated[float, typer.Option(help="The policy's sampling temperature.")]
TokOpt = Annotated[int, typer.Option(help="The policy's completion token limit per reply.")]
SampleSeedOpt = Annotated[int | None, typer.Option("--sample-seed", help="Seed of the policy's sampling (varied per task and turn).")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Empty the output file first.")]
ProtoOpt = Annotated[str, typer.Option("--protocol", help="How the policy is prompted: native (the collection drivers' protocols) or tools (the one agent train teaches: its prompt, tool calls through the chat template; an hf policy, chat_template=qwen2.5 where the model's own has no tools).")]
PerturbOpt = Annotated[Path | None, typer.Option("--perturbations", help="Perturbation spec (YAML, configs/perturbations/) for simulated episodes.")]
# The trainers' shared options (agent train, agent bc).
TrainModelOpt = Annotated[str | None, typer.Option("--model", help="Policy to train: a checkpoint folder, or 'smol'.")]
TrainOutOpt = Annotated[str | None, typer.Option("--out", "-o", help="Output folder; a rerun resumes from its last checkpoint.")]
MaxStepsOpt = Annotated[int | None, typer.Option("--max-steps", help="Stop after this many optimizer steps.")]
LoraOpt = Annotated[bool | None, typer.Option("--lora/--no-lora", help="Train a LoRA adapter instead of all weights.")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE override of any config key (repeatable).")]


def _modes(mode: list[str] | None, default: list[str]) -> list[str]:
    from agentworld.agents.runner import MODES

    chosen = mode or default
    bad = [m for m in chosen if m not in MODES]
    if bad:
        raise fail(f"unknown --mode {bad[0]!r}", "use real and/or sim")
    return list(dict.fromkeys(chosen))


def _tasks(task: list[str] | None, seeds: int, seed_start: int, world: Path | None) -> list[Any]:
    from agentworld.agents.tasks import TaskContext, tasks

    try:
        return tasks(task or ["terminal"], list(range(seed_start, seed_start + seeds)),
                     TaskContext(world=str(world) if world else None))
    except KeyError as exc:
        raise fail(str(exc.args[0]), "list families with: agentworld agent tasks") from None
    except (ValueError, FileNotFoundError) as exc:
        raise fail(str(exc)) from None


def _policy(spec: str, opts: list[str] | None, temperature: float, max_tokens: int, seed: int | None) -> Any:
    from agentworld.agents.policy import SCRIPTED, ModelPolicy, ScriptedPolicy
    from agentworld.models import GenerationConfig

    if spec in SCRIPTED:
        return ScriptedPolicy(spec)
    parsed = backend_spec(spec, opts, flag="--policy")
    return ModelPolicy(open_backend(parsed), GenerationConfig(temperature=temperature, max_tokens=max_tokens, seed=seed),
                       name=str(parsed))


def _play(*, task, seeds, seed_start, mode, policy, policy_opt, world_model, wm_opt, world, judge, out_path, concurrency,
          max_turns, temperature, max_tokens, sample_seed, overwrite, perturbations=None, protocol="native") -> list[Any]:
    """Run what is missing from ``out_path`` and return every episode of the selection."""
    from agentworld.agents.judge import model_judge
    from agentworld.agents.policy import describe
    from agentworld.agents.protocol import PROTOCOLS
    from agentworld.agents.rollout import pending, read_episodes, rollout
    from agentworld.agents.runner import episode_key
    from agentworld.bench.infer import SettingsMismatch, check_settings
    from agentworld.jsonl import FileBusy, write_jsonl
    from agentworld.models import WorldModel

    if protocol not in PROTOCOLS:
        raise fail(f"unknown --protocol {protocol!r}", f"use one of {', '.join(PROTOCOLS)}")
    selected = _tasks(task, seeds, seed_start, world)
    if overwrite and out_path.exists():
        write_jsonl(out_path, [])
    done, errors = read_episodes(out_path)
    report_line_errors(errors)
    pol = _policy(policy, policy_opt, temperature, max_tokens, sample_seed)
    spec = None
    if perturbations is not None:
        from agentworld.sim.perturb import PerturbationSpec

        try:
            spec = PerturbationSpec.load(perturbations)
        except (OSError, ValueError) as exc:
            raise fail(f"bad --perturbations {perturbations}: {exc}") from None
    settings = {**describe(pol), "max_turns": max_turns, **({"protocol": protocol} if protocol != "native" else {}),
                "world_model": str(backend_spec(world_model, wm_opt, flag="--world-model")) if "sim" in mode else None,
                **({"perturbations": spec.model_dump(mode="json")} if spec is not None else {})}
    try:
        check_settings(out_path, [e.settings for e in done], settings, "episodes")
    except SettingsMismatch as exc:
        raise fail(str(exc)) from None
    work = pending(selected, mode, done)
    wm = WorldModel(open_backend(backend_spec(world_model, wm_opt, flag="--world-model"))) if "sim" in mode and work else None
    judge_fn = model_judge(open_backend(backend_spec(judge, None, flag="--judge"))) if judge else None
    if work:
        with progress() as bar:
            bar_task = bar.add_task(f"episodes ({pol.name})", total=len(work))

            async def go() -> list[Any]:
                try:
                    return await rollout(pol, work, out_path, settings=settings, world_model=wm, judge=judge_fn,
                                         concurrency=concurrency, max_turns=max_turns, perturbations=spec,
                                         protocol=protocol, on_episode=lambda _ep: bar.advance(bar_task))
                finally:
                    await pol.aclose()
                    if wm is not None:
                        await wm.aclose()

            try:
                asyncio.run(go())
            except FileBusy as exc:
                raise fail(str(exc), "wait for that run to finish, or write to another --out file") from None
    episodes, _ = read_episodes(out_path)
    keys = {episode_key(m, t) for m in mode for t in selected}
    chosen = [e for e in episodes if e.key in keys]
    failed = [e for e in chosen if e.error]
    for e in failed[:5]:
        console.print(f"[yellow]episode {e.key} failed:[/] {e.error}")
    out.print(f"{out_path}: {len(chosen)} episodes ({len(work)} played now, {len(failed)} failed)")
    return chosen


@app.command()
def rollout(
    task: TaskOpt = None, seeds: SeedsOpt = 5, seed_start: SeedStartOpt = 0,
    mode: Annotated[list[str] | None, typer.Option("--mode", "-m", help="real (the registered env) or sim (sim-v1); repeatable.")] = None,
    policy: PolicyOpt = "scripted", policy_opt: PolicyOptOpt = None, world_model: WmOpt = "smol", wm_opt: WmOptOpt = None,
    world: WorldOpt = None, judge: JudgeOpt = None, out_path: OutOpt = Path("runs/agent/rollout.jsonl"),
    concurrency: ConcOpt = 2, max_turns: TurnsOpt = None, temperature: TempOpt = 0.0, max_tokens: TokOpt = 256,
    sample_seed: SampleSeedOpt = None, overwrite: OverwriteOpt = False, perturbations: PerturbOpt = None,
    protocol: ProtoOpt = "native",
) -> None:
    """Play N seeded tasks per family (concurrent, resumable); each line: a graded episode and its trajectory."""
    eps = _play(task=task, seeds=seeds, seed_start=seed_start, mode=_modes(mode, ["real"]), policy=policy,
                policy_opt=policy_opt, world_model=world_model, wm_opt=wm_opt, world=world, judge=judge,
                out_path=out_path, concurrency=concurrency, max_turns=max_turns, temperature=temperature,
                max_tokens=max_tokens, sample_seed=sample_seed, overwrite=overwrite, perturbations=perturbations,
                protocol=protocol)
    ok = [e for e in eps if not e.error]
    if ok:
        out.print(f"success {sum(e.success for e in ok)}/{len(ok)}, mean reward {sum(e.reward for e in ok) / len(ok):.3f}")


@app.command("eval")
def evaluate(
    task: TaskOpt = None, seeds: SeedsOpt = 5, seed_start: SeedStartOpt = 0,
    mode: Annotated[list[str] | None, typer.Option("--mode", "-m", help="real and/or sim (default: both, side by side).")] = None,
    policy: PolicyOpt = "scripted", policy_opt: PolicyOptOpt = None, world_model: WmOpt = "smol", wm_opt: WmOptOpt = None,
    world: WorldOpt = None, judge: JudgeOpt = None, out_path: OutOpt = Path("runs/agent/eval.jsonl"),
    report: Annotated[Path | None, typer.Option(help="Write the summary as JSON here and as Markdown next to it (.md).")] = None,
    concurrency: ConcOpt = 2, max_turns: TurnsOpt = None, temperature: TempOpt = 0.0, max_tokens: TokOpt = 256,
    sample_seed: SampleSeedOpt = None, overwrite: OverwriteOpt = False, perturbations: PerturbOpt = None,
    protocol: ProtoOpt = "native",
) -> None:
    """Success rate (Wilson 95% CI) and mean reward (t 95% CI) per task family, real and simulated side by side, with the sim-to-real gap."""
    from agentworld.agents.rollout import markdown, summarize

    eps = _play(task=task, seeds=seeds, seed_start=seed_start, mode=_modes(mode, ["real", "sim"]), policy=policy,
                policy_opt=policy_opt, world_model=world_model, wm_opt=wm_opt, world=world, judge=judge,
                out_path=out_path, concurrency=concurrency, max_turns=max_turns, temperature=temperature,
                max_tokens=max_tokens, sample_seed=sample_seed, overwrite=overwrite, perturbations=perturbations,
                protocol=protocol)
    summary = summarize(eps)
    out.print(_table(summary))
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        report.with_suffix(".md").write_text(markdown(summary), encoding="utf-8")
        out.print(f"report: {report} and {report.with_suffix('.md')}")


def _table(summary: dict[str, Any]) -> Table:
    modes = summary["modes"]
    both = {"real", "sim"} <= set(modes)
    t = Table(box=box.SIMPLE_HEAVY, title="success [95% Wilson CI] and mean reward [95% t CI]")
    t.add_column("family", no_wrap=True)
    for m in modes:
        t.add_column(f"{m} success", justify="right")
        t.add_column(f"{m} reward", justify="right")
    if both:
        t.add_column("gap success", justify="right")
        t.add_column("gap reward", justify="right")

    def cell(c: dict[str, Any] | None) -> str:
        return "-" if c is None else f"{c['value']:.2f} [{c['low']:.2f}, {c['high']:.2f}]"

    for name, row in [*summary["families"].items(), ("all", summary["overall"])]:
        cells = [name]
        for m in modes:
            cells += [cell(row.get(m, {}).get("success")), cell(row.get(m, {}).get("reward"))]
        if both:
            gap = row.get("gap")
            cells += [f"{gap['success']:+.2f}", f"{gap['reward']:+.2f}"] if gap else ["-", "-"]
        t.add_row(*cells, style="bold" if name == "all" else None)
    return t


@app.command("tasks")
def list_tasks(domain: Annotated[str | None, typer.Option(help="Only this domain.")] = None) -> None:
    """List the task families."""
    from agentworld.agents.tasks import family, family_names

    t = Table(box=box.SIMPLE)
    t.add_column("family")
    t.add_column("domain")
    for name in family_names(domain):
        t.add_row(name, family(name).domain)
    out.print(t)


@app.command()
def train(
    config: Annotated[Path | None, typer.Option("--config", help="YAML config (see configs/agent/train.yaml).")] = None,
    model: TrainModelOpt = None,
    task: TaskOpt = None,
    mode: Annotated[str | None, typer.Option("--mode", "-m", help="sim (the simulator, default) or real.")] = None,
    world_model: Annotated[str | None, typer.Option("--world-model", "-w", metavar="SPEC", help="The simulator's world model.")] = None,
    world: WorldOpt = None,
    out_dir: TrainOutOpt = None,
    max_steps: MaxStepsOpt = None,
    lora: LoraOpt = None,
    set_: SetOpt = None,
) -> None:
    """Multi-turn GRPO of the policy on seeded tasks (TRL's environment hook), rewarded by the task grader."""
    flags = {"model": model, "tasks": task, "mode": mode, "world_model": world_model, "world": str(world) if world else None,
             "output_dir": out_dir, "max_steps": max_steps, "lora": lora}
    run_trainer_command(
        config, set_, flags, "configs/agent/train.yaml", ("agentworld.agents.train", "load_agent_config", "train_agent"),
        lambda cfg: f"[bold]agent GRPO[/]: {cfg.model} on {', '.join(cfg.tasks)} ({cfg.mode}) -> {cfg.output_dir}",
    )


@app.command("bc")
def behaviour_clone(
    config: Annotated[Path | None, typer.Option("--config", help="YAML config (see configs/agent/bc.yaml).")] = None,
    model: TrainModelOpt = None,
    task: TaskOpt = None,
    mode: Annotated[str | None, typer.Option("--mode", "-m", help="Where the solutions are played: real (default) or sim.")] = None,
    world_model: Annotated[str | None, typer.Option("--world-model", "-w", metavar="SPEC", help="The simulator's world model (--mode sim).")] = None,
    world: WorldOpt = None,
    out_dir: TrainOutOpt = None,
    conversations: Annotated[Path | None, typer.Option("--conversations", help="JSONL of the played conversations (default: OUT/conversations.jsonl; reused on rerun).")] = None,
    max_steps: MaxStepsOpt = None,
    lora: LoraOpt = None,
    set_: SetOpt = None,
) -> None:
    """Behaviour cloning: the tasks' scripted solutions, played on training seeds, learned as the tool-calling conversation agent train uses."""
    flags = {"model": model, "tasks": task, "mode": mode, "world_model": world_model, "world": str(world) if world else None,
             "output_dir": out_dir, "conversations": str(conversations) if conversations else None,
             "max_steps": max_steps, "lora": lora}
    run_trainer_command(
        config, set_, flags, "configs/agent/bc.yaml", ("agentworld.agents.bc", "load_bc_config", "train_bc"),
        lambda cfg: f"[bold]agent BC[/]: {cfg.model} on {', '.join(cfg.tasks)} (solutions played {cfg.mode}) -> {cfg.output_dir}",
    )


def run_trainer_command(
    config: Path | None, set_: list[str] | None, flags: dict[str, Any], template: str,
    entry: tuple[str, str, str], title: Callable[[Any], str],
) -> None:
    """Load a trainer's config (file, --set overrides, then flags), run it, print the result;
    every user mistake is one error line with a hint. ``entry``: the module and its config
    loader and trainer, imported only here (training dependencies are optional)."""
    import importlib

    from rich.markup import escape

    from agentworld.config import ConfigError, parse_overrides
    from agentworld.train.common import TrainInputError

    if config is not None and not config.exists():
        raise fail(f"no such config file: {config}", f"start from {template}")
    try:
        module = importlib.import_module(entry[0])
        overrides = {**parse_overrides(set_ or []), **{k: v for k, v in flags.items() if v is not None}}
        cfg = getattr(module, entry[1])(config, overrides)
    except ConfigError as exc:
        raise fail(escape(str(exc)), f"see {template} for the keys") from None
    except ImportError as exc:
        raise fail(f"training needs {exc.name or 'an optional dependency'}", "pip install 'agentworld[train]'") from None
    console.print(title(cfg))
    try:
        result = getattr(module, entry[2])(cfg)
    except (TrainInputError, KeyError, ValueError, FileNotFoundError) as exc:
        hint = getattr(exc, "hint", None) or f"check the config ({template})"
        raise fail(str(exc.args[0] if isinstance(exc, KeyError) else exc), hint) from None
    if result.resumed_from:
        console.print(f"resumed from {result.resumed_from}")
    out.print(f"{result.output_dir}: {result.global_step} steps; {json.dumps(result.metrics)}")
