#!/usr/bin/env bash
# Set up everything tracegrad needs on a Debian machine; safe to run again.
#   1. Debian packages: graphviz (the `dot` binary, for SVG) and tmux (drives the TUI in a terminal)
#   2. .venv with tracegrad installed editable, with its dev tools
#   3. torch==2.13.0 in .venv, only as a reference for tests (optional)
# Steps 2 and 3 are skipped when .setup-stamp matches pyproject.toml and this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "setup: $*"; }

# --- 1. Debian packages ----------------------------------------------------------------------

apt_updated=0
# apt_install PKG...: install with apt-get (through sudo when not root); returns non-zero if it can't.
apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 1
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || return 1
        # No terminal to type a password into (CI): fail at once instead of hanging.
        if [ -t 0 ]; then sudo=(sudo); else sudo=(sudo -n); fi
    fi
    local log
    log=$(mktemp)
    say "installing $* with apt-get"
    if [ "$apt_updated" = 0 ] && "${sudo[@]}" apt-get update -q >"$log" 2>&1; then
        apt_updated=1
    fi
    if [ "$apt_updated" = 1 ] &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$log" 2>&1; then
        rm -f "$log"
        return 0
    fi
    tail -n 5 "$log" >&2
    rm -f "$log"
    return 1
}

if ! command -v dot >/dev/null 2>&1 && ! apt_install graphviz; then
    echo "setup: Graphviz is missing, so SVG rendering tests will skip; install it with: sudo apt-get install graphviz" >&2
fi
if ! command -v tmux >/dev/null 2>&1 && ! apt_install tmux; then
    echo "setup: tmux is missing (used only to drive the TUI in a terminal); install it with: sudo apt-get install tmux" >&2
fi

# --- 2. the virtual environment --------------------------------------------------------------

# What the venv was built from; when it changes, steps 2 and 3 run again.
stamp_key=$( (cat pyproject.toml scripts/setup.sh; python3 --version 2>&1) | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f .setup-stamp ] && [ "$(head -n 1 .setup-stamp)" = "$stamp_key" ]; then
    exit 0
fi

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian ships venv's ensurepip in a package of its own.
    apt_install python3-venv || {
        echo "setup: python3 cannot create a virtual environment; install it with: sudo apt-get install python3-venv" >&2
        exit 1
    }
fi

if [ -x .venv/bin/python ] && [ "$(.venv/bin/python --version 2>&1)" != "$(python3 --version 2>&1)" ]; then
    say "python3 changed since .venv was made; making it again"
    rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
    say "creating .venv with $(python3 --version 2>&1)"
    python3 -m venv .venv
fi
say "installing tracegrad (editable) with its dev tools into .venv"
# -qq: errors only (-q still prints warnings about this machine's absent local index folders).
.venv/bin/python -m pip install -qq --upgrade pip
.venv/bin/python -m pip install -qq -e '.[dev]'

# --- 3. torch, a test-only reference ---------------------------------------------------------

# Exactly 2.13.0: a CPU wheel of it lies on this kind of machine's disk. Any other version, or
# one with no local wheel, is a CUDA build of several GB from PyPI, so we look on disk only
# (--no-index keeps find-links) and let pip fetch torch's small dependencies after that.
if .venv/bin/python -c 'import torch' >/dev/null 2>&1; then
    :
elif .venv/bin/python -m pip install -qq --no-index --no-deps torch==2.13.0 >/dev/null 2>&1 &&
    .venv/bin/python -m pip install -qq torch==2.13.0; then
    say "installed torch==2.13.0 as a test reference"
else
    echo "setup: torch==2.13.0 could not be installed from local disk, so torch-comparison tests will skip;" \
        "to download it anyway (several GB): .venv/bin/pip install torch==2.13.0" >&2
fi

echo "$stamp_key" >.setup-stamp
say "done"
