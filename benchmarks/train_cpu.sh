#!/usr/bin/env bash
# The CPU fine-tuning runs behind the README's trainer results: DCSR and DPR from all-MiniLM-L6-v2
# with the same budget (200 steps of 32 questions, lr 3e-5), mean pooling, cosine / 0.05 (the base
# model's own geometry). Needs the data of the README's "Trainer" section under data/.
#   bash benchmarks/train_cpu.sh [dcsr|dpr]...      (default: both, ~40 min each on 2 cores)
set -euo pipefail
COMMON=(--no-resume --set pooling=mean --set max_steps=200 --set warmup_steps=20 --set lr=3.0e-5
        --set batch_size=32 --set log_every=10 --set checkpoint_every=100 --set dev_limit=1000)
for mode in "${@:-dcsr dpr}"; do
  for m in $mode; do
    .venv/bin/python -m trainer train --config "trainer/configs/squad_${m}.yaml" "${COMMON[@]}" \
      --set output_dir="runs/cpu_${m}"
  done
done
