"""API keys: generated once, shown once, stored only as a SHA-256 hash, bound to one tenant."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import CursorResult
from sqlmodel import Session, col

from shared.db.models import ApiKey, Tenant
from shared.db.raw import fetch_all

KEY_PREFIX = "mk_"


def hash_key(key: str) -> str:
    # Keys carry 256 bits of randomness, so a plain (unsalted) SHA-256 is enough and lets us index the hash.
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    key_id: str
    tenant_id: str
    read_only: bool


def create_key(
    session: Session, tenant_id: str, *, name: str | None = None, read_only: bool = False
) -> tuple[str, ApiKey]:
    """Create the tenant if needed and a new key for it; return (the key, its row). The key is not stored."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    session.execute(insert(Tenant).values(id=tenant_id).on_conflict_do_nothing())
    row = ApiKey(
        id=uuid.uuid4().hex[:16],
        tenant_id=tenant_id,
        key_hash=hash_key(key),
        prefix=key[:10],
        name=name,
        read_only=read_only,
    )
    session.add(row)
    session.flush()
    return key, row


_AUTHENTICATE = (
    "SELECT key_id, tenant_id, read_only, set_config('app.tenant_id', tenant_id, true) "
    "FROM memory_authenticate(:h)"
)


def authenticate(session: Session, key: str) -> Principal | None:
    """The key's principal, with the current transaction scoped to its tenant (row-level security), in one
    round trip; None (and nothing scoped) for an unknown or revoked key."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    return authenticate_hash(session, hash_key(key))


def authenticate_hash(session: Session, key_hash: str) -> Principal | None:
    """`authenticate` for a key known by its hash (the console's session holds the hash, never the key):
    the same lookup, revocation and tenant scoping."""
    # through a SECURITY DEFINER function: row-level security hides api_keys until the tenant is known;
    # set_config runs only for a row the function returned
    rows = fetch_all(session, _AUTHENTICATE, {"h": key_hash})
    if not rows:
        return None
    row = rows[0]
    return Principal(key_id=row[0], tenant_id=row[1], read_only=bool(row[2]))


def revoke_key(session: Session, key_id: str, *, now: datetime) -> bool:
    result = session.execute(
        update(ApiKey)
        .where(col(ApiKey.id) == key_id, col(ApiKey.revoked_at).is_(None))
        .values(revoked_at=now)
    )
    return bool(cast(CursorResult[Any], result).rowcount)
