"""``agentworld serve`` as a real subprocess, and the ``openai`` backend talking to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentworld.domains import DOMAINS, get_domain
from agentworld.launch import launched
from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.models.openai_api import OpenAIBackend
from agentworld.models.serve import create_app, prompt_domain
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.prompts import NUM_VARIANTS, build_messages, build_system_prompt
from agentworld.records.trajectory import SimContext, Trajectory, Turn, write_trajectories


def _serve(*args: str) -> Iterator[str]:
    with launched("serve", *args) as url:
        yield url


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("store") / "trajs.jsonl"
    turns = [Turn(action=f"echo {w}", observation=f"{w}\nroot@sandbox:/workspace#") for w in ("alpha", "beta", "gamma")]
    turns.append(Turn(action="whoami", observation="root", reasoning="The sandbox runs as root."))
    write_trajectories(path, [Trajectory(id="t", domain="terminal", turns=turns)])
    return path


@pytest.fixture(scope="module")
def retrieval_server(store: Path) -> Iterator[str]:
    yield from _serve("--backend", "retrieval:" + str(store), "--served-model-name", "wm")


@pytest.fixture(scope="module")
def flaky_server(store: Path) -> Iterator[str]:
    yield from _serve(
        "--backend", "retrieval:" + str(store), "--served-model-name", "wm",
        "--fail-rate", "0.4", "--seed", "7", "--split-reasoning",
    )


@pytest.fixture(scope="module")
def hf_server(tmp_path_factory) -> Iterator[str]:
    ckpt = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    yield from _serve("--backend", "hf:" + str(ckpt), "--served-model-name", "tiny")


def _msgs(action: str) -> list[dict[str, str]]:
    return build_messages(build_system_prompt("terminal"), [], action)


def _client(url: str, **kw) -> OpenAIBackend:
    return OpenAIBackend("wm", base_url=f"{url}/v1", backoff_s=0.01, backoff_max_s=0.05, jitter_seed=0, **kw)


async def test_models_and_completion(retrieval_server: str) -> None:
    listed = httpx.get(f"{retrieval_server}/v1/models").json()
    assert [m["id"] for m in listed["data"]] == ["wm"]
    wm = WorldModel(_client(retrieval_server))
    [pred] = await wm.predict(_msgs("echo beta"))
    assert pred.ok and pred.observation == "beta\nroot@sandbox:/workspace#"
    assert pred.backend == "openai" and pred.model == "wm"
    # A <think> block left in the content is still reasoning, not observation.
    [pred] = await wm.predict(_msgs("whoami"))
    assert pred.ok and pred.observation == "root" and pred.reasoning == "The sandbox runs as root."
    await wm.aclose()


def test_wire_format(retrieval_server: str) -> None:
    body = {"model": "wm", "messages": _msgs("echo gamma"), "n": 2, "max_tokens": 50}
    r = httpx.post(f"{retrieval_server}/v1/chat/completions", json=body).json()
    assert r["object"] == "chat.completion" and len(r["choices"]) == 2
    assert r["choices"][0]["message"]["role"] == "assistant"
    assert "gamma" in r["choices"][0]["message"]["content"]
    bad = httpx.post(f"{retrieval_server}/v1/chat/completions", json={"messages": "nope"})
    assert bad.status_code == 400 and "error" in bad.json()
    wrong_turn = httpx.post(f"{retrieval_server}/v1/chat/completions", json={"messages": [{"role": "assistant", "content": "x"}]})
    assert wrong_turn.status_code == 400


async def test_retries_ride_out_a_flaky_server(flaky_server: str) -> None:
    backend = _client(flaky_server, max_retries=10)
    wm = WorldModel(backend, concurrency=4)
    actions = [f"echo {w}" for w in ("alpha", "beta", "gamma")] * 4
    results = {i: p async for i, p in wm.map([_msgs(a) for a in actions])}
    assert all(results[i][0].ok for i in range(len(actions)))
    injected = httpx.get(f"{flaky_server}/stats").json()["injected_failures"]
    assert injected > 0 and backend.usage.retries == injected
    assert backend.usage.requests == len(actions) + injected and backend.usage.failures == 0
    # Reasoning split out by the server arrives as reasoning_content.
    [pred] = await wm.predict(_msgs("whoami"))
    assert pred.ok and pred.reasoning == "The sandbox runs as root." and "<think>" not in pred.text
    await wm.aclose()


async def test_without_retries_failures_are_reported_not_raised(flaky_server: str) -> None:
    backend = _client(flaky_server, max_retries=0)
    wm = WorldModel(backend, concurrency=4)
    preds = [p async for _, [p] in wm.map([_msgs("echo alpha")] * 20)]
    failed = [p for p in preds if p.error]
    assert failed and len(failed) < 20
    assert all(("RateLimitError" in p.error or "InternalServerError" in p.error) for p in failed)
    assert backend.usage.failures == len(failed) == wm.stats.failures
    await wm.aclose()


async def test_concurrency_limit_and_batching(hf_server: str) -> None:
    backend = OpenAIBackend("tiny", base_url=f"{hf_server}/v1")
    wm = WorldModel(backend, concurrency=3)
    msgs = [_msgs(f"ls {'-l ' * i}") for i in range(12)]
    config = GenerationConfig(max_tokens=8)
    preds = {i: p async for i, p in wm.map(msgs, config)}
    assert len(preds) == 12 and not any(p[0].error for p in preds.values())
    assert all(p[0].completion_tokens and p[0].prompt_tokens for p in preds.values())
    assert wm.stats.peak_in_flight == 3
    stats = httpx.get(f"{hf_server}/stats").json()
    assert stats["peak_in_flight"] <= 3
    # 16 clients at once: the server batches them into few generate calls.
    wide = WorldModel(OpenAIBackend("tiny", base_url=f"{hf_server}/v1"), concurrency=16)
    before = httpx.get(f"{hf_server}/stats").json()
    _ = [p async for p in wide.map(msgs + msgs[:4], config)]
    after = httpx.get(f"{hf_server}/stats").json()
    assert after["peak_batch_rows"] > 1 and after["batches"] - before["batches"] < 16
    await wm.aclose()
    await wide.aclose()


def test_one_request_cannot_hold_the_model_for_everyone(tmp_path: Path) -> None:
    """A client asking for a million tokens gets the server's limit; one asking for 10,000
    completions is refused; the next, ordinary request is answered at once."""
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    with launched("serve", "--backend", "hf:" + str(ckpt), "--served-model-name", "tiny",
                  "--max-tokens-limit", "6", "--max-n", "2") as url:
        chat = f"{url}/v1/chat/completions"
        greedy = {"model": "tiny", "messages": _msgs("ls"), "temperature": 0.0}
        answers = [httpx.post(chat, json={**greedy, "messages": _msgs("ls -la " * i), "max_tokens": 1_000_000},
                              timeout=120).json() for i in range(1, 6)]
        assert all(a["usage"]["completion_tokens"] <= 6 for a in answers), answers
        assert any(a["choices"][0]["finish_reason"] == "length" for a in answers), answers
        many = httpx.post(chat, json={**greedy, "n": 10_000, "max_tokens": 4}, timeout=60)
        assert many.status_code == 400 and "--max-n" in many.json()["error"]["message"]
        ok = httpx.post(chat, json={**greedy, "n": 2, "max_tokens": 4}, timeout=60).json()
        assert len(ok["choices"]) == 2


def test_openai_backend_needs_a_model(monkeypatch) -> None:
    from agentworld.models import BackendError

    monkeypatch.delenv("AGENTWORLD_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(BackendError, match="model"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTWORLD_MODEL", "m")
    monkeypatch.setenv("AGENTWORLD_BASE_URL", "http://127.0.0.1:9/v1")
    b = OpenAIBackend(revision="r1")
    assert b.model_id == "m@r1" and str(b.client.base_url).startswith("http://127.0.0.1:9")
    kwargs = b.request([{"role": "user", "content": "x"}], GenerationConfig(top_k=20, seed=3, n=2, stop=("END",)))
    assert kwargs["top_k"] == 20 and kwargs["seed"] == 3 and kwargs["n"] == 2
    assert kwargs["stop"] == ["END"]


@pytest.fixture(scope="module")
def token_server(store: Path) -> Iterator[str]:
    yield from _serve("--backend", "retrieval:" + str(store), "--served-model-name", "wm",
                      "--token", "tok-123", "--max-request-bytes", "65536")


async def test_the_token_is_the_api_key(token_server: str) -> None:
    assert httpx.get(f"{token_server}/health").status_code == 200  # liveness stays open
    for path in ("/v1/models", "/stats"):
        assert httpx.get(f"{token_server}{path}").status_code == 401
        assert httpx.get(f"{token_server}{path}", headers={"Authorization": "Bearer tok-12"}).status_code == 401
    assert httpx.get(f"{token_server}/v1/models", headers={"Authorization": "Bearer tok-123"}).status_code == 200
    body = {"model": "wm", "messages": _msgs("echo beta")}
    assert httpx.post(f"{token_server}/v1/chat/completions", json=body).status_code == 401
    # The openai SDK sends its api_key as the bearer token.
    wm = WorldModel(_client(token_server, api_key="tok-123"))
    [pred] = await wm.predict(_msgs("echo beta"))
    assert pred.ok and pred.observation == "beta\nroot@sandbox:/workspace#"
    [bad] = await WorldModel(_client(token_server, api_key="wrong", max_retries=0)).predict(_msgs("echo beta"))
    assert bad.error and "401" in bad.error and "bearer token" in bad.error
    await wm.aclose()
    # Bodies over --max-request-bytes are refused before they are read.
    big = {"model": "wm", "messages": _msgs("x" * 70_000)}
    r = httpx.post(f"{token_server}/v1/chat/completions", json=big, headers={"Authorization": "Bearer tok-123"})
    assert r.status_code == 413 and r.json()["error"]["type"] == "too_large" and "65536" in r.json()["error"]["message"]



def test_foreign_origin_and_rebinding_host_get_openai_shaped_403s(token_server: str) -> None:
    """A web page (its Origin) or a rebinding name (its Host) is refused before the token
    is even looked at, in the OpenAI error shape; the same request from a client is served."""
    body, auth = {"model": "wm", "messages": _msgs("echo beta")}, {"Authorization": "Bearer tok-123"}
    port = token_server.rsplit(":", 1)[1]
    for headers in ({"Origin": "http://evil.example"}, {"Host": f"evil.example:{port}"}):
        r = httpx.post(f"{token_server}/v1/chat/completions", json=body, headers={**auth, **headers})
        assert r.status_code == 403 and r.json()["error"]["type"] in ("forbidden_origin", "forbidden_host"), headers
        assert "--allow-" in r.json()["error"]["message"]
    # Host is checked on /health too; a probe (no Origin, its own Host) still reads it.
    assert httpx.get(f"{token_server}/health", headers={"Host": f"evil.example:{port}"}).status_code == 403
    assert httpx.get(f"{token_server}/health").status_code == 200
    assert httpx.post(f"{token_server}/v1/chat/completions", json=body, headers=auth).status_code == 200


@pytest.fixture(scope="module")
def malformed_server(store: Path) -> Iterator[str]:
    yield from _serve(
        "--backend", "retrieval:" + str(store), "--served-model-name", "wm",
        "--fail-rate", "0.4", "--fault", "malformed", "--seed", "3",
    )


async def test_malformed_200s_are_retried_then_counted(malformed_server: str) -> None:
    backend = _client(malformed_server, max_retries=10)
    wm = WorldModel(backend, concurrency=4)
    actions = [f"echo {w}" for w in ("alpha", "beta", "gamma")] * 6
    results = {i: p async for i, p in wm.map([_msgs(a) for a in actions])}
    assert all(results[i][0].ok for i in range(len(actions)))
    injected = httpx.get(f"{malformed_server}/stats").json()["injected_failures"]
    assert injected > 0 and backend.usage.malformed == backend.usage.retries == injected
    await wm.aclose()
    # Without retries each malformed answer is a failed prediction, named and counted.
    backend = _client(malformed_server, max_retries=0)
    wm = WorldModel(backend, concurrency=4)
    preds = [p async for _, [p] in wm.map([_msgs("echo alpha")] * 40)]
    failed = [p for p in preds if p.error]
    assert failed and len(failed) < 40 and backend.usage.failures == len(failed) == wm.stats.failures
    reasons = {p.error.split(":")[0] for p in failed}
    assert all("200 response" in p.error for p in failed), reasons
    # Every kind of malformed body shows up among 40 seeded requests.
    for kind in ("not JSON", "not a chat completion", "no choices", "null content"):
        assert any(kind in p.error for p in failed), (kind, [p.error for p in failed])
    await wm.aclose()


def test_streaming_with_the_openai_sdk(retrieval_server: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{retrieval_server}/v1", api_key="x", max_retries=0)
    msgs = _msgs("echo beta")
    whole = client.chat.completions.create(model="wm", messages=msgs)
    chunks = list(client.chat.completions.create(model="wm", messages=msgs, stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content and "beta" in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == whole.usage.total_tokens
    # Without include_usage no usage chunk; the raw stream ends with [DONE].
    plain = list(client.chat.completions.create(model="wm", messages=msgs, stream=True))
    assert all(c.usage is None for c in plain) and plain[-1].choices[0].finish_reason == "stop"
    with httpx.stream("POST", f"{retrieval_server}/v1/chat/completions", json={"messages": msgs, "stream": True}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [line for line in r.iter_lines() if line]
    assert events[-1] == "data: [DONE]" and all(e.startswith("data: ") for e in events)


@pytest.fixture
def two_domains(store: Path, tmp_path: Path) -> Path:
    """A retrieval source over terminal and mcp turns: every request must say which."""
    both = tmp_path / "both"
    both.mkdir()
    (both / "terminal.jsonl").symlink_to(store)
    write_trajectories(both / "mcp.jsonl", [Trajectory(id="m", domain="mcp", turns=[
        Turn(action='{"name": "echo", "arguments": {"text": "beta"}}', observation='{"content": [], "isError": false}')])])
    return both


PLAIN = [{"role": "system", "content": "You are a shell."}, {"role": "user", "content": "echo beta"}]
"""A plain OpenAI client's request: no domain field, no agentworld system prompt."""


async def test_domain_travels_to_a_served_floor(two_domains: Path) -> None:
    """A floor over two domains behind ``serve``: the request's ``domain`` field picks the
    index (the openai backend sends it with send_domain), over what the system prompt
    says; with neither, the answer is a 400 that says what to pass, never a guess from
    another domain."""
    with launched("serve", "--backend", f"retrieval:{two_domains}", "--served-model-name", "wm") as url:
        wm = WorldModel(_client(url, send_domain=True))
        [pred] = await wm.predict(_msgs("echo beta"), domain="terminal")
        assert pred.ok and pred.observation == "beta\nroot@sandbox:/workspace#"
        [pred] = await wm.predict(_msgs("echo beta"), domain="mcp")
        assert pred.ok and pred.observation.startswith('{"content"')
        await wm.aclose()
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "wm", "messages": PLAIN})
        assert r.status_code == 400 and '"domain"' in r.json()["error"]["message"] and "--domain" in r.json()["error"]["message"]
        # Without send_domain the field is left out (hosted APIs reject unknown fields).
        assert "domain" not in _client(url).request(_msgs("ls"), GenerationConfig(), domain="terminal")


def test_a_plain_openai_client_gets_the_domain_of_its_system_prompt(two_domains: Path) -> None:
    import openai

    with launched("serve", "--backend", f"retrieval:{two_domains}", "--served-model-name", "wm") as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        said = lambda messages, **kw: client.chat.completions.create(model="wm", messages=messages, **kw).choices[0].message.content  # noqa: E731
        assert "beta\nroot@sandbox:/workspace#" in said(_msgs("echo beta"))
        call = '{"name": "echo", "arguments": {"text": "beta"}}'
        assert '{"content": []' in said(build_messages(build_system_prompt("mcp", variant=2), [], call))
        with pytest.raises(openai.BadRequestError) as refused:
            said(PLAIN)
        assert 'extra_body={"domain": ...}' in str(refused.value) and "--domain" in str(refused.value)
        assert "beta\nroot@sandbox:/workspace#" in said(PLAIN, extra_body={"domain": "terminal"})
    with launched("serve", "--backend", f"retrieval:{two_domains}", "--served-model-name", "wm", "--domain", "mcp") as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        assert '{"content": []' in said(PLAIN)  # the server's default
        assert "beta\nroot@sandbox:/workspace#" in said(_msgs("echo beta"))  # the prompt's domain, over the default


def test_the_domain_is_read_from_the_role_of_an_agentworld_prompt(store: Path) -> None:
    for domain in DOMAINS:
        for variant in range(NUM_VARIANTS):
            assert prompt_domain(build_messages(build_system_prompt(domain, variant=variant), [], "x")) == domain
    # A task that mentions another environment does not decide it; a foreign prompt names none.
    context = SimContext(task_description=f"Compare with {get_domain('web').environment}.")
    assert prompt_domain(build_messages(build_system_prompt("terminal", context), [], "ls")) == "terminal"
    assert prompt_domain(PLAIN) is None and prompt_domain([{"role": "user", "content": "ls"}]) is None
    with pytest.raises(ValueError, match="unknown domain 'shell'"):
        create_app(load_backend("retrieval", source=store), default_domain="shell")
