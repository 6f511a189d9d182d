#!/usr/bin/env bash
# Rebuild the embedded default world model (SmolLM2-135M) with the full recipe, on the train
# split of the recorded local trajectories:
#   CPT (turn-level loss masking, LoRA)
#   -> SFT on a rejection-sampled set (k rollouts per query from the CPT model, judged by the
#      offline rule scorer, the best accepted one kept; targets carry the real observation)
#   -> GSPO with the hybrid reward (0.9 * rubric + 0.1 * rule verifiers).
# Each LoRA stage trains on the previous ones merged and records the chain, so the last
# folder alone is the model: `agentworld predict --backend hf:runs/smolft/train/gspo ...`.
#
# Uses the GPU when torch sees one (CPT: 3 epochs of 8192-token rows); on a CPU, CPT runs
# 1 epoch of 2048-token rows and trainers use gradient checkpointing (memory). Nothing here
# guesses speed: every trainer times its first steps and prints seconds a step and an ETA,
# and the summary at the end lists the measured seconds a step of each stage.
#
# Resumable: a finished stage leaves $RUN/.done/<stage> and is skipped on a rerun; an
# interrupted trainer resumes from its last checkpoint, a data build from its log.
#
# Environment:
#   RUN=DIR          output root (default runs/smolft; runs/smolft-smoke with SMOKE=1)
#   SMOKE=1          prove the pipeline end to end: a few steps and queries per stage
#   MAX_STEPS=N      stop every trainer after N optimizer steps
#   MAX_QUERIES=N    SFT rejection-sampling queries (default: the config's 240)
#   SFT_BACKEND=SPEC rollout model for the SFT set (default hf:$RUN/train/cpt; any backend
#                    spec, e.g. openai:Qwen/Qwen3-8B@http://localhost:8000/v1 for a teacher)
#   CPT_EPOCHS=N, CPT_LENGTH=N  CPT epochs and packed row length (defaults per device above)
#   CPT_ARGS, SFT_DATA_ARGS, SFT_ARGS, GSPO_ARGS  extra KEY=VALUE overrides per stage
# The result is NOT copied into the package: to ship it, copy the adapter files (and chain/,
# agentworld_chain.json) of $RUN/train/gspo into src/agentworld/models/adapters/smol/.
set -euo pipefail
cd "$(dirname "$0")/.."

AW=${AGENTWORLD:-agentworld}
PY=${PYTHON:-python3}
if [[ "${SMOKE:-0}" == 1 ]]; then
  RUN=${RUN:-runs/smolft-smoke}
  MAX_STEPS=${MAX_STEPS:-2}
  MAX_QUERIES=${MAX_QUERIES:-4}
  SFT_DATA_ARGS=${SFT_DATA_ARGS:-"max_tokens=192 k=2"}
  GSPO_ARGS=${GSPO_ARGS:-"max_completion_length=96"}
fi
RUN=${RUN:-runs/smolft}
SFT_BACKEND=${SFT_BACKEND:-hf:$RUN/train/cpt}
MEMORY=()
if [[ "$($PY -c 'import torch; print(int(torch.cuda.is_available()))')" == 1 ]]; then
  DEVICE=cuda; CPT_EPOCHS=${CPT_EPOCHS:-3}; CPT_LENGTH=${CPT_LENGTH:-8192}
else
  # fp32 activations of an 8192-token row (attention scores of 30 layers) took over 14 GB
  # and were OOM-killed on a 24 GB machine: on a CPU, rows of 2048 tokens, and every trainer
  # recomputes activations in the backward pass instead of keeping them.
  DEVICE=cpu; CPT_EPOCHS=${CPT_EPOCHS:-1}; CPT_LENGTH=${CPT_LENGTH:-2048}
  MEMORY=(gradient_checkpointing=true gradient_checkpointing_kwargs.use_reentrant=false)
  if [[ "$SFT_BACKEND" == hf:* || "$SFT_BACKEND" == smol* ]]; then
    SFT_DATA_ARGS="backend_options.max_batch=2 concurrency=2 ${SFT_DATA_ARGS:-}"
  fi
fi
STEPS=()
if [[ -n "${MAX_STEPS:-}" ]]; then STEPS=(--max-steps "$MAX_STEPS"); fi
read -r -a CPT_EXTRA <<< "${CPT_ARGS:-}"
read -r -a SFT_DATA_EXTRA <<< "${SFT_DATA_ARGS:-}"
read -r -a SFT_EXTRA <<< "${SFT_ARGS:-}"
read -r -a GSPO_EXTRA <<< "${GSPO_ARGS:-}"
TRAIN="$RUN/train_trajs.jsonl"
mkdir -p "$RUN/.done"
echo "== recipe in $RUN on $DEVICE (CPT epochs $CPT_EPOCHS${MAX_STEPS:+, at most $MAX_STEPS steps a stage})"

# stage NAME CMD...: run CMD unless NAME finished before; record its wall time.
stage() {
  local name=$1; shift
  if [[ -e "$RUN/.done/$name" ]]; then
    echo "== $name: done before ($(cat "$RUN/.done/$name") s), skipped"
    return
  fi
  echo "== $name"
  local start=$SECONDS
  "$@"
  echo $((SECONDS - start)) > "$RUN/.done/$name"
}

stage split "$AW" data split benchmarks/local/trajectories --split train --exclude-bench benchmarks/local -o "$TRAIN"
stage cpt-data "$AW" data build cpt --config configs/data/cpt_smol_default.yaml --input "$TRAIN" --out "$RUN/data/cpt" \
  "max_length=$CPT_LENGTH"
stage cpt "$AW" train cpt --config configs/train/cpt_smol_default.yaml --data "$RUN/data/cpt" --model smol \
  --out "$RUN/train/cpt" "${STEPS[@]}" "num_train_epochs=$CPT_EPOCHS" "${MEMORY[@]}" "${CPT_EXTRA[@]}"
stage sft-data "$AW" data build sft --config configs/data/sft_smol_default.yaml --input "$TRAIN" --out "$RUN/data/sft" \
  "backend=$SFT_BACKEND" ${MAX_QUERIES:+"max_queries=$MAX_QUERIES"} "${SFT_DATA_EXTRA[@]}"

# A small model may have no accepted rollout at all: then there is nothing right to learn
# from, and GSPO starts from the CPT stage instead of training on wrong targets.
kept=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['report']['rows'])" "$RUN/data/sft/report.json")
if [[ "$kept" -gt 0 ]]; then
  stage sft "$AW" train sft --config configs/train/sft_smol_default.yaml --data "$RUN/data/sft" \
    --model "$RUN/train/cpt" --out "$RUN/train/sft" "${STEPS[@]}" "${MEMORY[@]}" "${SFT_EXTRA[@]}"
  POLICY="$RUN/train/sft"
else
  echo "== sft: no rollout passed acceptance (see $RUN/data/sft/report.json); GSPO starts from the CPT stage"
  POLICY="$RUN/train/cpt"
fi
stage rl-data "$AW" data build rl --config configs/data/rl_smol_default.yaml --input "$TRAIN" --out "$RUN/data/rl"
stage gspo "$AW" train gspo --config configs/train/gspo_smol_default.yaml --data "$RUN/data/rl" --model "$POLICY" \
  --out "$RUN/train/gspo" "${STEPS[@]}" "${MEMORY[@]}" "${GSPO_EXTRA[@]}"

echo "== measured"
for name in split cpt-data cpt sft-data sft rl-data gspo; do
  [[ -e "$RUN/.done/$name" ]] || continue
  timing="$RUN/train/$name/timing.json"
  if [[ -e "$timing" ]]; then
    $PY -c "import json,sys; t=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]:9s}{open(sys.argv[3]).read().strip():>6s} s  \"
        f\"{t['steps']} steps, {t['seconds_per_step']} s a step (first {t['first_step_seconds']} s)\")" \
      "$timing" "$name" "$RUN/.done/$name"
  else
    printf '%-9s%6s s\n' "$name" "$(cat "$RUN/.done/$name")"
  fi
done
echo "final model: $RUN/train/gspo (load with hf:$RUN/train/gspo)"
