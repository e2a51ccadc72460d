"""The synthetic memory corpus: sentences from a template grammar, users, queries, and the rows of a load.

Contract (deterministic: the same seed gives the same corpus on every machine):
- `sentence(rng)` is one (kind, category, content) from 12 templates over ~200 slot words (1 in 12
  Chinese); `user_id(n)` names user n; `queries(seed, n, users)` draws (user, query sentence) pairs;
- `make_batch(task)` makes rows [start, stop) of a load, embedded by the project's hashing embedder
  (384-dim), in the layout `ROW_FIELDS` (what `bench.lib.db.load_store` copies into the database); memory
  `n` belongs to user `n % users`. It runs in spawned processes, so it only takes and returns plain data;
- ages and decay are relative to the fixed `NOW`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DIM = 384
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)  # fixed: ages and decay are relative to it

# fmt: off
WORDS: dict[str, tuple[str, ...]] = {
    "tool": (
        "pnpm", "npm", "yarn", "poetry", "uv", "pip", "docker", "podman", "terraform", "pulumi", "vim",
        "neovim", "vscode", "emacs", "postgres", "mysql", "sqlite", "redis", "kafka", "rabbitmq", "pytest",
        "jest", "vitest", "ruff", "black", "mypy", "eslint", "prettier", "bazel", "gradle", "celery",
        "airflow", "dagster", "fastapi", "django", "flask", "rails", "nextjs", "svelte", "vue",
    ),
    "domain": (
        "frontend", "backend", "data pipeline", "infrastructure", "mobile", "machine learning", "billing",
        "search", "analytics", "auth", "payments", "reporting", "onboarding", "internal tools",
    ),
    "city": (
        "Berlin", "Lisbon", "Toronto", "Austin", "Singapore", "Nairobi", "Oslo", "Seoul", "Madrid",
        "Melbourne", "Denver", "Warsaw", "Dublin", "Osaka", "Bogota", "Prague", "Zurich", "Chennai",
    ),
    "job": (
        "backend engineer", "data scientist", "product manager", "designer", "SRE", "teacher", "nurse",
        "researcher", "founder", "student", "consultant", "QA engineer", "architect", "analyst",
    ),
    "project": (
        "atlas", "beacon", "cobalt", "delta", "ember", "falcon", "granite", "harbor", "ion", "juniper",
        "keystone", "lumen", "meridian", "nova", "orbit", "pioneer", "quartz", "rook",
    ),
    "infra": (
        "Kubernetes", "a single Hetzner box", "ECS", "Cloud Run", "Fly.io", "bare metal", "Nomad", "Lambda",
        "a Raspberry Pi cluster", "Heroku",
    ),
    "env": ("staging", "production", "the dev cluster", "the EU region", "the canary pool", "QA"),
    "relation": ("sister", "brother", "partner", "manager", "cofounder", "daughter", "son", "mentor"),
    "name": ("Ana", "Ben", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jia", "Kofi", "Lena"),
    "hobby": (
        "climbing", "chess", "baking sourdough", "trail running", "photography", "gardening", "jazz",
        "board games", "cycling", "pottery", "birdwatching", "sailing",
    ),
    "cause": (
        "a missing NOT NULL default", "an expired TLS certificate", "a stale Docker layer cache",
        "a race in the migration runner", "an exhausted connection pool", "a wrong IAM policy",
        "a timezone bug in the scheduler", "an out-of-memory kill", "a flaky DNS resolver",
    ),
    "fix": (
        "backfilling the column first", "renewing the certificate", "pinning the base image",
        "adding an advisory lock", "raising the pool size", "scoping the policy to one bucket",
        "storing times in UTC", "streaming the export", "caching lookups locally",
    ),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the release day", "the last sprint"),
    "lang": ("English", "German", "Portuguese", "Spanish", "French", "Chinese"),
    "drink": ("咖啡", "绿茶", "乌龙茶", "豆浆", "奶茶"),
    "zcity": ("北京", "上海", "深圳", "杭州", "成都", "广州"),
}
# fmt: on
_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    (
        "semantic",
        "preference",
        "The user prefers {tool} {ver} over {tool} for {domain} projects since {date}",
    ),
    (
        "semantic",
        "profile",
        "The user lives in {city} since {year} and works as a {job} at a {count}-person company",
    ),
    ("semantic", "fact", "The {project} service runs on {infra} in {env} with {count} replicas"),
    ("semantic", "profile", "The user's {relation} {name} is {age} and loves {hobby}"),
    ("semantic", "preference", "For {domain} work the user always reaches for {tool} and {tool} {ver}"),
    ("procedural", "constraint", "Never suggest {tool} for {domain} code; use {tool} {ver} instead"),
    ("procedural", "feedback", "Answer in {lang}, keep answers under {count} words, show {tool} examples"),
    (
        "procedural",
        "constraint",
        "Run {tool} before every commit to the {project} {domain} code (ticket {ticket})",
    ),
    (
        "episodic",
        "lesson",
        "Deploying {project} {ver} to {env} on {date} failed because of {cause}; fixed by {fix}",
    ),
    (
        "episodic",
        "decision",
        "On {date} the team chose {tool} for the {project} {domain} rewrite, budget {count}k",
    ),
    ("episodic", "lesson", "The {project} outage in {env} on {date} came from {cause}, found with {tool}"),
    ("semantic", "preference", "用户{year}年起住在{zcity}，每天早上喝{drink}，预算{count}元"),
)
_NUMBERS = {
    "ver": lambda r: f"{r.randrange(1, 25)}.{r.randrange(0, 40)}",
    "date": lambda r: f"{r.randrange(2019, 2027)}-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}",
    "year": lambda r: str(r.randrange(1995, 2027)),
    "count": lambda r: str(r.randrange(2, 900)),
    "age": lambda r: str(r.randrange(3, 80)),
    "ticket": lambda r: f"{r.choice('ABCDEFGH')}{r.choice('PQRSTUVW')}-{r.randrange(10, 9999)}",
}


def sentence(rng: random.Random) -> tuple[str, str, str]:
    """(kind, category, content) of one synthetic memory."""
    kind, category, template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
    parts = template.split("{")
    out = [parts[0]]
    for part in parts[1:]:
        key, rest = part.split("}", 1)
        number = _NUMBERS.get(key)
        out.append((number(rng) if number else rng.choice(WORDS[key])) + rest)
    return kind, category, "".join(out)


def user_id(n: int) -> str:
    return f"u{n:05d}"


def queries(seed: int, n: int, users: int) -> list[tuple[str, str]]:
    """`n` (user id, query) pairs: a random user of `users` and a synthetic sentence each."""
    rng = random.Random(f"queries:{seed}")
    return [(user_id(rng.randrange(users)), sentence(rng)[2]) for _ in range(n)]


_EMBEDDER: Any = None


def embedder() -> Any:
    """The project's hashing embedder at DIM (one per process)."""
    global _EMBEDDER
    if _EMBEDDER is None:
        from store.embeddings import HashingEmbedder

        _EMBEDDER = HashingEmbedder(DIM)
    return _EMBEDDER


@dataclass(frozen=True)
class Profile:
    """How the rows of a load look besides their text: `search` (all active, ages up to a year) or
    `lifecycle` (a store the hourly prune has been keeping: ages, accesses, pins, TTLs, archived rows)."""

    name: str = "search"
    embed: bool = True  # False: every row gets one of a small pool of real vectors (same width, cheap)


# (name, PostgreSQL type) of each value of a row `make_batch` returns, in order
ROW_FIELDS: tuple[tuple[str, str], ...] = (
    ("n", "int8"),
    ("uid", "int4"),
    ("kind", "text"),
    ("category", "text"),
    ("content", "text"),
    ("doc", "text"),  # the keyword document (`core.keywords.document`), made a tsvector in SQL
    ("ckey", "text"),  # `core.reconcile.content_key`
    ("age_s", "int8"),
    ("access", "int4"),
    ("pinned", "bool"),
    ("expires_s", "int8"),
    ("status", "text"),
    ("archived_s", "int8"),
    ("emb", "vector"),
)


def make_batch(task: tuple[int, int, int, int, str, bool]) -> tuple[int, list[tuple[Any, ...]]]:
    """Rows [start, stop) of a load (runs in a spawned process): deterministic from (seed, start)."""
    import numpy as np

    from core import keywords
    from core.reconcile import content_key

    seed, start, stop, users, profile, embed = task
    rng = random.Random(f"{seed}:{start}")
    made = [sentence(rng) for _ in range(start, stop)]
    texts = [m[2] for m in made]
    emb = embedder()
    if embed:
        vectors = np.asarray(emb.embed(texts), dtype=np.float32)
    else:
        pool = np.asarray(emb.embed([sentence(random.Random(i))[2] for i in range(256)]), dtype=np.float32)
        vectors = pool[np.arange(start, stop) % len(pool)]
    rows = []
    for offset, (kind, category, content) in enumerate(made):
        n = start + offset
        life = (
            _lifecycle(rng)
            if profile == "lifecycle"
            else (rng.randrange(365 * 86400), rng.randrange(4), False, None, "active", None)
        )
        rows.append(
            (
                n,
                n % users,
                kind,
                category,
                content,
                keywords.document(content),
                content_key(content),
                *life,
                vectors[offset],
            )
        )
    return start, rows


def _lifecycle(rng: random.Random) -> tuple[int, int, bool, int | None, str, int | None]:
    """(age_s, access_count, pinned, expires_in_s, status, archived_age_s) of a store pruned hourly: most
    rows are young; a minority has aged past three half-lives since the last run, a few carry a TTL, and
    earlier runs left archived rows (archived up to 90 days ago; retention is 30 days)."""
    day = 86400
    r = rng.random()
    if r < 0.06:
        return rng.randrange(100 * day, 700 * day), 0, False, None, "archived", rng.randrange(0, 90 * day)
    age = int(rng.expovariate(1 / (60 * day)))  # mean 60 days
    access = min(int(rng.expovariate(1 / 1.5)), 50)
    pinned = rng.random() < 0.01
    expires = rng.randrange(-5 * day, 60 * day) if rng.random() < 0.04 else None
    return age, access, pinned, expires, "active", None
