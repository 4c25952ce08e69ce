"""Similarity search over stored embeddings, with numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


def unit(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to length 1 (a zero vector stays zero), as stores keep them."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return (array / norm if norm > 0 else array).astype(float).tolist()  # type: ignore[no-any-return]


def nearest(
    query: Sequence[float], vectors: Sequence[Sequence[float]], count: int
) -> list[tuple[int, float]]:
    """The `count` rows of `vectors` most similar (cosine) to `query`: (row, similarity), best
    first. Rows whose length differs from the query's are left out."""
    wanted = len(query)
    rows = [index for index, vector in enumerate(vectors) if len(vector) == wanted]
    if not rows or count <= 0 or wanted == 0:
        return []
    matrix: Matrix = np.asarray([vectors[i] for i in rows], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    target = np.asarray(unit(query), dtype=np.float32)
    similarities = matrix @ target
    count = min(count, len(rows))
    best = np.argsort(-similarities, kind="stable")[:count]
    return [(rows[int(i)], float(similarities[int(i)])) for i in best]


def combine(vectors: Sequence[Sequence[float]], strategy: str) -> list[float]:
    """One vector for the pieces of a long text: `average`, `weighted` (earlier pieces count
    more: 1, 1/2, 1/3, ...) or `first`."""
    matrix: Matrix = np.asarray(vectors, dtype=np.float32)
    if strategy == "first" or len(matrix) == 1:
        return matrix[0].astype(float).tolist()  # type: ignore[no-any-return]
    if strategy == "weighted":
        weights = 1.0 / np.arange(1, len(matrix) + 1, dtype=np.float32)
        return (weights @ matrix / weights.sum()).astype(float).tolist()  # type: ignore[no-any-return]
    return matrix.mean(axis=0).astype(float).tolist()  # type: ignore[no-any-return]
