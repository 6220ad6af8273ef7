"""Dependency-free SVG line charts for the README (accuracy vs k, loss curves)."""

import math
from typing import Dict, Optional, Sequence, Tuple

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
Series = Tuple[Sequence[float], Sequence[float]]  # xs, ys


def line_chart(
    series: Dict[str, Series],
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    x_ticks: Optional[Dict[float, str]] = None,
    markers: bool = True,
    width: int = 640,
    height: int = 400,
) -> str:
    """One polyline per series, a legend on the right; y ticks at round steps."""
    left, right, top, bottom = 60, 230, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for x_values, _ in series.values() for x in x_values] or [0.0, 1.0]
    ys = [y for _, y_values in series.values() for y in y_values] or [0.0, 1.0]
    x_low, x_high = min(xs), max(xs)
    step = _nice_step((max(ys) - min(ys)) or 1.0)
    y_low, y_high = step * (min(ys) // step), step * (max(ys) // step + 1)

    def px(x: float) -> float:
        return left + plot_w * (x - x_low) / max(x_high - x_low, 1e-12)

    def py(y: float) -> float:
        return top + plot_h * (1 - (y - y_low) / max(y_high - y_low, 1e-12))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">{_escape(title)}</text>',
    ]
    tick = y_low
    while tick <= y_high + 1e-9:
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(tick):.1f}" y2="{py(tick):.1f}" stroke="#ddd"/>'
            f'<text x="{left - 8}" y="{py(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
        tick += step
    for x, label in (x_ticks or {x: f"{x:g}" for x in (x_low, (x_low + x_high) / 2, x_high)}).items():
        out.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 20}" text-anchor="middle">{_escape(label)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">{_escape(x_label)}</text>')
    out.append(
        f'<text x="15" y="{top + plot_h / 2:.0f}" transform="rotate(-90 15 {top + plot_h / 2:.0f})" '
        f'text-anchor="middle">{_escape(y_label)}</text>'
    )
    for n, (name, (x_values, y_values)) in enumerate(series.items()):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(x_values, y_values))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        if markers:
            out.extend(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>' for x, y in zip(x_values, y_values)
            )
        ly = top + 10 + 20 * n
        out.append(
            f'<line x1="{left + plot_w + 15}" x2="{left + plot_w + 35}" y1="{ly}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"/><text x="{left + plot_w + 40}" y="{ly + 4}">{_escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def accuracy_svg(series: Dict[str, Sequence[float]], ks: Sequence[int], title: str = "") -> str:
    """Accuracy (%) at each of ``ks`` per system; k evenly spaced (1/5/20/100 is log-like)."""
    return line_chart(
        {name: (list(range(len(ks))), values) for name, values in series.items()},
        title=title,
        y_label="accuracy (%)",
        x_ticks={i: f"top-{k}" for i, k in enumerate(ks)},
    )


def _nice_step(span: float) -> float:
    """A round tick step (1, 2 or 5 x a power of ten) giving about six ticks over ``span``."""
    raw = span / 6
    base = 10 ** math.floor(math.log10(raw))
    return next(factor * base for factor in (1, 2, 5, 10) if raw <= factor * base)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
