#!/usr/bin/env bash
# One device call: the fused chains and the device Möbius operator against the CPU, the
# Möbius solves (f64 … fixed8) and the Möbius M̂ bench rows at 32⁴, Ls 12 (logs in $OUT).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$PWD" /work/main; fi
export QDSL_CACHE_DIR=$(mktemp -d)
RT=$(grep qdsl_runtime target/gpu/gpu-tests.txt); QL=$(grep -v qdsl_runtime target/gpu/gpu-tests.txt)
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 "$RT" --ignored --test-threads 4 every_chain_on_the_gpu the_device_even_odd_mobius >"$OUT/rt.log" 2>&1; echo "rt exit $?"
timeout 200 "$QL" --ignored --test-threads 4 mobius >"$OUT/ql.log" 2>&1; echo "ql exit $?"
grep -hE "^test result|FAILED|panicked|iterations" "$OUT/rt.log" "$OUT/ql.log" | head -20
timeout 240 target/gpu/release/qdsl bench --sizes 32 --case "recon12 ls12" --reps 50 --json "$OUT/mob.json" >"$OUT/mob.log" 2>&1; echo "bench exit $?"
grep -E "^mobius" "$OUT/mob.log"
