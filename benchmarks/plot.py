"""A dependency-free SVG line chart (accuracy vs k per system) for the README."""
from typing import Dict, Sequence

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


def accuracy_svg(series: Dict[str, Sequence[float]], ks: Sequence[int], title: str = "",
                 width: int = 640, height: int = 400) -> str:
    """``series``: system -> accuracy (%) at each of ``ks``; k is spaced evenly (log-like for 1/5/20/100)."""
    left, right, top, bottom = 60, 220, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for vs in series.values() for v in vs] or [0.0, 100.0]
    low = max(0.0, (min(values) // 10) * 10)
    high = min(100.0, (max(values) // 10 + 1) * 10)

    def x(i: int) -> float:
        return left + plot_w * i / max(len(ks) - 1, 1)

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - low) / max(high - low, 1e-9))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{_escape(title)}</text>']
    for tick in range(int(low), int(high) + 1, 10):
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for i, k in enumerate(ks):
        out.append(f'<text x="{x(i):.1f}" y="{top + plot_h + 20}" text-anchor="middle">top-{k}</text>')
    out.append(f'<text x="15" y="{top + plot_h / 2:.0f}" transform="rotate(-90 15 {top + plot_h / 2:.0f})" '
               f'text-anchor="middle">accuracy (%)</text>')
    for n, (name, vs) in enumerate(series.items()):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vs))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.extend(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>' for i, v in enumerate(vs))
        ly = top + 10 + 20 * n
        out.append(f'<line x1="{left + plot_w + 15}" x2="{left + plot_w + 35}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"/><text x="{left + plot_w + 40}" y="{ly + 4}">{_escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
