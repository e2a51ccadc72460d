"""Per-process resources of a worker: settings, the resolved URLs, the database engine.

Resolved lazily (the embedded stack starts only when a task first needs it) and re-created after fork.
"""

from __future__ import annotations

from functools import lru_cache

import structlog
from sqlalchemy import Engine

from core.reconcile import Policy, calibrated_policy
from shared.db.engine import get_engine, resolve_database_url, resolve_redis_url
from shared.publisher import TaskPublisher
from shared.settings import Settings, get_settings
from store.embeddings import Embedder, embedder_from_settings
from worker.llm import CircuitBreaker, LLMClient, LLMConfig, OpenAIClient, breaker_name


@lru_cache(maxsize=1)
def database_url() -> str:
    return resolve_database_url(get_settings())


def engine() -> Engine:
    return get_engine(
        database_url(),
        pool_size=2,
        application_name="memory-worker",
        role=get_settings().db_role_worker or None,
    )


def settings() -> Settings:
    return get_settings()


@lru_cache(maxsize=1)
def publisher() -> TaskPublisher:
    """Enqueues follow-up tasks by name, with the worker's own Celery application (its connection pool)."""
    from worker.app import app

    s = get_settings()
    return TaskPublisher(resolve_redis_url(s), queue=s.queue, timeout_s=2.0, app=app)


@lru_cache(maxsize=1)
def llm() -> LLMClient | None:
    """The LLM client when `OPENAI_API_KEY` is set; None means no LLM: rules-only extraction, deterministic
    summaries, judging, episodes, working memory and distillation (said once, at start-up)."""
    s = get_settings()
    if not s.llm_configured:
        structlog.get_logger("worker").warning(
            "llm.not_configured",
            detail="OPENAI_API_KEY is unset: rules-only extraction; turns that need the "
            "LLM stay llm_pending until one is configured",
        )
        return None
    config = LLMConfig(
        base_url=s.openai_base_url,
        api_key=s.openai_api_key or "",
        model=s.openai_model,
        timeout_s=s.openai_timeout_s,
        max_retries=s.openai_max_retries,
        structured_outputs=s.openai_structured_outputs,
        max_output_tokens=s.openai_max_output_tokens or None,
        temperature=s.openai_temperature if s.openai_temperature >= 0 else None,
    )
    return OpenAIClient(config)


@lru_cache(maxsize=8)
def breaker(stage: str) -> CircuitBreaker | None:
    """The circuit breaker of the configured endpoint for `stage` (None without an LLM)."""
    s = get_settings()
    if not s.llm_configured:
        return None
    return CircuitBreaker(
        publisher().redis,
        breaker_name(stage, base_url=s.openai_base_url, model=s.openai_model),
        threshold=s.llm_breaker_failures,
        base_s=s.llm_breaker_base_s,
        max_s=max(s.llm_breaker_max_s, s.llm_breaker_base_s),
        probe_ttl_s=s.openai_timeout_s * (s.openai_max_retries + 1) * 2 + 10,
    )


@lru_cache(maxsize=1)
def embedder() -> Embedder:
    check_schema()  # first: an embedder picked by `auto` may follow the database's
    return embedder_from_settings(get_settings())


def policy() -> Policy:
    check_schema()
    s = get_settings()
    base = calibrated_policy(s.embedder)
    return Policy(
        reinforce_cosine=s.reinforce_cosine if s.reinforce_cosine is not None else base.reinforce_cosine,
        similar_cosine=s.similar_cosine if s.similar_cosine is not None else base.similar_cosine,
        min_overlap=base.min_overlap,
        forget_cosine=base.forget_cosine,  # per embedder: e5's cosines would match every memory at 0.55
    )


@lru_cache(maxsize=1)
def check_schema() -> None:
    """Refuse to work when the database's embedding dimension or embedder differs from the settings (an
    embedder picked by `auto` follows the database instead)."""
    from shared.db.schema import resolve_embedding_schema
    from store.retokenize import warn_if_stale

    resolve_embedding_schema(engine(), get_settings())
    warn_if_stale(engine())
