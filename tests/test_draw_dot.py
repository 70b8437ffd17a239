"""DOT export from hand-built Traces: vocabulary, roles, violations, modules, quoting, size.

These need no tracer and no `dot` program; SVG checks live in test_draw_svg.py. The
hand-built traces are trace_builders.py's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time

import pytest
from trace_builders import exp_chain_trace, inplace_violation_trace, mul_sum_trace

import tracegrad as tg
from tracegrad.draw.plan import Options, plan_graph
from tracegrad.tracing.model import (
    BackwardPass,
    NodeRecord,
    Site,
    Step,
    TensorRecord,
    Violation,
)


def statement(source: str, dot_id: str) -> str:
    """The DOT statement that declares node ``dot_id`` (one line in graphviz's output)."""
    for line in source.splitlines():
        if line.strip().startswith(f"{dot_id} ["):
            return line.strip()
    raise AssertionError(f"no node {dot_id} in:\n{source}")


def edges(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if " -> " in line]


# -- torchviz's vocabulary ----------------------------------------------------------------


def test_grad_fn_nodes_are_grey_boxes_named_by_grad_fn_name():
    source = tg.to_dot(mul_sum_trace()).source
    assert re.search(r'label="MulBackward0\\nstep 1".*fillcolor=lightgrey',
                     statement(source, "n1"))
    assert "SumBackward0" in statement(source, "n2")


def test_leaf_requiring_grad_is_light_blue_with_name_shape_and_step():
    line = statement(tg.to_dot(mul_sum_trace(), show_saved=False).source, "t0")
    assert 'label="w\\n(2, 3)\\nstep 2"' in line
    assert "fillcolor=lightblue" in line


def test_output_is_green_and_drawn_after_its_grad_fn():
    source = tg.to_dot(mul_sum_trace()).source
    assert "fillcolor=darkolivegreen1" in statement(source, "t3")
    assert "n2 -> t3" in edges(source)


def test_saved_tensors_are_orange_with_undirected_edges_naming_the_slot():
    source = tg.to_dot(mul_sum_trace()).source
    x_line = statement(source, "t1")
    assert "fillcolor=orange" in x_line and "v0 · 24 B" in x_line
    assert "t1 -> n1 [color=orange dir=none label=other" in source
    assert "t0 -> n1 [color=orange dir=none label=self" in source


def test_show_saved_false_draws_no_saved_tensor():
    source = tg.to_dot(mul_sum_trace(), show_saved=False).source
    assert "t1 [" not in source and "dir=none" not in source


def test_a_leaf_that_is_also_saved_is_one_box_with_two_roles():
    source = tg.to_dot(mul_sum_trace()).source
    assert source.count("\tt0 [") == 1
    line = statement(source, "t0")
    # the leaf's fill, the saved role's orange border
    assert "fillcolor=lightblue" in line and "color=orange" in line
    # two edges between the same two boxes: the gradient and the saved role
    joined = [edge for edge in edges(source) if edge.startswith("t0 -> n1")]
    assert len(joined) == 2 and "dir=none" in joined[1] and "dir=none" not in joined[0]


def test_an_output_its_own_node_saved_is_one_green_box_joined_both_ways():
    trace = inplace_violation_trace()
    trace.violations.clear()
    trace.tensors[1].versions.clear()
    source = tg.to_dot(trace).source
    assert source.count("\tt1 [") == 1
    assert "fillcolor=darkolivegreen1" in statement(source, "t1")
    assert "n1 -> t1" in edges(source)
    assert any(edge.startswith("t1 -> n1 [color=orange dir=none") for edge in edges(source))


def test_views_are_dotted_to_their_base():
    trace = mul_sum_trace()
    trace.tensors[4] = TensorRecord(4, (6,), "float32", name="flat", is_leaf=False,
                                    grad_fn=3, requires_grad=True, base=2)
    trace.nodes[3] = NodeRecord(3, "ViewBackward0", inputs=[2], outputs=[4], next=[(1, 0)])
    trace.passes[0].roots.append(4)  # draw the view as an output too
    source = tg.to_dot(trace).source
    assert "t2 -> t4 [style=dotted]" in source
    assert "fillcolor=darkolivegreen3" in statement(source, "t2")


# -- what torchviz cannot show ----------------------------------------------------------


def test_gradient_summaries_on_edges_and_nonfinite_gradients_in_red():
    source = tg.to_dot(mul_sum_trace()).source
    assert 'n1 -> n2 [label="(2, 3) ‖1.5‖"' in source
    bad = tg.to_dot(mul_sum_trace(nan_count=2)).source
    assert 'n1 -> n2 [color=red fontcolor=red label="(2, 3) ‖1.5‖ NaN×2"' in bad


def test_named_intermediate_outputs_appear_in_their_node():
    trace = mul_sum_trace()
    trace.tensors[2].name = "y"
    assert "→ y (2, 3)" in statement(tg.to_dot(trace).source, "n1")


def test_tooltips_hold_the_source_line_and_gradient_statistics():
    line = statement(tg.to_dot(mul_sum_trace()).source, "n1")
    assert "created at prog.py:3 in <module>: y = w * x" in line
    assert "grad out 0: float32 (2, 3) min=0 max=1 mean=0.5 norm=1.5" in line


def test_inplace_violation_is_red_with_both_sites_in_label_and_tooltip():
    source = tg.to_dot(inplace_violation_trace()).source
    node = statement(source, "n1")
    tensor = statement(source, "t1")
    for line in (node, tensor):
        assert "fillcolor=red" in line
        assert "modified in place v0→v1 at prog.py:9" in line
        assert "saved at prog.py:8" in line
        # the tooltip: the block `tracegrad check` prints, each site with its code
        assert "in-place op  prog.py:9   y.mul_(2)" in line
        assert "saved by     SigmoidBackward0 at prog.py:8   y = x.sigmoid()" in line
    saved_edge = [edge for edge in edges(source) if "dir=none" in edge]
    assert saved_edge and "color=red" in saved_edge[0] and "v0≠v1" in saved_edge[0]


def test_violation_without_a_drawn_object_becomes_a_red_note():
    trace = mul_sum_trace()
    trace.violations.append(Violation("freed_graph", "backward through a freed graph",
                                      pass_index=0))
    line = statement(tg.to_dot(trace).source, "v0")
    assert "shape=note" in line and "fillcolor=red" in line
    assert "graph freed by pass 0" in line


def test_step_numbers_come_from_the_selected_pass():
    trace = mul_sum_trace()
    trace.passes.append(BackwardPass(1, roots=[3], steps=[Step(0, 2), Step(5, 1)]))
    assert "step 1" in statement(tg.to_dot(trace).source, "n1")
    assert "step 5" in statement(tg.to_dot(trace, pass_index=1).source, "n1")


def test_highlight_step_outlines_that_node():
    source = tg.to_dot(mul_sum_trace(), highlight_step=1).source
    assert "color=blue" in statement(source, "n1") and "penwidth=3" in statement(source, "n1")
    assert "color=blue" not in statement(source, "n2")


def test_show_attrs_clips_long_attributes():
    trace = mul_sum_trace()
    trace.nodes[2].attrs = {"dim": (0, 1), "note": "x" * 100}
    line = statement(tg.to_dot(trace, show_attrs=True, max_attr_chars=20).source, "n2")
    assert "dim: (0, 1)" in line
    assert "note: " + "x" * 11 + "..." in line
    assert "dim: (0, 1)" not in statement(tg.to_dot(trace).source, "n2").split("tooltip")[0]


def test_crashed_program_gets_an_exception_note():
    from tracegrad.tracing.model import ExceptionRecord

    trace = mul_sum_trace()
    trace.exception = ExceptionRecord("RuntimeError", "boom", Site("prog.py", 7, "<module>"))
    line = statement(tg.to_dot(trace).source, "exception")
    assert "RuntimeError: boom" in line and "at prog.py:7" in line


# -- modules -------------------------------------------------------------------------------


def test_one_cluster_per_module_scope_nested_by_dotted_name():
    trace = exp_chain_trace(4)
    trace.nodes[1].module = "encoder.layer1"
    trace.nodes[2].module = "encoder.layer1"
    trace.nodes[3].module = "encoder"
    source = tg.to_dot(trace).source
    assert "subgraph cluster_0 {" in source and "subgraph cluster_1 {" in source
    outer = source.index("label=encoder ")
    inner = source.index('label="encoder.layer1"')
    assert outer < inner < source.index("n1 [")  # layer1 nested inside encoder
    assert source.count("subgraph cluster_") == 2


def test_parameters_sit_in_their_module_cluster():
    trace = exp_chain_trace(2, module_every=2)
    trace.tensors[0].name, trace.tensors[0].is_parameter = "block0.weight", True
    source = tg.to_dot(trace).source
    cluster = source[source.index("subgraph cluster_0"):]
    assert cluster.index("t0 [") < cluster.index("}")


def test_collapse_modules_draws_one_box_per_module_with_edges_between_them():
    trace = exp_chain_trace(9, module_every=3)
    source = tg.to_dot(trace, collapse_modules=True).source
    assert "ExpBackward0\\n" not in source.split("tooltip")[0]
    for number in range(3):
        assert f'label="block{number}\\n3 nodes"' in statement(source, f"m{number}")
    assert edges(source) == ["t0 -> m0", "m0 -> m1", "m1 -> m2", "m2 -> t9"]


# -- quoting and determinism ---------------------------------------------------------------


@pytest.mark.parametrize("name", ['say "hi"', "back\\slash", "a\\", "<b>bold</b>", "<x",
                                  "naïve ∇θ 勾配", "node", "edge -> x", "{ } [ ] ; ="])
def test_names_are_quoted_so_dot_parses_each_label_as_one_string(name):
    source = tg.to_dot(mul_sum_trace(w_name=name), show_saved=False).source
    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed (sudo apt-get install graphviz)")
    result = subprocess.run(["dot", "-Tjson"], input=source.encode(), capture_output=True,
                            check=True)
    objects = json.loads(result.stdout)["objects"]
    labels = {item["name"]: item.get("label") for item in objects if "label" in item}
    # dot keeps escString escapes as written (our doubled backslashes, the \n between
    # lines); test_draw_svg.py checks the text as finally drawn.
    escaped = name.replace("\\", "\\\\")
    assert labels["t0"] == escaped + "\\n(2, 3)\\nstep 2"


def test_same_trace_gives_the_same_text():
    assert tg.to_dot(mul_sum_trace()).source == tg.to_dot(mul_sum_trace()).source


def test_bad_options_say_what_is_expected():
    with pytest.raises(ValueError, match="rankdir must be one of TB, LR, BT, RL; got 'XY'"):
        tg.to_dot(mul_sum_trace(), rankdir="XY")
    with pytest.raises(TypeError, match="expected a Tensor"):
        tg.to_dot(42)


# -- size ----------------------------------------------------------------------------------


def test_a_100000_node_chain_exports_without_recursion():
    trace = exp_chain_trace(100_000)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # anything recursive would die at once
    try:
        started = time.perf_counter()
        source = tg.to_dot(trace, max_nodes=None).source
        seconds = time.perf_counter() - started
    finally:
        sys.setrecursionlimit(limit)
    assert len(re.findall(r'^\tn\d+ \[label=ExpBackward0 ', source, re.MULTILINE)) == 100_000
    assert "n100000 -> t100000" in source and "t0 -> n1" in source
    assert seconds < 30


def test_plan_counts_boxes_for_the_size_check():
    assert plan_graph(exp_chain_trace(10)).size == 12  # x, 10 nodes, the output
    collapsed = plan_graph(exp_chain_trace(10, module_every=5),
                           options=Options(collapse_modules=True))
    assert collapsed.size == 4  # x, two module boxes, the output


def test_render_dot_format_needs_no_graphviz_program(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    written = tg.render(mul_sum_trace(), tmp_path / "graph.dot")
    assert (tmp_path / "graph.dot").read_text(encoding="utf-8") == \
        tg.to_dot(mul_sum_trace()).source
    assert written == str(tmp_path / "graph.dot")


def test_render_without_dot_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(tg.errors.GraphvizNotFoundError,
                       match=r"sudo apt-get install graphviz"):
        tg.render(mul_sum_trace(), tmp_path / "graph.svg")
    assert not (tmp_path / "graph.svg").exists()


def test_render_refuses_unknown_formats():
    with pytest.raises(ValueError, match="cannot write format 'bmpx'"):
        tg.render(mul_sum_trace(), "graph.bmpx")


def test_real_module_tree_gives_clusters_and_collapses_to_one_box_each():
    from tracegrad import nn

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with tg.record() as trace:
        model(tg.randn(5, 3)).pow(2).sum().backward()
    source = tg.to_dot(trace).source
    assert source.count("subgraph cluster_") == 3
    first = source[source.index("subgraph cluster_0"):]
    first = first[:first.index("}")]
    # clusters say which module class they are
    assert 'label="0: Linear"' in first and "AddmmBackward0" in first and "0.weight" in first
    assert 'label="2: Linear"' in source
    collapsed = tg.to_dot(trace, collapse_modules=True).source
    assert not re.search(r"^\tn\d+ \[label=\"?AddmmBackward0", collapsed, re.MULTILINE)
    assert 'label="1: ReLU\\n1 node' in collapsed
    links = edges(collapsed)
    assert len(links) == len({link.split(" [")[0] + ("dir" in link) * "~"
                                 for link in links})  # no duplicate module-to-module edges
    assert any(link.startswith("m0 -> m1") for link in links)


def test_a_training_loop_draws_the_selected_iteration_only():
    w = tg.randn(3, requires_grad=True)
    with tg.record() as trace:
        for _ in range(3):
            (w * 2).sum().backward()
    first = tg.to_dot(trace).source
    assert len(re.findall(r'\[label="?MulBackward0', first)) == 1
    second = tg.to_dot(trace, pass_index=1).source
    assert re.search(r'^\tn(\d+) \[label="?MulBackward0', second, re.MULTILINE).group(1) != \
        re.search(r'^\tn(\d+) \[label="?MulBackward0', first, re.MULTILINE).group(1)
    everything = tg.to_dot(trace, pass_index="all").source
    assert len(re.findall(r'\[label="?MulBackward0', everything)) == 3


def test_the_default_picture_is_the_program_s_first_pass_not_a_gradcheck_probe():
    w = tg.randn(3, requires_grad=True)
    with tg.record() as trace:
        for _ in range(3):
            (w * 2).sum().backward()
    for probe in trace.passes[:2]:
        probe.origin = "gradcheck"  # as the recorder marks gradcheck's probes
    source = tg.to_dot(trace).source
    assert 'label="backward pass 2 of 3: backward(' in source
    probe_picture = tg.to_dot(trace, pass_index=0).source
    assert "backward pass 0 of 3 (gradcheck probe)" in probe_picture
