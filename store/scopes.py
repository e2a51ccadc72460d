"""Who owns a memory: user, agent or app scope, as stored in (scope, user_id, agent_id).

- user scope: the user's own memories (`agent_id` NULL); every extracted memory is user scope;
- agent scope: one agent's memories about one user (`agent_id` set); no other agent reads them;
- app scope: knowledge shared by the whole tenant, stored under the sentinel user `APP_USER`, which no real
  user id can take (ids start with a letter or a digit), so row-level security (by tenant) and the
  current-slot index (tenant, user, agent, slot) hold unchanged. Migration 0014 checks the three shapes.

A reader acting for a user (and maybe an agent) sees the user's memories, that agent's, and the app's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["user", "agent", "app"]
APP_USER = "*app"


@dataclass(frozen=True)
class Owner:
    """The owner of a memory being written (and of the rows reconciliation compares it with)."""

    scope: Scope
    user_id: str
    agent_id: str | None = None

    @classmethod
    def of(cls, scope: Scope, *, user_id: str | None, agent_id: str | None) -> Owner:
        if scope == "app":
            return cls("app", APP_USER)
        if not user_id:
            raise ValueError(f"a {scope}-scope memory needs a user_id")
        if scope == "agent":
            if not agent_id:
                raise ValueError("an agent-scope memory needs an agent_id")
            return cls("agent", user_id, agent_id)
        return cls("user", user_id)


def reader_where(
    params: dict[str, Any], *, user_id: str, agent_id: str | None, column_prefix: str = ""
) -> str:
    """The owner condition of a read for `user_id` (and `agent_id`): the user's own memories, the agent's,
    and the app's. Without an agent, agent-scope memories stay out (they belong to their agent only)."""
    p = column_prefix
    params["u"] = user_id
    params["app_user"] = APP_USER
    if agent_id:
        params["agent"] = agent_id
        return f"{p}user_id IN (:u, :app_user) AND ({p}agent_id IS NULL OR {p}agent_id = :agent)"
    return f"{p}user_id IN (:u, :app_user) AND {p}agent_id IS NULL"
