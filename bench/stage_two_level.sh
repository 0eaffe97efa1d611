#!/usr/bin/env bash
# Here (Rust available): the prism CLI and the soak test, release builds, in
# .gpu/bin for bench/gpu_two_level.sh (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu/bin
mkdir -p $G
cargo build --release -q
cp target/release/prism $G/prism
newest() { ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
cargo test --release -q --test soak --no-run 2>/dev/null
cp "$(newest soak)" $G/soak
strip --strip-debug $G/*
git rev-parse --short HEAD > .gpu/commit
du -sh $G
