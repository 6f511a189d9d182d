#!/usr/bin/env bash
# Rebuild the embedded default world model: a LoRA CPT adapter on SmolLM2-135M trained on the
# train split of the recorded local trajectories. About 80 s on one GPU; on 2 CPU cores
# expect about an hour (roughly 15 s a step, 252 steps). Result: runs/smolft/adapter; copy
# adapter_config.json and adapter_model.safetensors into src/agentworld/models/adapters/smol/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p runs/smolft
agentworld data split benchmarks/local/trajectories --split train --exclude-bench benchmarks/local -o runs/smolft/train_trajs.jsonl
agentworld data build cpt --config configs/data/cpt_smol_default.yaml
agentworld train cpt --config configs/train/cpt_smol_default.yaml
