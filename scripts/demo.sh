#!/usr/bin/env bash
# The main job end to end: run the embedded default world model (smol) and the retrieval
# baseline on the local benchmark, score them offline with the rule scorer, write the
# report. Outputs go to runs/demo/ (report: runs/demo/report/report.html); a rerun
# resumes and only computes what is missing.
#
#   DEMO_LIMIT=2            samples per domain (long mcp/search prompts make the embedded
#                           model take minutes per batch on 2 CPU cores)
#   DEMO_MAX_TOKENS=128     completion limit for the embedded model
#   AGENTWORLD_JUDGE=...    also judge with an LLM, e.g. openai:qwen3-32b@http://localhost:8000/v1
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=runs/demo
LIMIT="${DEMO_LIMIT:-2}"
MAX_TOKENS="${DEMO_MAX_TOKENS:-128}"
mkdir -p "$OUT"

# 1. The benchmark: the recorded local one when present, else the shipped examples.
if compgen -G "benchmarks/local/*_test.jsonl" >/dev/null; then
  BENCH=benchmarks/local
else
  echo "[demo] benchmarks/local has no samples yet: using examples/trajectories.jsonl"
  agentworld data convert examples/trajectories.jsonl --out "$OUT/bench" --policy spread
  BENCH="$OUT/bench"
fi
agentworld data stats "$BENCH"

# 2. The retrieval baseline's index: recorded trajectories outside the test split, never
#    the evaluated ones (indexing those would answer with the ground truth).
rm -f "$OUT/retrieval_index.jsonl"
if [ -d benchmarks/local/trajectories ]; then
  agentworld data split benchmarks/local/trajectories --split train --exclude-bench "$BENCH" \
    -o "$OUT/retrieval_index.jsonl"
fi

# 3. Predictions (resumable: a rerun skips what is done).
agentworld bench infer "$BENCH" -o "$OUT/smol.jsonl" -b smol --limit "$LIMIT" --max-tokens "$MAX_TOKENS" -c 4
PREDS=("$OUT/smol.jsonl")
if [ -s "$OUT/retrieval_index.jsonl" ]; then
  # Its answers belong to the index just rebuilt, and take seconds: redone each run, so a
  # rerun after new recordings never mixes answers from an older index.
  rm -f "$OUT/retrieval.jsonl" "$OUT/retrieval.judged.jsonl"
  agentworld bench infer "$BENCH" -o "$OUT/retrieval.jsonl" -b retrieval --opt "source=$OUT/retrieval_index.jsonl" --limit "$LIMIT"
  PREDS+=("$OUT/retrieval.jsonl")
else
  echo "[demo] no train-split trajectories to index: skipping the retrieval baseline"
fi

# 4. Verdicts: the offline rule scorer, plus an LLM judge when one is configured.
JUDGED=()
for p in "${PREDS[@]}"; do
  j="${p%.jsonl}.judged.jsonl"
  agentworld bench judge "$BENCH" -p "$p" -o "$j" -j rules ${AGENTWORLD_JUDGE:+-j "$AGENTWORLD_JUDGE"}
  JUDGED+=("$j")
done

# 5. Scores and the report.
agentworld bench score "${JUDGED[@]}" -o "$OUT/report"
