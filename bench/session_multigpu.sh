#!/usr/bin/env bash
# The several-GPU checks of issue 17 in one device call, on 2 or 4 GPUs (the branch
# `multigpu`: spin-projected faces, the per-direction NCCL exchange, the distributed
# Möbius operator). Needs the binaries of bench/build_gpu.sh (carry what it prints).
#
#   2 GPUs: run(kind=nvidia-h100-x2): STEP=tests bash bench/session_multigpu.sh
#           run(kind=nvidia-h100-x2): STEP=bench bash bench/session_multigpu.sh
#   4 GPUs: the same two calls with kind=nvidia-h100-x4
#   (two calls: each stays under the 10-minute limit of one device command; STEP=all runs
#   both in one).
#
# Logs in $OUT; the scaling JSON in $OUT/scaling_*.json.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$PWD" /work/main; fi
export QDSL_CACHE_DIR=${QDSL_CACHE_DIR:-$(mktemp -d)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
export QDSL_NCCL_LIB=$NCCL QDSL_COMM_TIMEOUT=60
Q=target/gpu/release/qdsl
RT=$(grep qdsl_runtime target/gpu/gpu-tests.txt)
G=$(nvidia-smi -L | wc -l)
S=(); r() { local n=$1 t=$2; shift 2; local t0=$SECONDS; timeout "$t" "$@" >"$OUT/$n.log" 2>&1; S+=("$n: exit $? $((SECONDS-t0))s"); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
echo "GPUs: $G, nccl: $NCCL"
STEP=${STEP:-all}
if [ "$STEP" = all ] || [ "$STEP" = tests ]; then
  # One GPU (ranks as threads): projected faces bit for bit, the distributed Möbius M̂
  # and its CG; several GPUs: projected faces and per-direction NCCL on every grid that
  # fits (1,1,1,2 · 2,1,1,1 · 1,1,2,2 · 2,2,2,2 / 1,1,1,4 · 2,2,1,1 on 4), the silent
  # peer's timeout, and the existing several-GPU tests (now through the per-direction path).
  r tests_one_gpu 300 "$RT" --include-ignored --test-threads 2 projected_faces_give distributed_mobius_equals device_distributed_ distributed_wilson_cg
  r tests_multi_gpu 300 "$RT" --include-ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  r tests_cpu 120 "$RT" spin_projected comm::mpi
fi
if [ "$STEP" = all ] || [ "$STEP" = bench ]; then
  # Strong and weak scaling 1 → 2 (→ 4) GPUs in one call per lattice: every grid that
  # fits, whole and half (spin-projected) faces, NCCL (overlap per direction, grouped,
  # serial) and peer copies.
  if [ "$G" -ge 4 ]; then
    GRIDS="--grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --grid 2,2,1,1"
    W="--reps 30 --warmup 5 --transports nccl"
  else
    GRIDS="--grid 1,1,1,2 --grid 2,1,1,1"
    W="--reps 50 --warmup 10 --transports nccl,peer"
  fi
  r scaling_32 420 "$Q" bench $GRIDS $W --sizes 32 --strong-and-weak --case "wilson_hop f32" --json "$OUT/scaling_32.json"
  r scaling_48 300 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "wilson_hop f32" --json "$OUT/scaling_48.json"
  r scaling_all 300 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --json "$OUT/scaling_all.json"
fi
for f in tests_one_gpu tests_multi_gpu tests_cpu; do [ -f "$OUT/$f.log" ] && { echo "== $f"; grep -hE "^test |^test result|FAILED|panicked|Möbius grid" "$OUT/$f.log" | head -40; }; done
for f in "$OUT"/scaling_*.log; do [ -f "$f" ] && { echo "== $f"; grep -vE "^qdsl bench:" "$f"; }; done
rm -rf "$QDSL_CACHE_DIR"
printf '%s\n' "${S[@]}"
