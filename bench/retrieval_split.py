"""Development / test split of the project's own retrieval dataset.

Split by scenario (all paraphrases of one scenario fall on the same side), by a stable
hash of its name: tune on ``dev``, score ``test`` only when a change is done.
"""

from __future__ import annotations

import zlib
from typing import Any


def own_split(question: dict[str, Any]) -> str:
    """``dev`` or ``test`` for a question of ``tests/data/retrieval``."""
    return "dev" if zlib.crc32(question["scenario"].encode()) % 2 == 0 else "test"
