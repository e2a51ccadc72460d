"""The console's session and CSRF tokens: signed cookies (itsdangerous), never the API key itself.

After sign-in the session cookie holds, signed and time-stamped, the SHA-256 of the key (what `api_keys`
stores, useless against the API, which hashes what it is sent) and the session's CSRF token. Every request
authenticates that hash again through `api.keys.authenticate_hash`: a revoked key ends its sessions at once,
the transaction is scoped to the key's tenant exactly as the API's are, and read-only stays read-only.
Every POST form carries the CSRF token in a hidden `csrf_token` field, compared with the session's (the
sign-in form with the one of a short-lived pre-session cookie). Cookies are `HttpOnly`, `SameSite=Strict`,
`Secure` over HTTPS, and scoped to `/console`.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import HTTPException, Request, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

SESSION_COOKIE = "memory_console"
LOGIN_COOKIE = "memory_console_login"
COOKIE_PATH = "/console"
LOGIN_MAX_AGE_S = 30 * 60
MAX_FORM_FIELDS = 50


@dataclass(frozen=True)
class SessionData:
    key_hash: str
    csrf: str


class Signer:
    def __init__(self, secret: str, *, session_max_age_s: float):
        self._session = URLSafeTimedSerializer(secret, salt="memory-console-session")
        self._login = URLSafeTimedSerializer(secret, salt="memory-console-login")
        self.session_max_age_s = int(session_max_age_s)

    def session_value(self, data: SessionData) -> str:
        return self._session.dumps({"h": data.key_hash, "c": data.csrf})

    def read_session(self, value: str | None) -> SessionData | None:
        if not value:
            return None
        try:
            raw: Any = self._session.loads(value, max_age=self.session_max_age_s)
        except BadSignature:  # also SignatureExpired
            return None
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("h"), str)
            or not isinstance(raw.get("c"), str)
        ):
            return None
        return SessionData(key_hash=raw["h"], csrf=raw["c"])

    def login_value(self, token: str) -> str:
        return self._login.dumps(token)

    def read_login(self, value: str | None) -> str | None:
        if not value:
            return None
        try:
            raw: Any = self._login.loads(value, max_age=LOGIN_MAX_AGE_S)
        except BadSignature:
            return None
        return raw if isinstance(raw, str) else None


def new_token() -> str:
    return secrets.token_urlsafe(32)


def set_cookie(response: Response, request: Request, name: str, value: str, max_age_s: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age_s,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(
        name, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


async def form_fields(request: Request) -> dict[str, str]:
    """The POSTed form (`application/x-www-form-urlencoded`, what the console's forms send); 415 otherwise.
    The body's size is bounded by the app's body limit middleware."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise HTTPException(415, "the console's forms are sent as application/x-www-form-urlencoded")
    body = (await request.body()).decode("utf-8", errors="replace")
    try:
        pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError as exc:
        raise HTTPException(400, f"malformed form: {exc}") from exc
    return dict(pairs)


def check_csrf(expected: str | None, form: dict[str, str]) -> None:
    """403 unless the form's `csrf_token` is the expected one (compared in constant time)."""
    given = form.get("csrf_token", "")
    if not expected or not given or not hmac.compare_digest(expected.encode(), given.encode()):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and send the form again")
