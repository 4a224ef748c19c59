#!/usr/bin/env bash
# A session's GPU verification in one or two device calls (see BENCHMARKS.md 2026-11-27 (e)):
# STEP=verify (the GPU test binaries, racecheck of the fused chains, memcheck, GPU Möbius
# solves, 2-GPU NCCL grid solves), STEP=bench (the rows this round added) or STEP=grid (the
# several-GPU tests, peer and NCCL grid solves and the scaling tables, on 2 or 4 GPUs: about
# 3 minutes on 2 GPUs, 5 on 4) or STEP=round (2 GPUs: this round's merge, every GPU test,
# the link-path plans, two-GPU solves and scaling) or STEP=final_a / final_b (two calls on a
# 4-GPU machine: every test, QUDA side by side, every bench row of this round). Logs in $OUT
# (keep it to a few files: the device tool returns a limited number); tune/JIT cache in a
# temporary directory.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$PWD" /work/main; fi
export QDSL_CACHE_DIR=${QDSL_CACHE_DIR:-$(mktemp -d)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
export QDSL_NCCL_LIB=$NCCL QDSL_COMM_TIMEOUT=60
Q=target/gpu/release/qdsl
RT=$(grep qdsl_runtime target/gpu/gpu-tests.txt); QL=$(grep -v qdsl_runtime target/gpu/gpu-tests.txt)
# The several-GPU tests need two GPUs and say so by failing: skipped on a one-GPU machine.
MULTI_SKIP=(); [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ] && MULTI_SKIP=(--skip multi_gpu_ --skip nccl_distributed_hops --skip device_peer_transport)
S=(); r() { local n=$1 t=$2; shift 2; local t0=$SECONDS; timeout "$t" "$@" >"$OUT/$n.log" 2>&1; S+=("$n: exit $? $((SECONDS-t0))s"); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
echo "nccl: $NCCL"
case ${STEP:-verify} in
verify)
  # The GPU tests only (--ignored), eight at a time: their time is mostly NVRTC on the
  # CPU cores (the whole runtime binary took 125 s this way on an H200, the qdsl binary
  # 51 s; one at a time they ran past 290 s and 110 s). The racecheck of every fused
  # chain (111 s on an H100) runs beside them.
  ( r race 300 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored every_chain_on_the_gpu --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/race.status" ) &
  r rt_tests 420 "$RT" --ignored --test-threads 8 "${MULTI_SKIP[@]}"
  r ql_tests 300 "$QL" --ignored --test-threads 8 "${MULTI_SKIP[@]}"
  wait; S+=("$(cat "$OUT/race.status")"); rm -f "$OUT/race.status"
  r memcheck 40 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel mobius_eo --lattice 4,4,4,4
  for p in f64 f32 fixed16; do r mobius_solve_$p 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision $p --tol 1e-10; done
  r grid_nccl 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,2
  r grid_nccl_asqtad 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
  r one_gpu 20 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10
  ;;
bench)
  r bench_mobius 200 "$Q" bench --sizes 32 --case mobius --reps 50 --json "$OUT/mobius.json"
  r bench_misc 120 "$Q" bench --sizes 32 --case "sources" --reps 50 --json "$OUT/sources.json"
  r bench_tc 90 "$Q" bench --sizes 32 --case block_dot --reps 20 --json "$OUT/block_dot.json"
  r bench_heatbath 60 "$Q" bench --sizes 16,32 --case heatbath --reps 5 --warmup 1 --json "$OUT/heatbath.json"
  r bench_hmc 60 "$Q" bench --sizes 16,32 --case hmc --reps 3 --warmup 1 --json "$OUT/hmc.json"
  r bench_grid 90 "$Q" bench --grid 1,1,1,2 --sizes 32 --reps 50
  r bench_grid_weak 90 "$Q" bench --grid 1,1,1,2 --sizes 32 --weak --reps 50
  ;;
round)
  # This round's merge on a 2-GPU machine in one call: every GPU test but the several-GPU
  # ones eight at a time, then those alone; the link-path tree against the staged plan and
  # the GPU pullback; two-GPU solves through peer copies and NCCL; the 2-GPU scaling table.
  MULTI="multi_gpu_ nccl_distributed_hops device_peer_transport"
  r rt_tests 300 "$RT" --ignored --test-threads 8 --skip multi_gpu_ --skip nccl_distributed_hops --skip device_peer_transport
  r ql_tests 200 "$QL" --ignored --test-threads 8
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P r grid_tests 150 "$RT" --ignored --test-threads 1 $MULTI
  grep -hE " via |NCCL version" "$OUT/grid_tests.log" | sort | uniq -c | head -6
  r bench_links 200 "$Q" bench --sizes 32 --case _links --reps 5 --warmup 1 --json "$OUT/links.json"
  r bench_pullback 60 "$Q" bench --sizes 32 --case pullback --reps 3 --warmup 1 --json "$OUT/pullback.json"
  for t in peer nccl; do
    QDSL_GRID_TRANSPORT=$t r grid_${t}_wilson 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRID_TRANSPORT=$t r grid_${t}_asqtad 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
  done
  r bench_grid_t2 120 "$Q" bench --grid 1,1,1,2 --reps 50 --warmup 10 --transports peer,nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/grid_t2.json"
  ;;
grid)
  G=$(nvidia-smi -L | wc -l)
  # Which path NCCL takes between the GPUs (P2P/direct pointer, P2P/CUMEM, SHM …).
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P r nccl_debug 30 "$RT" --include-ignored --test-threads 1 multi_gpu_nccl_ring
  grep -hE " via |NCCL version" "$OUT/nccl_debug.log" | sort | uniq -c | head -8
  r grid_tests 150 "$RT" --include-ignored --test-threads 1 multi_gpu_ device_peer_transport nccl_distributed_hops
  for t in peer nccl; do
    QDSL_GRID_TRANSPORT=$t r grid_${t}_wilson 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRID_TRANSPORT=$t r grid_${t}_asqtad 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
  done
  if [ "$G" -ge 4 ]; then
    r grid_peer_wilson4 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,2,2
    r grid_peer_clover4 25 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f32 --tol 1e-10 --grid 2,1,1,2
  fi
  W="--reps 50 --warmup 10 --transports peer,nccl"
  r bench_grid_t2 150 "$Q" bench --grid 1,1,1,2 $W --sizes 32 --strong-and-weak --json "$OUT/grid_t2.json"
  if [ "$G" -ge 4 ]; then
    r bench_grid_t4 150 "$Q" bench --grid 1,1,1,4 $W --sizes 32 --strong-and-weak --case "wilson_hop f32" --json "$OUT/grid_t4.json"
    r bench_grid_zt4 150 "$Q" bench --grid 1,1,2,2 $W --sizes 32 --strong-and-weak --case "f32" --json "$OUT/grid_zt4.json"
    r bench_grid_48 200 "$Q" bench --grid 1,1,2,2 $W --lattice 48,48,48,96 --case "wilson_hop f32" --json "$OUT/grid_48.json"
  else
    r bench_grid_48 200 "$Q" bench --grid 2,1,1,1 $W --lattice 48,48,48,96 --case "wilson_hop f32" --json "$OUT/grid_48.json"
  fi
  ;;
verify2)
  # A session's first call on a 2-GPU machine: the one-GPU tests on GPU 0 beside the qdsl
  # tests and the full `qdsl check` on GPU 1; then the several-GPU tests on both; then
  # memcheck of a small Möbius check.
  MULTI="--skip multi_gpu_ --skip nccl_distributed_hops --skip device_peer_transport"
  ( CUDA_VISIBLE_DEVICES=1 r ql_tests 200 "$QL" --ignored --test-threads 8
    CUDA_VISIBLE_DEVICES=1 r check 240 "$Q" check
    printf '%s\n' "${S[@]}" >"$OUT/gpu1.status" ) &
  CUDA_VISIBLE_DEVICES=0 r rt_tests 330 "$RT" --ignored --test-threads 8 $MULTI
  wait; S+=("$(cat "$OUT/gpu1.status")"); rm -f "$OUT/gpu1.status"
  r grid_tests 120 "$RT" --ignored --test-threads 1 --nocapture multi_gpu_ nccl_distributed_hops device_peer_transport
  CUDA_VISIBLE_DEVICES=0 r memcheck 40 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel mobius_eo --lattice 4,4,4,4
  grep -hE "compared|FAIL" "$OUT/check.log" | tail -6
  ;;
round_a)
  # A round's first call on a 4-GPU machine (on 2 GPUs the jobs of GPUs 2 and 3 share
  # GPUs 0 and 1): the one-GPU tests, the full `qdsl check`, racecheck and memcheck of
  # the M5⁻¹ chains (tensor-core modes included); then the several-GPU tests on all GPUs
  # and the Möbius solves on 1, 2 (and 4) GPUs.
  G=$(nvidia-smi -L | wc -l); gpu() { echo $(( $1 % G )); }
  MULTI="--skip multi_gpu_ --skip nccl_distributed_hops --skip device_peer_transport"
  ( CUDA_VISIBLE_DEVICES=$(gpu 1) r ql_tests 330 "$QL" --ignored --test-threads 8; printf '%s\n' "${S[@]}" >"$OUT/g1.status" ) &
  ( CUDA_VISIBLE_DEVICES=$(gpu 2) r check 400 "$Q" check; printf '%s\n' "${S[@]}" >"$OUT/g2.status" ) &
  ( export CUDA_VISIBLE_DEVICES=$(gpu 3)
    [ "$G" -lt 4 ] && sleep 200
    r race 110 compute-sanitizer --tool racecheck --error-exitcode 1 "$Q" check --kernel m5inv --lattice 4,4,4,4
    r memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel m5inv_m5pre --lattice 4,4,4,4
    printf '%s\n' "${S[@]}" >"$OUT/g3.status" ) &
  CUDA_VISIBLE_DEVICES=0 r rt_tests 330 "$RT" --ignored --test-threads 8 $MULTI
  wait; for g in 1 2 3; do S+=("$(cat "$OUT/g$g.status")"); rm -f "$OUT/g$g.status"; done
  r grid_tests 90 "$RT" --ignored --test-threads 1 --nocapture multi_gpu_ nccl_distributed_hops device_peer_transport
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10"
  r mobius_1 30 "$Q" $M
  GR="1,1,1,2 2,1,1,1"; [ "$G" -ge 4 ] && GR="$GR 1,1,2,2 1,1,1,4"
  for g in $GR; do r mobius_g$g 30 "$Q" $M --grid $g; done
  grep -hE "compared|FAIL" "$OUT/check.log" | tail -6
  for f in "$OUT"/mobius_*.log; do echo "== $f"; tail -3 "$f"; done
  ;;
round_b)
  # The second call, on the same machine right after: QUDA's link rows build in the
  # background while this round's bench rows run two GPUs at a time; then the 1 → 2 → 4
  # scaling (the hops and the extended-volume smearing) alone; then QUDA's rows.
  bash bench/quda_side_by_side.sh build >/dev/null 2>&1
  ( export CUDA_VISIBLE_DEVICES=0
    r blinks 150 "$Q" bench --sizes 32 --case "_links_staged f32" --reps 5 --warmup 1 --json "$OUT/links.json"
    r bpull 120 "$Q" bench --sizes 32 --case "_pullback" --reps 3 --warmup 1 --json "$OUT/pullback.json"
    printf '%s\n' "${S[@]}" >"$OUT/g0.status" ) &
  export CUDA_VISIBLE_DEVICES=1
  r btc 240 "$Q" bench --sizes 32 --case "recon12 ls1" --reps 20 --json "$OUT/mobius_tc.json"
  wait; S+=("$(cat "$OUT/g0.status")"); rm -f "$OUT/g0.status"
  unset CUDA_VISIBLE_DEVICES
  bash target/quda-anchor/poll.sh 200 >/dev/null 2>&1
  G=$(nvidia-smi -L | wc -l); GRIDS="--grid 1,1,1,2"; [ "$G" -ge 4 ] && GRIDS="$GRIDS --grid 1,1,1,4 --grid 1,1,2,2"
  r scaling 150 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r gsmear 60 "$Q" bench $GRIDS --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  CUDA_VISIBLE_DEVICES=0 POLL_S=30 TMO=60 QUDA_ROWS=links r quda 150 bash bench/quda_side_by_side.sh bench
  for f in "$OUT"/b*.log "$OUT"/scaling.log "$OUT"/gsmear.log "$OUT"/quda.log; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$f" | tail -40; done
  ;;
round_c)
  # The round's last call on 2 GPUs: the fixed tests and check rows on GPU 1 beside the
  # link-path, pullback and tensor-core bench rows on GPU 0; then the 2-GPU tests and the
  # 1 → 2 scaling of the hops and of the extended-volume smearing.
  ( export CUDA_VISIBLE_DEVICES=1
    r ql_fix 240 "$QL" --ignored --test-threads 4 mobius_check_rows_pass mobius_bench_rows_run check_rows_of_the_smearing_specs_pass
    r check_m5 120 "$Q" check --kernel m5inv
    r check_eo 90 "$Q" check --kernel mobius_eo
    r check_pull 60 "$Q" check --kernel pullback
    printf '%s\n' "${S[@]}" >"$OUT/g1.status" ) &
  export CUDA_VISIBLE_DEVICES=0
  r blinks 100 "$Q" bench --sizes 32 --case "_links_staged f32" --reps 5 --warmup 1 --json "$OUT/links.json"
  r bpull 80 "$Q" bench --sizes 32 --case "_pullback" --reps 3 --warmup 1 --json "$OUT/pullback.json"
  r btc 150 "$Q" bench --sizes 32 --case "f32 recon12 ls1" --reps 20 --json "$OUT/mobius_tc.json"
  wait; S+=("$(cat "$OUT/g1.status")"); rm -f "$OUT/g1.status"
  unset CUDA_VISIBLE_DEVICES
  r grid_fix 100 "$QL" --ignored --test-threads 1 --nocapture multi_gpu_
  r peer_rerun 60 "$RT" --ignored --test-threads 1 device_peer_transport
  r scaling 110 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r gsmear 50 "$Q" bench --grid 1,1,1,2 --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  grep -hE "compared|FAIL" "$OUT"/check_*.log | tail -8
  grep -hE "^test result|FAILED|panicked" "$OUT"/ql_fix.log "$OUT"/grid_fix.log "$OUT"/peer_rerun.log | head -12
  for f in "$OUT"/b*.log "$OUT"/scaling.log "$OUT"/gsmear.log; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$f" | tail -30; done
  ;;
links_a)
  # Issue 18 on one GPU, first call: QUDA's link rows build in the background (niced, so
  # the tests' NVRTC keeps the cores) while the smearing, gauge-generation and RHMC GPU
  # tests and the smearing/pull-back/force checks run; then the first-call JIT of the
  # staged smearings and of the HISQ force on empty caches (links_b runs QUDA's rows
  # right after).
  TARGETS="llfat_test gauge_path_test hisq_paths_force_test" nice -n 19 bash bench/quda_side_by_side.sh build >/dev/null 2>&1
  r rt_smear 240 "$RT" --ignored --test-threads 8 smear:: generate:: rhmc::
  r ql_smear 150 "$QL" --ignored --test-threads 4 smear pullback force
  QDSL_CACHE_DIR=$(mktemp -d) r bjit 60 "$Q" bench --sizes 32 --case "_links_staged f32 recon18" --reps 3 --warmup 1 --json "$OUT/jit.json"
  QDSL_CACHE_DIR=$(mktemp -d) r bjit_force 40 "$Q" bench --sizes 32 --case "hisq_pullback f32" --reps 2 --warmup 1
  grep -hE "^test result|FAILED|panicked|^test .* FAILED" "$OUT"/rt_smear.log "$OUT"/ql_smear.log | head -20
  for f in "$OUT"/bjit*.log; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$f" | tail -12; done
  ;;
links_b)
  # Right after links_a on the same machine: QUDA's link rows once its build is done
  # (10 iterations: its first call tunes), then qdsl's link rows (tree and staged, f32
  # and f64) and pull-backs on the warm caches.
  POLL_S=300 TMO=150 QUDA_NITER=10 QUDA_ROWS=links r quda 400 bash bench/quda_side_by_side.sh bench
  cat "$OUT/quda.log"
  r blinks 150 "$Q" bench --sizes 32 --case "_links" --reps 5 --warmup 1 --json "$OUT/links.json"
  r bpull 70 "$Q" bench --sizes 32 --case "_pullback" --reps 3 --warmup 1 --json "$OUT/pullback.json"
  for f in "$OUT"/b*.log; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$f" | tail -24; done
  ;;
jit_a)
  # One GPU, first call: QUDA's HISQ force test builds in the background (niced) while
  # the JIT, Möbius and distributed-Möbius GPU tests and a one-GPU Möbius solve run; the
  # call ends when QUDA's build does, so that jit_b (right after, same machine) times it.
  TARGETS="hisq_paths_force_test" nice -n 19 bash bench/quda_side_by_side.sh build >/dev/null 2>&1
  r rt_jit 300 "$RT" --include-ignored --test-threads 8 jit:: mobius distributed_mobius
  r ql_mobius 200 "$QL" --ignored --test-threads 4 mobius_grid app::mobius::
  r mobius_1 30 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10
  bash target/quda-anchor/poll.sh 380 >"$OUT/quda-poll.log" 2>&1
  grep -hE "^test result|FAILED|panicked" "$OUT"/rt_jit.log "$OUT"/ql_mobius.log | head -12
  tail -4 "$OUT/mobius_1.log"; tail -3 "$OUT/quda-poll.log"
  ;;
jit_b)
  # Right after jit_a: QUDA's HISQ force kernels at 16⁴ and 32⁴ (tuned in the call; the
  # kernels' times from the profile), then qdsl's HISQ and asqtad pull-backs at both sizes.
  TARGETS="hisq_paths_force_test" POLL_S=30 HFORCE_TMO=120 HFORCE_DIM=16 QUDA_ROWS=hforce r quda16 150 bash bench/quda_side_by_side.sh bench
  cp "$OUT/quda/hforce.log" "$OUT/quda_hforce16.log" 2>/dev/null; cp "$OUT/quda/profile_hforce.tsv" "$OUT/profile_hforce16.tsv" 2>/dev/null; rm -f "$OUT/quda/hforce.log"
  TARGETS="hisq_paths_force_test" POLL_S=30 HFORCE_TMO=330 HFORCE_DIM=32 QUDA_ROWS=hforce r quda32 340 bash bench/quda_side_by_side.sh bench
  r bpull 90 "$Q" bench --sizes 16,32 --case "_pullback f32" --reps 3 --warmup 1 --json "$OUT/pullback.json"
  grep -hE "time:|Staples|LongLink|Completion|rc=" "$OUT"/quda_hforce16.log "$OUT"/quda/hforce.log
  for f in "$OUT"/profile_hforce16.tsv "$OUT"/quda/profile_hforce.tsv; do echo "== $f"; head -40 "$f"; done
  grep -vE "^qdsl bench:|^$" "$OUT/bpull.log" | tail -12
  ;;
grid_jit)
  # Two GPUs: the several-GPU tests, the decomposed Möbius solve on an empty JIT cache
  # (trace) then a warm one, on both grids, against one GPU; then the 1 → 2 scaling and
  # the extended-volume smearing again (the staggered weak-overlap row of 2026-11-28 (a)).
  r grid_tests 150 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  r ql_grid 120 "$QL" --ignored --test-threads 1 multi_gpu_
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10"
  COLD=$(mktemp -d)
  QDSL_CACHE_DIR=$COLD QDSL_JIT_TRACE=1 r mobius_cold 60 "$Q" $M --grid 1,1,1,2
  QDSL_CACHE_DIR=$COLD r mobius_warm 30 "$Q" $M --grid 1,1,1,2
  QDSL_CACHE_DIR=$(mktemp -d) r mobius_cold_x 60 "$Q" $M --grid 2,1,1,1
  QDSL_CACHE_DIR=$(mktemp -d) QDSL_JIT_TRACE=1 r mobius_one_cold 30 "$Q" $M
  QDSL_CACHE_DIR=$COLD r mobius_one 30 "$Q" $M
  QDSL_CACHE_DIR=$(mktemp -d) QDSL_JIT_TRACE=1 r bjit_force 60 "$Q" bench --sizes 32 --case "hisq_pullback f32" --reps 2 --warmup 1
  r scaling 150 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log "$OUT"/ql_grid.log | head -12
  for f in "$OUT"/mobius_*.log; do echo "== $f"; grep -E "result|iterations|residual|time" "$f"; done
  for f in mobius_cold mobius_one_cold bjit_force; do echo "$f: $(grep -c "qdsl-trace.*nvrtc" "$OUT/$f.log") NVRTC compiles, the last ending at $(grep "qdsl-trace.*nvrtc" "$OUT/$f.log" | awk '{print $2+$5}' | sort -n | tail -1) ms"; done
  grep -vE "^qdsl bench:|^$|qdsl-trace" "$OUT/bjit_force.log" | tail -4
  grep -vE "^qdsl bench:|^$" "$OUT/scaling.log" | tail -30
  ;;
mobius_scaling)
  # Two GPUs: the whole Möbius M̂ distributed (t cut, then x cut) against one GPU's
  # fused M̂, strong at 32⁴ and weak at 32⁴ per GPU; the several-GPU tests again.
  r bmobius_grid 200 "$Q" bench --grid 1,1,1,1 --grid 1,1,1,2 --grid 2,1,1,1 --mobius --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/mobius_scaling.json"
  QDSL_TUNE=launch r bmobius_grid_tuned 200 "$Q" bench --grid 1,1,1,1 --grid 1,1,1,2 --mobius --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/mobius_scaling_tuned.json"
  for f in bmobius_grid bmobius_grid_tuned; do grep -vE "^$|^qdsl bench:" "$OUT/$f.log" | tail -10; done
  ;;
fused_grid)
  # Two GPUs: the distributed Möbius M̂ as QUDA's fused chains over the interior and
  # exterior boxes — against one GPU (ranks on GPU 0, host faces; then NCCL on both),
  # racecheck and memcheck of the box launches, the decomposed solves, and the scaling.
  r rt_mobius 200 "$RT" --ignored --test-threads 2 distributed_mobius_equals every_chain_on_the_gpu
  r grid_tests 150 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  r ql_grid 120 "$QL" --ignored --test-threads 1 multi_gpu_
  r race 200 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored --test-threads 1 distributed_mobius_equals
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10"
  for g in 1,1,1,2 2,1,1,1; do r mobius_g$g 40 "$Q" $M --grid $g; done
  r mobius_one 30 "$Q" $M
  r bmobius_grid 200 "$Q" bench --grid 1,1,1,1 --grid 1,1,1,2 --grid 2,1,1,1 --mobius --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/mobius_scaling.json"
  grep -hE "^test result|FAILED|panicked" "$OUT"/rt_mobius.log "$OUT"/grid_tests.log "$OUT"/ql_grid.log | head -12
  grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|hazard" "$OUT"/race.log | head -5
  for f in "$OUT"/mobius_*.log; do echo "== $f"; grep -E "result|iterations|residual|time" "$f"; done
  grep -vE "^$|^qdsl bench:" "$OUT/bmobius_grid.log" | tail -10
  ;;
final_a)
  # The last round's first call, on a 4-GPU machine: QUDA builds in the background (for
  # final_b's side-by-side rows) while every one-GPU test runs on GPU 0 (eight at a time)
  # beside the racecheck of every fused chain; then the several-GPU tests on all GPUs; then
  # QUDA's Möbius rows once its build is done.
  bash bench/quda_side_by_side.sh build >/dev/null 2>&1
  MULTI="--skip multi_gpu_ --skip nccl_distributed_hops --skip device_peer_transport"
  ( CUDA_VISIBLE_DEVICES=0 r race 300 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored every_chain_on_the_gpu --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/race.status" ) &
  CUDA_VISIBLE_DEVICES=0 r rt_tests 300 "$RT" --ignored --test-threads 8 $MULTI
  CUDA_VISIBLE_DEVICES=0 r ql_tests 200 "$QL" --ignored --test-threads 8
  wait; S+=("$(cat "$OUT/race.status")"); rm -f "$OUT/race.status"
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  POLL_S=200 TMO=60 QUDA_ROWS=${QUDA_ROWS:-mobius} r quda 330 bash bench/quda_side_by_side.sh bench
  ;;
final_b)
  # The second call, on the same machine right after: qdsl's rows beside QUDA's (Möbius at
  # 32⁴ and 24⁴, Ls 12 and 16), this round's link paths, forces, tensor-core and coarse
  # rows, multi-RHS, the plaquette references, and the 1 → 2 → 4 GPU scaling.
  export CUDA_VISIBLE_DEVICES=0
  r bm32 150 "$Q" bench --sizes 32 --case "recon12 ls12" --reps 30 --json "$OUT/mobius32.json"
  r bm24 90 "$Q" bench --sizes 24 --case "recon12 ls12" --reps 30 --json "$OUT/mobius24.json"
  for k in mobius_dslash4 mobius_eo; do r bm16_$k 60 "$Q" bench --sizes 32 --case "$k f32 recon12 ls16" --reps 30; r bm16h_$k 60 "$Q" bench --sizes 32 --case "$k fixed16 recon12 ls16" --reps 30; done
  r bsrc 60 "$Q" bench --sizes 32 --case "wilson_hop f32 recon12 sources" --reps 30
  r blinks 120 "$Q" bench --sizes 32 --case "_links" --reps 5 --warmup 1 --json "$OUT/links.json"
  r bforce 90 "$Q" bench --sizes 32 --case "_pullback" --reps 3 --warmup 1
  r bcoarse 120 "$Q" bench --sizes 16 --case "coarse_" --reps 3 --warmup 1
  r baxpy 90 "$Q" bench --sizes 32 --case "block_axpy" --reps 10 --warmup 2
  r plaq 120 "$Q" --backend cuda generate-reference
  r checks 200 "$Q" check --kernel coarse_
  r checks2 120 "$Q" check --kernel pullback
  unset CUDA_VISIBLE_DEVICES
  r scaling 200 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "wilson_hop f32" --json "$OUT/scaling.json"
  for f in "$OUT"/b*.log "$OUT"/plaq.log; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$f" | tail -30; done
  grep -hE "compared|FAIL|fail" "$OUT"/checks*.log | tail -8
  ;;
x4_a)
  # A 4-GPU machine, first call: how the GPUs are linked (peer access, copy times, NCCL's
  # path); issue 18's GPU checks on the final build, one GPU each (the smearing,
  # generation and RHMC tests, the full `qdsl check`, memcheck, the link rows); then the
  # several-GPU tests on all four, decomposed Möbius solves on 4 GPUs, and the asqtad CG at
  # 48³×96 (lat.sample.l8 tiled 6,6,6,12) on one GPU and on 4.
  nvidia-smi topo -m >"$OUT/topo.txt" 2>&1; cat "$OUT/topo.txt"
  r p2p 60 python3 bench/harness/p2p_probe.py; cat "$OUT/p2p.log"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P r nccl_debug 40 "$RT" --include-ignored --test-threads 1 multi_gpu_nccl_ring
  grep -hE " via |NCCL version|P2P|SHM" "$OUT/nccl_debug.log" | sort | uniq -c | head -12
  ( CUDA_VISIBLE_DEVICES=0 r rt_smear 240 "$RT" --ignored --test-threads 8 smear:: generate:: rhmc::
    CUDA_VISIBLE_DEVICES=0 r memcheck 40 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel mobius_eo --lattice 4,4,4,4
    printf '%s\n' "${S[@]}" >"$OUT/g0.status" ) &
  ( CUDA_VISIBLE_DEVICES=1 r check 290 "$Q" check; printf '%s\n' "${S[@]}" >"$OUT/g1.status" ) &
  ( CUDA_VISIBLE_DEVICES=2 r blinks 150 "$Q" bench --sizes 32 --case "_links" --reps 5 --warmup 1 --json "$OUT/links.json"; printf '%s\n' "${S[@]}" >"$OUT/g2.status" ) &
  CUDA_VISIBLE_DEVICES=3 r ql_smear 200 "$QL" --ignored --test-threads 4 smear pullback force
  wait; for g in 0 1 2; do S+=("$(cat "$OUT/g$g.status")"); rm -f "$OUT/g$g.status"; done
  r grid_tests 100 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  r ql_grid 60 "$QL" --ignored --test-threads 1 multi_gpu_
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10"
  for g in 1,1,2,2 1,1,1,4; do r mobius_g$g 30 "$Q" $M --grid $g; done
  A="--backend cuda solve tests/data/milc/lat.sample.l8 --tile 6,6,6,12 --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10"
  r cg48_one 60 "$Q" $A
  r cg48_g1,1,2,2 60 "$Q" $A --grid 1,1,2,2
  r cg48_g1,1,1,4 60 "$Q" $A --grid 1,1,1,4
  grep -hE "^test result|FAILED|panicked" "$OUT"/rt_smear.log "$OUT"/ql_smear.log "$OUT"/ql_grid.log | head -12
  grep -hE "compared|FAIL" "$OUT/check.log" | tail -6
  grep -vE "^qdsl bench:|^$" "$OUT/blinks.log" | tail -24
  for f in "$OUT"/mobius_g*.log "$OUT"/cg48_*.log; do echo "== $f"; grep -vE "^\s*$" "$f" | tail -12; done
  ;;
x4_b)
  # Right after x4_a on the same machine: 1 → 2 → 4 GPU scaling (t cut, z·t cut; strong at
  # 32⁴ and 48³×96, weak at 32⁴ per GPU) of the hops and M̂s, the distributed Möbius M̂,
  # and the extended-volume smearing.
  GRIDS="--grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2"
  r scaling 200 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r scaling_48 90 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "f32" --json "$OUT/scaling_48.json"
  r bmobius_grid 150 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --mobius --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/mobius_scaling.json"
  r gsmear 60 "$Q" bench $GRIDS --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  for f in scaling scaling_48 bmobius_grid gsmear; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -40; done
  ;;
x4_c)
  # A 4-GPU machine, this session's last call: the RHMC statistics test that x4_a cut and
  # the one-GPU Wilson CG (CGNR) at 48³×96 beside each other; then on all four GPUs the same CG
  # on 1,1,1,4, the GPU timeline of the Wilson hop's overlapped application (32⁴, 1 → 2
  # → 4 GPUs, strong and weak), the 48³×96 strong scaling, the distributed
  # Wilson-clover M̂, and the extended-volume smearing on 2 and 4 GPUs.
  A="--backend cuda solve tests/data/milc/lat.sample.l8 --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10"
  ( CUDA_VISIBLE_DEVICES=0 r rt_rhmc 150 "$RT" --ignored --test-threads 1 exp_minus_delta_h; printf '%s\n' "${S[@]}" >"$OUT/g0.status" ) &
  ( CUDA_VISIBLE_DEVICES=2 r rt_mobius 150 "$RT" --ignored --test-threads 8 mobius distributed_mobius; printf '%s\n' "${S[@]}" >"$OUT/g2.status" ) &
  ( CUDA_VISIBLE_DEVICES=3 r ql_solve 150 "$QL" --ignored --test-threads 4 mobius solve; printf '%s\n' "${S[@]}" >"$OUT/g3.status" ) &
  CUDA_VISIBLE_DEVICES=1 r cg48_one 90 "$Q" $A
  wait; for g in 0 2 3; do S+=("$(cat "$OUT/g$g.status")"); rm -f "$OUT/g$g.status"; done
  r cg48_g1,1,1,4 80 "$Q" $A --grid 1,1,1,4
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10"
  r mobius_g1,1,1,4 30 "$Q" $M --grid 1,1,1,4
  r mobius_one 20 "$Q" $M
  GRIDS="--grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2"
  r timeline 50 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "wilson_hop f32 half-faces" --json "$OUT/timeline.json"
  r clover_grid 70 "$Q" bench $GRIDS --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_scaling.json"
  r scaling_48 100 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "wilson_hop f32 half-faces" --json "$OUT/scaling_48.json"
  r gsmear 75 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  grep -hE "^test result|FAILED|panicked" "$OUT/rt_rhmc.log" "$OUT/rt_mobius.log" "$OUT/ql_solve.log" | head -12
  for f in "$OUT"/cg48_*.log "$OUT"/mobius_*.log; do echo "== $f"; grep -vE "^\s*$" "$f" | tail -9; done
  for f in timeline clover_grid scaling_48 gsmear; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -24; done
  ;;
x4_d)
  # After x4_c found the distributed clover M̂'s site-local kernels launched as sub-box
  # kernels without a box: the fix's GPU test (against one GPU, plain and twisted), the
  # decomposed Möbius solves' test on all GPUs, decomposed clover solves on 2 and 4 GPUs
  # against one, and the distributed clover M̂'s scaling.
  r rt_clover 100 "$RT" --ignored --test-threads 2 distributed_clover distributed_wilson_cg
  r ql_grid 45 "$QL" --ignored --test-threads 1 multi_gpu_
  C="--backend cuda solve tests/data/milc/lat.sample.l8 --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f32 --tol 1e-10"
  r clover_one 30 "$Q" $C
  for g in 1,1,1,2 1,1,2,2; do r clover_g$g 30 "$Q" $C --grid $g; done
  r clover_grid 80 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_scaling.json"
  grep -hE "^test |^test result|FAILED|panicked" "$OUT/rt_clover.log" "$OUT/ql_grid.log" | head -12
  for f in "$OUT"/clover_*.log; do echo "== $f"; grep -E "ranks|result|iterations|residual|solve " "$f"; done
  grep -vE "^qdsl bench:|^$" "$OUT/clover_grid.log" | tail -12
  ;;
s32_a)
  # Issue 19 on one GPU: the device Möbius solve with the tensor-core M5⁻¹ (its GPU test and
  # the CLI's --m5inv against the sweep on MILC's 8⁴ sample), then the Möbius rows (the
  # tensor-core M5⁻¹ inside the fused M̂ against the sweep, Ls 12 and 16) and block axpy.
  r ql_m5inv 120 "$QL" --ignored --test-threads 2 mobius_device
  M="--backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --tol 1e-10"
  for p in f32 fixed16; do for m in sweep mma_f16 mma_bf16; do r m5inv_${p}_$m 30 "$Q" $M --precision $p --m5inv $m; done; done
  r bench_mobius 240 "$Q" bench --sizes 32 --case mobius --reps 50 --json "$OUT/mobius.json"
  r bench_axpy 90 "$Q" bench --sizes 32 --case block_axpy --reps 20 --json "$OUT/block_axpy.json"
  grep -hE "^test |^test result|FAILED|panicked|differs|iterations \(" "$OUT/ql_m5inv.log" | head -20
  for f in "$OUT"/m5inv_*.log; do echo "== $f"; grep -E "result|iterations|residual|time " "$f"; done
  grep -hE "mobius_eo|m5inv|block_axpy" "$OUT/bench_mobius.log" "$OUT/bench_axpy.log" | head -80
  ;;
s32_b)
  # The device coarse construction's rows at 16⁴ and 24⁴, and ncu's per-kernel summary of
  # the links stage at 16⁴ (where its time goes).
  r bench_coarse 200 "$Q" bench --sizes 16,24 --case coarse --reps 3 --warmup 1 --json "$OUT/coarse.json"
  r ncu_coarse 200 ncu --print-summary per-kernel --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed "$Q" bench --sizes 16 --case coarse_links_f64 --reps 1 --warmup 0
  grep -hE "coarse" "$OUT/bench_coarse.log" | head -20
  grep -hE "coarse_|gpu__time|throughput|block_dot|reduce|Kernel|\(" "$OUT/ncu_coarse.log" | head -60
  ;;
s32_c)
  # After s32_a/b: the tensor-core M5⁻¹ without per-element divisions, the coarse
  # construction's tile buffers kept between targets and calls. Racecheck of every fused
  # chain beside the tests that cover the changes, then the Möbius Ls-12 rows (sweep,
  # dense SIMT and tensor-core M5⁻¹) and the coarse rows.
  ( r race 240 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored every_chain_on_the_gpu --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/race.status" ) &
  r rt_tests 200 "$RT" --ignored --test-threads 4 multigrid::device every_chain_on_the_gpu
  r ql_tests 200 "$QL" --ignored --test-threads 4 mobius_check_rows mobius_device
  wait; S+=("$(cat "$OUT/race.status")"); rm -f "$OUT/race.status"
  r bench_mobius 200 "$Q" bench --sizes 32 --case "ls12" --reps 50 --json "$OUT/mobius.json"
  r bench_coarse16 90 "$Q" bench --sizes 16 --case coarse_ --reps 3 --warmup 1 --json "$OUT/coarse16.json"
  r bench_coarse24 90 "$Q" bench --sizes 24 --case coarse_links --reps 3 --warmup 1 --json "$OUT/coarse24.json"
  grep -hE "^test result|FAILED|panicked" "$OUT/rt_tests.log" "$OUT/ql_tests.log" | head -12
  grep -hE "^qdsl bench: (mobius|coarse)" "$OUT"/bench_*.log | head -60
  ;;
s32_d)
  # The f32 SIMT block BLAS (new mode of mma_tile!) on the GPU: its tests beside the other
  # modes', the check rows, its bench rows; the coarse construction with its buffers kept
  # and the gathers' rows coalesced (tests, then rows at 16⁴ and 24⁴).
  r rt_tests 150 "$RT" --ignored --test-threads 8 block_blas multigrid::device
  r check_blas 60 "$Q" check --kernel block_
  r bench_simt 70 "$Q" bench --sizes 32 --case f32_simt --reps 20 --json "$OUT/simt.json"
  r bench_coarse16 70 "$Q" bench --sizes 16 --case coarse_ --reps 3 --warmup 1 --json "$OUT/coarse16.json"
  r bench_coarse24 50 "$Q" bench --sizes 24 --case coarse_links --reps 3 --warmup 1 --json "$OUT/coarse24.json"
  grep -hE "^test |^test result|FAILED|panicked" "$OUT/rt_tests.log" | head -30
  grep -hE "block_|compared|failed" "$OUT/check_blas.log" | tail -30
  grep -hE "^qdsl bench: " "$OUT"/bench_*.log | head -40
  ;;
s32_e)
  # s32_d found the gathers' l-fastest thread order slower (V read strided): back to
  # column-fastest, with the buffers kept. The coarse tests and the 16⁴ rows again.
  r rt_tests 60 "$RT" --ignored --test-threads 4 multigrid::device
  r bench_coarse16 70 "$Q" bench --sizes 16 --case coarse_ --reps 3 --warmup 1 --json "$OUT/coarse16.json"
  grep -hE "^test result|FAILED|panicked" "$OUT/rt_tests.log" | head -5
  grep -hE "^qdsl bench: " "$OUT"/bench_*.log | head -10
  ;;
s33_a)
  # Issue 20 on one GPU: MSPCG's preconditioner on the device (the blocks stacked along t,
  # one launch for all). Its GPU tests (device against host preconditioner, device
  # solves) beside a quenched β 6.0 Wilson heat-bath ensemble generated on the GPU (16⁴,
  # 300 + 200 updates of 1 HB + 4 OR), then the study on it: plain CG on M̂†M̂ against
  # MSPCG with 3, 4, 6, 12 inner iterations, with and without the snake terms (Ls 12,
  # b5 1.5, c5 0.5, M5 1.8, m_f 0.001, outer f64–f32, inner f32, tolerance 1e-8).
  E=/tmp/ens16; X=target/gpu/release/examples/mspcg_study
  ( r rt_mspcg 240 "$RT" --ignored --test-threads 2 mspcg:: site_map; r ql_mspcg 200 "$QL" --ignored --test-threads 1 mobius_mspcg; printf '%s\n' "${S[@]}" >"$OUT/tests.status" ) &
  r gen16 150 "$Q" --backend cuda generate --action wilson --beta 6.0 --lattice 16,16,16,16 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026 --save $E
  C=$(ls $E/cfg_*.lime | tail -1); echo "config $C"
  r study16_1122 240 $X "$C" 0.001 1,1,2,2 1e-8 3,4,6,12 backend=cuda precision=f32
  wait; S+=("$(cat "$OUT/tests.status")"); rm -f "$OUT/tests.status"
  r study16_2222 150 $X "$C" 0.001 2,2,2,2 1e-8 6 backend=cuda precision=f32
  grep -hE "^test |^test result|FAILED|panicked|against|outer iterations|plain CG" "$OUT/rt_mspcg.log" "$OUT/ql_mspcg.log" | head -40
  grep -hE "plaquette|wrote|cfg_" "$OUT/gen16.log" | tail -5
  cat "$OUT"/study16_*.log
  ;;
s33_b)
  # s33_a: every outer f64–f32 solve on the 16⁴ ensemble, plain CG included, ended
  # "stagnated" near 1e-4..1e-6. CGNR through qdsl solve in f64 and f32 on the same
  # configuration, the study with the outer iteration in f64 (the CPU study's setting),
  # then a 24⁴ ensemble and its plain CG and MSPCG (6 inner, blocks 1,1,2,2 and 2,2,2,2).
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  C=/tmp/ens16/cfg_000500.lime
  M="--backend cuda solve $C --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --solver cgnr --tol 1e-8 --max-iter 20000"
  for p in f64 f32; do r cgnr16_$p 60 "$Q" $M --precision $p; done
  r study16_f64 200 $X "$C" 0.001 1,1,2,2 1e-8 3,4,6,12 backend=cuda precision=f64
  r gen24 90 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  C=/tmp/ens24/cfg_000500.lime
  r study24_1122 150 $X "$C" 0.001 1,1,2,2 1e-8 6 backend=cuda precision=f64
  r study24_2222 150 $X "$C" 0.001 2,2,2,2 1e-8 6 backend=cuda precision=f64
  for f in "$OUT"/cgnr16_*.log; do echo "== $f"; grep -E "result|iterations|residual|time " "$f"; done
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s33_c)
  # s33_b: pure f64 CGNR stagnated at the same iteration (121) as f32, so the stall
  # watchdog, not precision, stopped it: CG on M̂†M̂ plateaus. The driver now counts a
  # check as stalled only when the iterated residual ran ahead of the true one. The
  # device solver tests beside the 16⁴ study again: CGNR in f64 and f32, plain CG
  # against MSPCG (outer f64, inner f32), and the issue's formats (outer f64–f32, inner
  # fixed16 with the tensor-core M5⁻¹).
  X=target/gpu/release/examples/mspcg_study
  ( r rt_solver 300 "$RT" --ignored --test-threads 4 solver::; r ql_mobius 200 "$QL" --ignored --test-threads 2 mobius_device mobius_mspcg; printf '%s\n' "${S[@]}" >"$OUT/tests.status" ) &
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  C=/tmp/ens16/cfg_000500.lime
  M="--backend cuda solve $C --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --solver cgnr --tol 1e-8 --max-iter 20000"
  for p in f64 f32; do r cgnr16_$p 60 "$Q" $M --precision $p; done
  r study16_f64 300 $X "$C" 0.001 1,1,2,2 1e-8 3,4,6,12 backend=cuda precision=f64
  r study16_issue 120 $X "$C" 0.001 1,1,2,2 1e-8 6 backend=cuda precision=f32 inner_precision=fixed16 m5inv=mma_f16
  wait; S+=("$(cat "$OUT/tests.status")"); rm -f "$OUT/tests.status"
  grep -hE "^test result|FAILED|panicked" "$OUT/rt_solver.log" "$OUT/ql_mobius.log" | head
  for f in "$OUT"/cgnr16_*.log; do echo "== $f"; grep -E "result|iterations|residual|time " "$f"; done
  cat "$OUT"/study*.log
  ;;
s33_d)
  # Every GPU test on the driver's new stall rule (eight at a time), then the study's
  # larger blocks: 16⁴ with blocks 1,1,1,2, and a 24⁴ ensemble with blocks 1,1,2,2
  # (3, 6, 12 inner) and 2,2,2,2 (6 inner), snake terms on, outer f64, inner f32.
  X=target/gpu/release/examples/mspcg_study
  r rt_tests 300 "$RT" --ignored --test-threads 8
  r ql_tests 200 "$QL" --ignored --test-threads 8
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  r study16_1112 60 $X /tmp/ens16/cfg_000500.lime 0.001 1,1,1,2 1e-8 6 backend=cuda precision=f64 snake=yes
  r gen24 60 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_1122 200 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 3,6,12 backend=cuda precision=f64 snake=yes
  r study24_2222 120 $X /tmp/ens24/cfg_000500.lime 0.001 2,2,2,2 1e-8 6 backend=cuda precision=f64 snake=yes
  grep -hE "^test result|FAILED|panicked" "$OUT/rt_tests.log" "$OUT/ql_tests.log" | head
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s33_e)
  # s33_d ran out of time in the 24⁴ study after its plain CG (6362 iterations): the
  # MSPCG rows alone (plain=no), 6 inner, snake terms on, blocks 1,1,2,2 and 2,2,2,2.
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_1122 140 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 6 backend=cuda precision=f64 snake=yes plain=no
  r study24_2222 140 $X /tmp/ens24/cfg_000500.lime 0.001 2,2,2,2 1e-8 6 backend=cuda precision=f64 snake=yes plain=no
  cat "$OUT"/study*.log
  ;;
s34_a)
  # The first call of stop 34: what stop 33 left unrun on its final HEAD. Memcheck of the
  # MSPCG device preconditioner (gather, scatter and mask kernels, the stacked M̂) beside
  # the check of every Möbius and block-BLAS row; then, alone on the GPU, the Ls-16 Möbius
  # rows with the tensor-core M5⁻¹ (issue 19) and the 24⁴ Ls-12 rows.
  ( r memcheck_mspcg 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored the_gpu_preconditioner_is_the_hosts --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/mem.status" ) &
  r check_mobius 240 "$Q" check --kernel mobius
  r check_blas 60 "$Q" check --kernel block_
  wait; S+=("$(cat "$OUT/mem.status")"); rm -f "$OUT/mem.status"
  r bench_ls16 200 "$Q" bench --sizes 32 --case ls16 --reps 30 --json "$OUT/ls16.json"
  grep -hE "ERROR SUMMARY|^test result|FAILED|panicked" "$OUT/memcheck_mspcg.log" | head -5
  grep -hE "compared|failed|FAIL" "$OUT"/check_*.log | tail -12
  grep -hE "^qdsl bench: " "$OUT"/bench_*.log | head -60
  ;;
s34_b)
  # s34_a's Ls-16 rows stopped at the call's limit after the f32 ones: the fixed16 rows
  # alone. Then the 24⁴ MSPCG rows that s33_d/e left out (3, 4 and 12 inner iterations,
  # blocks 1,1,2,2, snake terms, outer f64, inner f32; 6 inner and CG are in 2026-11-29 b).
  X=target/gpu/release/examples/mspcg_study
  r bench_ls16_fixed16 150 "$Q" bench --sizes 32 --case "fixed16 recon12 ls16" --reps 30 --json "$OUT/ls16_fixed16.json"
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_k3_12 300 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 3,12,4 backend=cuda precision=f64 snake=yes plain=no
  grep -hE "^qdsl bench: " "$OUT"/bench_*.log | head -20
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s34_c)
  # s34_b: 3 inner iterations at 24⁴ took 10789 outer iterations (CG: 6362, 6 inner:
  # 2083). The outer PCG's Polak–Ribière β is no longer clamped at 0 (the clamp drops
  # the A-orthogonality to the previous direction whenever β < 0). The 24⁴ rows again:
  # 6, 3 and 12 inner iterations, blocks 1,1,2,2, snake terms, outer f64, inner f32.
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_k6_3_12 420 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 6,3,12 backend=cuda precision=f64 snake=yes plain=no
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s34_d)
  # s34_c: the clamp changed nothing (2083, 10789 again; 12 inner: 1919). The last row of
  # the 24⁴ table: 4 inner iterations.
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_k4 150 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 4 backend=cuda precision=f64 snake=yes plain=no
  cat "$OUT"/study*.log
  ;;
s35_a)
  # Stop 35, the walking hop (slices=walk): its GPU test (bit for bit against one-source
  # launches, both tile heights, tuned) under racecheck (shared memory, cp.async,
  # barriers) and memcheck, beside `qdsl check --kernel wilson_hop` (the walk against the
  # CPU reference with every other variant); then the bench rows: the walking hop on
  # Ls = 4 … 16 slices beside the rows x slices Möbius hop, 32⁴ and 24⁴.
  ( r race_walk 240 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored walking_hops_equal --test-threads 1; r mem_walk 120 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored walking_hops_equal --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/san.status" ) &
  r walk_test 120 "$RT" --ignored walking_hops_equal
  r check_wilson 240 "$Q" check --kernel wilson_hop
  wait; S+=("$(cat "$OUT/san.status")"); rm -f "$OUT/san.status"
  r bench_walk 200 "$Q" bench --sizes 32,24 --case wilson_hop_walk --reps 50 --json "$OUT/walk.json"
  r bench_hop 120 "$Q" bench --sizes 32,24 --case "mobius_dslash4 f32" --reps 50 --json "$OUT/hop.json"
  grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|^test result|FAILED|panicked" "$OUT"/race_walk.log "$OUT"/mem_walk.log "$OUT"/walk_test.log | head -8
  grep -hE "compared|failed|FAIL|walk" "$OUT"/check_wilson.log | tail -8
  grep -hE "^qdsl bench: " "$OUT"/bench_*.log | head -40
  ;;
s35_b)
  # Stop 35: the 24⁴ MSPCG anomaly (3 inner iterations: 10789 outer against CG's 6362)
  # with the outer flexible CG keeping 4 search directions (FCG(4)).
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_k3_fcg 420 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 3 backend=cuda precision=f64 snake=yes plain=no directions=4
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s35_c)
  # s35_a: the walking kernels ran (racecheck 0 hazards, memcheck 0 errors; the bench
  # rows are in), but the test asked for bit-equality with one-source launches, which the
  # compiler's multiply-add contraction does not give (the harness saw 3.8e-6 already),
  # and `qdsl check` launched the walk with the multi-RHS block. Both mended; again, then
  # the 24⁴ MSPCG with 3 inner iterations and FCG(4) (s35_b) in the same call.
  ( r race_walk 240 compute-sanitizer --tool racecheck --error-exitcode 1 "$RT" --ignored walking_hops_equal --test-threads 1; r mem_walk 120 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored walking_hops_equal --test-threads 1; printf '%s\n' "${S[@]}" >"$OUT/san.status" ) &
  r walk_test 120 "$RT" --ignored walking_hops_equal
  r check_wilson 240 "$Q" check --kernel wilson_hop
  wait; S+=("$(cat "$OUT/san.status")"); rm -f "$OUT/san.status"
  grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|^test result|FAILED|panicked|max \|walk" "$OUT"/race_walk.log "$OUT"/mem_walk.log "$OUT"/walk_test.log | head -8
  grep -hE "compared|FAIL" "$OUT"/check_wilson.log | tail -8
  X=target/gpu/release/examples/mspcg_study
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 40 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  r study24_k3_fcg 330 $X /tmp/ens24/cfg_000500.lime 0.001 1,1,2,2 1e-8 3 backend=cuda precision=f64 snake=yes plain=no directions=4
  grep -hE "plaquette" "$OUT"/gen*.log
  cat "$OUT"/study*.log
  ;;
s36_a)
  # Stop 36, 2 GPUs: the distributed hop replayed from a CUDA graph. The several-GPU
  # tests (the NCCL rows now also through graphs; a silent peer during a replay), then
  # the scaling rows with the new `graph` column: 32^4 strong and weak, cuts in t and x,
  # and 48^3x96 strong.
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops replay
  r scaling 200 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r scaling_48 90 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "f32" --json "$OUT/scaling_48.json"
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/grid_tests.log | head -30
  for f in scaling scaling_48; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -30; done
  ;;
s36_b)
  # s36_a: graphs pass every several-GPU test but gain little (the NCCL kernels lost
  # their stream's priority in the graph; the unpacks ran after the interior). Now the
  # nodes keep their priorities and the unpacks run on NCCL's stream as the faces
  # arrive; the solves' NCCL ranks replay their hops from graphs (QDSL_GRAPHS=0: off).
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  r ql_grid 90 "$QL" --ignored --test-threads 1 multi_gpu_
  L=tests/data/milc/lat.sample.l8
  for gr in 1 0; do
    QDSL_GRAPHS=$gr r solve_wilson_g$gr 25 "$Q" --backend cuda solve $L --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRAPHS=$gr r solve_asqtad_g$gr 25 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
    QDSL_GRAPHS=$gr r solve_clover_g$gr 25 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRAPHS=$gr r solve_cg48_g$gr 60 "$Q" --backend cuda solve $L --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10 --grid 1,1,1,2
  done
  r solve_cg48_one 60 "$Q" --backend cuda solve $L --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10
  r scaling 200 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r scaling_48 120 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "half-faces" --json "$OUT/scaling_48.json"
  for gr in 1 0; do QDSL_GRAPHS=$gr r clover_g$gr 80 "$Q" bench --grid 1,1,1,2 --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_g$gr.json"; done
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/grid_tests.log "$OUT"/ql_grid.log | head -30
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "iteration|residual|converged|solve|error" "$f" | head -8; done
  for f in scaling scaling_48 clover_g1 clover_g0; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -20; done
  ;;
s36_c)
  # s36_b: graphs bring the weak t-cut Wilson hop from 64 % to 79 % and leave the solves'
  # iterations and residuals unchanged, but the asqtad solve took 0.58 s with graphs
  # against 0.10 s without. Now a key is captured on its third application (at most 16
  # graphs per hop) and the capture time is reported; the solves again, with NCCL's
  # graph buffer registration on (default) and off.
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/grid_tests.log | head -12
  L=tests/data/milc/lat.sample.l8
  A="--backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1"
  W="--backend cuda solve $L --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10 --grid 1,1,1,2"
  r solve_asqtad_g1 25 "$Q" $A
  NCCL_GRAPH_REGISTER=0 r solve_asqtad_g1_noreg 25 "$Q" $A
  QDSL_GRAPHS=0 r solve_asqtad_g0 25 "$Q" $A
  r solve_cg48_g1 60 "$Q" $W
  NCCL_GRAPH_REGISTER=0 r solve_cg48_g1_noreg 60 "$Q" $W
  QDSL_GRAPHS=0 r solve_cg48_g0 60 "$Q" $W
  r scaling 120 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --weak --case "f32" --json "$OUT/scaling.json"
  NCCL_GRAPH_REGISTER=0 r scaling_noreg 120 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --weak --case "half-faces" --json "$OUT/scaling_noreg.json"
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "iterations|residual|solve  |error" "$f" | head -5; done
  for f in scaling scaling_noreg; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -10; done
  ;;
s36_d)
  # s36_c: NCCL's registration of the face buffers for graphs (NCCL_GRAPH_REGISTER, on
  # by default) made the solves with graphs 2-5x slower; off, graphs cost nothing. qdsl
  # now sets it to 0 unless the user did. The final rows: the several-GPU tests, the
  # solves with and without graphs, the scaling tables, the clover M^.
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  r ql_grid 90 "$QL" --ignored --test-threads 1 multi_gpu_
  L=tests/data/milc/lat.sample.l8
  for gr in 1 0; do
    QDSL_GRAPHS=$gr r solve_wilson_g$gr 25 "$Q" --backend cuda solve $L --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRAPHS=$gr r solve_asqtad_g$gr 25 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
    QDSL_GRAPHS=$gr r solve_clover_g$gr 25 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRAPHS=$gr r solve_cg48_g$gr 60 "$Q" --backend cuda solve $L --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10 --grid 1,1,1,2
  done
  r scaling 200 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "f32" --json "$OUT/scaling.json"
  r scaling_48 120 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "half-faces" --json "$OUT/scaling_48.json"
  for gr in 1 0; do QDSL_GRAPHS=$gr r clover_g$gr 80 "$Q" bench --grid 1,1,1,2 --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_g$gr.json"; done
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log "$OUT"/ql_grid.log | head -10
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "iterations|residual|solve  |error" "$f" | head -4; done
  for f in scaling scaling_48 clover_g1 clover_g0; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -16; done
  ;;
s36_e)
  # s36_d: with graphs the asqtad solve still took 0.40 s (0.09 s without) and the
  # strong clover M^ 423 us (332 without): a replay's host wait waited for the whole
  # graph, where the eager path waits only for the delivery (the host then queues the
  # next kernels while the GPU computes the exterior). Now the replays record an event
  # at the last delivery and the host waits for that. Solves and M^ again.
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  L=tests/data/milc/lat.sample.l8
  A="--backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1"
  for gr in 1 0; do
    QDSL_GRAPHS=$gr r solve_asqtad_g$gr 25 "$Q" $A
    QDSL_GRAPHS=$gr r solve_clover_g$gr 25 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10 --grid 1,1,1,2
    QDSL_GRAPHS=$gr r clover_g$gr 80 "$Q" bench --grid 1,1,1,2 --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_g$gr.json"
  done
  NCCL_GRAPH_MIXING_SUPPORT=0 r solve_asqtad_g1_nomix 25 "$Q" $A
  r scaling 60 "$Q" bench --grid 1,1,1,2 --reps 30 --warmup 5 --transports nccl --sizes 32 --weak --case "half-faces" --json "$OUT/scaling.json"
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log | head -10
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "iterations|residual|solve  |error" "$f" | head -4; done
  for f in clover_g1 clover_g0 scaling; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -8; done
  ;;
s36_f)
  # The final build of stop 36 (review mends after s36_e: the launch path takes the
  # stream, one replay entry point, NCCL's defaults left alone): the several-GPU tests
  # and two solves with graphs on and off.
  r grid_tests 200 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  r ql_grid 90 "$QL" --ignored --test-threads 1 multi_gpu_
  L=tests/data/milc/lat.sample.l8
  for gr in 1 0; do
    QDSL_GRAPHS=$gr r solve_asqtad_g$gr 25 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1
    QDSL_GRAPHS=$gr r solve_clover_g$gr 25 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10 --grid 1,1,1,2
  done
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log "$OUT"/ql_grid.log | head -10
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "iterations|residual|solve  |error" "$f" | head -4; done
  ;;
s37_a)
  # Stop 37, 4 GPUs: the distributed hop's packs and exterior slabs on a boundary stream
  # of their own, beside the interior (the exterior no longer waits for the interior's
  # last blocks, the interior no longer for the packs). The several-GPU tests on all four
  # GPUs (bit for bit against one, eager and replayed), then the 1 -> 2 -> 4 GPU scaling of
  # the f32 Wilson hop at 32^4 and 32^4 per GPU (t cut, z.t cut; x cut on 2).
  r grid_tests 220 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/grid_tests.log | head -14
  r scaling 240 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --grid 2,1,1,1 --reps 30 --warmup 5 --transports nccl --sizes 32 --strong-and-weak --case "wilson_hop f32" --json "$OUT/scaling.json"
  echo "== scaling"; grep -vE "^qdsl bench:|^$" "$OUT/scaling.log" | tail -24
  ;;
s37_b)
  # Right after s37_a: the staggered and fixed16 rows, 48^3x96 strong over 1 -> 2 -> 4, the
  # decomposed solves (the first in a fresh process: the vector kernels now load before
  # the timed solve), the Wilson CGNR at 48^3x96 on one GPU and on four, the clover M^.
  r ql_grid 90 "$QL" --ignored --test-threads 1 multi_gpu_
  L=tests/data/milc/lat.sample.l8
  for gr in 1 0 1; do QDSL_GRAPHS=$gr r solve_asqtad_g$gr 25 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 2,1,1,1; grep -iE "iterations|solve  " "$OUT/solve_asqtad_g$gr.log" | head -3; done
  A="--backend cuda solve $L --tile 6,6,6,12 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-10"
  r cg48_one 60 "$Q" $A
  r cg48_g1,1,1,4 60 "$Q" $A --grid 1,1,1,4
  r cg48_g1,1,2,2 60 "$Q" $A --grid 1,1,2,2
  GRIDS="--grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2"
  r scaling_stag 90 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --sizes 32 --weak --case "staggered_hop f32" --json "$OUT/scaling_stag.json"
  r scaling_h16 90 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --sizes 32 --weak --case "fixed16 half-faces" --json "$OUT/scaling_h16.json"
  r scaling_again 60 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --reps 50 --warmup 5 --transports nccl --sizes 32 --weak --case "wilson_hop f32 half-faces" --json "$OUT/scaling_again.json"
  r scaling_48 120 "$Q" bench $GRIDS --reps 30 --warmup 5 --transports nccl --lattice 48,48,48,96 --case "wilson_hop f32 half-faces" --json "$OUT/scaling_48.json"
  r clover_grid 80 "$Q" bench $GRIDS --clover --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/clover_scaling.json"
  grep -hE "^test result|FAILED|panicked" "$OUT"/ql_grid.log | head -6
  for f in "$OUT"/cg48_*.log; do echo "== $f"; grep -iE "ranks|iterations|residual|solve  |error" "$f" | head -5; done
  for f in scaling_again scaling_stag scaling_h16 scaling_48 clover_grid; do echo "== $f"; grep -vE "^qdsl bench:|^$" "$OUT/$f.log" | tail -16; done
  ;;
s37_c)
  # After s37_b: the distributed GPU tests on one GPU each (clover, Wilson CG, Moebius over
  # boxes: their exterior slabs now run on the boundary stream), the fixed16 weak rows
  # again (s37_b's 1,1,1,4 graph row, 136 us against 88 on 2 GPUs, looked wrong), and the
  # distributed Moebius M^ on 2 and 4 GPUs.
  r rt_dist 240 "$RT" --ignored --test-threads 4 distributed --skip multi_gpu_ --skip nccl_distributed_hops
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_dist.log | head -20
  r h16_again 60 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --reps 50 --warmup 5 --transports nccl --sizes 32 --weak --case "fixed16 half-faces" --json "$OUT/h16_again.json"
  echo "== h16_again"; grep -vE "^qdsl bench:|^$" "$OUT/h16_again.log" | tail -4
  r bmobius_grid 150 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --mobius --sizes 32 --strong-and-weak --transports nccl --warmup 5 --reps 20 --json "$OUT/mobius_scaling.json"
  echo "== bmobius_grid"; grep -vE "^qdsl bench:|^$" "$OUT/bmobius_grid.log" | tail -8
  ;;
s37_d)
  # The thin links of extended-volume smearing exchanged on the device (DeviceLinkHalo,
  # one grouped exchange per cut direction through the transports; the face messages are
  # now raw device buffers): the smearing GPU test (host exchange, device exchange
  # through the host and through NCCL give the same links; against one GPU and MILC's),
  # the several-GPU hop tests, and the smearing bench with the device exchange.
  r rt_smear 280 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_smear.log | head -8
  r grid_tests 150 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log | head -8
  r gsmear 150 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -10
  ;;
s37_e)
  # s37_d: the device exchange of the thin links ran (441 us against 58 ms through the
  # host, f32 32^4 on 1,1,1,2) but the smearing test stopped at its byte count: the
  # slabs spanned the whole extended lattice, so corners travelled twice. Now each round's
  # slabs span the local range in the directions exchanged after it (every halo site
  # once). The test and the bench again, then the clover and staggered solves on 4 GPUs.
  r rt_smear 280 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_smear.log | head -8
  r gsmear 150 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2 --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -10
  L=tests/data/milc/lat.sample.l8
  r solve_asqtad_g4 30 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10 --grid 1,1,2,2
  r solve_asqtad_one 30 "$Q" --backend cuda solve $L --action asqtad --mass 0.05 --solver cg --precision f32 --tol 1e-10
  r solve_clover_g4 30 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10 --grid 1,1,1,4
  r solve_clover_one 30 "$Q" --backend cuda solve $L --action clover --kappa 0.12 --csw 1.0 --solver bicgstab --precision f64 --tol 1e-10
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "ranks|iterations|residual|solve  |error" "$f" | head -5; done
  ;;
s37_f)
  # The final build of stop 37 (the NCCL transports made by one constructor, replay keys
  # hashed only with graphs on): the several-GPU tests, the smearing test, decomposed
  # solves on 4 GPUs through NCCL with graphs, the weak t-cut rows again, and memcheck of
  # the smearing test's device exchange (16 ranks on one GPU, host-staged).
  r grid_tests 150 "$RT" --ignored --test-threads 1 multi_gpu_ nccl_distributed_hops device_peer_transport
  r rt_smear 120 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "^test result|FAILED|panicked" "$OUT"/grid_tests.log "$OUT"/rt_smear.log | head -8
  L=tests/data/milc/lat.sample.l8
  r solve_wilson_g4 30 "$Q" --backend cuda solve $L --kappa 0.12 --solver bicgstab --precision f32 --tol 1e-10 --grid 1,1,1,4
  r solve_mobius_g4 40 "$Q" --backend cuda solve $L --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10 --grid 1,1,2,2
  for f in "$OUT"/solve_*.log; do echo "== $f"; grep -iE "ranks|iterations|residual|solve  |error" "$f" | head -5; done
  r scaling 90 "$Q" bench --grid 1,1,1,2 --grid 1,1,1,4 --reps 50 --warmup 5 --transports nccl --sizes 32 --weak --case "wilson_hop f32 half-faces" --json "$OUT/scaling.json"
  echo "== scaling"; grep -vE "^qdsl bench:|^$" "$OUT/scaling.log" | tail -4
  CUDA_VISIBLE_DEVICES=0 r memcheck 240 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "ERROR SUMMARY|^test result" "$OUT/memcheck.log" | head -3
  ;;
s37_g)
  # The Wilson multi-source operator walks its sources (Slices::Walk where the lattice
  # fits): the GPU block-solve test (Wilson, clover, asqtad against the CPU; the runtime
  # test binary stays home, the carry limit), then 8 sources at 32^4 (lat.sample.l8 tiled 4x) with this build and with
  # the one before it (target/gpu/qdsl_before: the sources in the block), in turns.
  r ql_block 200 "$QL" --ignored --test-threads 2 gpu_block_solves_match_the_cpu
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/ql_block.log | head -8
  W="--backend cuda solve tests/data/milc/lat.sample.l8 --tile 4,4,4,4 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-8 --sources 8"
  for k in 1 2; do
    r walk_$k 90 "$Q" $W
    r block_$k 90 target/gpu/qdsl_before $W
  done
  for f in walk_1 block_1 walk_2 block_2; do echo "== $f"; grep -iE "iterations|solve|time|GFLOP|error" "$OUT/$f.log" | head -6; done
  ;;
s37_h)
  # s37_g: the second runs read walk 0.395 s against block 0.364 s, the first 0.606 and
  # 1.407: noise or tuning. Three more turns each, after one untimed run of each.
  W="--backend cuda solve tests/data/milc/lat.sample.l8 --tile 4,4,4,4 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-8 --sources 8"
  r warm_walk 90 "$Q" $W; r warm_block 90 target/gpu/qdsl_before $W
  for k in 1 2 3; do r walk_$k 90 "$Q" $W; r block_$k 90 target/gpu/qdsl_before $W; done
  for f in walk_1 block_1 walk_2 block_2 walk_3 block_3; do echo "== $f $(grep -E "set-up" "$OUT/$f.log")"; done
  r bwalk 90 "$Q" bench --sizes 32 --case "wilson_hop" --reps 30
  grep -E "sources8|walk" "$OUT/bwalk.log" | head -8
  ;;
s37_i)
  # The last build of stop 37 (review mends: one launch on a stream), one H200: memcheck of
  # a small check, the check rows of the Wilson and clover kernels, the bench rows of
  # the Wilson hop with copy bandwidth and roofline.
  r memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel wilson_hop --lattice 4,4,4,4
  grep -hE "ERROR SUMMARY" "$OUT/memcheck.log"
  r check 120 "$Q" check --kernel wilson
  grep -hE "compared|FAIL|fail|pass" "$OUT/check.log" | tail -6
  r bench 80 "$Q" bench --sizes 32 --case "wilson_hop f32 recon12" --reps 20 --warmup 3
  grep -vE "^$" "$OUT/bench.log" | tail -14
  ;;
s38_a)
  # The standard decomposed smearing (the staple fields exchanged between the staged
  # plan's passes, each rank's own sites only) on 2 GPUs: the boxed staged run, the
  # distributed smearing test (extended and standard, host-staged and NCCL, halos 3 and
  # 2, against one GPU and MILC), then extended against standard at 32^4 on 1,1,1,2.
  r rt_boxed 60 "$RT" --ignored --test-threads 1 boxed_staged_runs
  r rt_smear 240 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_boxed.log "$OUT"/rt_smear.log | head -12
  r gsmear 150 "$Q" bench --grid 1,1,1,2 --smear --lattice 32,32,32,32 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -6
  ;;
s38_b)
  # The boxed staged run's test mended (its deep sites only), extended against standard
  # with the standard smearing's own-sites kernels timed alone, t and x cuts, strong
  # (32^4) and weak (32^3x64 over 2), then memcheck of the smearing test on one GPU.
  r rt_boxed 60 "$RT" --ignored --test-threads 1 boxed_staged_runs
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_boxed.log | head -6
  r gsmear 240 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --smear --lattice 32,32,32,32 --lattice 32,32,32,64 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -10
  CUDA_VISIBLE_DEVICES=0 r memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "ERROR SUMMARY|^test result" "$OUT/memcheck.log" | head -3
  ;;
s38_c)
  # The transport as a tuner choice on 2 GPUs: a Wilson CGNR at 32^4 (lat.sample.l8 tiled
  # 4x) with QDSL_TUNE=launch twice (timed, then from the tune cache), once untuned; a
  # Möbius solve tuned; the bench's own peer-against-NCCL rows for the same hop.
  W="--backend cuda solve tests/data/milc/lat.sample.l8 --tile 4,4,4,4 --kappa 0.12 --solver cgnr --precision f32 --tol 1e-8 --grid 1,1,1,2"
  QDSL_TUNE=launch r tuned_1 150 "$Q" $W
  QDSL_TUNE=launch r tuned_2 90 "$Q" $W
  r untuned 90 "$Q" $W
  QDSL_TUNE=launch r mobius_tuned 120 "$Q" --backend cuda solve tests/data/milc/lat.sample.l8 --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.01 --solver cgnr --precision f32 --tol 1e-10 --grid 1,1,1,2
  for f in tuned_1 tuned_2 untuned mobius_tuned; do echo "== $f"; grep -iE "grid transport|ranks|iterations|residual|solve  |error" "$OUT/$f.log" | head -6; done
  grep -h "grid_transport" "$QDSL_CACHE_DIR"/tunecache.tsv 2>/dev/null | head -6
  r transports 120 "$Q" bench --grid 1,1,1,2 --transports nccl,peer --sizes 32 --case "wilson_hop f32 half-faces" --reps 30 --warmup 5
  echo "== transports"; grep -vE "^qdsl bench:|^$" "$OUT/transports.log" | tail -8
  ;;
s38_d)
  # The overlapped standard smearing (each kernel's interior while the fields' halos
  # travel through NCCL): the boxed run and the distributed smearing tests (8^3x16 on
  # 1,1,1,2 overlapped, against one GPU), the tuned-transport Möbius grid test, then the
  # bench rows again with the overlapped column.
  r rt_boxed 60 "$RT" --ignored --test-threads 1 boxed_staged_runs
  r rt_smear 240 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  r ql_mobius 200 "$QL" --ignored --test-threads 1 multi_gpu_decomposed_device_mobius_solves_match_one_gpu
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_boxed.log "$OUT"/rt_smear.log "$OUT"/ql_mobius.log | head -12
  r gsmear 240 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --smear --lattice 32,32,32,32 --lattice 32,32,32,64 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -10
  ;;
s38_e)
  # The final standard smearing (no overlap where x is cut): the bench rows, then the
  # t-cut 32^4 rows twice more (run-to-run spread of extended against standard).
  r gsmear 240 "$Q" bench --grid 1,1,1,2 --grid 2,1,1,1 --smear --lattice 32,32,32,32 --lattice 32,32,32,64 --warmup 3 --reps 10 --json "$OUT/smear_grid.json"
  echo "== gsmear"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear.log" | tail -10
  for k in 2 3; do
    r gsmear_$k 90 "$Q" bench --grid 1,1,1,2 --smear --lattice 32,32,32,32 --warmup 3 --reps 10
    echo "== gsmear_$k"; grep -vE "^qdsl bench:|^$" "$OUT/gsmear_$k.log" | tail -2
  done
  ;;
s38_f)
  # The last build of stop 38 (one launch helper in the smearing runner): the boxed-run
  # and distributed smearing tests on 2 GPUs, the staged smearings' check rows and bench
  # rows on one lattice (the box arguments cost nothing on one GPU: against 2026-11-28
  # (d)), memcheck of the smearing test on one GPU.
  r rt_boxed 60 "$RT" --ignored --test-threads 1 boxed_staged_runs
  r rt_smear 200 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "^test |^test result|FAILED|panicked" "$OUT"/rt_boxed.log "$OUT"/rt_smear.log | head -8
  r check 120 "$Q" check --kernel asqtad
  grep -hE "compared|FAIL|fail" "$OUT/check.log" | tail -4
  r blinks 150 "$Q" bench --sizes 32 --case "_links_staged f" --reps 5 --warmup 1 --json "$OUT/links.json"
  grep -E "_links_staged" "$OUT/blinks.log" | grep -v "^qdsl bench:" | head -12
  CUDA_VISIBLE_DEVICES=0 r memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored --test-threads 1 distributed_device_smeared_links
  grep -hE "ERROR SUMMARY|^test result" "$OUT/memcheck.log" | head -3
  ;;
s38_g)
  # The last build of stop 38 (review mends: face slabs from ExtendedLattice, the thin
  # links' length check), one H200: memcheck of a small check, the smearing and Wilson
  # check rows, the bench with copy bandwidth and roofline, the boxed-run test.
  r memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$Q" check --kernel asqtad_fat --lattice 4,4,4,4
  grep -hE "ERROR SUMMARY|compared" "$OUT/memcheck.log" | head -3
  r check 150 "$Q" check --kernel asqtad
  grep -hE "compared|FAIL" "$OUT/check.log" | tail -3
  r check_w 130 "$Q" check --kernel wilson_hop
  grep -hE "compared|FAIL" "$OUT/check_w.log" | tail -3
  r bench 100 "$Q" bench --sizes 32 --case "wilson_hop f32 recon12" --reps 20 --warmup 3
  grep -vE "^$" "$OUT/bench.log" | tail -10
  r bench_links 100 "$Q" bench --sizes 32 --case "asqtad_links_staged f" --reps 5 --warmup 1
  grep -vE "^$" "$OUT/bench_links.log" | tail -8
  r rt_boxed 60 "$RT" --ignored --test-threads 1 boxed_staged_runs
  grep -hE "^test result" "$OUT/rt_boxed.log"
  ;;
s39_a)
  # Stop 39 (issue 20): MSPCG on 2 GPUs. The device MSPCG tests (one GPU: the inner
  # vectors now in a rank-local twin context; two GPUs: the decomposed solve against one
  # GPU's), then a 16⁴ β 6.0 heat-bath ensemble (the 2026-11-29 (b) recipe): CGNR and
  # MSPCG (blocks 1,1,2,2, 6 inner, outer f64–f32, inner fixed16 with the tensor-core
  # M5⁻¹) on one GPU and on --grid 1,1,1,2.
  r rt_mspcg 200 "$RT" --ignored --test-threads 4 mspcg
  r ql_mspcg 300 "$QL" --ignored --test-threads 3 mobius_mspcg mobius_grid
  grep -hE "^test |^test result|FAILED|panicked|outer|iterations" "$OUT/rt_mspcg.log" "$OUT/ql_mspcg.log" | head -30
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  M="--backend cuda solve /tmp/ens16/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  MS="--solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision fixed16 --m5inv mma_f16"
  r s16_cgnr_1 60 "$Q" $M --solver cgnr
  r s16_cgnr_2 60 "$Q" $M --solver cgnr --grid 1,1,1,2
  r s16_mspcg_1 60 "$Q" $M $MS
  r s16_mspcg_2 60 "$Q" $M $MS --grid 1,1,1,2
  for f in "$OUT"/s16_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  ;;
s39_b)
  # The 24⁴ rows of s39_a (the same ensemble recipe, CGNR and MSPCG on one GPU and on
  # --grid 1,1,1,2), and the 16⁴ MSPCG rows again: the preconditioner is now applied
  # once in the set-up (its kernels tuned), so the iteration's time is the iteration's.
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  M="--backend cuda solve /tmp/ens16/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  MS="--solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision fixed16 --m5inv mma_f16"
  r s16_mspcg_1 60 "$Q" $M $MS
  r s16_mspcg_2 60 "$Q" $M $MS --grid 1,1,1,2
  for f in "$OUT"/s16_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  r gen24 60 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  M="--backend cuda solve /tmp/ens24/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  MS="--solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision fixed16 --m5inv mma_f16"
  r s24_mspcg_2 120 "$Q" $M $MS --grid 1,1,1,2
  r s24_cgnr_2 90 "$Q" $M --solver cgnr --grid 1,1,1,2
  r s24_mspcg_1 150 "$Q" $M $MS
  r s24_cgnr_1 90 "$Q" $M --solver cgnr
  for f in "$OUT"/s24_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  ;;
s39_c)
  # M̂† of MSPCG's local operator only where it is needed (its first chain within one hop
  # of the blocks, its second on the blocks): the device preconditioner against the
  # host's, the device and 2-GPU MSPCG solves, the 16⁴ and 24⁴ MSPCG rows of s39_b
  # again on one and two GPUs, and memcheck of the preconditioner test (box launches).
  r rt_mspcg 200 "$RT" --ignored --test-threads 4 mspcg
  r ql_mspcg 300 "$QL" --ignored --test-threads 3 mobius_mspcg mobius_grid
  grep -hE "^test |^test result|FAILED|panicked" "$OUT/rt_mspcg.log" "$OUT/ql_mspcg.log" | head -30
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  MS="--solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision fixed16 --m5inv mma_f16"
  for L in 16 24; do
    r gen$L 60 "$Q" $G --lattice $L,$L,$L,$L --save /tmp/ens$L
    M="--backend cuda solve /tmp/ens$L/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
    r s${L}_mspcg_1 150 "$Q" $M $MS
    r s${L}_mspcg_2 120 "$Q" $M $MS --grid 1,1,1,2
  done
  for f in "$OUT"/s*_mspcg_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  r memcheck_mspcg 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$RT" --ignored the_gpu_preconditioner_is_the_hosts --test-threads 1
  grep -hE "ERROR SUMMARY|^test result" "$OUT/memcheck_mspcg.log"
  ;;
s39_d)
  # One H200: issue 19's fixed16 Ls-16 tensor-core rows (cut by the call's limit on
  # 2026-11-29 (c)), and the 24⁴ MSPCG of s39_c with the inner vectors in f32 and in
  # fixed16 with the swept M5⁻¹ (which of the two costs the inner iteration its time).
  r bench_ls16_f16 200 "$Q" bench --sizes 32 --case "mma_f16 fixed16 recon12 ls16" --reps 30 --json "$OUT/ls16_mma_f16.json"
  r bench_ls16_bf16 200 "$Q" bench --sizes 32 --case "mma_bf16 fixed16 recon12 ls16" --reps 30 --json "$OUT/ls16_mma_bf16.json"
  grep -hE "^qdsl bench: " "$OUT"/bench_ls16_*.log | head -20
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 60 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  M="--backend cuda solve /tmp/ens24/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  for ip in f32 fixed16; do r s24_mspcg_${ip}_sweep 120 "$Q" $M --solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision $ip --m5inv sweep; done
  for f in "$OUT"/s24_*.log; do echo "== $f"; grep -E "solver|result|iterations|residual|time " "$f"; done
  ;;
s39_e)
  # 2 × H200: the 24⁴ MSPCG of s39_d (swept M5⁻¹, inner f32 and fixed16) on --grid 1,1,1,2.
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen24 60 "$Q" $G --lattice 24,24,24,24 --save /tmp/ens24
  M="--backend cuda solve /tmp/ens24/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  for ip in f32 fixed16; do r s24_mspcg_${ip}_sweep_2 120 "$Q" $M --solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision $ip --m5inv sweep --grid 1,1,1,2; done
  for f in "$OUT"/s24_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  ;;
s39_f)
  # The final build (review mends in the GPU ranks' opening): the decomposed and single-GPU
  # Möbius and MSPCG tests on 2 × H200, and one 16⁴ MSPCG solve on --grid 1,1,1,2.
  r ql_mspcg 300 "$QL" --ignored --test-threads 3 mobius_mspcg mobius_grid
  grep -hE "^test |^test result|FAILED|panicked" "$OUT/ql_mspcg.log" | head -10
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  M="--backend cuda solve /tmp/ens16/cfg_000500.lime --action mobius --ls 12 --b5 1.5 --c5 0.5 --m5 1.8 --mass 0.001 --tol 1e-8 --max-iter 20000 --precision f32"
  r s16_mspcg_2 60 "$Q" $M --solver mspcg --blocks 1,1,2,2 --inner 6 --inner-precision f32 --m5inv sweep --grid 1,1,1,2
  r s16_cgnr_2 60 "$Q" $M --solver cgnr --grid 1,1,1,2
  for f in "$OUT"/s16_*.log; do echo "== $f"; grep -E "ranks|solver|result|iterations|residual|exchanged|time " "$f"; done
  ;;
s39_g)
  # Issue 20's SAP+GCR grid on a 16⁴ ensemble, on the GPU machine's CPU cores (SAP runs
  # on the CPU): the 16⁴ β 6.0 heat-bath configuration of s39_a, Wilson-clover c_sw
  # 1.769, antiperiodic t, GCR(16), tolerance 1e-10, every vector f64 (as the 8⁴ study of
  # docs/sap_gcr.md), blocks 4⁴: the adaptive rows first, then the static ncy × nmr grid,
  # at κ 0.130 and 0.1345. Each solve has 25 s; the call stops starting new ones after
  # 420 s.
  G="--backend cuda generate --action wilson --beta 6.0 --algorithm heatbath --or-per-hb 4 --therm 300 --sweeps 200 --save-every 100 --seed 2026"
  r gen16 60 "$Q" $G --lattice 16,16,16,16 --save /tmp/ens16
  nproc
  for k in 0.130 0.1345; do
    B="--backend cpu solve /tmp/ens16/cfg_000500.lime --action clover --kappa $k --csw 1.769 --solver sap-gcr --block 4,4,4,4 --nkv 16 --tol 1e-10 --max-iter 3000 --precision f64 --sap-precision f64 --seed 1"
    for a in "8 8" "4 4"; do set -- $a; [ $SECONDS -lt 420 ] && r sap_${k}_adaptive_$1_$2 25 "$Q" $B --adaptive --ncy $1 --nmr $2; done
    for c in 1 2 4 8; do for m in 2 4 8; do [ $SECONDS -lt 420 ] && r sap_${k}_static_${c}_${m} 25 "$Q" $B --ncy $c --nmr $m; done; done
  done
  for f in "$OUT"/sap_*.log; do echo "== $f"; grep -E "solver|result|iterations|SAP |solve " "$f"; done
  ;;
esac
for f in grid_tests; do [ -f "$OUT/$f.log" ] && grep -hE "^test |^test result|FAILED|panicked" "$OUT/$f.log" | head -12; done
for f in "$OUT"/bench_grid_*.log; do [ -f "$f" ] && { echo "== $f"; grep -vE "^qdsl bench:" "$f"; }; done
for f in rt_tests ql_tests; do [ -f "$OUT/$f.log" ] && grep -hE "^test result|FAILED|panicked" "$OUT/$f.log" | head -12; done
grep -hE "RACECHECK SUMMARY|ERROR SUMMARY" "$OUT"/race.log "$OUT"/memcheck.log 2>/dev/null
for f in "$OUT"/mobius_solve_*.log "$OUT"/grid_*.log "$OUT"/one_gpu.log; do [ -f "$f" ] && { echo "== $f"; tail -4 "$f"; }; done
rm -rf "$QDSL_CACHE_DIR"
printf '%s\n' "${S[@]}"
# Many logs: one archive comes back (the device tool returns a few files only).
if [ "${PACK:-0}" = 1 ]; then (cd "$OUT" && tar czf /tmp/session_logs.tgz . && rm -rf ./* && mv /tmp/session_logs.tgz .); fi
