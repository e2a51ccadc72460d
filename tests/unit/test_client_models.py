"""The client package's typed results are held to the server's OpenAPI schemas (one source: the API), its
contract is the server's, and it stands alone (no server import)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types
import typing
from datetime import UTC, datetime

import pytest

from api.app import create_app
from memory_client import contract as client_contract
from memory_client.models import SCHEMAS, MemoryRecord, SearchResult, decode
from shared import contract as server_contract
from shared.errors import ContractError
from shared.settings import load_settings
from tests.services import REPO

OPENAPI = create_app(load_settings()).openapi()
COMPONENTS = OPENAPI["components"]["schemas"]
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", datetime: "string"}


def _json_type(tp: typing.Any) -> str | None:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    base = typing.get_origin(tp) or tp
    if base is list:
        return "array"
    if base is dict:
        return "object"
    return _JSON_TYPES.get(base)


def _schema_types(prop: dict[str, typing.Any]) -> set[str]:
    options = prop.get("anyOf") or [prop]
    return {o.get("type", "object") for o in options if o.get("type") != "null"}


@pytest.mark.parametrize("cls", list(SCHEMAS), ids=lambda c: c.__name__)
def test_each_result_class_has_the_fields_and_types_of_its_schema(cls: type) -> None:
    schema = COMPONENTS[SCHEMAS[cls]]
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    assert fields == set(schema["properties"]), f"{cls.__name__} vs {SCHEMAS[cls]}"
    for name, prop in schema["properties"].items():
        expected = _json_type(hints[name])
        if expected is None or "$ref" in str(prop):
            continue  # a nested result class: its own schema is checked by its own case
        documented = _schema_types(prop)
        assert expected in documented or (expected == "number" and "integer" in documented), (name, prop)


def test_decoding_converts_times_and_nested_results_and_ignores_unknown_fields() -> None:
    hit = decode(
        SearchResult,
        {
            "id": "m1",
            "type": "memory",
            "content": "x",
            "score": 0.5,
            "valid_from": "2026-01-02T03:04:05Z",
            "new": 1,
        },
    )
    assert hit.valid_from == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC) and hit.source_event_ids == []
    assert not hasattr(hit, "new")
    with pytest.raises(TypeError, match="MemoryRecord"):
        decode(MemoryRecord, ["not", "an", "object"])


def test_the_server_validates_with_the_client_contract_and_reports_the_same_errors() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    bad = {"user_id": "a b", "session_id": "s", "role": "robot"}
    with pytest.raises(client_contract.ContractError) as client_error:
        client_contract.check_event(bad, now=now)
    with pytest.raises(ContractError) as server_error:
        server_contract.parse_event(bad, now=now)
    assert client_error.value.errors == server_error.value.errors
    assert {e["field"] for e in server_error.value.errors} == {"user_id", "role"}
    assert server_contract.MAX_BATCH is client_contract.MAX_BATCH


def test_the_client_package_imports_without_the_server_and_loads_lazily() -> None:
    code = (
        "import sys; sys.modules.update({m: None for m in ('shared', 'core', 'store', 'api', 'worker', 'memctl',"
        " 'fastapi', 'sqlalchemy', 'celery', 'pydantic')});"
        "import memory_client.redaction, memory_client.contract; assert 'httpx' not in sys.modules;"
        "from memory_client import Memory, AsyncMemory, MemoryRecord; print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO / "clients" / "python",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
