"""Language helpers for extraction. Pure: no I/O, no clock, no environment.

Contract:
- `detect_lang(text)` -> "zh" when the text is mostly Chinese, else "en". "Mostly" weighs one Han character
  like one Latin word, so a Chinese sentence naming English tools ("项目用 PostgreSQL") is still "zh" and an
  English sentence quoting a Chinese name ("My name is 王伟") is still "en". Never raises.
- `normalize_text(text)` -> NFKC-normalised text (full-width ASCII and punctuation become half-width: "，" ","
  "！" "!" "？" "?"), the remaining CJK punctuation mapped to ASCII ("。" "." "、" ","), curly quotes
  straightened, control and zero-width characters dropped, whitespace runs collapsed to one space, stripped.
  Idempotent. Never raises.
- `comparison_key(text)` -> casefolded normalised text without punctuation, symbols or spaces: the key the
  gate uses to spot a repeated turn ("Thanks!!" and "thanks" share it).
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Han ideographs (basic block, extension A, compatibility ideographs): what makes a text Chinese.
_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD_RE = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")

# CJK punctuation NFKC leaves alone; mapped so the rule patterns only deal with ASCII punctuation.
_PUNCT_MAP = str.maketrans(
    {
        "。": ".",
        "、": ",",
        "｡": ".",
        "“": '"',
        "”": '"',
        "„": '"',
        "‘": "'",
        "’": "'",
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "《": '"',
        "》": '"',
        "〈": '"',
        "〉": '"',
        "【": "[",
        "】": "]",
        "〔": "(",
        "〕": ")",
        "—": "-",
        "–": "-",
        "～": "~",
        "〜": "~",
        "…": "...",
    }
)
_WS_RE = re.compile(r"\s+")


@functools.lru_cache(maxsize=4096)
def detect_lang(text: str) -> str:
    """ "zh" or "en" by the ratio of Han characters to Latin words (see the module docstring)."""
    han = len(_HAN_RE.findall(text))
    if han == 0:
        return "en"
    latin_words = len(_LATIN_WORD_RE.findall(text))
    return "zh" if han >= latin_words else "en"


def _keep(char: str) -> bool:
    # Control (Cc), format (Cf: zero-width joiners, BOM, bidi marks), surrogates, unassigned: invisible noise.
    if char in "\n\t":
        return True
    return unicodedata.category(char)[0] != "C"


def normalize_text(text: str) -> str:
    """NFKC, CJK punctuation to ASCII, invisible characters dropped, whitespace collapsed, stripped."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT_MAP)
    if not text.isprintable():
        text = "".join(char for char in text if _keep(char))
    return _WS_RE.sub(" ", text).strip()


def normalize_lines(text: str) -> str:
    """Like `normalize_text` but keeps line breaks (code fences and quoted lines are line-based)."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT_MAP)
    if not text.isprintable():
        text = "".join(char for char in text if _keep(char))
    lines = (_WS_RE.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


_NOT_KEY_RE = re.compile(r"[\W_]+")  # punctuation, symbols, spaces and controls


def comparison_key(text: str) -> str:
    """Casefolded normalised text with punctuation, symbols and spaces removed (for repeat detection)."""
    return _NOT_KEY_RE.sub("", normalize_text(text).casefold())


def has_han(text: str) -> bool:
    return _HAN_RE.search(text) is not None
