# Sourced by the reranker scripts: one way to train a cross-encoder further, so every staged model in the README
# is made the same way. A stage continues the previous model on fresh batches: a new seed and a fresh schedule, its
# head (no longer new) at the encoder's rate; skipped when TO/last exists.
continue_from() {  # FROM TO SEED STEPS [TRAIN_FILE]: TRAIN_FILE replaces the config's train_file (the tables' MEQ file)
  local data=()
  [ -z "${5:-}" ] || data=(--set train_file="$5")
  [ -d "$2/last" ] || .venv/bin/python -m haystack_dcsr.training train-cross-encoder --set model="$1/last" \
    --set seed="$3" --set max_steps="$4" --set head_lr=5e-5 --set output_dir="$2" "${data[@]}" --device cpu
}
