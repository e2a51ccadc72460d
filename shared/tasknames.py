"""Celery task names: the only coupling between agents / schedules and the worker (no worker imports)."""

from memory_client.spool import INGEST as INGEST  # agents name it in their spool: defined once, client-side

EXTRACT_SESSION = "memory.extract_session"
RECONCILE_USER = "memory.reconcile_user"
SWEEP = "memory.sweep"
PRUNE = "memory.prune"
PURGE = "memory.purge"
DISTILL = "memory.distill"
CLOSE_IDLE_SESSIONS = "memory.close_idle_sessions"
