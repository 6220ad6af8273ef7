#!/usr/bin/env bash
# Two gpu_train.py runs side by side on one GPU (device tool; one call): each process has its own workdir
# and output folder, so the pair costs one epoch's wall time instead of two. A step of MiniLM at batch 32
# is bound by host work (tokenising, sampling: ~0.08 s of GPU in ~0.125 s a step), so two processes
# share the card with little loss; compare their training seconds only with each other.
#   RUNS="marker:epochs=1,pooling=marker,... epoch1" bash benchmarks/gpu_side_by_side.sh   # names become folders
# Needs: .gpu/train (gpu_train.py pack), .gpu/minilm (fp16 base), .whl (nltk + defusedxml wheels); writes
# $OUT/<run>/{gpu_train.json,<run>.log.jsonl,<run>.ranked.json.xz} and $OUT/<run>.console.log.
# A call that runs out while evaluating: call again at once (the machine is kept ~30 s) with EVAL_ONLY=1 and the
# same RUNS; it evaluates what the first call trained (its workdirs in /tmp) without training again.
set -u
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=4 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv,noheader -l 60 &
monitor=$!
pids=()
for spec in ${RUNS:?set RUNS to run specs, space-separated}; do
  name=${spec%%:*}
  python3 benchmarks/gpu_train.py run --data .gpu/train --base .gpu/minilm --workdir "/tmp/dcsr_gpu_$name" \
    --out "$OUT/$name" --run "$spec" ${SMOKE:+--smoke} ${EVAL_ONLY:+--eval-only} > "$OUT/$name.console.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
kill "$monitor" 2>/dev/null
for spec in $RUNS; do name=${spec%%:*}; echo "== $name"; tail -3 "$OUT/$name.console.log"; done
exit $status
