# Sourced by the reranker scripts: one way to train a cross-encoder, so every model in the README's reranker rows
# is made the same way, each run skipped when its OUT/last exists.
train_stage() {  # OUT STEPS [--set FIELD=VALUE ...]: train-cross-encoder's defaults on the CPU, overridden by the sets
  local out=$1 steps=$2
  shift 2
  [ -d "$out/last" ] || .venv/bin/python -m haystack_dcsr.training train-cross-encoder --set max_steps="$steps" \
    --set output_dir="$out" "$@" --device cpu
}
# A later stage continues the previous model on fresh batches: a new seed and a fresh schedule, its head (no longer
# new) at the encoder's rate.
continue_from() {  # FROM TO SEED STEPS [TRAIN_FILE]: TRAIN_FILE replaces the config's train_file (the tables' MEQ file)
  local data=()
  [ -z "${5:-}" ] || data=(--set train_file="$5")
  train_stage "$2" "$4" --set model="$1/last" --set seed="$3" \
    --set head_lr="$(.venv/bin/python -m haystack_dcsr.training settings studies.yaml reranker.continuation_head_lr)" "${data[@]}"
}
