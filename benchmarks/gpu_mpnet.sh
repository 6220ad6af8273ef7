#!/usr/bin/env bash
# all-mpnet-base-v2 trained on the device, as a reranker (run: gpu_cross_encoder.py) or as DCSR towers (dcsr:
# gpu_train.py, the paper's model at BERT-base size). A base over one device call's 64 MiB travels as fp16 xz
# (179 MiB) in parts, one call each on the same warm machine (it is given back after ~30 s idle, so call again
# at once), and the model stays there (--model-stays): only its logits of the benchmark's pairs come back.
#   here:  .venv/bin/python benchmarks/gpu_train.py pack --out .gpu/train
#          .venv/bin/python benchmarks/gpu_train.py pack-model runs/bases/all-mpnet-base-v2 --out .gpu/mpnet
#          mkdir -p .stage && mv .gpu/mpnet/model.safetensors.xz .stage/mpnet.xz
#          (cd .stage && split -b 51M -d -a 1 mpnet.xz p && sha256sum mpnet.xz > mpnet.sha)   # p0..p3
#          squad_open.py --pairs-to-score: .gpu/ce_pairs20.jsonl.xz (all dev, BM25's top 20) and
#          .gpu/ce_pairs50.jsonl.xz (the 1,000 sample and the contrast set, top 50); README, "At a GPU budget";
#          optionally .gpu/ce_pairs_loose50.jsonl.xz (the looser contrast set, top 50: 128,630 pairs, ~70 s there;
#          README "Four times the pairs"): every .gpu/ce_pairs*.jsonl.xz carried is scored
#   there: bash benchmarks/gpu_mpnet.sh stage     # device tool, carry .stage/p0; then p1, then p2
#          BUDGET=300 bash benchmarks/gpu_mpnet.sh run   # carry .stage/p3 .stage/mpnet.sha .gpu .whl
#                                         (.gpu whole, ~11 MiB: the data, the base's small files, every pairs file)
#          a second seed: NAME=mpnet_gpu_s2 SET="--set seed=43" (scores then install under that name)
#   or, after the same staging, DCSR from mpnet (not run on a GPU yet; 2 CPU steps at batch 4 trained, loss 1.11 ->
#          0.27, 6.3 GB): bash benchmarks/gpu_mpnet.sh dcsr   # carry as for run, timeout 590 s;
#          RUNS defaults to "mpnet_dcsr:budget_s=240": a 30-step probe times a step there and the run gets the
#          steps that fit 240 s (rounded down to 100s), its schedule whole, so one call trains and evaluates
#          (the reranker's probe ran 18% fast over its run: keep the budget well inside the call's 600 s, which
#          also loads the data and encodes all 20,963 paragraphs and 10,570 questions with the base-size towers);
#          its NAME.ranked.json.xz comes back for squad_open.py --system "NAME=ranked:FILE" (README "The trainer on
#          a GPU"), gpu_train.json holds probe_step_s, budget_s and steps (an epoch is ~2,700 steps at batch 32)
#          On 2 CPU cores it is no option: 91 s a step at batch 32 (gradient cache 16) against MiniLM-L6's 22 s, 8.3
#          vs 2.8 GB (2026-11-28, 3 steps each, back to back: python -m haystack_dcsr.training train --config
#          trainer/configs/squad_dcsr.yaml --no-resume --set pooling=mean --set max_steps=3 --set warmup_steps=20
#          --set lr=3.0e-5 --set batch_size=32 --set grad_cache_chunk=16 --set dev_limit=32
#          --set retrieval_dev_passages=0 --set output_dir=/tmp/x [--set base_model=runs/bases/all-mpnet-base-v2])
#   there, at once, while time is left: PARTS="0 1 2 3" bash benchmarks/gpu_mpnet.sh fetch  (then 4-7,
#          8-11, 12 13): the model's 14 fp16 parts of 15 MiB, four a call, into one folder here (optional: the
#          scores install without them, and the model then serves only the pairs scored there)
#   here:  .venv/bin/python benchmarks/gpu_cross_encoder.py install FOLDER runs/gpu_ce benchmarks/cache/squad_open
# 2026-11-28, one H200: 3 staging calls of ~1 s; the run 548 s (3,200 steps in 338 s for BUDGET=280: the probe's
# 0.085 s a step was 0.100 over the run, so leave ~25% slack; 268,931 pairs scored in 141 s); 4 fetch calls of ~1 s;
# 717 s of device time in all, the machine's start included
set -euo pipefail
if [ "$1" = fetch ]; then
  for part in $PARTS; do cp "/tmp/dcsr_ce_${NAME:-mpnet_gpu}/${NAME:-mpnet_gpu}.tar.part$part" "$OUT/"; done
  exit 0
fi
mkdir -p /tmp/stage
cp .stage/p[0-9] /tmp/stage/
ls -l /tmp/stage
[ "$1" = stage ] && exit 0
(cd /tmp/stage && cat p[0-9] > mpnet.xz && sha256sum -c "$OLDPWD/.stage/mpnet.sha")
mv /tmp/stage/mpnet.xz .gpu/mpnet/model.safetensors.xz
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
if [ "$1" = dcsr ]; then
  # shellcheck disable=SC2086  # RUNS: one or more "NAME[:key=value,...]" words, none holding a space
  python3 benchmarks/gpu_train.py run --data .gpu/train --base .gpu/mpnet --out "$OUT" \
    $(printf -- '--run %s ' ${RUNS:-mpnet_dcsr:budget_s=240})
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
  exit 0
fi
pairs=()
for file in .gpu/ce_pairs*.jsonl.xz; do pairs+=(--pairs "$file"); done
# shellcheck disable=SC2086  # SET: extra "--set key=value" words
python3 benchmarks/gpu_cross_encoder.py run --data .gpu/train --base .gpu/mpnet --out "$OUT" \
  "${pairs[@]}" --name "${NAME:-mpnet_gpu}" \
  --model-stays --budget-s "${BUDGET:-300}" --batch-size 512 --set save_every=1000000 ${SET:-}
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
