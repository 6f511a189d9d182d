#!/usr/bin/env bash
# The main job end to end on what ships in the repository: trajectories -> AgentWorldBench
# samples -> dataset statistics. Outputs go to runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=runs/demo
mkdir -p "$OUT"
agentworld data convert examples/trajectories.jsonl --out "$OUT/bench" --policy spread
agentworld data stats "$OUT/bench"
