"""A deterministic feature-hashing embedder: the default, with no download and no setup.

Contract:
- `HashingEmbedder(dim=384).embed(texts)` gives one L2-normalised vector of `dim` floats per text, the same in
  every process and on every machine (blake2b, never Python's randomised `hash()`), so vectors stored long ago
  still compare with today's queries.
- Features: lower-cased Latin word unigrams and bigrams after a light stem (plural s, -ing, -ed, final e),
  character 3-grams of those words (typo tolerance), CJK character unigrams and bigrams (Chinese has no
  spaces; kana and Hangul go the same way), and emoji as tokens. Stopwords (a small English + Chinese list)
  count, but weakly.
- Weight of a feature: a per-kind weight x (1 + ln tf) (sublinear, so repetition cannot dominate); the sign of
  each feature comes from its hash, which keeps bucket collisions unbiased.
- Text without any feature (empty, blanks, punctuation) maps to one fixed unit vector: pgvector's cosine
  distance is undefined for the zero vector.
- Pure: no I/O; the only state is a bounded memo of token -> hashed features.
- `name` carries a version: changing features, weights or the hash must bump it (stored vectors would no
  longer be comparable with new ones).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from hashlib import blake2b

from store.embeddings.base import EmbeddingError

DEFAULT_DIM = 384
MEMO_MAX_ENTRIES = 100_000  # cleared whole when full: cheap, and bounded (tens of MB at most)
MEMO_MAX_TOKEN_CHARS = 32  # longer tokens (blobs, unbroken CJK runs) are rare: hash them, don't keep them

# per-kind weights: words carry the meaning, bigrams add phrase order, 3-grams only rescue typos
WORD_WEIGHT = 1.0
STOPWORD_WEIGHT = 0.1
BIGRAM_WEIGHT = 0.7
TRIGRAM_WEIGHT = 0.2
CJK_CHAR_WEIGHT = 0.5
CJK_BIGRAM_WEIGHT = 1.0  # in Chinese the character pair is closest to a word
SYMBOL_WEIGHT = 0.5

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_SYMBOLS = "\u2600-\u27bf\U0001f000-\U0001faff"
_TOKEN = re.compile(f"([{_CJK}]+)|([{_SYMBOLS}])|([^\\W_{_CJK}]+)")
_APOSTROPHES = str.maketrans("", "", "'\u2019")  # "don't" -> "dont", "user's" -> "users"

_EN_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "been", "being", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "too", "up",
    "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would",
    "you", "your",
))  # fmt: skip
_ZH_STOP_CHARS = frozenset("的了是在我你他她它们和也就都这那有个一不吧吗呢啊呀哦嗯么之与及")
_ZH_STOP_BIGRAMS = frozenset((
    "我们", "你们", "他们", "她们", "它们", "这个", "那个", "一个", "什么", "因为", "所以", "但是",
    "就是", "可以", "没有", "还是", "已经", "自己", "这样", "那样",
))  # fmt: skip
_EMPTY_FEATURE = "\x00empty"
_LOG_TF = [0.0] + [1.0 + math.log(n) for n in range(1, 64)]

Features = tuple[tuple[int, float], ...]  # (64-bit feature hash, per-kind weight) pairs


def _hash64(feature: str) -> int:
    return int.from_bytes(blake2b(feature.encode(), digest_size=8, person=b"memhash1").digest(), "little")


_EMPTY_KEY = _hash64(_EMPTY_FEATURE)


@lru_cache(maxsize=1 << 16)
def _trigram_hash(gram: str) -> int:
    # new words keep arriving, but their 3-grams are mostly old ones: memoise those hashes separately
    return _hash64("g:" + gram)


def stem(word: str) -> str:
    """A tiny suffix stemmer for lower-cased English: lives/living/lived -> liv, based/base -> bas."""
    stripped = False
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word, stripped = word[:-3], True
    elif len(word) > 4 and word.endswith("ed"):
        word, stripped = word[:-2], True
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if stripped and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # running -> runn -> run
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # so that "based" and "base" meet
    return word


class HashingEmbedder:
    """See the module docstring. Safe to share between threads: a memo race only costs a recomputation."""

    name = "hashing-v1"

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 16:
            raise EmbeddingError(f"hashing embedder dim must be at least 16, not {dim}")
        self.dim = dim
        self._memo: dict[str, Features] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed_one(text)

    # internals ---------------------------------------------------------------------------------------------

    def _embed_one(self, text: str) -> list[float]:
        weights: dict[int, float] = {}
        counts: dict[int, int] = {}
        for features in self._token_features(text):
            for key, weight in features:
                counts[key] = counts.get(key, 0) + 1
                weights[key] = weight
        if not counts:
            counts[_EMPTY_KEY], weights[_EMPTY_KEY] = 1, 1.0
        dim = self.dim
        buckets: dict[int, float] = {}  # sparse until the end: a text touches far fewer than `dim` buckets
        for key, count in counts.items():
            value = weights[key] * (_LOG_TF[count] if count < 64 else 1.0 + math.log(count))
            # the sign is the hash's top bit: for a uniform 64-bit hash, independent of the bucket
            bucket = key % dim
            buckets[bucket] = buckets.get(bucket, 0.0) + (-value if key >> 63 else value)
        norm = math.sqrt(math.fsum(v * v for v in buckets.values()))
        if norm == 0.0:  # features that cancelled out exactly; vanishingly rare, but never a zero vector
            return self._embed_one("")
        vector = [0.0] * dim
        for bucket, value in buckets.items():
            vector[bucket] = value / norm
        return vector

    def _token_features(self, text: str) -> list[Features]:
        """The hashed features of each token, plus one entry per Latin bigram."""
        out: list[Features] = []
        previous: str | None = None  # the previous Latin word, for bigrams; None across other tokens
        for match in _TOKEN.finditer(text.lower().translate(_APOSTROPHES)):
            cjk, symbol, word = match.groups()
            if word is not None:
                out.append(self._memoised("w" + word, self._word_features, word))
                if previous is not None:
                    pair = previous + " " + word
                    out.append(self._memoised("b" + pair, self._bigram_features, pair))
                previous = word
                continue
            previous = None
            if symbol is not None:
                out.append(self._memoised("s" + symbol, _symbol_features, symbol))
            elif cjk is not None:
                out.append(self._memoised("c" + cjk, _cjk_features, cjk))
        return out

    def _memoised(self, key: str, compute: Callable[[str], Features], arg: str) -> Features:
        if len(arg) > MEMO_MAX_TOKEN_CHARS:
            return compute(arg)
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= MEMO_MAX_ENTRIES:
                self._memo.clear()
            found = self._memo[key] = compute(arg)
        return found

    @staticmethod
    def _word_features(word: str) -> Features:
        if word in _EN_STOPWORDS:
            return ((_hash64("w:" + word), STOPWORD_WEIGHT),)
        root = stem(word)
        features = [(_hash64("w:" + root), WORD_WEIGHT)]
        if not root.isdigit():
            padded = f"<{root}>"
            features.extend(
                (_trigram_hash(padded[i : i + 3]), TRIGRAM_WEIGHT) for i in range(len(padded) - 2)
            )
        return tuple(features)

    @staticmethod
    def _bigram_features(pair: str) -> Features:
        first, second = pair.split(" ")
        stop = first in _EN_STOPWORDS or second in _EN_STOPWORDS
        weight = BIGRAM_WEIGHT * (STOPWORD_WEIGHT if stop else 1.0)
        return ((_hash64(f"b:{stem(first)} {stem(second)}"), weight),)


def _symbol_features(symbol: str) -> Features:
    return ((_hash64("s:" + symbol), SYMBOL_WEIGHT),)


def _cjk_features(run: str) -> Features:
    """Character unigrams and bigrams of one run of CJK characters."""
    features = [
        (_hash64("c:" + char), CJK_CHAR_WEIGHT * (STOPWORD_WEIGHT if char in _ZH_STOP_CHARS else 1.0))
        for char in run
    ]
    for i in range(len(run) - 1):
        pair = run[i : i + 2]
        if pair in _ZH_STOP_BIGRAMS:
            weight = CJK_BIGRAM_WEIGHT * STOPWORD_WEIGHT
        elif pair[0] in _ZH_STOP_CHARS or pair[1] in _ZH_STOP_CHARS:
            weight = CJK_BIGRAM_WEIGHT * 0.3
        else:
            weight = CJK_BIGRAM_WEIGHT
        features.append((_hash64("d:" + pair), weight))
    return tuple(features)
