"""Write a score report: JSON, Markdown and HTML with bar charts and the worst samples.

The Markdown and HTML carry the same content: one score table per (world model, judge)
with the micro and the macro overall, the protocol behind it (message construction,
sampling, judge request and prompt digests, aggregation, what was left out), judge agreement, a bar chart per model and judge (domains x dimensions, matplotlib), and
the lowest-scoring samples with prediction and real observation side by side. Every
score, in tables, charts and sample views alike, is on the published 0-100 scale. The
HTML file is self-contained (charts embedded as PNG data URIs); the Markdown links the
PNG files written next to it.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from agentworld.bench.protocol import sampling_line
from agentworld.bench.score import GroupScore, ScoreReport, domain_order, normalize
from agentworld.judge.llm import left_out
from agentworld.records.verdict import DIMENSIONS, JudgedRecord

COLUMNS = (*DIMENSIONS, "total")
OVERVIEW = -1
"""Key of the comparison chart in the chart-name mapping (per-group charts use their index)."""


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table_rows(group: GroupScore) -> list[list[str]]:
    """Header plus one row per domain, then the micro overall (all samples) and the macro
    overall (mean of domains): scores on the 0-100 scale; tokens and USD are means per
    sample. "no answer" and "call failed" count predictions left out of every mean."""
    head = ["domain", *COLUMNS, "valid", "judge failed", "no answer", "call failed", "pred tok", "judge tok", "USD"]
    rows = [head]
    for name, b in [*group.domains.items(), ("overall micro", group.overall)]:
        rows.append(
            [
                name,
                *(fmt(b.dimensions[d].score) if d in b.dimensions else "-" for d in DIMENSIONS),
                fmt(b.total.score),
                str(b.valid),
                str(b.failed),
                str(b.missing_predictions),
                str(b.failed_predictions),
                f"{b.prediction_tokens:.0f}",
                f"{b.judge_tokens:.0f}",
                "-" if b.cost is None else f"{b.cost:.6f}",
            ]
        )
    m = group.macro
    rows.append(["overall macro", *(fmt(m.dimensions[d].score) if d in m.dimensions else "-" for d in DIMENSIONS),
                 fmt(m.total.score), *["-"] * (len(head) - len(COLUMNS) - 1)])
    return rows


def overall_line(group: GroupScore) -> str:
    """Both overall scores in words: the published script prints micro, the paper macro."""
    o, m = group.overall, group.macro
    return (f"overall: micro {fmt(o.total.score, 2)} (mean of {o.valid} samples), "
            f"macro {fmt(m.total.score, 2)} (mean of {m.total.n} domains)")


def protocol_lines(group: GroupScore) -> list[tuple[str, str]]:
    """(label, text) pairs stating how a group's numbers were made."""
    o = group.overall
    left = (f"{o.failed_predictions} failed calls and {o.missing_predictions} predictions with no answer "
            f"(not judged); {o.statuses.get('truncated', 0)} truncated and {o.statuses.get('unclosed', 0)} unclosed "
            f"answers judged as cut; {o.failed} failed verdicts")
    p = group.protocol
    if p is None:
        return [("left out", left)]
    return [
        ("world-model messages", p.messages),
        ("world-model sampling", sampling_line(p.world_model_settings)),
        ("judge request", p.judge_request),
        ("judge sampling", sampling_line(p.judge_settings) if group.judge != "rules" else "-"),
        ("judge prompts", ", ".join(p.judge_prompts) or "-"),
        ("aggregation", p.aggregation),
        ("left out", left),
    ]


ZERO_STUB = 1.2
"""Height drawn for a score of exactly 0, so it reads as a bar at zero, not as no data."""


def _bars(ax: Any, xs: list[float], values: list[float | None], width: float, label: str) -> None:
    """Bars on the 0-100 axis; 0 gets a visible stub labelled "0", no data is marked "n/a"."""
    heights = [ZERO_STUB if v == 0 else (v or 0.0) for v in values]
    bars = ax.bar(xs, heights, width, label=label)
    colour = bars.patches[0].get_facecolor() if bars.patches else None
    for x, v in zip(xs, values, strict=True):
        if v is None or v == 0:
            text = "n/a" if v is None else "0"
            ax.text(x, ZERO_STUB + 0.8, text, ha="center", va="bottom", fontsize=6, color=colour or "black")


def _axes(names: list[str], ylabel: str, width_per: float, extra: float) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(7.0, width_per * len(names) + extra), 3.6))
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="black", linewidth=0.8)
    return fig, ax


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    # The legend sits outside the axes (bars reach 100): a tight bounding box keeps it in.
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def bar_chart(group: GroupScore, path: Path) -> Path:
    """Grouped bars: one group per domain (plus micro and macro overall), one bar per
    dimension and total."""
    names = [*group.domains, "micro", "macro"]
    blocks = [*group.domains.values(), group.overall, group.macro]
    width = 0.8 / len(COLUMNS)
    fig, ax = _axes(names, "score (0-100)", 1.6, 1.5)
    for i, col in enumerate(COLUMNS):
        vals = [b.total.score if col == "total" else (b.dimensions[col].score if col in b.dimensions else None) for b in blocks]
        _bars(ax, [x + (i - len(COLUMNS) / 2 + 0.5) * width for x in range(len(names))], vals, width, col)
    ax.set_title(f"{group.model} judged by {group.judge}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path)


def overview_chart(report: ScoreReport, path: Path) -> Path:
    """Total score per domain, one bar per (model, judge): the side-by-side comparison."""
    domains = sorted({d for g in report.groups for d in g.domains}, key=domain_order)
    names = [*domains, "micro", "macro"]
    width = 0.8 / len(report.groups)
    fig, ax = _axes(names, "total (0-100)", 1.4, 3.0)
    for i, g in enumerate(report.groups):
        blocks = [g.domains.get(d) for d in domains] + [g.overall, g.macro]
        vals = [b.total.score if b is not None else None for b in blocks]
        label = f"{g.model[:40]} / {g.judge[:30]}"
        _bars(ax, [x + (i - len(report.groups) / 2 + 0.5) * width for x in range(len(names))], vals, width, label)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path)


def worst_samples(records: list[JudgedRecord], group: GroupScore, k: int) -> list[JudgedRecord]:
    """The ``k`` lowest totals of a model and judge; failed verdicts come first."""
    mine = [r for r in records if r.model == group.model and r.judge == group.judge]
    return sorted(mine, key=lambda r: (r.judgement.ok, r.judgement.total or 0.0, r.uid))[:k]


def shown_prediction(r: JudgedRecord) -> str:
    """The observation, or for an invalid prediction its status, error and raw output."""
    if r.observation is not None:
        return r.observation
    why = r.prediction_error or r.prediction_status or "invalid"
    return f"(no valid observation: {why})" + (f"\nraw output:\n{r.raw_text}" if r.raw_text else "")


def _md_cell(text: str, limit: int) -> str:
    text = text[:limit] + ("…" if len(text) > limit else "")
    return "<pre>" + html.escape(text).replace("|", "&#124;").replace("\n", "<br>") + "</pre>"


def _verdict(r: JudgedRecord) -> str:
    """A verdict in one line, on the same 0-100 scale as the tables (a 1-5 score s is
    ``(s - 1) / 4 * 100``; a dimension the judge left out shows as "-")."""
    j = r.judgement
    why = left_out(r.prediction_error, r.prediction_status, r.observation)
    if why is not None:
        return "left out, not judged: " + ("the call failed" if why == "failed" else "no answer")
    if not j.ok:
        return f"judge failed: {j.error or 'no valid score'}"
    scores = ", ".join(f"{d} {fmt(normalize(j.scores[d]) if j.scores.get(d, 0) > 0 else None, 0)}" for d in DIMENSIONS)
    return f"total {fmt(normalize(j.total))} / 100 ({scores})" + (f"; weaknesses: {j.weaknesses}" if j.weaknesses else "")


def to_markdown(report: ScoreReport, records: list[JudgedRecord], charts: dict[int, str], *, worst: int = 5, clip: int = 1200) -> str:
    out = ["# AgentWorldBench report", ""]
    out += [f"> {n}" for n in report.notes] + ([""] if report.notes else [])
    out.append("Every score is on the 0-100 scale `(mean - 1) / 4 * 100` of the 1-5 judge scores; totals average each sample's valid dimensions.")
    if OVERVIEW in charts:
        out += ["", f"![totals per domain]({charts[OVERVIEW]})"]
    for i, g in enumerate(report.groups):
        out += ["", f"## {g.model} — judge `{g.judge}`", ""]
        rows = table_rows(g)
        out.append("| " + " | ".join(rows[0]) + " |")
        out.append("|" + "|".join("---" if c == 0 else "---:" for c in range(len(rows[0]))) + "|")
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        out += ["", f"**{overall_line(g)}**", "", "Protocol:", ""]
        out += [f"- {label}: {text}" for label, text in protocol_lines(g)]
        if i in charts:
            out += ["", f"![{g.model} / {g.judge}]({charts[i]})"]
        bad = worst_samples(records, g, worst)
        if bad:
            out += ["", f"### Worst {len(bad)} samples", ""]
            for r in bad:
                out += [f"**{r.uid}** (sample {r.sample_index}) — {_verdict(r)}", "", f"Action: `{r.action[:300]}`", ""]
                out += ["| prediction | real observation |", "|---|---|"]
                out += [f"| {_md_cell(shown_prediction(r), clip)} | {_md_cell(r.ground_truth, clip)} |", ""]
    if report.agreement:
        out += ["", "## Judge agreement (Spearman of sample totals)", "", "| model | judge A | judge B | n | rho | p |", "|---|---|---|---:|---:|---:|"]
        for a in report.agreement:
            out.append(f"| {a.model} | {a.judge_a} | {a.judge_b} | {a.n} | {fmt(a.spearman, 3)} | {fmt(a.p_value, 4)} |")
    return "\n".join(out) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child{text-align:left}"
    "pre{white-space:pre-wrap;font-size:12px;margin:0;text-align:left}.side td{vertical-align:top;width:50%}"
    "blockquote{color:#555}img{max-width:100%;height:auto}"
)


def data_uri(path: Path) -> str:
    """A PNG file as a ``data:`` URI, so the HTML report needs no files beside it."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def to_html(report: ScoreReport, records: list[JudgedRecord], charts: dict[int, str], *, worst: int = 5, clip: int = 1200) -> str:
    e = html.escape
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>AgentWorldBench report</title><style>{_CSS}</style></head><body>"]
    out.append("<h1>AgentWorldBench report</h1>")
    out += [f"<blockquote>{e(n)}</blockquote>" for n in report.notes]
    out.append("<p>Every score is on the 0-100 scale <code>(mean - 1) / 4 * 100</code> of the 1-5 judge scores; totals average each sample's valid dimensions.</p>")
    if OVERVIEW in charts:
        out.append(f"<p><img src='{e(charts[OVERVIEW])}' alt='totals per domain'></p>")
    for i, g in enumerate(report.groups):
        out.append(f"<h2>{e(g.model)} — judge <code>{e(g.judge)}</code></h2><table>")
        rows = table_rows(g)
        out.append("<tr>" + "".join(f"<th>{e(c)}</th>" for c in rows[0]) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows[1:]]
        out.append("</table>")
        out.append(f"<p><b>{e(overall_line(g))}</b></p><p>Protocol:</p><ul>")
        out += [f"<li>{e(label)}: {e(text)}</li>" for label, text in protocol_lines(g)]
        out.append("</ul>")
        if i in charts:
            out.append(f"<p><img src='{e(charts[i])}' alt='{e(g.model)} / {e(g.judge)}'></p>")
        bad = worst_samples(records, g, worst)
        if bad:
            out.append(f"<h3>Worst {len(bad)} samples</h3>")
            for r in bad:
                obs = shown_prediction(r)[:clip]
                out.append(f"<p><b>{e(r.uid)}</b> (sample {r.sample_index}) — {e(_verdict(r))}<br>Action: <code>{e(r.action[:300])}</code></p>")
                out.append("<table class='side'><tr><th>prediction</th><th>real observation</th></tr>")
                out.append(f"<tr><td><pre>{e(obs)}</pre></td><td><pre>{e(r.ground_truth[:clip])}</pre></td></tr></table>")
    if report.agreement:
        out.append("<h2>Judge agreement (Spearman of sample totals)</h2><table><tr><th>model</th><th>judge A</th><th>judge B</th><th>n</th><th>rho</th><th>p</th></tr>")
        for a in report.agreement:
            out.append(f"<tr><td>{e(a.model)}</td><td>{e(a.judge_a)}</td><td>{e(a.judge_b)}</td><td>{a.n}</td><td>{fmt(a.spearman, 3)}</td><td>{fmt(a.p_value, 4)}</td></tr>")
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_report(report: ScoreReport, records: list[JudgedRecord], out_dir: str | Path, *, worst: int = 5, charts: bool = True) -> dict[str, Path]:
    """Write ``scores.json``, ``report.md``, ``report.html``, one chart per model and judge
    and, with several, ``overview.png`` comparing their totals per domain."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "scores.json", "markdown": out_dir / "report.md", "html": out_dir / "report.html"}
    paths["json"].write_text(json.dumps(report.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    chart_names: dict[int, str] = {}
    if charts and len(report.groups) > 1:
        paths["overview"] = overview_chart(report, out_dir / "overview.png")
        chart_names[OVERVIEW] = "overview.png"
    if charts:
        for i, g in enumerate(report.groups):
            name = f"chart_{i + 1}.png"
            paths[f"chart_{i + 1}"] = bar_chart(g, out_dir / name)
            chart_names[i] = name
    paths["markdown"].write_text(to_markdown(report, records, chart_names, worst=worst), encoding="utf-8")
    embedded = {k: data_uri(out_dir / name) for k, name in chart_names.items()}
    paths["html"].write_text(to_html(report, records, embedded, worst=worst), encoding="utf-8")
    return paths
