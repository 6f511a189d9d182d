"""CPT dataset: non-thinking trajectories with turn-level loss masking, plus domain knowledge.

Each training trajectory becomes one chat (system / user = action / assistant =
observation) tokenized with the target model's chat template; its per-token loss mask
covers the assistant tokens of the turns the masking keeps (and never a retry cycle's
garbage turn). Domain-knowledge passages become single-turn samples with their text in
the loss. Samples are packed into rows (see :mod:`agentworld.data.packing`) and written
as a Hugging Face dataset in Parquet (``train.parquet``) with a JSON report.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.data.chat import load_tokenizer, tokenize_chat, trajectory_chat
from agentworld.data.config import CPTConfig, config_dict
from agentworld.data.filters import loss_skipped
from agentworld.data.masking import Category, mask_turns, trajectory_turn_keys
from agentworld.data.packing import PackItem, pack, truncate, unpacked
from agentworld.data.resume import ResumeLog
from agentworld.data.source import prepare
from agentworld.jsonl import LineError, iter_json_lines
from agentworld.prompts import trajectory_system_prompt
from agentworld.trajectory import Trajectory

Progress = Callable[[str, int, int | None], None]
"""``progress(stage, advance, total)``: total is given once per stage, then advances."""


@dataclass
class CPTReport:
    samples: int = 0
    knowledge_samples: int = 0
    rows: int = 0
    tokens: int = 0
    loss_tokens: int = 0
    truncated: int = 0
    dropped_no_loss: int = 0
    categories: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """Per domain: turn counts per category, plus ``kept`` and ``retry_skipped``."""
    prepared: dict[str, Any] = field(default_factory=dict)
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "categories"}
        d["categories"] = {dom: dict(c) for dom, c in sorted(self.categories.items())}
        return d


def read_knowledge(paths: list[str]) -> Iterator[tuple[int, dict[str, Any] | LineError]]:
    """Records ``{"text", "title"?, "domain"?}`` from JSONL files, with bad lines as LineError."""
    for p in paths:
        for lineno, rec in iter_json_lines(p):
            if isinstance(rec, dict) and not isinstance(rec.get("text"), str):
                rec = LineError(str(p), lineno, "a knowledge record needs a string 'text' field")
            yield lineno, rec


def knowledge_messages(rec: dict[str, Any]) -> list[dict[str, str]]:
    """A passage as one turn: the user names it, the assistant writes it out."""
    title = rec.get("title") or rec.get("url") or rec.get("source") or "Document"
    domain = rec.get("domain")
    prompt = f"[{domain}] {title}" if domain else str(title)
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": rec["text"]}]


def loss_turns_of(traj: Trajectory, keep: list[bool]) -> set[int]:
    return {i for i, (turn, k) in enumerate(zip(traj.turns, keep)) if k and not loss_skipped(turn)}


def build_cpt(config: CPTConfig, *, progress: Progress | None = None, restart: bool = False) -> CPTReport:
    """Build the CPT dataset under ``config.output_dir``; resumable unless ``restart``."""
    out_dir = Path(config.output_dir)
    tick = progress or (lambda *_: None)
    prepared = prepare(config, out_dir)
    report = CPTReport(prepared=prepared.summary())
    tokenizer = load_tokenizer(config.tokenizer)
    trajs = prepared.train

    n_turns = sum(len(t.turns) for t in trajs)
    tick("masking turns", 0, n_turns)
    batch = mask_turns(
        trajectory_turn_keys(trajs),
        seed=config.seed,
        workers=config.workers,
        total=n_turns,
        on_chunk=lambda n: tick("masking turns", n, None),
    )
    keep_all = batch.keep.tolist() if config.loss_masking else [True] * n_turns
    cats = batch.category.tolist()

    items: list[PackItem] = []
    with ResumeLog(out_dir, "cpt", config, restart=restart) as log:
        tick("tokenizing", 0, len(trajs))
        pos = 0
        for traj in trajs:
            k = len(traj.turns)
            keep, traj_cats = keep_all[pos : pos + k], cats[pos : pos + k]
            pos += k
            counts = report.categories[traj.domain]
            for turn, c, kp in zip(traj.turns, traj_cats, keep):
                counts[Category(c).name] += 1
                if loss_skipped(turn):
                    counts["retry_skipped"] += 1
                elif kp:
                    counts["kept"] += 1
            key = f"traj:{traj.id}"
            rec = log.done.get(key)
            if rec is None:
                chat = trajectory_chat(traj, trajectory_system_prompt(traj, variant=config.system_variant))
                tok = tokenize_chat(tokenizer, chat, loss_turns_of(traj, keep))
                rec = log.add(key, {"domain": traj.domain, "input_ids": tok.input_ids, "loss_mask": tok.loss_mask})
            items.append(PackItem(key, rec["input_ids"], rec["loss_mask"]))
            tick("tokenizing", 1, None)
        for lineno, krec in read_knowledge(config.knowledge):
            if isinstance(krec, LineError):
                report.prepared.setdefault("bad_lines", []).append(str(krec))
                continue
            key = f"knowledge:{krec.get('id') or lineno}:{hash_text(krec['text'])}"
            rec = log.done.get(key)
            if rec is None:
                tok = tokenize_chat(tokenizer, knowledge_messages(krec))
                rec = log.add(key, {"domain": krec.get("domain"), "input_ids": tok.input_ids, "loss_mask": tok.loss_mask})
            items.append(PackItem(key, rec["input_ids"], rec["loss_mask"]))
            report.knowledge_samples += 1

    kept_items = []
    for item in items:
        item, cut = truncate(item, config.max_length)
        report.truncated += cut
        if not any(item.loss_mask):
            report.dropped_no_loss += 1
            continue
        kept_items.append(item)
    rows = pack(kept_items, config.max_length) if config.packing else unpacked(kept_items)
    report.samples = len(kept_items)
    report.rows = len(rows)
    report.tokens = sum(len(r.input_ids) for r in rows)
    report.loss_tokens = sum(sum(m) for m in (i.loss_mask for i in kept_items))
    report.output = str(write_parquet(out_dir / "train.parquet", [r.to_record() for r in rows]))
    write_report(out_dir, config, report.to_dict())
    return report


def hash_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    """Records as a Hugging Face ``datasets`` dataset in one Parquet file."""
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    # Our own progress bars cover the run; datasets' per-call bars would interleave.
    was_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        datasets.Dataset.from_list(records).to_parquet(str(tmp))
    finally:
        if was_on:
            datasets.enable_progress_bars()
    tmp.replace(path)
    return path


def write_report(out_dir: Path, config: Any, report: dict[str, Any]) -> None:
    body = {"config": config_dict(config), "report": report}
    (out_dir / "report.json").write_text(json.dumps(body, indent=1, default=str), encoding="utf-8")
