"""The knowledge-graph memory server's calls on real recordings: after every turn the
ledger's graph is what the real server holds (each real ``read_graph`` shows exactly the
facts the ledger recorded), and a read that leaves a stored fact out is a conflict."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.domains.toolcall import entity_key, observation_key, relation_key, result_payload
from agentworld.sim.ledger import LedgerState, ledger_for

RECORDED = Path(__file__).resolve().parents[1] / "benchmarks" / "local" / "trajectories" / "mcp.jsonl"


def _graph_sessions() -> list[dict]:
    recs = [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]
    return [r for r in recs if any('"read_graph"' in t["action"] for t in r["turns"])]


def _facts(graph: dict) -> dict[str, str]:
    """A real ``read_graph`` result as the ledger's memory keys."""
    out = {}
    for e in graph.get("entities", []):
        out[entity_key(e["name"])] = e["entityType"]
        out |= {observation_key(e["name"], o): o for o in e["observations"]}
    for r in graph.get("relations", []):
        out[relation_key(r)] = f"{r['from']} {r['relationType']} {r['to']}"
    return out


def test_the_ledger_graph_is_the_real_graph_after_every_turn() -> None:
    sessions = _graph_sessions()
    compared = 0
    for rec in sessions:
        rules, state = ledger_for("mcp"), LedgerState()
        for k, turn in enumerate(rec["turns"]):
            assert rules.check(state, turn["action"], turn["observation"]) == [], (rec["id"], k)
            if json.loads(turn["action"])["name"] == "read_graph":
                real = _facts(result_payload(turn["observation"])[0])
                assert state.memory == real, (rec["id"], k)
                compared += 1
            rules.update(state, turn["action"], turn["observation"])
    assert len(sessions) >= 10 and compared >= 20


def test_a_graph_read_that_loses_a_fact_is_a_conflict() -> None:
    rules, state = ledger_for("mcp"), LedgerState()
    call = lambda name, **a: json.dumps({"name": name, "arguments": a})  # noqa: E731
    ok = json.dumps({"content": [{"type": "text", "text": "ok"}], "isError": False})
    rules.update(state, call("create_entities", entities=[{"name": "Ana", "entityType": "person", "observations": ["x"]}]), ok)
    rules.update(state, call("add_observations", observations=[{"entityName": "Ana", "contents": ["speaks Twi"]}]), ok)
    rules.update(state, call("delete_observations", deletions=[{"entityName": "Ana", "observations": ["x"]}]), ok)
    assert state.memory == {"entity:Ana": "person", "observation:Ana:speaks Twi": "speaks Twi"}
    lost = json.dumps({"entities": [{"name": "Ana", "entityType": "person", "observations": []}], "relations": []})
    assert [c.key for c in rules.check(state, call("open_nodes", names=["Ana"]), lost)] == ["observation:Ana:speaks Twi"]
    rules.update(state, call("delete_entities", entityNames=["Ana"]), ok)
    assert state.memory == {}
