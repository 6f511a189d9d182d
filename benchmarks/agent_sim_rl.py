"""Experiment 1, Sim RL: does GRPO in the simulator make a better agent in the real env?

Arms, all evaluated in the REAL terminal sandbox on the same held-out seeds with the
protocol ``agent train`` teaches (``agent eval --protocol tools``):

- ``untrained``: the policy as it is;
- ``sim``: LoRA GRPO (``agent train``, TRL's environment hook) on simulated episodes only
  (``mode: sim``, the embedded world model, perturbations from the config);
- ``real``: the same budget (GRPO steps, generations, batch, tool turns) in the real env.

Prints success (Wilson 95%) and mean reward (t 95%) from ``agent eval``'s statistics,
training wall time and seconds a step, and writes results.json/.md to --out. Resumable:
rerun the same command after a kill. agent_warmup.py shares the --out folder (and the
config): the stages both need run once.

    python benchmarks/agent_sim_rl.py                                 # configs/agent/experiments_cpu.yaml
    python benchmarks/agent_sim_rl.py --config configs/agent/experiments_gpu.yaml --out runs/agent_exp/gpu
    python benchmarks/agent_sim_rl.py train.max_steps=2 eval.seeds=1 label=reduced   # overrides
    python benchmarks/agent_sim_rl.py --dry-run                       # check configs, print the stages
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_experiments import (  # noqa: E402 - the sibling module, found through the path above
    Row,
    Runner,
    base_model_path,
    check_train_configs,
    eval_stage,
    parse_args,
    policy_spec,
    report,
    train_stage,
)

ARMS = ("untrained", "sim", "real")


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, __doc__.split("\n\n")[0], "train.max_steps=2")
    arms = cfg.sim_rl_arms or list(ARMS)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"{args.config}: unknown arm {unknown[0]!r} (known: {', '.join(ARMS)})")
    train_arms = {"sim": {**cfg.sim, "mode": "sim"}, "real": {**cfg.real, "mode": "real"}}
    check_train_configs(cfg, [train_arms[a] for a in arms if a in train_arms])
    runner = Runner(args.out, dry_run=args.dry_run, report_only=args.report_only)
    steps = cfg.train.get("max_steps")
    rows: list[Row] = []
    for arm in arms:
        if arm == "untrained":
            spec = policy_spec(base_model_path(cfg.policy), cfg)
            runner.run(eval_stage("eval-untrained", cfg, spec, args.out))
            rows.append(Row("untrained", "eval-untrained"))
            continue
        folder = args.out / "train" / f"train-{arm}"
        runner.run(train_stage(f"train-{arm}", cfg, cfg.policy, folder, train_arms[arm]))
        runner.run(eval_stage(f"eval-{arm}", cfg, policy_spec(folder, cfg), args.out))
        rows.append(Row(f"GRPO in {arm}", f"eval-{arm}", f"train-{arm}", steps))
    report(runner, cfg, rows, "Experiment 1, Sim RL", "sim_rl")


if __name__ == "__main__":
    main()
