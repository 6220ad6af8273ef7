#!/usr/bin/env bash
# The cross-encoder rows of the README ("A cross-encoder over the top passages"): train a reranker on CPU
# (each stage skipped when its last/ exists), then rerank the top 20 of the best-top-1 hybrid (the H100
# MEQ-centred QQ-off epoch + BM25; runs/gpu/ holds its rankings) and of BM25 alone, each by the cross-encoder
# alone and blended with the base's own scores (rerank-blend), on the default
# 1,000-question sample of SQuAD dev and on the whole 352-pair contrast set. The cross-encoder's scores are
# kept in the workdir, so a second base costs only the pairs the first did not score.
#   bash benchmarks/cross_encoder_rerank.sh     (~34 + 67 + 59 + 88 + 82 min of training and ~90 min of scoring on 2 cores)
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
STEPS=${STEPS:-$(.venv/bin/python -m haystack_dcsr.training settings studies.yaml reranker.first_steps)}   # budgets: trainer/configs/studies.yaml
stage() { .venv/bin/python -m haystack_dcsr.training settings studies.yaml "reranker.continuations.$1.$2"; }
source "$(dirname "$0")/lib/cross_encoder_stages.sh"
CE=runs/cross_encoder
train_stage "$CE" "$STEPS"
# longer budgets continue the previous model (cross_encoder_stages.sh): 960 steps (+640, seed 1, ~67 min here),
# 1,600 steps (+640, seed 2, ~59 min) and 2,560 steps (+960, seed 3, ~88 min)
CE2=runs/cross_encoder_960
CE3=runs/cross_encoder_1600
CE4=runs/cross_encoder_2560
continue_from "$CE" "$CE2" "$(stage 0 seed)" "$(stage 0 steps)"
continue_from "$CE2" "$CE3" "$(stage 1 seed)" "$(stage 1 steps)"
continue_from "$CE3" "$CE4" "$(stage 2 seed)" "$(stage 2 steps)"
# the same last stage on 4.6x the contrast pairs: near-MEQs mined with the cosine at 0.6 and up to 4 word edits
# (12,979 pairs vs 2,793; ~2 min to mine) -- is the reranker short of data rather than of steps?
LOOSE=data/squad_train_meq_loose.jsonl
[ -f "$LOOSE" ] || .venv/bin/python -m haystack_dcsr.training build-meq-augmentation data/squad_train_bm25.jsonl \
  "$LOOSE" --threshold 0.6 --max-edits 4
CE4L=runs/cross_encoder_2560_loose
continue_from "$CE3" "$CE4L" "$(stage 2 seed)" "$(stage 2 steps)" "$LOOSE"
# the stages' ends (960, 1,600 and 2,560 steps) averaged: SWA over a cyclic schedule, no training (seconds)
SOUP=runs/cross_encoder_soup
[ -d "$SOUP/last" ] || .venv/bin/python -m haystack_dcsr.training average-checkpoints "$CE2/last" "$CE3/last" "$CE4/last" \
  --out "$SOUP/last"
DENSE="DCSR, MEQ-centred batches, QQ off, 1 epoch (H100)"
HYBRID="Hybrid DCSR (MEQ-centred, QQ off, 1 epoch, H100) + BM25"
systems=(
  "BM25=bm25"
  "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz"
  "$HYBRID=hybrid:$DENSE+BM25"
  "Cross-encoder ($STEPS CPU steps) over BM25, top 20=rerank:BM25+$CE/last@20"
  "Cross-encoder ($STEPS CPU steps) blended with BM25, top 20=rerank-blend:BM25+$CE/last@20"
  "$HYBRID, HasAns as is=hybrid-hasans:$DENSE+BM25"
)
with_budget() {  # LABEL DIR: the model alone over the hybrid's top 20, and blended over its top 20, 10 and 5
  systems+=("Cross-encoder ($1) over $HYBRID, top 20=rerank:$HYBRID+$2/last@20")
  for n in 20 10 5; do
    systems+=("Cross-encoder ($1) blended with $HYBRID, top $n=rerank-blend:$HYBRID+$2/last@$n")
  done
}
with_budget "$STEPS CPU steps" "$CE"
with_budget "960 CPU steps" "$CE2"
with_budget "1600 CPU steps" "$CE3"
with_budget "2560 CPU steps" "$CE4"
with_budget "960+1600+2560 averaged" "$SOUP"
with_budget "2560 CPU steps, last 960 on near-MEQs" "$CE4L"
over_hasans() {  # LABEL DIR: blended over the HasAns-as-is hybrid's top 20 (the base with the better order between the golds)
  systems+=("Cross-encoder ($1) blended with $HYBRID, HasAns as is, top 20=rerank-blend:$HYBRID, HasAns as is+$2/last@20")
}
over_hasans "960 CPU steps" "$CE2"
over_hasans "1600 CPU steps" "$CE3"
over_hasans "2560 CPU steps" "$CE4"
over_hasans "2560 CPU steps, last 960 on near-MEQs" "$CE4L"
args=()
for s in "${systems[@]}"; do args+=(--system "$s"); done
.venv/bin/python benchmarks/squad_open.py --questions 1000 --contrast-set data/meq_dev \
  --out benchmarks/results/squad_open_rerank.json "${args[@]}"
# the all-dev rows (top 5: ~30-40 min of scoring a model here; the top 20 of 10,570 questions would be ~2 hours) are
# benchmarks/squad_open_full.sh's; with only these runs on disk, add one to the report directly:
#   .venv/bin/python benchmarks/squad_open.py --questions 0 --contrast-set data/meq_dev --out benchmarks/results/squad_open_dev.json \
#     --system BM25=bm25 --system "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz" --system "$HYBRID=hybrid:$DENSE+BM25" \
#     --system "Cross-encoder (2560 CPU steps) blended with $HYBRID, top 5=rerank-blend:$HYBRID+$CE4/last@5"
