set -u
mkdir -p /work && ln -sfn $PWD /work/main
export QDSL_CACHE_DIR=$(mktemp -d)
RT=$(grep qdsl_runtime target/gpu/gpu-tests.txt); QL=$(grep -v qdsl_runtime target/gpu/gpu-tests.txt)
Q=target/gpu/release/qdsl
nvidia-smi --query-gpu=name --format=csv,noheader
( t0=$SECONDS; timeout 330 compute-sanitizer --tool racecheck --error-exitcode 1 $RT --ignored every_chain_on_the_gpu --test-threads 1 > $OUT/race.log 2>&1; echo "race exit $? $((SECONDS-t0))s" ) &
t0=$SECONDS; timeout 120 $QL --ignored mobius_check_rows_pass > $OUT/ql2.log 2>&1; echo "ql2 exit $? $((SECONDS-t0))s"
t0=$SECONDS; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 $Q check --kernel mobius_eo --lattice 4,4,4,4 > $OUT/memcheck.log 2>&1; echo "memcheck exit $? $((SECONDS-t0))s"
t0=$SECONDS; timeout 200 $Q check > $OUT/check.log 2>&1; echo "check exit $? $((SECONDS-t0))s"
wait
grep -hE "^test result|FAILED|panicked" $OUT/ql2.log | head
grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|test result" $OUT/race.log $OUT/memcheck.log
tail -5 $OUT/check.log; grep -iE "fail" $OUT/check.log | head -20
