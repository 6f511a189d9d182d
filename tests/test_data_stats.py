"""Dataset statistics behind ``agentworld data stats`` and ``data mask-stats``, called directly."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sim_fixtures import mcp_trajectories, terminal_trajectories

from agentworld.data.filters import SKIP_LOSS
from agentworld.data.masking import Category, categorize, keep_turn, turn_stats
from agentworld.data.stats import (
    DomainSize,
    dataset_stats,
    dropped_counts,
    estimate_tokens,
    mask_stats,
    report_metrics,
)
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import write_trajectories


def _mixed_file(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.jsonl"
    write_trajectories(path, [*terminal_trajectories(), *mcp_trajectories()])
    with path.open("a") as fh:
        fh.write("{not a trajectory\n")
    return path


def test_trajectory_stats_count_every_domain_and_skip_bad_lines(tmp_path: Path):
    trajs = [*terminal_trajectories(), *mcp_trajectories()]
    st = dataset_stats(_mixed_file(tmp_path))
    assert st.kind == "trajectories" and len(st.errors) == 1 and st.errors[0].line == len(trajs) + 1
    assert list(st.per_domain) == sorted({t.domain for t in trajs})
    term = st.per_domain["terminal"]
    assert term.items == 2 and term.turns == 7
    assert term.obs_tokens == sum(estimate_tokens(x.observation) for t in terminal_trajectories() for x in t.turns)
    assert st.total.items == len(trajs) and st.total.turns == sum(len(t.turns) for t in trajs)
    assert term.turns_per_item == 3.5 and DomainSize().turns_per_item == 0.0


def test_bench_stats_count_samples_up_to_their_turn(awbench_dir: Path):
    st = dataset_stats(awbench_dir)
    samples = load_bench_dir(awbench_dir).samples
    assert st.kind == "samples" and st.total.items == len(samples) > 0
    assert st.total.turns == sum(s.turn_idx for s in samples)
    assert st.total.system_tokens == sum(estimate_tokens(s.system_str) for s in samples)


def test_a_missing_input_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        dataset_stats(tmp_path / "nope.jsonl")


def test_mask_stats_agree_with_the_per_turn_rules():
    trajs = terminal_trajectories()
    trajs[0].turns[0].metadata[SKIP_LOSS] = True  # kept by its category, still out of the loss
    chunks: list[int] = []
    st = mask_stats(trajs, seed=5, workers=1, on_chunk=chunks.append)
    row = st.per_domain["terminal"]
    assert st.turns == row.turns == sum(chunks) == 7
    assert sum(row.categories.values()) == 7
    expected_kept = 0
    for t in trajs:
        for i, turn in enumerate(t.turns, 1):
            cat = categorize(turn_stats(turn.action, turn.observation))
            assert row.categories[cat.name] > 0
            expected_kept += keep_turn(5, t.id, i, cat) and not turn.metadata.get(SKIP_LOSS)
    assert row.kept_turns == expected_kept
    assert row.tokens == sum((len(x.observation) + 3) // 4 for t in trajs for x in t.turns)
    assert 0 <= row.kept_tokens <= row.tokens
    both = mask_stats([*trajs, *mcp_trajectories()], seed=5, workers=1)
    assert list(both.per_domain) == ["mcp", "terminal"] and both.total.turns == both.turns
    assert set(both.total.categories) <= {c.name for c in Category}


def test_build_report_figures():
    filters = {"mcp": {"dropped_empty": 2, "trajectories_in": 9}, "terminal": {"dropped_empty": 1, "turns_removed_dup": 3}}
    assert dropped_counts(filters) == {"dropped_empty": 3, "turns_removed_dup": 3}
    per = {"mcp": {"kept": 1, "zeta": 2, "queries": 4}, "terminal": {"alpha": 1, "trajectories": 5}}
    assert report_metrics(per) == ["trajectories", "queries", "kept", "alpha", "zeta"]
