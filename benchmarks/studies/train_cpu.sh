#!/usr/bin/env bash
# The CPU fine-tuning runs behind the README's trainer results: DCSR and DPR from all-MiniLM-L6-v2
# with the same budget (200 steps of 32 questions, lr 3e-5), mean pooling, cosine / 0.05 (the base
# model's own geometry). Needs the data of the README's "Trainer" section under data/.
#   bash benchmarks/studies/train_cpu.sh [MODE]...      (default: dcsr dpr; ~30-40 min each on 2 cores)
#   STEPS=600 bash benchmarks/studies/train_cpu.sh dcsr_qq   (a longer budget, same recipe; writes runs/cpu_dcsr_qq_600)
#   RESUME=1 STEPS=600 bash benchmarks/studies/train_cpu.sh dcsr_meq   (continue an interrupted run from its last
#   checkpoint, exactly; without RESUME=1 every run starts over)
# Modes: dcsr, dpr, dcsr_qq (DCSR + QQ on data/squad_train_meq.jsonl) and dcsr_meq (its control:
# the same file and MEQs still trained as questions, QQ off), and on the same file with every
# MEQ-bearing question entered 5x per epoch: dcsr_qq_os (QQ) and dcsr_meq_os (its QQ-off control);
# dcsr_qq_w5: DCSR + QQ with qq_weight 5 (the QQ term at about QP's size; it is ~1/4 of it at weight 1).
# MEQ-centred batches (4 (q, MEQ) groups in every batch): dcsr_qq_mb (QQ) and dcsr_meq_mb (its QQ-off control);
# dcsr_qq_mb1 / dcsr_meq_mb1: the same with 1 group a batch (4 cost 1.2 top-1 against shuffled batches).
# dcsr_qq_mb_dot / dcsr_qq_mb_triplet: dcsr_qq_mb with the MEQ paper's other two QQ forms (margin 1, on QP's scale).
# dcsr_marker: DCSR with the <sent> marker's recipe (mean init, own lr 1e-3, 20 marker-only steps);
# dcsr_meq_marker: the same recipe on dcsr_meq's file and settings (QQ off), the marker twin of dcsr_meq.
# The paper's negative-sampling ablation (dcsr is "+1 in-passage +1 BM25 random"): dcsr_bm25x1
# ("+1 BM25 random") and dcsr_bm25x2 ("+2 BM25 random").
# dcsr_hard: the DCSR-hard round, DCSR-ft's recipe from the base model on negatives that a first-round run mines
# (MINER=cpu_dcsr by default, i.e. mode dcsr run first): its top 30 passages without an answer, 10 kept
# (data/squad_train_hard_$MINER.jsonl, mined once); writes runs/cpu_dcsr_hard_by_${MINER#cpu_} (with STEPS=600: ..._600).
# dcsr_hard_qq_mb: DCSR-hard's negatives with MEQ-centred QQ (dcsr_qq_mb's settings; the MEQ file is built from the
# mined one, data/squad_train_hard_${MINER}_meq.jsonl); writes runs/cpu_dcsr_hard_by_${MINER#cpu_}_qq_mb.
# dcsr_hard_meq_mb: its QQ-off control on the same file and batches (runs/cpu_dcsr_hard_by_${MINER#cpu_}_meq_mb).
# query_side: query-side tuning of DCSR-hard's 1200-step model (its passage tower frozen; every training sentence a
# candidate; MEQ-centred batches with QQ) with trainer/configs/squad_dcsr_query_side.yaml's own budget (one epoch of 64
# questions a step; STEPS is ignored), the answer sentence as target; query_side_passage: the gold passage's rows as
# target; a _meq suffix on either: its QQ-off control on the same batches. Write runs/cpu_qs[_passage]_{qq,meq}_mb.
# contrast_stage: DCSR-hard's 1200-step model trained on, passage side included, for one epoch over the records of
# DCSR-hard's MEQ file that carry an MEQ (4,127 with 5,458 MEQs; one a record, drawn each epoch, trains beside it), shuffled batches,
# QQ on, lr 1e-5 (STEPS is ignored); contrast_stage_meq: its QQ-off control. Write runs/cpu_contrast_{qq,meq}.
# contrast_stage_ft[_meq]: the same stage on DCSR-ft (mode dcsr first) over data/squad_train_meq.jsonl's MEQ records
# (runs/cpu_contrast_ft_{qq,meq}). PASSES=N makes either stage N passes, the schedule over all N (.._xN).
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
# the recipe: build_model.yaml's first CPU stage and studies.yaml's cpu_* keys (trainer/configs/ owns every value)
sets() { mapfile -t "$1" < <(.venv/bin/python -m haystack_dcsr.training settings "$2" "$3" --sets); }
sets RECIPE build_model.yaml budgets.gpu.first
sets CPU studies.yaml cpu_dcsr
sets MARKER studies.yaml cpu_marker
sets CONTRAST studies.yaml contrast_stage
SUFFIX=${STEPS:+_${STEPS}}   # STEPS=N: a longer budget, same recipe
MINER=${MINER:-cpu_dcsr}
RESTART=$([[ "${RESUME:-0}" == 1 ]] && echo "" || echo "--no-resume")
COMMON=(${RESTART} "${RECIPE[@]}" "${CPU[@]}" ${STEPS:+--set max_steps=$STEPS})
mine_hard() {  # the DCSR-hard negatives of run $MINER, mined once
  [[ -f "data/squad_train_hard_${MINER}.jsonl" ]] || .venv/bin/python benchmarks/studies/gpu_train.py mine \
    "runs/${MINER}/last" data/squad_train_bm25.jsonl data/corpus.jsonl "data/squad_train_hard_${MINER}.jsonl"
}
for mode in "${@:-dcsr dpr}"; do
  for m in $mode; do
    name=$m
    case "$m" in
      dcsr_qq_os)  config=dcsr_qq; extra=(--set meq_oversample=5) ;;
      dcsr_meq)    config=dcsr_qq; extra=(--set qq_form=null) ;;
      dcsr_qq_w5)  config=dcsr_qq; extra=(--set qq_weight=5.0) ;;
      dcsr_meq_os) config=dcsr_qq; extra=(--set meq_oversample=5 --set qq_form=null) ;;
      dcsr_qq_mb)  config=dcsr_qq; extra=(--set meq_per_batch=4) ;;
      dcsr_meq_mb) config=dcsr_qq; extra=(--set meq_per_batch=4 --set qq_form=null) ;;
      dcsr_qq_mb_dot|dcsr_qq_mb_triplet)
                   config=dcsr_qq; extra=(--set meq_per_batch=4 --set qq_form=${m#dcsr_qq_mb_}) ;;
      dcsr_qq_mb1)  config=dcsr_qq; extra=(--set meq_per_batch=1) ;;
      dcsr_meq_mb1) config=dcsr_qq; extra=(--set meq_per_batch=1 --set qq_form=null) ;;
      dcsr_marker) config=dcsr; extra=("${MARKER[@]}") ;;
      dcsr_meq_marker) config=dcsr_qq; extra=(--set qq_form=null "${MARKER[@]}") ;;
      dcsr_bm25x1) config=dcsr; extra=(--set "negatives=+1 BM25 random") ;;
      dcsr_bm25x2) config=dcsr; extra=(--set "negatives=+2 BM25 random") ;;
      dcsr_hard)   config=dcsr; extra=(--set train_file="data/squad_train_hard_${MINER}.jsonl")
                   name="dcsr_hard_by_${MINER#cpu_}"
                   mine_hard ;;
      dcsr_hard_qq_mb|dcsr_hard_meq_mb)
                   config=dcsr_qq; extra=(--set train_file="data/squad_train_hard_${MINER}_meq.jsonl" --set meq_per_batch=4)
                   [[ "$m" == dcsr_hard_meq_mb ]] && extra+=(--set qq_form=null)
                   name="dcsr_hard_by_${MINER#cpu_}_${m#dcsr_hard_}"
                   mine_hard
                   [[ -f "data/squad_train_hard_${MINER}_meq.jsonl" ]] || .venv/bin/python -m haystack_dcsr.training \
                     build-meq-augmentation "data/squad_train_hard_${MINER}.jsonl" "data/squad_train_hard_${MINER}_meq.jsonl" ;;
      query_side|query_side_meq|query_side_passage|query_side_passage_meq)
                   qs=(--set qq_form=infonce) qs_name=cpu_qs
                   [[ "$m" == *_meq ]] && qs=(--set qq_form=null)
                   [[ "$m" == query_side_passage* ]] && qs+=(--set frozen_target=passage) && qs_name+=_passage
                   qs_name+=$([[ "$m" == *_meq ]] && echo _meq_mb || echo _qq_mb)
                   .venv/bin/python -m haystack_dcsr.training train --config trainer/configs/squad_dcsr_query_side.yaml \
                     ${RESTART} "${qs[@]}" --set output_dir="runs/${qs_name}"
                   continue ;;
      contrast_stage|contrast_stage_meq|contrast_stage_ft|contrast_stage_ft_meq)
                   cs_base=runs/cpu_dcsr_hard_by_dcsr_1200/last cs_file=data/squad_train_hard_cpu_dcsr_meq.jsonl cs_name=cpu_contrast
                   [[ "$m" == contrast_stage_ft* ]] && cs_base=runs/cpu_dcsr/last cs_file=data/squad_train_meq.jsonl cs_name+=_ft
                   cs=(--set qq_form=infonce) cs_name+=_qq
                   [[ "$m" == *_meq ]] && cs=(--set qq_form=null) cs_name=${cs_name%_qq}_meq
                   [[ "${PASSES:-1}" == 1 ]] || cs_name+="_x${PASSES}"
                   .venv/bin/python -m haystack_dcsr.training train --config trainer/configs/squad_dcsr_qq.yaml \
                     "${COMMON[@]}" "${CONTRAST[@]}" --set epochs="${PASSES:-1}" \
                     --set base_model="${cs_base}" --set train_file="${cs_file}" "${cs[@]}" --set output_dir="runs/${cs_name}"
                   continue ;;
      *)           config=$m; extra=() ;;
    esac
    .venv/bin/python -m haystack_dcsr.training train --config "trainer/configs/squad_${config}.yaml" "${COMMON[@]}" "${extra[@]}" \
      --set output_dir="runs/cpu_${name}${SUFFIX}"
  done
done
