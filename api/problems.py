"""Errors as RFC 9457 `application/problem+json`, with a clear `detail` and field-level `errors`."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.errors import ContractError

log = structlog.get_logger("api")

PROBLEM = "application/problem+json"

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


def problem(
    status: int, detail: str, *, errors: list[dict[str, str]] | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    body.update(extra)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = problem(exc.status_code, str(exc.detail))
        for name, value in (exc.headers or {}).items():  # Retry-After of a 429, for one
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"] if p != "body") or "body", "message": e["msg"]}
            for e in exc.errors()
        ]
        return problem(422, "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors=errors)

    @app.exception_handler(DBAPIError)
    async def _database(_: Request, exc: DBAPIError) -> JSONResponse:
        # The API's pool does not ping a connection before each request (a round trip per request): a
        # connection the server dropped (restart, failover, idle kill) fails the one request that finds it,
        # and SQLAlchemy then discards the pool's older connections. Tell the client to retry, not 500.
        # Other operational errors (a statement timeout, a serialization failure) are retryable too.
        if exc.connection_invalidated:
            detail = "the database connection was lost; retry the request"
        elif isinstance(exc, OperationalError):
            detail = f"the database could not complete the request ({type(exc.orig).__name__}); retry it"
        else:
            raise exc  # a bug, not the database's state: a 500, logged with its traceback
        log.warning("api.database_unavailable", error=type(exc.orig).__name__)
        response = problem(503, detail)
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(ContractError)
    async def _contract(_: Request, exc: ContractError) -> JSONResponse:
        return problem(422, str(exc), errors=exc.errors)
