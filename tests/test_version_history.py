"""A version counter remembers the sites of its latest in-place changes only (a training
loop under record() bumps its parameters every step, for as long as it runs), and what
reads that history never names a wrong first change once older entries are gone."""

import pytest

import tracegrad as tg
from tracegrad.autograd.node import HISTORY_LIMIT, VersionHistory, changes_since

# anomaly mode's own warnings, as PyTorch gives them
pytestmark = [pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled"),
              pytest.mark.filterwarnings("ignore:Error detected in")]


def test_a_training_loop_under_record_keeps_a_bounded_history():
    w = tg.ones(3, requires_grad=True)
    with tg.record(values=False):
        for _ in range(5 * HISTORY_LIMIT):
            with tg.no_grad():
                w -= 0.001  # the optimizer's update, one bump a step
    history = w._version_counter.history
    assert HISTORY_LIMIT // 2 <= len(history) <= HISTORY_LIMIT
    assert history[-1][0] == w._version == 5 * HISTORY_LIMIT  # the latest is kept
    assert [entry[0] for entry in history] == list(
        range(history[0][0], w._version + 1))  # in order, the newest run of changes
    assert history.dropped_through == history[0][0] - 1


def test_changes_since_says_whether_it_is_the_whole_account():
    history = VersionHistory()
    for version in range(1, HISTORY_LIMIT + 2):
        history.add(version, "add_", None)
    first_kept = history[0][0]
    assert first_kept > 1
    changes, complete = changes_since(history, first_kept - 1)
    assert complete and [entry[0] for entry in changes] == list(
        range(first_kept, HISTORY_LIMIT + 2))
    changes, complete = changes_since(history, 0)  # version 1 onwards: some let go
    assert not complete and changes[0][0] == first_kept
    assert changes_since(None, 0) == ([], True)
    assert changes_since([(2, "mul_", None)], 1) == ([(2, "mul_", None)], True)  # the bridge's


def _sigmoid_then_changes(count):
    x = tg.randn(4, requires_grad=True)
    y = (x * 1).sigmoid()  # SigmoidBackward0 saves y at version 0
    for _ in range(count):
        y.mul_(1.0)  # the changing line
    return y


def test_the_version_error_names_every_change_while_all_are_kept():
    with tg.autograd.detect_anomaly():
        y = _sigmoid_then_changes(3)
        try:
            y.sum().backward()
        except RuntimeError as error:
            message = str(error)
    assert message.count("'mul_' at tests/test_version_history.py:") == 3
    assert "It was modified by 'mul_'" in message and "no longer keeps" not in message


def test_the_version_error_never_names_a_wrong_first_change():
    with tg.autograd.detect_anomaly():
        y = _sigmoid_then_changes(2 * HISTORY_LIMIT)
        try:
            y.sum().backward()
        except RuntimeError as error:
            message = str(error)
    assert f"is at version {2 * HISTORY_LIMIT}; expected version 0 instead." in message
    assert "It was modified by in-place operations whose lines tracegrad no longer keeps" \
        in message
    assert "then by 'mul_' at tests/test_version_history.py:" in message
    assert "It was modified by 'mul_'" not in message


def _failed_backward_violation(count):
    x = tg.randn(4, requires_grad=True)
    y = (x * 1).sigmoid()  # saved before recording: the recorder does not watch it
    with tg.record(values=False) as trace:
        for _ in range(count):
            y.mul_(1.0)  # the changing line
        try:
            y.sum().backward()
        except RuntimeError:
            pass
    (violation,) = [v for v in trace.violations if v.kind == "inplace_saved"]
    return violation


def test_a_recorded_violation_names_the_first_change_when_it_is_kept():
    violation = _failed_backward_violation(3)
    assert violation.op == "mul_" and violation.site is not None
    assert violation.site.code == "y.mul_(1.0)  # the changing line"
    assert (violation.saved_version, violation.current_version) == (0, 3)


def test_a_recorded_violation_names_no_line_when_the_first_change_was_let_go():
    violation = _failed_backward_violation(2 * HISTORY_LIMIT)
    assert violation.op == "mul_" and violation.site is None
    assert (violation.saved_version, violation.current_version) == (0, 2 * HISTORY_LIMIT)


def test_the_torch_bridge_bounds_its_history_of_a_storage_too():
    pytest.importorskip("torch")
    from tracegrad.bridge.adapters import VersionGroup

    group = VersionGroup()
    for version in range(1, 5 * HISTORY_LIMIT + 1):
        group.note(version, "sub_", None)  # an optimizer's update of a parameter, each step
    assert HISTORY_LIMIT // 2 <= len(group.history) <= HISTORY_LIMIT
    assert group.history[-1][0] == 5 * HISTORY_LIMIT and group.last_op == "sub_"
    changes, complete = changes_since(group.history, 0)
    assert not complete and changes[0][0] == group.history.dropped_through + 1
