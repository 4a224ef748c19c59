#!/usr/bin/env bash
# On the GPU machine (needs nvcc, no Rust): build every kernel variant in GEN_DIR with
# harness.cu for signature KIND (see harness.cu), time each twice, compare every output
# with the first variant's, and measure the card's copy and read bandwidth (readbw.cu).
#   bench/harness/run.sh KIND GEN_DIR [extra nvcc flags, e.g. -DQDSL_PREFETCH=1]
set -u
here="$(cd "$(dirname "$0")" && pwd)"
kind=$1; gen=$(cd "$2" && pwd); shift 2
work=$(mktemp -d); cd "$work"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O3 -arch=sm_90 -o readbw "$here/readbw.cu" && ./readbw
for f in "$gen"/*.cu; do
    v=$(basename "$f" .cu)
    k=$(grep -o 'extern "C" __global__ void [a-z_0-9]*' "$f" | awk '{print $5}')
    nvcc -O3 -arch=sm_90 -std=c++17 -DKFILE="\"$f\"" -DKNAME="$k" -DKIND="$kind" "$@" \
        -o "bin_$v" "$here/harness.cu" 2> "bin_$v.log" || { echo "BUILD FAIL $v"; cat "bin_$v.log"; } &
done
wait
for rep in 1 2; do
    for b in bin_*; do [ -x "$b" ] && "./$b" "${b#bin_}" "out_${b#bin_}.bin"; done
done
first=$(ls out_*.bin | head -1)
python3 - "$first" out_*.bin <<'PY'
import array, sys
ref = open(sys.argv[1], 'rb').read()
for p in sys.argv[2:]:
    b = open(p, 'rb').read()
    a, c = array.array('f', ref), array.array('f', b)
    diff = max(abs(x - y) for x, y in zip(a[::61], c[::61]))
    print(f'COMPARE {p} vs {sys.argv[1]}: bytes equal {b == ref}, max |diff| (sampled, as f32) {diff:.3e}')
PY
