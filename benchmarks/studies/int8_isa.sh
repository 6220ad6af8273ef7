#!/usr/bin/env bash
# Int8 on a CPU without VNNI, stood in for by this one with its instruction sets capped (haystack_dcsr/core/int8.py,
# ISA_CAPS): each cap runs the towers' benchmark (zero-shot MiniLM-L6) and the MiniLM reranker's (100 steps,
# served variant only), fp32 and int8 side by side in one process, so every ratio is within one cap.
#   native       AVX512 with VNNI (int8 dot products in one instruction): this CPU as it is
#   avx512_core  AVX512 without VNNI (Skylake-SP class): oneDNN's int8 and MKL's fp32 kernels capped
#   avx2         AVX2 (Haswell to Zen 3 class) for the matmuls, oneDNN's int8 and MKL's fp32: most of the cost
#   avx2_aten    the same and PyTorch's kernels and Inductor's code capped too (ATEN_CPU_CAPABILITY=avx2): on this
#                AVX512 host the compiled int8 layers then return NaN for some inputs (recorded as found; not seen
#                without that cap, not tried on a real AVX2 CPU)
# A capped run is this CPU's cores with fewer instructions: clocks, caches and memory stay this machine's.
#   bash benchmarks/studies/int8_isa.sh [CAP]...     (default: native avx512_core avx2; ~5 min each on 2 cores)
#   SATURATING=1 RERANKER_ONLY=1 bash benchmarks/studies/int8_isa.sh avx512_core avx2   (the reranker beside 8-bit weights
#   on a saturating matmul, what quantize="int8" served before it checked: -> reranker_CAP_vs_8bit.json)
#   -> benchmarks/results/int8_isa/{towers,reranker}_CAP.json
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0; }
set -euo pipefail
out=benchmarks/results/int8_isa
mkdir -p "$out"
for cap in "${@:-native avx512_core avx2}"; do
  for c in $cap; do
    case "$c" in
      native)      caps=() ;;
      avx512_core) caps=(ONEDNN_MAX_CPU_ISA=AVX512_CORE MKL_ENABLE_INSTRUCTIONS=AVX512) ;;
      avx2)        caps=(ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2) ;;
      avx2_aten)   caps=(ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2) ;;
      *) echo "unknown cap $c (native, avx512_core, avx2, avx2_aten)" >&2; exit 2 ;;
    esac
    [[ -n "${RERANKER_ONLY:-}" ]] || env "${caps[@]}" .venv/bin/python benchmarks/speed.py towers --out "$out/towers_$c.json"
    env "${caps[@]}" .venv/bin/python benchmarks/speed.py reranker runs/cross_encoder_minilm_100/last \
      --only 'per-token int8, compiled (quantize="int8")' ${SATURATING:+"per-token int8, compiled, 8-bit weights always"} \
      --out "$out/reranker_$c${SATURATING:+_vs_8bit}.json"
  done
done
