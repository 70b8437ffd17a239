#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the test suite: scripts/test.sh [pytest args, default -q]
# Tests run on 2 workers (pytest-xdist); TRACEGRAD_TEST_WORKERS=N changes that, 0 turns it off.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-q)

workers=${TRACEGRAD_TEST_WORKERS:-2}
# One BLAS/OpenMP thread per worker: with two workers on two cores, OpenBLAS's and torch's
# own thread pools oversubscribe the cores and the suite took 233 s instead of 133 s.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
    MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
# Keep compiled bytecode between runs, under .venv (ignored) so the tree stays clean. Where
# PYTHONDONTWRITEBYTECODE is set (as on our shared machine), every worker re-ran pytest's
# assertion rewriting of all test modules (about 5 s of CPU each) and every script a test
# starts recompiled tracegrad (0.2 s each, some 50 of them).
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}
unset PYTHONDONTWRITEBYTECODE
xdist=()
if [ "$workers" != 0 ] && .venv/bin/python -c 'import xdist' >/dev/null 2>&1; then
    # worksteal: an idle worker takes tests queued on the busy one. With the default `load`
    # one worker kept a backlog of slow tests and ran on alone for the last 40 s of a
    # 6.5 min (loaded) run; with worksteal both finished within a second of each other.
    xdist=(-n "$workers" --dist worksteal)
fi

rc=0
.venv/bin/python -m pytest "${xdist[@]}" "${args[@]}" || rc=$?
if [ "$rc" = 5 ]; then
    # pytest's 5 means it collected no tests: a run that tested nothing is a failure.
    echo "test.sh: pytest collected no tests" >&2
fi
exit "$rc"
