"""The one backend spec grammar, its parser, and every command that takes a backend."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.models import KINDS, BackendSpec, BackendSpecError, backend_class, load_backend, parse_backend_spec
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

runner = CliRunner()
ALL = "openai, hf, smol, llamacpp, retrieval"


@pytest.mark.parametrize(("text", "name", "target", "url", "options"), [
    ("smol", "smol", None, None, {}),
    ("smol:runs/train/lora,packaged=false", "smol", "runs/train/lora", None, {"packaged": False}),
    ("hf:ckpt/,precision=bf16,max_batch=4", "hf", "ckpt/", None, {"precision": "bf16", "max_batch": 4}),
    ("retrieval:trajs.jsonl,domain=terminal", "retrieval", "trajs.jsonl", None, {"domain": "terminal"}),
    # Ollama-style model names keep their colon; the first '@' starts the URL.
    ("openai:qwen3:8b@http://h:8000/v1,max_retries=2,timeout=9.5", "openai", "qwen3:8b", "http://h:8000/v1",
     {"max_retries": 2, "timeout": 9.5}),
    ("openai@http://h/v1", "openai", None, "http://h/v1", {}),
    ('openai:m,extra_body={"top_k": 20}', "openai", "m", None, {"extra_body": {"top_k": 20}}),
])
def test_good_specs_parse_and_print_back(text, name, target, url, options) -> None:
    spec = parse_backend_spec(text)
    assert (spec.name, spec.target, spec.base_url, spec.options) == (name, target, url, options)
    assert parse_backend_spec(str(spec)) == spec  # the canonical text reads back as the same spec
    assert spec.kwargs() == {**options, **({KINDS[name].target: target} if target else {}), **({"base_url": url} if url else {})}


@pytest.mark.parametrize(("text", "message"), [
    ("vllm:m", f"unknown backend 'vllm' in 'vllm:m': choose one of {ALL}"),
    ("", "bad backend spec '': write [LABEL=]BACKEND[:TARGET][@URL][,KEY=VALUE...]"),
    ("hf", "the hf backend needs path: write hf:PATH"),
    ("retrieval,domain=mcp", "the retrieval backend needs source: write retrieval:TRAJECTORIES"),
    ("openai:model=x,base_url=http://h/v1", "options follow a comma"),  # the old judge dialect
    ("smol@http://h/v1", "only the openai backend takes an @URL"),
    ("openai:", "empty model after 'openai:'"),
    ("openai:m@", "empty URL after '@'"),
    ("openai:m,temperature=0.2", "no option 'temperature'; its options: model, base_url, api_key"),
    ("openai:m,max_retries=many", "max_retries='many' of the openai backend must be an integer"),
    ("smol,packaged=maybe", "must be true or false"),
    ("openai:m,extra_body=[1]", "must be a JSON object"),
    ("openai:m,http://h/v1", "bad option 'http://h/v1': write KEY=VALUE"),
    ("retrieval:a,source=b", "source is given twice"),
    ("judge=openai:m", "a LABEL= prefix only names judges"),
])
def test_bad_specs_say_what_is_wrong(text, message) -> None:
    with pytest.raises(BackendSpecError) as err:
        parse_backend_spec(text)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_options_come_from_opt_pairs_or_mappings_and_later_layers_win() -> None:
    spec = parse_backend_spec("openai:m@http://h/v1", ["api_key=0123", "max-retries=3"])
    assert spec.options == {"api_key": "0123", "max_retries": 3}  # a key stays text; dashes read as underscores
    assert parse_backend_spec("openai:m@http://a/v1", ["model=n", "base_url=http://b/v1"]) == \
        parse_backend_spec("openai:n@http://b/v1")
    assert parse_backend_spec("hf", {"path": Path("ckpt"), "max_batch": 2}).kwargs() == {"path": "ckpt", "max_batch": 2}
    assert parse_backend_spec("retrieval", ["source=a,b.jsonl"]).target == "a,b.jsonl"  # --opt values are verbatim
    with pytest.raises(BackendSpecError, match="bad option 'source'"):
        parse_backend_spec("retrieval", ["source"])
    labelled = parse_backend_spec("strict=openai:judge@http://h/v1", allow_label=True)
    assert labelled.label == "strict" and labelled.target == "judge" and str(labelled).startswith("strict=")
    assert parse_backend_spec("hf", complete=False).kwargs() == {}  # required parts may come later (configs)


def test_declared_options_are_the_constructors_arguments() -> None:
    """The table the parser checks against must match what each backend really takes."""
    for name, kind in KINDS.items():
        cls = backend_class(name)
        params = set(inspect.signature(cls.__init__).parameters) - {"self", "options"}
        if name == "smol":  # SmolBackend passes the rest on to HFBackend (and sets path/revision itself)
            params |= set(inspect.signature(backend_class("hf").__init__).parameters) - {"self", "path", "revision"}
        assert set(kind.options) == params, name
        assert kind.target in kind.options


def test_load_backend_takes_a_spec_string_or_a_parsed_spec(tmp_path) -> None:
    store = tmp_path / "t.jsonl"
    write_trajectories(store, [Trajectory(id="t", domain="terminal", turns=[Turn(action="ls", observation="a b")] * 2)])
    a = load_backend(f"retrieval:{store},domain=terminal")
    b = load_backend("retrieval", source=store, domain="terminal")
    c = load_backend(BackendSpec(name="retrieval", target=str(store), options={"domain": "terminal"}))
    assert a.model_id == b.model_id == c.model_id and a.domain == "terminal"
    with pytest.raises(BackendSpecError, match="no option 'sorce'"):
        load_backend("retrieval", sorce=store)


def test_parsing_a_spec_imports_no_ml_stack() -> None:
    probe = ("import sys\nfrom agentworld.models import parse_backend_spec\n"
             "parse_backend_spec('hf:ckpt,precision=bf16'); parse_backend_spec('smol'); parse_backend_spec('openai:m@u')\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'peft', 'trl'}))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "[]", res.stderr


def _clean_error(res, *needles: str) -> None:
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in text, text


def test_every_backend_command_rejects_a_bad_spec_cleanly(tmp_path) -> None:
    """Each command parses --backend before any other work and names the valid backends."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_time", "inputSchema": {"type": "object"}}]))
    actions = tmp_path / "actions.json"
    actions.write_text("[]")
    (tmp_path / "bench").mkdir()
    commands = [
        ["predict", "--domain", "terminal", "--action", "ls"],
        ["serve"],
        ["sim", "serve", "--tools", str(tools)],
        ["sim", "mcp", "--tools", str(tools)],
        ["sim", "run", str(actions), "--tools", str(tools), "-o", str(tmp_path / "o.jsonl")],
        ["sim", "replay", str(tmp_path / "none.jsonl"), "--cache", str(tmp_path / "c.sqlite")],
        ["sim", "drift", "--env", "terminal-v1", "--actions", str(actions)],
        ["bench", "infer", str(tmp_path / "bench"), "-o", str(tmp_path / "p.jsonl")],
    ]
    for args in commands:
        _clean_error(runner.invoke(app, [*args, "-b", "vllm:qwen3"]), "unknown backend 'vllm'", ALL, "--backend")
    _clean_error(runner.invoke(app, [*commands[0], "-b", "hf:ckpt", "--opt", "precision"]), "bad option 'precision'")
    _clean_error(runner.invoke(app, [*commands[0], "-b", "hf", "--opt", "path=" + str(tmp_path / "nowhere")]),
                 "cannot load backend", "no config.json")


def test_replay_without_a_cache_is_refused_by_every_command(tmp_path) -> None:
    """``--cache-mode replay`` promises no live call: without ``--cache`` it is an error,
    never a silently uncached run."""
    store = tmp_path / "t.jsonl"
    write_trajectories(store, [Trajectory(id="a", domain="mcp", turns=[Turn(action="{}", observation="x")])])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_time", "inputSchema": {"type": "object"}}]))
    actions = tmp_path / "actions.json"
    actions.write_text("[]")
    spec = ["-b", f"retrieval:{store}", "--cache-mode", "replay"]
    for args in (["predict", "--domain", "mcp", "--action", "{}"],
                 ["sim", "run", str(actions), "--tools", str(tools), "-o", str(tmp_path / "o.jsonl")]):
        _clean_error(runner.invoke(app, [*args, *spec]), "--cache-mode replay needs --cache FILE")


def test_judges_take_a_label_and_a_spec(tmp_path) -> None:
    from test_bench_runs import make_bench

    bench, src = make_bench(tmp_path, 2, turns=1)
    preds = tmp_path / "p.jsonl"
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(preds), "-b", "retrieval", "--opt", f"source={src}"])
    assert res.exit_code == 0, res.output
    judge = ["bench", "judge", str(bench), "-p", str(preds), "--retries", "0"]
    _clean_error(runner.invoke(app, [*judge, "-j", "strict=vllm:m"]), "unknown backend 'vllm'", "--judge")
    _clean_error(runner.invoke(app, [*judge, "-j", "openai:model=m"]), "options follow a comma")
    # A closed port: the labelled judge fails every call, and its verdicts carry its label.
    res = runner.invoke(app, [*judge, "-j", "rules", "-j", "strict=openai:m@http://127.0.0.1:9/v1,max_retries=0"])
    assert res.exit_code == 0, res.output
    judged = [json.loads(x) for x in preds.with_suffix(".judged.jsonl").read_text().splitlines()]
    assert {r["judge"] for r in judged} == {"rules", "strict"}


def test_collect_commands_share_their_options() -> None:
    shared = ("--out", "--episodes", "--test-episodes", "--seed", "--workers", "--bench-dir", "--agent", "--agent-opt")
    for command in ("terminal", "mcp", "search", "swe"):
        res = runner.invoke(app, ["collect", command, "--help"], env={"COLUMNS": "250"})
        assert res.exit_code == 0
        for flag in shared:
            assert flag in res.output, (command, flag)
        assert "runs/collect/<domain>.jsonl" in res.output
        for gone in ("--start", "--agent-model", "--agent-base-url", "--base-url", "--model "):
            assert gone not in res.output, (command, gone)


def test_collect_agent_specs_fail_before_any_environment_work() -> None:
    cases = [
        (["--agent", "vllm:m"], ("unknown backend 'vllm'", "--agent")),
        (["--agent", "hf:ckpt"], ("an agent runs through an OpenAI-compatible endpoint",)),
        (["--agent", "openai@http://127.0.0.1:9/v1"], ("names no model",)),
        (["--agent", "openai:m@http://127.0.0.1:9/v1,max_retries=1"], ("no option 'max_retries'", "api_key, timeout")),
        (["--agent-opt", "api_key=x"], ("--agent-opt is for an LLM agent",)),
    ]
    for command in ("terminal", "mcp", "search", "swe"):
        for args, needles in cases:
            _clean_error(runner.invoke(app, ["collect", command, *args]), *needles)


def test_help_shows_the_whole_grammar() -> None:
    for args in (["predict"], ["serve"], ["sim", "run"], ["bench", "infer"]):
        res = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "250"})
        assert "[LABEL=]BACKEND[:TARGET][@URL][,KEY=VALUE...]" in res.output, args
