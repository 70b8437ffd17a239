"""SVG drawn by the real Graphviz `dot`, parsed as XML: nodes, fill colours, labels, tooltips.

Marked ``graphviz``: conftest skips them, with the install command, where `dot` is absent.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest
from trace_builders import exp_chain_trace, inplace_violation_trace, mul_sum_trace

import tracegrad as tg

pytestmark = pytest.mark.graphviz

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def svg_nodes(path) -> dict[str, dict]:
    """DOT node id -> its fill colour, label lines and tooltip, read from the SVG."""
    root = ElementTree.parse(path).getroot()
    nodes = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        dot_id = group.find(f"{SVG}title").text
        shape = group.find(f".//{SVG}polygon")
        link = group.find(f".//{SVG}a")
        nodes[dot_id] = {
            "fill": shape.get("fill") if shape is not None else None,
            "label": [text.text for text in group.iter(f"{SVG}text")],
            "tooltip": link.get(f"{XLINK}title") if link is not None else None,
        }
    return nodes


def test_svg_has_every_box_with_its_colour_label_and_tooltip(tmp_path):
    path = tg.render(mul_sum_trace(), tmp_path / "graph.svg")
    nodes = svg_nodes(path)
    assert set(nodes) == {"t0", "t1", "t3", "n1", "n2"}
    assert nodes["n1"]["fill"] == "lightgrey"
    assert nodes["n1"]["label"] == ["MulBackward0", "step 1"]
    assert nodes["t0"]["fill"] == "lightblue"
    assert nodes["t0"]["label"][:3] == ["w", "(2, 3)", "step 2"]
    assert nodes["t1"]["fill"] == "orange"
    assert nodes["t3"]["fill"] == "#caff70"  # darkolivegreen1, as dot writes it
    tooltip = nodes["n1"]["tooltip"]
    assert "created at prog.py:3 in <module>: y = w * x" in tooltip
    assert "\n" in tooltip  # one fact per line


def test_svg_edges_carry_gradient_labels(tmp_path):
    path = tg.render(mul_sum_trace(nan_count=1), tmp_path / "graph.svg")
    root = ElementTree.parse(path).getroot()
    labels = [text.text for group in root.iter(f"{SVG}g") if group.get("class") == "edge"
              for text in group.iter(f"{SVG}text")]
    assert "(2, 3) ‖1.5‖ NaN×1" in labels


def test_svg_shows_the_violation_in_red_with_both_sites(tmp_path):
    nodes = svg_nodes(tg.render(inplace_violation_trace(), tmp_path / "bug.svg"))
    assert nodes["n1"]["fill"] == "red"
    assert "modified in place v0→v1 at prog.py:9" in nodes["n1"]["label"]
    assert "saved at prog.py:8" in nodes["n1"]["label"]
    assert "y.mul_(2)" in nodes["t1"]["tooltip"]


def test_names_with_markup_and_unicode_survive_into_the_svg(tmp_path):
    name = '<b>"w\\1"</b> ∇θ'
    nodes = svg_nodes(tg.render(mul_sum_trace(w_name=name), tmp_path / "graph.svg",
                                show_saved=False))
    assert nodes["t0"]["label"][0] == name


def test_png_is_written_by_dot(tmp_path):
    path = tg.render(mul_sum_trace(), tmp_path / "graph.png")
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_large_graph_collapses_modules_and_says_so(tmp_path):
    trace = exp_chain_trace(60, module_every=10)
    with pytest.warns(tg.draw.GraphCollapsedWarning, match="one box per nn.Module"):
        path = tg.render(trace, tmp_path / "big.svg", max_nodes=50)
    nodes = svg_nodes(path)
    assert sorted(nodes) == ["m0", "m1", "m2", "m3", "m4", "m5", "t0", "t60"]


def test_graph_too_large_without_modules_is_folded_not_refused(tmp_path):
    with pytest.warns(tg.draw.GraphCollapsedWarning, match="repeated structure folded"):
        path = tg.render(exp_chain_trace(60), tmp_path / "big.svg", max_nodes=50)
    nodes = svg_nodes(path)
    assert len(nodes) == 2  # the chain (with its leaf) as one box, and the output
    (chain,) = [node for node in nodes.values() if node["label"][0] != "t60"]
    assert chain["label"][:2] == ["ExpBackward0 ×60", "leaves: x"]
