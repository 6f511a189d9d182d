#!/usr/bin/env bash
# The whole pipeline on a CPU in a few minutes, on a tiny random model: record real
# terminal episodes in the sandbox, build a CPT set, train 2 steps, evaluate the result
# on the recorded held-out turns, then serve it as a simulator and step it.
#
#   bash examples/cpu_recipe.sh [WORKDIR]      (default: runs/recipe; needs scripts/setup.sh)
#
# Every step is a real command a user runs; tests/test_recipe.py runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
W="${1:-runs/recipe}"
PORT="${RECIPE_PORT:-8765}"
mkdir -p "$W"
step() { printf '\n== %s\n' "$*"; }

step "1. record 6 training and 3 held-out terminal episodes in the sandbox"
agentworld collect terminal -o "$W/trajs.jsonl" --episodes 6 --test-episodes 3 --workers 2 --bench-dir "$W/bench" --no-build

step "2. keep the training side of the split"
agentworld data split "$W/trajs.jsonl" --split train --exclude-bench "$W/bench" -o "$W/train.jsonl"

step "3. a tiny random checkpoint (outputs are noise; every code path is real)"
python3 -m agentworld.models.tiny "$W/tiny"

step "4. the CPT dataset: filters, turn-level loss masking, packing"
agentworld data build cpt -c configs/data/cpt.yaml -i "$W/train.jsonl" -o "$W/cpt" tokenizer="$W/tiny" max_length=2048 workers=1

step "5. train 2 steps"
agentworld train cpt -c configs/train/cpt.yaml -d "$W/cpt" -m "$W/tiny" -o "$W/ckpt" --max-steps 2

step "6. predict, judge with the offline rule scorer, score"
agentworld bench infer "$W/bench" -o "$W/preds.jsonl" -b "hf:$W/ckpt" --max-tokens 32 -c 4
agentworld bench judge "$W/bench" -p "$W/preds.jsonl" -j rules
agentworld bench score "$W/preds.judged.jsonl" -o "$W/report"

step "7. serve the trained model as a simulated terminal and step it over HTTP"
agentworld sim serve -b "hf:$W/ckpt" -t "$W/train.jsonl" --max-tokens 32 --port "$PORT" > "$W/sim.log" 2>&1 &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SIM 2>/dev/null || { cat "$W/sim.log"; exit 1; }
  sleep 1
done
SESSION=$(curl -sf -X POST "http://127.0.0.1:$PORT/reset" -H 'content-type: application/json' -d '{}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["session_id"])')
curl -sf -X POST "http://127.0.0.1:$PORT/step" -H 'content-type: application/json' \
  -d "{\"session_id\": \"$SESSION\", \"action\": \"[{\\\"keystrokes\\\": \\\"ls\\\\n\\\", \\\"duration\\\": 1}]\"}" \
  | tee "$W/sim_step.json"
echo
step "done: report in $W/report/report.html"
