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
#
# The fourth one (tests/data/REDACTION_HOLDOUT4.md), written the same way, scored once on the redactor of
# 0d9c22c: 74 of 85 secret strings (0.871), 50 of 60 secret cases, 58 of 60 look-alikes kept (0.967). Misses: a
# key wrapped over two lines, a Maven settings.xml `<password>`, a CVV after a card and expiry, a Wi-Fi key, a
# seed phrase, a session cookie in a copied curl command, a Tencent SecretKey after its id in an SDK call, a
# Mailgun key and a Telegram bot token, an Azure SAS `sig=`, a password after "口令改了，新的是"; broken: a JSON
# schema's password field, an `.env.example` with placeholders. Folded in the same way (the forms have their
# own cases with new values in `FORM_CASES` below).
HOLDOUT_PATHS = (
    DATA / "redaction_holdout.jsonl",
    DATA / "redaction_holdout2.jsonl",
    DATA / "redaction_holdout3.jsonl",
    DATA / "redaction_holdout4.jsonl",
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
