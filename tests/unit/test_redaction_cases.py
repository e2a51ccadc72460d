"""The table of redaction cases (`tests/data/redaction_cases.jsonl`): secrets in their written forms and
look-alikes that must be kept, in English, Chinese and mixed text, in free text and in event metadata.

The `dev` split is what the redactor was built against: every case must pass. The `test` split was written
first, before the redactor was changed, and is scored only as a whole: 100% of its secrets caught and
>= 97% of its look-alikes kept. Run `python -m tests.unit.test_redaction_cases` for the figures of both
splits and the redactor's speed on the corpus turns.
"""

from __future__ import annotations

import base64
import json
import random
import time
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
#
# The fourth one (tests/data/REDACTION_HOLDOUT4.md), written the same way, scored once on the redactor of
# 0d9c22c: 74 of 85 secret strings (0.871), 50 of 60 secret cases, 58 of 60 look-alikes kept (0.967). Misses: a
# key wrapped over two lines, a Maven settings.xml `<password>`, a CVV after a card and expiry, a Wi-Fi key, a
# seed phrase, a session cookie in a copied curl command, a Tencent SecretKey after its id in an SDK call, a
# Mailgun key and a Telegram bot token, an Azure SAS `sig=`, a password after "口令改了，新的是"; broken: a JSON
# schema's password field, an `.env.example` with placeholders. Folded in the same way (the forms have their
# own cases with new values in `FORM_CASES` below).
#
# The fifth one (tests/data/REDACTION_HOLDOUT5.md), written the same way, scored once on the redactor of
# e049945: 60 of 93 secret strings (0.645), 35 of 64 secret cases, 52 of 56 look-alikes kept (0.929). Misses:
# password labels in other languages (contraseña, パスワード, WLAN-Schlüssel) and pinyin `mm`, PINs and door
# codes, passwords told as changed (old and new), credentials in prose, Cisco `password 0` / SNMP community,
# national ids with checks (CA SIN, SG NRIC, SE personnummer, KR RRN, FR NIR, IN PAN), card codes after a
# Chinese label and Amex's CID, age / DingTalk SEC / Discord tokens, keys after Chinese labels and Azure's key1,
# Docker's config.json `auth`, a BitLocker key, a seed phrase on one line, obsutil's key flags; broken: a
# Terraform `var.x` reference, `<...>` and Chinese placeholders in `.env.example`, a Mapbox public `pk.` token.
# Folded in the same way (`FORM_CASES_5` below). The sixth (78/102, 54/60 at first sight) likewise:
# `FORM_CASES_6` below. The seventh (66/80, 54/60 at first sight: Chinese key labels, a bank account by a pay
# word, a changed password's new value, secret query parameters, passwords spelled out or sent in pieces, SQL
# INSERT of a password column, Oracle's inline user/password, SMS codes; broken: masked and filled-in values,
# secret listings, a loopback default) likewise: `FORM_CASES_7` below. The eighth (94/104, 76/78 at first
# sight: passwords fed to chpasswd, SMS codes quoted with a scam question, a WireGuard pre-shared key, labels
# then values "分别是", a pass phrase "- it's X", an account / password pair in chat, a lockbox code, an access key
# id; broken: a comment after a reference, "is never emailed") likewise: `FORM_CASES_8` below. The ninth
# (69/80, 60/62 at first sight: a Wi-Fi `ssid / pass` pair, passport numbers, a payment APIv3 key, PINs dictated
# as words or Chinese numerals, single-use codes listed without their name, positional credentials in a PDO
# call; broken: code reading a password with getpass / from the environment, Terraform's random_password)
# likewise: `FORM_CASES_9` below. The tenth (71/80, 61/62 at first sight: account and card number columns of a
# payroll / bank-export CSV, a password manager screenshot's spaced-out OCR label, a door code and a password
# corrected right after they were told, an auth token given as the answer to a question naming it, numbers split
# over two lines by OCR, a CVV at a sentence's end; broken: Rails' `[FILTERED]`) likewise: `FORM_CASES_10` below.
# The eleventh (85/101, 69/70 at first sight: a router sticker's OCR'd label and grouped key, a CVV column of a
# card CSV, recovery codes under a 2FA page's name, a base64 `.dockerconfigjson`, a passport's MRZ line, a second
# key joined by 和, PowerShell's ConvertTo-SecureString, a labelled token wrapped over two lines, contraseña with a
# long qualifier; broken: a key shown as `sk-...Xq9f`) likewise: `FORM_CASES_11` below. The twelfth (76/85, 69/70 at
# first sight: aws configure's `Secret Access Key [None]:` prompt, a Linear key wrapped over two lines, a PIN after a
# relative clause, a PESEL in XML, admin / password after a host name, a password denied then corrected in Chinese, a
# Twilio token read out in groups of hex; broken: "pass db_password") likewise: `FORM_CASES_12` below. The thirteenth
# (84/91, 69/70 at first sight: a user / password pair with only ssh nearby, a router sticker's password on the line
# after its label, a lone "credential" label, the rest of a key sent in a second message, a lock-screen PIN, an OCR'd
# value spaced out, an old password starting with a dot; broken: "types the password themselves") likewise:
# `FORM_CASES_13` below.
HOLDOUT_PATHS = (
    DATA / "redaction_holdout.jsonl",
    DATA / "redaction_holdout2.jsonl",
    DATA / "redaction_holdout3.jsonl",
    DATA / "redaction_holdout4.jsonl",
    DATA / "redaction_holdout5.jsonl",
    DATA / "redaction_holdout6.jsonl",
    DATA / "redaction_holdout7.jsonl",
    DATA / "redaction_holdout8.jsonl",
    DATA / "redaction_holdout9.jsonl",
    DATA / "redaction_holdout10.jsonl",
    DATA / "redaction_holdout11.jsonl",
    DATA / "redaction_holdout12.jsonl",
    DATA / "redaction_holdout13.jsonl",
    # set 14: ordinary chat, folded in after its first-sight score (83/90, 80/80); its forms in FORM_CASES_14
    DATA / "redaction_holdout14.jsonl",
    # set 15: ordinary turns, passwords as people choose them, folded in after its first-sight score (92/97,
    # 79/80); its forms in FORM_CASES_15
    DATA / "redaction_holdout15.jsonl",
    # set 16: ordinary turns and notes, folded in after its first-sight score (100/112, 91/91); its forms in
    # FORM_CASES_16
    DATA / "redaction_holdout16.jsonl",
    # set 17: ordinary turns and notes, folded in after its first-sight score (108/113, 91/92); its forms in
    # FORM_CASES_17
    DATA / "redaction_holdout17.jsonl",
    # set 18: ordinary turns and notes, folded in after its first-sight score (107/113, 97/100); its forms in
    # FORM_CASES_18
    DATA / "redaction_holdout18.jsonl",
    # set 19: ordinary turns and notes, folded in after its first-sight score (103/117, 99/100); its forms in
    # FORM_CASES_19. Two of its rows (h19-072, h19-166: a one-time code the writer says they never asked for) are
    # labelled against set 3's h3-017 and stay missed: see REDACTION_HOLDOUT19.md
    DATA / "redaction_holdout19.jsonl",
    # set 20: ordinary turns and notes, folded in after its first-sight score (140/170, 103/104); its forms in
    # FORM_CASES_20
    DATA / "redaction_holdout20.jsonl",
    # set 21: mostly ordinary conversation, folded in after its first-sight score (86/122, 97/100); its forms in
    # FORM_CASES_21
    DATA / "redaction_holdout21.jsonl",
    # set 22: configs, logs, shell, CI output and mixed-language chat, folded in after its first-sight score (121/136,
    # 100/100); its forms in FORM_CASES_22
    DATA / "redaction_holdout22.jsonl",
    # set 23: Chinese office and ops life, phone-typed English, IDs of many countries, cards in words, folded in after
    # its first-sight score (103/141, 95/100); its forms in FORM_CASES_23
    DATA / "redaction_holdout23.jsonl",
    # set 24: configs, JSON, shell, CI output and chat in en / zh / mixed, values after asides, folded in after its
    # first-sight score (103/110, 96/100); its forms in FORM_CASES_24
    DATA / "redaction_holdout24.jsonl",
    # set 25: secrets in code of many languages, configs, logs, webhooks, 2FA seeds, cloud keys of several providers,
    # dictated and full-width forms, folded in after its first-sight score (110/118, 97/100); its forms in
    # FORM_CASES_25
    DATA / "redaction_holdout25.jsonl",
    # set 26: ordinary people talking to an assistant in en / zh / mixed, cards, IDs of many countries, PINs and codes
    # in words, passwords given after their recipe, folded in after its first-sight score (97/115, 99/100); its forms
    # in FORM_CASES_26
    DATA / "redaction_holdout26.jsonl",
)


def _holdout() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in HOLDOUT_PATHS
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


# Rows whose label contradicts another set's on the same form: the redactor follows one judgement, and the row is
# asserted to get that judgement, its data file left as its author wrote it. A one-time code the writer says they
# never asked for ("我没在登录", "I didn't request this") is a live second factor of their account: it is redacted
# like any other (set 19's h19-072 and h19-166 label it a secret); set 3's h3-017 labelled it a look-alike, as
# evidence of someone else's attempt, and is asserted redacted here (its code, 190275). Privacy first: redacting it
# loses nothing a memory needs ("an unrequested login code came in" stays).
LABELS_IN_CONFLICT = {"h3-017": ("190275",)}


@pytest.mark.parametrize("case", _holdout(), ids=lambda c: c["id"])
def test_every_case_of_the_former_holdout_set_passes(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    if case["id"] in LABELS_IN_CONFLICT:
        for secret in LABELS_IN_CONFLICT[case["id"]]:
            assert secret not in out, (case["id"], out)
        return
    if case["secrets"]:
        for secret in case["secrets"]:
            assert secret not in out, (case["id"], out)
    else:
        assert out == case["text"], case["id"]
    assert redact(out) == out, (case["id"], out)


# ---------------------------------------------------------------- forms added for the fourth hold-out set

# Each form the fourth set showed missing, with made-up values (none from the set): secrets that must go and,
# for each, look-alikes that must come back unchanged. (form, text, secrets); no secrets = a look-alike.
_MC = "542523343010990"
_MC += _luhn_digit(_MC)
_VISA = "453201511283036"
_VISA += _luhn_digit(_VISA)
FORM_CASES: list[tuple[str, str, tuple[str, ...]]] = [
    # a key wrapped onto the next line(s), each piece alone on its line
    (
        "wrapped-key",
        "pasted from tmux, it broke in two:\nsk-proj-Qe7RmZ2vLw9XcT4bNp8KdJ3sHf6GaY1uEo\n"
        "Vb5Mn0Pq2Rs4Tu6Wx8Yz1Ac3De5Fg7Hi9Jk\nis that one key?",
        ("sk-proj-Qe7RmZ2vLw9XcT4bNp8KdJ3sHf6GaY1uEo", "Vb5Mn0Pq2Rs4Tu6Wx8Yz1Ac3De5Fg7Hi9Jk"),
    ),
    (
        "wrapped-key",
        "token wrapped in the email:\n    github_pat_11BQXZ7KA0dLm3Np5Qr7St_9Uv1Wx3Yz5Ab7Cd9Ef\n"
        "    1Gh3Ij5Kl7Mn9Op1Qr3St5Uv7Wx9Yz1Ab3Cd5Ef7Gh9Ij1Kl3Mn5",
        (
            "github_pat_11BQXZ7KA0dLm3Np5Qr7St_9Uv1Wx3Yz5Ab7Cd9Ef",
            "1Gh3Ij5Kl7Mn9Op1Qr3St5Uv7Wx9Yz1Ab3Cd5Ef7Gh9Ij1Kl3Mn5",
        ),
    ),
    ("wrapped-key", "we migrated to sk-learn-intelex\nv2024.1.0\nREADME_FIRST", ()),
    ("wrapped-key", "ran the job\nERR_CONNECTION_REFUSED\n3f9a2c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c", ()),
    (
        "wrapped-key",
        "new key sk-proj-Hn4Tq8Wz1Lc6Vb3Mx9Rp2Ks7Jd5Fg0Ya\n6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b\nd41d8cd98f00b204e9800998ecf8427e",
        ("sk-proj-Hn4Tq8Wz1Lc6Vb3Mx9Rp2Ks7Jd5Fg0Ya",),
    ),
    # an XML element named after a secret (Maven settings.xml and the like)
    (
        "xml-secret-element",
        "<servers>\n  <server>\n    <id>artifactory</id>\n    <username>deployer</username>\n"
        "    <password>Tr4in-Station#88</password>\n  </server>\n</servers>",
        ("Tr4in-Station#88",),
    ),
    (
        "xml-secret-element",
        "<connection><user>etl</user><passphrase>q9 lantern 41 drift</passphrase></connection>",
        ("q9 lantern 41 drift",),
    ),
    (
        "xml-secret-element",
        "<ApiToken>Zt81kQm4Rw0pLx7Vb3Nc</ApiToken> in web.config",
        ("Zt81kQm4Rw0pLx7Vb3Nc",),
    ),
    ("xml-secret-element", "<server><password>${env.ARTIFACTORY_PASSWORD}</password></server>", ()),
    (
        "xml-secret-element",
        "<passwordPolicy>strict</passwordPolicy> <token>${NPM_TOKEN}</token> <apiKey>your-api-key</apiKey>",
        (),
    ),
    ("xml-secret-element", "<username>deployer</username><publicKey>ssh-ed25519</publicKey>", ()),
    # a card's security code: after its label, or after a card number and its expiry
    (
        "card-cvv",
        f"charge my mastercard {_MC[:4]} {_MC[4:8]} {_MC[8:12]} {_MC[12:]} exp 04/28 cvc 917",
        (_MC[:4] + " " + _MC[4:8], "917"),
    ),
    ("card-cvv", f"card {_VISA} 08/29 4417 pls", (_VISA, "4417")),
    ("card-cvv", "CVV2: 5521 and the zip is 02139", ("5521",)),
    ("card-cvv", "卡背面安全码 846，别告诉别人", ("846",)),
    ("card-cvv", "the CVV is 3 digits on the back, amex CID 4", ()),
    ("card-cvv", "cvv: *** (masked), CVC 2 verification failed", ()),
    ("card-cvv", "order 4417 shipped 08/29, tracking 1Z999", ()),
    # a Wi-Fi key: "key" after a Wi-Fi word nearby
    ("wifi-key", "guest wifi: Blue-Fox-Lounge, key: M4ple!Syrup-22", ("M4ple!Syrup-22",)),
    ("wifi-key", "router sticker says network key = 7fQpLx92Zr, ssid TP-Link_93A1", ("7fQpLx92Zr",)),
    ("wifi-key", "the wifi keeps dropping, the key is to move the router", ()),
    ("wifi-key", "wifi security key is WPA2-PSK and the band is 5GHz", ()),
    ("wifi-key", "the key is Zr81-mQ4x-Lp2w for the door, nothing to do with it", ()),
    # a wallet's seed phrase after its label
    (
        "seed-phrase",
        "my ledger recovery phrase: orbit velvet cactus number plunge dragon silk mimic harbor tenant ozone fabric",
        ("orbit velvet cactus number plunge dragon silk mimic harbor tenant ozone fabric",),
    ),
    (
        "seed-phrase",
        "seed words\n1. lava\n2. pioneer\n3. bubble\n4. rhythm\n5. exotic\n6. gospel\n7. hurdle\n8. walnut\n"
        "9. spike\n10. unfold\n11. minor\n12. quarter",
        ("lava", "pioneer", "rhythm", "walnut", "quarter"),
    ),
    ("seed-phrase", "助记词：怒 宣 雨 跟 碗 稀 聚 孩 瑞 钢 伙 汉", ("怒 宣 雨 跟 碗 稀 聚 孩 瑞 钢 伙 汉",)),
    (
        "seed-phrase",
        "never type your seed phrase into any website, it gives anyone full control of your wallet",
        (),
    ),
    ("seed-phrase", "random seed: 42, and seed the database with twelve demo users before the tests run", ()),
    (
        "seed-phrase",
        "Seed Phrase Backup Tips For New Users Of Hardware Wallets Today Please Read Carefully Now",
        (),
    ),
    # cookies and API-key headers in a copied curl command or a response
    (
        "cookie-header",
        "curl 'https://shop.example.org/cart' -H 'Cookie: csrftoken=Qw8eRt6yUi4oP2aS; "
        "connect.sid=s%3AkF9xLm2.Np4Qr6St8Uv0; lang=en' -H 'X-Api-Key: pq7rs2tu9vw4xy6za1bc3de5fg8hi0jk'",
        ("Qw8eRt6yUi4oP2aS", "s%3AkF9xLm2.Np4Qr6St8Uv0", "pq7rs2tu9vw4xy6za1bc3de5fg8hi0jk"),
    ),
    (
        "cookie-header",
        "curl -b 'PHPSESSID=9k2j4h6g8f0d1s3a5q7w' https://intranet.local/report",
        ("9k2j4h6g8f0d1s3a5q7w",),
    ),
    (
        "cookie-header",
        "HTTP/1.1 302\nSet-Cookie: session_token=8hJ2kL4mN6pQ8rS0tU2v; Path=/; HttpOnly",
        ("8hJ2kL4mN6pQ8rS0tU2v",),
    ),
    ("cookie-header", "-H 'cookie: _ga=GA1.2.9876543.1712345678; lang=de; sidebar=collapsed'", ()),
    ("cookie-header", "Set-Cookie: theme=dark; Path=/ and a cookie: chocolate chip", ()),
    ("cookie-header", "git checkout -b fix-login && make AUTH_MODE=enabled_v2", ()),
    # an access key id with its secret right after it, and a secret after a Chinese label
    (
        "key-id-and-secret",
        'client = AcsClient("LTAI5tRk9pQ2wXz7mN3vB8cD", "qW3eR5tY7uI9oP1aS3dF5gH7jK9lZx", "cn-hangzhou")',
        ("LTAI5tRk9pQ2wXz7mN3vB8cD", "qW3eR5tY7uI9oP1aS3dF5gH7jK9lZx"),
    ),
    (
        "key-id-and-secret",
        "腾讯云 SecretKey：Zq8Wx6Ec4Rv2Tb0Yn9Um7Ik5Ol3Pa1Sd，SecretId 在控制台",
        ("Zq8Wx6Ec4Rv2Tb0Yn9Um7Ik5Ol3Pa1Sd",),
    ),
    (
        "key-id-and-secret",
        'Credential(secret_id, secret_key) 报错 "region ap-guangzhou"，SecretId 和 SecretKey 填反了吗',
        (),
    ),
    (
        "key-id-and-secret",
        "AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY from the AWS docs",
        (),
    ),
    # Mailgun `key-` keys and Telegram bot tokens
    (
        "vendor-prefix",
        "MAILGUN_KEY key-9f2c4a6e8b0d1f3a5c7e9b2d4f6a8c0e in the old .env",
        ("key-9f2c4a6e8b0d1f3a5c7e9b2d4f6a8c0e",),
    ),
    (
        "vendor-prefix",
        "alerts bot token 6123987450:AAHq9Zx-Lm3Pt7Rv1Sw5Ty8Uz2Vb4Nc6Dk0",
        ("6123987450:AAHq9Zx-Lm3Pt7Rv1Sw5Ty8Uz2Vb4Nc6Dk0",),
    ),
    (
        "vendor-prefix",
        "pubkey-5ogiflzbnjrljiky49qxsiozqef5jxp7 is the public one; a key-value store; at 17:00:AA",
        (),
    ),
    # a signature in a signed URL (Azure SAS, S3 presigned)
    (
        "url-signature",
        "https://acct.blob.core.windows.net/c/f.zip?sv=2023-01-03&se=2027-01-01&sr=b&sp=r"
        "&sig=Xb9%2Fk2LmP0qR7sT4uV1wY6zA3cE8gI5jK2nO%3D",
        ("Xb9%2Fk2LmP0qR7sT4uV1wY6zA3cE8gI5jK2nO%3D",),
    ),
    (
        "url-signature",
        "https://bucket.s3.amazonaws.com/a.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Signature=4f1c9e2a7b3d5f6e8a0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f",
        ("4f1c9e2a7b3d5f6e8a0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f",),
    ),
    ("url-signature", "the sig= parameter is the HMAC; ?sv=2022-11-02&sr=b&sp=r&sig=valid", ()),
    # a password (口令, password) whose change is told first
    ("password-changed", "VPN 的口令又改了，现在是 Harbor#7716pine", ("Harbor#7716pine",)),
    ("password-changed", "the wifi password got rotated, the new one is Lagoon-5521", ("Lagoon-5521",)),
    ("password-changed", "DB password was updated. New one: Qm7#xx91z", ("Qm7#xx91z",)),
    ("password-changed", "口令改了，新的还没发下来；密码改了吗？", ()),
    ("password-changed", "password was changed, the new one is in 1Password", ()),
    # a JSON schema's definition of a secret field is no secret
    (
        "schema-field",
        '{"client_secret": {"type": "string", "writeOnly": true}, "password": {"minLength": 12}}',
        (),
    ),
    ("schema-field", '{"password": "{Xk9-2bz}", "note": "braces are part of it"}', ("Xk9-2bz",)),
    # template values: in a named example file, or both halves of a URL naming their slot
    (
        "example-placeholders",
        "cp .env.sample .env then set SMTP_PASSWORD=change-me and DB_URL=mysql://username:password@127.0.0.1/app",
        (),
    ),
    ("example-placeholders", "prod still has ADMIN_PASSWORD=changeme, rotate it", ("changeme",)),
    ("example-placeholders", "DATABASE_URL=mysql://root:password@prod-db:3306/shop", ("password@",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES)]
)
def test_a_form_added_for_the_fourth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    out = redact(text)

    if secrets:
        assert MARK in out, (form, out)
        for secret in secrets:
            assert secret not in out, (form, secret, out)
    else:
        assert out == text, (form, out)
    assert redact(out) == out, (form, out)


def test_a_uuid_or_a_digest_on_the_line_after_a_key_is_not_taken_for_its_wrapped_rest() -> None:
    uuid, digest = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "d41d8cd98f00b204e9800998ecf8427e"

    out = redact(f"new key sk-proj-Hn4Tq8Wz1Lc6Vb3Mx9Rp2Ks7Jd5Fg0Ya\n{uuid}\n{digest}")

    assert out == f"new key [REDACTED:api_key]\n{uuid}\n{digest}"


# ---------------------------------------------------------------- forms added for the fifth hold-out set

# Each form the fifth set (tests/data/REDACTION_HOLDOUT5.md) showed missing or broken, with made-up values
# (none from the set; checksummed ones computed for these cases, with a failing twin as the look-alike).
_AMEX5 = "3780 188276 34417"  # Luhn-valid, 4-6-5
_UNIONPAY5 = "6225881903915758"  # Luhn-valid
_BITLOCKER5 = "323576-637483-417945-614559-163207-552937-195096-543477"  # every group a multiple of 11
_DOCKER_AUTH5 = "Y2ktcHVsbGVyOlRxOHZMbTJXeDlSejRLZDc="  # base64 of ci-puller:Tq8vLm2Wx9Rz4Kd7
_AZURE_KEY5 = "yY/coEptw2HLkiaanUKtuq8MUtPQ9HtTW2pskWXGlBVuVzer0KZAAZJvs4tXDay6xg0NtGkE+KLicIKOrG/FTQ=="
_DISCORD5 = (
    "MTcwNTE0NjAyMjA1NTU0NDMwNQ.sZj88Z.2qcKMji2tw6jh6Tj7AyZ7nXwPOIpUJ5fdzqLR2"  # id 170514602205554430 5
)
_AGE5 = "AGE-SECRET-KEY-1UTV65YC6EY8JSFDY6Z7U2PXW756TM3NEDQ3KZ3PJEE6YEK4MWUQ2Z4XVT6"
_SEC5 = "SECebb6e55ab836b0445c5b45832c46c689bc3a349204e9f08215f8e14eb6ab5659"
_SEED5 = "ramp crew sugar velvet ozone glide orbit quote wild hover plank cradle"
FORM_CASES_5: list[tuple[str, str, tuple[str, ...]]] = [
    # a password label in another language; the pinyin abbreviation mm
    (
        "foreign-password-label",
        "Mi contraseña del banco es Tejo#4471, no se la digas a nadie",
        ("Tejo#4471",),
    ),
    ("foreign-password-label", "Das Passwort für den Router lautet Kiefer-93x", ("Kiefer-93x",)),
    ("foreign-password-label", "WLAN-Schlüssel: ruhig7Bahnhof (Gastnetz)", ("ruhig7Bahnhof",)),
    ("foreign-password-label", "le mot de passe est Sable88!vert pour le NAS", ("Sable88!vert",)),
    ("foreign-password-label", "lösenordet är Grus2209 till wifi", ("Grus2209",)),
    ("foreign-password-label", "het wachtwoord is Dijk_5530, niet delen", ("Dijk_5530",)),
    ("foreign-password-label", "a senha do roteador é Caju71#mar", ("Caju71#mar",)),
    ("foreign-password-label", "пароль: Zima-3381", ("Zima-3381",)),
    ("foreign-password-label", "社内 wiki のパスワードは Koi7-Nami22 です", ("Koi7-Nami22",)),
    ("foreign-password-label", "공유기 비밀번호는 Haneul93! 입니다", ("Haneul93!",)),
    ("foreign-password-label", "la contraseña: gatito", ("gatito",)),
    # a qualifier word never starts at a placeholder (was: "[REDACTED:[REDACTED:password]]")
    ("foreign-password-label", "el wifi del hotel, la contraseña es hotel2024", ("hotel2024",)),
    (
        "foreign-password-label",
        "Passwort vergessen? Klicken Sie hier. Mot de passe oublié ? Réinitialisez-le.",
        (),
    ),
    ("foreign-password-label", "¿Olvidaste tu contraseña? Haz clic en el enlace para cambiarla", ()),
    ("foreign-password-label", "Das Passwort muss mindestens 12 Zeichen lang sein", ()),
    ("foreign-password-label", "la clave del éxito es la constancia", ()),
    ("foreign-password-label", "パスワードを忘れた場合は管理者に連絡してください", ()),
    ("pinyin-mm", "路由器 mm 是 Tiger_5521，记一下", ("Tiger_5521",)),
    ("pinyin-mm", "螺丝长度 25 mm，间距 3 mm 是 12 的一半", ()),
    # a numeric code told as a secret
    ("pin-code", "小区门禁码 7316，进门右转", ("7316",)),
    ("pin-code", "the gate code is 40719, the door code 2288", ("40719", "2288")),
    ("pin-code", "my ATM pin is 6603, please forget it", ("6603",)),
    ("pin-code", "在柜员机取钱时按的是 240613", ("240613",)),
    ("pin-code", "pin 13 on the Arduino drives the relay; the door code is on the fridge", ()),
    ("pin-code", "支付密码是 6 位数字，门禁码也是4位", ()),
    ("pin-code", "entry code 404 means not found; the door code changed in 2023", ()),
    # a password told as changed: old and new
    ("password-old-new", "把 NAS 的密码从 Qx7-lake 改成了 Rv9=hill，旧的别再用", ("Qx7-lake", "Rv9=hill")),
    (
        "password-old-new",
        "I changed my email password from Pelican42! to Osprey#77 yesterday",
        ("Pelican42!", "Osprey#77"),
    ),
    ("password-old-new", "交易密码换了，之前是 902714，现在是 385106", ("902714", "385106")),
    ("password-old-new", "把服务器 admin 从 KtLmWvQz 改成了 Bn4$Lp2x", ("KtLmWvQz", "Bn4$Lp2x")),
    ("password-old-new", "password policy changed from 90 to 180 days, and the minimum from 8 to 12", ()),
    ("password-old-new", "把 root 的 shell 从 /bin/sh 改成了 /bin/bash", ()),
    ("password-old-new", "admin 页面从 v2.3.1 改成了 v2.4.0", ()),
    ("password-old-new", "changed the root password to comply with the new policy from IT-Sec", ()),
    # credentials in prose
    (
        "prose-credentials",
        "on the login page enter guest in the first field and Pq7!rain in the second",
        ("Pq7!rain",),
    ),
    ("prose-credentials", "the code word we agreed on is harbor-violet-912", ("harbor-violet-912",)),
    (
        "prose-credentials",
        "Use the passphrase we settled on last week: copper-lantern-41, then rotate",
        ("copper-lantern-41",),
    ),
    ("prose-credentials", "type your name in the first box and your email in the second", ()),
    ("prose-credentials", "enter 2 in the first field and 3 in the second to get 5", ()),
    ("prose-credentials", "the word we agreed on Friday, honestly, was 'maybe'", ()),
    # network device configs
    ("device-config", "line vty 0 4\n password 7 0822455D0A16\n login", ("0822455D0A16",)),
    ("device-config", "enable secret 0 Rt7!core-sw", ("Rt7!core-sw",)),
    ("device-config", "snmp-server community Wq9hub2 RW 5", ("Wq9hub2",)),
    ("device-config", "the password 0 days before expiry warning is off", ()),
    ("device-config", "password 5 attempts max, then a lockout", ()),
    ("device-config", "snmp-server community strings should be rotated", ()),
    ("device-config", "line vty 0 4\n password 0 lighthouse\n login", ("lighthouse",)),
    ("device-config", "notice:\n  password 7 days before it expires\nuser bob secret 5 apples", ()),
    # cloud keys given by a tool's flags
    (
        "cloud-cli-keys",
        "ossutil config -e oss-cn-hangzhou.aliyuncs.com -i LTAI5tQp8wVz3mXk7Rn2Yb4s -k Zr4Tq8Vx2Wm6Pn1Lk9Jh3Gf5Dc7Bs0",
        ("LTAI5tQp8wVz3mXk7Rn2Yb4s", "Zr4Tq8Vx2Wm6Pn1Lk9Jh3Gf5Dc7Bs0"),
    ),
    (
        "cloud-cli-keys",
        "obsutil config -i=7HWP4VA6C0450TV668CX -k=MPKr4nRLzjo1N4sS1uOVXeHmONRc3rGRuBvytXAX -e=obs.cn-east-3.myhuaweicloud.com",
        ("7HWP4VA6C0450TV668CX", "MPKr4nRLzjo1N4sS1uOVXeHmONRc3rGRuBvytXAX"),
    ),
    (
        "cloud-cli-keys",
        "mc-admin login --secret-key Vt9Kq2Lm7Xw4Rz8Pn3Hd --access-key ops",
        ("Vt9Kq2Lm7Xw4Rz8Pn3Hd",),
    ),
    ("cloud-cli-keys", "obsutil ls obs://bucket -limit=10 -s -k=pattern", ()),
    ("cloud-cli-keys", "aws s3 ls --secret-key $AWS_SECRET --profile dev", ()),
    # Docker's config.json
    ("docker-auth", '{"auths": {"ghcr.io": {"auth": "' + _DOCKER_AUTH5 + '"}}}', (_DOCKER_AUTH5,)),
    ("docker-auth", '{"auth": "eyJhIjoxfQ==", "mode": "token"}', ()),
    # a card's security code after the card, under any of its names
    ("card-code-near-card", f"Amex {_AMEX5} exp 11/28, CID 6093 on the front", (_AMEX5, "6093")),
    ("card-code-near-card", f"卡号 {_UNIONPAY5}，有效期 03/29，卡背面后三位 518", (_UNIONPAY5, "518")),
    ("card-code-near-card", "CID 6093 is the customer id in the CRM; 后三位 518 是手机尾号", ()),
    # vendor tokens by published format
    ("vendor-token", f"keys.txt:\n# public key: age1qyqszqgpqyqszqgpqyqszqgp\n{_AGE5}", (_AGE5,)),
    ("vendor-token", f"加签密钥 {_SEC5}，webhook 另发", (_SEC5,)),
    ("vendor-token", f'discord bot: bot.run("{_DISCORD5}")', (_DISCORD5,)),
    (
        "vendor-token",
        "SEC filing 10-K, section 7; age1 recipients are public; user id 1705146022055544305",
        (),
    ),
    ("vendor-token", "MWEyYjNjNGQ1ZTZmN2c4aDk.abcdef.Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0", ()),
    # keys after a Chinese label or Azure's key1 / key2
    ("key-labels", f"存储账户 key2：{_AZURE_KEY5}", (_AZURE_KEY5,)),
    ("key-labels", "访问密钥值：Hq3Lz8Vn2Wr6Kt9Pm4Xs7Jd", ("Hq3Lz8Vn2Wr6Kt9Pm4Xs7Jd",)),
    (
        "key-labels",
        "开发者密码（AppSecret）9f1c0e7a3b5d4c2e8f6a1b0c9d7e3f25",
        ("9f1c0e7a3b5d4c2e8f6a1b0c9d7e3f25",),
    ),
    ("key-labels", "key1 and key2 rotate every 90 days; 密钥值为空时报错", ()),
    ("key-labels", "密码（至少 8 位）请自行设置", ()),
    # national ids with their checks (each look-alike fails its check)
    ("national-id", "my SIN is 429 402 837 for the T4", ("429 402 837",)),
    ("national-id", "SIN 429 402 838 (typo'd on the form), and sin(x) of 0.5", ()),
    ("national-id", "NRIC T8304780H; 新加坡 FIN F0874038X", ("T8304780H", "F0874038X")),
    ("national-id", "part no. T8304780A and S1234567B", ()),
    ("national-id", "personnummer: 871104-5222", ("871104-5222",)),
    ("national-id", "personnummer saknas, order 871104-5223", ()),
    ("national-id", "주민등록번호 920415-1181544", ("920415-1181544",)),
    ("national-id", "ticket 920415-1181545 and 991332-1234567", ()),
    ("national-id", "mon NIR : 2 91 07 75 113 576 38", ("2 91 07 75 113 576 38",)),
    ("national-id", "référence 2 91 07 75 113 576 39", ()),
    ("national-id", "PAN: BXRPK7731M for the KYC", ("BXRPK7731M",)),
    ("national-id", "PAN ABCDE1234F is the sample on the form; pan the camera left", ()),
    ("bitlocker-key", f"BitLocker recovery key: {_BITLOCKER5}", (_BITLOCKER5,)),
    ("bitlocker-key", "serial 323576-637483-417945-614559-163207-552937-195096-543478", ()),
    # a seed phrase on one line after a sentence naming BIP-39
    ("seed-one-line", f"Is this a valid BIP39 phrase? {_SEED5}", (_SEED5,)),
    (
        "seed-one-line",
        "BIP39 explained. A seed phrase is a list of words that stores what a wallet needs",
        (),
    ),
    # a pair whose user a password label already took: the rerun must not read "[REDACTED" as the user
    ("pair-rerun", "username/password: carol / Tidepool#42", ("Tidepool#42",)),
    ("pair-rerun", "后台 账号/密码：qa_zz81 / Hq7!lm2Pz，登录后复现", ("Hq7!lm2Pz",)),
    # kept: code references, slots with spaces, Chinese placeholders, publishable tokens
    ("kept-placeholders", 'resource "x" "y" {\n  password = local.admin_pw\n  token = var.api_token\n}', ()),
    ("kept-placeholders", "SMTP_PASSWORD=<get it from the vault>\nAPI_TOKEN=<see 1Password>", ()),
    ("kept-placeholders", "DB_PASSWORD=请向运维索取\nREDIS_PASSWORD=（留空即可）", ()),
    ("kept-placeholders", "map.accessToken = 'pk.eyJ1IjoibWFwcyIsImEiOiJjbHg3In0.Zm9vYmFyYmF6cXV4'", ()),
    ("kept-placeholders", "the public token: pk.eyJ1IjoibWFwcyIsImEiOiJjbHg3In0.Zm9vYmFyYmF6cXV4", ()),
    (
        "kept-placeholders",
        "server side only: MAPBOX_TOKEN = 'sk.eyJ1IjoibWFwcyIsImEiOiJjbHg3In0.Zm9vYmFyYmF6cXV4'",
        ("eyJ1IjoibWFwcyIsImEiOiJjbHg3In0.Zm9vYmFyYmF6cXV4",),
    ),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_5, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_5)]
)
def test_a_form_added_for_the_fifth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# ---------------------------------------------------------------- forms added for the sixth hold-out set

_EC_BODY = (
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnZFqoLRUfJAqLnh5\n"
    "nH+WGcYIhFkugMxVvfEHu6EJUHWhRANCAASHV02ocwc/4kmrPRbEZmI6YRgcJr2E\n"
    "FPfu6UtgpQbUX3+6hgx6eMpS8tVyD5Vb7YX3DA7bLGfeJAY72PLiigIj"
)
_EC_PUBLIC = (
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEh1dNqHMHP+JJqz0WxGZiOmEYHCa9\n"
    "hBT37ulLYKUG1F9/uoYMenjKUvLVcg+VW+2F9wwO2yxn3iQGO9jy4ooCIw=="
)
_PEM_B64 = (
    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JR0hBZ0VBTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSEJHMHdhd0lCQVFRZ25a"
    "RnFvTFJVZkpBcUxuaDUKbkgrV0djWUloRmt1Z014VnZmRUh1NkVKVUhXaFJBTkNBQVNIVjAyb2N3Yy80a21yUFJiRVptSTZZUmdjSnIy"
    "RQpGUGZ1NlV0Z3BRYlVYMys2aGd4NmVNcFM4dFZ5RDVWYjdZWDNEQTdiTEdmZUpBWTcyUExpaWdJagotLS0tLUVORCBQUklWQVRFIEtF"
    "WS0tLS0tCg=="
)
FORM_CASES_6: list[tuple[str, str, tuple[str, ...]]] = [
    # a secret-bearing column of a CSV / Markdown table
    ("table", "| app | login | password |\n|---|---|---|\n| wiki | ops | Kq7#vLp2!x |\nok?", ("Kq7#vLp2!x",)),
    ("table", "主机,账号,口令\napp02,deploy,Zr8&mT4q%w\n", ("Zr8&mT4q%w",)),
    ("table", "| step | password policy |\n|---|---|\n| 1 | 12 chars |", ()),
    ("table", "| 字段 | 说明 |\n|---|---|\n| 密码 | 必填 |", ()),
    ("table", "| model | tokens |\n|---|---|\n| glm-4 | 18342 |", ()),
    ("table", "| suite | pass | fail |\n|---|---|---|\n| unit | 412 | 3 |", ()),
    ("table", "env,api_key\nprod,Zq81vKx3Lm0Tb7Ws5Rn2\n", ("Zq81vKx3Lm0Tb7Ws5Rn2",)),
    ("table", "Hi, the list:\nhost,user,password\nweb,root,Vb3!kq9Zr\n", ("Vb3!kq9Zr",)),
    ("table", "Hi, the list:\nhost,user,password\nweb,root,\n", ()),
    ("table", "name,country,id_no\nLim,SG,S7345126D\n", ("S7345126D",)),
    ("table", "name,country,id_no\nLim,SG,S7345126A\n", ()),
    ("table", "姓名,身份证号,手机\n李雷,440305198706122533,13800000000\n", ("440305198706122533",)),
    ("table", "姓名,身份证号,手机\n李雷,440305198706122534,13800000000\n", ()),
    # national ids with checks
    ("my-number", "マイナンバーは 5217 0384 9610 です", ("5217 0384 9610",)),
    ("my-number", "マイナンバーの欄に 5217 0384 9611 と書いた（間違い）", ()),
    ("my-number", "order 5217 0384 9610 shipped", ()),
    # labels in other scripts and key-id labels
    (
        "label",
        "Tencent の SecretKey は Hq3vT8wLm2Xz9QpR4sNc7YbK1dFe6GjA です",
        ("Hq3vT8wLm2Xz9QpR4sNc7YbK1dFe6GjA",),
    ),
    ("label", "SecretKey は環境変数から読みます", ()),
    ("label", "访问密钥ID：WQ8ZK3N5TXR7VB2M4LPA，区域 cn-east-3", ("WQ8ZK3N5TXR7VB2M4LPA",)),
    (
        "label",
        '{"private_key_id": "7c1e9a0d3b5f42e8a6c0d1f2b3e4a5c6d7e8f901"}',
        ("7c1e9a0d3b5f42e8a6c0d1f2b3e4a5c6d7e8f901",),
    ),
    ("label", '{"private_key_id": "<your key id>"}', ()),
    # private keys without PEM lines, or in base64
    (
        "der-key",
        "应用私钥：\n" + _EC_BODY.replace("\\n", "\n"),
        ("MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnZFqoLRUfJAqLnh5",),
    ),
    ("der-key", "应用公钥：\n" + _EC_PUBLIC.replace("\\n", "\n"), ()),
    ("pem-b64", "data:\n  tls.key: " + _PEM_B64 + "\n", (_PEM_B64,)),
    ("pem-b64", "tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrakNDQVRlZ0F3SUJBZ0lV", ()),
    ("pem-talk", "the file starts with -----BEGIN RSA PRIVATE KEY----- instead of PKCS#8, why?", ()),
    # files and configs
    ("pgpass", "my ~/.pgpass:\ndb1.internal:6432:billing:app:Wm4!qT9z#R\n", ("Wm4!qT9z#R",)),
    ("pgpass", "my ~/.pgpass:\ndb1.internal:6432:billing:app:*\n", ()),
    ("appsettings", '<add key="ApiSecret" value="p8Lq2Zx7Vn4Tr1Ks" />', ("p8Lq2Zx7Vn4Tr1Ks",)),
    ("appsettings", '<add key="SmtpHost" value="mail.contoso.com" />', ()),
    ("dsn", "DATABASE_URL=mysql://svc:Ab?-c+9Xq_71@db:3306/app?ssl=true", ("Ab?-c+9Xq_71",)),
    ("dsn", "see https://example.com/login?next=/home and mail me@x.org", ()),
    (
        "zhipu",
        "智谱的 API key 是 0f1e2d3c4b5a69788796a5b4c3d2e1f0.Rt7QmZ2kLp9XwN4v",
        ("0f1e2d3c4b5a69788796a5b4c3d2e1f0.Rt7QmZ2kLp9XwN4v",),
    ),
    ("zhipu", "key 0f1e2d3c4b5a69788796a5b4c3d2e1f0.tar.gz", ()),
    ("cvc-json", '{"pan": "4539 1488 0343 6467", "cvc": "417", "exp": "09/29"}', ("417",)),
    (
        "cookie",
        "curl 'https://x.example/api' \\\n  -H 'authorization: Bearer abc' \\\n  -b 'PHPSESSID=9f8e7d6c5b4a39281706f5e4'",
        ("9f8e7d6c5b4a39281706f5e4",),
    ),
    ("wpa", "guest network, WPA3 key 7hn2qv8kzt4w, valid today", ("7hn2qv8kzt4w",)),
    ("wpa", "WPA2 key management uses a 4-way handshake", ()),
    (
        "changed-first",
        "They reset the admin account last night. It's now Qv7!mZ2#pL (same user).",
        ("Qv7!mZ2#pL",),
    ),
    ("changed-first", "They reset my account last night. It's now working again.", ()),
    # templating and stand-ins
    ("template", "password: {{ .Values.redis.password | b64enc }}", ()),
    ("template", "dsn = mysql://%(user)s:%(password)s@%(host)s/app", ()),
    ("template", "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256", ()),
    ("template", "  ~ secret_string = (sensitive value)", ()),
    ("template", 'body {"password": "..."} is what the client sends', ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_6, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_6)]
)
def test_a_form_added_for_the_sixth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# ---------------------------------------------------------------- forms added for the seventh hold-out set

FORM_CASES_7: list[tuple[str, str, tuple[str, ...]]] = [
    # Chinese labels naming the secret half of any vendor's key, and a Chinese word for the value's form
    (
        "zh-key-label",
        "火山引擎控制台复制的：访问密钥密文：Nq7rT2xWm9LkP4sVb8Zc3Hd6Jf1Gy5",
        ("Nq7rT2xWm9LkP4sVb8Zc3Hd6Jf1Gy5",),
    ),
    (
        "zh-key-label",
        "阿里云 RAM 用户的 AccessKey Secret 明文：Hk2mW8qZ7pXv3Lr9Tb5Nc1Ys4Gd6F",
        ("Hk2mW8qZ7pXv3Lr9Tb5Nc1Ys4Gd6F",),
    ),
    (
        "zh-key-label",
        "七牛的 SK 原文 = mP3xQ9wL2kZ7rT5vB8nC4jH6gF1dS0aYe",
        ("mP3xQ9wL2kZ7rT5vB8nC4jH6gF1dS0aYe",),
    ),
    ("zh-key-label", "接口密匙：c4Xq8Lm2Rw7Zt9Vb3Np5Hk", ("c4Xq8Lm2Rw7Zt9Vb3Np5Hk",)),
    ("zh-key-label", "密钥密文存在 KMS 里，程序启动时解密", ()),
    ("zh-key-label", "访问密钥内容请到控制台查看", ()),
    # bank accounts labelled as where pay goes
    ("bank-account", "Payroll: acct 30418822917, effective next cycle", ("30418822917",)),
    ("bank-account", "工资卡账号 6217 0012 3456 7890 123 开户行建设银行", ("6217 0012 3456 7890 123",)),
    ("bank-account", "savings target for the acct: 250000 by June", ()),
    ("bank-account", "customer acct 88231 asked about the order status", ()),
    # a query parameter named after a secret, in any URL
    (
        "url-secret-param",
        "GET https://oapi.example.cn/gettoken?appkey=dingw7q2&appsecret=Rk8vN2xQ9mT4wL7pZ3cB6hJ1yG5dF0sA",
        ("Rk8vN2xQ9mT4wL7pZ3cB6hJ1yG5dF0sA",),
    ),
    (
        "url-secret-param",
        "webhook: https://hooks.example.io/in?client_secret=q7W2e9R4t1Y6u3I8o5P0aZxC&ts=1",
        ("q7W2e9R4t1Y6u3I8o5P0aZxC",),
    ),
    (
        "url-secret-param",
        "the weather call 401s: /data/3.0/onecall?lat=51.5&lon=-0.1&appid=7c2e91ab04d36f58c1e09b7a2d4f6e83",
        ("7c2e91ab04d36f58c1e09b7a2d4f6e83",),
    ),
    (
        "url-secret-param",
        "https://api.example.com/v2/items?access_token=Zr5Kq1Wm8Xt3Lp7Vn2Bc9Hd4",
        ("Zr5Kq1Wm8Xt3Lp7Vn2Bc9Hd4",),
    ),
    ("url-secret-param", "next page: /v1/list?limit=50&pageToken=CgwI8ZvM9gUQkK3xMhIGb3JkZXJz", ()),
    ("url-secret-param", "小程序 appid=wx9a8b7c6d5e4f3a2b 已审核", ()),
    ("url-secret-param", "signed upload: ?q-key-time=1764000000;1764003600&q-header-list=host", ()),
    ("url-secret-param", "https://x.example/cb?token_type=bearer&expires_in=3600", ()),
    # passwords spelled out item by item
    (
        "spelled",
        "over the phone she read it as: lower case h, upper case W, 9, 2, at sign, lower case q, 7",
        ("lower case h, upper case W, 9, 2, at sign, lower case q, 7",),
    ),
    (
        "spelled",
        "路由器管理密码我一个个说：小写t、大写M、数字4、数字0、下划线、小写v、大写K",
        ("小写t、大写M、数字4、数字0、下划线、小写v、大写K",),
    ),
    ("spelled", "It needs capital letters, lower case letters, digits 0-9 and one of ! @ #", ()),
    ("spelled", "必须包含大写字母、小写字母、数字和下划线，长度 8 到 16 位", ()),
    ("spelled", "round 1, 2, 3, 4, 5, 6 and 7 all passed", ()),
    # a secret sent in pieces
    (
        "split",
        "sending the signing key in two bits. part 1: (later)\nfirst part: Zq4-Wm81\nsecond part: kT7!x2Rv",
        ("Zq4-Wm81", "kT7!x2Rv"),
    ),
    ("split", "堡垒机密码分两段发：前半段 pX83kQ，后半段是 Lm92!w", ("pX83kQ", "Lm92!w")),
    ("split", "first half: onboarding, second half: Q&A on the password manager rollout", ()),
    ("split", "our key metric dipped in the first half 2026 then recovered", ()),
    # a change told with both values
    (
        "changed",
        "VPN 账号的密码我刚改了，原来那个 Fz8-mq21 不用了，以后用 Tw3_kp90",
        ("Fz8-mq21", "Tw3_kp90"),
    ),
    (
        "changed",
        "rotated the NAS password; previous was Gr33n-Tea7, now use Bl4ck-Cof9",
        ("Gr33n-Tea7", "Bl4ck-Cof9"),
    ),
    ("changed", "我把浏览器改用 Firefox 了，密码管理器也换了", ()),
    (
        "changed",
        "Changed the wiki password: old one was Lamp5!post, new is Desk8?tile",
        ("Lamp5!post", "Desk8?tile"),
    ),
    # SQL writing a password column
    (
        "sql-insert",
        "INSERT INTO admins (login, pwd, note) VALUES\n  ('mei', 'Ux7#pL2q', 'night, shift'),\n"
        "  ('omar', crypt('Vb4!nQ8z', gen_salt('bf')), NULL);",
        ("Ux7#pL2q", "Vb4!nQ8z"),
    ),
    (
        "sql-insert",
        "INSERT INTO integrations (name, api_token) VALUES ('crm', 'r8Kw2Zq7Lm4Xt9Vb3Np5Hc1');",
        ("r8Kw2Zq7Lm4Xt9Vb3Np5Hc1",),
    ),
    ("sql-insert", "UPDATE staff SET temp_password = 'Kd8-vR2m' WHERE id = 12;", ("Kd8-vR2m",)),
    ("sql-insert", "cur.execute('INSERT INTO users (email, password) VALUES (%s, %s)', (email, pw))", ()),
    ("sql-insert", "INSERT INTO users (email, password_hash) VALUES ('a@b.example', '$2b$12$Qm3Vx8Lp');", ()),
    ("sql-insert", "INSERT INTO users (email, password) VALUES ($1, $2), (?, ?)", ()),
    # Oracle's inline user/password
    ("oracle-inline", "pool url = jdbc:oracle:thin:ledger/Pq7vX2mw@//ora-db:1521/LEDGER", ("Pq7vX2mw",)),
    ("oracle-inline", "run: sqlplus -L reports/Zt8_qm31@PRODPDB @daily.sql", ("Zt8_qm31",)),
    ("oracle-inline", "rman target sys/Wk4!rp90@prim catalog rcat/Hb2-xn55@rcatdb", ("Wk4!rp90", "Hb2-xn55")),
    ("oracle-inline", "expdp userid=hr/Mx3-kv77 schemas=HR dumpfile=hr.dmp", ("Mx3-kv77",)),
    ("oracle-inline", "SQL> connect scott/Tg5_ra12@orcl", ("Tg5_ra12",)),
    ("oracle-inline", "sqlplus / as sysdba", ()),
    ("oracle-inline", "the jdbc:oracle:thin:USER/PASSWORD@host:1521/svc template from the docs", ()),
    ("oracle-inline", "we target arm64/linux and x86_64/linux builds", ()),
    # one-time codes told as a code
    ("otp", "【某快递】您的取件验证码：730518，请尽快领取", ("730518",)),
    ("otp", "the bank texted me: your one-time passcode is 552907, do not share it", ("552907",)),
    ("otp", "got a text message, the code is 884120 — should I read it to the caller?", ("884120",)),
    ("otp", "登录动态码 4417，我发给你了", ("4417",)),
    ("otp", "验证码 5 分钟内有效，长度为 6 位", ()),
    ("otp", "SMS gateway returned error code: 400113", ()),
    ("otp", "the code 2026 release notes mention the SMS login", ()),
    ("otp", "收到一条验证码 662901，我根本没在登录，是不是有人在试我的号？", ("662901",)),
    # masked values, fill-ins and listings that name secrets without their values
    ("masked", 'client_secret = "••••••••••••••a91c"', ()),
    ("masked", "access_key     ****************W2QK env", ()),
    ("masked", "SENDGRID_API_KEY=SG.xxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxx", ()),
    ("masked", '"secret_key": "AKIAXXXXXXXXXXXXXXXX"', ()),
    (
        "masked",
        "the new key is ghp_Xx7Lm2Qw9Rt4Vb8Np3Hc6Kd1Fz5Sa0YeUiOo",
        ("ghp_Xx7Lm2Qw9Rt4Vb8Np3Hc6Kd1Fz5Sa0YeUiOo",),
    ),
    ("listing", "Data\n====\napi-token:  40 bytes\nca.crt:     1099 bytes", ()),
    ("listing", "NAME            TYPE      DATA\nreg-cred        kubernetes.io/basic-auth   2", ()),
    ("listing", "Name            Updated\nsmtp-password   11/28/2026\nstripe-token    2026-11-30", ()),
    ("listing", "amqp://guest:guest@127.0.0.1:5672/ for the local broker", ()),
    ("listing", "amqp://guest:guest@mq.prod.example:5672/ is still the prod broker", ("guest@mq",)),
    ("listing", "creds: deploy / Rv8-qm44", ("Rv8-qm44",)),
    # more of the same families: SQL that sets an account's password, a code told first or in groups, a letter
    # told by a word, a slot that says where its value goes
    ("sql-account", 'CREATE USER audit_ro IDENTIFIED BY "Xc4!mp7Q";', ("Xc4!mp7Q",)),
    ("sql-account", "ALTER USER billing IDENTIFIED BY tiger;", ("tiger",)),
    ("sql-account", "GRANT SELECT ON crm.* TO 'bi'@'%' IDENTIFIED BY 'Wd9-kx31';", ("Wd9-kx31",)),
    ("sql-account", "SET PASSWORD FOR 'ops'@'localhost' = 'Hn6_qz40';", ("Hn6_qz40",)),
    ("sql-account", "ALTER USER app IDENTIFIED BY :new_password", ()),
    ("sql-account", "each row is identified by name and region", ()),
    ("otp", "G-730914 is your Google verification code", ("730914",)),
    ("otp", "509381 是您的登录验证码，请勿泄露", ("509381",)),
    ("otp", "sms says: your login code is 318 604", ("318 604",)),
    ("otp", "1200 is your total, the verification code comes later", ()),
    (
        "spelled",
        "read it back to me: capital K as in Kilo, 4, lowercase m, 9, dollar sign, z as in Zulu",
        ("Kilo", "lowercase m, 9"),
    ),
    ("spelled", "P as in Paris, that is how the surname starts", ()),
    ("masked", "API_KEY=put-your-api-key-here\nDB_PASSWORD=put-your-password-here", ()),
    ("masked", "token: insert_token_here", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_7, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_7)]
)
def test_a_form_added_for_the_seventh_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


def test_the_seventh_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "INSERT INTO t (password) VALUES (" + "'q''" * 5000,  # a row left open, doubled quotes
        "INSERT INTO t (a, pwd) VALUES " + "('a', crypt('b', f('c')))," * 2000 + "(",
        "IDENTIFIED BY " * 3000,  # one long line, no account statement
        "https://x.example/?" + "a_b-c." * 3000 + "secret=" + "Z9" * 3000,
        "first part second part " * 3000 + " password",
        "capital A, " * 3000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


FORM_CASES_8: list[tuple[str, str, tuple[str, ...]]] = [
    # a password fed to a tool on its input or as its argument (chpasswd pairs, passwd --stdin, htpasswd -b,
    # net user); crypt hashes, cloud-init's RANDOM, a prompt (`*`) and talk about the tools are kept
    ("stdin", "provisioning step: printf 'mira:Otter#5521\\n' | sudo chpasswd", ("Otter#5521",)),
    (
        "stdin",
        "#cloud-config\nchpasswd:\n  list: |\n    admin:Violet-Quay-30\n    backup:RANDOM\n  expire: true",
        ("Violet-Quay-30",),
    ),
    ("stdin", 'chpasswd <<< "svc_ci:Marble77!x"   # run as root', ("Marble77!x",)),
    ("stdin", "echo 'Pylon_4420' | passwd --stdin builder && echo ok", ("Pylon_4420",)),
    ("stdin", "(the lab box) printf 'Reed9!\\nReed9!\\n' | smbpasswd -s -a scanner", ("Reed9!",)),
    ("stdin", "htpasswd -Bb ./auth/htpasswd registry Dune-Falcon-12", ("Dune-Falcon-12",)),
    ("stdin", "htpasswd -nbB grafana Cinder_3390 >> users.htpasswd", ("Cinder_3390",)),
    ("stdin", "C:\\> net user kiosk Tundra%6612 /add /y", ("Tundra%6612",)),
    ("stdin", "chpasswd reads user:password pairs from stdin, one pair per line", ()),
    ("stdin", "echo 'ops:$6$rounds=5000$k1$Qm9vW2x' | chpasswd -e", ()),
    ("stdin", "net user kiosk * /add asks for the password twice", ()),
    ("stdin", "htpasswd -c .htpasswd admin   # it prompts for the password", ()),
    ("stdin", "grep www-data /etc/passwd\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin", ()),
    # a one-time code goes whether or not the writer asked for it, and behind a scam question
    ("otp", "【示例银行】验证码 552901，用于网银登录，请勿泄露。这是不是钓鱼短信？", ("552901",)),
    ("otp", "Text from 'Lyft': your verification code is 7731. phishing?", ("7731",)),
    ("otp", "验证码 440173（如非本人操作，请忽略本短信），填进去提示过期", ("440173",)),
    ("otp", "SMS: 'Use 861204 as your login code. If you didn't request this, ignore it.'", ("861204",)),
    (
        "otp",
        "I didn't request this: 'Your sign-in code is 664120'. Is someone trying my account?",
        ("664120",),
    ),
    ("otp", "收到验证码 318842，可我根本没在登录，是诈骗吗", ("318842",)),
    ("otp", "登录验证码就是：207718，五分钟有效", ("207718",)),
    # a pre-shared key under any config's name for it; public keys and talk about PSKs are kept
    (
        "psk",
        "[Peer]\nPublicKey = Hf2kLm9PqRs4Tu7Vw0Xy3Za6Bc8De1Fg5Hi2Jk4Lm6N=\n"
        "PreSharedKey = k3Vh0sPq2XwLr8mN5tYb7cJd1fGe4aHi6uZo9QnRyTs=",
        ("k3Vh0sPq2XwLr8mN5tYb7cJd1fGe4aHi6uZo9QnRyTs=",),
    ),
    ("psk", "pre_shared_key: 0aB9cD8eF7gH6iJ5kL4m  # site-to-site", ("0aB9cD8eF7gH6iJ5kL4m",)),
    ("psk", "IPsec 对端给的 PSK：Lk82mQz7Wv0Rt3Yp", ("Lk82mQz7Wv0Rt3Yp",)),
    ("psk", "WPA2-PSK mode is fine for the guest network", ()),
    ("psk", "the pre-shared key must be at least 20 characters", ()),
    ("psk", "PublicKey = Qz8Wn2Lp5Rt7Yv0Xb3Kd6Mf9Hj1Gs4Ac2Eu5Io8PaT=", ()),
    # labels listed, then their values in order; a value under a label naming no secret is kept
    (
        "respective",
        "华为云 OBS 的 AK 和 SK 分别为 Q0ZTRK8XWN5VJ2HLPD7M、p3Lq9Vw2Zk8Rt5Ys1Xn4Bm7Cd0Fg6Hj2Kl5Mn8Qr",
        ("Q0ZTRK8XWN5VJ2HLPD7M", "p3Lq9Vw2Zk8Rt5Ys1Xn4Bm7Cd0Fg6Hj2Kl5Mn8Qr"),
    ),
    ("respective", "只读库的账号和密码分别是 report_ro 和 Lilac*0917，别外传", ("Lilac*0917",)),
    (
        "respective",
        "the consumer key and consumer secret are xvz1evFS4wEEPTGEFPHBog and "
        "L8qq9PZyRg6ieKGEKhZolGC0vJWLw8iEJ88DRdyOg respectively.",
        ("xvz1evFS4wEEPTGEFPHBog", "L8qq9PZyRg6ieKGEKhZolGC0vJWLw8iEJ88DRdyOg"),
    ),
    (
        "respective",
        "for the kiosk, the username and password are frontdesk and Wren-Harbor-6 respectively",
        ("Wren-Harbor-6",),
    ),
    ("respective", "两台机器的内存分别是 16GB 和 32GB", ()),
    ("respective", "AppID 和商户号分别是 wx5e8f1a2b3c4d5e6f 和 1623558801", ()),
    ("respective", "the old and new versions are 2.3.1 and 2.4.0 respectively", ()),
    # a well-known account, a slash, its password, where passwords or logins are spoken of
    ("account-pair", "密码没改过：jenkins 面板还是 admin / Tidal#Moss-58，改天再换", ("Tidal#Moss-58",)),
    ("account-pair", "lab router login is still root / Quartz_8814 (don't laugh)", ("Quartz_8814",)),
    ("account-pair", "nacos 控制台 nacos／Nc-2024pass 登录不上", ("Nc-2024pass",)),
    ("account-pair", "go to admin / settings / users to reset a password", ()),
    ("account-pair", "the login audit is under root/2024-10/logs", ()),
    ("account-pair", "password rules: see admin / Policies", ()),
    # a code told a few words after the lock it opens
    ("lock", "Key safe is left of the garage, combination 3071, spare fob inside", ("3071",)),
    ("lock", "the padlock on the storage cage: code is 58213", ("58213",)),
    ("lock", "front door keypad - pin 90417, then press the bell", ("90417",)),
    ("lock", "the gun safe's combo is 9-31-5, don't tell the kids", ("9-31-5",)),
    ("lock", "the gate's error code 4012 means the motor overheated", ()),
    ("lock", "my pin expires 12-31-25, the bank says", ()),
    ("lock", "safe mode exit code 2048 again after the update", ()),
    ("lock", "door 4 code review moved to 1530", ()),
    # an access key's id told in text with a generated value; prose after the label is kept
    (
        "key-id",
        "金山云：Access Key ID AKLTq8Zr2Vn5Xw7Yp0Lm3Kd6Jh9Gf4Ts，Secret 在 vault 里",
        ("AKLTq8Zr2Vn5Xw7Yp0Lm3Kd6Jh9Gf4Ts",),
    ),
    ("key-id", "InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.", ()),
    # a pass phrase told after a dash or a comma as "it's ..."
    ("passphrase", "gpg wants the pass phrase, it's Orchid-Lantern-3 if I remember", ("Orchid-Lantern-3",)),
    ("passphrase", "encrypted key, password - it's Fjord%2290 - works in openssl", ("Fjord%2290",)),
    ("passphrase", "Enter pass phrase for server.key:", ()),
    ("passphrase", "the pass phrase, it's not stored anywhere", ()),
    ("passphrase", "what was the wifi password, it's Monday and I already forgot", ()),
    # prose and references after a password label are kept
    ("reference", "admin_password = local.admin_pw   # 由 KMS 解密", ()),
    ("reference", "password:   # set by the operator at install", ()),
    ("prose", "Passwords are never logged, and tokens are always hashed before they are stored.", ()),
    ("prose", "The password is emailed to nobody; the passphrase is salted and stretched.", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_8, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_8)]
)
def test_a_form_added_for_the_eighth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


def test_the_eighth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "echo '" + "a:b " * 3000 + "' | chpasswd",
        "chpasswd:\n" + "  u:" + "p" * 40 + "\n" * 1 + "  u:p\n" * 3000,
        "htpasswd" + " -b" * 3000 + " f u",
        "net user " + "a " * 5000,
        "分别是 " + "a1b2c3d4 和 " * 3000,
        "the key and secret are " + "k1 and " * 3000 + "respectively",
        "lockbox " + "x " * 3000 + "code 1234",
        "admin / " * 3000 + " password",
        "password, it's " * 3000,
        "password, it's " * 12000,  # one long line of labels: each label's checks stay near it
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


FORM_CASES_9: list[tuple[str, str, tuple[str, ...]]] = [
    # a Wi-Fi network and its password written as a pair near a Wi-Fi word; bands and security modes kept
    (
        "wifi-pair",
        "cabin checklist\n* wifi: LakeHouse-2G / otter-canoe-731\n* firewood in the shed",
        ("otter-canoe-731",),
    ),
    ("wifi-pair", "访客无线网络：Studio_5G／88213476，打印机在二楼", ("88213476",)),
    ("wifi-pair", "SSID/pass: Atelier9 / m1nt!Harbor", ("m1nt!Harbor",)),
    ("wifi-pair", "the router supports wifi: 2.4GHz / 5GHz, both on channel auto", ()),
    ("wifi-pair", "office wifi: WPA2-Personal / WPA3-Personal transition mode", ()),
    # a passport number after its label, any language, the country shapes
    ("passport", "hotel check-in form: passport number: PA4471093, nationality FI", ("PA4471093",)),
    ("passport", "帮我填签证表，我的护照号是G52817364，签发地上海", ("G52817364",)),
    ("passport", "Reisepass-Nr. C4J7N2R91 gültig bis 2030", ("C4J7N2R91",)),
    ("passport", "my passport # is 563019847 (US), expires next spring", ("563019847",)),
    ("passport", "Renew your passport 6 months before it expires; the passport office opens at 9.", ()),
    ("passport", "护照照片要求：白底，护照有效期需超过6个月", ()),
    ("passport", "train ticket E427190385, seat 06F", ()),
    # a payment platform's API key after its label, whatever vendor, with a subject before the verb
    (
        "api-key",
        "支付宝的接口密钥我已经配置成了 Qw7rTn2LpX9vKd4MzB6hYs3FjC8eGa5N ，还是验签失败",
        ("Qw7rTn2LpX9vKd4MzB6hYs3FjC8eGa5N",),
    ),
    (
        "api-key",
        "merchant APIv3 key: 7hKp2QmZx9RtVb4Nw6LcJy3Fd8Gs5Ae1",
        ("7hKp2QmZx9RtVb4Nw6LcJy3Fd8Gs5Ae1",),
    ),
    ("api-key", "商户号 1712345608 是公开的，APIv3 密钥在商户平台的 API 安全页面设置", ()),
    # a PIN or code dictated as words or Chinese numerals after its label
    (
        "spoken-pin",
        "note to self the garage code is three eight zero six don't tell the kids",
        ("three eight zero six",),
    ),
    ("spoken-pin", "语音备忘：交易密码是七三一九五零，下周记得改", ("七三一九五零",)),
    ("spoken-pin", "门禁码：幺五九三", ("幺五九三",)),
    ("spoken-pin", "the pin is one of the four digits on the back of the card", ()),
    ("spoken-pin", "密码是六位数字，不要用生日", ()),
    ("spoken-pin", "the code is two or three lines long", ()),
    # one-time codes listed after a phrase saying each is good for one use
    (
        "codes",
        "Backup sign-in: every code may only be used once:\nq7v2k-0hm4d\n5tzr8-ww1pc\n",
        ("q7v2k-0hm4d", "5tzr8-ww1pc"),
    ),
    ("codes", "single-use codes:\n  38104-77215\n  90442-16638", ("38104-77215", "90442-16638")),
    ("codes", "Each ticket can be used once: see the 2026-05 schedule", ()),
    # credentials passed positionally to a database / mail client; variables kept
    ("positional", "$db = new mysqli('10.0.3.7', 'report', 'Fjord#2290', 'stats');", ("Fjord#2290",)),
    (
        "positional",
        'Connection c = DriverManager.getConnection(url, "svc_ro", "Quartz-61-lime");',
        ("Quartz-61-lime",),
    ),
    (
        "positional",
        "const db = new Sequelize('crm', 'crm_app', 'hazel77Pine', { dialect: 'postgres' });",
        ("hazel77Pine",),
    ),
    ("positional", 'smtp.login("alerts@example.org", "wrenfield-904")', ("wrenfield-904",)),
    ("positional", "$pdo = new PDO($dsn, $user, $pass, $options);", ()),
    ("positional", "conn = pymysql.connect(host, user, password, db)", ()),
    # code that reads a secret or generates one: kept
    ("reads", 'pw = getpass.getpass(prompt="Vault password: ")\nsecret = os.getenv("API_SECRET")', ()),
    (
        "reads",
        "const password = process.env.PG_PASSWORD;\nconst pool = new Pool({ user: 'api', password });",
        (),
    ),
    ("reads", "api = Api(token=token, password=password)", ()),
    (
        "reads",
        'resource "random_password" "admin" {\n  length = 24\n}\nadmin_password = random_password.admin.result',
        (),
    ),
    ("reads", 'String pw = System.getenv("DB_PW");', ()),
    ("reads", 'DB_PASSWORD = os.environ["DB_PASSWORD"]\nSMTP_PASS = getpass.getpass()', ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_9, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_9)]
)
def test_a_form_added_for_the_ninth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


def test_the_ninth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "wifi: " + "a / " * 4000,
        "wifi: x" * 4000,
        "passport " * 4000 + "AB1234567",
        "pin " * 4000 + "is one two three",
        "the code " + "x " * 5000 + "is one two three four",
        "one two " * 5000,
        "new PDO(" + "'a', " * 4000,
        "x.login(" + "a, " * 5000,
        "each can be used once:\n" + "ab1-" * 4000,
        "password = os.environ" * 3000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# ---------------------------------------------------------------- forms added for the tenth hold-out set

# Made-up values (none from the set): a Mastercard and a UnionPay card with a real Luhn digit, a CN ID with a
# real check character, and their near misses (one digit off: the checksum fails).
_MC10 = "552841907316452"
_MC10 += _luhn_digit(_MC10)
_MC10_BAD = _MC10[:-1] + str((int(_MC10[-1]) + 1) % 10)
_UP10 = "621483005927316401"
_UP10 += _luhn_digit(_UP10)
_ID10 = "32010619870614357"
_ID10 += "10X98765432"[sum(int(c) * w for c, w in zip(_ID10, _CN_WEIGHTS, strict=True)) % 11]
_ID10_BAD = _ID10[:-1] + ("0" if _ID10[-1] != "0" else "1")
FORM_CASES_10: list[tuple[str, str, tuple[str, ...]]] = [
    # a CSV / TSV / Markdown column named after an account or card number: its digit cells go, whatever row
    (
        "account-column",
        "staff_no,full_name,sort_code,bank_account_number,gross\nS-88,Rowan Pike,20-44-91,61093847,3120.00",
        ("61093847",),
    ),
    ("account-column", f"工号|姓名|工资卡号|金额\n007|李娜|{_UP10}|9200.00", (_UP10,)),
    ("account-column", "name\taccount number\tsort code\nAnn Lee\t31926804\t11-22-33", ("31926804",)),
    ("account-column", "序号,户名,收款账号,用途\n1,陈立,4402 7811 9035 226,货款", ("4402 7811 9035 226",)),
    ("account-column", "invoice,account_no,amount\nINV-7,****4410,88.00", ()),
    ("account-column", "name,account,balance\nmaya,checking,410.22\nleo,savings,1200.00", ()),
    ("account-column", "订单号,卡号后四位,金额\nE20261102,3391,88.00", ()),
    ("account-column", "date,sort_code,reference\n2026-11-02,40-11-62,RENT NOV", ()),
    ("account-column", "账号,昵称,等级\n88123456,小鱼,42", ()),
    # a card as a CSV cell (a comma and a cell after it that is no thousands group)
    ("card-in-csv-row", f"3,王芳,{_MC10},12,2026-10-01", (_MC10,)),
    ("card-in-csv-row", f"3,王芳,{_MC10_BAD},12,2026-10-01", ()),
    ("card-in-csv-row", "total paid 1,234,567,890,123,456 won", ()),
    # a number broken over two lines after its label (OCR): joined, the checksum decides
    ("broken-number", f"身份证号：{_ID10[:10]}\n{_ID10[10:]} 联系电话见下", (f"{_ID10[:10]}\n{_ID10[10:]}",)),
    (
        "broken-number",
        f"Card number {_MC10[:4]} {_MC10[4:8]}\n{_MC10[8:12]} {_MC10[12:]} exp 04/28",
        (_MC10[8:12], _MC10[:4] + " " + _MC10[4:8]),
    ),
    ("broken-number", f"身份证号：{_ID10_BAD[:10]}\n{_ID10_BAD[10:]} 联系电话见下", ()),
    ("broken-number", f"Order {_MC10_BAD[:8]}\n{_MC10_BAD[8:]} shipped", ()),
    ("broken-number", f"{_MC10[:8]}\n{_MC10[8:]}\n(two parcel numbers, one per line)", ()),
    # a password told, then corrected: the new value goes too
    ("corrected", "the alarm code is 4417\nsorry, typo: it is 4471", ("4417", "4471")),
    ("corrected", "WiFi 密码是 Hq82!mzp\n说错了，应该是 Hq28!mzp", ("Hq82!mzp", "Hq28!mzp")),
    (
        "corrected",
        "my email password is Rv93#lake. Actually scratch that, I changed it, now use Rv39#pond",
        ("Rv93#lake", "Rv39#pond"),
    ),
    ("corrected", "the locker pin is 7781 - oops, my bad, it is 7718", ("7781", "7718")),
    ("corrected", "wait, the code is the old one? no, it is a new lock entirely", ()),
    # a label OCR read with its letters spaced out
    ("spaced-label", "[OCR]\nu s e r   dana.o\np a s s w o r d   Tr0ut!Lake\nl o g i n", ("Tr0ut!Lake",)),
    ("spaced-label", "截图文字：\n密 码 ：  mq73Wz9!\n记 住 我", ("mq73Wz9!",)),
    ("spaced-label", "P I N :  7302   C a n c e l", ("7302",)),
    ("spaced-label", "p a s s w o r d   Forgot?   S i g n  i n", ()),
    ("spaced-label", "p a s s w o r d   required", ()),
    ("spaced-label", "s h o p p i n g   l i s t :  eggs, milk", ()),
    # a secret asked for by its label, then given alone on the next line
    (
        "asked-answered",
        "[09:12] Agent: what is the API key on the failing job?\n[09:13] Lee: q7Hf02LmZx93KdPq",
        ("q7Hf02LmZx93KdPq",),
    ),
    ("asked-answered", "管理员：新的 VPN 口令是什么？\n小王：vpn#4471Ab", ("vpn#4471Ab",)),
    (
        "asked-answered",
        "Support: and the auth token?\nMe: 3be91c07d4aa58f2e61b0c9d7f34a210",
        ("3be91c07d4aa58f2e61b0c9d7f34a210",),
    ),
    ("asked-answered", "Which password manager do you use?\nSam: 1Password8", ()),
    ("asked-answered", "What is the token expiry?\nOps: 3600s", ()),
    ("asked-answered", "Which API key scope do we need?\nAna: repo2read", ()),
    ("asked-answered", "What's the password policy here?\nIT: NIST-800-63B", ()),
    # what a log filter prints in a value's place is no value
    ("filtered", 'Parameters: {"session"=>{"login"=>"ana", "password"=>"[FILTERED]"}}', ()),
    ("filtered", "db password: [REDACTED] (scrubbed by the log shipper)", ()),
    ("filtered", "api_token=(hidden) retry=3", ()),
    ("filtered", 'Parameters: {"session"=>{"login"=>"ana", "password"=>"Fj3!kd92"}}', ("Fj3!kd92",)),
    # a card's security code at the end of a sentence
    (
        "cvv-full-stop",
        f"Mastercard {_MC10[:4]} {_MC10[4:8]} {_MC10[8:12]} {_MC10[12:]} exp 03/27, security code 482. Thanks!",
        (_MC10[12:], "482"),
    ),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_10, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_10)]
)
def test_a_form_added_for_the_tenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the tenth set's forms, what is no secret stays: a later number that is a duration or a
# price, a question's other words.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("gate code is 5190, wait, it is 10 minutes away from the station", "5190", "10 minutes"),
        (f"Mastercard {_MC10} exp 03/27 and 123.45 was charged.", _MC10, "123.45"),
        (f"身份证号：{_ID10[:10]}\n{_ID10[10:]}\n电话：13912345678", _ID10[10:], "13912345678"),
        ("employee,account_no,net\nE1,61093847,2840.55", "61093847", "2840.55"),
    ],
)
def test_the_tenth_sets_rules_keep_what_stands_next_to_the_secret(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


def test_the_tenth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "password: Ab1!xyz9 " + "wait " * 5000 + "it is",
        "password: Ab1!xyz9\n" + "sorry it's " * 4000,
        "p a s s " * 4000 + "w o r d   x1",
        "token " * 3000 + "?\n" + "a" * 300,
        ("What is the password?\n" + "x: " * 40) * 200,
        "1234\n" * 5000,
        "1234 " * 4000 + "\n" + "5678 " * 4000,
        "account_no," * 2000 + "\n" + "1," * 4000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# ---------------------------------------------------------------- forms added for the eleventh hold-out set

# Each form the eleventh set showed missing (tests/data/REDACTION_HOLDOUT11.md), with made-up values and wording
# (none from the set): secrets that must go and near look-alikes that must come back unchanged.
_VISA11 = "491762038815447"
_VISA11 += _luhn_digit(_VISA11)
_MC11 = "522719406633801"
_MC11 += _luhn_digit(_MC11)
_UP11 = "622588104477290"
_UP11 += _luhn_digit(_UP11)


def _mrz_digit(s: str) -> str:
    """ICAO 9303 check digit: weights 7, 3, 1; digits as themselves, A-Z as 10-35, the filler < as 0."""
    values = [0 if c == "<" else int(c) if c.isdigit() else ord(c) - ord("A") + 10 for c in s]
    return str(sum(v * (7, 3, 1)[i % 3] for i, v in enumerate(values)) % 10)


def _mrz_td3(number: str, nation: str, birth: str, sex: str, expiry: str, personal: str) -> str:
    number, personal = number.ljust(9, "<"), personal.ljust(14, "<")
    line = (
        number + _mrz_digit(number) + nation + birth + _mrz_digit(birth) + sex + expiry + _mrz_digit(expiry)
    )
    line += personal + (_mrz_digit(personal) if personal.strip("<") else "<")
    return line + _mrz_digit(line[:10] + line[13:20] + line[21:43])


def _mrz_td2(number: str, nation: str, birth: str, sex: str, expiry: str) -> str:
    number = number.ljust(9, "<")
    line = (
        number + _mrz_digit(number) + nation + birth + _mrz_digit(birth) + sex + expiry + _mrz_digit(expiry)
    )
    line += "<" * 7
    return line + _mrz_digit(line[:10] + line[13:20] + line[21:35])


_MRZ11 = _mrz_td3("EJ7730418", "CHN", "910523", "M", "330612", "")
_MRZ11_BAD = _MRZ11[:-1] + str((int(_MRZ11[-1]) + 3) % 10)
_MRZ11_TD2 = _mrz_td2("R4418207", "DEU", "850907", "F", "290131")


def _b64_json(obj: object, indent: int | None = None) -> str:
    return base64.b64encode(json.dumps(obj, indent=indent).encode()).decode()


_DOCKER11 = _b64_json(
    {"auths": {"registry.corp.example": {"auth": base64.b64encode(b"ci-pusher:Lm4!vQ82xTr").decode()}}}
)
_SA11 = _b64_json({"type": "service_account", "client_secret": "q7VnR2xLw9Tz4KpB8mYc"}, indent=2)

FORM_CASES_11: list[tuple[str, str, tuple[str, ...]]] = [
    # a password label as OCR misreads it in a photo (vv for w, 0 for o)
    ("ocr-label", "photo of the modem label:\nLogin Passvvord: Qe7#rT2mvL\nhttp://10.0.0.1", ("Qe7#rT2mvL",)),
    ("ocr-label", "GUEST Passw0rd : hN4!kp83Zs (from the card at reception)", ("hN4!kp83Zs",)),
    ("ocr-label", "the scanner turned Password into Passvvord on every page, can it be fixed?", ()),
    # a sticker's Wi-Fi key printed in groups, its label naming the PIN too
    (
        "wifi-key-groups",
        "router sticker:\nSSID: FLAT-12B\nWireless Key/PIN: 8QWE 3KZP 77MD RT4X",
        ("8QWE 3KZP 77MD RT4X",),
    ),
    ("wifi-key-groups", "wifi box label, Network Key: 4kq9b 7mzx2 pdw8e", ("4kq9b 7mzx2 pdw8e",)),
    ("wifi-key-groups", "wifi router, security key: WPA2 AES 2024 mode", ()),
    ("wifi-key-groups", "router: Wireless Key/PIN: see the label on the back", ()),
    # a card verification code column of a CSV / TSV export
    (
        "cvv-column",
        f"holder,pan,expiry,cvc\nIvo Brandt,{_VISA11},11/27,318\nMei Ong,{_MC11},04/28,7702",
        (_VISA11, _MC11, "318", "7702"),
    ),
    ("cvv-column", f"姓名\t卡号\t有效期\t安全码\n王磊\t{_UP11}\t08/29\t461", (_UP11, "461")),
    ("cvv-column", "sku,qty,cvv\nA-1,3,n/a\nB-2,1,***", ()),
    ("cvv-column", "customer,cid,total\nAnn Roe,4821,30.00", ()),
    # recovery codes listed under a second factor's page named, with no "recovery codes" label
    (
        "second-factor-page-codes",
        "copied off the Bitwarden two-step page:\n\nk2m9x-p4d7q\nz8v3n-c6t1w\nr5b2j-h9f4s\n\nwhere do I keep them?",
        ("k2m9x-p4d7q", "z8v3n-c6t1w", "r5b2j-h9f4s"),
    ),
    (
        "second-factor-page-codes",
        "双重验证页面上的：\nq7w2e9r4t1\nm3n8b6v2c5\n能用几次？",
        ("q7w2e9r4t1", "m3n8b6v2c5"),
    ),
    ("second-factor-page-codes", "备用码：7382-1945 5520-8831", ("7382-1945", "5520-8831")),
    ("second-factor-page-codes", "2FA rollout status:\n2025-03-14\nv2.3.1", ()),
    ("second-factor-page-codes", "MFA device: arn:aws:iam::402913378810:mfa/ci-runner", ()),
    # a JSON document encoded in base64 that holds a secret
    ("b64-json-secret", f"imagePullSecret 的 .dockerconfigjson: {_DOCKER11}\n是不是编码错了？", (_DOCKER11,)),
    ("b64-json-secret", f"CREDS_B64={_SA11}", (_SA11,)),
    ("b64-json-secret", f"jwt header part: {_b64_json({'alg': 'RS256', 'kid': 'k1-2025'})} looks fine", ()),
    ("b64-json-secret", f"cursor={_b64_json({'page': 2, 'sort': 'asc', 'after': 'id-9981'})}", ()),
    # a passport's machine-readable line, caught by its check digits
    (
        "passport-mrz",
        f"护照底部 OCR：\nP<CHNZHAO<<MINGYUE<<<<<<<<<<<<<<<<<<<<<<<<<<<\n{_MRZ11}\n帮我看看有效期",
        (_MRZ11,),
    ),
    ("passport-mrz", f"visa page MRZ: {_MRZ11_TD2} is that my expiry?", (_MRZ11_TD2,)),
    ("passport-mrz", f"a made-up MRZ with a wrong check digit for the docs: {_MRZ11_BAD}", ()),
    ("passport-mrz", "P<CHNZHAO<<MINGYUE<<<<<<<<<<<<<<<<<<<<<<<<<<<", ()),
    # a second key joined to a labelled one, with no label of its own
    (
        "key-and-key",
        "对象存储报签名错误，密钥是 Hq2XwLp9Tz4RvN8mKc3BjY6s 和 f7GdT1kWq8ZxN3bV5mLp2RcY9hJ，前面是 AK",
        ("Hq2XwLp9Tz4RvN8mKc3BjY6s", "f7GdT1kWq8ZxN3bV5mLp2RcY9hJ"),
    ),
    (
        "key-and-key",
        "secret key: Pw83LmZq0xTn5RvB2kYc and Gt71QaWz4NbX9mKd6Rse, rotated monthly",
        ("Pw83LmZq0xTn5RvB2kYc", "Gt71QaWz4NbX9mKd6Rse"),
    ),
    ("key-and-key", "密钥是 <你的AK> 和 <你的SK>，替换后再运行", ()),
    # a plaintext literal turned into a credential in code
    (
        "plaintext-to-credential",
        '$pw = ConvertTo-SecureString -String "Vr8#kLm2Qx!" -AsPlainText -Force',
        ("Vr8#kLm2Qx!",),
    ),
    (
        "plaintext-to-credential",
        "$s = ConvertTo-SecureString 'T3a-pot!91' -Force -AsPlainText",
        ("T3a-pot!91",),
    ),
    (
        "plaintext-to-credential",
        'var cred = new NetworkCredential("svc-smtp", "Mn7$bVc20z");',
        ("Mn7$bVc20z",),
    ),
    ("plaintext-to-credential", "$s = ConvertTo-SecureString $env:SVC_PW -AsPlainText -Force", ()),
    ("plaintext-to-credential", '$s = ConvertTo-SecureString "<password>" -AsPlainText -Force', ()),
    ("plaintext-to-credential", "$enc | ConvertTo-SecureString -Key $aesKey", ()),
    ("plaintext-to-credential", "var cred = new NetworkCredential(user, password);", ()),
    # the rest of a labelled key wrapped onto the next line
    (
        "wrapped-labelled-key",
        "the shell wrapped it:\n$ export GITLAB_TOKEN=glpat-Zr81kWm2Qx\nT4vbN7pLcY9sDh\n$ git push",
        ("glpat-Zr81kWm2Qx", "T4vbN7pLcY9sDh"),
    ),
    (
        "wrapped-labelled-key",
        "令牌：Xk72MqPz0LwT9v\nRnB4cHy8dKs3Jm\n提示 401",
        ("Xk72MqPz0LwT9v", "RnB4cHy8dKs3Jm"),
    ),
    # a password label in another language with a qualifier of several words before its verb
    (
        "foreign-label-qualifier",
        "La contraseña del portal de los vecinos es Rq4!mT82zw, no la compartas",
        ("Rq4!mT82zw",),
    ),
    ("foreign-label-qualifier", "Das Passwort für das Portal der Mieter ist Hx7#kq22Lp", ("Hx7#kq22Lp",)),
    ("foreign-label-qualifier", "Le mot de passe du compte de la banque est Vb3$nn81Qe", ("Vb3$nn81Qe",)),
    ("foreign-label-qualifier", "la contraseña del portal de los vecinos es muy larga", ()),
    # kept: a key displayed as its head and tail around an ellipsis
    ("ellipsis-display", "the dashboard shows api_key=sk-...Zt4q and token=ghp_…a1b2 only", ()),
    ("ellipsis-display", "log line: secret_key=...9fQe (rotated)", ()),
    ("ellipsis-display", "password=Ab...c9x7 for the staging box", ("Ab...c9x7",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_11, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_11)]
)
def test_a_form_added_for_the_eleventh_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the eleventh set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (
            "api key: Zk39fLq0aPw7Tn2bXc8R and then-run-the-nightly-job",
            "Zk39fLq0aPw7Tn2bXc8R",
            "then-run-the",
        ),
        ("密钥是 Hq2XwLp9Tz4RvN8mKc3BjY6s 和 img-cdn-bucket", "Hq2XwLp9Tz4RvN8mKc3BjY6s", "img-cdn-bucket"),
        ("token: Zk39fLq0aPw7Tn2bXc8R\nNextSteps\nREADME", "Zk39fLq0aPw7Tn2bXc8R", "NextSteps"),
        (f"holder,pan,expiry,cvc\nIvo Brandt,{_VISA11},11/27,318", "318", "11/27"),
        (f"P<CHNZHAO<<MINGYUE<<<<<<<<<<<<<<<<<<<<<<<<<<<\n{_MRZ11}", _MRZ11, "P<CHNZHAO<<MINGYUE"),
        ("Wireless Key/PIN: 8QWE 3KZP 77MD RT4X\nhttp://192.168.8.1", "8QWE 3KZP", "http://192.168.8.1"),
    ],
)
def test_the_eleventh_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


def test_the_eleventh_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "<" * 40000,
        "K005419540CHN8307174F2903013<<<<<<<<<<<<<<05\n" * 800,
        "eyJ" + "A" * 40000,
        "token: Zk39fLq0aPw7Tn2bXc8R" + "\nAbcdefgh12" * 4000,
        "api key: Zk39fLq0aPw7Tn2bXc8R" + " and Zk39fLq0aPw7Tn2bXc8Rz" * 1500,
        "2FA page:\n" + "abcd1-efgh2\n" * 4000,
        "2FA " * 10000,
        "router wifi key: " + "ab1c " * 8000,
        "ConvertTo-SecureString " + "-A " * 10000,
        "NetworkCredential(" + "a" * 30000,
        "contraseña " + "de " * 10000,
        "api_key=" + "a-" * 10000 + "...",
        "name,cvv\n" + "x,123\n" * 5000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# The twelfth set's forms (76/85, 69/70 at first sight), each with new made-up values and wording.
FORM_CASES_12: list[tuple[str, str, tuple[str, ...]]] = [
    # a prompt shows the current value in square brackets before its colon
    (
        "prompt-bracket",
        "aws configure --profile ops\nAWS Access Key ID [****************QX7M]: \n"
        "AWS Secret Access Key [****************9fTq]: Wq8rT+u2LmZp0xK7vB3nHc5YdJ9sEa4Fg6Ri1Oz\n",
        ("Wq8rT+u2LmZp0xK7vB3nHc5YdJ9sEa4Fg6Ri1Oz",),
    ),
    ("prompt-bracket", "Enter PEM pass phrase [default]: Lk9#vQ27zr", ("Lk9#vQ27zr",)),
    ("prompt-bracket", "输入新密码 [留空则不变]: Ty5!pw83Kd", ("Ty5!pw83Kd",)),
    ("prompt-bracket", "Default output format [json]: table", ()),
    ("prompt-bracket", "Enter password [see the vault]: then press enter", ()),
    # a relative clause between a label and its verb
    ("label-relative-clause", "the garage PIN we agreed on last month was 4816, right?", ("4816",)),
    ("label-relative-clause", "the wifi password you wrote on the fridge is Mh7!kd40Pz", ("Mh7!kd40Pz",)),
    ("label-relative-clause", "the password you entered is incorrect, try again", ()),
    ("label-relative-clause", "the PIN they sent by post is in the blue envelope", ()),
    # a fixed-length vendor key cut by a line end, its rest on the next line
    (
        "vendor-key-cut-at-line-end",
        "pasted from the wiki:\nlin_api_Q7mRz2KxTp0LwN4v\nb8YcHs6DjF3gA9eUq1Io\nthanks",
        ("Q7mRz2KxTp0LwN4v", "b8YcHs6DjF3gA9eUq1Io"),
    ),
    (
        "vendor-key-cut-at-line-end",
        "npm token from the CI log:\nnpm_Zp4Kq8Lm2Xw7\nTc9Vb3Nr5Hs1Jd6Fg0Ya2Qe\n",
        ("Zp4Kq8Lm2Xw7", "Tc9Vb3Nr5Hs1Jd6Fg0Ya2Qe"),
    ),
    ("vendor-key-cut-at-line-end", "keys look like lin_api_ followed by forty characters", ()),
    # a PESEL after its name, by its check digit
    ("pesel", "<osoba><pesel>85071512348</pesel></osoba>", ("85071512348",)),
    ("pesel", 'payload: {"imie": "Ola", "pesel": "92032804563"}', ("92032804563",)),
    ("pesel", "PESEL w formularzu: 02220933717", ("02220933717",)),
    ("pesel", "<pesel>85071512349</pesel> fails the check digit, as it should", ()),
    # a well-known account / password pair right after a host's name or address
    ("host-account-pair", "new box is ready: build-07.lab.corp  root / Vm3$kq82Tn", ("Vm3$kq82Tn",)),
    ("host-account-pair", "监控机 10.20.3.41:22 ubuntu / Hq6#zp19Wd 别外传", ("Hq6#zp19Wd",)),
    ("host-account-pair", "see docs.internal.corp admin/settings for the toggle", ()),
    ("host-account-pair", "bumped to v2.4.1 admin / Ops_2025 is just a ticket title", ()),
    # a value denied, then the right one told
    ("denied-value", "VPN 密码不是 Pk4#mz70Qa，是 Rw8!tn25Lc，别再记错", ("Pk4#mz70Qa", "Rw8!tn25Lc")),
    ("denied-value", "the router password isn't Gd2$vb61Xs, it's Nj5%qe38Ht", ("Gd2$vb61Xs", "Nj5%qe38Ht")),
    ("denied-value", "the container says MYSQL_PASSWORD is not specified", ()),
    ("denied-value", "密码不是很长，但要有数字", ()),
    # a hex secret typed in groups after its label
    (
        "hex-groups",
        "read me the api secret slowly, ok: 4c7e9a1f 0b3d58e2 9f6a1c47 d2e8b305",
        ("4c7e9a1f 0b3d58e2 9f6a1c47 d2e8b305",),
    ),
    ("hex-groups", "令牌我分段抄的：7a3f 91c2 e04b 5d86 2fa9 c13e", ("7a3f 91c2 e04b 5d86 2fa9 c13e",)),
    ("hex-groups", "signing key fingerprint: 9A4C 21F7 8E0B 3D56 C7A2 14E9 60BF 5D83", ()),
    ("hex-groups", "token checksum: 4c7e9a1f 0b3d58e2 9f6a1c47 d2e8b305", ()),
    # kept: a snake_case name of a secret after a bare label
    ("secret-variable-name", "how can I pass smtp_password into the helm chart?", ()),
    ("secret-variable-name", "we pass STRIPE_API_KEY through the CI vars", ()),
    # a plural key label, a second password joined to the first, a grouped Wi-Fi password after a Chinese label
    (
        "plural-and-joined",
        "the keys are Rb7Kq2Lm9Xw4Tz8Vn3Pc and Hd5Fs1Jg6Ya0Qe2Wr7Ux",
        ("Rb7Kq2Lm9Xw4Tz8Vn3Pc", "Hd5Fs1Jg6Ya0Qe2Wr7Ux"),
    ),
    ("plural-and-joined", "the keys are in the top drawer", ()),
    ("plural-and-joined", "两个后台密码是 Zq3!vk58Mn 和 Lp7#rd21Bx", ("Zq3!vk58Mn", "Lp7#rd21Bx")),
    ("plural-and-joined", "the password is Zq3!vk58Mn and then reboot", ("Zq3!vk58Mn",)),
    ("plural-and-joined", "无线密码：7KDM Q2XP 9WRT 4HNB", ("7KDM Q2XP 9WRT 4HNB",)),
    ("plural-and-joined", "WiFi 密码：见路由器背面标签", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_12, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_12)]
)
def test_a_form_added_for_the_twelfth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the twelfth set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("the password is Zq3!vk58Mn and then reboot", "Zq3!vk58Mn", "and then reboot"),
        ("密码是 Zq3!vk58Mn 和 admin", "Zq3!vk58Mn", "和 admin"),
        ("build-07.lab.corp  root / Vm3$kq82Tn (team only)", "Vm3$kq82Tn", "build-07.lab.corp  root /"),
        ("AWS Secret Access Key [None]: Wq8rT+u2LmZp0xK7vB3nHc5YdJ9sEa4Fg6Ri1Oz", "Wq8rT+u2", "[None]"),
        ("api secret: 4c7e9a1f 0b3d58e2 9f6a1c47 d2e8b305 (rotated Friday)", "4c7e9a1f", "(rotated Friday)"),
        ("lin_api_Q7mRz2KxTp0LwN4v\nb8YcHs6DjF3gA9eUq1Io\nNextSteps", "b8YcHs6D", "NextSteps"),
    ],
)
def test_the_twelfth_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


def test_the_twelfth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "the PIN I " + "told " * 10000 + "was 1234",
        "password " + "[x] " * 10000,
        "api secret " + "abcd1234 " * 8000,
        "token " + "a" * 40000,
        "密码不是 " + "不是 " * 10000,
        "the password is Zq3!vk58Mn" + " and Lp7#rd21Bx" * 1500,
        "pesel " * 8000,
        "host.corp admin / " * 4000,
        "lin_api_" + "Ab1" * 10000,
        "无线密码：" + "ab1c " * 8000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# The thirteenth set's forms (84/91, 69/70 at first sight) and the twelfth set's leftovers, each with new made-up
# values and wording.
FORM_CASES_13: list[tuple[str, str, tuple[str, ...]]] = [
    # an account / password pair where the text speaks of a way into a machine (ssh, sftp, 跳板机 ...)
    (
        "account-pair-machine",
        "the build vm is back, jenkins / Rt6%wq29Lx , sftp on 2022 as usual",
        ("Rt6%wq29Lx",),
    ),
    ("account-pair-machine", "跳板机还是老样子 root / Gh4&nz71Pq ，别外传", ("Gh4&nz71Pq",)),
    ("account-pair-machine", "ssh into the box, then open admin / settings / users", ()),
    ("account-pair-machine", "服务器配置 root / 2 核 / 4G 内存", ()),
    # a device's lock-screen PIN
    ("lock-screen-pin", "我平板解锁密码是 0719，帮我看看相册", ("0719",)),
    ("lock-screen-pin", "the lock screen passcode is 2580 if you need the phone", ("2580",)),
    ("lock-screen-pin", "锁屏时间是30秒，太短了", ()),
    ("lock-screen-pin", "手机锁屏是2024年新出的功能吗", ()),
    # a value spaced out by OCR as its label is
    ("spaced-ocr-value", "（拍照识别）\n口 令 ： k 8 P r # 2 m Q x\n谢 谢", ("k 8 P r # 2 m Q x",)),
    ("spaced-ocr-value", "p a s s w o r d : W 4 t ! z 9 L q\nF o r g o t ?", ("W 4 t ! z 9 L q",)),
    ("spaced-ocr-value", "密 码 ： 请 在 这 里 输 入", ()),
    ("spaced-ocr-value", "p a s s w o r d : a b c d", ()),
    # an old and a new password, the old one starting with a dot
    (
        "old-new-password",
        "网银密码换了，旧的 .Vr8#kLp2 作废了，新的是 Qz5!mT7wRx",
        (".Vr8#kLp2", "Qz5!mT7wRx"),
    ),
    ("old-new-password", "密码文件改了，旧的 .env.local 不用了", ()),
    ("old-new-password", "the password path changed from ~/.secrets/v2 to ./conf", ()),
    # the rest of a value sent in two messages
    (
        "split-rest",
        "token too long for one message, part one: glpat-Xq72LmBv9Rt4Kw8ZpD1c\nthe rest is: Hn3Ys6Qe0Ju5Fa8Wd",
        ("glpat-Xq72LmBv9Rt4Kw8ZpD1c", "Hn3Ys6Qe0Ju5Fa8Wd"),
    ),
    ("split-rest", "密钥太长分两条发，剩下的是：Pq8Wz2Lm5Tn7Rx4Vb9Kc", ("Pq8Wz2Lm5Tn7Rx4Vb9Kc",)),
    ("split-rest", "the rest of the key rotation plan is on the wiki", ()),
    ("split-rest", "the REST /v1/tokens route returns the key id only", ()),
    # a password label that ends its line, the value alone on the next
    (
        "password-next-line",
        "Router label (OCR)\nSSID: Casa-Lumi-5G\nWPA Passphrase:\nLantern47$vox\nS/N 2231",
        ("Lantern47$vox",),
    ),
    ("password-next-line", "初始密码：\n  Kw9#tq52Ze\n登录后请修改", ("Kw9#tq52Ze",)),
    ("password-next-line", "password:\n  secretKeyRef:\n    name: db", ()),
    ("password-next-line", "Password:\n- at least 12 characters\n- one digit", ()),
    ("password-next-line", "cat ~/.pgpass:\nhost:5432:db:app:*", ()),
    # "credential" (凭据 / 凭证) alone as the label
    (
        "credential-label",
        "Welcome aboard! Login: jdoe. Initial credential: Bx7_qm2LtVw9\nPlease change it.",
        ("Bx7_qm2LtVw9",),
    ),
    ("credential-label", "VPN 账号 liwei，临时凭据：Mn4!sz80Qk，24小时内有效", ("Mn4!sz80Qk",)),
    ("credential-label", "credential: see the shared vault entry", ()),
    ("credential-label", "credential: OAuth2 client, stored at ~/.aws/credentials", ()),
    # a reflexive pronoun after a password label is no value
    ("password-pronoun", "the admin never sees it; users pick the password themselves", ()),
    ("password-pronoun", "reset the PIN yourself in the app", ()),
    # fixed-length vendor keys cut at a line end (set 12's leftover)
    (
        "vendor-key-cut",
        "shopify token (wrapped by the terminal):\nshpat_5e0c9a7b2d4f6183\n9ab7c2e0d4f61835\nthanks",
        ("shpat_5e0c9a7b2d4f6183", "9ab7c2e0d4f61835"),
    ),
    (
        "vendor-key-cut",
        "DO token dop_v1_4b8e2f0a9c7d1e3f5a6b8c0d2e4f\n6a8b0c2d4e6f8a0b1c3d5e7f9a2b4c6d8e0f\nok",
        ("dop_v1_4b8e2f0a9c7d1e3f5a6b8c0d2e4f", "6a8b0c2d4e6f8a0b1c3d5e7f9a2b4c6d8e0f"),
    ),
    (
        "vendor-key-cut",
        "aws_secret_access_key = Zr7Ykq2Lm9Tx4Wv8Bn3Pd6Hs\n1Jf5Qa0Uc2Ge+/oK\n",
        ("Zr7Ykq2Lm9Tx4Wv8Bn3Pd6Hs", "1Jf5Qa0Uc2Ge+/oK"),
    ),
    ("vendor-key-cut", "the shpat_ prefix means an admin API token\nsee the docs", ()),
    ("vendor-key-cut", "tokens look like ghp_****\nrotate them yearly", ()),
    # an identity card's TD1 MRZ, by its check digits (set 12's leftover)
    (
        "td1-mrz",
        "身份证背面识别结果：\nIDNLDSPK7R40B20<<<<<<<<<<<<<<<\n9103052F3109225NLD<<<<<<<<<<<2\nVISSER<<ANNA<<<<<<<<<<<<<<<<<<",
        ("SPK7R40B2", "910305"),
    ),
    (
        "td1-mrz",
        "sample card, check digit wrong:\nI<FRAX4HT82C058<<<<<<<<<<<<<<<\n8507114M2904308FRA<<<<<<<<<<<7\n"
        "MARTIN<<LUC<<<<<<<<<<<<<<<<<<<",
        (),
    ),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_13, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_13)]
)
def test_a_form_added_for_the_thirteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the thirteenth set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("the build vm is back, jenkins / Rt6%wq29Lx , sftp on 2022", "Rt6%wq29Lx", "jenkins /"),
        ("WPA Passphrase:\nLantern47$vox\nS/N 2231", "Lantern47$vox", "S/N 2231"),
        ("口 令 ： k 8 P r # 2 m Q x\n谢 谢", "k 8 P r", "谢 谢"),
        ("Initial credential: Bx7_qm2LtVw9\nPlease change it.", "Bx7_qm2LtVw9", "Please change it."),
        (
            "IDNLDSPK7R40B20<<<<<<<<<<<<<<<\n9103052F3109225NLD<<<<<<<<<<<2\nVISSER<<ANNA",
            "SPK7R40B2",
            "VISSER",
        ),
        ("我平板解锁密码是 0719，帮我看看相册", "0719", "帮我看看相册"),
    ],
)
def test_the_thirteenth_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


def test_the_thirteenth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "登 录 密 码 ： " + "a " * 20000,
        "p a s s w o r d : " + "1 " * 20000 + "x",
        "Passphrase:\n" + "a" * 40000,
        "password:\n" * 8000,
        "credential: " + "a1!" * 10000,
        "credential " * 8000,
        "the rest: " * 5000,
        "剩下的是 " * 8000,
        "锁屏是" * 10000,
        "ssh " + "deploy / " * 4000,
        "aws_secret_access_key = " + "A1/" * 5000 + "\n" + "b" * 30,
        "I<" * 20000,
        ("IDNLD" + "<" * 25 + "\n") * 2000,
        "shpat_" + "a1" * 10000 + "\n",
        "密码改了，旧的 " + ".J3^" * 10000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# The fourteenth set's forms (83/90, 80/80 at first sight; ordinary chat with secrets in passing) and set 13's
# leftovers, each as its family with new made-up values and wording.
FORM_CASES_14: list[tuple[str, str, tuple[str, ...]]] = [
    # a URL's user-info holding what a parser would end the authority at (#, /, ?, @ before the last @)
    (
        "url-userinfo-symbols",
        "the hook posts to https://ci-bot:Maple42#kv@builds.example.org/api/trigger and gets a 401",
        ("Maple42#kv",),
    ),
    (
        "url-userinfo-symbols",
        "redis://cache:Tq8/zr?51@10.20.3.4:6379/2 is what the worker reads",
        ("Tq8/zr?51",),
    ),
    # (the rest after the `#` must go too: the rule for plain user-info would take "Rv3" alone)
    (
        "url-userinfo-symbols",
        "mongodb://svc:Rv3@k#p71@mongo1.internal.lan/app?replicaSet=rs0",
        ("Rv3@k#p71", "k#p71"),
    ),
    (
        "url-userinfo-symbols",
        "拉代码用 https://lin:Jade7#qw2@git.corp.example.cn/team/repo.git 这个地址",
        ("Jade7#qw2",),
    ),
    ("url-userinfo-symbols", "profile at https://social.example.com:8443/users/@mina.k/posts", ()),
    ("url-userinfo-symbols", "http://localhost:5173/#/invite/bob@example.com opens the form", ()),
    ("url-userinfo-symbols", "https://registry.example.com:443/package/@scope/widget", ()),
    # a user / password pair after an account label, words before its colon, in either language
    ("account-label-pair", "预发环境账号给你：qa_wu / Lq5#tz83Vn ，用完说一声", ("Lq5#tz83Vn",)),
    ("account-label-pair", "帳號給你：ops_chen / Zx9?mm24kr", ("Zx9?mm24kr",)),
    ("account-label-pair", "用户名发你了：dev.tan / Hb6!pw40qs", ("Hb6!pw40qs",)),
    (
        "account-label-pair",
        "the staging account for you: qa.lee / Wn3&rc58Tz , no prod please",
        ("Wn3&rc58Tz",),
    ),
    ("account-label-pair", "测试账号如下：\nqa_he / Pd4$xs19Lm", ("Pd4$xs19Lm",)),
    ("account-label-pair", "user: mo.k / Tg7^ln36Wq for the kiosk", ("Tg7^ln36Wq",)),
    ("account-label-pair", "account: billing / invoices", ()),
    ("account-label-pair", "账号在这里：首页 / 设置", ()),
    ("account-label-pair", "account: acme / 2025-Q1", ()),
    # a well-known account / a strongly shaped password between spaced slashes, no login word near
    (
        "known-account-strong-value",
        "the demo box is root / Fern61?lox , rotate after the fair",
        ("Fern61?lox",),
    ),
    ("known-account-strong-value", "for the workshop it's admin / Crane47!bay", ("Crane47!bay",)),
    ("known-account-strong-value", "go to admin / Reports2025 tab", ()),
    ("known-account-strong-value", "admin / v3.2.1-rc1 is tagged", ()),
    # an account outside the list before a spaced slash, with a word of signing in near (set 13's leftover)
    ("any-account-pair", "ssh works again, tanaka / Vw8@pn35ry as before", ("Vw8@pn35ry",)),
    ("any-account-pair", "password reset mail went to mia / mia7@example.org", ()),
    ("any-account-pair", "login issue on iOS / macOS14 only", ()),
    # a pair after a password label, whose rule takes the account as the value
    ("password-label-pair", "the router password: guest01 / Nm4!qz82ws", ("Nm4!qz82ws",)),
    ("password-label-pair", "wifi 密码：visitor / Hp3#vx59kd", ("Hp3#vx59kd",)),
    ("password-label-pair", "password: Kx7#ab20qz / 2 attempts left", ("Kx7#ab20qz",)),
    # a server directive that takes a password, quoted in a sentence in either language
    ("conf-directive-prose", "redis.conf 里加了 masterauth Ql7vRt93zw 之后从库才同步", ("Ql7vRt93zw",)),
    (
        "conf-directive-prose",
        "I put requirepass 'Lm2#fk80qa' in redis.conf and now clients get NOAUTH",
        ("Lm2#fk80qa",),
    ),
    ("conf-directive-prose", "keepalived 的 auth_pass Kd83js2q 两台要一致", ("Kd83js2q",)),
    ("conf-directive-prose", "set requirepass in redis.conf before exposing it", ()),
    ("conf-directive-prose", "masterauth 和 requirepass 要一致吗？", ()),
    ("conf-directive-prose", "redis.conf:\n# see requirepass Abc12345 in the docs", ()),
    # a one-time / authenticator code asked about, or quoted from a text
    ("otp-asked-or-quoted", "动态码是不是 604217 ？我输了两次都不对", ("604217",)),
    ("otp-asked-or-quoted", "the authenticator code should be 318 902, right?", ("318 902",)),
    ("otp-asked-or-quoted", "my mom forwarded the text: 'Your code is 752913' - quick", ("752913",)),
    ("otp-asked-or-quoted", "验证器上现在显示 880421 吗", ("880421",)),
    ("otp-asked-or-quoted", "she texted him the login code, it says 5530, can you type it", ("5530",)),
    ("otp-asked-or-quoted", "验证码有效期是 5 分钟", ()),
    ("otp-asked-or-quoted", "the verification code for order 482917 is late", ()),
    ("otp-asked-or-quoted", "验证码发到尾号 3391 的手机了", ()),
    ("otp-asked-or-quoted", "code review is at 1430 today", ()),
    ("otp-asked-or-quoted", "your code is 2048 lines long", ()),
    # a card's security code after its other names
    ("card-security-code-names", "my Amex for the hotel, the CID is 4419", ("4419",)),
    ("card-security-code-names", "信用卡背面的三位数是 663 ，别发群里", ("663",)),
    ("card-security-code-names", "debit card ok? the number on the back of the card is 208", ("208",)),
    ("card-security-code-names", "the security code is 5190", ("5190",)),
    ("card-security-code-names", "手机背面 4800 万像素", ()),
    ("card-security-code-names", "the number on the back is 911 (the jersey)", ()),
    ("card-security-code-names", "CID 7731 in the crash log", ()),
    ("card-security-code-names", "card security code is 3 digits", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_14, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_14)]
)
def test_a_form_added_for_the_fourteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the fourteenth set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (
            "https://ci-bot:Maple42#kv@builds.example.org/api/trigger",
            "Maple42#kv",
            "@builds.example.org/api/trigger",
        ),
        ("预发环境账号给你：qa_wu / Lq5#tz83Vn ，用完说一声", "Lq5#tz83Vn", "qa_wu /"),
        ("the demo box is root / Fern61?lox , rotate after the fair", "Fern61?lox", "root /"),
        ("redis.conf 里加了 masterauth Ql7vRt93zw 之后从库才同步", "Ql7vRt93zw", "之后从库才同步"),
        ("动态码是不是 604217 ？我输了两次都不对", "604217", "我输了两次都不对"),
        ("my Amex for the hotel, the CID is 4419", "4419", "my Amex for the hotel"),
    ],
)
def test_the_fourteenth_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


def test_the_fourteenth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "https://u:" + "#@a." * 5000,
        "://u:a#x@" * 3000,
        "https://u:p#1@" + "a." * 20000,
        "https://u:p#" + "@" * 20000,
        "redis requirepass " * 5000,
        "requirepass " + "a1" * 20000,
        "账号发你：" * 6000,
        "账号" + "测" * 30000 + "：a / b",
        "the account for you: qa / " * 3000,
        "admin / Ab1!" * 3000,
        "li.wei / " * 8000,
        "password: a / " * 5000,
        "验证码是不是" * 6000,
        "the MFA code should be " * 3000,
        "1234 is your " * 5000,
        "card the code on the back " * 3000,
        "卡背面的" * 10000,
        "security code " * 6000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# The fifteenth set's forms, with new made-up values and wording: secrets and near look-alikes.
FORM_CASES_15: list[tuple[str, str, tuple[str, ...]]] = [
    # a PIN or code said digit by digit: digits or words between spaces, dashes, commas or pauses, either language
    ("pin-digit-by-digit", "for the dog walker: the gate code is 4 0 9 7, then push hard", ("4 0 9 7",)),
    ("pin-digit-by-digit", "ok write it down, pin: 6-1-1-8", ("6-1-1-8",)),
    ("pin-digit-by-digit", "the safe's combo is 3, nine, 0, 5 , don't lose it", ("3, nine, 0, 5",)),
    ("pin-digit-by-digit", "the garage code is 7... 2... 6... 4 , got that?", ("7... 2... 6... 4",)),
    ("pin-digit-by-digit", "门禁密码是 8 5 2 0 6 1，进去以后左转", ("8 5 2 0 6 1",)),
    ("pin-digit-by-digit", "支付密码是 2 7 7 4 0 3 ，别告诉别人", ("2 7 7 4 0 3",)),
    ("pin-digit-by-digit", "the PIN is 5. 0. 8. 3.", ("5. 0. 8. 3",)),
    ("pin-digit-by-digit", "the zip code is 6 0 6 1 4 for the delivery", ()),
    ("pin-digit-by-digit", "error code is 5 0 3 and then 4", ()),
    ("pin-digit-by-digit", "the code is 2.4.1.9 in the changelog", ()),
    ("pin-digit-by-digit", "the pin is 4 to 6 digits long", ()),
    ("pin-digit-by-digit", "final score was 2-1-0-3 after extra time", ()),
    ("pin-digit-by-digit", "密码长度要 8 到 16 位", ()),
    ("pin-digit-by-digit", "the code is 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 in the test vector", ()),
    # recovery / backup code lists after any of their labels, in either language, with any list separator
    (
        "backup-code-list",
        "邮箱的备用验证码记一下：58b1c-0e4a7、d93f2-6c118、70aa5-b2e94",
        ("58b1c-0e4a7", "d93f2-6c118", "70aa5-b2e94"),
    ),
    ("backup-code-list", "恢复代码如下：q7w2e-9r4t1 / z8x3c-5v6b0", ("q7w2e-9r4t1", "z8x3c-5v6b0")),
    ("backup-code-list", "備用驗證碼：4c2d9-a17e0、b6f03-3d5a8", ("4c2d9-a17e0", "b6f03-3d5a8")),
    (
        "backup-code-list",
        "backup verification codes for the bank app: 3k9d-71xq | 8m2p-04ht | 55zr-q1w0",
        ("3k9d-71xq", "8m2p-04ht", "55zr-q1w0"),
    ),
    (
        "backup-code-list",
        "emergency codes for the vault: 61408-27735; 90126-44831",
        ("61408-27735", "90126-44831"),
    ),
    ("backup-code-list", "备用手机号：139-2266-0481", ()),
    ("backup-code-list", "备份策略：每天 01:30、每周六 04:00", ()),
    ("backup-code-list", "备用电源：UPS-2200、UPS-1000", ()),
    ("backup-code-list", "backup plan: v3.1.0 / v3.2.0", ()),
    # a password starting with `$`, told by its shape, not a variable
    (
        "dollar-password",
        "redis.conf 里 masterauth $Walnut83river ，从库连不上",
        ("$Walnut83river",),
    ),
    ("dollar-password", "the new db password is $Copper9927fox", ("$Copper9927fox",)),
    ("dollar-password", "密码是 $Lantern4410owl ，带美元符号", ("$Lantern4410owl",)),
    ("dollar-password", "requirepass $REDIS_PASS in the template", ()),
    ("dollar-password", "DB_PASSWORD=${VAULT_DB_PW}", ()),
    ("dollar-password", "password = $db_password2", ()),
    ("dollar-password", "$pass = $dbPassword;", ()),
    # a setting's name holding a directive's name, then config talk: no secret
    (
        "password-setting-name",
        "Django 的 AUTH_PASSWORD_VALIDATORS 里 UserAttributeSimilarityValidator 的 max_similarity 设 0.5 行吗",
        (),
    ),
    ("password-setting-name", "the auth_password_validators list needs NumericPasswordValidator too", ()),
    ("password-setting-name", "keepalived 的 auth_pass_type 我改成 PASS 了", ()),
    ("password-setting-name", "bindpw_file points at /etc/nslcd.secret now", ()),
    ("password-setting-name", "slapd 里 rootpw_hash 用 SSHA 吗", ()),
    ("password-setting-name", "redis.conf 里requirepass Pine7730cone，重启后生效", ("Pine7730cone",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_15, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_15)]
)
def test_a_form_added_for_the_fifteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the fifteenth set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("for the dog walker: the gate code is 4 0 9 7, then push hard", "4 0 9 7", ", then push hard"),
        ("门禁密码是 8 5 2 0 6 1，进去以后左转", "8 5 2 0 6 1", "门禁密码是"),
        ("邮箱的备用验证码记一下：58b1c-0e4a7、d93f2-6c118", "d93f2-6c118", "邮箱的备用验证码记一下："),
        ("redis.conf 里 masterauth $Walnut83river ，从库连不上", "$Walnut83river", "，从库连不上"),
    ],
)
def test_the_fifteenth_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


# A PIN said digit by digit goes whole: a label's rule took its first digit alone and left the rest
# ("支付密码是 [REDACTED] 7 7 4 0 3").
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("支付密码是 2 7 7 4 0 3 ，别告诉别人", "支付密码是 [REDACTED:password] ，别告诉别人"),
        ("门禁密码是 8 5 2 0 6 1，进去以后左转", "门禁密码是 [REDACTED:password]，进去以后左转"),
        ("the PIN is 5. 0. 8. 3. ok", "the PIN is [REDACTED:password]. ok"),
        ("my password is 9 9 0 4 1 7 2 6", "my password is [REDACTED:password]"),
    ],
)
def test_a_pin_said_digit_by_digit_goes_whole(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_the_fifteenth_sets_rules_stay_linear_on_texts_made_to_backtrack() -> None:
    texts = [
        "the pin is " + "1 " * 20000,
        "the pin is " + "1 2 3 " * 5000 + "digits",
        "code is " * 5000 + "1, 2, 3",
        "the code is " + "8... " * 10000,
        "密码是 " + "3 " * 20000 + "位",
        "postal code is 1 2 3 4 " * 3000,
        "备用验证码：" * 6000,
        "backup verification codes: " + "ab1-" * 10000,
        "备用验证码：" + "a1b2c-、" * 5000,
        "requirepass $" + "Ab1" * 10000,
        "AUTH_PASSWORD_" * 5000,
    ]
    for text in texts:
        started = time.perf_counter()
        out = redact(text)
        assert time.perf_counter() - started < 2.0, text[:40]
        assert redact(out) == out


# The sixteenth set's forms, with new made-up values and wording: secrets and near look-alikes.
_HOOK16A = "https://discord.com/api/webhooks/9524942525575376972/uDmNy1rJqDGN0jeFfiWaQuk3ew_3JDC0SkUaaGv9XVVstRZ4U-ElkoAlsVeTMR76QyPX"
_HOOK16B = (
    "https://canary.discordapp.com/api/v10/webhooks/1470519324262008461/"
    "tdthRADjjRg7Ur9V5UFE2lpYt_P2Ak6ffE6gcc6IWQYATxeVWMoIiHpSyrSdDdlg-5Z2"
)
FORM_CASES_16: list[tuple[str, str, tuple[str, ...]]] = [
    # a code list after its label: every item of one shape, codes of letters only among them, any separator
    (
        "code-list-letters-only",
        "the gitlab recovery codes, stash them somewhere:\nhqzt-wmkd\n7c2x-p9ne\nbvrl-tqsy\nk4mf-0wd8\n",
        ("hqzt-wmkd", "7c2x-p9ne", "bvrl-tqsy", "k4mf-0wd8"),
    ),
    (
        "code-list-letters-only",
        "恢复码如下：\nxkcd-prvw\nm3q8-zt1h\nfjwu-ybne\n2ra7-cx0v",
        ("xkcd-prvw", "m3q8-zt1h", "fjwu-ybne", "2ra7-cx0v"),
    ),
    (
        "code-list-letters-only",
        "backup codes: wqpe-htrz, 51kd-9xmv, 0zpa-r7tu",
        ("wqpe-htrz", "51kd-9xmv", "0zpa-r7tu"),
    ),
    (
        "code-list-one-shape",
        "微信的备用验证码：36019274 88412075 19073346 70258813，收好",
        ("36019274", "88412075", "19073346", "70258813"),
    ),
    (
        "code-list-one-shape",
        "备用登录码：52918830、40063179、91735524",
        ("52918830", "40063179", "91735524"),
    ),
    (
        "code-list-one-shape",
        "the apple backup codes are: 60391827 | 17740259 | 83306614",
        ("60391827", "17740259", "83306614"),
    ),
    # kept: a list's neighbours of its shape that are prose, and lists that are no codes
    (
        "code-list-letters-only",
        "recovery codes:\nab71-cd93\nef24-gh58\nread-only copies are in the safe",
        ("ab71-cd93", "ef24-gh58"),
    ),
    ("code-list-letters-only", "recovery codes: see the wiki page and ping-pong with IT", ()),
    ("code-list-one-shape", "备用方案：周三 10:30、周五 14:00", ()),
    ("code-list-one-shape", "backup plan: v4.2.0 / v4.3.1", ()),
    # a webhook URL whose token ends at CJK punctuation, or anything else not of its alphabet
    ("webhook-cjk-boundary", f"告警用这个 webhook：{_HOOK16A}，记得别公开", (_HOOK16A,)),
    ("webhook-cjk-boundary", f"（{_HOOK16B}）这个是测试频道的", (_HOOK16B,)),
    ("webhook-cjk-boundary", f"the channel hook is {_HOOK16A}. rotate it monthly", (_HOOK16A,)),
    (
        "webhook-cjk-boundary",
        "discord 的文档在 https://discord.com/developers/docs/resources/webhook ，看一下",
        (),
    ),
    ("webhook-cjk-boundary", "webhook 路径形如 discord.com/api/webhooks/<id>/<token>。", ()),
    # an account label, an e-mail address as the account, ` / `, a password of letters and digits
    (
        "email-account-pair",
        "- trial account: reviewer@shopdemo.net / qingfeng2031\n- next sync Friday",
        ("qingfeng2031",),
    ),
    ("email-account-pair", "测试账号：qa.lead@corp-test.cn / tester8842，用完改掉", ("tester8842",)),
    (
        "email-account-pair",
        "login for the staging site is ops@northwind.dev / marble77stone",
        ("marble77stone",),
    ),
    ("email-account-pair", "account: billing@acme.io / v2.4.1 release notes", ()),
    ("email-account-pair", "user carol@corp.com / 2025-03-14 onboarding", ()),
    ("email-account-pair", "contact: dave@corp.com / 555-0142", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_16, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_16)]
)
def test_a_form_added_for_the_sixteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# Next to a secret of the sixteenth set's forms, what is no secret stays.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (f"告警用这个 webhook：{_HOOK16A}，记得别公开", _HOOK16A, "，记得别公开"),
        ("微信的备用验证码：36019274 88412075，收好", "88412075", "，收好"),
        (
            "recovery codes:\nab71-cd93\nef24-gh58\nread-only copies are in the safe",
            "ef24-gh58",
            "read-only copies",
        ),
        ("测试账号：qa.lead@corp-test.cn / tester8842，用完改掉", "tester8842", "qa.lead@corp-test.cn / "),
    ],
)
def test_the_sixteenth_sets_rules_keep_what_stands_next_to_the_secret(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out


# A per-mention forward scan (a tool named, then its password flag looked for) must be bounded: 3,000 copies of
# "zip code is 1 2 3 4 " on one line took about 6 s, each "zip" scanning to the line's end for `-P`. So must a
# rule that takes one more partner each time it is rerun ("账号 a / b / c / ...": 5,000 pairs took about 4 s).
# Four times the input must cost about four times the time, not sixteen.
@pytest.mark.parametrize(
    ("prefix", "unit"),
    [
        ("", "zip code is 1 2 3 4 "),
        ("", "mysql is fine "),
        ("", "curl to the site "),
        ("", "docker login now "),
        ("", "openssl speed "),
        ("账号 ", "x@y.cn / "),
    ],
)
def test_the_command_line_rules_stay_linear_in_their_mentions(prefix: str, unit: str) -> None:
    def best(n: int) -> float:
        text = prefix + unit * n
        times = []
        for _ in range(2):
            started = time.perf_counter()
            redact(text)
            times.append(time.perf_counter() - started)
        return min(times)

    small, large = best(1000), best(4000)
    assert large / small <= 8, (unit, small, large)


FORM_CASES_17: list[tuple[str, str, tuple[str, ...]]] = [
    # Go's MySQL DSN, user:pass@protocol(address)/db, no scheme; the template stays
    (
        "go-mysql-dsn",
        'dsn := "svc_report:Wq8tNv3pLs@tcp(db-02.internal:3306)/metrics?parseTime=true"',
        ("Wq8tNv3pLs",),
    ),
    (
        "go-mysql-dsn",
        "连不上库，配置里写的 app:Hy6#rT@2k@unix(/run/mysqld/mysqld.sock)/orders",
        ("Hy6#rT@2k",),
    ),
    ("go-mysql-dsn", 'sql.Open("mysql", "user:password@tcp(127.0.0.1:3306)/dbname")', ()),
    ("go-mysql-dsn", "the format is user:pass@tcp(host:port)/db, see the driver README", ()),
    # an account pair whose generated password has no digit (and may start with a symbol)
    ("pw-pair-no-digit", "grafana creds till Monday: night-ops / %Kd&uWq=ZrTb", ("%Kd&uWq=ZrTb",)),
    ("pw-pair-no-digit", "登录账号 build-bot / +mQe*XvLa!Hp，别外传", ("+mQe*XvLa!Hp",)),
    ("pw-pair-no-digit", "sign in to the wiki: R&D / Q&A pages", ()),
    # a parcel pickup code opens its locker
    ("parcel-pickup-code", "丰巢取件码 735102，放在二号柜，你顺路拿一下", ("735102",)),
    ("parcel-pickup-code", "驿站提货码是8841，晚上九点前", ("8841",)),
    ("parcel-pickup-code", "your parcel locker code is 60927, valid for 48 hours", ("60927",)),
    ("parcel-pickup-code", "pickup code: 3315 at the front desk", ("3315",)),
    ("parcel-pickup-code", "取件码是 6 位数字，短信里会发", ()),
    ("parcel-pickup-code", "取件码发到尾号 7720 的手机上了", ()),
    # any grouping of a card after its label: issuer and checksum decide
    ("card-any-grouping", "工资卡卡号：6217 003812045573，发工资用这个", ("6217 003812045573",)),
    ("card-any-grouping", "card number is 520498-7133046178, exp 09/28", ("520498-7133046178",)),
    ("card-any-grouping", "储蓄卡 62284803-1627579040 收款", ("62284803-1627579040",)),
    ("card-any-grouping", "order no. 520498-7133046178 shipped", ()),
    ("card-any-grouping", "卡号是 6217-0038-1204-5574 吗？好像输错了", ()),
    # the decoded value of a password told in prose right after it
    (
        "decoded-value-prose",
        "data:\n  password: VHE4NHZMbTJ4Wg==\nwhich decodes to Tq84vLm2xZ as expected",
        ("VHE4NHZMbTJ4Wg==", "Tq84vLm2xZ"),
    ),
    (
        "decoded-value-prose",
        "DB_PASSWORD: cjNrUTl2Wm0=\nbase64 解出来是 r3kQ9vZm，对吧",
        ("cjNrUTl2Wm0=", "r3kQ9vZm"),
    ),
    (
        "decoded-value-prose",
        "password: aHVudGVyMg==\nthe file decodes to JSON without errors",
        ("aHVudGVyMg==",),
    ),
    # a count of password events is no value
    ("password-event-count", "account frozen after 3 failed password attempts, reset by helpdesk", ()),
    ("password-event-count", "user jdoe had 12 password retries, then a lockout", ()),
    ("password-event-count", "the username field is fine; 4 password failures today", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_17, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_17)]
)
def test_a_form_added_for_the_seventeenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The seventeenth set's new rules scan from a run's start with a bounded reach (the Go DSN), read a label's few
# characters before a digit run (cards), or read the line after a mark (decoded values): four times the input
# costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "a:b:c:d@tcp ",
        "x" * 40 + ":" + "y" * 40 + "@udp ",
        "卡号 1234-5 ",
        "password: aGVsbG8= decodes to ",
        "取件码 12 ",
        "u / =aB*cD ",
    ],
)
def test_the_seventeenth_sets_rules_stay_linear(unit: str) -> None:
    def best(n: int) -> float:
        text = unit * n
        times = []
        for _ in range(2):
            started = time.perf_counter()
            redact(text)
            times.append(time.perf_counter() - started)
        return min(times)

    small, large = best(500), best(2000)
    assert large / small <= 8, (unit, small, large)


# The eighteenth set (107/113, 97/100 at first sight: a password printed by `kubectl ... | base64 -d` on the next
# line, a Wi-Fi QR payload's P: field, pickup codes 取餐码 and a 驿站 shelf code, a password piped into
# --password-stdin, an app password "for <host:port> is"; broken: an SSH public key after "deploy keys：", a
# parenthesised status word then a list dash, a count "5次"). New made-up values.
FORM_CASES_18: list[tuple[str, str, tuple[str, ...]]] = [
    # a command that prints a secret: the next line's lone token is its output
    (
        "printed-by-command",
        "kubectl -n prod get secret api-keys -o jsonpath='{.data.token}' | base64 --decode\nVb3_kPq9=Lm2Rw\nstill 401",
        ("Vb3_kPq9=Lm2Rw",),
    ),
    ("printed-by-command", "$ pass show infra/grafana-admin\nGr4f#na_Olw7\n怎么改掉它", ("Gr4f#na_Olw7",)),
    ("printed-by-command", "vault kv get -field=db_pass kv/app\nHx8!tYq2Zw", ("Hx8!tYq2Zw",)),
    ("printed-by-command", "echo aGVsbG8gd29ybGQ= | base64 -d\nhello world", ()),
    ("printed-by-command", "kubectl get secret tls -o yaml | base64 -d\nerror: illegal base64 data", ()),
    # a Wi-Fi QR payload: the P: field
    (
        "wifi-qr-payload",
        "QR says WIFI:S:Guest-Lounge;T:WPA;P:mZ7&uQ2ercV;; can you join it",
        ("mZ7&uQ2ercV",),
    ),
    ("wifi-qr-payload", "二维码：WIFI:T:nopass;S:Library-Free;P:;;", ()),
    ("wifi-qr-payload", "the format is WIFI:T:WPA;S:<ssid>;P:<password>;;", ()),
    # pickup codes: 取餐码, a shelf code of dash-joined groups after a pickup label
    ("pickup-code", "取餐码 8841，放前台了", ("8841",)),
    ("pickup-code", "驿站取件码 14-3-7720 记一下", ("14-3-7720",)),
    ("pickup-code", "包裹在 14-3 货架，取件码还没发", ()),
    ("pickup-code", "pin 2025-03-14 was the release date", ()),
    # a password piped into any --password-stdin
    (
        "password-stdin",
        'echo "Tn5@qLw8Rz" | podman login quay.io -u robot --password-stdin',
        ("Tn5@qLw8Rz",),
    ),
    ("password-stdin", "echo $REGISTRY_TOKEN | docker login ghcr.io -u me --password-stdin", ()),
    ("password-stdin", "cat ~/.token | docker login --password-stdin", ()),
    # a host's port inside "for <host:port>": no colon connector
    (
        "host-port-qualifier",
        "the app password for imap.mail.me:993 is qvzrkwpoahxnbsle ok",
        ("qvzrkwpoahxnbsle",),
    ),
    ("host-port-qualifier", "the password for redis.internal:6379 isn't set", ()),
    # SSH public keys: the algorithm name and body are never values
    (
        "ssh-public-key",
        "deploy key: ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7xq9Lm2Rw ci@build",
        (),
    ),
    (
        "ssh-public-key",
        "加到 deploy keys：ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKq7Vb3ZpLm2Rw9xT4n build@runner",
        (),
    ),
    ("ssh-public-key", "部署 key：ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY ops@box", ()),
    # a parenthesised status word ends a label's reach
    ("status-paren", "Todo: - rotate the VPN password (done) - Maria to update docs", ()),
    ("status-paren", "- Wi-Fi password (pending) - Ahmed to ask IT", ()),
    # a number followed by 次 / 回 / 遍 / times is a count
    ("count-after", "密码输错3次就锁卡", ()),
    ("count-after", "连续输错密码7次，今天不能再试了", ()),
    ("count-after", "the pin 3 times wrong locks the card", ()),
    ("count-after", "密码是 8812，别告诉别人", ("8812",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_18, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_18)]
)
def test_a_form_added_for_the_eighteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The eighteenth set's new rules read from a line's start with a bounded reach (a printing command), a bounded
# run of QR fields, or a bounded run of a command's arguments (--password-stdin): four times the input costs
# about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "a | base64 -d x\n",
        "pass show a/b\n",
        "WIFI:T:WPA;S:x;",
        "echo a | docker login x y z ",
        "取件码 1-2-",
        "password for a.b:80 ",
    ],
)
def test_the_eighteenth_sets_rules_stay_linear(unit: str) -> None:
    def best(n: int) -> float:
        text = unit * n
        times = []
        for _ in range(2):
            started = time.perf_counter()
            redact(text)
            times.append(time.perf_counter() - started)
        return min(times)

    small, large = best(500), best(2000)
    assert large / small <= 8, (unit, small, large)


# ---------------------------------------------------------------- forms added for the nineteenth hold-out set

# Each form the nineteenth set showed missing, with made-up values and wording (none from the set): secrets that must
# go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike.
FORM_CASES_19: list[tuple[str, str, tuple[str, ...]]] = [
    # a SIM card's PUK is a PIN label
    ("sim-puk", "手机卡锁了，PUK码 40718235，先帮我记着", ("40718235",)),
    ("sim-puk", "Locked SIM: PUK1 is 61029384, PUK2 is 55820147", ("61029384", "55820147")),
    ("sim-puk", "PUK 连续输错 10 次 SIM 卡就作废", ()),
    ("sim-puk", "where do I find the PUK for my eSIM?", ()),
    # a lock's code with a "for the ..." qualifier before its verb
    (
        "lock-code-qualifier",
        "btw the keypad code for the storage unit is 8830, text me when you're in",
        ("8830",),
    ),
    ("lock-code-qualifier", "the alarm code at the lake house was 1967 last summer", ("1967",)),
    ("lock-code-qualifier", "the door code for room 2207 is on the whiteboard", ()),
    ("lock-code-qualifier", "the garage code for the old place was changed last year", ()),
    # a verb then 的 (是) as the connector, a password-shaped value only
    (
        "verb-de-connector",
        "阿里云 AccessKey Secret 我配的是 Wq8rT2mZpL0cVb7nXa4eHs9K，还是报签名错误",
        ("Wq8rT2mZpL0cVb7nXa4eHs9K",),
    ),
    ("verb-de-connector", "数据库密码，我们之前填的是 Qiao#lin2291，现在连不上", ("Qiao#lin2291",)),
    ("verb-de-connector", "redis 的 password 刚改的 58104473，记一下", ("58104473",)),
    ("verb-de-connector", "密码用的是 bcrypt 哈希，不是明文", ()),
    ("verb-de-connector", "密钥存的是 KMS 里那把", ()),
    ("verb-de-connector", "token 用的是 JWT，过期时间 2 小时", ()),
    # "'s" for "is" after a label (8+ characters, password-shaped: the possessive is prose)
    ("apostrophe-s", "fyi the router admin password's Pl8ntain-77 until Friday", ("Pl8ntain-77",)),
    ("apostrophe-s", "the password's sha512 digest is stored, not the value", ()),
    ("apostrophe-s", "the password's expiry is 90 days", ()),
    ("apostrophe-s", "check the token's scopes before you merge", ()),
    # a short variable bound to an argument is code
    (
        "argument-variable",
        "    return check(login=usr, password=pw)\nNameError: name 'pw' is not defined",
        (),
    ),
    ("argument-variable", "const creds = { user: u, pwd: s };", ()),
    ("argument-variable", "db.connect(user='app', password=rq7)", ("rq7",)),
    # a phone number as the account of a ' / ' pair
    ("phone-account-pair", "铁路 app 账号 13712340987 / zhaomin8812，帮我看看", ("zhaomin8812",)),
    ("phone-account-pair", "login: +1 415 555 0134 / sunset4471 for the pharmacy portal", ("sunset4471",)),
    ("phone-account-pair", "账号 13712340987 / 2025-03-01 注册的", ()),
    ("phone-account-pair", "call 13712340987 / 13598760021 for pickup", ()),
    # a backup code printed as two groups of four digits is one item of the list
    (
        "backup-codes-spaced",
        "Google 备用验证码：3381 9042、7719 2286、0458 6613",
        ("3381 9042", "7719 2286", "0458 6613"),
    ),
    (
        "backup-codes-spaced",
        "backup codes (each works once): 5521 0873, 6690 1142",
        ("5521 0873", "6690 1142"),
    ),
    ("backup-codes-spaced", "backup codes: 1024 2048 4096 are not block sizes", ()),
    ("backup-codes-spaced", "备用码在 app 里，客服电话 4008 8888", ()),
    # the MinIO client's positional keys
    (
        "mc-alias-keys",
        "mc alias set nas https://minio.home.arpa:9000 K7PZ2QW9XRM4TT1LNA0D 'hV9q/Tz2+mW8pLr0XkB3sYc5NdE7aJf1Gu4iOe6R'",
        ("K7PZ2QW9XRM4TT1LNA0D", "hV9q/Tz2+mW8pLr0XkB3sYc5NdE7aJf1Gu4iOe6R"),
    ),
    (
        "mc-alias-keys",
        "跑 mcli config host add bk http://10.9.8.7:9000 BK81VQZ0MX2 Zq7#mPw2Lr9xTt 报错",
        ("BK81VQZ0MX2", "Zq7#mPw2Lr9xTt"),
    ),
    ("mc-alias-keys", "mc alias set dev http://127.0.0.1:9000 minioadmin minioadmin", ()),
    ("mc-alias-keys", "mc alias set prod https://s3.corp.io $MINIO_ROOT_USER $MINIO_ROOT_PASSWORD", ()),
    ("mc-alias-keys", "mc alias set prod https://s3.corp.io --api S3v4 --path on", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_19, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_19)]
)
def test_a_form_added_for_the_nineteenth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The nineteenth set's new rules read a bounded qualifier (a lock code's "for the ..."), a bounded connector (a verb
# and 的, "'s"), a bounded account before a slash (a phone number) or a command's bounded arguments (mc alias set):
# four times the input costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "password's a1b2c3d4 ",
        "密码我填的是 a1b2c3d4 ",
        "gate code for a b c d ",
        "PUK 1234 ",
        "mc alias set a http://b c d ",
        "account 137 0000 1111 / ",
        "backup codes: 1234 5678 ",
        "f(password=p, ",
    ],
)
def test_the_nineteenth_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twentieth hold-out set

# Each form the twentieth set showed missing, with made-up values and wording (none from the set): secrets that must
# go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike.
FORM_CASES_20: list[tuple[str, str, tuple[str, ...]]] = [
    # a password changed with an arrow between the old value and the new
    (
        "change-arrow",
        "rotated the NAS pw: Kelp#4471dune -> Wq9!marsh20T, pls update the wiki",
        ("Kelp#4471dune", "Wq9!marsh20T"),
    ),
    ("change-arrow", "改了路由器密码 Tg7$river88 → Plum*3021sky", ("Tg7$river88", "Plum*3021sky")),
    ("change-arrow", "reset my pw, new: Kq8!vrta22 (same for the laptop)", ("Kq8!vrta22",)),
    ("change-arrow", "changed the password hashing: bcrypt → argon2id", ()),
    ("change-arrow", "password policy updated: min length 8 -> 12", ()),
    # a seed phrase whose label's sentence ends its line with a question, the words numbered below
    (
        "seed-numbered",
        "is this mnemonic valid?\n1) cable\n2) orange\n3) velvet\n4) humble\n5) tiger\n6) ripple\n"
        "7) spoon\n8) badge\n9) lunar\n10) fossil\n11) meadow\n12) kettle",
        (
            "cable",
            "orange",
            "velvet",
            "humble",
            "tiger",
            "ripple",
            "spoon",
            "badge",
            "lunar",
            "fossil",
            "meadow",
            "kettle",
        ),
    ),
    ("seed-numbered", "what is a seed phrase?\nIt is a list of words that can restore a wallet.", ()),
    # backup codes in two columns, the account's address between the heading and the codes
    (
        "backup-codes-columns",
        "Recovery codes\nli.mei@example.org\n\n4410 9275    8812 0346\n2093 5518    7761 4402\n",
        ("4410 9275", "8812 0346", "2093 5518", "7761 4402"),
    ),
    ("backup-codes-columns", "Backup codes\nsupport@example.org\n\nCall us any time.", ()),
    # a PIN in brackets after its label
    ("pin-brackets", "my daughter's debit card PIN (7302) keeps slipping her mind", ("7302",)),
    ("pin-brackets", "银行卡密码（610482），别告诉别人", ("610482",)),
    ("pin-brackets", "the card PIN (4 digits) is set at the branch", ()),
    ("pin-brackets", "PIN (see the letter from the bank) arrives separately", ()),
    # an archiver's password glued to its -p switch
    ("archive-p", "7za a -pLinden#5520 taxes-2024.7z ~/Documents/taxes", ("Linden#5520",)),
    ("archive-p", 'unrar x -p"Qw7-harbour!" photos.rar', ("Qw7-harbour!",)),
    ("archive-p", "7z a -p backup.7z docs/  # it asks for the password", ()),
    ("archive-p", "rar a -p- -m5 notes.rar notes/", ()),
    # French mdp as a password label
    ("mdp", "wifi du salon : Freebox-9A31, mdp = Cerise!4408plage", ("Cerise!4408plage",)),
    ("mdp", "le mdp de la box est Noyer_7712vent", ("Noyer_7712vent",)),
    ("mdp", "MDP: states S, actions A, transition P", ()),
    ("mdp", "the MDP is solved by value iteration", ()),
    # a lone 密 as the handwritten abbreviation of 密码
    ("mi-abbrev", "前台便签：WiFi CoffeeHouse_5G / 密 mk72ppzq", ("mk72ppzq",)),
    ("mi-abbrev", "账 guest01，密：Lz83kw21", ("Lz83kw21",)),
    ("mi-abbrev", "这份文件要保密 abc12345 是编号", ()),
    ("mi-abbrev", "密 度 2.7 g/cm3", ()),
    # a mail service's SMTP authorization code
    ("mail-authcode", "163 邮箱 SMTP 授权码 qwmzhtkpeobxnrla 填进 Outlook 还是不行", ("qwmzhtkpeobxnrla",)),
    ("mail-authcode", "授权码过期了怎么重新生成？", ()),
    ("mail-authcode", "授权码 expired 了", ()),
    # a verb of setting with for whom before it
    ("for-whom-verb", "爸的取款密码，我帮他设的是 480215，别外传", ("480215",)),
    ("for-whom-verb", "密码我给她设的是 bcrypt 哈希", ()),
    # the code first, with a sender's long name before "code"
    (
        "code-first-far",
        "got this: 730914 is your Riverside Community Credit Union verification code. Don't share it.",
        ("730914",),
    ),
    ("code-first-far", "2024 is your year, says the Riverside Community Credit Union ad code", ()),
    # a Wi-Fi network / password pair after a space only
    ("wifi-pair-space", "- Wifi Maple_Lodge-5G / copper-lantern-61\n- Checkout 11am", ("copper-lantern-61",)),
    ("wifi-pair-space", "wifi router / mesh-node-2024", ()),
    ("wifi-pair-space", "Wi-Fi 6 / 6E support on this laptop?", ()),
    ("wifi-pair-space", "wifi WPA2 / WPA3-Personal both work", ()),
    # a well-known account / a word, digits and a word
    ("account-pair-joined", "jenkins is still root / Harbor_2231lime on the old box", ("Harbor_2231lime",)),
    ("account-pair-joined", "admin / Users2024 tab", ()),
    ("account-pair-joined", "admin / v2.3.1 release", ()),
    # a password in brackets a few words after its label
    (
        "pw-in-brackets",
        "the vpn password hasn't changed (Juniper#6610, all lower case) right?",
        ("Juniper#6610",),
    ),
    ("pw-in-brackets", "数据库密码还是老的（Qm#2207lake）", ("Qm#2207lake",)),
    ("pw-in-brackets", "password hashing is configured (Argon2id, m=64MB)", ()),
    ("pw-in-brackets", "the password rules (min 12 chars, 1 symbol) are strict", ()),
    # an ARN after "User:" is a resource's name
    (
        "arn-kept",
        "User: arn:aws:iam::418273645501:user/ci-bot is not authorized to perform: sts:AssumeRole",
        (),
    ),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_20, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_20)]
)
def test_a_form_added_for_the_twentieth_holdout_set(form: str, text: str, secrets: tuple[str, ...]) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twentieth set's new rules read a bounded run (a change's arrow, a label's few words before a bracket, a lone 密,
# 16 letters after 授权码, a code and a sender's name of up to four words before "code", a network's name before a
# slash, an archiver's switch): four times the input costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "pw a1b2c3d4 -> ",
        "password is a b c (",
        "密 ",
        "授权码 ",
        "123456 is your a b c ",
        "wifi Ab-1 / ",
        "7z a -p",
        "mdp ",
        "root / a12bc ",
    ],
)
def test_the_twentieth_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-first hold-out set

# Each form the twenty-first set (ordinary conversation) showed missing, with made-up values and wording (none from
# the set): secrets that must go and near misses that must come back unchanged. (form, text, secrets); no secrets =
# a look-alike.
FORM_CASES_21: list[tuple[str, str, tuple[str, ...]]] = [
    # a security question's answer, named with its question or told with a verb
    (
        "security-answer",
        "the bank made me pick security questions: first car = Corolla, maiden name: Abernathy",
        ("Corolla", "Abernathy"),
    ),
    (
        "security-answer",
        "Security question was my childhood best friend and I answered 'Marisol' I think",
        ("Marisol",),
    ),
    ("security-answer", "设置密保问题的时候，父亲的姓名——赵建国，初中名称：城关中学", ("赵建国", "城关中学")),
    ("security-answer", "那个安全问题问宠物名字，我当时写的是 Biscuit", ("Biscuit",)),
    ("security-answer", "security question: what was your first car? I can't remember what I set", ()),
    ("security-answer", "my first car was a lemon, honestly", ()),
    ("security-answer", "密保问题忘了，母亲的姓名那一项我填的是错的吗？", ()),
    # a card's expiry date after the card
    (
        "card-expiry",
        "use the visa 4539 1488 0343 6467 valid thru 09/29 for the deposit",
        ("4539 1488 0343 6467", "09/29"),
    ),
    ("card-expiry", "卡号 4539148803436467，到期 11/30，帮我填一下", ("4539148803436467", "11/30")),
    ("card-expiry", "card ending 6467 was charged on 09/29 for the deposit", ()),
    ("card-expiry", "my passport expires 09/29, do I need to renew before the trip?", ()),
    # misspelt and slang password labels
    ("pw-misspelt", "the pasword for the library site is Orchid7731!", ("Orchid7731!",)),
    ("pw-misspelt", "passwrd: Zq4#tulip88 for the shared folder", ("Zq4#tulip88",)),
    ("pw-misspelt", "我家路由器的蜜码是 Kx82!lamp，别告诉别人", ("Kx82!lamp",)),
    ("pw-misspelt", "路由器mm改成了 pine@5531", ("pine@5531",)),
    ("pw-misspelt", "这个零件是12mm的，那个是8mm", ()),
    ("pw-misspelt", "I keep typing pasword instead of password, any spell check tips?", ()),
    # a password in two parts
    (
        "pw-halves",
        "the router pw was too long to text: first half Gq7$mo\nsecond half 2Lk!rt",
        ("Gq7$mo", "2Lk!rt"),
    ),
    ("pw-halves", "the first half of the match was 2-1, second half went badly", ()),
    # a code spelled out in words
    ("code-in-words", "garage door code? it's two nine oh six, hit enter after", ("two nine oh six",)),
    ("code-in-words", "快递柜取件码是三九二零五八，帮我取一下", ("三九二零五八",)),
    ("code-in-words", "the code review took one or two hours, three at most", ()),
    ("code-in-words", "他把密码的事一五一十地告诉了我", ()),
    # a code before its label
    ("code-first", "48213 is the door code for the side entrance, ring if it fails", ("48213",)),
    ("code-first", "（6620）←信箱的密码，别外传", ("6620",)),
    ("code-first", "90210 is the zip code, not a door code", ()),
    ("code-first", "40401 is the error code the app shows", ()),
    ("code-first", "12345 <- 这是错误 code 吗", ()),
    # a door, gate or lock code told to a visitor
    ("visitor-code", "Guests: 单元门 code 7402，then take the lift to 9", ("7402",)),
    ("visitor-code", "keypad lock set. code for the plumber: 551820, ring first", ("551820",)),
    ("visitor-code", "the gate code changed last week, ask the office", ()),
    ("visitor-code", "promo code for the new users: 2024SPRING", ()),
    ("visitor-code", "error code for the tech: 50013", ()),
    # a meeting's passcode
    ("meeting-passcode", "Teams meeting at 3, ID 482 119 0037 passcode rhQwtz", ("rhQwtz",)),
    ("meeting-passcode", "the zoom meeting passcode is required for everyone", ()),
    # a memorable word
    ("memorable-word", "my memorable word is lighthouse, is that weak?", ("lighthouse",)),
    ("memorable-word", "what is a memorable word and why does the bank want one?", ()),
    # a seed phrase after a loose label
    (
        "seed-loose",
        "the support guy wanted my phrase, I pasted: ocean timber liquid maple gravel cousin robot velvet pencil kidney",
        ("ocean timber liquid maple gravel cousin robot velvet pencil kidney",),
    ),
    (
        "seed-loose",
        "a nice phrase from the book: when the river is wide the boat goes slow and the men are tired",
        (),
    ),
    # a wallet key as 0x and hex where a private key is named
    (
        "wallet-key-0x",
        "MetaMask wants the private key, here it is: 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        ("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",),
    ),
    (
        "wallet-key-0x",
        "not the private key, just the tx hash 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        (),
    ),
    # a 口令 of Chinese characters and digits
    ("kouling-word", "今晚活动口令：青松2087，进门时说", ("青松2087",)),
    ("kouling-word", "口令：见群公告", ()),
    # a corrected PIN
    ("pin-corrected", "her PIN is 8205, wait no, I mean 3394", ("8205", "3394")),
    # a code read out to a caller
    ("otp-told", "银行的人让我念验证码，我就报了 730214，是不是被骗了", ("730214",)),
    ("otp-told", "the caller asked for the OTP but I told him nothing", ()),
    # backup codes on the lines under a long heading sentence
    (
        "codes-long-heading",
        "my bank's recovery codes, the ones I have not used yet I think, please keep them safe for me:\n8841 2093\n5520 7716\n",
        ("8841 2093", "5520 7716"),
    ),
    ("codes-long-heading", "backup codes? the receipt said\nTotal 1200\nTax 96", ()),
    # a password given by a named person
    ("pw-relative-noun", "the password the landlord sent was Harbor!7714", ("Harbor!7714",)),
    ("pw-relative-noun", "the password the site requires is too long", ()),
    # a policy's length, a bracketed word, a reuse confession
    ("policy-kept", "新密码要求 10-20 位，区分大小写", ()),
    ("policy-kept", "any tips for a strong one (not my real password obviously)?", ()),
    ("policy-kept", "I reuse the same password everywhere, is that bad?", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_21, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_21)]
)
def test_a_form_added_for_the_twenty_first_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twenty-first set's new rules read a bounded run (a question's few words before its answer, a card's 80
# characters before an expiry, a slang label's connector, number words after a code's label, a code and a few words
# before its label, a heading line before codes, words after a phrase's label, 0x and hex): four times the input
# costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "security question first pet = ",
        "card 4111 1111 1111 1111 exp ",
        "我的mm是 ",
        "paswrod for a b ",
        "code one two three ",
        "密码是一二三 ",
        "1234 is the ",
        "1234 这是 ",
        "gate code for a b ",
        "zoom meeting passcode ",
        "memorable word a b ",
        "backup codes a b\n1234 5678\n",
        "seed phrase: abc def ",
        "private key 0x12ab ",
        "口令：海棠 ",
        "otp 我说了 ",
    ],
)
def test_the_twenty_first_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-second hold-out set

# Each form the twenty-second set (configs, logs, chat) showed missing, with made-up values and wording (none from the
# set): secrets that must go and near misses that must come back unchanged. (form, text, secrets); no secrets = a
# look-alike.
_HEX64_A = "daebd20a60b4afa630098c172ac309bed8e020a235d27d7107ec52a1d2d83d0e"
_HEX64_B = "73f6aa99f033eea6e69c09953fcbfdbf2635a2d13ef5605e09ed1e7ad4f4a7a8"
FORM_CASES_22: list[tuple[str, str, tuple[str, ...]]] = [
    # a Dutch BSN whose label is a clause away from it; the 11-proof decides
    (
        "bsn-far",
        "For the gemeente form: my BSN, the one on the letter the Belastingdienst sent last spring, is 153323437",
        ("153323437",),
    ),
    (
        "bsn-far",
        "Her burgerservicenummer from the time she studied in Groningen was 5617.20.794.",
        ("5617.20.794",),
    ),
    ("bsn-far", "my BSN from the years I worked in Leiden is 250719631, or so I wrote down", ()),
    ("bsn-far", "No BSN needed for the library card. The member number they gave me is 400138633", ()),
    # a YAML password whose quoted value is on the next, deeper-indented line
    (
        "yaml-next-line-quoted",
        "cache:\n  auth:\n    password:\n      'Tq8#vinyl-Lake'\n    timeout: 5\n",
        ("Tq8#vinyl-Lake",),
    ),
    ("yaml-next-line-quoted", 'ldap:\n  bind_password:\n    "Nw3$cobalt77"\n', ("Nw3$cobalt77",)),
    (
        "yaml-next-line-quoted",
        "db:\n  password:\n    secretKeyRef:\n      name: pg-auth\n      key: password\n",
        (),
    ),
    ("yaml-next-line-quoted", 'db:\n  password:\n    "${PG_PASSWORD}"\n', ()),
    ("yaml-next-line-quoted", 'api:\n  password:\n    "required"\n', ()),
    # a value written before its label, pointed back at ("X <- that's the ... pw", "X——这个是……密码")
    ("value-first-pointed", "Kv7!granite ← 这是公司 VPN 的新密码，记一下", ("Kv7!granite",)),
    ("value-first-pointed", "mX4pQ9rTz2——就是家里 NAS 的登录密码，别外传", ("mX4pQ9rTz2",)),
    (
        "value-first-pointed",
        "Otter#2291river  <- this is the wifi password for the cabin",
        ("Otter#2291river",),
    ),
    (
        "value-first-pointed",
        "Plover_88star -- that's my old pw, in case the new one fails",
        ("Plover_88star",),
    ),
    ("value-first-pointed", "iPhone15Pro——这个是我现在用的手机型号，不是密码", ()),
    ("value-first-pointed", "MacBookAir2020 <- that's the laptop, the password is on a sticky note", ()),
    ("value-first-pointed", "Python3.12 <- this is the version the password reset script needs", ()),
    ("value-first-pointed", "Reset done <- that's the password for the router sorted", ()),
    # a wallet key as 0x and 64 hex digits in a Hardhat / Truffle `accounts` list
    (
        "accounts-key-list",
        f'networks: {{ holesky: {{ url: RPC_URL, chainId: 17000, accounts: ["0x{_HEX64_A}"] }} }}',
        (f"0x{_HEX64_A}",),
    ),
    (
        "accounts-key-list",
        f"\"accounts\": [\n  '0x{_HEX64_A}',\n  '0x{_HEX64_B}'\n]",
        (f"0x{_HEX64_A}", f"0x{_HEX64_B}"),
    ),
    ("accounts-key-list", f"deploy tx: https://holesky.etherscan.io/tx/0x{_HEX64_A} (status: success)", ()),
    ("accounts-key-list", "accounts: [process.env.DEPLOYER_KEY], // from .env", ()),
    (
        "accounts-key-list",
        'accounts: ["0xf1c074e4cd145432d949dbf2425de234c0125d1a"]  // the addresses to fund',
        (),
    ),
    # recovery codes on the lines under a file name that says so
    (
        "recovery-codes-file",
        "cat ~/Downloads/backup_codes.txt\n\n92408-f4914\nd5a49-27475\nf961d-5361c\n",
        ("92408-f4914", "d5a49-27475", "f961d-5361c"),
    ),
    (
        "recovery-codes-file",
        "the recovery-codes file from the account setup, park it somewhere:\n200e9-42c42\nb0112-4535c\n\nthanks",
        ("200e9-42c42", "b0112-4535c"),
    ),
    (
        "recovery-codes-file",
        "recovery-codes.txt is missing from the bundle\n\nhello-world\nworld-peace\n",
        (),
    ),
    ("recovery-codes-file", "backup-codes.ts changed in:\n\n3f9a2c1\n8bd04e7\n", ()),
    # a password flag and its value as items of a command array (compose `command:`, k8s `args:`)
    (
        "flag-in-array",
        'command: ["valkey-server", "--save", "60", "1", "--requirepass", "Qz8rTfLm2WpX"]',
        ("Qz8rTfLm2WpX",),
    ),
    ("flag-in-array", "args:\n  - --masterauth\n  - 'Hq7vPs2Nd'\n  - --port\n  - '6380'\n", ("Hq7vPs2Nd",)),
    ("flag-in-array", "entrypoint: ['/bin/app', '--db-password', 'Marsh8!lily']", ("Marsh8!lily",)),
    ("flag-in-array", 'command: ["redis-server", "--requirepass", "${REDIS_PASSWORD}"]', ()),
    ("flag-in-array", 'args: ["--requirepass", "$(REDIS_PASSWORD)"]', ()),
    ("flag-in-array", 'command: ["/bin/app", "--password-file", "/run/secrets/app_pw"]', ()),
    # a user / password pair right after the name of a login page
    ("login-page-pair", "phpMyAdmin is dbops / Lantern$4410, the import keeps timing out", ("Lantern$4410",)),
    (
        "login-page-pair",
        "the cPanel: host77 / Ferry!Ring52 if you need to check the mail quota",
        ("Ferry!Ring52",),
    ),
    ("login-page-pair", "wp-admin is slow / broken since the 6.5 update", ()),
    ("login-page-pair", "the admin panel is mobile / desktop friendly now", ()),
    # a password label a long clause away from its value
    (
        "label-far-clause",
        "The password for the family iPad, which Sam changed on Sunday while I was out at the market and never "
        "wrote down anywhere sensible, is Meadow-Lark-7721.",
        ("Meadow-Lark-7721",),
    ),
    (
        "label-far-clause",
        "my pasword on the tax site, which the accountant set up for us back in March because the old one had "
        "expired, was Quill_9034tern",
        ("Quill_9034tern",),
    ),
    (
        "label-far-clause",
        "The password for the NAS, which I had to reset after the update locked me out, is stored in Bitwarden now.",
        (),
    ),
    (
        "label-far-clause",
        "The password for the router, which nobody has changed since we moved in two years ago, is 12 characters.",
        (),
    ),
    # a keypad's code, keyed digit by digit with dashes, a # or * after
    ("keypad-code", "back door keypad is 4-7-0-2#, garbage day is Monday", ("4-7-0-2",)),
    ("keypad-code", "shed keypad: 3-0-8-5*  (the light is on a timer)", ("3-0-8-5",)),
    ("keypad-code", "garage keypad was 2 5 8 0 until the electrician reset it", ("2 5 8 0",)),
    ("keypad-code", "the side gate keypad = 771903 (press the bell icon after)", ("771903",)),
    ("keypad-code", "the keypad is broken, use the key under the mat", ()),
    ("keypad-code", "the keypad is 3-4 years old and the buttons stick", ()),
    ("keypad-code", "the Yale keypad 2000 series has a 9V battery", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_22, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_22)]
)
def test_a_form_added_for_the_twenty_second_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twenty-second set's new rules read a bounded run (a BSN label's 100 characters before its number, a YAML key and
# its next line, a token and a few words after it, an `accounts` list, a heading line before codes, a command's flags,
# a clause of 240 characters after a label, a keypad's digits): four times the input costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "bsn from when a b c ",
        "a_password:\n  ",
        "Kv7!x <- that's the a b c pw ",
        "a1b2 —— 这是我的 ",
        'accounts: ["0x12", ',
        "backup-codes a b\n1234-5678\n",
        '"--password", "',
        "- --requirepass\n- ",
        "redis-server a b c ",
        "password for a b, which a b c ",
        "pasword, since a.b, c ",
        "keypad is 1 2 ",
        "wp-admin is a / b ",
    ],
)
def test_the_twenty_second_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-third hold-out set

# Each form the twenty-third set showed missing or broke, with made-up values and wording (none from the set):
# secrets that must go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike.
# The cards are Luhn-valid, the codice fiscale's check letter and the ITIN's group right; the near misses fail them.
FORM_CASES_23: list[tuple[str, str, tuple[str, ...]]] = [
    # a card whose groups are joined by dots, slashes, full-width dashes or a line break (Luhn-valid numbers)
    (
        "card-joined",
        "pay the deposit with 4716.3820.9154.2778, valid thru 11/28",
        ("4716.3820.9154.2778", "11/28"),
    ),
    ("card-joined", "公司卡 5351／0744／8213／9606，到期 03/29", ("5351／0744／8213／9606", "03/29")),
    ("card-joined", "corporate amex 3764/201983/51070 for the caterer", ("3764/201983/51070",)),
    ("card-joined", "here's the card\n6011 7048\n2953 1608 expiry 12/27", ("6011 7048\n2953 1608", "12/27")),
    ("card-joined", "build 2024.1105.0931.4471 shipped on Friday", ()),
    ("card-joined", "the mock card 4111.1111.1111.1112 is rejected by the sandbox on purpose", ()),
    ("card-joined", "room totals\n1200 3400\n5600 7800\nfor Q3", ()),
    # a card read aloud in words or Chinese numerals, its expiry and a security code read digit by digit
    (
        "card-spoken",
        "ok the card: five two four nine, eight one three zero, six five two seven, one eight four nine, "
        "good thru 07/29, cvc 3 1 9",
        (
            "five two four nine, eight one three zero, six five two seven, one eight four nine",
            "07/29",
            "3 1 9",
        ),
    ),
    (
        "card-spoken",
        "卡号念给你：六二一四 八三九二 零一七五 五三六零，有效期 10/28",
        ("六二一四 八三九二 零一七五 五三六零", "10/28"),
    ),
    ("card-spoken", "call me back on four one five, five five five, two six seven one", ()),
    ("card-spoken", "the ticket is one two three four five six seven eight nine zero one two three", ()),
    ("card-spoken", "二零二四年一二三四五六七八九十", ()),
    # a US ITIN after its label (group 50-65, 70-88, 90-92, 94-99)
    ("itin", "my ITIN: 912 78 4455, the accountant needs it by Friday", ("912 78 4455",)),
    ("itin", "Individual Taxpayer Identification Number 971-92-3308 (my husband's)", ("971-92-3308",)),
    ("itin", "the ITIN 912-45-6789 from the IRS training deck is not a valid range", ()),
    ("itin", "ITINs always start with a 9 and have 9 digits", ()),
    # an Italian codice fiscale with its check letter right
    (
        "codice-fiscale",
        "il mio codice fiscale BNCLRA92E52F205Y serve per il contratto",
        ("BNCLRA92E52F205Y",),
    ),
    ("codice-fiscale", "tax code for the Rome office form: VRDGPP88C11L219Z", ("VRDGPP88C11L219Z",)),
    ("codice-fiscale", "a made-up one for the demo: VRDGPP88C11L219A (the check letter is wrong)", ()),
    # a framework's session cookie by its name, no Cookie: header
    (
        "session-cookie",
        "my PHPSESSID=q8v4k2n7m1c9x3z5b6l0p2r4t7 keeps expiring",
        ("q8v4k2n7m1c9x3z5b6l0p2r4t7",),
    ),
    (
        "session-cookie",
        "devtools shows ASP.NET_SessionId = 5kqz1w0mvd3ypbn4xeh2jr1t then a 302",
        ("5kqz1w0mvd3ypbn4xeh2jr1t",),
    ),
    ("session-cookie", "set JSESSIONID=${SESSION_ID} in the test fixture", ()),
    ("session-cookie", "the server logs JSESSIONID=deleted when you sign out", ()),
    # a password said again
    ("pw-repeated", "the gate password is Qz7!pLm2x, again, Qz7!pLm2x, case matters", ("Qz7!pLm2x",)),
    ("pw-repeated", "仓库门禁密码K9#xw2Lq，再说一遍：K9#xw2Lq，记牢", ("K9#xw2Lq",)),
    ("pw-repeated", "Say it again: Hello2024 is the campaign name", ()),
    # a value first, then "是 ... password" / "这串是 … 密码" / "thats the ... password"
    ("pw-then-is", "Mx8#Rq21vz 是 NAS password，周末备份要用。", ("Mx8#Rq21vz",)),
    ("pw-then-is", "Hk7?wQ2mT——这串是公司邮箱的密码，别发群里", ("Hk7?wQ2mT",)),
    ("pw-then-is", "Zk4_mPw91 <- thats the nas password, keep it", ("Zk4_mPw91",)),
    ("pw-then-is", "Python3.12 是 password 校验脚本要的版本", ()),
    ("pw-then-is", "Lumix-G9 <- thats the camera model, not the password", ()),
    ("pw-then-is", "iPhone15Pro 是我现在用的手机", ()),
    # a question and its answer marked Q: / A:
    ("qa-inline", "Q: alarm panel code? A: 8841 (disarm within 30s)", ("8841",)),
    ("qa-inline", "Q：VPN 的 login 口令？ A：Vx9!tR22mq（下月换）", ("Vx9!tR22mq",)),
    ("qa-inline", "Q: what is the door code policy? A: 6 digits minimum", ()),
    ("qa-inline", "Q: garage door code? A: ask Tom", ()),
    # a password label, a few words, then a colon or "已重置为"
    ("pw-note", "邮箱密码顺手记下：Pq8#zLm42w，别外传", ("Pq8#zLm42w",)),
    ("pw-note", "测试服务器密码已重置为 Tn5$kW9qzx，请尽快登录修改", ("Tn5$kW9qzx",)),
    ("pw-note", "密码修改时间：2024-01-01", ()),
    ("pw-note", "密码规则如下：至少8位", ()),
    # a two-column Markdown table of names and values
    (
        "md-row",
        "| 名称 | 值 |\n|---|---|\n| 应用 | billing |\n| API 密钥 | 7fK2mQ9xPz4LwT8vRb3N |",
        ("7fK2mQ9xPz4LwT8vRb3N",),
    ),
    (
        "md-row",
        "| key | value |\n|---|---|\n| client_secret | Gq3vT8xR2mLz9WkP5sYn |",
        ("Gq3vT8xR2mLz9WkP5sYn",),
    ),
    ("md-row", "| 名称 | 值 |\n|---|---|\n| 版本号 | 3f9a1c2b7d4e5f60a1b2 |", ()),
    ("md-row", "| 名称 | 值 |\n|---|---|\n| 密钥轮换周期 | 90_days_per_rotation |", ()),
    # recovery codes under a Chinese heading, or numbered
    (
        "code-lines-zh",
        "GitLab 的备用码：\n1) 48213-9af02\n2) c77e1-03b9d\n3) 5d0aa-e1f47",
        ("48213-9af02", "c77e1-03b9d", "5d0aa-e1f47"),
    ),
    ("code-lines-zh", "recovery codes, numbered:\n1. 2241 9087\n2. 6630 1175", ("2241 9087", "6630 1175")),
    ("code-lines-zh", "备用码的说明：\n版本 1.2\n更新于 3 月", ()),
    # a password or an ID told in parts
    ("parts", "保险箱密码前两位是 58，后四位是 1937", ("58", "1937")),
    ("parts", "the shed PIN: first two digits are 40, last two 71", ("40", "71")),
    ("parts", "身份证前六位是320106，中间是生日19880714，最后四位是473X", ("320106", "19880714", "473X")),
    ("parts", "卡号后四位是 4821，月底还款", ()),
    ("parts", "身份证前六位是 110105，后四位是 2318，中间的我不记得了", ()),
    # a password told as its start and what follows
    ("pw-starts", "the vault password starts with Orchid then 7&q2 at the end", ("Orchid", "7&q2")),
    ("pw-starts", "the password starts with a capital letter then two digits", ()),
    # a bare code said to have come by text
    ("otp-by-text", "code 518 204 just came by text, can you type it in", ("518 204",)),
    ("otp-by-text", "code 731940 arrived via SMS a minute ago", ("731940",)),
    ("otp-by-text", "code 2024 came by post with the new card", ()),
    # a security answer in Chinese that ends in digits
    ("sq-zh", "密保问题「第一辆车」的答案是 凤凰自行车1998", ("凤凰自行车1998",)),
    ("sq-zh", "安全问题的答案是什么来着，我忘了", ()),
    # public vendor defaults, a published sample SSN named so, a fingerprint that is no IBAN: kept
    ("vendor-default", "these managed switches all come with factory default login admin/admin", ()),
    ("vendor-default", "出厂默认密码是 admin，首次登录必须修改", ()),
    ("sample-ssn", "219-09-9999 is the sample number from the 1940 SSA pamphlet, voided later", ()),
    ("iban-country", "GPG fingerprint: EA12 8B5B F175 1AF4 DA29 386D D242 A6D8 9302 C428", ()),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_23, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_23)]
)
def test_a_form_added_for_the_twenty_third_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twenty-third set's new rules read a bounded run (a card's groups, 13 to 19 digit words, a label and up to 40
# characters to each part, a Q: line, a Markdown row, a heading line and its codes): four times the input costs about
# four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "4716.3820.9154.",
        "6011 7048\n",
        "four four five, ",
        "六二一四 ",
        "ITIN a b 912 ",
        "PHPSESSID=q8v4k2n7m1c9x3z5b6l0p2 ",
        "password is Qz7!pLm2x, again, ",
        "Mx8#Rq21vz 是 ",
        "Zk4_mPw91 <- thats the ",
        "Q: door code? A: ",
        "密码我记一下：",
        "| API 密钥 | 7fK2mQ9xPz4LwT8vRb3N ",
        "备用码：\n1) ",
        "保险箱密码前两位是 58，后",
        "password starts with Ab1 then ",
        "code 518 204 ",
        "密保答案是 ",
        "default login admin/admin ",
    ],
)
def test_the_twenty_third_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-fourth hold-out set

# Each form the twenty-fourth set showed missing or broke, with made-up values and wording (none from the set): secrets
# that must go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike. The
# secrets of the first six forms all fail on the base redactor (e320789); the one secret among each of the last four
# forms' look-alikes (a password after a user, a `secret:` label, a `PASS:` label, a quoted value after 密码) went
# before and must still go.
FORM_CASES_24: list[tuple[str, str, tuple[str, ...]]] = [
    # a key name with "session key" in it (WeChat's session_key), in JSON, YAML, an .env and a query string
    (
        "session-key-name",
        '{"user": {"id": 881, "auth": {"mp_session_key": "Zq3vN8tLw0PbXy7RkD2mHg==", "unionid": null}}}',
        ("Zq3vN8tLw0PbXy7RkD2mHg==",),
    ),
    (
        "session-key-name",
        "wechat:\n  session_key: 'Hn4xQ7pVb2RtLw9cYk5mZa=='\n",
        ("Hn4xQ7pVb2RtLw9cYk5mZa==",),
    ),
    (
        "session-key-name",
        "APP_SESSION_KEY=f7Kc2Wq9Xz4Nv8Lm1Tb6Rp3s 写进 .env 之后重启",
        ("f7Kc2Wq9Xz4Nv8Lm1Tb6Rp3s",),
    ),
    (
        "session-key-name",
        '小程序登录日志：code2Session 返回 {"openid": "o7Hq2", "sessionKey": "pT5vR1xW8mK3nB6zQ9cL4d=="}',
        ("pT5vR1xW8mK3nB6zQ9cL4d==",),
    ),
    ("session-key-name", "session_key_ttl: 7200  # seconds", ()),
    ("session-key-name", '{"session_key": "${WX_SESSION_KEY}", "appid": "wx0123"}', ()),
    ("session-key-name", "the session key is rotated every time the user logs in again", ()),
    ("session-key-name", "session_key 不能下发到前端，只能存在服务端", ()),
    # a TOTP setup key in groups of four, its label a clause away
    (
        "totp-far",
        "switching authenticators, the secret that Dropbox printed under the QR was mzq4 xk2p vt7a lw3n ob5r and it "
        "still works",
        ("mzq4 xk2p vt7a lw3n ob5r",),
    ),
    (
        "totp-far",
        "两步验证要迁到新手机上，我翻了当时的截图，网站在二维码下面显示的那一串是 KQ4T ZX7M PA2L WN5R YB3C 吧",
        ("KQ4T ZX7M PA2L WN5R YB3C",),
    ),
    ("totp-far", "the 2FA setup key they emailed me then JV3Q MZ5T KP7A WX2R", ("JV3Q MZ5T KP7A WX2R",)),
    ("totp-far", "the GPG key my colleague signed last week has fingerprint 3A9F 0C21 BE47 77D1 90AF", ()),
    ("totp-far", "for the secret santa draw this year we have anna beth carl dave emma", ()),
    (
        "totp-far",
        "2FA backup: I wrote the setup key somewhere, it was like Abcd Efgh Ijkl Mnop, mixed case?",
        (),
    ),
    # a service's key under a bare "Key" in Chinese text
    (
        "zh-key",
        "腾讯位置服务的 Key：7c1e9b04d2a85f36e0b4c9d17a2f8e53，每天调用上限一万次",
        ("7c1e9b04d2a85f36e0b4c9d17a2f8e53",),
    ),
    ("zh-key", "和风天气Key是 kQ7mZ2xV9pL4wT8nR3bY6cH1，前端直接调吗", ("kQ7mZ2xV9pL4wT8nR3bY6cH1",)),
    (
        "zh-key",
        "Map service Key：b93f04e7a1c25d8e6f0a4b7c93d1e256 (web side)",
        ("b93f04e7a1c25d8e6f0a4b7c93d1e256",),
    ),
    ("zh-key", "Redis 缓存的 Key：user_profile_20240315_v2，过期时间 1 小时", ()),
    ("zh-key", "对象存储的 Key：uploads/2024/03/avatar_1001.png", ()),
    ("zh-key", "这张表的主键 Key：order_id，不要用 uuid", ()),
    ("zh-key", "the cache key: 83a1f0c4d2b95e67a0c3d8f1b2e4a6c9 is the md5 of the url", ()),
    # a password told after an aside
    (
        "pw-after-aside",
        "the wifi password — Tom reset the router last night because the kids kept hogging it — is now "
        "Heron!4402lake.",
        ("Heron!4402lake",),
    ),
    (
        "pw-after-aside",
        "Our vault passphrase (the one Priya set up when we moved offices last spring) was Pebble_7731_dune",
        ("Pebble_7731_dune",),
    ),
    (
        "pw-after-aside",
        "保险柜的密码呢——我上个月按你说的换了一个，就是 804516，别告诉别人。",
        ("804516",),
    ),
    (
        "pw-after-aside",
        "邮箱的 password 嘛——上周 IT 重装系统以后又被强制改了一遍，就是 Qw7#tern2024，你先试试",
        ("Qw7#tern2024",),
    ),
    (
        "pw-after-aside",
        "家里 WiFi 的密码（这个我之前跟你说过好几次了，上周又因为隔壁蹭网换掉了）就是 Lp9@harbor77，记一下",
        ("Lp9@harbor77",),
    ),
    ("pw-after-aside", "the password — the one on the sticky note — is fine, nobody changed it", ()),
    ("pw-after-aside", "the password — as usual — is in the vault", ()),
    ("pw-after-aside", "the password - the one Karen picked - is 14 characters now", ()),
    ("pw-after-aside", "密码嘛——后来改成了统一登录，就是 Okta 那个", ()),
    ("pw-after-aside", "密码的事——我问了 IT，就是 2024 年新规定，要 12 位", ()),
    # a passphrase (密码短语) in corner brackets, words with spaces
    (
        "zh-passphrase",
        "备份硬盘的密码短语是「velvet orbit nine lanterns」，别写在盒子上",
        ("velvet orbit nine lanterns",),
    ),
    ("zh-passphrase", "GPG 的密码短语：「copper finch under rain」", ("copper finch under rain",)),
    ("zh-passphrase", "密碼短語是「harbor sixty pine echo」", ("harbor sixty pine echo",)),
    ("zh-passphrase", "私钥的密码短语是「无」，直接回车就行", ()),
    ("zh-passphrase", "密码短语建议用四五个不相关的英文单词", ()),
    # a PIN (or a password) told as an aside after where it is written
    (
        "pin-told",
        "Grandma keeps her debit card PIN on a scrap of paper inside her purse, 2958, which worries me.",
        ("2958",),
    ),
    (
        "pin-told",
        "he had the alarm PIN taped under the keyboard, 61047, so anyone could read it",
        ("61047",),
    ),
    (
        "pin-told",
        "my password written on the whiteboard behind me, Mx7!dune82, was in the zoom recording",
        ("Mx7!dune82",),
    ),
    ("pin-told", "我爸把银行卡密码写在便利贴上，贴在卡背面，3906，我说这样太危险了", ("3906",)),
    ("pin-told", "the PIN on the new card, four digits, arrives in a separate letter", ()),
    ("pin-told", "my PIN in March, 2024, was reset by the bank after three wrong tries", ()),
    ("pin-told", "密码写在本子上，第三页，具体是多少我也忘了", ()),
    # a flag after the passwd / pass command is no password
    ("passwd-flag", "after the login prompt changes, run passwd -l deploy to lock the account", ()),
    ("passwd-flag", "用户登录前要改密码：passwd --expire alice 就行", ()),
    ("passwd-flag", "username bob; to copy it to the clipboard run pass -c email/work", ()),
    ("passwd-flag", "username: bob  password Kx8#mq2Lz", ("Kx8#mq2Lz",)),
    # an ARN's `secret:` resource type is no label
    (
        "arn-secret",
        "policy Resource: arn:aws:secretsmanager:us-west-2:210987654321:secret:billing/stripe-key-Ab12Cd",
        (),
    ),
    (
        "arn-secret",
        "ARN 写成 arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:rds/master-9xYz8W 就能读",
        (),
    ),
    ("arn-secret", "secret: Vb8nQ2xL7mW4kT9r  # the webhook one", ("Vb8nQ2xL7mW4kT9r",)),
    # a test runner's PASS line is no password
    (
        "test-status",
        "PASS tests/api/test_auth.py::test_password_reset_flow (0.73s)\nFAIL tests/api/test_x.py::t",
        (),
    ),
    ("test-status", " PASS  src/components/LoginForm.test.tsx (2.4 s)", ()),
    ("test-status", "--- PASS: TestHashPassword (0.12s)\nok  \tgithub.com/acme/auth\t0.31s", ()),
    ("test-status", "wifi\nSSID: cabin-5g\nPASS: Otter7291!", ("Otter7291!",)),
    # a label inside a quoted string: its closing quote opens no value
    ("label-in-string", '<input type="password" placeholder="请再次输入密码" maxlength="20">', ()),
    ("label-in-string", "<input placeholder='设置支付密码' inputmode='numeric'>", ()),
    ("label-in-string", 'const tip = "请输入密码" + userName;', ()),
    ("label-in-string", '路由器密码"Tq8#lake2024"别外传', ("Tq8#lake2024",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_24, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_24)]
)
def test_a_form_added_for_the_twenty_fourth_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twenty-fourth set's new rules read a bounded run (a label's aside of up to 160 characters and the value after it,
# a clause of up to 120 characters to a PIN, a key's label and value, a TOTP label's 60 characters to its groups, a
# line's last quote before a label): four times the input costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        '{"wx_session_key": "',
        "setup key was then ",
        "2FA key e2if tap7 ",
        "服务的 Key：",
        "服务 Key：83befad634e0 ",
        "password — a b c ",
        "password — a — is ",
        "password (a b c ",
        "PIN — Karen, is now ",
        "密码嘛——我",
        "密码（我",
        "密码，就是 ",
        "PIN on a b, ",
        "password taped under a, ",
        "密码写在本子上，",
        '<input placeholder="请输入密码" x="',
        "PASS tests/a.py::t (0.1s)\n",
        "passwd -e ",
        "密码短语「",
    ],
)
def test_the_twenty_fourth_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-fifth hold-out set


# Each form the twenty-fifth set showed missing or broke, with made-up values and wording (none from the set): secrets
# that must go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike. The
# secrets of the first four forms all fail on the base redactor (2729112), and so do the look-alikes of the last two
# forms (a webhook's documented slot, a noun of password policy); the secrets among those last two forms' cases went
# before and must still go. Checksums: the card passes Luhn and its near miss fails it; the Steuer-IDs pass ISO 7064
# MOD 11,10 with one digit repeated in their first ten, and their near misses fail the check digit or the repeat.
def _wide(s: str) -> str:
    """``s`` as an input method in full-width mode types it: ASCII letters, digits and symbols as their full-width forms."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


_UNIONPAY_25 = "622848031957264"
_UNIONPAY_25 += _luhn_digit(_UNIONPAY_25)
_UNIONPAY_25_BAD = _UNIONPAY_25[:-1] + str((int(_UNIONPAY_25[-1]) + 1) % 10)
FORM_CASES_25: list[tuple[str, str, tuple[str, ...]]] = [
    # a value typed in full-width mode, or after a space that is not ASCII's (the ideographic U+3000, a no-break space)
    ("full-width", "银行卡取款密码是\u3000" + _wide("503917") + "，别告诉别人", (_wide("503917"),)),
    (
        "full-width",
        "邮箱密码：" + _wide("huangmei&2031qz") + "（全角模式下打的）",
        (_wide("huangmei&2031qz"),),
    ),
    ("full-width", "wifi password:\u00a0Tidewater#5580 (copied from the router page)", ("Tidewater#5580",)),
    (
        "full-width",
        "卡号：" + " ".join(_wide(_UNIONPAY_25[i : i + 4]) for i in range(0, 16, 4)) + "，有效期 09/28",
        tuple(_wide(_UNIONPAY_25[i : i + 4]) for i in range(0, 16, 4)),
    ),
    ("full-width", "密码至少" + _wide("8") + "位，要有大小写字母和数字", ()),
    ("full-width", "订单号：" + _wide("20240917336521") + "，快递单号 " + _wide("SF1409263385017"), ()),
    ("full-width", "\u3000\u3000上周把路由器升级到固件 " + _wide("v3.2.18") + "，密码没变，还是原来那个", ()),
    (
        "full-width",
        "卡号：" + " ".join(_wide(_UNIONPAY_25_BAD[i : i + 4]) for i in range(0, 16, 4)) + "（测试数据）",
        (),
    ),
    ("full-width", "型号：" + _wide("ThinkPad X1 Carbon Gen 11") + "，序列号在底壳上", ()),
    # recovery codes in GitHub's shape (two groups of five hex digits), one a line, under a long heading
    (
        "codes-github-shape",
        "backup codes for the shared finance mailbox, only pasting two of them until we get a vault:\n"
        "  71fd2-0c9ea\n  b3e08-5d7a1\nthe rest are printed",
        ("71fd2-0c9ea", "b3e08-5d7a1"),
    ),
    (
        "codes-github-shape",
        "my 2FA recovery codes, since you asked where I keep them and whether they still work at all:\n"
        "c81e7-28d9a\nf2b40-7e1c3\n9a6d5-0b3f2",
        ("c81e7-28d9a", "f2b40-7e1c3", "9a6d5-0b3f2"),
    ),
    (
        "codes-github-shape",
        "Recovery codes GitHub gave me for the release bot (I used the top one yesterday)\n"
        "   5e0a1-9c3b7  \n   0d92f-6a4e8\n",
        ("5e0a1-9c3b7", "0d92f-6a4e8"),
    ),
    (
        "codes-github-shape",
        "two build ids from the pipeline, for whoever asked yesterday about the failed deploy:\n"
        "  a6f01-93bc2\n  7d2e4-c0591",
        (),
    ),
    (
        "codes-github-shape",
        "recovery codes were reset for these accounts after the audit last week, see list:\n ops-admin2\n deploy-bot7",
        (),
    ),
    (
        "codes-github-shape",
        "GitHub recovery codes look like this in their docs:\n  xxxxx-xxxxx\n  xxxxx-xxxxx",
        (),
    ),
    # a cloud key pair's CSV, as a console's credentials.csv writes it
    (
        "key-pair-csv",
        "the credentials.csv from the console:\nUser Name,Access Key Id,Secret Access Key\n"
        "ops-bot,QH3XNR82KD0VPLW7MZ4T,k9Rv2LmQx7Tb4Wn8Zc1Hy5Jd0Gs3Fa6Pe2Ku9Bo4\n",
        ("QH3XNR82KD0VPLW7MZ4T", "k9Rv2LmQx7Tb4Wn8Zc1Hy5Jd0Gs3Fa6Pe2Ku9Bo4"),
    ),
    (
        "key-pair-csv",
        "SecretId,SecretKey\nZKq82mXv4Lp9Rt3Wn7Bc1Yd6Hs0Ja5F,Pw4Nz8Qk2Vm6Xr1Lt9Cb3Hd7Jy5Fg0Ks\n",
        ("ZKq82mXv4Lp9Rt3Wn7Bc1Yd6Hs0Ja5F", "Pw4Nz8Qk2Vm6Xr1Lt9Cb3Hd7Jy5Fg0Ks"),
    ),
    (
        "key-pair-csv",
        "obs_access_key_id\tobs_secret_access_key\tbucket\n7TQW2ZL9XKD4M8NPR3VB\tHz6Kq1Wm8Xt3Rv5Nb0Lc7Yp2Js9Dg4Fa6Qe1Tu8\tlogs-prod",
        ("7TQW2ZL9XKD4M8NPR3VB", "Hz6Kq1Wm8Xt3Rv5Nb0Lc7Yp2Js9Dg4Fa6Qe1Tu8"),
    ),
    ("key-pair-csv", "alias,KMS Key Id,region\nbilling,8f14e45f-ceea-467a-9af0-2b1c3d4e5f60,eu-west-1", ()),
    (
        "key-pair-csv",
        "Columns we need in the export: access key id, secret key, region\nper bucket: logs-2024, assets-v2, ap-south-1",
        (),
    ),
    ("key-pair-csv", "Access Key Id,Secret Access Key,Status\n****************7QXZ,(hidden),Active", ()),
    # Germany's tax identification number after its label (ISO 7064 MOD 11,10, one digit repeated in the first ten)
    ("steuer-id", "Steuer-ID: 65 254 537 810, Krankenkasse AOK", ("65 254 537 810",)),
    ("steuer-id", "my German tax ID is 61859250436 if payroll needs it", ("61859250436",)),
    (
        "steuer-id",
        "Steuerliche Identifikationsnummer 140 562 676 87 (steht auf dem Brief vom BZSt)",
        ("140 562 676 87",),
    ),
    ("steuer-id", "Steuer-IdNr.: 10 163 581 273", ("10 163 581 273",)),
    ("steuer-id", "Steuer-ID: 65 254 537 813 (one digit off, from the test fixture)", ()),
    ("steuer-id", "Steuer-ID in the sample: 50829173464", ()),
    ("steuer-id", "Steuernummer 143/815/08156 beim Finanzamt Mitte", ()),
    ("steuer-id", "tax ID field has 11 digits, format 12 345 678 901", ()),
    # a webhook URL whose token is a slot filled with x or X: its documented format, not one
    (
        "webhook-slot",
        "the docs say POST to https://hooks.slack.com/services/TXXXXXXXXXX/BXXXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX",
        (),
    ),
    (
        "webhook-slot",
        "Lark 机器人地址格式：https://open.larksuite.com/open-apis/bot/v2/hook/XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX",
        (),
    ),
    (
        "webhook-slot",
        "template: https://discord.com/api/webhooks/000000000000000000/"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        (),
    ),
    (
        "webhook-slot",
        "WECOM_HOOK=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=your_webhook_key_here",
        (),
    ),
    (
        "webhook-slot",
        "alerts go to https://hooks.slack.com/services/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",
        ("nV4qX9mK2zR7wL3tB8yH5cJd",),
    ),
    (
        "webhook-slot",
        "飞书群机器人：https://open.feishu.cn/open-apis/bot/v2/hook/3b9e1f47-8c2d-4a65-b0f3-7d1e9c28a54b，别外传",
        ("3b9e1f47-8c2d-4a65-b0f3-7d1e9c28a54b",),
    ),
    (
        "webhook-slot",
        "https://hooks.slack.com/services/TXXXXXXXX/BXXXXXXXX/Qm7Rt2Vx9Kp4Lz8Nw3Hb6Jc5",
        ("Qm7Rt2Vx9Kp4Lz8Nw3Hb6Jc5",),
    ),
    # a noun of password policy, or of the tool that keeps passwords, after a bare "password"
    (
        "policy-noun",
        "for the new user: does the portal enforce the password history rule, or do we?",
        (),
    ),
    (
        "policy-noun",
        "login for contractors goes through SSO; the password complexity requirements are in the wiki",
        (),
    ),
    ("policy-noun", "user accounts on the NAS: which password manager do you all use?", ()),
    ("policy-noun", "账号 ops 的 password rotation 周期是 90 天", ()),
    ("policy-noun", "username admin password lighthouse", ("lighthouse",)),
    ("policy-noun", "login: deploy  password: Hist0ry!2024", ("Hist0ry!2024",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_25, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_25)]
)
def test_a_form_added_for_the_twenty_fifth_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


def test_a_full_width_text_keeps_what_is_not_redacted_as_it_was_written() -> None:
    # (the fold reads the text as ASCII; what is kept comes back full-width, its ideographic spaces too)
    account, note = _wide("zhao_lei"), _wide("VIP-2024")
    text = f"\u3000\u3000账号：{account}，密码：{_wide('Qk7#lantern')}，备注：{note}"
    assert redact(text) == f"\u3000\u3000账号：{account}，密码：[REDACTED:password]，备注：{note}"


# The twenty-fifth set's new rules read a text's full-width characters as ASCII (one translate, then each kept stretch
# found once, in order), a table's header cells, a bounded label before an ID and a fixed code shape a line: four times
# the input costs about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "密码：ｙａｎｇ１９ ",
        "ｘ\u3000",
        "支付密码是\u3000８４０６，",
        "[REDACTED:password]ａ",
        "ａ＃",
        "recovery codes x:\na6449-cd509\n",
        "Access Key Id,Secret Access Key\n",
        "Steuer-ID: 65 254 ",
        "https://hooks.slack.com/services/TX/BX/XXXXXXXX ",
    ],
)
def test_the_twenty_fifth_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)


# ---------------------------------------------------------------- forms added for the twenty-sixth hold-out set


# Each form the twenty-sixth set showed missing or broke, with made-up values and wording (none from the set): secrets
# that must go and near misses that must come back unchanged. (form, text, secrets); no secrets = a look-alike; the
# look-alikes of the last form (a postal PIN code after an address) were redacted by the base redactor (2eb3f37).
# Checksums: the cards pass Luhn; the HKIDs, NIEs and CURPs pass their checks and their near misses fail them (a wrong
# check digit or letter); the PAN's near miss has no holder type as its fourth letter.
_AMEX_26 = "37829140615823"
_AMEX_26 += _luhn_digit(_AMEX_26)
_VISA_26 = "455672810394217"
_VISA_26 += _luhn_digit(_VISA_26)
_MC_26 = "529044183771625"
_MC_26 += _luhn_digit(_MC_26)
_DISCOVER_26 = "601143308917552"
_DISCOVER_26 += _luhn_digit(_DISCOVER_26)
FORM_CASES_26: list[tuple[str, str, tuple[str, ...]]] = [
    # a password described by what it is made of, then given (in the next sentence, after a question)
    (
        "recipe",
        "The password? It's my daughter's name plus her birth year, so Emma2015. Don't tell her.",
        ("Emma2015",),
    ),
    ("recipe", "家里 WiFi 的密码？就是狗的名字加 1999，Lucky1999。", ("Lucky1999",)),
    ("recipe", "问我邮箱密码呀。姓名拼音首字母后面加生日：zxl19900214", ("zxl19900214",)),
    ("recipe", "The password? It's the dog's name plus the year we got him, so easy to remember.", ()),
    ("recipe", "密码是生日加名字首字母，你自己猜吧", ()),
    ("recipe", "password rules: a name plus a year is banned, so: no", ()),
    # a card's security code by another name after the card: "sec code", the number on the front, asked and answered,
    # in number words
    ("card-code", f"card number {_MC_26}, good thru 0929, sec code 418. Thanks!", (_MC_26, "418")),
    (
        "card-code",
        f"Mum's Amex is {_AMEX_26[:4]} {_AMEX_26[4:10]} {_AMEX_26[10:]}, and the four-digit number on the front is 5519.",
        ("5519",),
    ),
    (
        "card-code",
        f"Visa {_VISA_26}. The code on the back? It's four-one-seven. Expires 03/29.",
        (_VISA_26, "four-one-seven"),
    ),
    ("card-code", f"Discover {_DISCOVER_26}, sec code: seven two six", ("seven two six",)),
    ("card-code", f"Amex {_AMEX_26}, the last four digits on the front: {_AMEX_26[-4:]}", (_AMEX_26,)),
    ("card-code", "what is the sec code on the back of a card for?", ()),
    ("card-code", f"Visa {_VISA_26}. The code on the back? It's worn off, I can't read it.", (_VISA_26,)),
    # a one-time code that lasts minutes or that a machine read out on a call
    ("otp-minutes", "The code from Citi is 804215, it's only good for 5 minutes", ("804215",)),
    ("otp-minutes", "a voice call read me the code: 519-073, hurry", ("519-073",)),
    ("otp-minutes", "the code they sent is 66120 and it expires in fifteen minutes", ("66120",)),
    ("otp-minutes", "The promo code is 804215 and the sale expires in 10 minutes", ()),
    ("otp-minutes", "error code 5031 again; the session expires in 10 minutes", ()),
    ("otp-minutes", "The automated call said my order 804215 ships today", ()),
    # a one-time code in Chinese numerals, spaced or not, after 动态码 / 校验码
    ("otp-chinese-numerals", "动态码：三 八 一 五 二 零，快输", ("三 八 一 五 二 零",)),
    ("otp-chinese-numerals", "他念的校验码是七七零四一九", ("七七零四一九",)),
    ("otp-chinese-numerals", "动态码一般是六位数字，一分钟内有效", ()),
    # a PIN told as one digit said so many times
    ("pin-repeated-digit", "银行卡密码：四个六，别忘了", ("四个六",)),
    ("pin-repeated-digit", "爸的支付密码是六个零", ("六个零",)),
    ("pin-repeated-digit", "my old PIN was six nines, I know, terrible", ("six nines",)),
    ("pin-repeated-digit", "密码要六个数字，不能连号", ()),
    ("pin-repeated-digit", "密码有六个一样的不行吧", ()),
    ("pin-repeated-digit", "the PIN has four digits and the code two", ()),
    # a password right after its label in square or lenticular brackets
    ("bracketed", "京东 密码[xm_2290ab]，手机号登录", ("xm_2290ab",)),
    ("bracketed", "社保app密码【Lk88096wq】记一下", ("Lk88096wq",)),
    ("bracketed", "router password [Fennel4471] on the sticker", ("Fennel4471",)),
    ("bracketed", "first = password[0]", ()),
    ("bracketed", "密码【请勿外传】", ()),
    ("bracketed", "the password [required] field is empty", ()),
    # a sign-in pair joined by a pipe
    ("login-pipe", "Hulu login -> m.perez@yahoo.com | Marigold77", ("Marigold77",)),
    ("login-pipe", "login: jchen | Tr0ut!lake", ("Tr0ut!lake",)),
    ("login-pipe", "Login | Sign up | Help", ()),
    ("login-pipe", "login -> jo.k@example.org | forgot password?", ()),
    # a Spanish NIE with its letters set apart by dashes
    ("nie-dashes", "my NIE is X-4471025-D for the bank", ("X-4471025-D",)),
    ("nie-dashes", "NIE: Y 2908361 W", ("Y 2908361 W",)),
    ("nie-dashes", "NIE: Z-1593047-B (the letter is wrong on purpose)", ()),
    # India's PAN after "PAN card no" / "PAN card number"
    ("pan-card-no", "PAN card no: BNZPM2501K for the KYC form", ("BNZPM2501K",)),
    ("pan-card-no", "PAN card number - CQWPS7730L", ("CQWPS7730L",)),
    ("pan-card-no", "PAN card no: ABCDE1234F is the format the site shows", ()),
    # Mexico's CURP, with its check digit
    ("curp", "CURP：LOPM850312MJCPRR06，办手续要用", ("LOPM850312MJCPRR06",)),
    ("curp", "my CURP is SAGJ920704HNLNRS05", ("SAGJ920704HNLNRS05",)),
    ("curp", "CURP de mi hija: TUCE011119MDFRVLA6", ("TUCE011119MDFRVLA6",)),
    ("curp", "CURP：LOPM850312MJCPRR07（校验位不对）", ()),
    ("curp", "CURP 是 18 位，前四位是姓名首字母", ()),
    # China's travel permits (to Hong Kong and Macau, to Taiwan, the home-return permit) after their label
    ("travel-permit", "往来港澳通行证号码 C61837204，下周去澳门", ("C61837204",)),
    ("travel-permit", "台湾通行证：T70421935", ("T70421935",)),
    ("travel-permit", "回乡证号码是 H50817362", ("H50817362",)),
    ("travel-permit", "港澳通行证签注还剩一次，2030 年到期", ()),
    ("travel-permit", "通行证办理进度：已受理", ()),
    # a Hong Kong ID with a space after its letters
    ("hkid-spaced", "老豆嘅身份证 K 352817 (0)，帮佢登记", ("K 352817 (0)",)),
    ("hkid-spaced", "HKID: WX 193704 (7)", ("WX 193704 (7)",)),
    ("hkid-spaced", "身份证 K 352817 (3) 系假嘅", ()),
    # India's postal PIN code after an address: no PIN
    (
        "postal-pin",
        "Ship to: 14 Park Street, Kolkata, West Bengal, PIN code 700016. Call before delivery.",
        (),
    ),
    ("postal-pin", "Delivery address: 3rd Cross Road, Mysuru, PIN: 570002", ()),
    ("postal-pin", "New address: Plot 7, Sector 21, Gurugram, Haryana, PIN 122016", ()),
    ("postal-pin", "my debit card PIN code is 804417", ("804417",)),
    ("postal-pin", "ATM PIN: 570002", ("570002",)),
]


@pytest.mark.parametrize(
    ("form", "text", "secrets"), FORM_CASES_26, ids=[f"{c[0]}-{i}" for i, c in enumerate(FORM_CASES_26)]
)
def test_a_form_added_for_the_twenty_sixth_holdout_set(
    form: str, text: str, secrets: tuple[str, ...]
) -> None:
    test_a_form_added_for_the_fourth_holdout_set(form, text, secrets)


# The twenty-sixth set's new rules read a bounded run (a password's recipe of up to 160 characters to its value, 80
# characters from a card to its code, a bracket's 64, 180 characters back to an address): four times the input costs
# about four times the time.
@pytest.mark.parametrize(
    "unit",
    [
        "password plus name, ",
        "密码加生日，",
        "密码：六个",
        "密码[ab12 ",
        "密码【",
        "login -> a@b.co | ",
        "address, PIN code 560087 ",
        "[REDACTED:card] code on the back? ",
        "code 1, expires in 10 minutes ",
        "动态码：九 ",
        "CURP LOPM850312MJCPRR0",
        "身份证 K 352817 ",
        "NIE X-4471025-",
        "通行证 C6183 ",
    ],
)
def test_the_twenty_sixth_sets_rules_stay_linear(unit: str) -> None:
    test_the_eighteenth_sets_rules_stay_linear(unit)
