"""The table of redaction cases (`tests/data/redaction_cases.jsonl`): secrets in their written forms and
look-alikes that must be kept, in English, Chinese and mixed text, in free text and in event metadata.

The `dev` split is what the redactor was built against: every case must pass. The `test` split was written
first, before the redactor was changed, and is scored only as a whole: 100% of its secrets caught and
>= 97% of its look-alikes kept. Run `python -m tests.unit.test_redaction_cases` for the figures of both
splits and the redactor's speed on the corpus turns.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.redaction import redact, redact_obj

DATA = Path(__file__).resolve().parents[1] / "data"
CASES_PATH = DATA / "redaction_cases.jsonl"
MARK = "[REDACTED:"


@dataclass(frozen=True)
class Case:
    id: str
    split: str
    lang: str
    kind: str  # "keep" for a look-alike, else the kind of secret it carries
    secrets: tuple[str, ...]
    text: str | None = None
    metadata: Any = None

    @property
    def is_secret(self) -> bool:
        return self.kind != "keep"


def load_cases() -> list[Case]:
    cases = []
    for line in CASES_PATH.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        cases.append(
            Case(
                id=raw["id"],
                split=raw["split"],
                lang=raw["lang"],
                kind=raw["kind"],
                secrets=tuple(raw["secrets"]),
                text=raw.get("text"),
                metadata=raw.get("metadata"),
            )
        )
    return cases


CASES = load_cases()


def passes(case: Case) -> bool:
    """A secret case: none of its secrets is left and a placeholder stands in. A look-alike: unchanged."""
    if case.text is not None:
        before: Any = case.text
        after: Any = redact(case.text)
        seen = after
    else:
        before = case.metadata
        after = redact_obj(case.metadata)
        seen = json.dumps(after, ensure_ascii=False) + json.dumps(after)
    if not case.is_secret:
        return bool(after == before)
    return MARK in seen and not any(s in seen for s in case.secrets)


def score(split: str) -> dict[str, Any]:
    chosen = [c for c in CASES if c.split == split]
    secrets = [c for c in chosen if c.is_secret]
    keeps = [c for c in chosen if not c.is_secret]
    caught = sum(passes(c) for c in secrets)
    kept = sum(passes(c) for c in keeps)
    return {
        "split": split,
        "secrets": len(secrets),
        "caught": caught,
        "look_alikes": len(keeps),
        "kept": kept,
        "caught_rate": caught / len(secrets),
        "kept_rate": kept / len(keeps),
    }


def test_the_table_has_200_cases_half_look_alikes_in_both_languages_and_both_splits() -> None:
    assert len(CASES) >= 200
    assert len({c.id for c in CASES}) == len(CASES)
    keeps = sum(not c.is_secret for c in CASES)
    assert 0.45 <= keeps / len(CASES) <= 0.55
    for split in ("dev", "test"):
        langs = {c.lang for c in CASES if c.split == split}
        assert langs == {"en", "zh", "mixed"}
        assert any(c.metadata is not None for c in CASES if c.split == split)
    for c in CASES:
        assert (c.text is None) != (c.metadata is None), c.id
        assert c.is_secret == bool(c.secrets), c.id
        where = c.text if c.text is not None else json.dumps(c.metadata, ensure_ascii=False)
        assert all(s in where or s in json.dumps(c.metadata) for s in c.secrets), c.id


@pytest.mark.parametrize("case", [c for c in CASES if c.split == "dev"], ids=lambda c: f"{c.id}-{c.kind}")
def test_dev_case(case: Case) -> None:
    shown = redact(case.text) if case.text is not None else redact_obj(case.metadata)
    assert passes(case), shown


def test_held_back_split_catches_every_secret_and_keeps_97_percent_of_look_alikes() -> None:
    figures = score("test")

    assert figures["caught"] == figures["secrets"], figures
    assert figures["kept_rate"] >= 0.97, figures


# ---------------------------------------------------------------- property: any secret, anywhere

# One secret of each kind in several of its written forms. Built from parts so no fixed string is learnt.
_ALNUM = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _token(rng: random.Random, n: int) -> str:
    while True:
        t = "".join(rng.choice(_ALNUM) for _ in range(n))
        if any(c.isdigit() for c in t) and any(c.isalpha() for c in t):
            return t


def _luhn_digit(partial: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(partial)):
        n = int(ch)
        if i % 2 == 0:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return str((10 - total % 10) % 10)


def _card(rng: random.Random) -> str:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16), ("62", 19)])
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    digits = body + _luhn_digit(body)
    sep = rng.choice(["", " ", "-"])
    sizes = {15: (4, 6, 5), 16: (4, 4, 4, 4), 19: (4, 4, 4, 4, 3)}[length]
    parts, at = [], 0
    for size in sizes:
        parts.append(digits[at : at + size])
        at += size
    return sep.join(parts)


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _cn_id(rng: random.Random) -> str:
    region = rng.choice(["110105", "310104", "440305", "510107", "330102"])
    birth = f"{rng.randint(1950, 2010)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    first17 = region + birth + f"{rng.randint(0, 999):03d}"
    digits = first17 + "10X98765432"[sum(int(c) * w for c, w in zip(first17, _CN_WEIGHTS, strict=True)) % 11]
    sep = rng.choice(["", " ", "-"])
    return sep.join([digits[:6], digits[6:14], digits[14:]]) if sep else digits


def _password_form(rng: random.Random) -> tuple[str, str]:
    pw = _token(rng, rng.randint(6, 14)) + rng.choice(["", "!", "#", "@1", "_x"])
    user = rng.choice(["admin", "root", "bob", "deploy", "ops_bot"])
    form = rng.choice(
        [
            "password: {p}",
            "my password is {p}",
            "pwd={p}",
            "pw: {p}",
            "passwd {p}",
            "pass = {p}",
            "login: {u} / {p}",
            "user/pass: {u}/{p}",
            "creds {u}:{p}",
            "username {u} password {p}",
            "密码：{p}",
            "密码是 {p}",
            "口令 {p}",
            "账号 {u} 密码 {p}",
            "账号密码 {u}/{p}",
            '{{"password": "{p}"}}',
        ]
    )
    return form.format(p=pw, u=user), pw


def _labelled_form(rng: random.Random) -> tuple[str, str]:
    value = _token(rng, rng.randint(16, 40))
    label = rng.choice(
        [
            "api_key",
            "API key",
            "apiKey",
            "client_secret",
            "SecretAccessKey",
            "secret access key",
            "access token",
            "token",
            "auth_token",
            "SECRET_KEY",
            "密钥",
            "私钥",
            "秘钥",
            "令牌",
            "访问令牌",
        ]
    )
    connector = rng.choice([": ", "=", " = ", "：", " is ", " 是 ", "是", " 为 ", '": "', " -> "])
    return f"{label}{connector}{value}", value


def _secret(kind: str, rng: random.Random) -> tuple[str, str]:
    """(the secret as written in context, the part that must not survive)."""
    if kind == "card":
        card = _card(rng)
        return card, card
    if kind == "cn_id":
        cn = _cn_id(rng)
        return cn, cn
    if kind == "password":
        return _password_form(rng)
    if kind == "labelled":
        return _labelled_form(rng)
    if kind == "api_key":
        key = rng.choice(["sk-proj-", "ghp_", "AKIA", "xoxb-1234-", "sk_live_"]) + _token(rng, 36)
        key = key[:20] if key.startswith("AKIA") else key
        return key.upper() if key.startswith("AKIA") else key, key.upper() if key.startswith("AKIA") else key
    raise AssertionError(kind)


_WORDS_EN = (
    "the deploy failed again so I checked logs and restarted it yesterday we use pnpm on staging".split()
)
_WORDS_ZH = list("我们昨天在测试环境部署了新版本然后重启服务器看日志发现问题已经修好")
_PUNCT = [" ", " ", ", ", "。", "，", "; ", "\n", " - ", "（", "）", ": "]

KINDS = ("card", "cn_id", "password", "labelled", "api_key")


@st.composite
def _embedded(draw: st.DrawFn) -> tuple[str, str]:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(KINDS))
    written, secret = _secret(kind, rng)
    words = _WORDS_ZH if draw(st.booleans()) else _WORDS_EN
    before = draw(st.lists(st.sampled_from(words), max_size=8))
    after = draw(st.lists(st.sampled_from(words), max_size=8))
    glue = "" if words is _WORDS_ZH else " "
    left = glue.join(before) + (draw(st.sampled_from(_PUNCT)) if before else "")
    right = (draw(st.sampled_from(_PUNCT)) if after else "") + glue.join(after)
    return left + written + right, secret


@settings(max_examples=600, deadline=None)
@given(_embedded())
def test_a_secret_of_any_kind_anywhere_in_random_text_is_always_redacted(sample: tuple[str, str]) -> None:
    text, secret = sample

    out = redact(text)

    assert secret not in out, out
    assert MARK in out


def _main() -> None:  # pragma: no cover - a report for people, not a test
    import time

    for split in ("dev", "test"):
        f = score(split)
        print(
            f"{split}: secrets caught {f['caught']}/{f['secrets']} ({f['caught_rate']:.1%}), "
            f"look-alikes kept {f['kept']}/{f['look_alikes']} ({f['kept_rate']:.1%})"
        )
    turns = []
    for path in [*sorted((DATA / "extraction_quality").glob("*.jsonl")), DATA / "extraction_cases.jsonl"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                raw = json.loads(line)
                turns += [t.get("text", "") for t in raw.get("turns", [])] + (
                    [raw["text"]] if "text" in raw else []
                )
    turns = (turns * (1 + 5000 // len(turns)))[:5000]
    turns += [c.text for c in CASES if c.text is not None]  # a few with secrets, as in real traffic
    long_turns = [" ".join(turns[i : i + 40]) for i in range(0, len(turns), 40)]  # ~2 KB pastes
    for name, batch in (("turns", turns), ("long turns", long_turns)):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for t in batch:
                redact(t)
            best = min(best, time.perf_counter() - start)
        chars = sum(len(t) for t in batch) / len(batch)
        print(
            f"speed, {name}: {len(batch)} x {chars:.0f} chars avg in {best * 1000:.0f} ms: "
            f"{best / len(batch) * 1e6:.1f} us each"
        )


if __name__ == "__main__":
    _main()


# The independent held-back set (tests/data/REDACTION_HOLDOUT.md), written by an author who had not read the
# redactor. Scored once, before the redactor was changed for it: 53 of 61 secrets caught (0.869), 49 of 50
# look-alikes kept (0.980). The forms it showed missing were then added as forms (mysql's attached -p, shell
# assignments of *PASSWORD names, user:password where the sentence speaks of signing in, more
# service-prefixed tokens, checksummed Dutch, Brazilian and Spanish ID numbers, a question after a password
# label); it is a regression set now, every case must pass, and it no longer measures generalisation.
#
# The second one (tests/data/REDACTION_HOLDOUT2.md), written the same way after the first was folded in, scored
# once on the redactor of that time: 87 of 101 secret strings (0.861), 50 of 60 secret cases, 58 of 60
# look-alikes kept (0.967). Misses: national IDs of more countries (UK NINO, Taiwan, Hong Kong, Aadhaar,
# an unlabelled-looking DNI), an IBAN, WeCom and Feishu webhook URLs, backup codes, a Huawei AK/SK pair;
# broken: a `${VAR:?message}` reference and "password: it's in 1Password". Folded in the same way.
#
# The third one (tests/data/REDACTION_HOLDOUT3.md), written the same way, scored once on the redactor of
# c006a14: 62 of 71 secret strings (0.873), 55 of 59 look-alikes kept (0.932). Misses: passwords given by a
# tool's own flag (redis-cli -a, curl -u user:pass), a redis.conf `requirepass`, a credential pair after
# "creds as before:", Huawei keys under the short labels AK / SK, a TOTP key in groups of four, a bank
# account number in payment details, an Aadhaar number next to its label; broken: AWS's documented example
# keys, `pw: str` in code, `USER:PASSWORD` in a URL template, "pass: 213" after a pytest summary. Folded in
# the same way.
HOLDOUT_PATHS = (
    DATA / "redaction_holdout.jsonl",
    DATA / "redaction_holdout2.jsonl",
    DATA / "redaction_holdout3.jsonl",
)


def _holdout() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in HOLDOUT_PATHS
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@pytest.mark.parametrize("case", _holdout(), ids=lambda c: c["id"])
def test_every_case_of_the_former_holdout_set_passes(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    if case["secrets"]:
        for secret in case["secrets"]:
            assert secret not in out, (case["id"], out)
    else:
        assert out == case["text"], case["id"]
