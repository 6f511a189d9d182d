"""Built datasets as Parquet shards and/or JSONL: the same rows either way, opened with
``datasets.load_dataset``, and a trainer streaming Parquet shards on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.config import CPTConfig, RLConfig
from agentworld.data.cpt import build_cpt
from agentworld.data.parquet import column_names, dataset_files, num_rows, open_dataset, write_dataset
from agentworld.data.rl import build_rl
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.records.trajectory import read_trajectories, write_trajectories
from agentworld.train.common import TrainInputError, load_dataset
from agentworld.train.config import CPTTrainConfig
from agentworld.train.cpt import build_trainer as cpt_trainer

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples" / "trajectories.jsonl"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def rows_of(folder: Path, *, streaming: bool = False) -> list[dict]:
    return [dict(r) for r in open_dataset(folder, streaming=streaming)]


ROWS = [
    {"prompt": [{"role": "system", "content": "sim"}, {"role": "user", "content": f"ls {i}"}],
     "input_ids": list(range(i, i + 5)), "score": i / 4, "domain": "terminal", "note": "é" * i}
    for i in range(40)
]


def test_round_trip_shards_and_stale_files(tmp_path: Path) -> None:
    files = write_dataset(tmp_path, ROWS, "both", shard_bytes=1000)
    shards = [f for f in files if f.suffix == ".parquet"]
    assert len(shards) > 2 and shards[0].name == f"train-00000-of-{len(shards):05d}.parquet"
    assert (tmp_path / "train.jsonl") in files
    # the ecosystem's own loaders open the files as they are
    pq = datasets.load_dataset("parquet", data_files=[str(f) for f in shards], split="train")
    js = datasets.load_dataset("json", data_files=str(tmp_path / "train.jsonl"), split="train")
    assert [dict(r) for r in pq] == ROWS == [dict(r) for r in js]
    assert rows_of(tmp_path, streaming=True) == ROWS
    assert num_rows(tmp_path) == 40 and set(column_names(tmp_path)) == set(ROWS[0])

    write_dataset(tmp_path, ROWS[:3], "parquet")  # one shard now: the old shards and JSONL go
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.parquet"]
    write_dataset(tmp_path, ROWS[:2], "jsonl")
    assert dataset_files(tmp_path) == ("json", [tmp_path / "train.jsonl"])
    assert rows_of(tmp_path) == ROWS[:2] and column_names(tmp_path) == list(ROWS[0])
    with pytest.raises(ValueError, match="unknown dataset format"):
        write_dataset(tmp_path, ROWS, "csv")


def test_builders_write_both_formats_with_the_same_rows(tmp_path: Path, tiny: Path) -> None:
    inputs = [str(EXAMPLES)]
    build_cpt(CPTConfig(inputs=inputs, output_dir=str(tmp_path / "cpt"), tokenizer=str(tiny), max_length=1024,
                        workers=1, output_format="both"))
    build_rl(RLConfig(inputs=inputs, output_dir=str(tmp_path / "rl"), tokenizer=str(tiny),
                      max_prompt_tokens=100_000, output_format="both"))
    for kind in ("cpt", "rl"):
        folder = tmp_path / kind
        assert (folder / "train.parquet").exists() and (folder / "train.jsonl").exists()
        jsonl = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]
        assert len(jsonl) >= 1 and rows_of(folder) == jsonl


def test_cli_format_flags(tmp_path: Path, tiny: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["data", "build", "rl", "-i", str(EXAMPLES), "-o", str(tmp_path / "rl"),
                              "--format", "jsonl", "--set", f"tokenizer={tiny}", "--set", "max_prompt_tokens=100000"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "rl").glob("train*")) == ["train.jsonl"]
    res = runner.invoke(app, ["data", "build", "rl", "-o", str(tmp_path / "x"), "-i", str(EXAMPLES), "--format", "csv"])
    assert res.exit_code != 0 and "Traceback" not in res.output

    # the first trajectories of every recorded domain: each domain's real records, without
    # converting all eleven thousand turns to compare the two formats
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    for f in sorted((ROOT / "benchmarks" / "local" / "trajectories").glob("*.jsonl")):
        write_trajectories(recorded / f.name, read_trajectories(f).items[:5])
    res = runner.invoke(app, ["data", "convert", *map(str, sorted(recorded.glob("*.jsonl"))), "-o", str(tmp_path / "b"),
                              "--format", "both"])
    assert res.exit_code == 0, res.output
    converted = sorted((tmp_path / "b").glob("*_test.jsonl"))
    assert len(converted) == len(list(recorded.glob("*.jsonl")))  # one benchmark file per domain
    for jsonl in converted:
        rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
        pq = [dict(r) for r in datasets.load_dataset("parquet", data_files=str(jsonl.with_suffix(".parquet")),
                                                      split="train")]
        assert len(pq) == len(rows) > 0
        assert [{k: r[k] for k in ("id", "prompt", "response", "turn_idx")} for r in pq] == [
            {k: r[k] for k in ("id", "prompt", "response", "turn_idx")} for r in rows]


def test_trainer_streams_parquet_shards(tmp_path: Path, tiny: Path) -> None:
    data = tmp_path / "cpt"
    build_cpt(CPTConfig(inputs=[str(EXAMPLES)], output_dir=str(data), tokenizer=str(tiny), max_length=2048,
                        workers=1, packing=False))
    rows = rows_of(data)
    write_dataset(data, rows, "parquet", shard_bytes=2000)  # reshard the build into several files
    assert len(dataset_files(data)[1]) > 1

    cfg = CPTTrainConfig(data=str(data), model=str(tiny), output_dir=str(tmp_path / "out"), max_steps=2,
                         save_steps=10, learning_rate=1e-2, warmup_ratio=0.0, logging_steps=1)
    trainer, _ = cpt_trainer(cfg)
    assert isinstance(trainer.train_dataset, datasets.IterableDataset)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    result = trainer.train()
    assert result.global_step == 2
    after = trainer.model.state_dict()
    assert any(not before[k].equal(after[k]) for k in before)

    # an epoch-based run (no max_steps) gets the memory-mapped dataset with its length
    epoch = cpt_trainer(CPTTrainConfig(data=str(data), model=str(tiny), output_dir=str(tmp_path / "o2")))[0]
    assert len(epoch.train_dataset) == len(rows)


def test_missing_and_empty_datasets_are_explained(tmp_path: Path) -> None:
    with pytest.raises(TrainInputError, match="no dataset"):
        load_dataset(str(tmp_path), "cpt", {"input_ids"})
    write_dataset(tmp_path, [{"prompt": "x"}], "jsonl")
    with pytest.raises(TrainInputError, match="lacks columns"):
        load_dataset(str(tmp_path), "cpt", {"input_ids"})
    write_dataset(tmp_path / "e", [], "parquet")
    with pytest.raises(TrainInputError, match="no rows|lacks columns"):
        load_dataset(str(tmp_path / "e"), "cpt", {"input_ids"})
