"""The ``collect`` group and what every environment's collect command shares: split seeds,
common options (``--out`` with one default layout, ``--episodes``, ``--test-episodes``,
``--seed``, ``--workers``, ``--bench-dir``, the ``--agent`` spec, declared once by
:func:`collect_command`), and running plus reporting a collection. Every collection
resumes: a rerun of the same command records only the episodes its output file lacks,
by job id ``{domain}-{side}-{template}-{seed}`` (:func:`job_id`; files written before the
template was part of it, ``{domain}-{side}-{seed}``, still count: :func:`resume_key`)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from agentworld.cli._common import (
    ExecutorOpt,
    RayAddressOpt,
    RayCpusOpt,
    RayMemoryOpt,
    RayWorkersOpt,
    console,
    executor_config,
    fail,
    out,
)

app = typer.Typer(help="Record ground-truth trajectories in real sandboxed environments.", no_args_is_help=True)

HELD_OUT = 1_000_000
"""Test-split seeds start here, so held-out episodes never share a seed with training ones."""

OUT_DIR = Path("runs/collect")
"""Default output: ``runs/collect/<domain>.jsonl``, the same layout for every environment."""

Out = Annotated[Path | None, typer.Option("--out", "-o", help="Trajectory JSONL (appended to; a rerun resumes) "
                                          "(default: runs/collect/<domain>.jsonl).")]
Episodes = Annotated[int, typer.Option(help="Training-split episodes (seeds --seed, --seed+1, ...).")]
TestEpisodes = Annotated[int, typer.Option(help="Held-out episodes; they become benchmark samples.")]
Seed = Annotated[int, typer.Option(help="First seed of each split (shift it to record new episodes).")]
Workers = Annotated[int, typer.Option(help="Episodes recorded in parallel (one sandbox each).")]
BenchDir = Annotated[Path | None, typer.Option(help="Write <domain>_test.jsonl here from held-out episodes.")]
Templates = Annotated[list[str] | None, typer.Option("--template", "-t", help="Only these task templates (repeatable).")]
Agent = Annotated[str, typer.Option("--agent", metavar="scripted|SPEC", help=(
    "The policy: `scripted`, or an LLM agent named by a backend spec, openai:MODEL@URL[,api_key=K,timeout=S] "
    "(key default: $OPENAI_API_KEY)."))]
AgentOpts = Annotated[list[str] | None, typer.Option("--agent-opt", metavar="KEY=VALUE",
                                                     help="Agent backend option (repeatable), e.g. api_key=sk-x.")]
AgentNative = Annotated[bool, typer.Option("--agent-native-tools/--agent-text-tools",
                                           help="LLM agent: OpenAI tool calling, or <tool_call> text for servers without it.")]

AGENT_OPTIONS = ("api_key", "timeout")
"""Backend options an agent takes; the rest of an agent's settings are per environment."""


def agent_settings(agent: str, opts: list[str] | None) -> dict[str, Any] | None:
    """``--agent``/``--agent-opt`` as agent config fields (model, base_url, api_key,
    timeout_s), or None for the scripted policy. An agent speaks to an OpenAI-compatible
    endpoint, so only ``openai`` specs are agents."""
    import os

    from agentworld.cli._backend import backend_spec

    if agent.strip() == "scripted":
        if opts:
            raise fail("--agent-opt is for an LLM agent", "add --agent openai:MODEL@URL")
        return None
    spec = backend_spec(agent, opts, flag="--agent")
    if spec.name != "openai":
        raise fail(f"--agent {agent!r}: an agent runs through an OpenAI-compatible endpoint",
                   "use --agent scripted or --agent openai:MODEL@URL")
    if not spec.target:
        raise fail(f"--agent {agent!r} names no model", "write --agent openai:MODEL@URL")
    if extra := sorted(set(spec.options) - set(AGENT_OPTIONS)):
        raise fail(f"--agent {agent!r}: an agent takes no option {extra[0]!r}", f"agent options: {', '.join(AGENT_OPTIONS)}")
    settings: dict[str, Any] = {"model": spec.target, "base_url": spec.base_url,
                                "api_key": spec.options.get("api_key") or os.environ.get("OPENAI_API_KEY") or "EMPTY"}
    if "timeout" in spec.options:
        settings["timeout_s"] = spec.options["timeout"]
    return settings


FAMILY_SPLIT_RULE = "template-v1+family"
"""``split_by`` of jobs whose domain groups templates in families: the template-v1 rule over
families (ranked by the family's name) instead of single templates."""


def job_id(domain: str, side: str, template: str | None, seed: int) -> str:
    """The resume key (and trajectory id) of one episode: two templates on the same seed are
    two jobs."""
    return f"{domain}-{side}-{template}-{seed}" if template else f"{domain}-{side}-{seed}"


def _recorded_template(task: str) -> str:
    # A recorded SWE episode names its bug, ``repair:<repo>:<mutation>``; its template is the repo.
    return task.split(":")[1] if task.startswith("repair:") and task.count(":") >= 2 else task


def resume_key(domain: str) -> Callable[[Any], str]:
    """A recorded trajectory -> its job id. An id of the older form ``{domain}-{side}-{seed}``
    is read with the template the trajectory recorded (``Provenance.task``), so files written
    before templates were part of the key resume as before; one without a recorded task keeps
    its old id and is recorded again under the new one."""
    legacy = re.compile(rf"{re.escape(domain)}-(train|test)-(\d+)")

    def key(traj: Any) -> str:
        prov = traj.provenance
        old = prov.job_id or traj.id
        match = legacy.fullmatch(old)
        if match is None or not prov.task:
            return old
        return job_id(domain, match.group(1), _recorded_template(prov.task), int(match.group(2)))

    return key


def split_families(domain: str, templates: list[str], categories: dict[str, str] | None = None) -> Any:
    """:func:`agentworld.envs.split.split_templates` over template families
    (:func:`agentworld.envs.templates.template_families`): near-duplicate templates are held
    out, or trained on, together. A family is ranked by its name and takes the category of
    the template of that name (else of its first member); a template alone in its family
    (the default) falls where it fell before."""
    from agentworld.envs.split import TemplateSplit, split_templates
    from agentworld.envs.templates import template_families

    family = template_families(domain, sorted(set(templates)))
    members: dict[str, list[str]] = {}
    for name, fam in family.items():
        members.setdefault(fam, []).append(name)
    if all(len(m) == 1 and m[0] == f for f, m in members.items()):
        return split_templates(domain, templates, families=categories)
    cats = categories or {}
    family_category = {f: cats.get(f if f in m else m[0], f) for f, m in members.items()}
    split = split_templates(domain, list(members), families=family_category if categories else None)
    return TemplateSplit(domain, tuple(sorted(n for f in split.train for n in members[f])),
                         tuple(sorted(n for f in split.test for n in members[f])))


def split_jobs(domain: str, episodes: int, test_episodes: int, seed: int, templates: list[str],
               only: list[str] | None = None, families: dict[str, str] | None = None) -> list[Any]:
    """Training jobs on seeds ``seed..`` over the training templates, held-out ones on
    ``HELD_OUT + seed..`` over the held-out templates (:mod:`agentworld.envs.split`, by
    template family: :func:`split_families`; ``families`` maps templates to their
    categories); each side cycles through its templates, restricted to ``only`` when given."""
    from agentworld.envs.collect import EpisodeJob
    from agentworld.envs.split import SPLIT_RULE
    from agentworld.envs.templates import template_families

    split = split_families(domain, templates, families)
    grouped = len(set(template_families(domain, sorted(set(templates))).values())) < len(set(templates))
    rule = FAMILY_SPLIT_RULE if grouped else SPLIT_RULE
    jobs = []
    for side, n, base, names in (("train", episodes, seed, split.train), ("test", test_episodes, HELD_OUT + seed, split.test)):
        names = [t for t in names if only is None or t in only]
        if n and not names:
            raise fail(f"{', '.join(only or [])}: no {side}-split {domain} template among them",
                       f"{side}-split templates: {', '.join(getattr(split, side))}")
        for i in range(n):
            s = base + i
            task = names[i % len(names)]
            jobs.append(EpisodeJob(job_id=job_id(domain, side, task, s), seed=s, split=side, task=task, split_by=rule))
    return jobs


def run_and_report(domain: str, jobs: list[Any], run_one: Callable[[Any], Any], out_path: Path | None, workers: int,
         bench_dir: Path | None, executor: Any = None, prereq: Callable[[], list[str]] | None = None) -> None:
    """Sweep what killed runs left, run the jobs on the shared runner (``out_path`` None:
    ``runs/collect/<domain>.jsonl``), print what was recorded, exit 1 if any failed.
    ``executor``: where episodes run; ``prereq``: the environment's check, run on each Ray node."""
    from agentworld.data.split import check_leakage, turn_fingerprint
    from agentworld.envs.collect import failures_path, run_collection
    from agentworld.envs.sweep import sweep_leftovers
    from agentworld.executors import ExecutorUnavailable

    out_path = out_path or OUT_DIR / f"{domain}.jsonl"
    if (swept := sweep_leftovers()).total:
        console.print(str(swept))
    if other_rules := _other_split_rules(out_path, {j.split_by for j in jobs} - {None}):
        console.print(f"[yellow]note:[/] {escape(str(out_path))} holds episodes split by {', '.join(other_rules)}, "
                      "which may put some templates on the other side: the file's two sides can then share a "
                      "template (the data leakage check reports it); record into another --out to keep them apart")
    # Held-out samples must not be training turns nor near-copies of training episodes (digits
    # masked), so a data build from the same recordings passes its leakage check.
    def near_copies(train: list[Any], held: list[Any]) -> list[str]:
        return [test_id for test_id, _, _ in check_leakage(train, held).near_duplicates]

    try:
        report = run_collection(jobs, run_one, out=out_path, workers=workers, bench_dir=bench_dir, desc=f"{domain} episodes",
                                turn_key=lambda t: turn_fingerprint(t.action, t.observation), near_duplicates=near_copies,
                                executor=executor, prereq=prereq, resume_key=resume_key(domain))
    except ExecutorUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    for note in report.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    out.print(f"{out_path}: {report.done} recorded, {report.skipped} already there, {report.failed} failed "
              f"({report.episodes_per_minute:.1f} episodes/min)")
    for path, n in report.bench_files.items():
        out.print(f"{path}: {n} samples")
    if report.bench_left_out:
        out.print(f"{report.bench_left_out} held-out episodes left out of the benchmark: they share a turn with, "
                  "or nearly copy, training episodes (record more with --test-episodes)")
    if report.failed:
        for job_id, msg in report.failures[:5]:
            console.print(f"[yellow]failed[/] {job_id}: {msg}")
        console.print(f"[yellow]hint:[/] details in {failures_path(out_path)}; run the same command again to retry them")
        raise typer.Exit(code=1)


def _other_split_rules(out_path: Path, rules: set[str]) -> list[str]:
    """The ``split_by`` rules of the episodes already in ``out_path`` other than ``rules``."""
    from agentworld.records.trajectory import read_trajectories

    if not rules or not out_path.exists():
        return []
    found = {getattr(t.provenance, "split_by", None) for t in read_trajectories(out_path).items}
    return sorted(r for r in found - rules if r)


@dataclass(frozen=True)
class Collection:
    """The options every collect command takes, handed to the command as one value."""

    out_path: Out = None
    episodes: Episodes = 20
    test_episodes: TestEpisodes = 30
    seed: Seed = 0
    workers: Workers = 2
    bench_dir: BenchDir = None
    agent: Agent = "scripted"
    agent_opt: AgentOpts = None
    executor: ExecutorOpt = "local"
    ray_address: RayAddressOpt = "auto"
    ray_workers: RayWorkersOpt = None
    ray_cpus: RayCpusOpt = 1.0
    ray_memory_mb: RayMemoryOpt = None

    def agent_settings(self) -> dict[str, Any] | None:
        """The ``--agent`` spec as agent config fields, or None for the scripted policy."""
        return agent_settings(self.agent, self.agent_opt)

    def executor_config(self) -> Any:
        """``--executor`` and the ``--ray-*`` options as one config (a clean error when Ray is missing)."""
        return executor_config(self.executor, self.ray_address, self.ray_workers, self.ray_cpus, self.ray_memory_mb)

    def run(self, domain: str, templates: list[str], run_one: Callable[[Any], Any], only: list[str] | None = None,
            families: dict[str, str] | None = None, prereq: Callable[[], list[str]] | None = None) -> None:
        """Split the templates and seeds into jobs, run them and report (``only``: the
        ``--template`` restriction; ``families``: see :func:`agentworld.envs.split.split_templates`;
        ``prereq``: what a Ray node must pass to get episodes -- a picklable function
        returning the problems it finds, e.g. ``functools.partial`` of a module-level one)."""
        executor = self.executor_config()
        jobs = split_jobs(domain, self.episodes, self.test_episodes, self.seed, templates, only, families)
        run_and_report(domain, jobs, run_one, self.out_path, self.workers, self.bench_dir, executor, prereq)


_LEADING = ("out_path", "episodes", "test_episodes", "seed", "workers", "bench_dir")
"""Shared options listed before a command's own in ``--help``; the agent ones come after."""


def collect_command(name: str, *, episodes: int = 20, test_episodes: int = 30) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``collect <name>``: a function ``(collection: Collection, *own options)``.

    Typer reads options from a signature, so the command it sees has the shared options
    (with this command's default episode counts) around the function's own, and gathers
    the shared ones into a :class:`Collection` before calling the function.
    """
    defaults = {"episodes": episodes, "test_episodes": test_episodes}
    hints = inspect.get_annotations(Collection, eval_str=True)

    def shared(names: list[str]) -> list[inspect.Parameter]:
        return [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=hints[n],
                                  default=defaults.get(n, getattr(Collection, n))) for n in names]

    def register(func: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(func, eval_str=True).parameters.values())[1:]
        names = [f.name for f in fields(Collection)]

        def command(**options: Any) -> None:
            collection = Collection(**{n: options.pop(n) for n in names})
            collection.executor_config()  # bad executor options fail before any setup (corpus, rootfs)
            func(collection, **options)

        command.__name__, command.__doc__ = func.__name__, func.__doc__
        trailing = [n for n in names if n not in _LEADING]
        params = [*shared(list(_LEADING)), *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own), *shared(trailing)]
        command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        app.command(name)(command)
        return func

    return register
