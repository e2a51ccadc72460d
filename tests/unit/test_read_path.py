"""The read path's shortcuts keep their contracts: the search response serialized straight from the
service's dataclasses is a valid SearchResponse, and `:name` SQL becomes psycopg's `%(name)s` form."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from api.routes.search import SearchResponse, SearchResult, response_json
from shared.db.raw import pyformat
from store.search import SearchHit


def test_search_result_and_search_hit_have_the_same_fields():
    assert list(SearchResult.model_fields) == [f.name for f in dataclasses.fields(SearchHit)]


def test_the_search_response_document_validates_against_its_schema():
    hits = [
        SearchHit(
            id="0b7c1f6e-0000-4000-8000-000000000001",
            type="memory",
            content='She said "use pnpm" — 用 pnpm',
            score=0.123456,
            kind="procedural",
            category="preference",
            status="active",
            valid_from=datetime(2026, 11, 29, 12, 30, tzinfo=UTC),
            source_event_ids=["e1"],
            source_turn_ids=["D1:3"],
        ),
        SearchHit(id="t-9", type="turn", content="user: hi\nassistant: hello", score=0.05, session_id="s1"),
    ]
    body = response_json(hits, 3.14159)
    parsed = SearchResponse.model_validate_json(body)
    assert parsed.took_ms == 3.14
    assert [r.model_dump() for r in parsed.results] == [dataclasses.asdict(h) for h in hits]
    assert json.loads(body)["results"][0]["valid_from"] == "2026-11-29T12:30:00Z"
    assert SearchResponse.model_validate_json(response_json([], 0.0)).results == []


def test_pyformat_turns_named_parameters_into_psycopg_form_and_leaves_casts_alone():
    sql = (
        "SELECT x::text, CAST(:v AS vector), 'a%b' FROM t WHERE a = :a AND b = ANY(:b_list) "
        "AND c @@ to_tsquery('simple', :q)"
    )
    assert pyformat(sql) == (
        "SELECT x::text, CAST(%(v)s AS vector), 'a%%b' FROM t WHERE a = %(a)s AND b = ANY(%(b_list)s) "
        "AND c @@ to_tsquery('simple', %(q)s)"
    )
