"""Run every CUDA path once, on a tiny model made on the fly: CPT, SFT and GSPO for a few
steps, a batch of ``hf`` inference, and ``accelerate launch`` with a shipped config.

On a machine without a GPU the same steps run on the CPU (the tests run it that way), so
the script itself is known to work before it meets a GPU. Each stage prints its device,
seconds and result; the summary is also written as JSON (``--out``). Exit status 1 when a
stage failed, 2 when ``--require-cuda`` is given and torch sees no GPU.

    bash scripts/gpu_check.sh                      # what torch sees: CUDA if present
    bash scripts/gpu_check.sh --require-cuda --out runs/gpu_check.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "trajectories.jsonl"


@dataclass
class Stage:
    name: str
    device: str
    seconds: float
    ok: bool
    detail: str


def _peak_mb() -> float:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0


def build_data(root: Path, tiny: Path) -> dict[str, Path]:
    from agentworld.data.config import CPTConfig, RLConfig, SFTConfig
    from agentworld.data.cpt import build_cpt
    from agentworld.data.rl import build_rl
    from agentworld.data.sft import build_sft
    from agentworld.judge import RuleScorer
    from agentworld.models import WorldModel, load_backend

    inputs = [str(EXAMPLES)]
    paths = {kind: root / kind for kind in ("cpt", "sft", "rl")}
    build_cpt(CPTConfig(inputs=inputs, output_dir=str(paths["cpt"]), tokenizer=str(tiny), max_length=2048, workers=1))
    # SFT targets from the retrieval floor's rollouts: the set is real, and no model is needed to make it.
    wm = WorldModel(load_backend("retrieval", source=str(EXAMPLES.parent)), concurrency=2)
    build_sft(SFTConfig(inputs=inputs, output_dir=str(paths["sft"]), turn_policy="all", threshold=1.0),
              world_model=wm, scorer=RuleScorer())
    build_rl(RLConfig(inputs=inputs, output_dir=str(paths["rl"]), tokenizer=str(tiny), max_prompt_tokens=100_000))
    return paths


def train_stages(root: Path, tiny: Path, data: dict[str, Path], steps: int) -> list[tuple[str, Callable[[], str]]]:
    from agentworld.train.config import CPTTrainConfig, GSPOTrainConfig, SFTTrainConfig
    from agentworld.train.cpt import train_cpt
    from agentworld.train.gspo import train_gspo
    from agentworld.train.sft import train_sft

    common = dict(model=str(tiny), max_steps=steps, save_steps=steps, logging_steps=1, learning_rate=1e-2,
                  warmup_ratio=0.0)

    def cpt() -> str:
        out = train_cpt(CPTTrainConfig(data=str(data["cpt"]), output_dir=str(root / "out-cpt"), **common))
        return f"{out.global_step} steps, {out.metrics.get('seconds_per_step', 0):.2f} s a step"

    def sft() -> str:
        out = train_sft(SFTTrainConfig(data=str(data["sft"]), output_dir=str(root / "out-sft"), lora=True, lora_r=4,
                                       **common))
        return f"{out.global_step} steps (LoRA), {out.metrics.get('seconds_per_step', 0):.2f} s a step"

    def gspo() -> str:
        out = train_gspo(GSPOTrainConfig(
            data=str(data["rl"]), output_dir=str(root / "out-gspo"), num_generations=4, per_device_train_batch_size=4,
            steps_per_generation=1, max_completion_length=32, **common))
        return f"{out.global_step} steps, {out.metrics.get('seconds_per_step', 0):.2f} s a step"

    return [("cpt", cpt), ("sft", sft), ("gspo", gspo)]


def inference(tiny: Path) -> str:
    import asyncio

    from agentworld.models import GenerationConfig, WorldModel, load_backend
    from agentworld.models.contract import OBSERVATION_BLOCK

    backend = load_backend("hf", path=tiny, max_batch=4, precision="fp32")
    prompts = [[{"role": "user", "content": "ls -la " * (i + 1)}] for i in range(4)]
    gen = GenerationConfig(max_tokens=16)

    async def batched() -> list[str]:
        answers = {i: p[0].text async for i, p in WorldModel(backend, concurrency=4).map(prompts, gen)}
        return [answers[i] for i in range(len(prompts))]

    together = asyncio.run(batched())
    # The runner forces the answer block (models/contract.py): alone, ask for it too.
    alone = [backend.generate_once(p, gen, OBSERVATION_BLOCK)[0].text for p in prompts]
    if together != alone:  # left padding must not change a greedy answer
        raise AssertionError(f"batched greedy answers differ from single ones: {together} vs {alone}")
    return f"{len(prompts)} prompts on {backend.device}, batched == single (fp32 greedy), peak batch {backend.batcher.peak_rows}"


def accelerate_launch(root: Path, tiny: Path, data: dict[str, Path], steps: int, cuda: bool) -> str:
    config = ROOT / "configs" / "accelerate" / ("ddp.yaml" if cuda else "ddp_cpu.yaml")
    out = root / "out-accelerate"
    # One process: a lent machine has one GPU, and the check is that the shipped config launches.
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), "--num_processes", "1",
           "-m", "agentworld", "train", "cpt", "--data", str(data["cpt"]), "--model", str(tiny), "--out", str(out),
           "--max-steps", str(steps), f"save_steps={steps}", "logging_steps=1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=root)
    if res.returncode != 0:
        raise RuntimeError(f"accelerate launch exited {res.returncode}:\n{(res.stdout + res.stderr)[-3000:]}")
    if not (out / f"checkpoint-{steps}").is_dir():
        raise RuntimeError(f"accelerate launch finished without {out}/checkpoint-{steps}")
    return f"{config.name}, 1 process, {steps} CPT steps"


def run(root: Path, steps: int) -> list[Stage]:
    from agentworld.models.tiny import build_tiny_checkpoint

    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "cpu"
    tiny = build_tiny_checkpoint(root / "tiny")
    data = build_data(root, tiny)
    stages = [*train_stages(root, tiny, data, steps), ("hf inference", lambda: inference(tiny)),
              ("accelerate launch", lambda: accelerate_launch(root, tiny, data, steps, cuda))]
    results = []
    for name, fn in stages:
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        try:
            detail, ok = fn(), True
            if cuda and name != "accelerate launch" and _peak_mb() == 0:
                detail, ok = f"{detail}; but nothing was allocated on the GPU", False
            elif cuda and name != "accelerate launch":
                detail += f"; peak GPU memory {_peak_mb():.0f} MiB"
        except Exception as exc:  # a failed stage is reported and the next one still runs
            detail, ok = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}", False
        results.append(Stage(name, device, round(time.perf_counter() - start, 1), ok, detail))
        print(f"[gpu_check] {name:<17} {'ok' if ok else 'FAILED':<6} {results[-1].seconds:7.1f} s  {detail}",
              flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps per training stage")
    parser.add_argument("--out", type=Path, help="write the summary here as JSON")
    parser.add_argument("--require-cuda", action="store_true", help="exit 2 when torch sees no GPU")
    args = parser.parse_args()
    if args.require_cuda and not torch.cuda.is_available():
        print("[gpu_check] torch sees no GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        sys.exit(2)
    print(f"[gpu_check] torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}, "
          f"device {'cuda' if torch.cuda.is_available() else 'cpu'}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        results = run(Path(tmp), args.steps)
    summary = {"torch": torch.__version__, "cuda": torch.version.cuda, "stages": [asdict(r) for r in results],
               "ok": all(r.ok for r in results)}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"[gpu_check] {sum(r.ok for r in results)}/{len(results)} stages ok in "
          f"{sum(r.seconds for r in results):.0f} s")
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
