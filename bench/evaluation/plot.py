"""A grouped bar chart as a standalone SVG file (no plotting library): groups on the x axis, one
bar per series inside each group, a y axis from 0 to y_max with grid lines, and a legend."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence
from xml.sax.saxutils import escape, quoteattr

PALETTE = ("#3b6ea8", "#e07b39", "#5a9e5a", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c")


def grouped_bars(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], *, title: str,
                 y_label: str, x_label: str, y_max: float = 1.0, ticks: int = 5) -> str:
    """Every series has one value per group; None draws no bar (the value is shown as 'n/a')."""
    for name, values in series:
        if len(values) != len(groups):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(groups)} groups")
    bar_w, gap = 18, 26
    group_w = max(1, len(series)) * bar_w + gap
    left, right, top, bottom = 70, 210, 50, 70
    plot_h = 260
    plot_w = max(240, len(groups) * group_w)
    width, height = left + plot_w + right, top + plot_h + bottom
    y_of = lambda v: top + plot_h - (min(max(v, 0.0), y_max) / y_max) * plot_h   # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + plot_w / 2}" y="24" text-anchor="middle" font-size="15" '
           f'font-weight="bold">{escape(title)}</text>']
    for i in range(ticks + 1):
        value = y_max * i / ticks
        y = y_of(value)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
               f'stroke="black"/>')
    out.append(f'<text x="18" y="{top + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {top + plot_h / 2})">{escape(y_label)}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 18}" text-anchor="middle">{escape(x_label)}</text>')
    for g, group in enumerate(groups):
        x0 = left + g * group_w + gap / 2
        for s, (name, values) in enumerate(series):
            value = values[g]
            x = x0 + s * bar_w
            color = PALETTE[s % len(PALETTE)]
            if value is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 4}" text-anchor="middle" '
                           f'font-size="9">n/a</text>')
                continue
            y = y_of(value)
            out.append(f'<rect class="bar" data-group={quoteattr(group)} data-series={quoteattr(name)} '
                       f'data-value="{value:g}" x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2}" '
                       f'height="{top + plot_h - y:.1f}" fill="{color}"><title>{escape(f"{group}, {name}: {value:g}")}'
                       f'</title></rect>')
            out.append(f'<text x="{x + (bar_w - 2) / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                       f'font-size="8">{value:.2f}</text>')
        out.append(f'<text x="{x0 + len(series) * bar_w / 2:.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle">{escape(group)}</text>')
    legend_x = left + plot_w + 20
    out.append(f'<g class="legend"><text x="{legend_x}" y="{top}" font-weight="bold">Legend</text>')
    for s, (name, _) in enumerate(series):
        y = top + 14 + s * 20
        out.append(f'<rect x="{legend_x}" y="{y}" width="12" height="12" fill="{PALETTE[s % len(PALETTE)]}"/>')
        out.append(f'<text x="{legend_x + 18}" y="{y + 10}">{escape(name)}</text>')
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def write_grouped_bars(path: Path, groups, series, **kwargs) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(grouped_bars(groups, series, **kwargs), encoding="utf-8")
    return path
