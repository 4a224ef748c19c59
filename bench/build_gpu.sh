#!/usr/bin/env bash
# Builds what the GPU machine runs (it has no Rust toolchain): the release `qdsl` binary
# and the library test binaries of qdsl-runtime and the `qdsl` package, into target/gpu.
# Prints the paths to carry; bench/gpu_check.sh reads the test list from
# target/gpu/gpu-tests.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=target/gpu CARGO_PROFILE_RELEASE_DEBUG=0
cargo build --release --bin qdsl
cargo test --release -p qdsl-runtime -p qdsl --lib --no-run --message-format=json \
    | python3 -c '
import json, sys, os
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(os.path.relpath(m["executable"]))
' >target/gpu/gpu-tests.txt
echo "carry: target/gpu/release/qdsl target/gpu/gpu-tests.txt $(tr '\n' ' ' <target/gpu/gpu-tests.txt)"
