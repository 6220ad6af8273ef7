#!/usr/bin/env bash
# Train DCSR towers on every GPU of this machine: SQuAD converted and BM25-mined once, then one training process per
# GPU (torchrun; the trainer shards batches and averages gradients itself).
#
#   SQUAD=path/to/squad bash trainer/train_gpus.sh [recipe] [--set key=value ...]
#
#   recipe    a shipped recipe name (squad_dcsr.yaml, the default; see trainer/configs/) or a YAML file
#   SQUAD     the folder holding SQuAD v1.1's train-v1.1.json(.gz)
#   DATA      where the converted and mined records go (default: data/)
#   GPUS      processes to start (default: every CUDA device torch sees)
#   RUN_DIR   the run's folder (default: runs/<recipe name>)
# Needs CUDA torch and `pip install haystack-dcsr` (no Haystack: the trainer runs on the core alone).
set -euo pipefail

RECIPE="${1:-squad_dcsr.yaml}"
[ $# -gt 0 ] && shift
DATA="${DATA:-data}"
RUN_DIR="${RUN_DIR:-runs/$(basename "${RECIPE%.yaml}")}"
GPUS="${GPUS:-$(python -c 'import torch; print(torch.cuda.device_count())')}"
if [ "$GPUS" -lt 1 ]; then
    echo "no CUDA device found: install CUDA torch, or set GPUS (dcsr-train train runs on a CPU too)" >&2
    exit 2
fi

mkdir -p "$DATA"
if [ ! -s "$DATA/train_bm25.jsonl" ]; then
    : "${SQUAD:?set SQUAD to the folder holding train-v1.1.json.gz (or put data/train_bm25.jsonl in place)}"
    train="$SQUAD/train-v1.1.json.gz"
    [ -f "$train" ] || train="$SQUAD/train-v1.1.json"
    dcsr-train convert-squad "$train" "$DATA/train.jsonl" --corpus "$DATA/corpus.jsonl"
    dcsr-train mine-bm25 "$DATA/train.jsonl" "$DATA/corpus.jsonl" "$DATA/train_bm25.jsonl"
fi

exec torchrun --standalone --nproc_per_node "$GPUS" -m haystack_dcsr.training train --config "$RECIPE" \
    --set "train_file=$DATA/train_bm25.jsonl" --set "output_dir=$RUN_DIR" "$@"
