"""A cheap token estimate (no tokenizer download): ~4 characters per token for Latin text, one token per
CJK character. Within ~15% of tiktoken's cl100k on English prose, and conservative on Chinese."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    return cjk + (rest + 3) // 4
