"""Keyword tokens for PostgreSQL full-text search that work for Chinese too (pure).

PostgreSQL's built-in parsers do not segment Chinese, and pg_trgm is not available everywhere (the
embedded server lacks it). So we tokenize here: Latin words lower-cased and lightly stemmed, CJK text as
character bigrams (plus single characters for one-character words), and store the result with the
`simple` configuration. The query side uses the same function, so both sides always agree.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOP = frozenset(
    "a an and are as at be but by did do does for from had has have he her his i if in into is it its me my "
    "of on or our she so than that the their them then there these they this to was we were what when where "
    "which who will with you your".split()
)
_CJK_STOP = frozenset("的了是在我你他她它们和就都而及与着或吗呢吧啊")
MAX_TOKENS = 512
# The version of what `tokens` gives for a text. Stored documents record the version they were made with
# (`schema_meta.tokenizer_version`, `store/retokenize.py`); change it with any change to the tokens a text gets.
# 1: suffixes cut without regard to the base form ("lives" -> "liv" but "live" -> "live").
# 2: the inflections of a word fold onto one stem (`_stem`).
TOKENIZER_VERSION = 2


_VOWEL = re.compile(r"[aeiouy]")
_KEEP_DOUBLE = frozenset("lsz")


def _stem(word: str) -> str:
    """Fold the inflections of an English word onto one form, whichever of them a text uses: "live",
    "lives", "lived" and "living" all give "liv"; "city" and "cities" "citi"; "stopped" and "stop" "stop".

    The plural and verb endings of the Porter stemmer's first step (M. F. Porter, "An algorithm for suffix
    stripping", 1980), plus a final "e" dropped: suffixes come off only when a vowel stays in the stem
    ("string", "bring", "red" stay whole), a doubled consonant left by "-ed" / "-ing" is undoubled unless it
    is l, s or z ("running" -> "run", "falling" -> "fall"), and a final "y" after a consonant becomes "i".
    Derivational suffixes (-ness, -ation ...) are left alone: they change the meaning too often."""
    if len(word) <= 2 or not word.isalpha():
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-2]  # "cities" -> "citi", the form "city" takes below
    elif word.endswith("oes") and len(word) > 3:
        word = word[:-2]  # "goes", "heroes" -> "go", "hero"
    elif (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and _VOWEL.search(word[:-1])
    ):
        word = word[:-1]
        if word.endswith("e") and word[-2:-1] in ("s", "x", "z", "h"):
            word = word[
                :-1
            ]  # "boxes", "watches" -> "box", "watch" (and "uses" -> "us", as "use" -> "us" below)
    elif word.endswith("eed"):
        return word
    elif word.endswith("ied") and len(word) > 4:
        word = word[:-2]  # "studied" -> "studi"
    else:
        for suffix in ("ing", "ed"):
            stem = word[: -len(suffix)]
            if word.endswith(suffix) and len(stem) >= 2 and _VOWEL.search(stem):
                word = stem
                if (
                    len(word) > 2
                    and word[-1] == word[-2]
                    and word[-1] not in _KEEP_DOUBLE
                    and word[-1] not in "aeiou"
                ):
                    word = word[:-1]
                break
    if len(word) > 2 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    if len(word) > 2 and word.endswith("y") and word[-2] not in "aeiou":
        word = word[:-1] + "i"
    return word


def tokens(text: str) -> list[str]:
    """Distinct search tokens of `text`, in first-seen order, at most MAX_TOKENS."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: dict[str, None] = {}
    for word in _WORD.findall(text):
        if word not in _STOP and len(word) > 1:
            out.setdefault(_stem(word.replace("'", "").replace(".", "")), None)
    for run in _CJK_RUN.findall(text):
        chars = [c for c in run if c not in _CJK_STOP] if len(run) > 2 else list(run)
        if len(chars) == 1:
            out.setdefault(chars[0], None)
        for a, b in itertools.pairwise(chars):
            out.setdefault(a + b, None)
    return list(out)[:MAX_TOKENS]


def document(text: str) -> str:
    """The string to feed `to_tsvector('simple', ...)`."""
    return " ".join(tokens(text))


def query(text: str) -> str | None:
    """A `to_tsquery('simple', ...)` expression matching any token (OR), or None when there is none."""
    toks = tokens(text)
    if not toks:
        return None
    return " | ".join(f"'{t}'" for t in toks[:64])


# A name, as written in running text: a capitalised word that does not start its sentence ("we played
# Valorant"), a word mixing letters and digits ("k8s", "CS:GO" as "CS", "Go1.22"), an all-capitals
# abbreviation, a quoted or book-titled phrase ("Inception", 《三体》), and Latin words inside Chinese text
# (where capitals carry no such signal: "我们用 pnpm").
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|[.!?](?=\S))+")
_CAPITALISED = re.compile(r"(?<=\s)[A-Z][A-Za-z0-9'’-]*[A-Za-z0-9]")
_MIXED = re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9][A-Za-z0-9.+-]*[A-Za-z0-9]\b")
_QUOTED = re.compile(r"[\"“「《]([^\"”」》\n]{2,40})[\"”」》]")
_LATIN_IN_CJK = re.compile(r"[A-Za-z][A-Za-z0-9.+#-]+")


def names(text: str) -> list[str]:
    """The names `text` mentions (see above), in order, repeats kept; pure, no dictionary."""
    found: list[str] = []
    for sentence in _SENTENCE.findall(text):
        body = sentence.strip()
        if _CJK_RUN.search(body):
            found += _LATIN_IN_CJK.findall(body)
        else:
            found += _CAPITALISED.findall(" " + body[body.find(" ") + 1 :] if " " in body else "")
        found += _MIXED.findall(body)
        found += [q.strip() for q in _QUOTED.findall(body)]
    return found
