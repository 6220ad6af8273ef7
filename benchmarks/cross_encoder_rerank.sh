#!/usr/bin/env bash
# The cross-encoder rows of the README ("A cross-encoder over the top passages"): train a reranker on CPU
# (skipped when runs/cross_encoder/last exists), then rerank the top 20 of the best-top-1 hybrid (the H100
# MEQ-centred QQ-off epoch + BM25; runs/gpu/ holds its rankings) and of BM25 alone, each by the cross-encoder
# alone and blended with the base's own scores (rerank-blend), on the default
# 1,000-question sample of SQuAD dev and on the whole 352-pair contrast set. The cross-encoder's scores are
# kept in the workdir, so a second base costs only the pairs the first did not score.
#   bash benchmarks/cross_encoder_rerank.sh     (~100 min of training and ~65 min of scoring on 2 cores)
set -euo pipefail
STEPS=${STEPS:-320}
CE=runs/cross_encoder
[ -d "$CE/last" ] || .venv/bin/python -m haystack_dcsr.training train-cross-encoder \
  --set max_steps="$STEPS" --set output_dir="$CE" --device cpu
# the 960-step model: the 320-step one trained 640 steps more on fresh batches (seed 1; its head, no longer new, at
# the encoder's rate), ~67 min here
CE2=runs/cross_encoder_960
[ -d "$CE2/last" ] || .venv/bin/python -m haystack_dcsr.training train-cross-encoder --set model="$CE/last" \
  --set seed=1 --set max_steps=640 --set head_lr=5e-5 --set output_dir="$CE2" --device cpu
DENSE="DCSR, MEQ-centred batches, QQ off, 1 epoch (H100)"
HYBRID="Hybrid DCSR (MEQ-centred, QQ off, 1 epoch, H100) + BM25"
.venv/bin/python benchmarks/squad_open.py --questions 1000 --contrast-set data/meq_dev \
  --out benchmarks/results/squad_open_rerank.json \
  --system BM25=bm25 \
  --system "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz" \
  --system "$HYBRID=hybrid:$DENSE+BM25" \
  --system "Cross-encoder ($STEPS CPU steps) over $HYBRID, top 20=rerank:$HYBRID+$CE/last@20" \
  --system "Cross-encoder ($STEPS CPU steps) over BM25, top 20=rerank:BM25+$CE/last@20" \
  --system "Cross-encoder ($STEPS CPU steps) blended with $HYBRID, top 20=rerank-blend:$HYBRID+$CE/last@20" \
  --system "Cross-encoder ($STEPS CPU steps) blended with BM25, top 20=rerank-blend:BM25+$CE/last@20" \
  --system "Cross-encoder ($STEPS CPU steps) blended with $HYBRID, top 10=rerank-blend:$HYBRID+$CE/last@10" \
  --system "Cross-encoder ($STEPS CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+$CE/last@5" \
  --system "Cross-encoder (960 CPU steps) over $HYBRID, top 20=rerank:$HYBRID+$CE2/last@20" \
  --system "Cross-encoder (960 CPU steps) blended with $HYBRID, top 20=rerank-blend:$HYBRID+$CE2/last@20" \
  --system "Cross-encoder (960 CPU steps) blended with $HYBRID, top 10=rerank-blend:$HYBRID+$CE2/last@10" \
  --system "Cross-encoder (960 CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+$CE2/last@5" \
  --system "$HYBRID, HasAns as is=hybrid-hasans:$DENSE+BM25" \
  --system "Cross-encoder (960 CPU steps) blended with $HYBRID, HasAns as is, top 20=rerank-blend:$HYBRID, HasAns as is+$CE2/last@20"
# the all-dev row (top 5: ~30 min of scoring here; the top 20 of 10,570 questions would be ~2 hours):
#   .venv/bin/python benchmarks/squad_open.py --questions 0 --contrast-set data/meq_dev --out benchmarks/results/squad_open_dev.json \
#     --system BM25=bm25 --system "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz" --system "$HYBRID=hybrid:$DENSE+BM25" \
#     --system "Cross-encoder ($STEPS CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+$CE/last@5"
