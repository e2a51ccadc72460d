"""A turn's text as the rules read it: cleaned of code and quotes, split into sentences. Pure: no I/O.

- `clean_text(text)`: fenced code blocks, indented code and "> quoted" lines dropped (pasted code and quoted
  text are not the user's statements); inline `code` and Markdown emphasis keep their text; lines normalised.
- `split_clauses(sentence)`: the clauses of one sentence with their offsets, split at commas, semicolons,
  colons, dashes and at a conjunction that opens a new statement or request ("..., and can you ..."); never
  inside a parenthesised aside ("my SaaS (tiny, ~300 users) runs on ...").
- `split_sentences(text)`: the sentences of a cleaned text, leading bullets, emoji and symbols dropped; inner
  dots ("Next.js", "v1.2", "Dr. Patel", "e.g. this") do not end a sentence.
"""

from __future__ import annotations

import re

from core.extraction.lang import normalize_lines, simplified

_FENCE_RE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)")
_INDENTED_CODE_RE = re.compile(r"(?m)^(?: {4,}|\t).*$")
_QUOTED_RE = re.compile(r"(?m)^[ \t]*>.*$")
# Pasted output: log lines with a timestamp or a level, stack frames, tracebacks. Not the user's words.
_LOG_LINE_RE = re.compile(
    r"(?m)^[ \t]*(?:\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[?(?:ERROR|WARN|WARNING|INFO|DEBUG|TRACE|FATAL)\b|"
    r"at\s+[\w.$<>]+\(|File\s+\"[^\"]+\",\s+line\s+\d+|Traceback\s+\(most\s+recent|[\w.]+(?:Error|Exception):\s).*$"
)
_INLINE_CODE_RE = re.compile(r"`([^`\n]{1,80})`")
# A text the user asks to have worked on, after the request and its colon ("proofread this for my cousin's wedding
# speech: 'Sam and Alex met in ...'", "把这段 English 改得地道一点：I am very ...", "翻译成英文：..."): someone's text,
# not the user's statements; the request before the colon stays.
# The request is an imperative or a question to the agent ("I edit videos for a living: ..." is the user's work, not
# a request); in Chinese a verb of editing a text, with the text or the agent named before it.
_WORKED_ON_RE = re.compile(
    r"(?i)(?:^\W*|[.!?\n]\s*|\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+)?|\b(?:please|pls|plz)\s+|"
    r"\bhelp\s+me\s+)"
    r"(?:proof-?read|translate|re-?write|rephrase|paraphrase|polish|edit|reword|shorten|summari[sz]e|"
    r"(?:fix|correct|check)\s+(?:the\s+)?(?:grammar|spelling|typos|wording|tone)|make\s+(?:this|it)\s+(?:sound|more))"
    r"\b[^:：\n]{0,100}?[:：](?=\s*\S)"
    r"|(?:[把将]?(?:这|下面|以下)(?:段|句|篇|个|封|几句)[^：:\n]{0,16}?|帮我|请你?|麻烦你?)\s*"
    r"(?:改得|改成|改一下|修改一下|翻译|译成|润色|校对|改写|精简|缩写|扩写|总结|概括)[^：:\n]{0,20}?[：:](?=\s*\S)"
    r"|(?:^|[。！？.!?\n]\s*)翻译(?:一下|成[^：:\n]{1,8})?[：:](?=\s*\S)"
)
# "Next.js", "v1.2", "Dr. Patel" and "e.g. this" keep their dot; "小王.我" (a mapped "。") ends a sentence.
# The dot first: the engine finds dots by a fast literal scan, then looks around each (a pattern opening with
# a lookbehind is tried at every character).
_INNER_DOT_RE = re.compile(
    r"\.(?:(?<=[A-Za-z0-9]\.)(?=[A-Za-z0-9])|(?<=\s\.)(?=[A-Za-z_][\w-]*(?:\.[\w-]+)*\b)|(?:(?<=\bDr\.)|(?<=\bMr\.)|"
    r"(?<=\bMrs\.)|(?<=\bMs\.)|(?<=\bProf\.)|(?<=\bSt\.)|(?<=\bJr\.)|(?<=\bvs\.)|(?<=\betc\.)|(?<=\be\.g\.)|"
    r"(?<=\bi\.e\.))(?=\s))"
)
_DOT_MARK = "\u2024"
_LEADING_NOISE_RE = re.compile(r"^(?:[^\w\s\"'(\[]|\s|\d+[.)]\s)+")
_EMPHASIS_RE = re.compile(r"\*{1,3}")
_SENTENCE_RE = re.compile(r"[^.!?;\n]+[.!?;]*|[.!?;]+")


def clean_text(text: str) -> str:
    """The turn's text without code blocks and quoted lines, normalised line by line."""
    if "```" in text or "~~~" in text:
        text = _FENCE_RE.sub("\n", text)
    text = _QUOTED_RE.sub("", _INDENTED_CODE_RE.sub("", text))
    if "\n" in text:
        text = _LOG_LINE_RE.sub("", text)
    if "`" in text:
        text = _INLINE_CODE_RE.sub(r"\1", text)
    worked_on = _WORKED_ON_RE.search(text)
    if worked_on is not None:
        text = text[: worked_on.end()]
    if "*" in text:  # Markdown emphasis: "**Remember**: ..."
        text = _EMPHASIS_RE.sub("", text)
    return normalize_lines(text if text.isascii() else simplified(text))


_ASIDE_MARKS = {"!": "\u01c3", "?": "\u0294"}  # stand-ins that are no sentence marks, put back after the split
_ASIDE_MARK_RE = re.compile(r"[!?](?=[)）])")


def _restore_marks(sentence: str) -> str:
    sentence = sentence.replace(_DOT_MARK, ".")
    if "\u01c3" in sentence or "\u0294" in sentence:
        sentence = sentence.replace("\u01c3", "!").replace("\u0294", "?")
    return sentence


def split_sentences(text: str) -> list[str]:
    """Sentences of a cleaned text; leading bullets, emoji and symbols dropped ("👍 remember ...")."""
    protected = _INNER_DOT_RE.sub(_DOT_MARK, text)
    if ")" in protected:  # "(week 2!)": a mark inside an aside ends no sentence
        protected = _ASIDE_MARK_RE.sub(lambda m: _ASIDE_MARKS[m.group()], protected)
    sentences = (
        _restore_marks(_LEADING_NOISE_RE.sub("", match.group()).strip())
        for match in _SENTENCE_RE.finditer(protected)
    )
    return [sentence for sentence in sentences if sentence.strip(".!?; ")]


# A clause ends at a comma, semicolon, colon or dash, or before a conjunction opening a new statement.
_CLAUSE_BREAK_RE = re.compile(
    # "10:15" is a time and "our 1:1s" a meeting, not a clause break: a colon between two digits never is; nor
    # is the comma of "2,000" (three digits after it, then no digit)
    # nor a colon between a name and its version or port ("python:3.11-slim", "db:5432")
    r"\s*(?:;|,(?!(?<=\d,)\d{3}(?!\d))|:(?!(?<=[A-Za-z0-9]:)\d)|\s[-\u2013\u2014]\s|\u2014)\s*"
    r"|\s+(?=(?:and|but|so|though|although|while)\s+(?:i|i'm|i've|we|we're|we've|my|our|the\s+team|please|pls|"
    r"can|could|would)\b)"
    r"|\s+(?=so\s+(?-i:[A-Z])|so\s+(?:the|it|that|this|my|our|you)\b)"
    # "since we're on MySQL 8 I assume window functions are fine?": the ground, then the question
    r"|(?<=\w)\s+(?=i\s+(?:assume|guess|suppose|figure|presume)\b)"
    # "the repo uses uv so don't give me pip commands": a request drawn from what was just said
    r"|\s+(?=so\s+(?:please\s+|pls\s+)?(?:don't|do\s+not|never|always|avoid|stop|no\s+more|give|keep|use|show)\b)"
    r"|(?<=[\u4e00-\u9fff])\s*(?=(?:但是|不过|所以|然后|而且|另外|顺便|并且|可是)[\u4e00-\u9fffA-Za-z])",
    re.I,
)
ENUMERATOR_RE = re.compile(  # "一是", "第二，", "2)", "（3）", "- ": a list item's mark, not its words
    r"^\s*(?:[一二三四五六七八九十]是|第[一二三四五六七八九十]+[,、]?|\d+[)）.、]|[(（]\d+[)）]|[-*•])\s*"
)
_MIN_CLAUSE = re.compile(  # two words, two Han characters, or a share of a name ("100% GCP")
    r"[A-Za-z]{2,}.*[A-Za-z]{2,}|[\u4e00-\u9fff].*[\u4e00-\u9fff]|\d\s*%\s*[A-Za-z]{2,}", re.S
)


# an aside, or a literal in braces or brackets ("{code, msg, data}", "[a, b]"), closed within 80 characters
_ASIDE_RE = re.compile(r"[(（][^()（）]{1,80}[)）]|\{[^{}]{1,80}\}|\[[^\[\]]{1,80}\]")


def split_outside_brackets(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` where it is not inside an aside or a literal in brackets ("{code, msg, data}")."""
    spans = [m.span() for m in _ASIDE_RE.finditer(text)] if any(c in text for c in "(（{[") else []
    parts: list[str] = []
    start = 0
    for index, char in enumerate(text):
        if char == sep and not any(s < index < e for s, e in spans):
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def split_clauses(sentence: str) -> list[tuple[int, str]]:
    """(offset, clause) for each clause of one sentence; clauses too short to say anything are left out."""
    out: list[tuple[int, str]] = []
    start = 0
    bracketed = "(" in sentence or "（" in sentence or "{" in sentence or "[" in sentence
    asides = [m.span() for m in _ASIDE_RE.finditer(sentence)] if bracketed else ()
    for match in _CLAUSE_BREAK_RE.finditer(sentence):
        if match.start() <= start or any(s < match.start() < e for s, e in asides):
            continue  # "my SaaS (tiny invoicing tool, ~300 users) runs on ...": an aside is part of its clause
        out.append((start, sentence[start : match.start()]))
        start = match.end()
    out.append((start, sentence[start:]))
    clauses = []
    for offset, text in out:
        enumerator = ENUMERATOR_RE.match(text)  # "一是不要用 Lombok", "2) all scripts must ..."
        if enumerator:
            offset, text = offset + enumerator.end(), text[enumerator.end() :]
        if _MIN_CLAUSE.search(text):
            clauses.append((offset, text))
    return clauses
