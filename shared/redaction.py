"""Redact secrets and personal identifiers from free text before it is stored, logged or dead-lettered.

Contract (pure functions, no I/O, never raise on any ``str``):

* ``redact(text) -> str`` returns ``text`` with every detected secret replaced by a typed placeholder
  ``[REDACTED:<type>]``; everything else is kept byte for byte.
* ``redact_with_report(text) -> (str, {type: count})`` does the same and counts replacements per type;
  types with no replacement are absent (a clean text gives ``{}``).
* ``redact_obj(obj) -> object`` rebuilds dicts (keys and values), lists, tuples and sets with every ``str``
  inside redacted; any other value is returned as is.

Types: ``card`` (Luhn-valid with a known issuer prefix and length), ``cn_id`` (18-character Chinese resident
ID with a valid MOD 11-2 check digit and birth date), ``ssn`` (US ``AAA-GG-SSSS``, or 9 labelled digits),
``api_key`` (OpenAI, Anthropic, AWS, GitHub, Slack, Google, Stripe, ``Bearer`` tokens), ``jwt``,
``private_key`` (a whole PEM block, or to the end of the text when the END line is missing) and ``password``
(English or Chinese "password is ..." phrases and ``scheme://user:password@host`` URLs; only the value is
replaced, the lead-in words stay).

Redaction is idempotent: a placeholder never matches any rule, so ``redact(redact(x)) == redact(x)``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

# A rule's action: given a match, return (replacement text, number of secrets replaced in it).
_Action = Callable[[re.Match[str]], tuple[str, int]]

# Every placeholder starts with this; value patterns refuse to start on it, which is what makes reruns no-ops.
_MARK = "[REDACTED:"


def _tag(kind: str) -> str:
    return f"{_MARK}{kind}]"


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    action: _Action
    # Lower-case substrings of which any match must contain one: a cheap `in` test skips the regex scan
    # on the (common) texts that cannot match. Empty means always scan.
    gate: tuple[str, ...] = ()


def _swap(kind: str, check: Callable[[str], bool] | None = None) -> _Action:
    """Replace the group named ``v`` (or the whole match) by the placeholder when ``check`` accepts it."""
    tag = _tag(kind)

    def action(m: re.Match[str]) -> tuple[str, int]:
        whole = m.group()
        start, end = m.span("v") if "v" in m.re.groupindex else m.span()
        if check is not None and not check(m.string[start:end]):
            return whole, 0
        base = m.start()
        return whole[: start - base] + tag + whole[end - base :], 1

    return action


# Flags: re.ASCII keeps case-folding and \s/\w ASCII-only, so odd Unicode ("ſ", Kelvin sign) can never
# satisfy a case-insensitive label on a second run when the gate skipped the rule on the first.
_I = re.IGNORECASE | re.ASCII

# ---------------------------------------------------------------- numbers: cards, Chinese IDs, SSNs


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _issuer_ok(d: str) -> bool:
    """Known issuer prefix *and* a length that issuer uses: rejects most Luhn-valid accidents (IMEIs...)."""
    n, p2, p3, p4 = len(d), int(d[:2]), int(d[:3]), int(d[:4])
    if d[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return n == 16
    if p2 in (34, 37):  # Amex
        return n == 15
    if p4 == 6011 or p2 in (62, 65) or 644 <= p3 <= 649 or 3528 <= p4 <= 3589:  # Discover, UnionPay, JCB
        return 16 <= n <= 19
    if p2 in (36, 38) or 300 <= p3 <= 305:  # Diners
        return 14 <= n <= 19
    return False


# Speed: patterns start with a literal or character class and check the character before it with a
# lookbehind placed after that first character, so the regex engine can skip ahead to candidate positions.
#
# A run of digit groups joined by single spaces/dashes. Possessive quantifiers: a run glued to a letter or a
# longer number fails as a whole instead of backtracking into a shorter "card". A decimal point before or
# after means a float (0.4111...); a "+" before means a phone number (+4...).
# The (?=...{12}) pre-check rejects short numbers (dates, prices) without a Python callback per number.
_DIGIT_RUN = re.compile(
    r"[0-9](?<![0-9A-Za-z_+][0-9])(?<![0-9]\.[0-9])(?=[0-9 -]{12})"
    r"[0-9]*+(?:[ -][0-9]++)*+(?![0-9A-Za-z_]|[.,][0-9])"
)
_GROUP = re.compile(r"[0-9]+")


def _card_end(run: str, groups: list[tuple[int, int]], i: int) -> int | None:
    """Index of the last group of the longest card starting at group ``i``, or None."""
    if run[groups[i][0]] not in "23456":  # no issuer prefix starts with 0, 1, 7, 8 or 9
        return None
    best, digits = None, ""
    for j in range(i, len(groups)):
        s, e = groups[j]
        # Grouped cards use groups of 3-7 digits (4-4-4-4, 4-6-5, 4-4-4-4-3).
        if j > i and not (3 <= e - s <= 7 and 3 <= groups[i][1] - groups[i][0] <= 7):
            break
        digits += run[s:e]
        if len(digits) > 19:
            break
        if len(digits) >= 13 and _issuer_ok(digits) and _luhn_ok(digits):
            best = j
    return best


def _card_action(m: re.Match[str]) -> tuple[str, int]:
    run = m.group()
    if len(run) - run.count(" ") - run.count("-") < 13:  # most runs are dates, prices, counts
        return run, 0
    groups = [g.span() for g in _GROUP.finditer(run)]
    # A run may hold a card next to other numbers ("qty 2 4111 1111 1111 1111"): try every start group.
    out, last, i, found = [], 0, 0, 0
    while i < len(groups):
        j = _card_end(run, groups, i)
        if j is None:
            i += 1
            continue
        out += [run[last : groups[i][0]], _tag("card")]
        last, i, found = groups[j][1], j + 1, found + 1
    out.append(run[last:])
    return "".join(out), found


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID = re.compile(
    r"[1-9](?<![0-9A-Za-z_+][1-9])(?<![0-9]\.[1-9])"
    r"[0-9]{5}(?:19|20)[0-9]{2}[01][0-9][0-3][0-9][0-9]{3}[0-9Xx](?![0-9A-Za-z_])"
)


def _cn_id_ok(s: str) -> bool:
    check = "10X98765432"[sum(int(c) * w for c, w in zip(s, _CN_WEIGHTS, strict=False)) % 11]
    if s[17].upper() != check:
        return False
    try:
        _dt.date(int(s[6:10]), int(s[10:12]), int(s[12:14]))
    except ValueError:
        return False
    return True


def _ssn_ok(digits: str) -> bool:
    """SSA never issues area 000, 666 or 9xx, group 00 or serial 0000."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# Dashes or spaces, the same separator twice; not a slice of a longer dashed number (phone 1-555-12-3456).
_SSN = re.compile(
    r"[0-9](?<![0-9A-Za-z_+][0-9])(?<![0-9][.-][0-9])[0-9]{2}([ -])[0-9]{2}\1[0-9]{4}(?![0-9A-Za-z_]|-[0-9])"
)
# Nine bare digits are only an SSN when labelled so.
_SSN_LABELLED = re.compile(
    r"s(?<![A-Za-z]s)(?:sn|ocial[ _-]?security(?:[ _-]?(?:number|num|no))?)(?![A-Za-z])"
    r"\.?[ \t]*(?:[:#=]|is|was)?[ \t]*(?P<v>[0-9]{9})(?![0-9A-Za-z_])",
    _I,
)

# ---------------------------------------------------------------- tokens and keys


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _openai_like(s: str) -> bool:
    # Real keys are random: a digit plus upper case or a long alphanumeric stretch. "sk-" + hyphenated words
    # (sk-learn-style prose) is not a key.
    longest = max(len(p) for p in re.split(r"[-_]", s))
    return _has_digit(s) and (any(c.isupper() for c in s) or longest >= 12)


def _bearer_action(m: re.Match[str]) -> tuple[str, int]:
    token = m.group("v").rstrip(".")  # a sentence-ending full stop is not part of the token
    if len(token) < 20 or not _has_digit(token) or not any(c.isalpha() for c in token):
        return m.group(), 0
    return m.group("lead") + _tag("api_key") + m.group("v")[len(token) :], 1


# (pattern, extra check on the match, gate words). Each token is bounded so a longer word never leaks a slice.
_START, _END = r"(?<![A-Za-z0-9_-])", r"(?![A-Za-z0-9_-])"
_API_RULES: list[tuple[str, Callable[[str], bool] | None, tuple[str, ...]]] = [
    (r"sk-(?<![A-Za-z0-9_-]sk-)[A-Za-z0-9_-]{20,400}" + _END, _openai_like, ("sk-",)),  # + Anthropic sk-ant-
    (_START + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _END, None, ("akia", "asia")),
    (_START + r"gh[pousr]_[A-Za-z0-9]{30,255}" + _END, None, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (_START + r"github_pat_[A-Za-z0-9_]{22,255}" + _END, None, ("github_pat_",)),
    (_START + r"xox[abprs]-[A-Za-z0-9-]{10,250}" + _END, _has_digit, ("xox",)),
    (r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]{8,}", None, ("hooks.slack",)),
    (_START + r"AIza[A-Za-z0-9_-]{35}" + _END, None, ("aiza",)),
    (_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}" + _END, _has_digit, ("_live_", "_test_")),
]
_AWS_SECRET = re.compile(
    r"(?<![A-Za-z])(?:aws[ _-]?secret[ _-]?(?:access[ _-]?)?key|secret[ _-]?access[ _-]?key)(?:[ _-]?id)?"
    r"[\"']?[ \t]*(?:[:=]|=>|is)[ \t]*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    _I,
)
_BEARER = re.compile(r"(?<![A-Za-z])(?P<lead>bearer[ \t]+)(?P<v>[\w.~+/-]{20,}=*)(?![\w.~+/=-])", _I)
_JWT = re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)?")
# The lazy body stops at the first END line; `\Z` takes a truncated block to the end of the text.
_PEM_NAME = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PRIVATE_KEY = re.compile(r"-----BEGIN " + _PEM_NAME + r"[\s\S]*?(?:-----END " + _PEM_NAME + r"|\Z)")

# ---------------------------------------------------------------- passwords

# scheme://user:password@host (the scheme itself is irrelevant, so the scan starts at the "://" literal);
# greedy up to the last "@" of the authority, since passwords may contain "@".
_URL_PASSWORD = re.compile(r"://[^\s:/?#@\[\]]*:(?P<v>(?!\[REDACTED:)[^\s/?#]+)(?=@)")
# The value: quoted (anything up to the closing quote) or a bare run of printable ASCII, which stops at
# spaces, CJK text ("密码是abc123请保密") and placeholders. A bare value never starts with a quote or a
# connector character, so "password:=[REDACTED:password]" cannot be re-read as ":" + "=...".
_PW_VALUE = (
    r"[ \t]*(?P<q>[\"'`“‘「『])?)(?P<v>(?!\[REDACTED:)"
    r"(?(q)[^\n\"'`“”‘’「」『』]{1,200}|(?![\"'`:=>])(?:(?!\[REDACTED:)[\x21-\x7e])+))"
)
_PW_EN = re.compile(
    r"(?P<lead>(?P<label>p(?<![A-Za-z]p)(?:ass(?:word|wd|code|phrase)|wd))s?(?![A-Za-z])"
    r"(?:[ \t]+(?:for|to|of|on)(?:[ \t]+[\w@.'-]+){1,4}?)?"  # "the password for my router is ..."
    r"[\"']?(?:[ \t]*(?::=|=>|[:=：＝])|[ \t]+(?:is|was|are|equals)(?![A-Za-z'])"
    r"(?:[ \t]+(?:now|still|just|set[ \t]+to|changed[ \t]+to))?[ \t]*[:：]?)" + _PW_VALUE,
    _I,
)
_PW_ZH = re.compile(
    r"(?P<lead>(?:密码|密碼|口令)[ \t]*"
    r"(?:[:：=＝]|(?:就|也|还|都|仍)?(?:是|为|為|改成了?|改为|设为|设置为|设置成|换成了?)[:：]?)" + _PW_VALUE
)
# Words that follow "password is/:" in ordinary prose or config ("password is required", "password: null").
_NOT_A_PASSWORD_WORDS = """
    a an the this that it its not no now also still just only very too so set reset changed updated
    required needed necessary optional mandatory missing empty blank none null nil true false undefined
    incorrect correct wrong right invalid valid expired weak strong secure insecure safe unsafe short
    long case sensitive same different hidden masked encrypted hashed stored saved sent shown displayed
    visible known unknown forgotten lost compromised leaked being been be in on at of for to by with
    from and or but your my our their his her he she they we you i me him them what which who where when
    how why here there below above attached provided protected locked typed entered accepted rejected ok
    okay fine good bad great simple easy hard complex random unique ready available unavailable disabled
    enabled active inactive default please see something anything nothing everything important private
    confidential based managed generated rotated written printed listed given shared used reused common
    obvious predictable mine yours ours theirs then enter type click use check change choose create
    confirm must should can cannot will would may might
"""
_NOT_A_PASSWORD = frozenset(_NOT_A_PASSWORD_WORDS.split())
_PW_TRAILING = ".,;:)]}>'\"。，；：！？）」』】”’"  # not ! or ?: often part of the password
# Values that stand for a password without being one: masks, template slots, env references, "n/a".
_PW_STAND_IN = re.compile(r"[*-]+|<[^<>]*>|\$\{[^}]*\}|\{\{\S*|\$[A-Z_][A-Z0-9_]*|%s|n/?a|tbd|todo|xxx+", _I)
_LENGTH_WORD = re.compile(r"[ \t]*(?:characters?|chars?|digits?|letters?|symbols?|long)\b", _I)


def _password_action(m: re.Match[str]) -> tuple[str, int]:
    lead, value = m.group("lead"), m.group("v")
    if m.group("q"):  # quoted: the whole quoted text is the secret; the closing quote stays outside
        return lead + _tag("password"), 1
    secret = value.rstrip(_PW_TRAILING)
    keep = (
        not secret
        or (secret.replace("-", "").isalpha() and secret.split("-")[0].lower() in _NOT_A_PASSWORD)
        or _PW_STAND_IN.fullmatch(value) is not None
        or _PW_STAND_IN.fullmatch(secret) is not None
        # "the password is 12 characters long" states a length, not a password.
        or (secret.rstrip("+").isdigit() and _LENGTH_WORD.match(m.string, m.end()) is not None)
        # PWD=/home/me is the shell's working directory, not a password.
        or ((m.groupdict().get("label") or "").lower() == "pwd" and secret[0] in "/~")
    )
    if keep:
        return m.group(), 0
    return lead + _tag("password") + value[len(secret) :], 1


# ---------------------------------------------------------------- rule table (order matters)

_DIGITS = tuple("0123456789")
_RULES: tuple[_Rule, ...] = (
    # Multi-line and structured secrets first, so their inner digits/words never feed the narrower rules.
    _Rule("private_key", _PRIVATE_KEY, _swap("private_key"), ("private key",)),
    _Rule("jwt", _JWT, _swap("jwt"), ("eyj",)),
    *(_Rule("api_key", re.compile(p, re.ASCII), _swap("api_key", c), g) for p, c, g in _API_RULES),
    _Rule("api_key", _AWS_SECRET, _swap("api_key"), ("secret",)),
    _Rule("api_key", _BEARER, _bearer_action, ("bearer",)),
    _Rule("password", _URL_PASSWORD, _swap("password"), ("://",)),
    _Rule("password", _PW_EN, _password_action, ("pass", "pwd")),
    _Rule("password", _PW_ZH, _password_action, ("密码", "密碼", "口令")),
    # Chinese IDs before cards: an 18-digit ID starting 62/65/35 could also pass as a Luhn-valid card.
    _Rule("cn_id", _CN_ID, _swap("cn_id", _cn_id_ok), _DIGITS),
    _Rule("card", _DIGIT_RUN, _card_action, _DIGITS),
    _Rule("ssn", _SSN, _swap("ssn", lambda s: _ssn_ok(s[:3] + s[4:6] + s[7:])), _DIGITS),
    _Rule("ssn", _SSN_LABELLED, _swap("ssn", _ssn_ok), ("ssn", "social")),
)


def _apply(rule: _Rule, text: str) -> tuple[str, int]:
    found = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal found
        new, n = rule.action(m)
        found += n
        return new

    return rule.pattern.sub(replace, text), found


def redact_with_report(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with secrets replaced by ``[REDACTED:<type>]`` and the number replaced per type."""
    counts: dict[str, int] = {}
    if not text:
        return text, counts
    # Gating on the input is safe: placeholders never complete a match, so no rule can need a gate
    # word that only a placeholder supplied.
    lowered = text.lower()
    for rule in _RULES:
        if rule.gate and not any(word in lowered for word in rule.gate):
            continue
        text, found = _apply(rule, text)
        if found:
            counts[rule.kind] = counts.get(rule.kind, 0) + found
    return text, counts


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED:<type>]`` placeholders."""
    return redact_with_report(text)[0]


def redact_obj(obj: object) -> object:
    """Rebuild containers with every ``str`` inside (dict keys included) redacted; other values as is.

    Dicts come back as plain dicts, lists as lists, tuples as tuples (named tuples keep their type), sets as
    sets. Two keys that redact to the same text collapse into one, the later value winning.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    if isinstance(obj, tuple):
        items = [redact_obj(v) for v in obj]
        return cast(Any, type(obj))(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, set | frozenset):
        return type(obj)(redact_obj(v) for v in obj)
    return obj
