"""A correction of a value the user gave before, and the memory it corrects (pure).

"actually it's 8081, 8080 is taken by the Keycloak container", "ugh autocorrect, his name is Pixel not Pixie",
"昨天打错了，我家狗是旺仔不是旺财", "sorry 打错了，是 staging.mofang.cn，stg 那个早就废了": the user takes back a value
they gave earlier. Such a sentence names no topic of its own ("it's 8081"), so no rule can file it and no topic
word links it to what it corrects; what links it is the value. Without an LLM the residual filter hands such a
sentence over as a correction (`is_correction`), and reconciliation (`core.reconcile`) looks for the user's older
memory that holds the value it takes back: that memory is replaced by its own text with the value corrected
(`corrected`): "The API runs on port 8080 locally" becomes "The API runs on port 8081 locally". A correction of
nothing the user is known to have said ("sorry, typo, I meant user_id not userid in that last query") stores
nothing.

`corrected(old, said)` finds the pair (value taken back, value meant) in this order:

1. a contrast: "X not Y", "X, not Y", "是 X 不是 Y", "X 而不是 Y": Y taken back, X meant, when `old` names Y;
2. a value `old` and `said` both name (the one taken back: "8080 is taken") and exactly one value of the same
   shape that `said` names and `old` does not (the one meant: "8081"), when `old` has no other value of that shape
   that `said` leaves out;
3. (`loose=True`, for the memory closest to the correction only) exactly one value of `old` that `said` does not
   name and exactly one value of `said` of the same shape that `old` does not name ("stg.mofang.cn" in the memory,
   "staging.mofang.cn" in the correction); not for capitalised names, which two unrelated sentences often have.

A value is a token with a digit, or with an inner "-", "_", ".", "@", ":" or "/", or a capitalised word; its shape
is one of number, version, domain, identifier, code (letters and digits) or name. An all-capital word ("SSID",
"API") is a label, not a value.
"""

from __future__ import annotations

import re
import unicodedata

# Words that take back what was said before: a slip ("typo", "autocorrect", "打错了"), an admission ("I was wrong",
# "got that wrong", "说错了"), a correction announced ("correction:", "更正", "纠正一下") or "actually it's ...".
_CORRECTION_CUE = re.compile(
    r"\b(?:i\s+(?:was|am)\s+wrong|(?:got|had)\s+(?:that|it|this|those|the\s+\w+)\s+wrong|wrong\s+(?:earlier|before)|"
    r"my\s+bad|typo|autocorrect(?:ed)?|mis(?:spoke|typed|remembered|wrote|spelled|spelt)|scratch\s+that|correction|"
    r"actually,?\s+(?:it|that|this|she|he|they|the\s+\w+)(?:'s|'re|\s+is|\s+are|\s+was))\b"
    r"|(?:打|说|写|记|搞|弄|填)错了?|更正|纠正一下|口误|笔误",
    re.I,
)

_TOKEN = re.compile(r"[A-Za-z0-9][\w.@:/-]*[A-Za-z0-9]|\d")
_HAN_VALUE = r"[\u4e00-\u9fff]{1,8}?"
_LATIN_VALUE = r"[A-Za-z0-9][\w.@:/-]*[A-Za-z0-9]|\d"
_CONTRAST = (
    re.compile(
        rf"(?P<new>{_LATIN_VALUE})\s*,?\s+(?:and\s+)?not\s+(?:the\s+)?(?P<old>{_LATIN_VALUE})\b", re.I
    ),
    re.compile(
        rf"(?:是|叫|为)\s*(?P<new>{_LATIN_VALUE}|{_HAN_VALUE})\s*[,，]?\s*(?:而)?不是\s*(?P<old>{_LATIN_VALUE}|{_HAN_VALUE})"
        r"(?=$|[\s,.;!?，。；！？~]|哈|啦|了|呢|啊|吧|哦|的)"
    ),
)


def is_correction(sentence: str) -> bool:
    """The sentence takes back something the user said before (see `_CORRECTION_CUE`)."""
    return _CORRECTION_CUE.search(unicodedata.normalize("NFKC", sentence)) is not None


def _shape(token: str) -> str | None:
    if token.isdigit():
        return "number"
    if re.fullmatch(r"\d+(?:\.\d+)+", token):
        return "version"
    if re.fullmatch(r"(?:[a-z0-9-]+\.)+[a-z]{2,}", token, re.I):
        return "domain"
    if re.search(r"\d", token) and re.search(r"[A-Za-z]", token):
        return "code"
    if re.search(r"[-_@:/.]", token):
        return "identifier"
    if token[0].isupper() and not token.isupper():
        return "name"
    return None  # a plain word, or an all-capital label ("SSID")


def _values(text: str) -> list[str]:
    out: dict[str, None] = {}
    for token in _TOKEN.findall(text):
        if _shape(token) is not None:
            out.setdefault(token, None)
    return list(out)


def _named(value: str, text: str) -> re.Match[str] | None:
    """Where `text` names `value` as a whole token (case folded; a substring in Chinese)."""
    if not value.isascii():
        return re.search(re.escape(value), text)
    return re.search(rf"(?<![\w.@:/-]){re.escape(value)}(?![\w@:/-]|\.\w)", text, re.I)


def _replace(old: str, value: str, meant: str) -> str | None:
    match = _named(value, old)
    if match is None:
        return None
    return old[: match.start()] + meant + old[match.end() :]


def corrected(old: str, said: str, *, loose: bool = False) -> str | None:
    """`old` (a memory's text) with the value that `said` (a correction) takes back replaced by the one it means,
    or None when `said` takes back no value of `old` (see the module's docstring)."""
    old = unicodedata.normalize("NFKC", old)
    said = unicodedata.normalize("NFKC", said)
    for pattern in _CONTRAST:
        for match in pattern.finditer(said):
            meant, taken_back = match.group("new"), match.group("old")
            differ = meant.casefold() != taken_back.casefold()
            if differ and _named(taken_back, old) and not _named(meant, old):
                return _replace(old, taken_back, meant)
    values = _values(said)
    in_both = [v for v in values if _named(v, old)]
    gone = [v for v in _values(old) if not _named(v, said)]
    if len(in_both) == 1:
        shape = _shape(in_both[0])
        meant_ = [v for v in values if v not in in_both and _shape(v) == shape]
        # the value named in both is the one taken back unless the memory has another of its shape that the
        # correction leaves out: "生日是 5 月 3 号" -> "是 5 月 13 号" takes back the 3, not the 5
        if len(meant_) == 1 and not any(_shape(v) == shape for v in gone):
            return _replace(old, in_both[0], meant_[0])
    if not loose:
        return None
    # a capitalised name left out and another named: more likely two topics than a correction
    for shape in sorted({_shape(v) or "" for v in gone} - {"name"}):
        taken = [v for v in gone if _shape(v) == shape]
        meant_ = [v for v in values if _shape(v) == shape and not _named(v, old)]
        if len(taken) == 1 and len(meant_) == 1:
            return _replace(old, taken[0], meant_[0])
    return None


def taken_back_values(said: str) -> list[str]:
    """The values a correction names (its contrasts' both sides, then its other values): the memories that name
    one of them are the ones it may correct, however far its words are from theirs."""
    said = unicodedata.normalize("NFKC", said)
    out: dict[str, None] = {}
    for pattern in _CONTRAST:
        for match in pattern.finditer(said):
            out.setdefault(match.group("old"), None)
    for value in _values(said):
        out.setdefault(value, None)
    return list(out)


# the rule of a correction the residual filter keeps (added when it corrects nothing), and of one it does not keep
# (stored only as a correction)
CORRECTION_RULE = "residual.correction"
CORRECTION_PROBE_RULE = "residual.correction_probe"


def is_correction_rule(rule: str | None) -> bool:
    return rule in (CORRECTION_RULE, CORRECTION_PROBE_RULE)
