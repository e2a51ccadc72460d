"""The request datetimes the API takes (a memory's valid_from, a search's as_of) stay within what Python and
psycopg represent: a time whose UTC value leaves that range is a 422 naming the field, never a row that
cannot be read back (schemathesis found `valid_from: 0001-01-01T00:05:00+03:00` stored as 1 BC, then a 500)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.integration


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("when", ["0001-01-01T00:05:00+03:00", "0999-12-31T23:00:00Z", "9500-01-01T00:00:00Z"])
def test_a_time_out_of_range_is_refused_by_remember_and_search(api_server, api_key, when):  # type: ignore[no-untyped-def]
    r = httpx.post(
        f"{api_server}/v1/memories",
        json={"user_id": "ada", "content": "Ada lives in Lisbon.", "valid_from": when},
        headers=_h(api_key),
        timeout=30,
    )
    assert r.status_code == 422 and "valid_from" in r.text, r.text
    r = httpx.post(
        f"{api_server}/v1/search",
        json={"user_id": "ada", "query": "where did Ada live last year", "as_of": when},
        headers=_h(api_key),
        timeout=30,
    )
    assert r.status_code == 422 and "as_of" in r.text, r.text


def test_an_old_time_within_range_is_taken_and_read_back(api_server, api_key):  # type: ignore[no-untyped-def]
    r = httpx.post(
        f"{api_server}/v1/memories",
        json={"user_id": "ada", "content": "Ada was born in Porto.", "valid_from": "1961-03-04T00:00:00+01:00"},
        headers=_h(api_key),
        timeout=30,
    )
    assert r.status_code in (200, 201), r.text
    r = httpx.post(
        f"{api_server}/v1/search",
        json={"user_id": "ada", "query": "where was Ada born in 1961", "as_of": "1990-01-01T00:00:00Z"},
        headers=_h(api_key),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert any("Porto" in hit["content"] for hit in r.json()["results"])
