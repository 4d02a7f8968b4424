"""A time estimate for encoding many texts, shown before the work (or after a small first chunk).

The encoder's measured rate is kept in its vector-cache folder (`rate.json`, per thread count), so the next
large encode on this machine announces its duration before it starts:

    embedding 42,718 texts (all-MiniLM-L6-v2, 2 threads): about <T> at <R> texts/s (measured here before)

Without a recorded rate the first chunk is small (`first_chunk`), and the estimate follows it. The work is
counted in characters (an encoder's cost grows with a text's length, and the texts come longest first, so
a rate in texts per second from the first chunk would overstate the rest); the line reports texts/s. The
file is derived: a missing or unreadable one only means no estimate before the first chunk.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .progress import human_seconds

RATE_FILE = "rate.json"
MIN_TEXTS_TO_RECORD = 256  # fewer texts say more about the model's load than about its rate


def first_chunk(batch_size: int, chunk: int) -> int:
    """Texts in the first (calibration) chunk: a few batches, so the first estimate comes early."""
    return min(chunk, max(4 * batch_size, 256))


def chunk_bounds(n: int, first: int, chunk: int) -> list[tuple[int, int]]:
    """(start, end) of each chunk: one of `first` texts, then `chunk` at a time."""
    bounds, start = [], 0
    size = first
    while start < n:
        bounds.append((start, min(n, start + size)))
        start += size
        size = chunk
    return bounds



class EncodeClock:
    """Times one encode, prints the estimate once, records the rate in the cache folder when done."""

    def __init__(self, folder: Path | None, threads: int, total: int, label: str, show: bool, stream=None,
                 total_chars: int | None = None):
        self.folder, self.threads, self.total, self.label, self.show = folder, int(threads), int(total), label, show
        self.total_chars = int(total_chars) if total_chars else self.total  # without lengths: one unit per text
        self.stream = stream or sys.stderr
        self.done_texts, self.done_chars, self.seconds = 0, 0, 0.0
        self._announced = False
        self._t = time.perf_counter()

    def recorded_rate(self) -> tuple[float, float] | None:
        """(texts/s, characters/s) measured before with this thread count (None: never, or unreadable)."""
        if self.folder is None:
            return None
        try:
            info = json.loads((self.folder / RATE_FILE).read_text(encoding="utf-8"))
            entry = info["by_threads"][str(self.threads)]
            rate, chars = float(entry["texts_per_s"]), float(entry.get("chars_per_s", entry["texts_per_s"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (rate, chars) if rate > 0 and chars > 0 else None

    def _say(self, texts_per_s: float, chars_per_s: float, where: str) -> None:
        if self.show and not self._announced:
            self._announced = True
            eta = human_seconds((self.total_chars - self.done_chars) / chars_per_s)
            print(f"embedding {self.total:,} texts ({self.label}, {self.threads} thread{'s' * (self.threads != 1)}): "
                  f"about {eta} at {texts_per_s:,.0f} texts/s ({where})", file=self.stream, flush=True)

    def before(self) -> None:
        rate = self.recorded_rate()
        if rate is not None:
            self._say(*rate, "measured here before")

    def chunk_done(self, n: int, chars: int | None = None) -> None:
        now = time.perf_counter()
        self.seconds += now - self._t
        self._t = now
        self.done_texts += int(n)
        self.done_chars += int(chars) if chars is not None else int(n)
        if self.done_texts < self.total and self.seconds > 0:
            # the rest at the characters/s seen so far; texts/s shown is the whole encode's average then
            chars_per_s = self.done_chars / self.seconds
            texts_per_s = self.total * chars_per_s / self.total_chars
            self._say(texts_per_s, chars_per_s, f"from the first {self.done_texts:,}")

    def record(self) -> None:
        """Keep this encode's rate for the next estimate (only when it encoded enough texts)."""
        if self.folder is None or self.done_texts < MIN_TEXTS_TO_RECORD or self.seconds <= 0:
            return
        from .fileio import atomic_write_text

        path = self.folder / RATE_FILE
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            by = info["by_threads"] if isinstance(info.get("by_threads"), dict) else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            by = {}
        by[str(self.threads)] = {"texts_per_s": round(self.done_texts / self.seconds, 1),
                                 "chars_per_s": round(self.done_chars / self.seconds, 1), "texts": self.done_texts}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"by_threads": by}))
        except OSError:
            pass  # a read-only cache folder: no estimate next time, nothing else lost
