"""``agentworld collect mcp|search``: record tool-use episodes in real MCP servers and the offline search engine."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail, out
from agentworld.cli.collect._app import AgentNative, Collection, Templates, collect_command


def _agent(collection: Collection, native: bool) -> Any:
    settings = collection.agent_settings()
    if settings is None:
        return None
    from agentworld.envs.agent import AgentConfig

    return AgentConfig(**settings, native_tools=native)


def _check_templates(kind: str, names: list[str] | None, templates: Any) -> None:
    for name in names or []:
        if name not in templates:
            raise fail(f"unknown {kind} task template {name!r}", f"choose from: {', '.join(templates)}")


def _play(env: Any, task: Any, config: Any, job: Any, environment: str) -> Any:
    """One tool-use episode: the scripted policy, or the LLM agent when one is configured."""
    if config is None:
        from agentworld.envs.mcp.episode import run_scripted

        return run_scripted(env, task, trajectory_id=job.job_id, seed=job.seed, environment=environment)
    import asyncio

    from agentworld.envs.mcp.agent import run_agent

    # Worker threads own no event loop; the episode finishes here, before the env closes.
    return asyncio.run(run_agent(env, task, config, trajectory_id=job.job_id, seed=job.seed, environment=environment))


def mcp_prereqs(servers: list[str]) -> list[str]:
    """What a node lacks to run these MCP servers (checked on each Ray node)."""
    from agentworld.envs.mcp import missing_servers

    return missing_servers(servers)


def search_prereqs(corpus: Path) -> list[str]:
    """What a node lacks to run search episodes: the corpus at the same path."""
    from agentworld.envs.search.index import corpus_ready

    return [] if corpus_ready(corpus) else [f"no search corpus at {corpus}"]


@collect_command("mcp", episodes=20, test_episodes=30)
def collect_mcp(collection: Collection, template: Templates = None, agent_native_tools: AgentNative = True) -> None:
    """Record episodes against real MCP servers (time, git, fetch, filesystem, memory, everything, sequential-thinking)."""
    from agentworld.envs.mcp import TEMPLATES, McpEnv, make_task, missing_servers
    from agentworld.envs.mcp.tasks import template_families

    _check_templates("MCP", template, TEMPLATES)
    config = _agent(collection, agent_native_tools)
    needed = sorted({s for name in (template or TEMPLATES) for s in make_task(0, name).options["servers"]})
    if problems := missing_servers(needed):
        raise fail("some MCP servers cannot start:\n  " + "\n  ".join(problems), "run scripts/setup.sh")

    def run_one(job: Any) -> Any:
        task = make_task(job.seed, job.task)
        with McpEnv() as env:
            return _play(env, task, config, job, "mcp/" + "+".join(task.options["servers"]))

    collection.run("mcp", sorted(TEMPLATES), run_one, template, template_families(), prereq=partial(mcp_prereqs, needed))


@collect_command("search", episodes=20, test_episodes=30)
def collect_search(
    collection: Collection,
    template: Templates = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus folder (default: the user cache).")] = None,
    build: Annotated[bool, typer.Option("--build/--no-build", help="Build the corpus first if it is missing.")] = True,
    rebuild: Annotated[bool, typer.Option(help="Rebuild the corpus even if it exists.")] = False,
    max_pages: Annotated[int | None, typer.Option(help="Pages per source when building (small corpora for CI).")] = None,
    source: Annotated[list[str] | None, typer.Option("--source", help="Corpus sources to build (repeatable).")] = None,
    agent_native_tools: AgentNative = True,
) -> None:
    """Record episodes with the offline search engine (web_search, web_extractor, dict_memory)."""
    from agentworld.envs.search import TEMPLATES, CorpusConfig, SearchEngine, SearchEnv, make_task
    from agentworld.envs.search.index import build_corpus, corpus_ready, default_corpus_dir
    from agentworld.envs.search.sources import APT_PACKAGES, SOURCES, available_sources

    _check_templates("search", template, TEMPLATES)
    config = _agent(collection, agent_native_tools)
    corpus = corpus or default_corpus_dir("full" if max_pages is None else f"max{max_pages}")
    if rebuild or not corpus_ready(corpus):
        if not build:
            raise fail(f"no search corpus at {corpus}", "drop --no-build to build it, or pass --corpus")
        sources = source or list(SOURCES)
        have = available_sources()
        if bad := [s for s in sources if s not in SOURCES]:
            raise fail(f"unknown corpus source(s): {', '.join(bad)}", f"choose from: {', '.join(SOURCES)}")
        if missing := [s for s in sources if not have[s]]:
            pkgs = " ".join(p for s in missing for p in APT_PACKAGES[s])
            raise fail(f"corpus sources not installed: {', '.join(missing)}", f"apt-get install {pkgs} (or run scripts/setup.sh)")
        with console.status(f"building search corpus in {corpus} (a few minutes for the full corpus)") as status:
            manifest = build_corpus(corpus, CorpusConfig(sources=sources, max_pages=max_pages),
                                    on_page=lambda s, n: n % 500 == 0 and status.update(f"indexing {s}: {n} pages"))
        out.print(f"corpus: {manifest['pages']} pages, {manifest['passages']} passages in {manifest['build_s']} s")
    engine = SearchEngine(corpus)

    def run_one(job: Any) -> Any:
        return _play(SearchEnv(engine=engine), make_task(engine, job.seed, job.task), config, job, "search/offline")

    collection.run("search", sorted(TEMPLATES), run_one, template, prereq=partial(search_prereqs, corpus))
