#!/usr/bin/env bash
# One H100 call: QUDA builds in the background (bench/quda_side_by_side.sh build) while
# nothing of qdsl's runs; then QUDA's Möbius rows at 32⁴ (Dslash, MatPC; single and
# half, recon 12) and llfat; then qdsl's Möbius M̂ rows and the link paths right after, on
# the same card. Logs in $OUT (few files).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export QDSL_CACHE_DIR=$(mktemp -d) OUT
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$SECONDS
bash bench/quda_side_by_side.sh build
bash target/quda-anchor/poll.sh 380 > "$OUT/quda_build.txt" 2>&1; rm -f "$OUT/build.log"
echo "quda build waited $((SECONDS-t0))s: $(head -2 "$OUT/quda_build.txt" | tr '\n' ' ')"
BIN=${QUDA_WORK:-/tmp/qb}/build/tests; Q=$PWD/target/gpu/release/qdsl
export QUDA_RESOURCE_PATH=$(mktemp -d)
B="--verify false --niter 100 --gtest_filter=*benchmark*"
( cd "$BIN" && for p in single half; do for t in Dslash MatPC; do
    echo "### $p $t"; timeout 60 ./dslash_test --dslash-type mobius --Lsdim 12 --dim 32 32 32 32 --prec $p --recon 12 --test $t $B 2>&1 | grep -E "GFLOPS|per kernel call|ERROR" | tail -3
  done; done
  echo "### llfat"; timeout 70 ./llfat_test --dim 32 32 32 32 --niter 100 --verify false --prec single --recon 18 2>&1 | grep -E "link computation|GFLOPS|ERROR" | tail -3
  cp "$QUDA_RESOURCE_PATH"/profile_0.tsv "$OUT/quda_profile.tsv" 2>/dev/null ) > "$OUT/quda.log" 2>&1
cat "$OUT/quda.log"
timeout 150 "$Q" bench --sizes 32 --case "mobius_eo f" --reps 50 > "$OUT/qdsl_mobius.log" 2>&1; echo "qdsl mobius exit $?"
grep -E "^mobius|^case" "$OUT/qdsl_mobius.log"
timeout 120 "$Q" bench --sizes 32 --case "asqtad_links" --reps 5 --warmup 1 > "$OUT/qdsl_links.log" 2>&1; echo "qdsl links exit $?"
grep -E "^asqtad" "$OUT/qdsl_links.log"
