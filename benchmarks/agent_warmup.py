"""Experiment 2, warm-up: does world-model training make the policy a better agent?

The warm-up is the world-model recipe's CPT stage (next-observation prediction with
turn-level loss masking) on recorded trajectories: ``agentworld data split`` ->
``data build cpt`` -> ``train cpt`` (LoRA), with the recipe's configs and the overrides in
the ``warmup`` section. Arms, all evaluated in the REAL terminal sandbox like Experiment 1
(same seeds, ``agent eval --protocol tools``):

- ``base``: the policy without warm-up (Experiment 1's ``untrained``);
- ``warm``: after the warm-up, with no agent training;
- ``base+rl``: GRPO from the base (Experiment 1's arm in ``rl_mode``, the same budget);
- ``warm+rl``: the same GRPO from the warmed-up model;
- ``shipped-wm``: the packaged world-model adapter (so far CPT only, on every domain),
  evaluated as an agent; it costs an evaluation only.

Same --out as agent_sim_rl.py by default: the arms both experiments share run once.

    python benchmarks/agent_warmup.py                                   # configs/agent/experiments_cpu.yaml
    python benchmarks/agent_warmup.py warmup.train.max_steps=5 label=reduced
    python benchmarks/agent_warmup.py --dry-run
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_experiments import (  # noqa: E402 - the sibling module, found through the path above
    AW,
    ROOT,
    Row,
    Runner,
    Stage,
    base_model_path,
    check_train_configs,
    eval_stage,
    parse_args,
    policy_spec,
    report,
    sets,
    train_stage,
)

ARMS = ("base", "warm", "base+rl", "warm+rl", "shipped-wm")
SHIPPED_ADAPTER = ROOT / "src/agentworld/models/adapters/smol"


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, __doc__.split("\n\n")[0], "warmup.train.max_steps=5")
    w = cfg.warmup
    arms = w.arms or list(ARMS)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"{args.config}: unknown arm {unknown[0]!r} (known: {', '.join(ARMS)})")
    if w.rl_mode not in ("sim", "real"):
        raise SystemExit(f"{args.config}: warmup.rl_mode must be sim or real")
    rl_arm = {**(cfg.sim if w.rl_mode == "sim" else cfg.real), "mode": w.rl_mode}
    if any(a.endswith("+rl") for a in arms):
        check_train_configs(cfg, [rl_arm])
    runner = Runner(args.out, dry_run=args.dry_run, report_only=args.report_only)
    out = args.out
    warm = out / "train" / "warmup-cpt"
    needs_warm = any(a.startswith("warm") for a in arms)
    if needs_warm:
        trajs = out / "warmup_train_trajs.jsonl"
        runner.run(Stage("warmup-split", [*AW, "data", "split", *w.sources, "--split", "train",
                                          "--exclude-bench", w.exclude_bench, "-o", str(trajs)]))
        runner.run(Stage("warmup-data", [*AW, "data", "build", "cpt", "--config", w.data_config, "--input", str(trajs),
                                         "--out", str(out / "data" / "warmup-cpt"), *sets(w.data)]))
        runner.run(Stage("warmup-cpt", [*AW, "train", "cpt", "--config", w.train_config, "--data",
                                        str(out / "data" / "warmup-cpt"), "--model", cfg.policy, "--out", str(warm),
                                        *sets(w.train)]))
    steps = cfg.train.get("max_steps")
    rows: list[Row] = []
    for arm in arms:
        if arm == "base":
            runner.run(eval_stage("eval-untrained", cfg, policy_spec(base_model_path(cfg.policy), cfg), out))
            rows.append(Row("base (no warm-up)", "eval-untrained"))
        elif arm == "warm":
            runner.run(eval_stage("eval-warm", cfg, policy_spec(warm, cfg), out))
            rows.append(Row("warm-up (CPT), no agent training", "eval-warm", "warmup-cpt", w.train.get("max_steps")))
        elif arm == "shipped-wm":
            spec = policy_spec(base_model_path(cfg.policy), cfg) + f",adapter={SHIPPED_ADAPTER}"
            runner.run(eval_stage("eval-shipped-wm", cfg, spec, out))
            rows.append(Row("shipped world model (CPT), no agent training", "eval-shipped-wm"))
        else:
            start = cfg.policy if arm == "base+rl" else str(warm)
            name = f"train-{w.rl_mode}" if arm == "base+rl" else f"train-warm-{w.rl_mode}"
            folder = out / "train" / name
            runner.run(train_stage(name, cfg, start, folder, rl_arm))
            ev = f"eval-{w.rl_mode}" if arm == "base+rl" else f"eval-warm-{w.rl_mode}"
            runner.run(eval_stage(ev, cfg, policy_spec(folder, cfg), out))
            rows.append(Row(f"{'base' if arm == 'base+rl' else 'warm-up'} + GRPO in {w.rl_mode}", ev, name, steps))
    report(runner, cfg, rows, "Experiment 2, warm-up", "warmup")


if __name__ == "__main__":
    main()
