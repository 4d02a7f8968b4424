"""Text labels that keep apart: adjustText placement, overlap detection and box separation.

Used by every figure that labels points (`plotting`, `graph_drawing`, the methods' figures); deterministic
(a fixed iteration budget, never a time limit), so the same data gives the same bytes.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["LABEL_ITERATIONS", "place_labels", "label_overlaps", "data_boxes", "separate_boxes"]

LABEL_ITERATIONS = 800  # adjustText's budget per call: a fixed number of steps, never a time limit (reproducible)


def place_labels(ax, texts, x: Sequence[float] = (), y: Sequence[float] = (), objects=None,
                 connector: bool = True) -> int:
    """Move text labels apart (adjustText), away from the points (x, y) and `objects`; labels adjustText
    left overlapping are then pushed apart box by box (`separate_boxes`, inside the axes). Returns how many
    label pairs still overlap (0 but for labels that do not fit in the axes at all). Call it once the
    figure's layout is final (after `tight_layout`): this works in display coordinates. A thin grey line
    joins a label that moved to where it started. Deterministic: a fixed iteration budget, no time limit."""
    from adjustText import adjust_text

    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if not texts:
        return 0
    x, y = list(x), list(y)
    _stagger_coincident(ax, texts)
    anchors = [ax.transData.transform(t.get_position()) for t in texts]
    adjust_text(texts, x=x or None, y=y or None, objects=objects, ax=ax, iter_lim=LABEL_ITERATIONS, time_lim=None,
                expand=(1.2, 1.5), force_text=(0.5, 1.0), ensure_inside_axes=True)
    if label_overlaps(texts):
        _separate_texts(ax, texts)
    if connector:
        _connect(ax, texts, anchors)
    return len(label_overlaps(texts))


def _separate_texts(ax, texts, gap_px: float = 2.0) -> None:
    """Push the texts' rendered boxes apart inside the axes (display pixels), keeping each text's offset
    from its box."""
    import numpy as np

    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    centres = np.array([[(b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2] for b in boxes])
    half = np.array([[b.width / 2, b.height / 2] for b in boxes])
    moved = separate_boxes(centres, half, ax.get_window_extent(renderer), gap=gap_px, iterations=800)
    to_data = ax.transData.inverted()
    for t, old, new in zip(texts, centres, moved):
        px = ax.transData.transform(t.get_position()) + (new - old)
        t.set_position(tuple(to_data.transform(px)))


def _connect(ax, texts, anchors, min_px: float = 6.0) -> None:
    """A thin grey line from where each label started to the nearest point of its box, when it moved."""
    import numpy as np
    from matplotlib.lines import Line2D

    renderer = ax.figure.canvas.get_renderer()
    to_data = ax.transData.inverted()
    for t, (ax0, ay0) in zip(texts, anchors):
        b = t.get_window_extent(renderer)
        near = np.array([min(max(ax0, b.x0), b.x1), min(max(ay0, b.y0), b.y1)])
        if np.hypot(near[0] - ax0, near[1] - ay0) < min_px:
            continue
        (x0, y0), (x1, y1) = to_data.transform([(ax0, ay0), near])
        ax.add_line(Line2D([x0, x1], [y0, y1], color="#8c8c8c", lw=0.6, zorder=2.5))


def _stagger_coincident(ax, texts, tol_px: float = 3.0) -> None:
    """Labels that start at (almost) the same point - runs with equal cost and score - get no direction from
    adjustText's repulsion and stay piled up: start the k-th of such a pile k text heights above the first."""
    renderer = ax.figure.canvas.get_renderer()
    to_data = ax.transData.inverted()
    seen: list[tuple[float, float, int]] = []  # display x, y of each pile's first label, how many so far
    for t in texts:
        px, py = ax.transData.transform(t.get_position())
        for i, (sx, sy, k) in enumerate(seen):
            if abs(px - sx) <= tol_px and abs(py - sy) <= tol_px:
                h = t.get_window_extent(renderer).height * 1.2
                t.set_position(to_data.transform((px, py + (k + 1) * h)))
                seen[i] = (sx, sy, k + 1)
                break
        else:
            seen.append((px, py, 0))


def label_overlaps(texts, pad_px: float = 0.0) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts whose rendered bounding boxes overlap (by more than `pad_px`)."""
    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if not texts:
        return []
    fig = texts[0].figure
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    out = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > pad_px and h > pad_px:
                out.append((texts[i].get_text(), texts[j].get_text()))
    return out


def data_boxes(ax, display_boxes) -> list:
    """Display-coordinate boxes as data-coordinate `Bbox`es (what adjustText's `objects` expects)."""
    from matplotlib.transforms import Bbox

    inv = ax.transData.inverted()
    return [Bbox(inv.transform(b.get_points())) for b in display_boxes]


def separate_boxes(centers, half_sizes, bounds, gap: float = 6.0, iterations: int = 400, nudge: float = 0.5):
    """Push axis-aligned boxes (centres and half sizes in display pixels) apart until none overlap, each
    kept inside `bounds` (a Bbox). A pair that overlaps moves apart along the axis where it overlaps
    less, both boxes by half the overlap. `bounds=None`: no bounds (any units; `nudge`, the extra step, in the same units). Deterministic; returns the
    new centres."""
    import numpy as np

    c = np.array(centers, dtype=float)
    hw = np.asarray(half_sizes, dtype=float) + gap / 2
    if bounds is None:  # free: the caller sizes the drawing to the boxes afterwards
        lo, hi = np.full_like(c, -np.inf), np.full_like(c, np.inf)
    else:
        lo = np.array([bounds.x0, bounds.y0]) + hw
        hi = np.maximum(np.array([bounds.x1, bounds.y1]) - hw, lo)
    n = len(c)
    rank = np.arange(n)
    for _ in range(iterations):
        d = c[None, :, :] - c[:, None, :]  # d[i, j] = c[j] - c[i]
        need = hw[None, :, :] + hw[:, None, :]
        over = need - np.abs(d)
        hit = (over[..., 0] > 0) & (over[..., 1] > 0) & (rank[None, :] > rank[:, None])
        if not hit.any():
            break
        shift = np.zeros_like(c)
        for i, j in zip(*np.nonzero(hit)):
            axis = 0 if over[i, j, 0] < over[i, j, 1] else 1
            sign = 1.0 if d[i, j, axis] > 0 or (d[i, j, axis] == 0 and axis == 0) else -1.0
            if d[i, j, axis] == 0 and axis == 1:
                sign = 1.0
            step = 0.5 * over[i, j, axis] + nudge
            shift[j, axis] += sign * step
            shift[i, axis] -= sign * step
        c = np.clip(c + shift, lo, hi)
    return c
