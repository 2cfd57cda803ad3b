"""The SVG chart is well-formed XML with one bar per method and metric, axis labels and a legend."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from bench.evaluation.plot import grouped_bars, write_grouped_bars

SVG = "{http://www.w3.org/2000/svg}"


def test_one_bar_per_method_and_metric(tmp_path):
    methods = ["defense", "naive", "union", "majority", "trustrag"]
    series = [("context_asr", [0.1, 0.9, 0.5, 0.0, 0.3]), ("answer_asr", [0.05, 0.4, 0.2, 0.0, 0.1])]
    path = write_grouped_bars(tmp_path / "chart.svg", methods, series, title="attack <agent> & co",
                              y_label="attack success rate", x_label="method")
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]
    assert len(bars) == 10
    assert {(b.get("data-group"), b.get("data-series")) for b in bars} == {(m, s) for m in methods for s, _ in series}
    assert all(float(b.get("height")) >= 0 for b in bars)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"attack success rate", "method", "context_asr", "answer_asr", "Legend", "attack <agent> & co"} <= texts
    heights = {(b.get("data-group"), b.get("data-series")): float(b.get("height")) for b in bars}
    assert heights[("naive", "context_asr")] > heights[("defense", "context_asr")] \
        > heights[("majority", "context_asr")]


def test_none_values_draw_no_bar():
    root = ET.fromstring(grouped_bars(["a", "b"], [("m", [0.5, None])], title="t", y_label="y", x_label="x"))
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]) == 1
