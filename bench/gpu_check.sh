#!/usr/bin/env bash
# The GPU half of a change's verification, run on the GPU machine from the repository
# root with binaries built here (no Rust toolchain there):
#
#   bench/build_gpu.sh           # prints the paths to carry
#   bench/gpu_check.sh check     # qdsl check, every GPU test, the sanitizers, the main job
#   bench/gpu_check.sh bench BIN # qdsl bench of BIN on a fresh tune cache
#
# Logs and JSON go to $OUT (default /tmp/qdsl-gpu-out); a short summary is printed last.
set -uo pipefail
OUT=${OUT:-/tmp/qdsl-gpu-out}
mkdir -p "$OUT"
QDSL=${QDSL:-target/gpu/release/qdsl}
# The test binaries hold the repository path they were built in (test data, the qdsl
# binary): make it resolve on this machine too.
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$PWD" /work/main; fi
export QDSL_CACHE_DIR
QDSL_CACHE_DIR=$(mktemp -d)
summary=()
run() { # name, command...: runs it, logs to $OUT/name.log, records status and seconds
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    summary+=("$name: exit $rc, $((SECONDS - t0)) s")
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
case "${1:-check}" in
check)
    # STEPS picks the steps (default all); GPU_TESTS filters the test names.
    steps=${STEPS:-"info main_job first_use_full tiled check gpu_tests memcheck racecheck python"}
    has() { [[ " $steps " == *" $1 "* ]]; }
    has info && run info "$QDSL" info
    has main_job && run main_job "$QDSL" solve tests/data/milc/lat.sample.l8 --action wilson \
        --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10
    # The main job again on an empty cache with the full compile-knob search (QDSL_TUNE=full).
    has first_use_full && QDSL_CACHE_DIR=$(mktemp -d) QDSL_TUNE=full run first_use_full "$QDSL" \
        solve tests/data/milc/lat.sample.l8 --action wilson --kappa 0.12 --solver bicgstab \
        --precision f32 --tol 1e-10
    # The README's 32^4 (tiled) solve on the GPU, then on the CPU.
    if has tiled; then
        for backend in cuda cpu; do
            run "tiled_$backend" "$QDSL" --backend "$backend" solve tests/data/milc/lat.sample.l8 \
                --tile 4 --action wilson --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10
        done
    fi
    has check && run check "$QDSL" check
    # The library test binaries of qdsl-runtime and qdsl (bench/build_gpu.sh lists them);
    # insta finds the snapshots through the workspace root (no cargo here to ask).
    if has gpu_tests; then
        # Tests named multi_gpu_* need two GPUs or more: skipped (not passed) on one.
        skip_multi=()
        gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
        [ "$gpus" -ge 2 ] || skip_multi=(--skip multi_gpu_)
        i=0
        while read -r tests; do
            i=$((i + 1))
            INSTA_WORKSPACE_ROOT=/work/main run "gpu_tests_$i" "$tests" --include-ignored \
                --test-threads 1 "${skip_multi[@]}" ${GPU_TESTS:-}
        done <target/gpu/gpu-tests.txt
        cat "$OUT"/gpu_tests_*.log >"$OUT/gpu_tests.log"
    fi
    has memcheck && run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 \
        "$QDSL" check --kernel wilson_hop --lattice 4,4,4,4
    has racecheck && run racecheck compute-sanitizer --tool racecheck --error-exitcode 1 \
        "$QDSL" check --kernel improved_staggered_hop --lattice 4,4,4,4
    # The Python package's GPU tests, from a wheel built here (pip wheel ./python -w target/wheel).
    if has python && ls target/wheel/*.whl >/dev/null 2>&1; then
        run python bash -c "python3 -m pip install --quiet --no-deps --force-reinstall target/wheel/*.whl \
            && python3 -m pytest -q python/tests"
        tail -3 "$OUT/python.log"
    fi
    grep -hE "^test result|FAILED|panicked" "$OUT/gpu_tests.log" 2>/dev/null | tail -8
    tail -2 "$OUT/check.log" 2>/dev/null
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" 2>/dev/null
    for log in main_job first_use_full tiled_cuda tiled_cpu; do
        echo "-- $log"
        grep -hiE "set-up|setup|jit|tuning|solve|backend|iterations|residual" "$OUT/$log.log" 2>/dev/null | head -12
    done
    ;;
bench)
    bin=${2:-$QDSL}
    tag=${3:-$(basename "$(dirname "$bin")")}
    run "bench-$tag" "$bin" bench --compare-quda --json "$OUT/bench-$tag.json"
    tail -60 "$OUT/bench-$tag.log"
    ;;
esac
printf '%s\n' "${summary[@]}"
