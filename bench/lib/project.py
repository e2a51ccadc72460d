"""The project's own functions the benchmarks drive, imported in one place.

The store, worker and API layers are being reorganised; this module is where the benchmarks follow them
(mypy checks every name here). It imports the whole stack, so a benchmark imports it inside the functions
that measure (`from bench.lib import project`): benchmark modules stay cheap to import. Two places import
the project directly, for a reason: the corpus's spawned generator processes (`bench.lib.corpus`: the
keyword document, the content key, the hashing embedder) and the ingest probe (`bench.ingest.probe`, which
imports the worker the way `celery -A worker.app` does).
"""

from __future__ import annotations

from api.app import create_app
from api.keys import create_key, revoke_key
from core.distill import cluster, consolidate
from core.extraction.candidates import Turn
from core.extraction.gate import gate_window
from core.extraction.rules import extract_rules
from core.forgetting import ForgettingPolicy
from core.keywords import tokens
from core.reconcile import Policy
from shared.db.engine import ALL_TENANTS, get_engine, session_scope, set_tenant, sqlalchemy_url
from shared.db.migrate import migrate
from shared.db.vectors import vector_literal
from store import distillation as distillation_store
from store import pruning
from store.embeddings import make_embedder
from store.memories import lock_user
from store.search import search
from store.users import erase_user
from worker.llm import LLMConfig, OpenAIClient
from worker.services import distillation
from worker.services.reconcile import reconcile_user

__all__ = [
    "ALL_TENANTS",
    "ForgettingPolicy",
    "LLMConfig",
    "OpenAIClient",
    "Policy",
    "Turn",
    "cluster",
    "consolidate",
    "create_app",
    "create_key",
    "dispose_engines",
    "distillation",
    "distillation_store",
    "erase_user",
    "extract_rules",
    "gate_window",
    "get_engine",
    "lock_user",
    "make_embedder",
    "migrate",
    "pruning",
    "reconcile_user",
    "revoke_key",
    "search",
    "session_scope",
    "set_tenant",
    "sqlalchemy_url",
    "tokens",
    "vector_literal",
]


def dispose_engines() -> None:
    """Close the pooled connections of every engine this process made (before their database stops)."""
    from shared.db.engine import _engines

    for engine in list(_engines.values()):
        engine.dispose()
