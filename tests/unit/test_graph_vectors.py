"""The stored form of a turn vector: packed float32, read back exactly or not at all."""

from __future__ import annotations

import numpy as np

from turngraph.workers.graph.vectors import pack, unpack


def test_a_packed_vector_reads_back_as_the_same_float32_components() -> None:
    vector = (0.123456, -0.5, 1.0, 3e-7)
    back = unpack(pack(vector))
    assert back is not None and back.dtype == np.float32
    assert back.tolist() == np.asarray(vector, dtype=np.float32).tolist()


def test_missing_or_malformed_stored_vectors_are_none() -> None:
    assert unpack(None) is None
    assert unpack("") is None
    assert unpack("not base64!") is None
    assert unpack("AAA=") is None  # two bytes: not whole float32 components
    assert unpack([0.1, 0.2]) is None
