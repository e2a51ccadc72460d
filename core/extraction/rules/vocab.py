"""The vocabulary both rule sets share: the tool lexicon and the names of languages. Pure: no I/O.

- `find_tools(text)` -> the known tools named in `text`, with their spans, in order. Tool names glued to CJK
  text ("项目用PG") match too; aliases that are also common words count only in their own spelling ("Go").
- `is_tool(text)`: `text` is exactly one of the lexicon's names (the name and place rules reject those).
- A `Tool` has one canonical spelling (its slot's value), a display name for content, and its slot (None
  where several can be in use at once).
- `LANGUAGE_CODES`: a language's name, in English or Chinese, -> its code ("mandarin" / "中文" -> "zh").
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Tool(NamedTuple):
    canonical: str  # the slot value: lower-case, one spelling per tool ("postgresql" for "PG")
    display: str  # how content names it
    slot: str | None  # None: several can be in use at once (docker, redis, ...)


# One line per slot: `canonical[=Display][(alias|alias)]`; "_" stands for a space. "-" means no slot.
_TOOL_LEXICON = """
project.package_manager: pnpm npm yarn=Yarn bun=Bun pip(pip|pip3) poetry=Poetry uv pipenv=Pipenv
    conda=Conda(conda|miniconda)
project.database: postgresql=PostgreSQL(postgresql|postgres|postgre|pg|pgsql) mysql=MySQL mariadb=MariaDB
    sqlite=SQLite(sqlite|sqlite3) mongodb=MongoDB(mongodb|mongo) oracle=Oracle(oracle_db) dynamodb=DynamoDB
    sql_server=SQL_Server(sql_server|sqlserver|mssql) clickhouse=ClickHouse cockroachdb=CockroachDB
    cassandra=Cassandra
project.language: python=Python(python|python3) typescript=TypeScript(typescript|ts) go=Go(golang|go)
    javascript=JavaScript(javascript|js) rust=Rust java=Java kotlin=Kotlin c#=C#(c#|csharp) c++=C++(c++|cpp)
    ruby=Ruby php=PHP swift=Swift scala=Scala elixir=Elixir dart=Dart
project.framework: react=React(react|reactjs|react.js) vue=Vue(vue|vuejs|vue.js|vue3) angular=Angular
    svelte=Svelte(svelte|sveltekit) next.js=Next.js(next.js|nextjs) nuxt=Nuxt(nuxt|nuxtjs|nuxt.js)
    django=Django flask=Flask fastapi=FastAPI rails=Rails(ruby_on_rails|rails) laravel=Laravel flutter=Flutter
    spring_boot=Spring_Boot(spring_boot|springboot) express=Express(express.js|expressjs|express)
    nestjs=NestJS(nestjs|nest.js)
project.test_framework: pytest jest=Jest vitest=Vitest
project.orm: sqlalchemy=SQLAlchemy prisma=Prisma typeorm=TypeORM drizzle=Drizzle
project.bundler: vite=Vite webpack
project.cloud: aws=AWS gcp=GCP(gcp|google_cloud) azure=Azure
user.editor: vim=Vim neovim=Neovim(neovim|nvim) emacs=Emacs pycharm=PyCharm intellij=IntelliJ(intellij|idea)
    vscode=VS_Code(vscode|vs_code|visual_studio_code)
user.os: macos=macOS(macos|mac|macbook|osx|os_x) linux=Linux windows=Windows ubuntu=Ubuntu
-: docker=Docker kubernetes=Kubernetes(kubernetes|k8s) terraform=Terraform redis=Redis kafka=Kafka
    graphql=GraphQL tailwind=Tailwind_CSS(tailwind|tailwindcss) eslint=ESLint prettier=Prettier ruff=Ruff mypy
    github=GitHub gitlab=GitLab jira=Jira celery=Celery nginx sentry=Sentry elasticsearch=Elasticsearch
    rabbitmq=RabbitMQ node.js=Node.js(node.js|nodejs|node)
"""
_ENTRY_RE = re.compile(r"([^\s=(]+)(?:=([^\s(]+))?(?:\(([^)]*)\))?")


def _load_lexicon(text: str) -> dict[str, Tool]:
    by_alias: dict[str, Tool] = {}
    slot: str | None = None
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            head, line = line.split(":", 1)
            slot = None if head == "-" else head
        for canonical, display, aliases in _ENTRY_RE.findall(line):
            tool = Tool(canonical.replace("_", " "), (display or canonical).replace("_", " "), slot)
            for alias in (aliases or canonical).split("|"):
                by_alias[alias.replace("_", " ")] = tool
    return by_alias


_TOOLS = _load_lexicon(_TOOL_LEXICON)
# Tool names glued to CJK text ("项目用PG") must match too, so the boundaries are ASCII-only.
_TOOL_RE = re.compile(
    r"(?<![A-Za-z0-9_.#+-])(?:"
    + "|".join(re.escape(alias) for alias in sorted(_TOOLS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_#+]|\.[a-z])",
    re.I,
)
# Aliases that are also common words count only in these spellings ("Go", not "go").
_CASE_SENSITIVE = {"go": ("Go", "GO"), "mac": ("Mac",), "node": ("Node",)}


def find_tools(text: str) -> list[tuple[Tool, int, int]]:
    """Known tools named in `text`, with their spans, in order."""
    found = []
    for match in _TOOL_RE.finditer(text):
        alias = match.group().lower()
        if alias in _CASE_SENSITIVE and match.group() not in _CASE_SENSITIVE[alias]:
            continue
        found.append((_TOOLS[alias], match.start(), match.end()))
    return found


def is_tool(text: str) -> bool:
    return text.lower() in _TOOLS


# fmt: off
LANGUAGE_CODES = {
    "english": "en", "chinese": "zh", "mandarin": "zh", "japanese": "ja", "french": "fr", "german": "de",
    "spanish": "es", "korean": "ko", "portuguese": "pt", "italian": "it", "russian": "ru", "中文": "zh",
    "汉语": "zh", "普通话": "zh", "英文": "en", "英语": "en", "日语": "ja", "日文": "ja", "韩语": "ko",
    "法语": "fr", "德语": "de", "西班牙语": "es",
}
# fmt: on
