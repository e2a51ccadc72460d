"""Celery task names: the only coupling between agents / schedules and the worker (no worker imports)."""

INGEST = "memory.ingest"
EXTRACT_SESSION = "memory.extract_session"
SWEEP = "memory.sweep"
PRUNE = "memory.prune"
PURGE = "memory.purge"
DISTILL = "memory.distill"
CLOSE_IDLE_SESSIONS = "memory.close_idle_sessions"
