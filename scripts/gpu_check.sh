#!/usr/bin/env bash
# Every CUDA path once on a tiny model made on the fly (CPT, SFT, GSPO, hf inference,
# accelerate launch); on a machine without a GPU the same steps run on the CPU. Under 8
# minutes on one GPU. Options: --steps N, --out FILE.json, --require-cuda (see the .py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/gpu_check.py "$@"
