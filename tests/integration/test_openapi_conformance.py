"""Schemathesis against the running API's OpenAPI schema: generated requests (a bounded number per
operation) never get a 5xx, and every response conforms to the schema it documents.

Driven through schemathesis' Python API with hypothesis directly (its pytest plugin does not support the
pytest version used here)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EXAMPLES_PER_OPERATION = 30


def test_no_server_error_and_every_response_matches_the_schema(api_server, api_key):  # type: ignore[no-untyped-def]
    schema = schemathesis.openapi.from_url(f"{api_server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    headers = {"Authorization": f"Bearer {api_key}"}
    calls: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case):  # type: ignore[no-untyped-def]
            calls.append(case.method)
            case.call_and_validate(
                base_url=api_server, headers=headers, checks=[not_a_server_error, response_schema_conformance]
            )

        run()
    # generation really ran: a bounded number of requests per operation
    assert len(calls) >= 5 * len(operations)
