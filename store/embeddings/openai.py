"""Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint, through the `openai` SDK.

Contract:
- `embed(texts)` sends `ceil(len(texts) / batch_size)` requests (`client.embeddings.create(model=...,
  input=[...])`), one batch at a time, and returns the vectors in input order, re-normalised (providers differ
  on whether they normalise).
- Transient failures (408, 409, 429, 5xx, timeouts, dropped connections) are retried per batch, at most
  `max_retries` times, sleeping `compute_backoff(...)` in between (the server's Retry-After wins); the SDK's
  own retries are off so that the bound is ours. Anything else, or the retries running out, raises
  `EmbeddingError` naming the status or reason, never the texts.
- `dim` is the configured dimension, checked against every response; when none is configured it is
  discovered from the first response (reading `dim` before any call sends one short probe request).
- Empty strings are sent as a single space: the API rejects "" but every text must get a vector.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import openai

from shared.openai_sdk import compute_backoff, is_retryable_status, retry_after_seconds, sdk_client
from store.embeddings.base import EmbeddingError, l2_normalise

log = logging.getLogger(__name__)

DEFAULT_MODEL = "text-embedding-3-small"
_DIM_PROBE_TEXT = "dimension probe"


@dataclass(frozen=True)
class OpenAIEmbedderConfig:
    api_key: str
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    dim: int | None = None  # None -> taken from the first response
    batch_size: int = 128
    timeout_s: float = 20
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8


class OpenAIEmbedder:
    def __init__(
        self,
        config: OpenAIEmbedderConfig,
        *,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if config.batch_size < 1:
            raise EmbeddingError(f"embedding batch size must be at least 1, not {config.batch_size}")
        if config.dim is not None and config.dim < 1:
            raise EmbeddingError(f"embedding dim must be positive, not {config.dim}")
        self._config = config
        self._client = sdk_client(
            client, api_key=config.api_key, base_url=config.base_url, timeout_s=config.timeout_s
        )
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._dim = config.dim
        self.name = f"openai:{config.model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed([_DIM_PROBE_TEXT])
        assert self._dim is not None  # set by the first successful response
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        size = self._config.batch_size
        vectors: list[list[float]] = []
        for start in range(0, len(texts), size):
            vectors.extend(self._embed_batch([text or " " for text in texts[start : start + size]]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]

    # internals ---------------------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        raw = self._request(batch)
        if len(raw) != len(batch):
            raise EmbeddingError(f"embeddings endpoint returned {len(raw)} vectors for {len(batch)} inputs")
        for vector in raw:
            if self._dim is None:
                self._dim = len(vector)
            elif len(vector) != self._dim:
                raise EmbeddingError(
                    f"embeddings endpoint returned a {len(vector)}-dim vector, expected {self._dim} "
                    f"(model {self._config.model!r})"
                )
        return [l2_normalise(vector) for vector in raw]

    def _request(self, batch: list[str]) -> list[list[float]]:
        """One batch with bounded retries of transient failures; the vectors in input order."""
        retries_done = 0
        while True:
            try:
                response = self._client.embeddings.create(model=self._config.model, input=batch)
            except openai.APIStatusError as err:
                status = err.status_code
                if not is_retryable_status(status) or retries_done >= self._config.max_retries:
                    raise EmbeddingError(
                        f"embeddings request failed with HTTP {status} after {retries_done} retries"
                    ) from None
                self._back_off(retries_done, retry_after_s=retry_after_seconds(err.response.headers))
            except openai.APIConnectionError as err:  # includes APITimeoutError
                reason = "timeout" if isinstance(err, openai.APITimeoutError) else "connection error"
                if retries_done >= self._config.max_retries:
                    raise EmbeddingError(
                        f"embeddings request failed: {reason} after {retries_done} retries"
                    ) from None
                self._back_off(retries_done, retry_after_s=None)
            except openai.OpenAIError as err:
                raise EmbeddingError(f"embeddings request failed: {type(err).__name__}") from None
            else:
                ordered = sorted(response.data, key=lambda item: item.index)
                return [[float(x) for x in item.embedding] for item in ordered]
            retries_done += 1

    def _back_off(self, attempt: int, *, retry_after_s: float | None) -> None:
        delay_s = compute_backoff(
            attempt,
            base_s=self._config.backoff_base_s,
            max_s=self._config.backoff_max_s,
            rng=self._rng,
            retry_after_s=retry_after_s,
        )
        log.info("embeddings call failed transiently; retry %d in %.2fs", attempt + 1, delay_s)
        self._sleep(delay_s)
