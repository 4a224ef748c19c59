#!/usr/bin/env bash
# QUDA's side-by-side rows for this round's issues (Möbius hop, M5⁻¹ and MatPC at 32⁴ and
# 24⁴ with Ls 12, and 32⁴ with Ls 16; the asqtad link fattening, the gauge force and the HISQ
# fermion force; QUDA_ROWS=mobius or links for one half, hforce for the HISQ force alone
# at HFORCE_DIM⁴, default 32), on the GPU machine,
# from a copy of ../shared/anchors/quda carried in target/quda-anchor:
#
#   bench/quda_side_by_side.sh build   # prepare + background build (returns at once)
#   bench/quda_side_by_side.sh bench   # waits for the build, then runs the rows
#
# Logs, QUDA's tune cache and profile go to $OUT/quda. Run qdsl's bench right after, on
# the same machine.
set -uo pipefail
A=${QUDA_ANCHOR:-target/quda-anchor}
OUT=${OUT:-/tmp/qdsl-gpu-out}
export QUDA_WORK=${QUDA_WORK:-/tmp/qb}
export TARGETS=${TARGETS:-"dslash_test llfat_test gauge_path_test hisq_paths_force_test"}
case "${1:-bench}" in
build)
    bash "$A/build.sh" prepare >"$OUT/quda-prepare.log" 2>&1 && bash "$A/build.sh" bg
    ;;
bench)
    bash "$A/poll.sh" "${POLL_S:-400}"
    BIN=$QUDA_WORK/build/tests
    Q=$OUT/quda
    mkdir -p "$Q"
    export QUDA_RESOURCE_PATH=$QUDA_WORK/tune
    mkdir -p "$QUDA_RESOURCE_PATH"
    cd "$BIN" || exit 1
    row() { # log name, test and arguments
        local n=$1
        shift
        echo "### ./$*" >>"$Q/$n.log"
        timeout "${TMO:-90}" ./"$@" >>"$Q/$n.log" 2>&1
        echo "rc=$?" >>"$Q/$n.log"
        # Its tuned kernels' times (QUDA rewrites the profile per run).
        cp "$QUDA_RESOURCE_PATH"/profile_0.tsv "$Q/profile_$n.tsv" 2>/dev/null
        echo "$(grep -E 'per kernel call|GFLOPS|link computation|Force calculation|ERROR' "$Q/$n.log" | tail -2 | tr '\n' ' ') <- $*"
    }
    B="--verify false --niter 100 --gtest_filter=*benchmark*"
    case ${QUDA_ROWS:-all} in links | hforce) ;; *) for dl in 32:12 24:12 32:16; do d=${dl%:*} ls=${dl#*:}; for p in single half; do for t in Dslash M5inv MatPC; do
        [ "$dl" != 32:12 ] && [ "$t" = M5inv ] && continue
        row mobius dslash_test --dslash-type mobius --Lsdim $ls --dim $d $d $d $d --prec $p --recon 12 --test $t $B
        done; done; done ;;
    esac
    [ "${QUDA_ROWS:-all}" = mobius ] && exit 0 # the Möbius rows only
    D="--dim 32 32 32 32 --niter ${QUDA_NITER:-100} --verify false"
    if [ "${QUDA_ROWS:-all}" != hforce ]; then
        row llfat llfat_test $D --prec single --recon 18
        row gforce gauge_path_test $D --prec single --recon 18 # its second (loop-trace) test may reach the timeout
    fi
    H=${HFORCE_DIM:-32}
    D="--dim $H $H $H $H --niter ${QUDA_NITER:-100} --verify false"
    # The HISQ fermion force's smearing part (staples, long link, completion; one call each,
    # tuned in the first of its two gtest cases), in single: the anchor's build enables
    # single and half only (QUDA_PRECISION=6; double stops with an error). Its host set-up
    # at 32⁴ (random outer products, extended fields) outlasted 120 s on 2026-11-28, so one
    # gtest case with its own limit; the kernels' times come from the profile.
    TMO=${HFORCE_TMO:-400} row hforce hisq_paths_force_test $D --prec single --recon 18 --gtest_filter=paths.verify
    cp "$QUDA_RESOURCE_PATH"/profile_0.tsv "$Q/" 2>/dev/null
    ;;
esac
true
