"""Held-out templates: the test split is whole task templates, and the shipped benchmark keeps to it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from agentworld.cli.collect._app import HELD_OUT, split_jobs
from agentworld.envs.split import SPLIT_RULE, split_templates
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import read_trajectories

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "benchmarks" / "local" / "trajectories"


def _registries() -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """Each domain's templates and families, as ``agentworld collect`` splits them."""
    from agentworld.envs.mcp import TEMPLATES as MCP
    from agentworld.envs.mcp.tasks import template_families
    from agentworld.envs.os import TEMPLATES as OS
    from agentworld.envs.search import TEMPLATES as SEARCH
    from agentworld.envs.swe import REPOS
    from agentworld.envs.terminal import TEMPLATES as TERMINAL
    from agentworld.envs.web.tasks import TEMPLATES as WEB
    from agentworld.envs.web.tasks import template_families as web_families

    return {"terminal": (TERMINAL.names(), TERMINAL.families()), "mcp": (sorted(MCP), template_families()),
            "search": (sorted(SEARCH), None), "swe": (sorted(REPOS), None), "os": (OS.names(), OS.families()),
            "web": (sorted(WEB), web_families())}


def test_split_is_deterministic_disjoint_and_complete() -> None:
    for domain, (names, families) in _registries().items():
        split = split_templates(domain, names, families=families)
        assert split == split_templates(domain, list(reversed(names)), families=families)
        assert split.train and split.test and not set(split.train) & set(split.test)
        assert set(split.train) | set(split.test) == set(names)
        # Every family of several templates keeps a training template.
        groups: dict[str, set[str]] = defaultdict(set)
        for n in names:
            groups[(families or {}).get(n, n)].add(n)
        assert all(group & set(split.train) for group in groups.values() if len(group) > 1), domain


def test_a_family_held_out_whole_keeps_one_template_in_train() -> None:
    names = [f"t{i}" for i in range(40)]
    plain = split_templates("terminal", names)
    family = {n: "all-test" if n in plain.test else "mixed" for n in names}
    split = split_templates("terminal", names, families=family)
    assert len(split.test) == len(plain.test) - 1 and set(split.test) < set(plain.test)


def test_adding_a_template_moves_no_other() -> None:
    names = [f"t{i}" for i in range(30)]
    before = split_templates("terminal", names)
    after = split_templates("terminal", [*names, "new-one"])
    assert set(before.test) == set(after.test) - {"new-one"}


def test_jobs_use_their_sides_templates_and_seeds() -> None:
    names = [f"t{i}" for i in range(12)]
    split = split_templates("terminal", names)
    jobs = split_jobs("terminal", 10, 7, 0, names)
    train = [j for j in jobs if j.split == "train"]
    test = [j for j in jobs if j.split == "test"]
    assert len(train) == 10 and len(test) == 7
    assert {j.task for j in train} <= set(split.train) and {j.task for j in test} <= set(split.test)
    assert all(j.seed >= HELD_OUT for j in test) and all(j.seed < HELD_OUT for j in train)
    assert {j.split_by for j in jobs} == {SPLIT_RULE}


def test_a_template_restriction_without_held_out_templates_is_refused() -> None:
    import typer

    names = [f"t{i}" for i in range(12)]
    only = list(split_templates("terminal", names).train[:1])
    assert {j.task for j in split_jobs("terminal", 3, 0, 0, names, only)} == set(only)
    with pytest.raises(typer.Exit):
        split_jobs("terminal", 3, 2, 0, names, only)


def _template(task: str | None) -> str:
    # SWE records repair:<repo>:<mutation>; its templates are the repositories.
    return task.split(":")[1] if task and task.startswith("repair:") else str(task)


@pytest.mark.parametrize("domain", ["terminal", "mcp", "search", "swe", "os", "web"])
def test_shipped_benchmark_holds_out_whole_templates(domain: str) -> None:
    from agentworld.data.split import turn_fingerprint

    trajs = read_trajectories(RECORDED / f"{domain}.jsonl", strict=True).items
    sides: dict[str, set[str]] = defaultdict(set)
    for t in trajs:
        sides[t.provenance.split or "?"].add(_template(t.provenance.task))
    assert set(sides) == {"train", "test"}
    assert not sides["train"] & sides["test"]
    names, families = _registries()[domain]
    # The split collect made: by template family where a domain groups its templates
    # (provenance ``split_by`` template-v1+family), else by template.
    from agentworld.cli.collect._app import split_families

    split = split_families(domain, names, families)
    assert {t.provenance.split_by for t in trajs} <= {"template-v1", "template-v1+family"}
    assert sides["test"] <= set(split.test) and sides["train"] <= set(split.train)
    # No turn of a benchmarked trajectory (action and observation, digits masked) is in a training trajectory.
    benched = {x.trajectory_id for x in load_bench_dir(RECORDED.parent, domains=[domain], strict=True).samples}
    assert benched and benched <= {t.id for t in trajs if t.provenance.split == "test"}
    train_turns = {turn_fingerprint(u.action, u.observation) for t in trajs if t.provenance.split == "train" for u in t.turns}
    shared = [(t.id, i) for t in trajs if t.id in benched for i, u in enumerate(t.turns)
              if turn_fingerprint(u.action, u.observation) in train_turns]
    assert not shared, f"{len(shared)} benchmarked turns also in train, e.g. {shared[:3]}"
