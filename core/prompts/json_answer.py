"""Reading a JSON answer out of what a model actually sends (pure).

Models the prompts were not written for wrap the object they were asked for: a reasoning block
(`<think>...</think>`) before it, a Markdown fence around it, sentences before or after it, single quotes
instead of double ones, a comma after the last item, Python's `True / False / None`. `json_texts(reply)`
gives the texts worth trying, most likely first, each already normalised to strict JSON when it was not;
the caller validates each against its schema and keeps the first that fits. Nothing here guesses at
content: a text either reads as one JSON object or is not offered.
"""

from __future__ import annotations

import json
import re

MAX_OBJECTS = 8  # JSON objects tried per reply (a reply of many braces stays linear)

_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_REASONING = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.DOTALL)
_LITERALS = {"True": "true", "False": "false", "None": "null"}


def strip_reasoning(text: str) -> str:
    """The reply without its reasoning blocks; "" when a reasoning block was opened and never closed (the
    answer was cut off while the model was still thinking)."""
    stripped = _REASONING.sub("", text)
    if _OPEN_REASONING.match(stripped):
        return ""
    return stripped.strip()


def json_texts(reply: str) -> list[str]:
    """Strict-JSON texts of the objects the reply may hold, most likely first, without duplicates: the whole
    reply, the bodies of its fenced blocks, then each balanced `{...}` in it. Each is the text as sent when
    it parses, else its lenient normalisation when that parses; texts that parse neither way are kept last
    (as sent) so a validator can say what is wrong with them."""
    text = strip_reasoning(reply)
    raw: list[str] = [text]
    raw.extend(match.group(2).strip() for match in _FENCE.finditer(text))
    raw.extend(_balanced_objects(text))
    good: list[str] = []
    bad: list[str] = []
    for candidate in dict.fromkeys(c for c in raw if c):
        if _parses(candidate):
            good.append(candidate)
            continue
        loose = normalise(candidate)
        (good if loose is not None else bad).append(loose if loose is not None else candidate)
    return list(dict.fromkeys(good)) + bad


def normalise(text: str) -> str | None:
    """`text` rewritten as strict JSON when it is JSON written loosely (single-quoted strings, trailing
    commas, Python literals), else None."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            end, body = _read_string(text, i)
            if end < 0:
                return None
            out.append(json.dumps(body, ensure_ascii=False))
            i = end
            continue
        if char == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                i += 1  # a trailing comma
                continue
        if char.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_LITERALS.get(word, word))
            i = j
            continue
        out.append(char)
        i += 1
    fixed = "".join(out)
    return fixed if _parses(fixed) else None


def _read_string(text: str, start: int) -> tuple[int, str]:
    """The end index (after the closing quote) and the decoded body of the string opened at `start`; -1
    when it is never closed. Escapes follow JSON, plus `\\'` inside single quotes."""
    quote = text[start]
    i, n = start + 1, len(text)
    body: list[str] = []
    while i < n:
        char = text[i]
        if char == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "'":
                body.append("'")
                i += 2
                continue
            if nxt == "u" and i + 6 <= n:
                try:
                    body.append(json.loads(f'"{text[i : i + 6]}"'))
                except json.JSONDecodeError:
                    return -1, ""
                i += 6
                continue
            escaped = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"'}
            body.append(escaped.get(nxt, nxt))
            i += 2
            continue
        if char == quote:
            return i + 1, "".join(body)
        body.append(char)
        i += 1
    return -1, ""


def _balanced_objects(text: str) -> list[str]:
    """Each top-level `{...}` of `text` whose braces balance (quotes respected), at most MAX_OBJECTS."""
    found: list[str] = []
    i, n = 0, len(text)
    while i < n and len(found) < MAX_OBJECTS:
        start = text.find("{", i)
        if start < 0:
            break
        end = _matching_brace(text, start)
        if end < 0:
            i = start + 1
            continue
        found.append(text[start : end + 1])
        i = end + 1
    return found


def _matching_brace(text: str, start: int) -> int:
    depth = 0
    quote: str | None = None
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if quote is not None:
            if char == "\\":
                i += 2
                continue
            if char == quote:
                quote = None
        elif char in "\"'":
            # an apostrophe between letters is a word's, not a quote ("don't")
            if char == "'" and 0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
                pass
            else:
                quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True
