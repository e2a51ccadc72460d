"""The embedder contract shared by every provider (hashing, local MiniLM, OpenAI-compatible).

- `name` identifies the vector space ("hashing-v1", "minilm-l6-v2", "openai:text-embedding-3-small"): vectors
  from two embedders compare only when name and `dim` are both equal, so stored rows record both.
- `embed(texts)` returns one vector of `dim` floats per text, in order, L2-normalised (pgvector cosine needs a
  non-zero vector, so even empty text gets a unit vector); providers batch internally.
- `embed_query(text)` embeds a search query; it may equal `embed([text])[0]`.
- Failures raise `EmbeddingError`, whose message never contains the texts (they are user data).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shared.errors import MemoryError_


class EmbeddingError(MemoryError_):
    """An embedder is missing, misconfigured, or its backend failed after bounded retries."""


@runtime_checkable
class Embedder(Protocol):
    # Read-only properties, so that plain attributes and computed ones (a dimension discovered from the
    # first response) both satisfy the protocol.
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def l2_normalise(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to unit length; raises `EmbeddingError` for a zero or non-finite vector."""
    norm = math.sqrt(math.fsum(v * v for v in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise EmbeddingError(f"cannot normalise a vector of norm {norm}")
    return [v / norm for v in vector]


def threads_from_env(variable: str, default: int = 1) -> int:
    """The thread count an embedder's runtime gets from `variable` (a whole number >= 1; `default` when unset)."""
    raw = os.environ.get(variable, str(default))
    try:
        threads = int(raw)
    except ValueError:
        raise EmbeddingError(f"{variable} must be a whole number of threads, not {raw!r}") from None
    if threads < 1:
        raise EmbeddingError(f"{variable} must be at least 1, not {threads}")
    return threads
