"""The search environment over a small real corpus built from the installed Debian packages."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs import make, record_episode, registered
from agentworld.envs.mcp import run_scripted
from agentworld.envs.search import TEMPLATES, CorpusConfig, SearchEngine, SearchEnv, build_corpus, make_task
from agentworld.envs.search.index import passages, snippet
from agentworld.envs.search.sources import available_sources, roff_to_text
from agentworld.envs.search.tools import EXTRACT_CHARS
from agentworld.records.bench import load_bench_dir

PAGES = 40
RESULT = re.compile(r"^\[(\d+)\] (https?://\S+)\nTitle: .+\nSnippet: .+\nDate: \d{4}-\d{2}-\d{2}$")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [s for s, ok in available_sources().items() if not ok]
    assert not missing, f"corpus sources not installed: {missing} (run scripts/setup.sh)"
    path = tmp_path_factory.mktemp("corpus") / "small"
    manifest = build_corpus(path, CorpusConfig(max_pages=PAGES))
    assert all(c["pages"] == PAGES for c in manifest["counts"].values()), manifest
    return path


@pytest.fixture(scope="module")
def engine(corpus: Path) -> SearchEngine:
    return SearchEngine(corpus)


@pytest.fixture()
def env(engine: SearchEngine) -> SearchEnv:
    e = SearchEnv(engine=engine)
    e.reset(options={"task": "t"})
    return e


def _call(env: SearchEnv, name: str, **args: object) -> str:
    return env.step(json.dumps({"name": name, "arguments": args})).observation


def _page_urls(corpus: Path) -> list[str]:
    with sqlite3.connect(corpus / "pages.sqlite") as db:
        return [r[0] for r in db.execute("SELECT url FROM pages ORDER BY rowid")]


def test_corpus_reads_only_the_pinned_packages_files(corpus: Path) -> None:
    """No host file outside the packages setup.sh installs reaches the corpus."""
    from agentworld.envs.search.sources import APT_PACKAGES, package_files

    files = (corpus / "files.txt").read_text().splitlines()
    assert files and all(f.startswith("/usr/share/") for f in files)
    allowed = set().union(*(package_files(p) for pkgs in APT_PACKAGES.values() for p in pkgs))
    assert set(files) <= allowed, sorted(set(files) - allowed)[:5]
    setup = (Path(__file__).resolve().parents[1] / "scripts" / "setup.sh").read_text()
    assert all(re.search(rf"\b{re.escape(p)}\b", setup) for pkgs in APT_PACKAGES.values() for p in pkgs)


def test_urls_are_stable_across_builds(corpus: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_corpus(again, CorpusConfig(max_pages=PAGES))
    urls = _page_urls(corpus)
    assert urls == _page_urls(again)
    prefixes = ("https://docs.python.org/3.11/", "https://www.kernel.org/doc/html/v6.1/",
                "https://manpages.debian.org/bookworm/", "https://www.dict.org/bin/Dict?")
    assert all(u.startswith(prefixes) for u in urls)
    assert {p for p in prefixes if any(u.startswith(p) for u in urls)} == set(prefixes)


def test_search_finds_a_page_by_its_title_in_the_result_format(env: SearchEnv, engine: SearchEngine) -> None:
    for source in engine.sources():
        page = engine.sample_pages(source, 1, [3])[0]
        obs = _call(env, "web_search", query=page.title, top_k=5)
        blocks = obs.split("\n\n")
        assert 1 <= len(blocks) <= 5
        parsed = [RESULT.match(b) for b in blocks]
        assert all(parsed), obs
        assert [int(m.group(1)) for m in parsed] == list(range(1, len(blocks) + 1))
        assert page.url in [m.group(2) for m in parsed], (page.title, obs)
        assert len({m.group(2) for m in parsed}) == len(parsed)  # one result per page


def test_batch_search_answers_each_query_under_its_query(env: SearchEnv) -> None:
    obs = _call(env, "web_search", queries=["json encoder", "definition of abacus"], top_k=2)
    parts = obs.split("## Results for: ")[1:]
    assert [p.split("\n", 1)[0] for p in parts] == ["json encoder", "definition of abacus"]
    assert _call(env, "web_search", query="zzqqxxv") == "No results found."
    assert _call(env, "web_search").startswith("Error: web_search needs")
    assert _call(env, "web_search", query="x", top_k=50).startswith("Error: 'top_k' must be between 1 and 10")
    assert _call(env, "web_search", queries=[]).startswith("Error: 'queries' must hold 1 to 5")


def test_extractor_truncates_pages_and_reads_on(env: SearchEnv, engine: SearchEngine) -> None:
    with sqlite3.connect(engine.path / "pages.sqlite") as db:
        url, text = db.execute("SELECT url, text FROM pages WHERE length(text) > ? LIMIT 1", (EXTRACT_CHARS + 100,)).fetchone()
    pieces, offset = [], 0
    while True:
        obs = _call(env, "web_extractor", url=url, **({"offset": offset} if offset else {}))
        assert obs.startswith(f"URL: {url}\nTitle: ")
        body = obs.split("\n\n", 1)[1]
        m = re.search(r"\n\n\[Content truncated: showing characters (\d+)-(\d+) of (\d+)\. Call web_extractor with offset=(\d+) to read more\.\]$", body)
        if not m:
            pieces.append(body)
            break
        assert int(m.group(3)) == len(text) and int(m.group(4)) == int(m.group(2))
        pieces.append(body[: m.start()])
        offset = int(m.group(4))
    assert "".join(pieces) == text and len(pieces) >= 2
    assert _call(env, "web_extractor", url=url + "-missing") == f"Error: failed to fetch {url}-missing: 404 Not Found"
    assert _call(env, "web_extractor", url="ftp:/x").startswith("Error: invalid URL")
    assert _call(env, "web_extractor", url=url, offset=10**9).startswith("Error: offset")


def test_memory_operations(env: SearchEnv) -> None:
    assert _call(env, "dict_memory", op="list") == "Memory is empty."
    assert _call(env, "dict_memory", op="add", key="k", value="v1") == "Added 'k' (2 characters)."
    assert _call(env, "dict_memory", op="add", key="k", value="v2").startswith("Error: key 'k' already exists")
    assert _call(env, "dict_memory", op="update", key="k", value="v3") == "Updated 'k' (2 characters)."
    assert _call(env, "dict_memory", op="update", key="z", value="v").startswith("Error: key 'z' not found")
    assert _call(env, "dict_memory", op="get", key="k") == "v3"
    assert _call(env, "dict_memory", op="list") == "1 entries:\n- k: v3"
    assert _call(env, "dict_memory", op="remove", key="k") == "Removed 'k'."
    assert _call(env, "dict_memory", op="get", key="k") == "Error: key 'k' not found"
    assert _call(env, "dict_memory", op="pop").startswith("Error: unknown op")
    assert _call(env, "nope").startswith("Error: unknown tool 'nope'")
    assert env.step("{").observation.startswith("Error: Parse error")
    env.reset()
    assert _call(env, "dict_memory", op="list") == "Memory is empty."  # memory is per episode


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_scripted_episodes_replay_identically(engine: SearchEngine, template: str) -> None:
    env = SearchEnv(engine=engine)
    for seed in (1, 2):
        task = make_task(engine, seed, template)
        traj = run_scripted(env, task, trajectory_id=f"{template}-{seed}", seed=seed)
        names = [json.loads(t.action)["name"] for t in traj.turns]
        assert names.count("web_search") >= 1 and names.count("web_extractor") >= 1 and len(traj.turns) >= 6
        assert sum(n != "dict_memory" for n in names) >= 3  # several searches and extractions
        assert traj.tools and traj.task_description == task.description
        replay = record_episode(SearchEnv(engine=engine), [t.action for t in traj.turns], trajectory_id="r",
                                options=task.reset_options())
        assert [t.observation for t in replay.turns] == [t.observation for t in traj.turns]


def test_passages_and_snippets() -> None:
    text = "\n\n".join(" ".join(f"w{i}_{j}" for j in range(50)) for i in range(5)) + "\n\n" + " ".join(["long"] * 300)
    chunks = list(passages(text, words=120))
    assert all(len(c.split()) <= 120 for c in chunks)
    assert " ".join(" ".join(chunks).split()) == " ".join(text.split())
    s = snippet("alpha " * 100 + "needle here " + "omega " * 100, "needle")
    assert "needle" in s and s.startswith("...") and s.endswith("...") and len(s) <= 250


def test_roff_rendering() -> None:
    name, text, date = roff_to_text('.TH LS 1 "2024-03-01" "GNU" "User Commands"\n.SH NAME\nls \\- list\n'
                                    ".SH SYNOPSIS\n.B ls\n[\\fIOPTION\\fR]...\n")
    assert name == "LS" and date == "2024-03-01"
    assert text == "NAME\nls - list\n\nSYNOPSIS\nls [OPTION]..."


def test_registered(corpus: Path) -> None:
    assert "search-v1" in registered()
    env = make("search-v1", corpus=corpus)
    assert isinstance(env, SearchEnv) and env.context().tools[0]["name"] == "web_search"


def test_collect_cli_writes_bench_and_resumes(corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["collect", "search", "--corpus", str(corpus), "--no-build", "--out", str(tmp_path / "s.jsonl"),
            "--bench-dir", str(tmp_path / "bench"), "--episodes", "2", "--test-episodes", "3"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    bench = load_bench_dir(tmp_path / "bench")
    assert not bench.errors and len({s.trajectory_id for s in bench.samples}) == 3
    assert all(s.domain == "search" and "web_search" in s.system_str for s in bench.samples)
    again = runner.invoke(app, args)
    assert "0 recorded, 5 already there" in " ".join(again.output.split())
    missing = runner.invoke(app, ["collect", "search", "--corpus", str(tmp_path / "none"), "--no-build"])
    assert missing.exit_code == 2 and "no search corpus" in missing.output


# -- the LLM-agent driver ------------------------------------------------------------------
def test_agent_reads_native_and_text_tooltool_calls() -> None:
    from openai.types.chat import ChatCompletionMessage

    from agentworld.envs.agent import openai_tools, tool_calls
    from agentworld.envs.search.tools import TOOLS

    native = ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": '{"query": "x"}'}}]})
    assert tool_calls(native) == [("c1", "web_search", {"query": "x"})]
    text = ChatCompletionMessage(role="assistant", content='ok <tool_call>{"name": "dict_memory", "arguments": {"op": "list"}}</tool_call>')
    assert [c[1:] for c in tool_calls(text)] == [("dict_memory", {"op": "list"})]
    assert tool_calls(ChatCompletionMessage(role="assistant", content="All done.")) == []
    fn = openai_tools(TOOLS)[1]
    assert fn["type"] == "function" and fn["function"]["parameters"]["required"] == ["url"]


def test_agent_records_bare_and_malformed_calls_for_the_env_to_answer(env: SearchEnv) -> None:
    from openai.types.chat import ChatCompletionMessage

    from agentworld.envs.agent import action_text, text_calls, tool_calls

    # A bare JSON call with its arguments as a JSON string reads as the decoded object.
    assert text_calls('Searching: {"name": "web_search", "arguments": "{\\"query\\": \\"x\\"}"}') == [
        ("web_search", {"query": "x"})]
    assert text_calls("Done; nothing {to call} here.") == []
    broken = ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": '{"query": '}}]})
    [(_, name, args)] = tool_calls(broken)
    assert args == '{"query": '  # kept as sent, so the env answers with its own error
    action = action_text(name, args)
    assert json.loads(action) == {"name": "web_search", "arguments": '{"query": '}
    assert env.step(action).observation.startswith("Error")


def test_agent_driver_plays_an_episode_through_a_real_server(engine: SearchEngine, tmp_path: Path) -> None:
    """The served model is the retrieval backend over (conversation turn -> next tool call)
    pairs from a scripted episode: a nearest-neighbour policy behind ``agentworld serve``'s
    app, whose answers the driver must parse and act on."""
    import asyncio
    import socket
    import threading
    import time

    import uvicorn

    from agentworld.envs.agent import AgentConfig, tool_response
    from agentworld.envs.mcp.agent import run_agent
    from agentworld.models import load_backend
    from agentworld.models.serve import create_app
    from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

    task = make_task(engine, 4, "compare")
    demo = run_scripted(SearchEnv(engine=engine), task, trajectory_id="demo", seed=4)
    prompts = [task.description] + [tool_response(t.observation) for t in demo.turns]
    replies = [f"<tool_call>{t.action}</tool_call>" for t in demo.turns] + ["Both pages are noted."]
    store = tmp_path / "policy.jsonl"
    write_trajectories(store, [Trajectory(id="policy", domain="search",
                                          turns=[Turn(action=a, observation=o) for a, o in zip(prompts, replies, strict=True)])])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(load_backend("retrieval", source=store, domain="search"), model_name="nn-policy")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
            time.sleep(0.02)
        config = AgentConfig(model="nn-policy", base_url=f"http://127.0.0.1:{port}/v1", native_tools=False,
                             max_turns=len(demo.turns) + 2)
        traj = asyncio.run(run_agent(SearchEnv(engine=engine), task, config, trajectory_id="agent", seed=4))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert traj.provenance.agent == "nn-policy" and traj.tools and traj.task_description == task.description
    assert [t.action for t in traj.turns] == [t.action for t in demo.turns]
    assert [t.observation for t in traj.turns] == [t.observation for t in demo.turns]
    assert "Both pages are noted." in traj.final_answer  # the policy server wraps replies in its output tags


def test_collect_cli_records_llm_agent_episodes(engine: SearchEngine, corpus: Path, tmp_path: Path) -> None:
    """``collect search --agent openai:MODEL@URL`` drives episodes through a real served policy: the
    retrieval backend behind ``agentworld serve`` answering with a scripted episode's calls."""
    from agentworld.envs.agent import tool_response
    from agentworld.launch import launched
    from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories

    task = make_task(engine, 4, "compare")
    demo = run_scripted(SearchEnv(engine=engine), task, trajectory_id="demo", seed=4)
    prompts = [task.description] + [tool_response(t.observation) for t in demo.turns]
    replies = [f"<tool_call>{t.action}</tool_call>" for t in demo.turns] + ["Both pages are noted."]
    store = tmp_path / "policy.jsonl"
    write_trajectories(store, [Trajectory(id="policy", domain="search",
                                          turns=[Turn(action=a, observation=o) for a, o in zip(prompts, replies, strict=True)])])
    out = tmp_path / "agent.jsonl"
    with launched("serve", "--backend", "retrieval:" + str(store) + ",domain=search",
                  "--served-model-name", "nn-policy") as url:
        res = CliRunner().invoke(app, [
            "collect", "search", "--corpus", str(corpus), "--no-build", "--out", str(out), "--episodes", "1",
            "--test-episodes", "0", "--template", "compare", "--agent", f"openai:nn-policy@{url}/v1",
            "--agent-text-tools"])
    assert res.exit_code == 0, res.output
    trajs = read_trajectories(out, strict=True).items
    assert len(trajs) == 1 and trajs[0].provenance.agent == "nn-policy" and trajs[0].turns
