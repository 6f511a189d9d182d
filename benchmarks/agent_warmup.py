"""Experiment 2, warm-up: does world-model training make the policy a better agent?

The warm-up is the world-model recipe's CPT stage (next-observation prediction with
turn-level loss masking) on recorded trajectories: ``agentworld data split`` ->
``data build cpt`` -> ``train cpt`` (LoRA), with the recipe's configs and the overrides in
the ``warmup`` section. Arms, all evaluated in the REAL terminal sandbox like Experiment 1
(same seeds, ``agent eval --protocol tools``):

- ``base``: the policy without warm-up (Experiment 1's ``untrained``);
- ``warm``: after the warm-up, with no agent training;
- ``bc``: behaviour cloning of the scripted solutions from the base (Experiment 1's ``bc``);
- ``warm+bc``: the same behaviour cloning (same conversations, steps) from the warmed-up model;
- ``bc+rl``: GRPO from ``bc`` (Experiment 1's ``bc+<rl_mode>`` arm, the same budget);
- ``warm+bc+rl``: the same GRPO from ``warm+bc``;
- ``base+rl``, ``warm+rl``: GRPO without BC (not run by default: no tool calls, no signal);
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
    bc_stage,
    check_bc_config,
    check_train_configs,
    eval_stage,
    parse_args,
    policy_spec,
    report,
    sets,
    train_stage,
)

ARMS = ("base", "warm", "bc", "warm+bc", "bc+rl", "warm+bc+rl", "base+rl", "warm+rl", "shipped-wm")
DEFAULT_ARMS = ["base", "warm", "bc", "warm+bc", "bc+rl", "warm+bc+rl"]
SHIPPED_ADAPTER = ROOT / "src/agentworld/models/adapters/smol"


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, __doc__.split("\n\n")[0], "warmup.train.max_steps=5")
    w = cfg.warmup
    arms = w.arms or DEFAULT_ARMS
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"{args.config}: unknown arm {unknown[0]!r} (known: {', '.join(ARMS)})")
    if w.rl_mode not in ("sim", "real"):
        raise SystemExit(f"{args.config}: warmup.rl_mode must be sim or real")
    rl_arm = {**(cfg.sim if w.rl_mode == "sim" else cfg.real), "mode": w.rl_mode}
    if any(a.endswith("+rl") for a in arms):
        check_train_configs(cfg, [rl_arm])
    if any("bc" in a for a in arms):
        check_bc_config(cfg)
    runner = Runner(args.out, dry_run=args.dry_run, report_only=args.report_only)
    out = args.out
    warm = out / "train" / "warmup-cpt"
    if any(a.startswith("warm") for a in arms):
        trajs = out / "warmup_train_trajs.jsonl"
        runner.run(Stage("warmup-split", [*AW, "data", "split", *w.sources, "--split", "train",
                                          "--exclude-bench", w.exclude_bench, "-o", str(trajs)]))
        runner.run(Stage("warmup-data", [*AW, "data", "build", "cpt", "--config", w.data_config, "--input", str(trajs),
                                         "--out", str(out / "data" / "warmup-cpt"), *sets(w.data)]))
        runner.run(Stage("warmup-cpt", [*AW, "train", "cpt", "--config", w.train_config, "--data",
                                        str(out / "data" / "warmup-cpt"), "--model", cfg.policy, "--out", str(warm),
                                        *sets(w.train)]))
    steps, bc_steps = cfg.train.get("max_steps"), cfg.bc.get("max_steps")
    # Each agent-training start: (its stage and folder, the model it starts from, its label).
    starts = {"base": ("", cfg.policy, "base"), "warm": ("warmup-cpt", str(warm), "warm-up"),
              "bc": ("bc", str(out / "train" / "bc"), "BC"),
              "warm+bc": ("warm-bc", str(out / "train" / "warm-bc"), "warm-up + BC")}
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
        elif arm in ("bc", "warm+bc"):
            name, folder, label = starts[arm]
            runner.run(bc_stage(name, cfg, cfg.policy if arm == "bc" else str(warm), Path(folder), out))
            runner.run(eval_stage(f"eval-{name}", cfg, policy_spec(folder, cfg), out))
            rows.append(Row(f"{label}, no agent training" if arm == "warm+bc" else "BC (no warm-up), no agent training",
                            f"eval-{name}", name, bc_steps))
        else:
            start_name, start, label = starts[arm.removesuffix("+rl")]
            if arm.removesuffix("+rl") in ("bc", "warm+bc"):
                runner.run(bc_stage(start_name, cfg, cfg.policy if arm == "bc+rl" else str(warm), Path(start), out))
            # the GRPO arms Experiment 1 also has keep its stage names, so they run once
            name = {"base+rl": f"train-{w.rl_mode}", "bc+rl": f"train-bc-{w.rl_mode}"}.get(
                arm, f"train-{start_name}-{w.rl_mode}")
            folder = out / "train" / name
            runner.run(train_stage(name, cfg, start, folder, rl_arm))
            ev = "eval-" + name.removeprefix("train-")
            runner.run(eval_stage(ev, cfg, policy_spec(folder, cfg), out))
            rows.append(Row(f"{label} + GRPO in {w.rl_mode}", ev, name, steps))
    report(runner, cfg, rows, "Experiment 2, warm-up", "warmup")


if __name__ == "__main__":
    main()
