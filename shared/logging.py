"""Structured logging: structlog for our code, the same processors for stdlib loggers (Celery, SQLAlchemy, httpx).

JSON lines when stderr is not a terminal (or `MEMORY_LOG_FORMAT=json`), a console renderer otherwise.
Every record passes through `redact_event`, so a secret that slipped into a log call is still masked.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import EventDict, WrappedLogger

from shared.redaction import redact, redact_field, secret_kind_of_name

_configured = False


def redact_event(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Last line of defence: mask secrets in every string value of a log record, and the whole value of a
    field whose name labels a secret (`password=...`, `api_key=...`)."""
    for key, value in list(event_dict.items()):
        if isinstance(key, str) and secret_kind_of_name(key) is not None:
            event_dict[key] = redact_field(key, value)
        elif isinstance(value, str) and len(value) > 6:
            event_dict[key] = redact(value)
    return event_dict


def configure_logging(*, level: str = "INFO", fmt: str = "auto", force: bool = False) -> None:
    """Configure structlog and route stdlib logging through the same processor chain. Idempotent."""
    global _configured
    if _configured and not force:
        return
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    shared_processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.ExtraAdder(),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer(sort_keys=False)
        if use_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[*shared_processors, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared_processors,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_event,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party loggers keep their own level but go through our handler.
    for name in (
        "celery",
        "kombu",
        "amqp",
        "sqlalchemy",
        "httpx",
        "httpcore",
        "openai",
        "uvicorn",
        "alembic",
    ):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True
    logging.getLogger("sqlalchemy.engine").setLevel(logging.WARNING)
    # Celery's per-task "received" / "succeeded" lines: our one canonical `task.finished` line replaces them
    # (and they cost a measurable share of a small task's time)
    logging.getLogger("celery.worker.strategy").setLevel(logging.WARNING)
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
    _configured = True


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)
