"""Does GSPO learn? A tiny random model trained on a learnable reward, with its curve.

The model is the tiny random Llama of ``agentworld.models.tiny``; the prompts are the RL
pool built from ``examples/``; the reward is :class:`agentworld.train.probe.BlockReward`
(the output contract's closed block around a fixed body, shaped so that a random policy
earns a little). Prints the mean reward of every step, the mean of the first and last
``--window`` steps, and the seconds a step.

    python benchmarks/gspo_learning.py                 # 30 steps
    python benchmarks/gspo_learning.py --seed 3 --precision bf16
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agentworld.train.probe import learning_run

EXAMPLES = Path(__file__).parents[1] / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=3e-2)
    parser.add_argument("--length", type=int, default=32, help="max completion tokens")
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default="fp32", help="fp32 (pinned default), bf16 or auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        curve = learning_run(Path(tmp), [str(EXAMPLES / "trajectories.jsonl")], steps=args.steps, lr=args.lr,
                             length=args.length, seed=args.seed, precision=args.precision)
        seconds = time.perf_counter() - start
    for i, r in enumerate(curve, 1):
        print(f"step {i:3d}  reward {r:.3f}  " + "#" * round(r * 40))
    first, last = curve[: args.window], curve[-args.window :]
    print(f"mean reward, first {len(first)} steps: {sum(first) / len(first):.3f}; last {len(last)}: "
          f"{sum(last) / len(last):.3f}  ({seconds / max(1, len(curve)):.2f} s a step, setup included)")


if __name__ == "__main__":
    main()
