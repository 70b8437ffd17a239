#!/usr/bin/env bash
# Set up (scripts/setup.sh), then show what tracegrad does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh

# ===== THE DEMO: the one place to change ======================================================
# Intended final demo, once the command line and the TUI exist:
#   .venv/bin/tracegrad render examples/inplace_bug.py -o out/inplace_bug.svg
#   .venv/bin/tracegrad tui examples/inplace_bug.py
if [ -f examples/two_layer_net.py ]; then
    .venv/bin/python examples/two_layer_net.py
else
    echo "demo: examples/two_layer_net.py does not exist yet; nothing to show" >&2
fi
# ===== end of the demo ========================================================================
