"""CPT, SFT and GSPO each train a tiny random model for a few steps on datasets made by
the real data builders; the loss mask, the saved config and resuming are checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.config import CPTConfig, RLConfig, SFTConfig
from agentworld.data.cpt import build_cpt
from agentworld.data.packing import IGNORE_INDEX
from agentworld.data.rl import build_rl
from agentworld.data.sft import build_sft
from agentworld.judge import RuleScorer
from agentworld.models import WorldModel, load_backend
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.prompts import OBS_CLOSE, OBS_OPEN
from agentworld.train.common import run_trainer
from agentworld.train.config import (
    CONFIG_NAME,
    CPTTrainConfig,
    GSPOTrainConfig,
    SFTTrainConfig,
    read_train_config,
)
from agentworld.train.cpt import build_trainer as cpt_trainer
from agentworld.train.cpt import collate_padding_free, train_cpt
from agentworld.train.gspo import train_gspo
from agentworld.train.sft import build_trainer as sft_trainer

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


@pytest.fixture(scope="module")
def datasets_dir(tmp_path_factory: pytest.TempPathFactory, tiny: Path) -> Path:
    root = tmp_path_factory.mktemp("data")
    inputs = [str(EXAMPLES / "trajectories.jsonl")]
    knowledge = root / "knowledge.jsonl"
    passages = ["BASH is a shell that reads commands.", "ls lists the files of a directory, one per name."]
    knowledge.write_text("".join(json.dumps({"title": "man", "domain": "terminal", "text": t}) + "\n" for t in passages))
    build_cpt(CPTConfig(inputs=inputs, output_dir=str(root / "cpt"), tokenizer=str(tiny), max_length=2048, workers=1,
                        knowledge=[str(knowledge)]))
    wm = WorldModel(load_backend("retrieval", source=str(EXAMPLES)), concurrency=2)
    build_sft(SFTConfig(inputs=inputs, output_dir=str(root / "sft"), turn_policy="all", threshold=1.0),
              world_model=wm, scorer=RuleScorer())
    build_rl(RLConfig(inputs=inputs, output_dir=str(root / "rl"), tokenizer=str(tiny), max_prompt_tokens=100_000))
    return root


def weights(folder: Path) -> dict[str, torch.Tensor]:
    name = "adapter_model.safetensors" if (folder / "adapter_model.safetensors").exists() else "model.safetensors"
    return load_file(str(folder / name))


def changed(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> int:
    return sum(not torch.equal(before[k], after[k]) for k in before if k in after)


def test_cpt_loss_is_the_masked_next_token_loss(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    # fp32 pinned: the loss is compared with a recomputation at rel 1e-4, tighter than bf16 holds.
    cfg = CPTTrainConfig(data=str(datasets_dir / "cpt"), model=str(tiny), output_dir=str(tmp_path / "out"),
                         precision="fp32")
    trainer, _ = cpt_trainer(cfg)
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    batch = collate_padding_free(rows)
    model = trainer.model.eval()
    with torch.no_grad():
        loss = model(**batch).loss
        logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"]).logits
    labels = batch["labels"][0, 1:]
    in_loss = labels != IGNORE_INDEX
    assert 0 < int(in_loss.sum()) < labels.numel()  # the mask drops some tokens, keeps others
    per_token = torch.nn.functional.cross_entropy(logits[0, :-1], labels.clamp(min=0), reduction="none")
    assert loss.item() == pytest.approx(per_token[in_loss].mean().item(), rel=1e-4)
    assert loss.item() != pytest.approx(per_token.mean().item(), rel=1e-3)
    # a sample never attends to the one packed before it: its logits match a lone run
    pos = batch["position_ids"][0]
    starts = (pos == 0).nonzero().flatten().tolist()
    assert len(starts) >= 2
    s, e = starts[1], (starts[2] if len(starts) > 2 else pos.numel())
    with torch.no_grad():
        alone = model(input_ids=batch["input_ids"][:, s:e]).logits
    assert torch.allclose(alone[0], logits[0, s:e], atol=1e-4)
    # masked tokens carry no gradient: the loss's gradient on their logits is exactly zero
    model.train()
    out = model(**batch)
    out.logits.retain_grad()
    out.loss.backward()
    grad = out.logits.grad[0, :-1].abs().sum(-1)
    assert not grad[~in_loss].any() and grad[in_loss].all()


def test_cpt_trains_saves_config_and_resumes(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    out = tmp_path / "out"
    cfg = CPTTrainConfig(data=str(datasets_dir / "cpt"), model=str(tiny), output_dir=str(out),
                         max_steps=2, save_steps=2, learning_rate=1e-2, warmup_ratio=0.0, logging_steps=1)
    result = train_cpt(cfg)
    assert result.global_step == 2 and result.resumed_from is None
    assert changed(weights(tiny), weights(out)) > 0
    assert read_train_config(out / "checkpoint-2") == cfg
    assert (out / CONFIG_NAME).exists() and (out / "tokenizer.json").exists()
    timing = json.loads((out / "timing.json").read_text())  # measured, for ETAs and reports
    assert timing["steps"] == 2 and timing["seconds_per_step"] > 0 and result.metrics["seconds_per_step"] > 0
    more = CPTTrainConfig(**{**cfg.__dict__, "max_steps": 3})
    again = train_cpt(more)
    assert again.resumed_from and again.resumed_from.endswith("checkpoint-2") and again.global_step == 3


def test_sft_lora_trains_on_the_completion_only(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    cfg = SFTTrainConfig(data=str(datasets_dir / "sft"), model=str(tiny), output_dir=str(tmp_path / "out"),
                         max_steps=2, save_steps=2, learning_rate=1e-2, lora=True, lora_r=4, logging_steps=1)
    trainer, tokenizer = sft_trainer(cfg)
    batch = next(iter(trainer.get_train_dataloader()))
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    target = tokenizer.decode(ids[labels != IGNORE_INDEX])
    assert OBS_OPEN in target and OBS_CLOSE in target
    assert "<|im_start|>system" in tokenizer.decode(ids) and "system" not in target  # prompt is context only
    result = run_trainer(trainer, cfg, tokenizer)
    assert result.global_step == 2
    adapter = weights(tmp_path / "out")
    lora_b = [v for k, v in adapter.items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at zero
    assert read_train_config(tmp_path / "out" / "checkpoint-2") == cfg


def tag_bias(tokenizer, strength: float = 8.0) -> list:
    """Generation bias towards the observation tags, so a random model's rollouts are a
    mix of complete, truncated and missing answers (rewards then differ in a group)."""
    bias = []
    for tag in (OBS_OPEN, OBS_CLOSE):
        ids = tokenizer(tag, add_special_tokens=False)["input_ids"]
        bias.append([ids[:1], strength])
        bias += [[ids[: i + 1], 30.0] for i in range(1, len(ids))]
    return bias


def test_gspo_moves_the_policy_with_the_hybrid_reward(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    from transformers import AutoTokenizer

    out = tmp_path / "out"
    cfg = GSPOTrainConfig(
        data=str(datasets_dir / "rl"), model=str(tiny), output_dir=str(out), max_steps=2, save_steps=2,
        learning_rate=1e-2, warmup_ratio=0.0, logging_steps=1, num_generations=4, per_device_train_batch_size=4,
        steps_per_generation=1, max_completion_length=32, epsilon=0.2, epsilon_high=0.2,
        generation_kwargs={"sequence_bias": tag_bias(AutoTokenizer.from_pretrained(tiny))},
    )
    result = train_gspo(cfg)
    assert result.global_step == 2
    logs = [h for h in _state(out / "checkpoint-2") if "reward" in h]
    assert logs and any(h["reward_std"] > 0 for h in logs)
    assert changed(weights(tiny), weights(out)) > 0
    assert read_train_config(out / "checkpoint-2") == cfg


def _state(folder: Path) -> list[dict]:
    return json.loads((folder / "trainer_state.json").read_text())["log_history"]


def test_cli_trains_and_explains_missing_inputs(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["train", "sft", "--data", str(tmp_path / "none"), "--model", str(tiny)])
    assert res.exit_code == 2 and "agentworld data build sft" in res.output
    res = runner.invoke(app, ["train", "gspo", "--data", str(datasets_dir / "rl"), "--model", str(tmp_path)])
    assert res.exit_code == 2 and "no model checkpoint" in res.output
    odd = tmp_path / "odd.yaml"
    odd.write_text("num_generations: 4\nper_device_train_batch_size: 3\nsteps_per_generation: 1\n")
    res = runner.invoke(app, ["train", "gspo", "-c", str(odd), "--data", str(datasets_dir / "rl"), "--model", str(tiny),
                              "--out", str(tmp_path / "odd")])
    assert res.exit_code == 2 and "num_generations" in res.output and "configs/train/gspo.yaml" in res.output
    res = runner.invoke(app, ["train", "cpt", "--config", str(ROOT / "configs/train/cpt.yaml"),
                              "--data", str(datasets_dir / "cpt"), "--model", str(tiny),
                              "--out", str(tmp_path / "cli"), "--max-steps", "1", "--lora"])
    assert res.exit_code == 0, res.output
    saved = read_train_config(tmp_path / "cli")
    assert saved.lora and saved.max_steps == 1 and saved.gradient_accumulation_steps == 8
    assert (tmp_path / "cli" / "adapter_config.json").exists()
    # the next stage starts from the LoRA output: base weights with the adapter folded in
    res = runner.invoke(app, ["train", "sft", "--data", str(datasets_dir / "sft"), "--model", str(tmp_path / "cli"),
                              "--out", str(tmp_path / "next"), "--max-steps", "1", "--no-lora"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "next" / "model.safetensors").exists() and not read_train_config(tmp_path / "next").lora


def test_chained_lora_stages_reload_from_the_last_folder(tmp_path: Path, datasets_dir: Path, tiny: Path) -> None:
    import shutil

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    # fp32 pinned: the reloaded chain is compared with the trained model at 1e-4.
    fast = {"max_steps": 2, "save_steps": 100, "learning_rate": 1e-2, "warmup_ratio": 0.0, "lora": True, "lora_r": 4,
            "precision": "fp32"}
    train_cpt(CPTTrainConfig(data=str(datasets_dir / "cpt"), model=str(tiny), output_dir=str(tmp_path / "cpt"), **fast))
    cfg = SFTTrainConfig(data=str(datasets_dir / "sft"), model=str(tmp_path / "cpt"), output_dir=str(tmp_path / "sft"), **fast)
    trainer, tokenizer = sft_trainer(cfg)
    run_trainer(trainer, cfg, tokenizer)
    final = trainer.model.eval()
    # The final folder alone, moved away from the CPT stage it was trained on, reloads it all.
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "sft", moved)
    shutil.rmtree(tmp_path / "cpt")
    assert json.loads((moved / "agentworld_chain.json").read_text())["base"] == str(tiny.resolve())
    backend = load_backend("hf", path=moved, precision="fp32")
    ids = torch.tensor([tokenizer("root@box:~# ls -la\ntotal 8", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        expected = final(input_ids=ids).logits
        got = backend.model(input_ids=ids).logits
        # what PEFT alone loads (raw base + last adapter) is a different model: CPT dropped
        plain = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny), moved)(input_ids=ids).logits
    # merged weights vs the unmerged adapter differ by float32 rounding only (3e-5 seen)
    assert (got - expected).abs().max() < 1e-4
    assert (plain - expected).abs().max() > 1e-2
    assert len(backend.chain.stages) == 2 and backend.model_id.count("+") == 2
    # the next stage starts from the chained folder too: base + CPT + SFT merged
    nxt = SFTTrainConfig(data=str(datasets_dir / "sft"), model=str(moved), output_dir=str(tmp_path / "next"),
                         **{**fast, "max_steps": 1})
    trainer2, _ = sft_trainer(nxt)
    with torch.no_grad():
        start = trainer2.model.eval()(input_ids=ids).logits  # its LoRA B is zero: the merged model
    assert (start - expected).abs().max() < 1e-4


def test_block_reward_ranks_the_closed_block_first(tiny: Path) -> None:
    from transformers import AutoTokenizer

    from agentworld.train.probe import BlockReward

    tok = AutoTokenizer.from_pretrained(tiny)
    reward = BlockReward(tok)
    texts = [f"{OBS_OPEN}\nok\n{OBS_CLOSE}", f"{OBS_OPEN}\nno\n", "root@sandbox:/workspace# ls"]
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    exact, partial, other = reward([], texts, ids)
    assert exact == 2.0 and 1.0 > partial > other >= 0.0


@pytest.mark.slow
@pytest.mark.timeout(1200)  # about a minute on a quiet machine; a shared 2-core box is slower
def test_gspo_learns_a_learnable_reward(tmp_path: Path) -> None:
    from agentworld.train.probe import learning_run

    # fp32 pinned (learning_run's default), so the curve is the same with and without native bf16.
    curve = learning_run(tmp_path, [str(EXAMPLES / "trajectories.jsonl")], steps=20)
    assert len(curve) == 20
    first, last = sum(curve[:3]) / 3, sum(curve[-3:]) / 3
    # A random policy earns under 0.1; learning the block's tokens earns about 0.5 (seeds 0-3 all
    # ended above 0.5), so a rise of 0.2 is learning, not noise.
    assert last > first + 0.2, curve
