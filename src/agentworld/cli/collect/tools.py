"""``agentworld collect mcp|search``: record tool-use episodes in real MCP servers and the offline search engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail, out
from agentworld.cli.collect._app import app

HELD_OUT = 1_000_000
"""Test-split seeds start here, so held-out episodes never share a seed with training ones."""

Out = Annotated[Path | None, typer.Option("--out", "-o", help="Trajectory JSONL (appended to; resumable).")]
Episodes = Annotated[int, typer.Option(help="Training-split episodes.")]
TestEpisodes = Annotated[int, typer.Option(help="Held-out episodes; they become benchmark samples.")]
Seed = Annotated[int, typer.Option(help="First seed of each split.")]
Workers = Annotated[int, typer.Option(help="Episodes recorded in parallel.")]
BenchDir = Annotated[Path | None, typer.Option(help="Write <domain>_test.jsonl here from held-out episodes.")]
Templates = Annotated[list[str] | None, typer.Option("--template", "-t", help="Only these task templates (repeatable).")]
AgentModel = Annotated[str | None, typer.Option(help="Drive episodes with this model instead of the scripted policy.")]
AgentUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL for --agent-model.")]
AgentKey = Annotated[str, typer.Option(envvar="OPENAI_API_KEY", help="API key for --agent-model.")]
AgentNative = Annotated[bool, typer.Option("--agent-native-tools/--agent-text-tools",
                                           help="OpenAI tool calling, or <tool_call> text for servers without it.")]


def _jobs(domain: str, episodes: int, test_episodes: int, seed: int, templates: list[str] | None) -> list[Any]:
    from agentworld.envs.collect import EpisodeJob

    jobs = []
    for split, n, base in (("train", episodes, seed), ("test", test_episodes, HELD_OUT + seed)):
        for i in range(n):
            s = base + i
            template = templates[i % len(templates)] if templates else None
            jobs.append(EpisodeJob(job_id=f"{domain}-{split}-{s}", seed=s, split=split, task=template))
    return jobs


def _run(domain: str, jobs: list[Any], run_one: Callable[[Any], Any], out_path: Path, workers: int,
         bench_dir: Path | None) -> None:
    from agentworld.envs.collect import failures_path, run_collection

    report = run_collection(jobs, run_one, out=out_path, workers=workers, bench_dir=bench_dir, desc=f"{domain} episodes")
    out.print(f"{out_path}: {report.done} recorded, {report.skipped} already there, {report.failed} failed "
              f"({report.episodes_per_minute:.1f} episodes/min)")
    for path, n in report.bench_files.items():
        out.print(f"{path}: {n} samples")
    if report.failed:
        for job_id, msg in report.failures[:5]:
            console.print(f"[yellow]failed[/] {job_id}: {msg}")
        console.print(f"[yellow]hint:[/] details in {failures_path(out_path)}; run the same command again to retry them")
        raise typer.Exit(code=1)


def _agent(model: str | None, url: str | None, key: str, native: bool) -> Any:
    if model is None:
        return None
    from agentworld.envs.mcp.agent import AgentConfig

    return AgentConfig(model=model, base_url=url, api_key=key, native_tools=native)


@app.command("mcp")
def collect_mcp(
    out_path: Out = None,
    episodes: Episodes = 20,
    test_episodes: TestEpisodes = 30,
    seed: Seed = 0,
    workers: Workers = 2,
    bench_dir: BenchDir = None,
    template: Templates = None,
    agent_model: AgentModel = None,
    agent_base_url: AgentUrl = None,
    agent_api_key: AgentKey = "EMPTY",
    agent_native_tools: AgentNative = True,
) -> None:
    """Record episodes against real MCP servers (time, git, fetch, filesystem, memory, everything, sequential-thinking)."""
    from agentworld.envs.mcp import TEMPLATES, McpEnv, make_task, missing_servers, run_scripted

    for name in template or []:
        if name not in TEMPLATES:
            raise fail(f"unknown MCP task template {name!r}", f"choose from: {', '.join(TEMPLATES)}")
    needed = sorted({s for name in (template or TEMPLATES) for s in make_task(0, name).options["servers"]})
    if problems := missing_servers(needed):
        raise fail("some MCP servers cannot start:\n  " + "\n  ".join(problems), "run scripts/setup.sh")
    config = _agent(agent_model, agent_base_url, agent_api_key, agent_native_tools)

    def run_one(job: Any) -> Any:
        task = make_task(job.seed, job.task)
        env_id = "mcp/" + "+".join(task.options["servers"])
        with McpEnv() as env:
            if config is None:
                return run_scripted(env, task, trajectory_id=job.job_id, seed=job.seed, environment=env_id)
            import asyncio

            from agentworld.envs.mcp.agent import run_agent

            # Finish the agent's episode here, before the servers close (worker threads own no loop).
            return asyncio.run(run_agent(env, task, config, trajectory_id=job.job_id, seed=job.seed,
                                         environment=env_id))

    _run("mcp", _jobs("mcp", episodes, test_episodes, seed, template), run_one,
         out_path or Path("runs/collect/mcp.jsonl"), workers, bench_dir)


@app.command("search")
def collect_search(
    out_path: Out = None,
    episodes: Episodes = 20,
    test_episodes: TestEpisodes = 30,
    seed: Seed = 0,
    workers: Workers = 2,
    bench_dir: BenchDir = None,
    template: Templates = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus folder (default: the user cache).")] = None,
    build: Annotated[bool, typer.Option("--build/--no-build", help="Build the corpus first if it is missing.")] = True,
    rebuild: Annotated[bool, typer.Option(help="Rebuild the corpus even if it exists.")] = False,
    max_pages: Annotated[int | None, typer.Option(help="Pages per source when building (small corpora for CI).")] = None,
    source: Annotated[list[str] | None, typer.Option("--source", help="Corpus sources to build (repeatable).")] = None,
    agent_model: AgentModel = None,
    agent_base_url: AgentUrl = None,
    agent_api_key: AgentKey = "EMPTY",
    agent_native_tools: AgentNative = True,
) -> None:
    """Record episodes with the offline search engine (web_search, web_extractor, dict_memory)."""
    from agentworld.envs.search import TEMPLATES, CorpusConfig, SearchEngine, SearchEnv, make_task
    from agentworld.envs.search.index import build_corpus, corpus_ready, default_corpus_dir
    from agentworld.envs.search.sources import APT_PACKAGES, SOURCES, available_sources

    for name in template or []:
        if name not in TEMPLATES:
            raise fail(f"unknown search task template {name!r}", f"choose from: {', '.join(TEMPLATES)}")
    corpus = corpus or default_corpus_dir("full" if max_pages is None else f"max{max_pages}")
    if rebuild or not corpus_ready(corpus):
        if not build:
            raise fail(f"no search corpus at {corpus}", "drop --no-build to build it, or pass --corpus")
        sources = source or list(SOURCES)
        have = available_sources()
        if bad := [s for s in sources if s not in SOURCES]:
            raise fail(f"unknown corpus source(s): {', '.join(bad)}", f"choose from: {', '.join(SOURCES)}")
        if missing := [s for s in sources if not have[s]]:
            pkgs = " ".join(APT_PACKAGES[s] for s in missing)
            raise fail(f"corpus sources not installed: {', '.join(missing)}", f"apt-get install {pkgs} (or run scripts/setup.sh)")
        with console.status(f"building search corpus in {corpus} (a few minutes for the full corpus)") as status:
            manifest = build_corpus(corpus, CorpusConfig(sources=sources, max_pages=max_pages),
                                    on_page=lambda s, n: n % 500 == 0 and status.update(f"indexing {s}: {n} pages"))
        out.print(f"corpus: {manifest['pages']} pages, {manifest['passages']} passages in {manifest['build_s']} s")
    engine = SearchEngine(corpus)
    config = _agent(agent_model, agent_base_url, agent_api_key, agent_native_tools)

    def run_one(job: Any) -> Any:
        task = make_task(engine, job.seed, job.task)
        env = SearchEnv(engine=engine)
        if config is None:
            from agentworld.envs.mcp.episode import run_scripted

            return run_scripted(env, task, trajectory_id=job.job_id, seed=job.seed, environment="search/offline")
        from agentworld.envs.mcp.agent import run_agent

        return run_agent(env, task, config, trajectory_id=job.job_id, seed=job.seed, environment="search/offline")

    _run("search", _jobs("search", episodes, test_episodes, seed, template), run_one,
         out_path or Path("runs/collect/search.jsonl"), workers, bench_dir)
