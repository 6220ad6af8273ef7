#!/usr/bin/env bash
# The README's final table: every system over all 20,963 SQuAD paragraphs and all 10,570 dev
# questions, plus the SQuAD-dev MEQ contrast set (data/meq_dev). Needs the CPU runs of
# studies/train_cpu.sh (a study in git history: docs/research/studies.md) under runs/. Resumable: finished systems are cached in benchmarks/cache,
# and systems already in the report for the same questions are kept (so systems can be added later).
#   bash benchmarks/squad_open_full.sh     (~1.5 h on 2 cores, mostly indexing: ~10 min per dense system)
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
systems=(
  "BM25=bm25"
  "DCSR-ft=dcsr:runs/cpu_dcsr/last"
  "DCSR+QQ (MEQ x5)=dcsr:runs/cpu_dcsr_qq_os/last"
  "Hybrid DCSR-ft + BM25, HasAns as is=hybrid-hasans:DCSR-ft+BM25"
  "DPR-ft=dpr:runs/cpu_dpr/last"
  "DCSR+QQ=dcsr:runs/cpu_dcsr_qq/last"
  "EmbeddingRetriever zero-shot=er"
  "DCSR zero-shot=dcsr-zero"
)
# what a Haystack user would pick instead: all-mpnet-base-v2 through EmbeddingRetriever, beside DCSR zero-shot on the
# same base (~50 min of mpnet encoding per system on 2 cores; benchmarks/lib/fetch_mpnet.sh fetches it)
if [ -f runs/bases/all-mpnet-base-v2/model.safetensors ]; then
  systems+=("EmbeddingRetriever zero-shot, mpnet=er:runs/bases/all-mpnet-base-v2"
            "DCSR zero-shot, mpnet=dcsr:runs/bases/all-mpnet-base-v2")
fi
with_hybrids() {  # RUN NAME LABEL: a trained DCSR run, then its BM25 hybrids (min-max, and HasAns kept as a probability)
  if [ -d "runs/$1/last" ]; then
    systems+=("$2=dcsr:runs/$1/last" "Hybrid $3 + BM25=hybrid:$2+BM25" "Hybrid $3 + BM25, HasAns as is=hybrid-hasans:$2+BM25")
  fi
}
# the QQ-off controls (studies/train_cpu.sh dcsr_meq / dcsr_meq_os), when trained
[ -d runs/cpu_dcsr_meq/last ] && systems+=("DCSR, MEQ data, QQ off=dcsr:runs/cpu_dcsr_meq/last")
[ -d runs/cpu_dcsr_meq_os/last ] && systems+=("DCSR, MEQ x5, QQ off=dcsr:runs/cpu_dcsr_meq_os/last")
# QQ at weight 5 (studies/train_cpu.sh dcsr_qq_w5), when trained
[ -d runs/cpu_dcsr_qq_w5/last ] && systems+=("DCSR+QQ, qq_weight 5=dcsr:runs/cpu_dcsr_qq_w5/last")
# MEQ-centred batches (studies/train_cpu.sh dcsr_qq_mb / dcsr_meq_mb), when trained
with_hybrids cpu_dcsr_qq_mb "DCSR+QQ, MEQ-centred batches" "DCSR+QQ (MEQ-centred)"
with_hybrids cpu_dcsr_meq_mb "DCSR, MEQ-centred batches, QQ off" "DCSR (MEQ-centred, QQ off)"
[ -d runs/cpu_dcsr_qq_mb1/last ] && systems+=("DCSR+QQ, MEQ-centred batches, 1 group=dcsr:runs/cpu_dcsr_qq_mb1/last")
[ -d runs/cpu_dcsr_meq_mb1/last ] && systems+=("DCSR, MEQ-centred batches, 1 group, QQ off=dcsr:runs/cpu_dcsr_meq_mb1/last")
# the <sent> marker's recipe and the paper's negative-sampling ablation (train_cpu.sh dcsr_marker dcsr_bm25x2 dcsr_bm25x1)
[ -d runs/cpu_dcsr_marker/last ] && systems+=("DCSR-ft, <sent> marker (its recipe)=dcsr:runs/cpu_dcsr_marker/last")
[ -d runs/cpu_dcsr_bm25x2/last ] && systems+=("DCSR-ft, +2 BM25 random=dcsr:runs/cpu_dcsr_bm25x2/last")
[ -d runs/cpu_dcsr_bm25x1/last ] && systems+=("DCSR-ft, +1 BM25 random=dcsr:runs/cpu_dcsr_bm25x1/last")
# the DCSR-hard round (train_cpu.sh dcsr_hard: a first-round run mines, a second model trains from the base)
with_hybrids cpu_dcsr_hard_by_dcsr "DCSR-hard (mined by DCSR-ft)" "DCSR-hard (mined by DCSR-ft)"
# DCSR-hard's negatives with MEQ-centred QQ and its QQ-off control (train_cpu.sh dcsr_hard_qq_mb dcsr_hard_meq_mb)
with_hybrids cpu_dcsr_hard_by_dcsr_qq_mb "DCSR-hard + QQ, MEQ-centred batches" "DCSR-hard + QQ (MEQ-centred)"
[ -d runs/cpu_dcsr_hard_by_dcsr_meq_mb/last ] && systems+=(
  "DCSR-hard, MEQ-centred batches, QQ off=dcsr:runs/cpu_dcsr_hard_by_dcsr_meq_mb/last")
# DCSR-hard at 3x and 6x the budget (STEPS=600 / STEPS=1200 studies/train_cpu.sh dcsr_hard), and their hybrids (both fusions)
with_hybrids cpu_dcsr_hard_by_dcsr_600 "DCSR-hard (mined by DCSR-ft), 600 steps" "DCSR-hard (600 steps)"
with_hybrids cpu_dcsr_hard_by_dcsr_1200 "DCSR-hard (mined by DCSR-ft), 1200 steps" "DCSR-hard (1200 steps)"
# query-side tuning of that model (train_cpu.sh query_side / query_side_passage / query_side_meq): its passage tower frozen
with_hybrids cpu_qs_qq_mb "DCSR-hard + query-side tuning, QQ (1 epoch)" "DCSR-hard + query-side QQ"
with_hybrids cpu_qs_passage_qq_mb "DCSR-hard + query-side tuning, passage target, QQ (1 epoch)" "DCSR-hard + query-side passage QQ"
with_hybrids cpu_qs_meq_mb "DCSR-hard + query-side tuning, QQ off (1 epoch)" "DCSR-hard + query-side, QQ off"
[ -d runs/cpu_dcsr_hard_by_dcsr_bm25x2/last ] && systems+=(
  "DCSR-hard (mined by +2 BM25 random)=dcsr:runs/cpu_dcsr_hard_by_dcsr_bm25x2/last")
# DCSR+QQ at 3x the budget (STEPS=600 studies/train_cpu.sh dcsr_qq), and its hybrids (both fusions)
with_hybrids cpu_dcsr_qq_600 "DCSR+QQ, 600 steps" "DCSR+QQ (600 steps)"
# its QQ-off control at 600 steps (STEPS=600 studies/train_cpu.sh dcsr_meq)
with_hybrids cpu_dcsr_meq_600 "DCSR, MEQ data, QQ off, 600 steps" "DCSR (QQ off, 600 steps)"
# its <sent>-marker twin: the same file, seed and budget, the marker's recipe (STEPS=600 train_cpu.sh dcsr_meq_marker)
[ -d runs/cpu_dcsr_meq_marker_600/last ] && systems+=(
  "DCSR, MEQ data, QQ off, 600 steps, <sent> marker (its recipe)=dcsr:runs/cpu_dcsr_meq_marker_600/last")
# MEQ-centred batches at 3x the budget, QQ on and its QQ-off control (STEPS=600 train_cpu.sh dcsr_qq_mb dcsr_meq_mb), and their hybrids
with_hybrids cpu_dcsr_qq_mb_600 "DCSR+QQ, MEQ-centred batches, 600 steps" "DCSR+QQ (MEQ-centred, 600 steps)"
with_hybrids cpu_dcsr_meq_mb_600 "DCSR, MEQ-centred batches, QQ off, 600 steps" "DCSR (MEQ-centred, QQ off, 600 steps)"
# a contrast stage on that model: one epoch over the MEQ-bearing records, passage side trained, QQ and its QQ-off
# control (train_cpu.sh contrast_stage contrast_stage_meq)
with_hybrids cpu_contrast_qq "DCSR-hard + contrast stage, QQ (1 MEQ epoch)" "DCSR-hard + contrast stage QQ"
with_hybrids cpu_contrast_meq "DCSR-hard + contrast stage, QQ off (1 MEQ epoch)" "DCSR-hard + contrast stage, QQ off"
# the same stage on DCSR-ft for two passes, the schedule over both (PASSES=2 train_cpu.sh dcsr contrast_stage_ft)
with_hybrids cpu_contrast_ft_qq_x2 "DCSR-ft + contrast stage, QQ (2 MEQ epochs)" "DCSR-ft + contrast stage QQ (2 passes)"
# one-epoch runs ranked on an H100 (studies/gpu_train.py; their NAME.ranked.json.xz copied to runs/gpu/), and hybrids
with_ranked() {  # FILE NAME LABEL
  if [ -f "runs/gpu/$1.ranked.json.xz" ]; then
    systems+=("$2=ranked:runs/gpu/$1.ranked.json.xz" "Hybrid $3 + BM25=hybrid:$2+BM25" "Hybrid $3 + BM25, HasAns as is=hybrid-hasans:$2+BM25")
  fi
}
with_ranked mean_epoch1 "DCSR-ft, 1 epoch (H100)" "DCSR-ft (1 epoch, H100)"
[ -f runs/gpu/mean_epoch1.ranked.json.xz ] && systems+=(
  "Hybrid DCSR-ft (1 epoch, H100) + BM25, RRF=hybrid-rrf:DCSR-ft, 1 epoch (H100)+BM25")
with_ranked marker_epoch1 "DCSR-ft, <sent> marker (its recipe), 1 epoch (H100)" "<sent> marker (1 epoch, H100)"
# MEQ-centred QQ and its QQ-off control at one epoch (two runs side by side on one GPU, docs/benchmarks/results.md)
with_ranked qq_mb_epoch1 "DCSR+QQ, MEQ-centred batches, 1 epoch (H100)" "DCSR+QQ (MEQ-centred, 1 epoch, H100)"
with_ranked qq_mb_off_epoch1 "DCSR, MEQ-centred batches, QQ off, 1 epoch (H100)" "DCSR (MEQ-centred, QQ off, 1 epoch, H100)"
# a cross-encoder (benchmarks/cross_encoder_rerank.sh trains it) blended over the best-top-1 hybrid's top 5
H="Hybrid DCSR (MEQ-centred, QQ off, 1 epoch, H100) + BM25"
[ -d runs/cross_encoder/last ] && [ -f runs/gpu/qq_mb_off_epoch1.ranked.json.xz ] && systems+=(
  "Cross-encoder (320 CPU steps) blended with $H, top 5=rerank-blend:$H+runs/cross_encoder/last@5")
for steps in 960 1600 2560; do  # the same model continued for 640, 1,280 and 2,240 more steps (cross_encoder_rerank.sh)
  [ -d "runs/cross_encoder_$steps/last" ] && [ -f runs/gpu/qq_mb_off_epoch1.ranked.json.xz ] && systems+=(
    "Cross-encoder ($steps CPU steps) blended with $H, top 5=rerank-blend:$H+runs/cross_encoder_$steps/last@5")
done
# the 2,560-step model's twin whose last stage trained on near-MEQs (cross_encoder_rerank.sh)
[ -d runs/cross_encoder_2560_loose/last ] && [ -f runs/gpu/qq_mb_off_epoch1.ranked.json.xz ] && systems+=(
  "Cross-encoder (2560 CPU steps, last 960 on near-MEQs) blended with $H, top 5=rerank-blend:$H+runs/cross_encoder_2560_loose/last@5")
args=()
for s in "${systems[@]}"; do args+=(--system "$s"); done
.venv/bin/python benchmarks/squad_open.py --questions 0 --contrast-set data/meq_dev \
  --out benchmarks/results/squad_open_dev.json "${args[@]}"
