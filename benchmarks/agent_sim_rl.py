"""Experiment 1, Sim RL: does GRPO in the simulator make a better agent in the real env?

Arms, all evaluated in the REAL terminal sandbox on the same held-out seeds with the
protocol ``agent train`` teaches (``agent eval --protocol tools``):

- ``untrained``: the policy as it is;
- ``bc``: after behaviour cloning of the tasks' scripted solutions (``agent bc``, played in
  the real env on training seeds), so the policy calls tools at all;
- ``bc+sim``: BC, then LoRA GRPO (``agent train``, TRL's environment hook) on simulated
  episodes only (``mode: sim``, the embedded world model, perturbations from the config);
- ``bc+real``: BC, then the same GRPO budget (steps, generations, batch, tool turns) in the real env;
- ``sim``, ``real``: the same GRPO from the untrained policy (not run by default: a policy
  that never calls a tool gives GRPO no signal).

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
    bc_stage,
    check_bc_config,
    check_train_configs,
    eval_stage,
    parse_args,
    policy_spec,
    report,
    train_stage,
)

ARMS = ("untrained", "bc", "bc+sim", "bc+real", "sim", "real")
DEFAULT_ARMS = ["untrained", "bc", "bc+sim", "bc+real"]


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, __doc__.split("\n\n")[0], "train.max_steps=2")
    arms = cfg.sim_rl_arms or DEFAULT_ARMS
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"{args.config}: unknown arm {unknown[0]!r} (known: {', '.join(ARMS)})")
    train_arms = {"sim": {**cfg.sim, "mode": "sim"}, "real": {**cfg.real, "mode": "real"}}
    check_train_configs(cfg, [train_arms[a.removeprefix("bc+")] for a in arms if a.removeprefix("bc+") in train_arms])
    if any(a.startswith("bc") for a in arms):
        check_bc_config(cfg)
    runner = Runner(args.out, dry_run=args.dry_run, report_only=args.report_only)
    steps = cfg.train.get("max_steps")
    bc_folder = args.out / "train" / "bc"
    rows: list[Row] = []
    for arm in arms:
        if arm == "untrained":
            spec = policy_spec(base_model_path(cfg.policy), cfg)
            runner.run(eval_stage("eval-untrained", cfg, spec, args.out))
            rows.append(Row("untrained", "eval-untrained"))
            continue
        if arm.startswith("bc"):
            runner.run(bc_stage("bc", cfg, cfg.policy, bc_folder, args.out))
        if arm == "bc":
            runner.run(eval_stage("eval-bc", cfg, policy_spec(bc_folder, cfg), args.out))
            rows.append(Row("BC only", "eval-bc", "bc", cfg.bc.get("max_steps")))
            continue
        mode = arm.removeprefix("bc+")
        name = f"train-{arm.replace('+', '-')}"
        folder = args.out / "train" / name
        start = str(bc_folder) if arm.startswith("bc+") else cfg.policy
        runner.run(train_stage(name, cfg, start, folder, train_arms[mode]))
        runner.run(eval_stage(f"eval-{arm.replace('+', '-')}", cfg, policy_spec(folder, cfg), args.out))
        label = f"BC + GRPO in {mode}" if arm.startswith("bc+") else f"GRPO in {mode}"
        rows.append(Row(label, f"eval-{arm.replace('+', '-')}", name, steps))
    report(runner, cfg, rows, "Experiment 1, Sim RL", "sim_rl")


if __name__ == "__main__":
    main()
