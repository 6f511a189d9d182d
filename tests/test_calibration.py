"""The rule scorer on the committed calibration set (benchmarks/calibration/): scores
stay reproducible, agreement with the reviewer's labels does not regress, and a
retrieved answer for another command scores low."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from agentworld.judge.rules import score_observation
from agentworld.records.bench import load_bench_dir
from agentworld.records.verdict import DIMENSIONS

ROOT = Path(__file__).parents[1]
CAL = ROOT / "benchmarks" / "calibration"
BENCH = CAL / "samples"
DOMAINS = {"terminal", "mcp", "search", "swe", "web", "os"}
ROUND_1_2 = {"terminal", "mcp", "search", "swe"}


def _agreement():
    spec = importlib.util.spec_from_file_location("scorer_agreement", ROOT / "benchmarks" / "scorer_agreement.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def agreement():
    return _agreement()


@pytest.fixture(scope="module")
def rows(agreement):
    return agreement.load(CAL / "items.jsonl", CAL / "labels.jsonl", BENCH)


def test_every_item_is_labelled_and_the_set_is_big_enough(rows) -> None:
    items = [json.loads(x) for x in (CAL / "items.jsonl").read_text().splitlines()]
    labels = [json.loads(x) for x in (CAL / "labels.jsonl").read_text().splitlines()]
    assert len(items) == len(rows) >= 150
    assert {i["cid"] for i in items} == {lab["cid"] for lab in labels}
    assert {i["domain"] for i in items} == DOMAINS
    assert {i["split"] for i in items} == {"dev", "test"}
    assert {"ground_truth", "retrieval", "smol"} <= {i["source"] for i in items}
    for lab in labels:
        assert all(1 <= lab[d] <= 5 for d in DIMENSIONS)
        assert lab["total"] == pytest.approx(sum(lab[d] for d in DIMENSIONS) / 5, abs=0.01)


def test_rule_scores_are_reproducible(rows) -> None:
    committed = [json.loads(x) for x in (CAL / "rule_scores.jsonl").read_text().splitlines()]
    # ``rows`` scored every item already (every item is labelled, the test above checks),
    # in file order: what ``agreement.rule_scores`` would compute again.
    now = [{"cid": r["cid"], **{d: v for d, v in r["rule"].items() if d != "total"}} for r in rows]
    assert now == committed, (
        "rule scores changed: rerun python benchmarks/scorer_agreement.py --write-scores benchmarks/calibration/rule_scores.jsonl"
    )


def test_agreement_with_the_labels_does_not_regress(agreement, rows) -> None:
    for split in ("dev", "test"):
        part = [r for r in rows if r["split"] == split]
        rho = {c: agreement.spearman([r["label"][c] for r in part], [r["rule"][c] for r in part]) for c in agreement.COLUMNS}
        assert rho["total"] >= 0.85, (split, rho)
        assert all(rho[d] >= 0.5 for d in DIMENSIONS), (split, rho)


def test_agreement_on_the_harder_subset(agreement, rows) -> None:
    """Without the ground truth and the no-attempt items (which make agreement easy) the
    scorer still ranks real, imperfect answers as the reviewers did. Measured after the
    fourth round (97 items of 18 held-out samples, mostly terminal, added; the scorer
    changed looking at their dev half only) on the 440 items: total dev 0.90, test 0.74
    (the 343 items of rounds 1-3: 0.93 and 0.78, unchanged; the new test items alone
    0.61); the items of rounds 1-2 (four domains) test 0.83, as after round 2; the
    weakest dimension test factuality 0.62."""
    first = {r["cid"] for r in rows if r["domain"] in ROUND_1_2 and "round" not in r}  # rounds 1-2
    for cids, split, goal in ((None, "dev", 0.88), (None, "test", 0.72), (first, "test", 0.8)):
        part = [r for r in rows if r["split"] == split and (cids is None or r["cid"] in cids)
                and r["source"] != "ground_truth" and r["source"] not in agreement.NO_ATTEMPT]
        rho = {c: agreement.spearman([r["label"][c] for r in part], [r["rule"][c] for r in part]) for c in agreement.COLUMNS}
        assert rho["total"] >= goal, (split, rho)
        assert all(rho[d] >= 0.5 for d in DIMENSIONS), (split, rho)


def test_spearman_without_scipy_matches_scipy(agreement) -> None:
    a, b = [1, 2, 2, 3, 5, 4, 1], [2, 2, 3, 3, 5, 5, 1]
    fallback = float(__import__("numpy").corrcoef(agreement._ranks(__import__("numpy").array(a, float)),
                                                  agreement._ranks(__import__("numpy").array(b, float)))[0, 1])
    assert agreement.spearman(a, b) == pytest.approx(fallback)


def test_retrieved_answer_for_another_command_scores_low(rows) -> None:
    """The retrieval baseline answering another command or tool call (the reviewer's
    consistency 1) is neither consistent nor factual, on every domain."""
    other = [r for r in rows if r["source"] == "retrieval" and r["label"]["consistency"] == 1]
    assert {r["domain"] for r in other} == DOMAINS
    missed = {r["cid"] for r in other if not (r["rule"]["consistency"] <= 2 and r["rule"]["factuality"] <= 2)}
    # Known misses. Test half: grep -A hits of a test file for `grep -rn` over the
    # package -- both have grep's line shape, and the scorer does not yet tell a
    # recursive grep's path:line: prefix from a single file's line: prefix. Dev half
    # (round 4): a Terminated notice for a job the session never ran under the right
    # echo line -- one contradiction (consistency 3, factuality 1); the real output
    # ([2] 4) holds no session value for the answer to miss.
    assert missed <= {"9ee92cd3ca", "e9285218b3"}, missed


def test_answer_for_another_command_on_a_real_screen() -> None:
    samples = {s.uid: s for s in load_bench_dir(BENCH, strict=True).samples}
    s = samples["terminal/terminal-test-1000046:6/6"]  # userdel -r carol && ls /home
    other = "root@sandbox:/workspace# userdel -r frank && ls /home\nuserdel: frank mail spool (/var/mail/frank) not found\ncarol  judy\nroot@sandbox:/workspace#"
    scores, details = score_observation(s, other)
    assert details["off_action"] and scores["consistency"] == 1 and scores["factuality"] <= 2
    assert score_observation(s, "")[0] == dict.fromkeys(DIMENSIONS, 1)  # empty is not consistent
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(DIMENSIONS, 5)
