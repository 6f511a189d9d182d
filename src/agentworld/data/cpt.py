"""CPT dataset: non-thinking trajectories with turn-level loss masking, plus domain knowledge.

Each training trajectory becomes one chat (system / user = action / assistant =
observation) tokenized with the target model's chat template; its per-token loss mask
covers the assistant tokens of the turns the masking keeps (and never a retry cycle's
garbage turn). Domain-knowledge passages become single-turn samples with their text in
the loss. Samples are packed into rows (see :mod:`agentworld.data.packing`) and written
as a Hugging Face dataset (Parquet shards and/or JSONL, see :mod:`agentworld.data.parquet`)
with a JSON report.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.data.chat import load_tokenizer, tokenize_chat, trajectory_chat
from agentworld.data.config import CPTConfig, config_dict
from agentworld.data.filters import loss_skipped
from agentworld.data.knowledge import knowledge_messages, read_knowledge
from agentworld.data.masking import Category, mask_turns, resolve_workers, trajectory_turn_keys
from agentworld.data.packing import PackItem, pack, truncate, unpacked
from agentworld.data.parquet import write_dataset
from agentworld.data.resume import ResumeLog
from agentworld.data.source import prepare
from agentworld.executors.data import OrderedMap
from agentworld.jsonl import LineError
from agentworld.prompts import trajectory_system_prompt
from agentworld.records.trajectory import Trajectory

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


def loss_turns_of(traj: Trajectory, keep: list[bool]) -> set[int]:
    return {i for i, (turn, k) in enumerate(zip(traj.turns, keep, strict=True)) if k and not loss_skipped(turn)}


@dataclass(frozen=True)
class Job:
    """One sample to tokenize: its messages and which assistant turns are in the loss."""

    key: str
    domain: str | None
    messages: list[dict[str, str]]
    loss_turns: list[int] | None
    """Assistant-message ordinals in the loss; None means all."""


def _tokenize_batch(tokenizer_name: str, jobs: list[Job]) -> list[tuple[str, str | None, list[int], list[int]]]:
    tokenizer = load_tokenizer(tokenizer_name)
    out = []
    for j in jobs:
        tok = tokenize_chat(tokenizer, j.messages, None if j.loss_turns is None else set(j.loss_turns))
        out.append((j.key, j.domain, tok.input_ids, tok.loss_mask))
    return out


def tokenize_jobs(
    tokenizer_name: str, jobs: list[Job], workers: int | None, *, batch_size: int = 32, mapper: OrderedMap | None = None
) -> Iterator[tuple[str, str | None, list[int], list[int]]]:
    """Tokenized jobs as they finish; spread over worker processes when there are many
    (or over ``mapper``, e.g. Ray Data, when given).

    Workers are spawned (not forked) because a forked Rust tokenizer can deadlock; each
    loads the tokenizer once, which only pays off beyond a few batches.
    """
    n_workers = resolve_workers(workers)
    batches = [jobs[i : i + batch_size] for i in range(0, len(jobs), batch_size)]
    if mapper is not None:
        for done in mapper(functools.partial(_tokenize_batch, tokenizer_name), batches):
            yield from done
        return
    if n_workers == 1 or len(batches) <= 2 * n_workers:
        for b in batches:
            yield from _tokenize_batch(tokenizer_name, b)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
        futures = [pool.submit(_tokenize_batch, tokenizer_name, b) for b in batches]
        for fut in as_completed(futures):
            yield from fut.result()


def build_cpt(config: CPTConfig, *, progress: Progress | None = None, restart: bool = False,
              mapper: OrderedMap | None = None) -> CPTReport:
    """Build the CPT dataset under ``config.output_dir``; resumable unless ``restart``.
    ``mapper`` runs the masking and tokenizing chunks (Ray Data); the output is the same."""
    out_dir = Path(config.output_dir)
    tick = progress or (lambda *_: None)
    prepared = prepare(config, out_dir)
    report = CPTReport(prepared=prepared.summary())
    load_tokenizer(config.tokenizer)  # fail early on a bad path, before any work
    trajs = prepared.train

    n_turns = sum(len(t.turns) for t in trajs)
    tick("masking turns", 0, n_turns)
    batch = mask_turns(
        trajectory_turn_keys(trajs),
        seed=config.seed,
        workers=config.workers,
        total=n_turns,
        on_chunk=lambda n: tick("masking turns", n, None),
        mapper=mapper,
    )
    keep_all = batch.keep.tolist() if config.loss_masking else [True] * n_turns
    cats = batch.category.tolist()

    jobs: list[Job] = []
    pos = 0
    for traj in trajs:
        k = len(traj.turns)
        keep, traj_cats = keep_all[pos : pos + k], cats[pos : pos + k]
        pos += k
        counts = report.categories[traj.domain]
        for turn, c, kp in zip(traj.turns, traj_cats, keep, strict=True):
            counts[Category(c).name] += 1
            if loss_skipped(turn):
                counts["retry_skipped"] += 1
            elif kp:
                counts["kept"] += 1
        chat = trajectory_chat(traj, trajectory_system_prompt(traj, variant=config.system_variant))
        jobs.append(Job(f"traj:{traj.id}", traj.domain, chat, sorted(loss_turns_of(traj, keep))))
    for krec in read_knowledge(config.knowledge, config.knowledge_limit):
        if isinstance(krec, LineError):
            report.prepared.setdefault("bad_lines", []).append(str(krec))
            continue
        key, rec = krec
        jobs.append(Job(key, rec.get("domain"), knowledge_messages(rec), None))
        report.knowledge_samples += 1

    with ResumeLog(out_dir, "cpt", config, restart=restart) as log:
        todo = [j for j in jobs if j.key not in log.done]
        tick("tokenizing", 0, len(jobs))
        tick("tokenizing", len(jobs) - len(todo), None)
        for key, domain, ids, mask in tokenize_jobs(config.tokenizer, todo, config.workers, mapper=mapper):
            log.add(key, {"domain": domain, "input_ids": ids, "loss_mask": mask})
            tick("tokenizing", 1, None)
        items = [PackItem(j.key, log.done[j.key]["input_ids"], log.done[j.key]["loss_mask"]) for j in jobs]

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
    report.output = str(write_dataset(out_dir, [r.to_record() for r in rows], config.output_format)[0])
    write_report(out_dir, config, report.to_dict())
    return report


def write_report(out_dir: Path, config: Any, report: dict[str, Any]) -> None:
    body = {"config": config_dict(config), "report": report}
    (out_dir / "report.json").write_text(json.dumps(body, indent=1, default=str), encoding="utf-8")
