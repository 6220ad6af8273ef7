#!/usr/bin/env bash
# gpu_side_by_side.sh for a pair that outruns one device call (10 minutes): the pair runs in its own process
# session (setsid), which the device tool lets outlive the call, writing to /tmp/dcsr_detached instead of $OUT
# ($OUT is emptied before every call). Each call waits up to WAIT seconds; once the pair has finished, it copies
# the pair's files into $OUT (before that, what it has written so far). Call again at once (the machine stays warm ~30 s) until it says "finished".
#   RUNS="qq_mb:... qq_mb_off:..." WAIT=560 bash benchmarks/gpu_detached.sh   # first call: starts the pair
#   WAIT=560 bash benchmarks/gpu_detached.sh                                  # later calls: wait, then collect
# A fresh machine has no such folder: a later call that finds none says so instead of waiting (tests/test_gpu_detached.py).
set -u
dir=${DETACHED_DIR:-/tmp/dcsr_detached}  # where the pair writes; one pair per machine
if [ -n "${RUNS:-}" ]; then
  [ -e "$dir" ] && { echo "a pair was already started on this machine ($dir): call without RUNS to collect it"; exit 2; }
  mkdir -p "$dir/out"
  RUNS="$RUNS" OUT="$dir/out" setsid bash -c \
    'bash benchmarks/gpu_side_by_side.sh > "$0/side_by_side.log" 2>&1; echo $? > "$0/status"' "$dir" < /dev/null &
elif [ ! -d "$dir" ]; then
  echo "nothing was started on this machine (a fresh one?): start the pair with RUNS=..."; exit 2
fi
for _ in $(seq "${WAIT:-560}"); do [ -f "$dir/status" ] && break; sleep 1; done
cat "$dir/side_by_side.log" 2>/dev/null
for log in "$dir"/out/*.console.log; do [ -f "$log" ] && { echo "== $log"; tail -c 600 "$log"; echo; }; done
cp -r "$dir"/out/. "$OUT"/  # unfinished: the training logs so far (each run writes its log before evaluating)
if [ -f "$dir/status" ]; then echo "finished (status $(cat "$dir/status"))"; else echo "still running: call again"; fi
