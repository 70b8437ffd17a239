#!/usr/bin/env bash
# Set up (scripts/setup.sh), then show what tracegrad does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh

# ===== THE DEMO: the one place to change ======================================================
# examples/inplace_bug.py is a two-layer net step with a classic bug: `h += 0.1` changes an
# activation that ReLU and the second matmul saved for backward. PyTorch only says so when
# backward fails; tracegrad points at the line the moment it happens.
example=examples/inplace_bug.py
mkdir -p out

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The example crashes in backward on purpose, so these commands exit 1 ("found a problem" /
# "the script raised"); anything else is a real failure of the demo.
allow_1() { "$@" || { rc=$?; [ "$rc" -eq 1 ] || exit "$rc"; }; }

step "tracegrad check $example   (every violation, with both source lines)"
allow_1 .venv/bin/tracegrad check "$example"

step "tracegrad render -o out/inplace_bug.svg $example"
allow_1 .venv/bin/tracegrad render -o out/inplace_bug.svg "$example"
echo "open out/inplace_bug.svg in a browser: the red boxes are the violation, with both lines"

step "tracegrad tui $example   (step through backward; q quits)"
if [ -t 0 ] && [ -t 1 ]; then
    allow_1 .venv/bin/tracegrad tui "$example"
else
    echo "(no interactive terminal here, so printing the backward steps instead of opening the TUI;"
    echo " run ./scripts/demo.sh in a terminal to step through them)"
    allow_1 .venv/bin/tracegrad tui --dump "$example"
fi
# ===== end of the demo ========================================================================
