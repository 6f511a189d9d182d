import json

import pytest

from agentworld.bench.judging import load_judgements
from agentworld.bench.report import write_report
from agentworld.bench.score import normalize, score_records
from agentworld.judge import DIMENSIONS, Judgement
from agentworld.records.verdict import JudgedRecord


def rec(uid, judge, scores=None, *, error=None, model="m", sample_index=0, obs="x", jt=(0, 0)):
    domain = uid.split("/")[0]
    if scores is not None and not isinstance(scores, dict):
        scores = dict(zip(DIMENSIONS, scores, strict=True))
    j = Judgement(judge=judge, scores=scores or {}, error=error, prompt_tokens=jt[0], completion_tokens=jt[1])
    return JudgedRecord(
        uid=uid, domain=domain, id=uid.split("/")[1], turn_idx=1, sample_index=sample_index, judge=judge,
        judgement=j, model=model, action="ls", observation=obs, ground_truth="a\nb",
        prediction_prompt_tokens=1000, prediction_completion_tokens=500,
    )


def hand_made():
    return [
        rec("terminal/s1/1", "A", [5, 5, 5, 5, 5], jt=(2000, 100)),
        rec("terminal/s2/1", "A", [3, 0, 3, 3, 3]),  # factuality invalid: total 3 over four dimensions
        rec("terminal/s3/1", "A", error="unparsable verdict"),  # failed judgement
        rec("mcp/s4/1", "A", [1, 1, 1, 1, 1], obs=None).model_copy(update={"prediction_status": "truncated", "raw_text": "I think the <predicted_observation>{"}),
        rec("mcp/s5/1", "A", [0, 0, 0, 0, 0]),  # no valid dimension: failed
        rec("terminal/s1/1", "B", [4, 4, 4, 4, 4]),
        rec("terminal/s2/1", "B", [2, 2, 2, 2, 2]),
        rec("mcp/s4/1", "B", [1, 2, 1, 1, 1]),
        rec("terminal/s3/1", "B", [3, 3, 3, 3, 3]),
    ]


def test_normalization_known_numbers():
    assert normalize(1) == 0 and normalize(5) == 100 and normalize(3) == 50 and normalize(None) is None
    report = score_records(hand_made(), prices={"m": (1.0, 2.0), "A": (0.5, 1.0)})
    a = next(g for g in report.groups if g.judge == "A")
    t, m, o = a.domains["terminal"], a.domains["mcp"], a.overall
    assert list(a.domains) == ["mcp", "terminal"]  # canonical domain order
    assert (t.samples, t.valid, t.failed) == (3, 2, 1)
    assert t.dimensions["format"].score == pytest.approx(75.0)  # mean (5 + 3) / 2 = 4
    assert t.dimensions["factuality"].score == pytest.approx(100.0) and t.dimensions["factuality"].n == 1
    assert t.total.mean == pytest.approx(4.0) and t.total.score == pytest.approx(75.0)
    # A truncated answer is judged (its verdict counts); nothing here was left out.
    assert (m.valid, m.failed, m.missing_predictions, m.failed_predictions) == (1, 1, 0, 0)
    assert m.statuses == {"complete": 1, "untagged": 0, "truncated": 1, "missing": 0, "unclosed": 0}
    assert m.total.score == pytest.approx(0.0)
    assert (o.valid, o.failed) == (3, 2)
    assert o.total.mean == pytest.approx(3.0) and o.total.score == pytest.approx(50.0)
    assert o.dimensions["factuality"].mean == pytest.approx(3.0)  # (5 + 1) / 2
    assert o.dimensions["format"].n == 3
    # Macro: the mean of the domains (mcp 1.0, terminal 4.0), not of the samples (3.0).
    assert a.macro.total.mean == pytest.approx(2.5) and a.macro.total.score == pytest.approx(37.5) and a.macro.total.n == 2
    assert a.macro.dimensions["format"].mean == pytest.approx((1 + 4) / 2)
    # Tokens and cost per sample: 1500 prediction tokens each; 1000*1 + 500*2 = 0.002 USD,
    # plus judge A's 2000*0.5 + 100*1 = 0.0011 USD on one of five samples.
    assert o.prediction_tokens == 1500 and o.judge_tokens == pytest.approx(2100 / 5)
    assert o.cost == pytest.approx(0.002 + 0.0011 / 5)


def test_spearman_between_judges():
    report = score_records(hand_made())
    [ag] = report.agreement
    assert (ag.judge_a, ag.judge_b, ag.n) == ("A", "B", 3)  # s3 failed under A, s5 failed under A
    assert ag.spearman == pytest.approx(1.0)
    # A judge that ranks the other way round correlates at -1.
    recs = hand_made() + [rec(u, "C", [v] * 5) for u, v in [("terminal/s1/1", 1), ("terminal/s2/1", 3), ("mcp/s4/1", 5)]]
    rho = {(x.judge_a, x.judge_b): x.spearman for x in score_records(recs).agreement}
    assert rho[("A", "C")] == pytest.approx(-1.0)


def test_groups_by_model_and_no_prices_means_no_cost():
    recs = hand_made() + [rec("terminal/s1/1", "A", [2] * 5, model="other")]
    report = score_records(recs)
    assert [(g.model, g.judge) for g in report.groups] == [("m", "A"), ("m", "B"), ("other", "A")]
    assert report.groups[0].overall.cost is None
    assert report.groups[2].overall.total.score == pytest.approx(25.0)


def test_report_files(tmp_path):
    recs = hand_made()
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in recs) + "{torn")
    loaded = load_judgements(path)
    assert len(loaded.records) == len(recs) and len(loaded.errors) == 1
    report = score_records(loaded.records.values())
    paths = write_report(report, list(loaded.records.values()), tmp_path / "rep", worst=3)
    data = json.loads(paths["json"].read_text())
    assert data["groups"][0]["overall"]["total"]["score"] == pytest.approx(50.0)
    md, page = paths["markdown"].read_text(), paths["html"].read_text()
    assert "| overall micro | " in md and "| overall macro | " in md and "50.0" in md and "chart_1.png" in md
    assert data["groups"][0]["macro"]["total"]["score"] == pytest.approx(37.5)
    assert "overall: micro 50.00 (mean of 3 samples), macro 37.50 (mean of 2 domains)" in md
    # Verdicts written before run settings were kept still state what they can.
    assert "- aggregation: a sample's total" in md and "not recorded" in md
    assert "judge failed: unparsable verdict" in md  # failed verdicts head the worst list
    assert "(no valid observation: truncated)" in page and "raw output:" in md and "I think the" in md
    assert "Judge agreement" in page and paths["chart_1"].stat().st_size > 1000
    assert paths["chart_1"].read_bytes()[:4] == b"\x89PNG"


def test_two_models_on_the_same_samples_stay_apart(tmp_path):
    a, b = tmp_path / "a.judged.jsonl", tmp_path / "b.judged.jsonl"
    a.write_text(rec("terminal/s1/1", "rules", [5] * 5, model="m1").model_dump_json() + "\n")
    b.write_text(rec("terminal/s1/1", "rules", [1] * 5, model="m2").model_dump_json() + "\n")
    report = score_records(load_judgements([a, b]).records.values())
    assert {g.model: g.overall.total.score for g in report.groups} == {"m1": 100.0, "m2": 0.0}


def test_html_report_is_self_contained_on_one_scale(tmp_path):
    import base64
    import re

    recs = hand_made() + [rec("terminal/s1/1", "A", [1] * 5, model="zero")]
    report = score_records(recs)
    paths = write_report(report, recs, tmp_path / "rep", worst=5)
    page = paths["html"].read_text()
    # Charts travel inside the page: no image refers to a file beside it.
    srcs = re.findall(r"<img src='([^']*)'", page)
    assert len(srcs) == 1 + len(report.groups) and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert base64.b64decode(srcs[0].split(",", 1)[1])[:4] == b"\x89PNG"
    # Sample views use the tables' 0-100 scale: [5]*5 is 100, [3, 0, 3, 3, 3] is 50 with factuality unscored.
    assert "total 100.0 / 100 (format 100, factuality 100" in page
    assert "total 50.0 / 100 (format 50, factuality -, consistency 50" in page
    assert not re.search(r"\(format [1-5],", page)


def test_zero_scores_are_drawn_not_dropped():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentworld.bench.report import ZERO_STUB, _bars

    fig, ax = plt.subplots()
    _bars(ax, [0.0, 1.0, 2.0], [0.0, 50.0, None], 0.5, "total")
    heights = [p.get_height() for p in ax.patches]
    assert heights == [ZERO_STUB, 50.0, 0.0]  # a zero is a visible stub; no data draws nothing
    assert [t.get_text() for t in ax.texts] == ["0", "n/a"]
    plt.close(fig)
