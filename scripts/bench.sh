#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every benchmark in bench/; each prints its own figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh

shopt -s nullglob
benches=(bench/*.py)
if [ ${#benches[@]} = 0 ]; then
    echo "bench: no benchmarks in bench/ yet" >&2
    exit 0
fi
for bench in "${benches[@]}"; do
    echo "== $bench"
    .venv/bin/python "$bench"
done
