import json
import shutil

from agentworld.domains import DOMAINS
from agentworld.records.bench import load_bench_dir, write_bench_dir


def _records(directory):
    out = {}
    for p in sorted(directory.glob("*_test.jsonl")):
        out[p.name] = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return out


def test_all_domains_load_and_round_trip_equal(awbench_dir, tmp_path):
    bench = load_bench_dir(awbench_dir)
    assert not bench.errors
    assert set(bench.by_domain()) == set(DOMAINS)
    write_bench_dir(tmp_path, bench.samples)
    assert _records(tmp_path) == _records(awbench_dir)
    # Key order is kept too, so a diff of the files shows nothing.
    for name, recs in _records(awbench_dir).items():
        written = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert [list(r) for r in written] == [list(r) for r in recs]


def test_unknown_fields_ids_and_types_are_kept(awbench_dir):
    by = {s.uid: s for s in load_bench_dir(awbench_dir).samples}
    mcp = by["mcp/17/2"]
    assert mcp.id == 17 and isinstance(mcp.id, int)
    assert mcp.model_extra["tools"][0]["name"] == "read_file"
    os_ = by["os/5/1"]
    assert os_.to_record()["null_field"] is None and os_.to_record()["ratio"] == 0.5
    term = by["terminal/tb-0001-t3/3"]
    assert term.domain == "terminal" and term.task == "agentworld/terminal"
    # Judged text: marker (none here) and trailing whitespace removed, like a prediction's.
    assert term.ground_truth.endswith("hi\nroot@sandbox:/workspace#")
    assert [a for a, _ in term.history()] == term.prompt[:2]


def test_malformed_lines_are_reported_and_the_rest_loads(awbench_dir, tmp_path):
    shutil.copytree(awbench_dir, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "terminal_test.jsonl"
    good = path.read_text().splitlines()
    bad_json = '{"task": "terminal", "id": "x"'
    bad_schema = json.dumps({"task": "terminal", "id": "y", "prompt": ["a"], "response": ["b"],
                             "current_prompt": "a", "system_str": "", "turn_idx": 3, "total_turns": 1})
    unknown_domain = json.dumps({**json.loads(good[0]), "task": "fax"})
    path.write_text("\n".join([good[0], bad_json, bad_schema, "", unknown_domain, good[1]]) + "\n")
    bench = load_bench_dir(tmp_path, domains=["terminal"])
    assert len(bench.samples) == 2
    assert [(e.path, e.line) for e in bench.errors] == [(str(path), 2), (str(path), 3), (str(path), 5)]
    assert "invalid JSON" in bench.errors[0].message
    assert "turn_idx" in bench.errors[1].message
    assert "fax" in bench.errors[2].message


def test_strict_mode_raises_with_every_bad_line(awbench_dir, tmp_path):
    import pytest

    from agentworld.jsonl import JsonlError

    path = tmp_path / "web_test.jsonl"
    good = (awbench_dir / "web_test.jsonl").read_text()
    n = good.count("\n")
    path.write_text(good + "not json\n[1]\n")
    with pytest.raises(JsonlError) as info:
        load_bench_dir(tmp_path, strict=True)
    assert [e.line for e in info.value.errors] == [n + 1, n + 2]
    assert f"{path}:{n + 1}" in str(info.value)
