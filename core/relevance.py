"""The context block's relevance floor (pure): which search hits and episodes are relevant enough to spend
the agent's prompt tokens on.

The search score is a rank fusion: it orders candidates but says nothing about whether the best of them is
any good, so "hi" still gets k memories about the user's deployment. The floor uses two absolute signals
that every hit carries (`store.search.SearchHit`):

- `similarity`: the cosine similarity of the hit's embedding to the query's (vector candidates);
- `keyword_coverage`: the share of the query's keyword weight (idf over the user's own documents) that the
  hit holds (keyword candidates); a hit sharing only a word that most documents hold stays near 0.

A hit is kept when either signal reaches its threshold. The thresholds depend on the embedder (cosine
values of a hashing embedder and of a sentence encoder are on different scales) and are calibrated in
`CALIBRATION.md` ("Context relevance floor").

Before that, the query's social words are set aside (greetings, thanks, acknowledgements, in English and
Chinese): a query made of nothing else ("hi", "thanks, got it", "好的") has no topic, and no hit is
relevant to it. Standing rules and the profile are not search hits: the floor never touches them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words that carry the social part of a chat turn and no topic. Kept to greetings, thanks, assent and
# farewells: a word that can name a topic ("today", "weather", "help") is not here.
_SOCIAL_EN = frozenset(
    """
    hi hii hiya hello hey heya yo howdy greetings morning afternoon evening night gm gn good great nice cool
    awesome perfect excellent wonderful fine ok okay k kk alright right sure yes yeah yep yup no nope nah
    thanks thank thx ty cheers appreciate appreciated much lot so very really please pls plz welcome sorry
    bye goodbye later cya see ya got it understood noted makes sense sounds lol haha hahaha hmm hm um uh oh ah
    wow how are you doing going is it been what's whats up sup there all again just well too am i me we us
    let's lets continue ahead carry on done
    """.split()
)
_SOCIAL_ZH = (
    "早上好", "上午好", "中午好", "下午好", "晚上好", "晚安", "你好", "您好", "大家好", "哈喽", "嗨", "在吗",
    "谢谢", "多谢", "感谢", "辛苦了", "辛苦", "好的", "好吧", "好呀", "好啊", "好哒", "行吧", "行", "可以",
    "明白了", "明白", "知道了", "收到", "了解", "懂了", "没问题", "没事", "不客气", "再见", "拜拜",
    "哈哈", "嘿嘿", "嗯嗯", "嗯", "哦", "噢", "啊", "呀", "吧", "呢", "了", "啦", "你", "我", "们", "继续",
)
_ZH_SOCIAL_RE = re.compile("|".join(sorted(map(re.escape, _SOCIAL_ZH), key=len, reverse=True)))
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z']*")
_TOPIC_CHARS = re.compile(r"[0-9A-Za-z\u3400-\u9fff]")


def topical_text(query: str) -> str:
    """The query without its social words ("hi", "thanks", "好的" ...): what is left names a topic, or is
    empty."""
    text = _WORD_RE.sub(lambda m: " " if m.group(0).casefold() in _SOCIAL_EN else m.group(0), query)
    return _ZH_SOCIAL_RE.sub(" ", text)


def has_topic(query: str) -> bool:
    """Whether the query says anything beyond greetings, thanks and assent."""
    return _TOPIC_CHARS.search(topical_text(query)) is not None


@dataclass(frozen=True)
class RelevanceFloor:
    """A hit is relevant when its cosine similarity to the query reaches `min_similarity` or its keyword
    coverage reaches `min_keyword_coverage`. Either at 0 (or below) keeps everything: no floor."""

    min_similarity: float
    min_keyword_coverage: float

    @property
    def disabled(self) -> bool:
        return self.min_similarity <= 0 or self.min_keyword_coverage <= 0

    def keeps(self, similarity: float | None, keyword_coverage: float | None) -> bool:
        if self.disabled:
            return True
        if similarity is not None and similarity >= self.min_similarity:
            return True
        return keyword_coverage is not None and keyword_coverage >= self.min_keyword_coverage


NO_FLOOR = RelevanceFloor(0.0, 0.0)


def token_coverage(query_tokens: list[str], doc_tokens: set[str]) -> float:
    """Unweighted share of the query's tokens found in a document (for rows outside the idf statistics,
    such as episodes)."""
    if not query_tokens:
        return 0.0
    return sum(t in doc_tokens for t in query_tokens) / len(query_tokens)


# Calibrated per embedder (CALIBRATION.md, "Context relevance floor"): the cosine scales differ, the keyword
# coverage does not.
DEFAULT_FLOORS: dict[str, RelevanceFloor] = {
    "hashing": RelevanceFloor(min_similarity=0.35, min_keyword_coverage=0.10),
    "local": RelevanceFloor(min_similarity=0.35, min_keyword_coverage=0.10),
    "openai": RelevanceFloor(min_similarity=0.35, min_keyword_coverage=0.10),
    # issue 18, dev split + LoCoMo dev only: MiniLM int8 measures as MiniLM; e5's cosines sit high (null-query
    # hits 0.77 - 0.86), so its similarity bar is too
    "onnx-minilm": RelevanceFloor(min_similarity=0.35, min_keyword_coverage=0.10),
    "e5-small": RelevanceFloor(min_similarity=0.86, min_keyword_coverage=0.10),
}


def floor_for(embedder: str, *, min_similarity: float | None, min_keyword_coverage: float | None) -> RelevanceFloor:
    """The embedder's calibrated floor, either threshold overridden when given (0 turns the floor off)."""
    base = DEFAULT_FLOORS.get(embedder, DEFAULT_FLOORS["openai"])
    return RelevanceFloor(
        min_similarity=base.min_similarity if min_similarity is None else min_similarity,
        min_keyword_coverage=base.min_keyword_coverage if min_keyword_coverage is None else min_keyword_coverage,
    )
