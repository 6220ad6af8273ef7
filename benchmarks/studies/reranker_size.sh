#!/usr/bin/env bash
# Is a larger cross-encoder the lever the contrast goals need? The reranker's recipe (train-cross-encoder's
# defaults, the tables' MEQ file) at one small equal budget from two sentence-transformers "all-" bases (same training data),
# all-MiniLM-L6-v2 (22M parameters, the README's reranker) and all-mpnet-base-v2 (109M), then both read against
# the two golds of every contrast pair with no first stage (contrast_pairwise.py), beside the 2,560-step MiniLM
# reranker and the bases as bi-encoders. 25.9 s a step for mpnet-base on 2 cores, 5.2x MiniLM-L6's 5.0 s (13.1 vs 4.9 GB).
#   bash benchmarks/studies/reranker_size.sh    (STEPS=100: 43 + 8 min of training, ~12 min of pairwise reading, ~51 min of
#   reranking the sample; ~1 min to fetch the base; MORE=60: 40 min more of mpnet and ~25 min of reading, timed on a
#   slower day, 37-40 s a step)
# Needs, besides the data of the README's trainer steps 1, 2 and 5: runs/cross_encoder_2560 (cross_encoder_rerank.sh),
# runs/cpu_dcsr (train_cpu.sh) and the H100 rankings in runs/gpu/ for the sample rows (gpu_train.py; not on a fresh clone)
# all-mpnet-base-v2 without the hub: benchmarks/lib/fetch_mpnet.sh.
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
STEPS=${STEPS:-$(.venv/bin/python -m haystack_dcsr.training settings studies.yaml reranker_size.steps)}   # budgets: trainer/configs/studies.yaml
MORE=${MORE:-$(.venv/bin/python -m haystack_dcsr.training settings studies.yaml reranker_size.more_steps)}
BASE=runs/bases/all-mpnet-base-v2
bash benchmarks/lib/fetch_mpnet.sh
# the recipe as the README's first reranker stage (cross_encoder_stages.sh), only the base and the budget differ
source "$(dirname "$0")/../lib/cross_encoder_stages.sh"
train_stage "runs/cross_encoder_minilm_$STEPS" "$STEPS" --set model=all-MiniLM-L6-v2
train_stage "runs/cross_encoder_mpnet_$STEPS" "$STEPS" --set model="$BASE"
# mpnet trained further as MiniLM was: one more stage of MORE steps (seed 1), then both read against the two golds
MPNET_MORE="runs/cross_encoder_mpnet_$((STEPS + MORE))"
continue_from "runs/cross_encoder_mpnet_$STEPS" "$MPNET_MORE" 1 "$MORE"
.venv/bin/python benchmarks/studies/contrast_pairwise.py "runs/cross_encoder_mpnet_$STEPS/last" "$MPNET_MORE/last" \
  --out benchmarks/results/contrast_pairwise_mpnet.json
.venv/bin/python benchmarks/studies/contrast_pairwise.py "runs/cross_encoder_minilm_$STEPS/last" "runs/cross_encoder_mpnet_$STEPS/last" \
  runs/cross_encoder_2560/last --out benchmarks/results/contrast_pairwise_size.json
.venv/bin/python benchmarks/studies/contrast_pairwise.py dcsr:runs/cpu_dcsr/last dcsr:all-MiniLM-L6-v2 "dcsr:$BASE" \
  --out benchmarks/results/contrast_pairwise_bases.json
# both blended over the best-top-1 hybrid's top 5 on the default 1,000-question sample and the whole contrast set (the
# rows beside cross_encoder_rerank.sh's; ~46 min of mpnet scoring at ~3 pairs/s, 5 min of MiniLM)
DENSE="DCSR, MEQ-centred batches, QQ off, 1 epoch (H100)"
HYBRID="Hybrid DCSR (MEQ-centred, QQ off, 1 epoch, H100) + BM25"
.venv/bin/python benchmarks/squad_open.py --questions 1000 --contrast-set data/meq_dev \
  --out benchmarks/results/squad_open_rerank.json --system BM25=bm25 \
  --system "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz" --system "$HYBRID=hybrid:$DENSE+BM25" \
  --system "Cross-encoder (all-mpnet-base-v2, $STEPS CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+runs/cross_encoder_mpnet_$STEPS/last@5" \
  --system "Cross-encoder (all-MiniLM-L6-v2, $STEPS CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+runs/cross_encoder_minilm_$STEPS/last@5"
