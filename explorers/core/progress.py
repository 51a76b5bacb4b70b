"""What a search reports as it goes (``Progress``, passed to ``options.progress``), and how
often it reads the clock to decide whether to."""
from __future__ import annotations

from dataclasses import dataclass

PROGRESS_EVERY = 2048  # expansions between clock reads


@dataclass(frozen=True)
class Progress:
    generated: int
    distinct: int
    depth: int
    queue: int          # states discovered but not yet expanded
    seconds: float

    @property
    def states_per_second(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else 0.0
