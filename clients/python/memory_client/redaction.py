"""Redact secrets and personal identifiers from free text before it is stored, logged or dead-lettered.

Contract (pure functions, no I/O, never raise on any ``str``):

* ``redact(text) -> str`` returns ``text`` with every detected secret replaced by a typed placeholder
  ``[REDACTED:<type>]``; everything else is kept byte for byte.
* ``redact_with_report(text) -> (str, {type: count})`` does the same and counts replacements per type;
  types with no replacement are absent (a clean text gives ``{}``).
* ``redact_obj(obj) -> object`` rebuilds dicts (keys and values), lists, tuples and sets with every ``str``
  inside redacted; the value of a key that names a secret (``secret_kind_of_name``: ``password``,
  ``client_secret``, ``SecretAccessKey``, ``Authorization``, ``密钥``...) is replaced whole, numbers
  included; any other value is returned as is. Event metadata goes through it before it is stored.

Types: ``card`` (Luhn-valid with a known issuer prefix and length, and its CVV), ``cn_id`` (18-character
Chinese resident ID with a valid MOD 11-2 check digit and birth date), ``ssn`` (US ``AAA-GG-SSSS``, or 9
labelled digits), ``api_key`` (OpenAI, Anthropic, AWS, GitHub, Slack, Google, Stripe, Mailgun, Telegram,
``Bearer`` tokens, session cookies, URL signatures), ``jwt``, ``private_key`` (a whole PEM block, or to the
end of the text when the END line is missing; a wallet's seed phrase), ``national_id`` (a Dutch BSN, a
Brazilian CPF, a Spanish DNI / NIE, a Taiwan or Hong Kong ID, an Aadhaar number with a valid check, or any 12
digits right after the word Aadhaar; a UK National Insurance number after its label; a Canadian SIN, Swedish
personnummer, Indian PAN or German Steuer-ID (MOD 11,10) after its label; a Singapore NRIC, Korean RRN or French
NIR with a valid check), ``iban`` (valid mod 97),
``bank_account`` (a number after an account label where a bank, sort code, IBAN, routing or SWIFT code is
named nearby) and ``password`` (English or Chinese "password is ..." phrases and
``scheme://user:password@host`` URLs; only the value is replaced, the lead-in words stay).

Built from the forms secrets are written in, not from examples (the table of cases is
``tests/data/redaction_cases.jsonl``; its test split is scored only as a whole):

* a label that names a secret, in any spelling (``password``, ``DB_PASSWORD``, ``pw``, ``pwd``, ``passwd``,
  ``pass``, ``PIN``, 密码, 口令, 授权码 -> ``password``; ``secret``, ``client_secret``, ``SecretAccessKey``,
  ``api_key``, ``x-api-key``, ``token``, 密钥, 秘钥, 令牌 -> ``api_key``; ``private key``, 私钥 ->
  ``private_key``), then any connector ("is", "是", "为", ":", "：", "=", "->", "——", a quote of nested JSON)
  or just a space, in any surrounding language. After a key or token label the value must look generated
  (long, letters with digits or mixed case, not a version); after a password label any value counts except
  stand-ins (``<your-password>``, ``${VAR}``, ``****``), words of prose and lengths ("12 characters",
  "8位"); after a bare space a plain word counts only when a user was just named;
* pairs: ``user / pass: bob / hunter2``, ``login: admin / hunter2``, ``creds deploy:s3cret``,
  ``账号密码 ops/Ops_2024!``, ``用 test01 / Test0101 登录`` (only the password goes), and the value first:
  "hunter2 is my password"; HTTP ``Basic`` credentials (base64 of ``user:password``);
* shell and command-line forms: ``PGPASSWORD='...'``, ``MYSQL_PWD=...``, ``mysql -u me -pSECRET``,
  ``sshpass -p SECRET``, and each common tool's own password flag (``redis-cli -a``, ``docker login -p``,
  ``sqlcmd -P``, ``ldapsearch -w``, ``keytool -storepass``, ``openssl -passin pass:``, ``curl -u user:pass``,
  ``smbclient -U user%pass``...: the tool is named, since ``-a`` / ``-p`` mean other things elsewhere);
  server config directives (``requirepass``, ``masterauth``, ``auth_pass``, ``bindpw``, ``psk=``) at the start
  of a line; ``user:password`` where the sentence speaks of signing in ("basic auth", "login",
  登录), the second half looking like a password;
* short key labels ("AK：...", "SK = ...", a generated value only) and TOTP setup keys written in groups of
  four base32 characters after a secret / 2FA / 密钥 label;
* structured and copied forms: a key wrapped onto the next line(s) by a terminal (each piece alone on its
  line, looking generated), an access key id with its secret right after it (``Credential("AKID...",
  "...")``), an XML element named after a secret (Maven ``<password>``), cookies named after a session or
  a credential in a ``Cookie:`` / ``Set-Cookie:`` header or ``curl -b``, a signed URL's ``sig=`` /
  ``X-Amz-Signature=``, a card's CVV after its label or after a card number and its expiry, a Wi-Fi
  ``key`` where a Wi-Fi word is near, a wallet's seed phrase (12+ short words in one case after its label,
  no word of prose among them: type ``private_key``), a password whose change is told first ("口令改了，
  新的是 ...", "was reset, the new one is ...");
* stand-ins are kept: ``<your-key>``, ``${VAR}``, ``$(cat file)``, masks, capitalised template words
  (``USER:PASSWORD``, ``CHANGEME``), ``user:password@`` in a URL, ``changeme`` / ``replace-me`` where the text
  names an example file (``.env.example``), a JSON schema's definition of a password field, vendors'
  documented examples (``...EXAMPLE``, ``...EXAMPLEKEY``) and a type in code (``pw: str``);
* numbers written whole or in groups with spaces or dashes, the checksum deciding (Luhn and issuer for
  cards, the MOD 11-2 check character and birth date for Chinese IDs, SSA rules for SSNs, each group a
  multiple of 11 for a BitLocker recovery key);
* forms the fifth blind set showed: a password label in another language (contraseña, Passwort,
  WLAN-Schlüssel, mot de passe, パスワード, 비밀번호...) or pinyin ``mm 是``; a PIN or a door / entry code (门禁码,
  取款密码); a password told as changed, old and new ("原来那个 X 停用了，新的是 Y", "from X to Y"); credentials
  in prose ("type admin in the first box and X in the second", "the phrase we agreed on, X"); Cisco
  ``password 0 X`` and SNMP communities; a card's code after the card under any name (Amex CID, 背面后三位); age
  and DingTalk ``SEC`` secrets, Discord bot tokens; Docker's ``config.json`` ``auth``; cloud keys given by
  obsutil / ossutil / coscmd flags; kept: code references (``var.db_password``), ``<slots with spaces>``,
  Chinese placeholder words and tokens published by design (Mapbox ``pk.``, Stripe ``pk_live_``).
* forms the sixth blind set showed: a secret-bearing column of a CSV / Markdown table (password, 口令, api key,
  身份证号, NRIC: id columns by their checks); Japan's My Number (check digit); a private key as base64 of its PEM
  or as its DER body without PEM lines (a SEQUENCE opening with the version INTEGER); ``.pgpass`` lines, .NET
  appSettings, GCP ``private_key_id``, 访问密钥ID, Zhipu ``id.secret``; kept: templating (``{{ ... }}``,
  ``%(password)s``, Ansible ``!vault``), Terraform ``(sensitive value)`` and talk about a PEM header.
* forms the seventh blind set showed: Chinese key labels naming the secret half (访问密钥密文, 密匙, a
  value-form word such as 密文 / 明文 between any label and its connector); a bank account by a pay word (direct
  deposit, payroll); a URL query parameter named after a secret in any URL (``corpsecret``, ``appsecret``,
  ``q-signature``, ``access_token``, a long ``appid``); a password spelled out item by item (capital T,
  lowercase r, 3, K as in Kilo / 大写Q，小写k，井号) or sent in pieces (first half / 前半段); a change's new
  value after "now use" / 现在用; SQL ``INSERT`` of a password or token column, ``IDENTIFIED BY`` and ``SET
  PASSWORD``; Oracle's inline ``user/password`` (JDBC thin, sqlplus, expdp, rman, ``userid=``, ``CONNECT``); a
  one-time code told as a code (验证码, OTP, verification code, "G-730914 is your ... code"); kept: masked
  values (``****5ZEQ``, ``••••a91c``) and vendor prefixes filled with one character (``sk_test_XXXX``), slots
  saying where a value goes (``put-your-password-here``), "24 bytes", a date in a listing's column, a listed
  name ending in a credential word (``registry-cred``), a page's cursor (``pageToken``), a loopback URL whose
  password repeats its user (``guest:guest@localhost``) and a one-time code the writer says they never asked
  for.
* forms the eighth blind set showed: passwords a tool reads from its input or arguments (``echo 'u:p' |
  chpasswd``, a cloud-init ``chpasswd`` list, ``passwd --stdin``, ``htpasswd -b``, ``net user``); labels listed,
  then their values in order ("API Key 和 Secret Key 分别是 X 和 Y", "... respectively"); a well-known account, a
  slash and its password where passwords are spoken of ("admin / X"); a code told a few words after the lock it
  opens ("lockbox by the door, code N"); a pre-shared key (``PresharedKey``, ``PSK``); an access key id told
  with its value in text; a value after "- it's"; a one-time code is kept only when the writer says in the first
  person they never asked for it; kept: a comment mark after a reference, "is never emailed".
* forms the ninth blind set showed: a Wi-Fi network and its password as a pair ("guest wifi: Net / pw"); a
  passport number after its label in any language (护照号码, Reisepass-Nr., passeport; 6 to 10 capitals and digits,
  5+ digits); a PIN or code dictated as words or Chinese numerals ("is four one seven two", "密码是三五七九");
  codes listed after "each can be used once" / single-use / 只能用一次; credentials passed positionally to a
  database or mail client (``new PDO(dsn, 'u', 'pw')``, mysqli, ``getConnection``, Sequelize, ``.login``);
  ``APIv3 key`` and "密钥我设置成了 X"; kept: code that reads a secret (``getpass()``, ``os.environ``,
  ``process.env``, ``System.getenv``) or generates one (``random_password.x.result``), a variable passed on
  under its own name (``password=password)``).
* forms the tenth blind set showed: a CSV / TSV column named after an account or card number (``account_no``,
  银行卡号, 收款账号: its digit cells, as card / IBAN / bank account) and a card as a CSV cell; a number broken over two
  lines after its label (OCR), joined for its checksum; a password corrected right after it was told ("wait no,
  it's X now", 不对…现在是 X); a label OCR spaced out (``p a s s w o r d``, 密 码); a secret asked for by its label
  and given alone on the next line (a support chat's auth token); a CVV ending a sentence; kept: a log filter's
  stand-in (Rails ``[FILTERED]``, ``[REDACTED]``, ``(hidden)``), questions about a password policy / manager / a
  token's scope.
* forms the eleventh blind set showed: a password label as OCR misreads it (``Passvvord``, ``Passw0rd``) and a
  sticker's Wi-Fi key printed in groups after ``Key/PIN``; a CSV / TSV column named after a card's verification
  code (``cvv``, ``cvc``, 安全码); recovery codes listed one per line under a second factor's page (the GitHub 2FA
  page, 两步验证); a base64-encoded JSON object whose decoded text holds a secret (``.dockerconfigjson``); a
  passport's MRZ line (TD3 / TD2, by its ICAO 9303 check digits); a second generated key joined to a replaced one
  ("密钥是 X 和 Y", "X and Y"); a plaintext literal turned into a credential in code (``ConvertTo-SecureString "X"
  -AsPlainText``, ``NetworkCredential("u", "X")``); the rest of a replaced key wrapped onto the next line; a
  foreign password label with a qualifier of up to five words (contraseña del portal de inquilinos es X); kept: a
  key displayed as its head and tail around an ellipsis (``sk-...Xq9f``).
* forms the twelfth blind set showed: a prompt's label with the current value in square brackets (``aws
  configure``'s ``AWS Secret Access Key [None]: X``, ``Enter password [****]: X``); a relative clause between a
  label and its verb ("the debit card PIN I told you last week was 9721"); a fixed-length vendor key (Linear
  ``lin_api_``, ``npm_``, ``AIza``) cut by a line end, its head and its wrapped rest; a PESEL after its name (XML
  element, JSON key, label) by its check digit; a well-known account / password pair right after a host name or
  address; a denied value ("密码不是 X，应该是 Y", "isn't X, it's Y": both go); a hex secret typed in groups after its
  label (a Twilio auth token ``dbb1a3d0 a82dbfe3 ...``); a plural key label ("the keys are X and Y"); a second
  password joined by 和 / and; a Wi-Fi password in groups after 无线密码 / WiFi 密码; kept: a snake_case name
  whose last part names a secret after a bare label ("how do I pass db_password"), a denied plain word ("is not
  specified"), a grouped fingerprint or checksum.
* forms the thirteenth blind set showed: an account / password pair where the text speaks only of a way into a
  machine (ssh, sftp, 跳板机); a password alone on the line after its label ("Passphrase:\\nX"); "credential" (凭据,
  凭证) alone as the label; the rest of a value sent in a second message ("the rest: X", "剩下的是 X"); a device's
  lock-screen PIN (锁屏是 5338); a value spaced out as its OCR'd label is ("密 码 ： z B 7 d"); a password starting
  with a dot; and the twelfth set's leftovers: more fixed-length vendor keys cut by a line end (``ghp_``, ``hf_``,
  ``shpat_``, ``dop_v1_``, an AWS secret key after its label), an identity card's TD1 MRZ by its check digits;
  kept: a reflexive pronoun after a label ("types the password themselves").
* forms the fourteenth blind set showed (ordinary chat): a URL's user-info holding ``#``, ``/``, ``?`` or ``@``
  (``https://u:pa#ss@host``: up to the first ``@`` a host name follows); a user / password pair after any account
  label, words before its colon in either language ("账号发你：u / X", "the account for you: u / X", 帳號, 用户名);
  a well-known account and a strongly shaped password between spaced slashes with no login word near; an
  unlisted account before a spaced slash with a login word near; the password after a slash when a password
  label's rule took the account; server directives (requirepass, masterauth ...) quoted in a sentence; a
  one-time or authenticator code asked about ("验证码是不是 X", "the MFA code should be X", "code，现在是 X 吗") or
  quoted from a text ("Your code is X"); a card's security code by its other names (security code, CSC, CID, the
  code on the back, 背面的三位数) where a card is named; kept: a port and a path before an ``@`` in a URL, "admin /
  Reports2025", a commented-out directive, an authenticator's key in groups of four, a code that is a size.
* forms the fifteenth blind set showed (passwords as people choose them): a PIN or code said digit by digit
  ("the alarm code is 2 3 2 1", "pin: 6-1-1-8", "门禁密码是 8 5 2 0"); recovery / backup code lists under any of
  their labels in either language (备用验证码, 恢复代码, backup verification codes) with any list separator (、, |,
  /); a password starting with ``$`` told from a variable by its shape (``$Juniper140tiger``, not ``$VAR``,
  ``${VAR}``, ``$var_name``); kept: a setting whose name holds a directive's (``AUTH_PASSWORD_VALIDATORS``,
  ``auth_pass_type``), a zip or error code said digit by digit, a length, a version.
* forms the sixteenth blind set showed (ordinary turns and notes): every item of a code list of one shape, codes
  of letters only among them (GitHub's ``gsvr-qvja``) and those after a placeholder an earlier rule left; Discord
  channel webhook URLs, ending at CJK punctuation as at a space; an account label, an e-mail address, `` / `` and
  a password of letters and digits ("demo account: demo@acme.io / huanglei1995"); kept: "read-only" after such a
  list, a version, date or phone number after an address. The command-line rules look for their flag within 600
  characters of the tool's name (linear in the number of mentions).
* forms the seventeenth blind set showed: Go's MySQL DSN without a scheme (``user:pass@tcp(host:3306)/db``);
  an account pair's generated password with no digit (``ops-admin / =c*UyJCIqF%bLV``); a parcel pickup code
  (取件码, 取货码, 提货码, "pickup code", "parcel locker code"); a card in any grouping after its label (卡号是
  622891-2219997332154: issuer and checksum decide); the decoded value of a replaced password told in prose
  (解码后应该是 X, "decodes to X"); kept: the DSN template ``user:password@tcp(...)``, a dashed number without a
  card's label, "decodes to JSON", a count of password events ("5 failed password attempts").
* text typed with an input method in full-width mode (``密码：ｙａｎｇｌｅｉ＃１９８４``,
  ``８４０６９６``) or with spaces that are not ASCII's (the ideographic U+3000, a no-break space) is read as its
  ASCII twin by every rule, and what is kept comes back as it was written (set 25; `_FOLD`).

Redaction is idempotent: a placeholder never completes a match (the rules that start at a placeholder, a CVV
after a card, a key joined to a key or wrapped after it, a corrected password, run only once this call has
replaced the first, and take no placeholder), so ``redact(redact(x)) == redact(x)``.
"""

from __future__ import annotations

import base64
import contextvars
import datetime as _dt
import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

# A rule's action: given a match, return (replacement text, number of secrets replaced in it).
_Action = Callable[[re.Match[str]], tuple[str, int]]

# Every placeholder starts with this; value patterns refuse to start on it, which is what makes reruns no-ops.
_MARK = "[REDACTED:"

# Vendors' documented example credentials end in the word EXAMPLE (AWS: `AKIAIOSFODNN7EXAMPLE`,
# `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`): no generated key does, so such a value is a placeholder.
_DOC_EXAMPLE = re.compile(r"EXAMPLE(?:KEY)?\Z")


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
    # Labelled rules: a pattern for the label alone. The full pattern is then tried at every label found
    # near an occurrence of a gate word (a `str.find`, not a regex scan of the whole text), so a long turn
    # costs little more than its gate words, and a rejected label ("AccessKey Secret: ...", whose value
    # "Secret" is no key) never hides a later one inside its match. `WINDOW`: head / value reach.
    head: re.Pattern[str] | None = None
    windowed: bool = False
    # Windowed rules: words of which one must occur somewhere in the text (found by the same shared scan)
    # for the rule to run at all: a Wi-Fi word for a bare "key is ..." label.
    context: tuple[str, ...] = ()
    # Run only once a rule of this kind has replaced something in the text (a CVV after a card number).
    after: str = ""
    # A pattern the input must contain for the rule to run, once its gate is passed (searched once per text,
    # shared by the rules that name the same one): a long number for the rules that read one.
    needs: re.Pattern[str] | None = None
    # Windowed rules whose value is a bare run (`_BARE_RUN`): how that run goes on past the bound (`_RUN_ON`, or
    # `_KEY_RUN_ON` for a key's value, which ends at a cut); see `_bare_reach` and `_apply_windowed`.
    run_on: re.Pattern[str] | None = None


def _swap(kind: str, check: Callable[[str], bool] | None = None) -> _Action:
    """Replace the group named ``v`` (or the whole match) by the placeholder when ``check`` accepts it."""
    tag = _tag(kind)

    def action(m: re.Match[str]) -> tuple[str, int]:
        whole = m.group()
        start, end = m.span("v") if "v" in m.re.groupindex else m.span()
        value = m.string[start:end]
        if (check is not None and not check(value)) or _DOC_EXAMPLE.search(value):
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
# after means a float (0.4111...); a "+" before means a phone number (+4...); a comma then three digits a
# thousands group, but a comma then a number of another length is the next cell of a CSV row (the tenth set).
# The (?=...{12}) pre-check rejects short numbers (dates, prices) without a Python callback per number.
_DIGIT_RUN = re.compile(
    r"[0-9](?<![0-9A-Za-z_+][0-9])(?<![0-9]\.[0-9])(?=[0-9 -]{12})"
    r"[0-9]*+(?:[ -][0-9]++)*+(?![0-9A-Za-z_]|\.[0-9]|,[0-9]{3}(?![0-9]))"
)
_GROUP = re.compile(r"[0-9]+")


# After a card number's label ("卡号是622891-2219997332154", "card no. 4111 11 1111111111"), any grouping: the label
# says a card is written, and the issuer prefix and the checksum decide (set 17's h17-148, 6-13 with one dash).
_CARD_LABEL_BEFORE = re.compile(
    r"(?:卡号|卡號|银行卡|銀行卡|信用卡|借记卡|借記卡|储蓄卡|儲蓄卡|(?<![A-Za-z])card(?:[ \t]*(?:number|num|no\.?|#))?)"
    r"[ \t]*(?:[:：=#]|(?:是|为|為)|(?<![A-Za-z])is(?![A-Za-z]))?[ \t]*\Z",
    re.IGNORECASE,
)


def _card_end(run: str, groups: list[tuple[int, int]], i: int, loose: bool = False) -> int | None:
    """Index of the last group of the longest card starting at group ``i``, or None."""
    if run[groups[i][0]] not in "23456":  # no issuer prefix starts with 0, 1, 7, 8 or 9
        return None
    best, digits = None, ""
    for j in range(i, len(groups)):
        s, e = groups[j]
        # Grouped cards use groups of 3-7 digits (4-4-4-4, 4-6-5, 4-4-4-4-3); after a card's label, any.
        if j > i and not loose and not (3 <= e - s <= 7 and 3 <= groups[i][1] - groups[i][0] <= 7):
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
    loose = _CARD_LABEL_BEFORE.search(m.string, max(0, m.start() - 24), m.start()) is not None
    # A run may hold a card next to other numbers ("qty 2 4111 1111 1111 1111"): try every start group.
    out, last, i, found = [], 0, 0, 0
    while i < len(groups):
        j = _card_end(run, groups, i, loose and i == 0)
        if j is None:
            i += 1
            continue
        out += [run[last : groups[i][0]], _tag("card")]
        last, i, found = groups[j][1], j + 1, found + 1
    out.append(run[last:])
    return "".join(out), found


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
# 18 characters, the last a digit or X, written whole or in groups joined by single spaces or dashes
# ("110105 19491231 002X", "4401-0619-7511-0345-69"): the checksum and the birth date decide.
_CN_ID_RUN = re.compile(
    r"[1-9](?<![0-9A-Za-z_+][1-9])(?<![0-9][.-][1-9])(?<![0-9] [1-9])(?=[0-9 -]{13})"
    r"[0-9]*+(?:[ -][0-9]++)*+(?:(?<=[0-9])[Xx])?(?![0-9A-Za-z_]|\.[0-9]|,[0-9]{3}(?![0-9]))"
)
_ID_GROUP = re.compile(r"[0-9]+[Xx]?")


def _cn_id_action(m: re.Match[str]) -> tuple[str, int]:
    run = m.group()
    if len(run) - run.count(" ") - run.count("-") < 18:
        return run, 0
    groups = [g.span() for g in _ID_GROUP.finditer(run)]
    out, last, found, i = [], 0, 0, 0
    while i < len(groups):
        chars, j, hit = "", i, None
        while j < len(groups) and len(chars) < 18:
            chars += run[groups[j][0] : groups[j][1]]
            if len(chars) == 18 and "X" not in chars[:17].upper() and _cn_id_ok(chars):
                hit = j
            j += 1
        if hit is None:
            i += 1
            continue
        out += [run[last : groups[i][0]], _tag("cn_id")]
        last, i, found = groups[hit][1], hit + 1, found + 1
    out.append(run[last:])
    return "".join(out), found


# A number broken over two lines by OCR or a narrow column (the tenth set: "身份证号码：3101041991\n02226858", "Card
# No.  54666941\n03970824  VALID THRU"): the pieces are joined and the checksum decides, as for one run (MOD 11-2
# and a birth date for a Chinese ID; issuer and Luhn for a card). The first piece must follow a label on its line
# (text that is not a number): a column of numbers one per line is a list, not one number.
_BROKEN_NUMBER = re.compile(
    r"(?P<a>[0-9](?<![0-9A-Za-z_+.-][0-9])(?<![0-9] [0-9])[0-9]{3,17}(?:[ -][0-9]{3,17})*)[ \t]*\r?\n[ \t]*"
    r"(?P<b>[0-9]{2,17}(?:[ -][0-9]{2,17})*[Xx]?)(?![0-9A-Za-z_]|\.[0-9])"
)
# (searched from the newline, the scan's cheapest start: the first piece must end its line, no space after it)
_BROKEN_NEEDS = re.compile(r"\n(?<=[0-9]{4}\n)[ \t]*[0-9]{2}")


def _broken_number_action(kind: str) -> _Action:
    def action(m: re.Match[str]) -> tuple[str, int]:
        text = m.string
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        if not any(not (c.isspace() or c.isdigit()) for c in line):
            return m.group(), 0
        joined = "".join(c for c in m.group("a") + m.group("b") if c.isalnum()).upper()
        if kind == "cn_id":
            ok = len(joined) == 18 and joined[:17].isdigit() and _cn_id_ok(joined)
        else:
            ok = 13 <= len(joined) <= 19 and joined.isdigit() and _issuer_ok(joined) and _luhn_ok(joined)
        return (_tag(kind) + "\n", 1) if ok else (m.group(), 0)

    return action


def _cn_id_ok(s: str) -> bool:
    check = "10X98765432"[sum(int(c) * w for c, w in zip(s, _CN_WEIGHTS, strict=False)) % 11]
    if s[17].upper() != check:
        return False
    try:
        _dt.date(int(s[6:10]), int(s[10:12]), int(s[12:14]))
    except ValueError:
        return False
    return True


# SSNs the SSA voided after they were printed on sample cards (Woolworth's 078-05-1120 of 1938, the 1940 pamphlet's
# 219-09-9999): kept when the text names it a sample, a specimen or the voided / Woolworth card (set 23); told as
# someone's own ("her social security number is 078-05-1120") it is still redacted.
_SAMPLE_SSNS = frozenset(("078051120", "219099999"))
_SAMPLE_SSN_CONTEXT = re.compile(r"woolworth|sample|specimen|void|famous|pamphlet|example|fun[ \t]+fact", _I)


def _ssn_sample(m: re.Match[str]) -> bool:
    digits = "".join(c for c in m.group("v") if c.isdigit())
    if digits not in _SAMPLE_SSNS:
        return False
    return _SAMPLE_SSN_CONTEXT.search(m.string, max(0, m.start() - 160), m.end() + 160) is not None


def _ssn_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    digits = "".join(c for c in value if c.isdigit())
    if not _ssn_ok(digits) or _ssn_sample(m):
        return m.group(), 0
    return _swap_value("ssn")(m)


def _ssn_ok(digits: str) -> bool:
    """SSA never issues area 000, 666 or 9xx, group 00 or serial 0000."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# Dashes or spaces, the same separator twice; not a slice of a longer dashed number (phone 1-555-12-3456).
_SSN = re.compile(
    r"(?P<v>[0-9](?<![0-9A-Za-z_+][0-9])(?<![0-9][.-][0-9])[0-9]{2}([ -])[0-9]{2}\2[0-9]{4})(?![0-9A-Za-z_]|-[0-9])"
)
# Nine bare digits are only an SSN when labelled so.
_SSN_LABELLED = re.compile(
    r"s(?<![A-Za-z]s)(?:sn|ocial[ _-]?security(?:[ _-]?(?:number|num|no))?)(?![A-Za-z])"
    r"\.?[ \t]*(?:[:#=]|is|was)?[ \t]*(?P<v>[0-9]{9})(?![0-9A-Za-z_])",
    _I,
)

# ---------------------------------------------------------------- tokens and keys


# Whether a value holds a digit, a letter, a capital, a small letter, a capital right after a small letter. For ASCII
# text (a bare value always is) by `str` methods that run in C, `in` or a case change (a Python loop over each
# character of the value of each label of a long run was most of what that run cost; a regex class scan is slower
# still); by `str`'s tests one character at a time otherwise (their Unicode classes are wider than ASCII's).
_ASCII_CLASS = str.maketrans(
    {
        c: "9" if c.isdigit() else "A" if c.isupper() else "a" if c.islower() else "."
        for c in map(chr, range(128))
    }
)


def _has_digit(s: str) -> bool:
    if s.isascii():
        return any(digit in s for digit in "0123456789")
    return any(c.isdigit() for c in s)


def _has_letter(s: str) -> bool:
    return s.upper() != s.lower() if s.isascii() else any(c.isalpha() for c in s)


def _has_upper(s: str) -> bool:
    return s.lower() != s if s.isascii() else any(c.isupper() for c in s)


def _has_lower(s: str) -> bool:
    return s.upper() != s if s.isascii() else any(c.islower() for c in s)


def _inner_capital(s: str) -> bool:
    if s.isascii():
        return "aA" in s.translate(_ASCII_CLASS)
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(s))


def _openai_like(s: str) -> bool:
    # Real keys are random: a digit plus upper case or a long alphanumeric stretch. "sk-" + hyphenated words
    # (sk-learn-style prose) is not a key.
    longest = max(len(p) for p in re.split(r"[-_]", s))
    return _has_digit(s) and (any(c.isupper() for c in s) or longest >= 12)


def _discord_ok(token: str) -> bool:
    """A Discord bot token's first part is the bot's user id (a snowflake, 17 to 20 digits) in base64."""
    first = token.split(".", 1)[0]
    try:
        decoded = base64.b64decode(first + "=" * (-len(first) % 4), altchars=b"-_", validate=True)
    except ValueError:
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


def _bearer_action(m: re.Match[str]) -> tuple[str, int]:
    token = m.group("v").rstrip(".")  # a sentence-ending full stop is not part of the token
    if len(token) < 20 or not _has_digit(token) or not any(c.isalpha() for c in token):
        return m.group(), 0
    return m.group("lead") + _tag("api_key") + m.group("v")[len(token) :], 1


# (pattern, extra check on the match, gate words). Each token is bounded so a longer word never leaks a slice.
_START, _END = r"(?<![A-Za-z0-9_-])", r"(?![A-Za-z0-9_-])"
# An access key id and its secret side by side, as an SDK takes them: `Credential("AKID...", "9uGQ...")`,
# `("LTAI...", "...")`, "AKIA... / wJalr...": the secret goes with the id when it looks generated.
_PAIRED_SECRET = (
    r"(?:(?P<sep>[\"'`]?[ \t]*(?:[,，/／|;；][ \t]*)?[\"'`]?)"
    r"(?P<paired>(?!\[REDACTED:)[A-Za-z0-9+/=_-]{20,64})(?![A-Za-z0-9+/=_-]))?"
)
_VENDOR_GATE = ("age-secret-key-1", "sec", "token", "discord")


# A webhook URL whose credential is a stand-in (set 25: Slack's documented
# `hooks.slack.com/services/TXXXXXXXX/BXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX`, Feishu's
# `.../hook/xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`): the format of one, shown in docs, not one. Its last segment (the
# token, the hook's id, the `key=`) is read as a label's value is (`_stand_in`): x or X repeated with dashes between
# groups (a mask), a slot's words (`your_webhook_token_here`), a capitalised template name (`WEBHOOK_TOKEN`); the
# public ids before it (Slack's T... / B...) are not read. (Zeros are a value, as a PIN of them is.)
def _webhook_ok(url: str) -> bool:
    return not _stand_in(re.split(r"[/=]", url.rstrip("/"))[-1])


_API_RULES: list[tuple[str, Callable[[str], bool] | None, tuple[str, ...]]] = [
    (r"sk-(?<![A-Za-z0-9_-]sk-)[A-Za-z0-9_-]{20,400}" + _END, _openai_like, ("sk-",)),  # + Anthropic sk-ant-
    (_START + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _END + _PAIRED_SECRET, None, ("akia", "asia")),
    (
        _START + r"gh[pousr]_(?:[A-Za-z0-9]{30,255}|[A-Za-z0-9]{12,29}(?=[ \t]*\r?\n))" + _END,
        None,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    (_START + r"github_pat_[A-Za-z0-9_]{22,255}" + _END, None, ("github_pat_",)),
    (_START + r"xox[abprs]-[A-Za-z0-9-]{10,250}" + _END, _has_digit, ("xox",)),
    (
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]{8,}",
        _webhook_ok,
        ("hooks.slack",),
    ),
    # chat-bot webhooks whose URL is the credential: WeCom (企业微信) and Feishu / Lark
    (
        r"(?:https?://)?qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=[\w-]{16,}",
        _webhook_ok,
        ("qyapi.weixin",),
    ),
    (
        r"(?:https?://)?open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[\w-]{16,}",
        _webhook_ok,
        ("/bot/v2/hook/",),
    ),
    # Discord's channel webhooks (`discord.com/api/webhooks/<id>/<token>`, also discordapp.com, ptb. / canary.,
    # an API version): the URL is the credential; the token ends at anything not of its alphabet (a space, a
    # Chinese comma or full stop: the rules here are ASCII, so ，。；、） end it as a space does)
    (
        r"(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v[0-9]{1,2}/)?webhooks/[0-9]{17,20}/"
        r"[A-Za-z0-9_-]{40,100}(?![\w-])",  # (not `_END`: a URL has no wrapped rest)
        _webhook_ok,
        ("/webhooks/",),
    ),
    # A key of fixed length cut by a line end (a narrow terminal, a copy from a PDF) is its head there, the rest on
    # the next line(s) (`_WRAP`): a head of 12+ characters that ends its line goes with its wrapped rest.
    (_START + r"AIza(?:[A-Za-z0-9_-]{35}|[A-Za-z0-9_-]{12,34}(?=[ \t]*\r?\n))" + _END, None, ("aiza",)),
    (_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}" + _END, _has_digit, ("_live_", "_test_")),
    # More tokens whose prefix names the service (the forms GitHub's secret-scanning partner patterns and
    # the gitleaks default rules list): Stripe webhook signing secrets, Alibaba Cloud AccessKey IDs,
    # Tencent Cloud SecretIds, GitLab, Hugging Face, npm, PyPI, SendGrid, Shopify, DigitalOcean, Slack apps.
    (_START + r"whsec_[A-Za-z0-9+/=]{24,}" + _END, None, ("whsec_",)),
    (_START + r"LTAI[A-Za-z0-9]{12,30}" + _END + _PAIRED_SECRET, _has_digit, ("ltai",)),
    (_START + r"AKID[A-Za-z0-9]{13,40}" + _END + _PAIRED_SECRET, _has_digit, ("akid",)),
    (_START + r"glpat-[A-Za-z0-9_-]{20,}" + _END, None, ("glpat-",)),
    (_START + r"hf_(?:[A-Za-z]{30,}|[A-Za-z]{12,29}(?=[ \t]*\r?\n))" + _END, None, ("hf_",)),
    (_START + r"npm_(?:[A-Za-z0-9]{36}|[A-Za-z0-9]{12,35}(?=[ \t]*\r?\n))" + _END, None, ("npm_",)),
    # Linear's API keys (`lin_api_` + 40) and OAuth tokens (`lin_oauth_` + 64 hex), whole or cut by a line end
    (
        _START + r"lin_(?:api|oauth)_(?:[A-Za-z0-9]{40,64}|[A-Za-z0-9]{12,39}(?=[ \t]*\r?\n))" + _END,
        _has_digit,
        ("lin_api_", "lin_oauth_"),
    ),
    (_START + r"pypi-(?:[A-Za-z0-9_-]{50,}|[A-Za-z0-9_-]{12,49}(?=[ \t]*\r?\n))" + _END, None, ("pypi-",)),
    (_START + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}" + _END, None, ("sg.",)),
    # (these too whole, or cut by a line end after 12+ characters, the rest on the next line: `_WRAP`)
    (
        _START + r"shp(?:at|ss|ca|pa)_(?:[a-fA-F0-9]{32}|[a-fA-F0-9]{12,31}(?=[ \t]*\r?\n))" + _END,
        None,
        ("shpat_", "shpss_", "shpca_", "shppa_"),
    ),
    (_START + r"dop_v1_(?:[a-f0-9]{64}|[a-f0-9]{12,63}(?=[ \t]*\r?\n))" + _END, None, ("dop_v1_",)),
    (_START + r"xapp-[0-9]-[A-Za-z0-9-]{10,}" + _END, None, ("xapp-",)),
    # Mailgun's private API keys (`key-` + 32 hex) and Telegram bot tokens (the bot's id, a colon, then 35
    # characters that start with "AA")
    (_START + r"key-[0-9a-f]{32}" + _END, _has_digit, ("key-",)),
    (r"[0-9](?<![A-Za-z0-9_:-][0-9])[0-9]{4,15}:AA[A-Za-z0-9_-]{33}" + _END, None, (":aa",)),
    # age's secret keys (bech32, upper case), DingTalk robots' signing secrets (`SEC` + 64 hex), Discord bot
    # tokens (the bot's id in base64, a timestamp, an HMAC; checked by decoding the id, and read where the text
    # speaks of a token or Discord: with no literal to look for, a scan of every text would cost more). The three
    # share one gate: one search of the text for their words.
    (
        r"AGE-SECRET-KEY-1(?<![A-Za-z0-9_-]AGE-SECRET-KEY-1)[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _END,
        None,
        _VENDOR_GATE,
    ),
    (r"SEC(?<![A-Za-z0-9_-]SEC)[0-9a-f]{64}" + _END, None, _VENDOR_GATE),
    (
        r"[MNO](?<![A-Za-z0-9_.-][MNO])[DTjz][A-Za-z0-9_-]{21,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        + _END,
        _discord_ok,
        _VENDOR_GATE,
    ),
]
# A long key wrapped by a terminal or an editor: the rest of it on the following line(s), each alone on its
# line ("sk-proj-X0Fj...\nim3Gwx..."). Each piece must look generated (`_key_piece`); the first that does
# not ("thanks", "README") ends the key.
_WRAP = r"(?P<wrap>(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9_-]{6,400}[ \t]*(?=\r?\n|\Z))+)?"
_WRAP_PIECE = re.compile(r"[ \t]*\r?\n[ \t]*(?P<p>[A-Za-z0-9_-]+)[ \t]*")


# A UUID or a hex digest on the next line is an identifier of its own, not the rest of a key.
_ID_LINE = re.compile(
    r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}"
)


def _key_piece(s: str) -> bool:
    return _has_digit(s) or (any(c.isupper() for c in s) and any(c.islower() for c in s))


def _wrapped_piece(s: str) -> bool:
    # (a CamelCase name on the next line is a word of its own: `NextSteps`, `ReadMe`)
    return _key_piece(s) and _ID_LINE.fullmatch(s) is None and _CAMEL_WORDS.fullmatch(s) is None


def _key_action(check: Callable[[str], bool] | None) -> _Action:
    """A prefixed key (and the pieces of it wrapped onto the next lines) -> one placeholder."""
    tag = _tag("api_key")

    def action(m: re.Match[str]) -> tuple[str, int]:
        whole = m.group()
        groups = m.groupdict()
        if groups.get("sep") is not None:  # an id with, perhaps, its secret
            key = whole[: m.start("sep") - m.start()]
            if (check is not None and not check(key)) or _DOC_EXAMPLE.search(key) or _MASKED.fullmatch(key):
                return whole, 0
            paired = groups["paired"]
            if groups["sep"] and _generated_key(paired) and not _DOC_EXAMPLE.search(paired):
                return tag + groups["sep"] + tag, 2
            return tag + whole[len(key) :], 1
        wrap = groups.get("wrap") or ""
        key = whole[: len(whole) - len(wrap)]
        if (check is not None and not check(key)) or _DOC_EXAMPLE.search(key) or _MASKED.fullmatch(key):
            return whole, 0
        end = len(key)
        for piece in _WRAP_PIECE.finditer(wrap):
            if not _wrapped_piece(piece.group("p")):
                break
            end = len(key) + piece.end("p")
        return tag + whole[end:], 1

    return action


def _api_pattern(p: str) -> re.Pattern[str]:
    return re.compile(p + _WRAP if p.endswith(_END) else p, re.ASCII)  # an id with its secret: no wrap


_AWS_SECRET = re.compile(
    r"(?<![A-Za-z])(?:aws[ _-]?secret[ _-]?(?:access[ _-]?)?key|secret[ _-]?access[ _-]?key)(?:[ _-]?id)?"
    r"[\"']?[ \t]*(?:[:=]|=>|is)[ \t]*[\"']?(?P<v>[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
    # (or cut by a line end, the rest on the next line: 40 characters in all, checked by the action)
    r"|(?P<head>[A-Za-z0-9/+]{12,39})[ \t]*\r?\n[ \t]*(?P<rest>[A-Za-z0-9/+]{1,28})(?![A-Za-z0-9/+=]))",
    _I,
)


def _aws_secret_action(m: re.Match[str]) -> tuple[str, int]:
    if m.group("head") is not None and len(m.group("head")) + len(m.group("rest")) != 40:
        return m.group(), 0
    return _swap("api_key")(m)


_BEARER = re.compile(r"(?<![A-Za-z])(?P<lead>bearer[ \t]+)(?P<v>[\w.~+/-]{20,}=*)(?![\w.~+/=-])", _I)
# Mapbox tokens are JWT-shaped: `sk.eyJ...` is secret (the JWT rule takes its body), `pk.eyJ...` is the
# public token Mapbox documents as safe to ship in a web page, and is kept.
_JWT = re.compile(
    r"eyJ(?<![A-Za-z0-9_-]eyJ)(?<!pk\.eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)?"
)
# The lazy body stops at the first END line; `\Z` takes a truncated block to the end of the text.
_PEM_NAME = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# A header followed on its line by words ("... PRIVATE KEY----- ではなく ...") is talk about one, not a key: the
# body starts on the next line (or after an escaped newline, a quote, or base64 on the same line).
_PRIVATE_KEY = re.compile(
    r"-----BEGIN "
    + _PEM_NAME
    + r"(?=[ \t]*(?:\r?\n|\\(?:r\\)?n|\Z|[\"']|[A-Za-z0-9+/]{16}))[\s\S]*?(?:-----END "
    + _PEM_NAME
    + r"|\Z)"
)

# ---------------------------------------------------------------- passwords

# scheme://user:password@host (the scheme itself is irrelevant, so the scan starts at the "://" literal);
# greedy up to the last "@" of the authority, since passwords may contain "@".
_URL_PASSWORD = re.compile(
    r"://(?P<user>[^\s:/?#@\[\]]*):(?P<v>(?!\[REDACTED:)(?:[^\s/?#]|\?(?=[^\s/#]*@))+)(?=@)"
)
# `postgres://user:password@localhost` in a README or an `.env.example`: both halves name their slot.
_URL_TEMPLATE_USER = re.compile(r"(?:db[_-]?|my[_-]?|your[_-]?)?(?:user(?:name)?|usr|login|name)", _I)
_URL_TEMPLATE_PASSWORD = re.compile(
    r"(?:db[_-]?|my[_-]?|your[_-]?)?(?:password|passwd|pass|pwd|pw|secret)", _I
)


# A local default: the password repeats the user on a loopback host (`amqp://guest:guest@localhost`,
# `postgres://postgres:postgres@127.0.0.1`), as a service documents for a development machine.
_LOOPBACK = re.compile(r"@(?:localhost|127\.[0-9.]+|\[::1\]|0\.0\.0\.0|host\.docker\.internal)(?![\w.-])", _I)


def _url_password_ok(m: re.Match[str]) -> bool:
    value = m.group("v")
    if _stand_in(value):
        return False
    if value == m.group("user") and _LOOPBACK.match(m.string, m.end()):
        return False
    return not (_URL_TEMPLATE_USER.fullmatch(m.group("user")) and _URL_TEMPLATE_PASSWORD.fullmatch(value))


def _url_password_action(m: re.Match[str]) -> tuple[str, int]:
    if not _url_password_ok(m):
        return m.group(), 0
    return _swap("password")(m)


# ... and a password holding what a URL parser would end the authority at (the fourteenth set:
# `https://deploy:Harbor193#ma@jenkins.acme.dev/job/...`; also `/`, `?` or `@` in it): run before the rule above
# (which would take `Q7` of `app:Q7@x#y9@db.lan` and leave the rest), the user-info reaches the first `@` that a
# host name follows (a dotted name, an IPv4 or localhost, a port, then the end of the authority: not `#`),
# within 128 characters; only a value with `#`, `/` or `?` in it is taken here, the others are left to the rule
# above. A port and a path before an
# `@` (`https://example.com:8443/users/@jane.doe/`) is no password: the value must not start as a port does.
_URL_PASSWORD_WIDE = re.compile(
    r"://(?P<user>[^\s:/?#@\[\]]{1,64}):(?P<v>(?!\[REDACTED:)[^\s]{1,128}?)"
    r"@(?=(?:(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z0-9-]{1,63}|localhost)(?::[0-9]{1,5})?(?:[/?\s),;'\"\]]|\Z))"
)
# Go's MySQL driver writes its DSN without a scheme, `user:pass@protocol(address)/db` (set 17's h17-072
# "root:D2wS3Z5l93b7@tcp(10.0.3.7:3306)/shop"): a user, a colon, the password (`@` allowed) up to the `@` of the
# protocol (tcp, tcp4, tcp6, udp, unix) and its parenthesised address. The template `user:password@tcp(...)` is
# kept, as for URLs. The start is a run's first character and the reach is bounded: linear.
_GO_DSN = re.compile(
    r"(?<![\w.%+:/@\[-])(?P<user>[A-Za-z0-9_.+-]{1,64}):(?P<v>(?!\[REDACTED:)[^\s/]{1,128}?)"
    r"(?=@(?:tcp[46]?|udp|unix)\()",
    re.IGNORECASE,
)
_GO_DSN_GATE = ("@tcp", "@udp(", "@unix(")

_URL_PORT_START = re.compile(r"[0-9]{1,5}(?:[/?#]|\Z)")


def _url_password_wide_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    if (
        not any(c in "#/?" for c in value)
        or _URL_PORT_START.match(value)
        or "://" in value
        or not _pw_shaped(value.replace("/", ""))
        or not _url_password_ok(m)
    ):
        return m.group(), 0
    return _swap("password")(m)


# Labels that name a secret, in any of their written forms: `password`, `DB_PASSWORD`, `clientSecret`,
# `SecretAccessKey`, `x-api-key`, `HF_TOKEN`, `密钥`... An ASCII head must start a word (after a non-letter,
# `_`, or at a camelCase step: checked in `_head_starts_word`) and end one (`token_count`, `passwords`,
# `passport`, `AccessKeyId` are not labels). Three families, one placeholder type each.
# (with the letters OCR confuses in a photo of a label: "Passvvord", "Passw0rd", "Passwcrd")
_HEAD_PW = (
    r"(?P<ph>pass(?:word|wd|code|phrase|(?:vv|w)[o0c]r(?:d|cl))s?|pass[ \t-]phrases?|pwd|pw|pass|(?-i:PIN))"
    r"(?![A-Za-z0-9_])"
    # (密码短语, 口令短语: a passphrase, set 24: "私钥的密码短语（passphrase）是「canyon maple glacier river」")
    r"|(?P<pz>(?:密码|密碼|口令)(?:短语|短語)?|授权码|授權碼)"
)
_KEY_WORDS = (
    # (a session key too, set 24: WeChat's `session_key`, `wx_session_key`, a `SESSION_KEY=` in an .env: the key a
    # session's data is signed or decrypted with)
    # a pre-shared key (WireGuard `PresharedKey`, IPsec `PSK`)
    r"(?:pre[ _-]?)?shared[ _-]?(?:key|secret)|psk"
    r"|(?:aws[ _-]?)?secret(?:[ _-]?access)?(?:[ _-]?key)?|api[ _-]?v[0-9][ _-]?key"
    r"|(?:api|access|signing|encryption|master|account|auth|app|client|consumer|shared[ _-]?access|webhook"
    r"|license|session)[ _-]?key|api[ _-]?token|token"
)
# (and Azure's `key1` / `key2` / primary key for a storage account; a Chinese key label may end in 值 / 串 /
# 密文 / 明文 / 内容 / 字符串, or name its secret half in English: "访问密钥值：...", "访问密钥密文：...",
# "密钥Secret：..."; 密匙 is the common miswriting of 密钥)
# In text, an access key's id told with a generated value (`Access Key ID AKLT...`, `AccessKey ID：...`) goes too:
# the name of a machine credential, given as half of the pair (a mapping's `AccessKeyId` field is kept: an id
# alone, as a cloud's API answers it, is no secret).
_ACCESS_KEY_ID = r"access[ _-]?key[ _-]?id"
_HEAD_KEY = (
    r"(?P<ph>"
    + _ACCESS_KEY_ID
    + "|"
    + _KEY_WORDS
    + r"|key[12]|(?:primary|secondary)[ _-]?key|private[ _-]?key[ _-]?id)s?(?![A-Za-z0-9_])"
    # a plural key label with its verb ("the keys are X and Y": each a generated value; the joined one is read
    # by `_KEY_AND_KEY`)
    r"|(?:(?<![A-Za-z])keys(?=[ \t]+(?:are|were)[ \t])|(?<![A-Za-z])keys(?=[ \t]*[:：]))"
    r"|(?P<pz>(?:密钥|秘钥|密鑰|密匙|秘匙|令牌)(?:值|字符串|串|密文|明文|内容|ID|Id|id|Secret|secret|SECRET)?)"
)
_HEAD_PRIVATE = r"(?P<ph>private[ _-]?key)(?![A-Za-z0-9_])|(?P<pz>私钥|私鑰)"
# What may stand between a label and its value. `strong`: punctuation or a verb ("is", "是", ":", "->",
# "——"); otherwise only spaces (or nothing after a Chinese label: "密码123456"), which asks more of the value.
# A Chinese word naming the form of the value between any label and its connector: "App Secret 密文：...",
# "SK 明文 = ...", "密码明文：...".
_ZH_SUFFIX = r"(?:[ \t]*(?:密文|明文|原文|值|字符串|内容))?"
# (a prompt shows the current value in square brackets before its colon: aws configure's `AWS Secret Access Key
# [None]: ...`, `Enter password [****]: ...`; a host with its port in the qualifier, set 18's "the app password for
# smtp.gmail.com:587 is X", is no colon connector; a relative clause may stand between a label and its verb: "the PIN
# I told you last week was ...", "the password we set yesterday is ...", up to five words after the pronoun)
_QUALIFIER = (
    r"(?:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[\w@.'-]+(?::[0-9]{1,5}(?![\w]))?){1,4}?"
    r"|[ \t]+(?:that[ \t]+|which[ \t]+)?(?:I|we|you|he|she|they)(?:[ \t]+[\w'-]+){1,5}?(?=[ \t]+(?:is|was)[ \t])"
    # (or a person named by a noun, set 21: "the password the teacher gave out is X", "the PIN my bank sent was X";
    # a verb in the past or "gave" / "sent" must follow the noun, so "the password the site requires" stays prose)
    r"|[ \t]+(?:that[ \t]+)?(?:the|my|our|his|her|their|your)[ \t]+[A-Za-z'-]{2,20}[ \t]+"
    r"(?:[a-z]{2,16}ed|gave|sent|set|told|wrote|made|chose|picked|got|put)(?:[ \t]+(?:out|up|us|me|him|her|them))?"
    r"(?=[ \t]+(?:is|was)[ \t]))?"
    r"(?:[ \t]*[(（][^()（）\n]{1,24}[)）]|[ \t]*\[(?!REDACTED:)[^\[\]\n]{1,24}\])?" + _ZH_SUFFIX
)
_STRONG = (
    # a value denied ("密码不是 X，应该是 Y", "the password isn't X, it's Y"): the denied one is a password too (an
    # old or mistyped one), and `_CORRECTED` reads the one told after it
    r"[ \t]*(?:并|並)?不是[ \t]*[:：]?|[ \t]+(?:is|was)(?:n't|[ \t]+not)(?![A-Za-z'])[ \t]*|"
    # a value told after a dash or a comma as "it's ...": "the pass phrase - it's X -", "password, it is X"
    r"[ \t]*[-—–,][ \t]*(?:it'?s|it[ \t]+is|that'?s)[ \t]+(?=[^\s])"
    r"|\\{0,3}[\"']?[ \t]*(?::=|=>|->|→|[:=：＝]|[—–]+|-(?=[ \t]))"
    # a change told first, then the new value ("password was reset, the new one is ...", "口令改了，新的是 ..."),
    # before "was" alone can take "reset" for the value
    r"|[ \t]+(?:(?:has|have)[ \t]+been[ \t]+|was[ \t]+|got[ \t]+|just[ \t]+)?(?:changed|updated|reset|rotated)"
    r"[ \t]*[,;.:—–-]?[ \t]*(?:the[ \t]+)?new[ \t]+(?:(?:one|value)[ \t]*)?(?:is(?![A-Za-z])|[:：])[ \t]*[:：]?"
    r"|[ \t]*(?:已经|已|又|刚刚?)?(?:改|换|更新|重置|变)(?:了|过了|过)?[ \t]*[，,、;；。]?[ \t]*"
    r"(?:新的|现在的?)(?:那个)?(?:就|也)?(?:是|为|為)[ \t]*[:：]?"
    r"|[ \t]+(?:is|was|are|equals|set[ \t]+to|changed[ \t]+to|to)(?![A-Za-z'])"
    r"(?:[ \t]+(?:now|still|just|set[ \t]+to|changed[ \t]+to))?[ \t]*[:：]?"
    # (a subject or "already" may come first: "APIv3密钥我设置成了 ...", "密钥已经配置为 ...")
    r"|[ \t]*(?:我们?)?(?:已经?|刚刚?)?(?:就|也|还|都|仍)?(?:是|为|為|改成了?|改为|设为|设置为|设置成了?|设成了?"
    r"|配置为|配置成了?|换成了?)[ \t]*[:：]?"
    # (the value now, set 21: "无线mm，现在是 X", "密码目前是 X")
    r"|[ \t]*[，,]?[ \t]*(?:现在|目前|當前|当前|現在)(?:的)?(?:是|为|為)[ \t]*[:：]?"
    r"|[ \t]*は[ \t]*"  # Japanese: "SecretKey は ..."
    # a verb of setting or giving, then 的 (and 是): "secret_access_key 传的是 X", "webhook 的 secret 我设的 X",
    # "passphrase，我填的是 X" (set 19); a subject, a comma before it and "already" may come first. And English's
    # "'s" for "is": "the vault password's X". Both ask a password-shaped value (`_SHAPED_CONNECTOR`): "密码用的是
    # bcrypt", "the password's length" are prose.
    r"|[ \t]*[，,]?[ \t]*(?:我们|你们|他们|她们|咱们|我|你|他|她)?(?:已经|已|刚刚|刚|当时|之前|原来)?"
    # (for whom it was set may stand before the verb, set 20: "支付密码，我给她设的是 X", "帮他填的是 X")
    r"(?:(?:给|帮|幫|替)(?:我们|你们|他们|她们|我|你|他|她|它|孩子|爸|妈|老人))?"
    r"(?:设置|设定|设|填写|填|输入|输|传入|传|用|写|配置|配|改|给|发|存)的(?:是|为|為)?[ \t]*[:：]?"
    r"|['’]s(?=[ \t])"
)
# A qualifier ("for my router", "(temporary)") needs a strong connector after it.
# Without one, spaces; nothing at all only after a Chinese label ("密码123456").
_WEAK = r"(?:[ \t]+|(?<=[^\x00-\x7f]))"
# A bracketed name right after the label, then the value with no connector ("开发者密码（AppSecret）442e...")
# counts as spaces do.
_BRACKETED = r"[ \t]*[(（][^()（）\n]{1,24}[)）][ \t]*"
_CONNECTOR = r"(?:(?P<strong>" + _QUALIFIER + r"(?:" + _STRONG + r"))|" + _BRACKETED + "|" + _WEAK + ")"
_ANY_CONNECTOR = r"(?:" + _QUALIFIER + r"(?:" + _STRONG + r")|" + _WEAK + ")"
# A bare value is judged by its first `_BARE_MAX` characters. Read to its run's end, the value of each label of a long
# run without spaces that repeats one ("token=token=...", "secret:" in a list of ARNs, a minified blob, a `k=v&k=v`
# log line) read the rest of the run again, and its checks after it: quadratic, 32,000 characters of "token=" took
# 9 s. The bound is above any secret written after a label (the longest in the tests' data is 197 characters, an AWS
# session token); a value that reaches it and is taken is replaced to its run's end all the same (`_bare_reach`), so
# a longer one (a PEM body, a long session token) is never cut in two.
_BARE_MAX = 1024
# The run stops at a placeholder: when none starts within reach (a first look, one scan of a character class), the
# run is one more such scan; else it is read character by character up to the placeholder. (The scans' classes are
# case-sensitive, `(?-i:...)`, which changes nothing they match: under IGNORECASE each character is folded first, five
# times slower.)
_WITHIN_BOUND = "{0," + str(_BARE_MAX - 1) + "}"
_UP_TO_BOUND = "{1," + str(_BARE_MAX) + "}"
_BARE_RUN = (
    r"(?:(?!(?-i:[\x21-\x7e]" + _WITHIN_BOUND + r")\[REDACTED:)(?-i:[\x21-\x7e]" + _UP_TO_BOUND + ")"
    r"|(?:(?!\[REDACTED:)[\x21-\x7e])" + _UP_TO_BOUND + ")"
)
# A bare run past the bound, as `_BARE_RUN` reads one: to a space, a non-ASCII character or a placeholder (a
# placeholder's `[` ends the class's scan, a `[` of anything else goes on); a key's also to a character it is cut at.
_RUN_ON = re.compile(r"(?:(?-i:[\x21-\x5a\x5c-\x7e]++)|\[(?!REDACTED:))*+", _I)
_KEY_CUT_CHARS = ",;&|<>(){}[]\"'`"
_KEY_RUN_ON = re.compile("[^" + re.escape(_KEY_CUT_CHARS) + r"\x00-\x20\x7f-\U0010ffff]*+")


# The value: quoted (anything up to the closing quote, escaped quotes of nested JSON included) or a bare run
# of printable ASCII, which stops at spaces, CJK text ("密码是abc123请保密") and placeholders. A bare value
# never starts with a quote, a bracket or a connector character, so reruns cannot re-read a placeholder.
def _value(run: str) -> str:
    return (
        r"[ \t]*(?P<q>\\{0,3}[\"'`“‘「『])?(?P<v>(?!\[REDACTED:)"
        r"(?(q)[^\n\"'`“”‘’「」『』\\]{1,200}|(?![\"'`:=>\]\[|])" + run + "))"
    )


_VALUE = _value(_BARE_RUN)
# (a rule applied by `re.sub` never reads inside a value it has matched, so its bare value may run to its end as one
# scan: `_PW_SLANG`'s)
_VALUE_WHOLE = _value(r"(?:(?!\[REDACTED:)[\x21-\x7e])+")


def _labelled(heads: str, value: str = _VALUE) -> re.Pattern[str]:
    return re.compile(r"(?P<lead>(?P<label>" + heads + ")" + _CONNECTOR + ")" + value, _I)


_PW_LABELLED = _labelled(_HEAD_PW)
_KEY_LABELLED = _labelled(_HEAD_KEY)
_PRIVATE_LABELLED = _labelled(_HEAD_PRIVATE)

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
    confirm must should can cannot will would may might is was were are equals old new current previous
    former initial temporary never always ever often rarely seldom usually sometimes automatically
    periodically regularly immediately only later emailed mailed texted logged cached transmitted once
    twice again pairs myself yourself himself herself itself oneself ourselves yourselves themselves themself
    whoever whatever as
    please everywhere anywhere elsewhere
    attempt attempts tries retries retry failures failure lockout lockouts resets changes
    history policy policies rule rules requirement requirements complexity expiry expiration length strength
    rotation reuse manager managers hint hints
"""
# (the last lines: what happens to a password, counted in prose: "locked out after 5 failed password attempts",
# "3 password retries left", "password resets this week": a count of events, no value; "as" opens an aside, set 24:
# "the password — as usual — is in the vault"; and a noun of the policy or the tool that rules passwords, set 25:
# "does Okta enforce the password history rule", "the password complexity requirements", "a password manager": a
# compound's head, no value, even when an account was named a sentence before)
_NOT_A_PASSWORD = frozenset(_NOT_A_PASSWORD_WORDS.split())
_PW_TRAILING = ".,;:)]}>'\"。，；：！？）」』】”’\\"  # not ! or ?: often part of the password
# Values that stand for a secret without being one: masks, template slots, env references, "n/a".
_PW_STAND_IN = re.compile(
    r"[*•xX-]+|<[^<>]*>|\$\{[^}]*\}|\$\(.*|\{\{\S*|\$[A-Z_][A-Z0-9_]*|%s|n/?a|tbd|todo|xxx+|your[_-]\w*"
    # words joined by `-` / `_` that say where a value goes: `put-your-password-here`, `api_key_goes_here`,
    # `insert-token-here`, `placeholder`
    r"|(?:[a-z]+[_-])*(?:here|your|placeholder)(?:[_-][a-z]+)*"
    # templating and interpolation (`{{ vault_db_password }}`, ConfigParser `%(password)s`), an ellipsis, Ansible's
    # `!vault |`, Terraform's `(sensitive value)`
    r"|\{\{[^{}\n]*\}\}|%\(\w+\)s|\.{2,}|…+|!vault|\(sensitive(?:[ \t]+value\))?"
    # a reference in code where a value would be: Terraform `var.db_password`, `local.x`, `data.x.y`,
    # `module.x.y`; Node's `process.env.DB_PASS`
    r"|(?-i:(?:var|local|data|module|each)\.[a-z_][\w.\[\]\"-]*|process\.env\.\w+)"
    # what a framework's log filter prints in a value's place: Rails `"password"=>"[FILTERED]"`, `[REDACTED]`,
    # `(hidden)`, `<masked>` (the tenth set)
    r"|[\[(<](?:filtered|redacted|masked|hidden|removed|omitted|secret|sensitive|scrubbed)[\])>]",
    _I,
)
# Tokens their vendor documents as publishable (shipped in web pages): Stripe `pk_live_` / `pk_test_`,
# Mapbox `pk.eyJ...`. Not secrets whatever label they follow.
_PUBLISHABLE = ("pk_live_", "pk_test_", "pk.eyJ")
# A placeholder in angle brackets may hold spaces (`<ask in #infra>`), which end a bare value: it starts at
# the value and closes on its line.
_ANGLE_SLOT = re.compile(r"<[^<>\n]{1,120}>")
# "changeme", "replace-me": a placeholder in an example file (`.env.example`, "the sample config"), but a live
# default password elsewhere ("the compose file we deployed still has POSTGRES_PASSWORD: changeme").
_DEFAULT_WORD = re.compile(r"(?:change|replace)[_-]?(?:me|this|it)(?:[_-][a-z]+)?", _I)
_EXAMPLE_FILE = re.compile(
    r"\.(?:example|sample|template|tmpl|dist)\b|\b(?:example|sample|template)[ \t]+(?:config|configuration|file|env)",
    _I,
)


def _example_default(text: str, secret: str) -> bool:
    return _DEFAULT_WORD.fullmatch(secret) is not None and _names_example_file(text)


@functools.lru_cache(maxsize=2)
def _names_example_file(text: str) -> bool:
    """The text names an example file. (Asked once per text, not once per label: each "password=changeme" of a long
    list searched the whole text again, quadratic; a text's hash is kept by the string, so a call asks little.)"""
    return _EXAMPLE_FILE.search(text) is not None


_LENGTH_WORD = re.compile(
    r"[ \t]*(?:characters?|chars?|digits?|letters?|symbols?|bytes?\b|long\b|位|个字符|字符|字节)", _I
)
# "pass: 142, fail: 3" counts tests (the counts may come before: "214 passed, 3 skipped ... 'pass: 213'").
_TEST_COUNTS = re.compile(
    r"\b(?:fail(?:ed|s|ures?)?|skip(?:ped|s)?|errors?|xfail(?:ed)?|passed|pytest|tests?|test[ _-]?cases?)\b",
    _I,
)
# A user named just before: "username admin password admin", "账号 root 密码 toor".
_USER_BEFORE = re.compile(
    r"(?:user(?:[ _-]?name)?|login|account|acct|用户名?|账号|帐号|账户)[^\n]{0,40}\Z", _I
)
_DATE_OR_TIME = re.compile(
    r"[0-9]{1,4}([/.-])[0-9]{1,2}\1[0-9]{1,4}(?:[T ][0-9:.]+Z?)?|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?"
)
_VERSION = re.compile(r"v?[0-9]+(?:\.[0-9]+)+(?:[-+.][0-9A-Za-z.]+)?", _I)
_KEY_CUT = re.compile("[" + re.escape(_KEY_CUT_CHARS) + "]")


def _head_starts_word(m: re.Match[str]) -> bool:
    """An ASCII head starts a word: after a non-alphanumeric character, or at a camelCase step."""
    start = m.start("label")
    if m.group("pz") is not None or start == 0:
        return True
    before, first = m.string[start - 1], m.string[start]
    if not (before.isascii() and before.isalnum()):
        return True
    return (before.islower() or before.isdigit()) and first.isupper()


def _token_like(s: str) -> bool:
    """A value that looks generated: long, letters with digits (or mixed case), not a version or a word."""
    if len(s) < 8 or _VERSION.fullmatch(s) or not _has_letter(s):
        return False
    if _has_digit(s):
        return True
    return len(s) >= 12 and _has_upper(s) and _has_lower(s)


# Template slots written as a capitalised name of what goes there: `postgresql://USER:PASSWORD@host`,
# `-p YOUR_PASSWORD`, `DB_PASS=CHANGEME` (case-sensitive: a lower-case "password" may be a real weak one).
_TEMPLATE_WORD = re.compile(
    r"(?:[A-Z]+_)*(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|PW|SECRET|TOKEN|KEY|CHANGEME|CHANGE_ME)(?:_[A-Z]+)*"
)


# A value shown masked or filled in: a mask with a few characters left in view (`****************5ZEQ`,
# `••••3391`, `ab12****`: what `aws configure list`, a console or a receipt prints), or a vendor's prefix then
# one character repeated (`sk_test_XXXXXXXXXXXX`, `AKIAXXXXXXXXXXXXXXXX`, `ghp_xxxxxxxx...`; not `000000`, a PIN):
# the slot of a key, not a key. Also a value cut short by an ellipsis, the head and the tail of a key shown and
# its middle left out (`sk-...Xq9f`, `ghp_…a1b2`, `...7QXZ`: a dashboard's or a log's display of a key).
_MASKED = re.compile(
    r"[^\s*•●]{0,6}[*•●]{4,}[^\s*•●]{0,6}"
    r"|(?:[A-Za-z0-9]{1,10}[_-]){0,3}(?:\.{3,}|…)[A-Za-z0-9]{2,6}"
    r"|(?:(?:[A-Za-z0-9]+[_.-])+|[A-Za-z]{2,8}?)([xX*#])\1{5,}(?:[_.-](?:\1{4,}|[A-Za-z0-9]{0,8}))*"
)


# A password may start with `$` (set 15: "requirepass $Juniper140tiger"): a variable is `$VAR`, `${VAR}`, `$var_name`
# or `$dbPassword`; a `$`, then 8+ letters and digits with a small letter, a capital and a digit, no `_`, is read as
# a password by its shape.
_DOLLAR_PASSWORD = re.compile(
    r"\$(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{8,64}"
)


def _stand_in(s: str) -> bool:
    if s.startswith("$") and _DOLLAR_PASSWORD.fullmatch(s) is not None:
        return False
    return (
        _PW_STAND_IN.fullmatch(s) is not None
        or _MASKED.fullmatch(s) is not None
        or _TEMPLATE_WORD.fullmatch(s) is not None
        or _DOC_EXAMPLE.search(s) is not None
        or s.startswith(_PUBLISHABLE)
    )


# A type where a value would be: `def login(user: str, pw: str)`, `password: string`, `pw: &str`,
# `password: Optional[SecretStr]`, `password string` (Go). Code, not a secret.
_TYPE_ANNOTATION = re.compile(
    r"&?(?:'[a-z]+[ \t])?(?:str|string|bytes|bytearray|int|integer|float|bool|boolean|char|secretstr"
    r"|secretbytes|any|object|optional|option|union|text|varchar|uuid)(?:[\[<(|].*)?",
    re.IGNORECASE,
)


# Prose where a value would be: "DB password: it's in 1Password", "password: they're rotated nightly".
_CONTRACTION = re.compile(r"[a-z]+'(?:s|re|ll|d|ve|m|t)", re.ASCII)


def _inside_reference(text: str, at: int) -> bool:
    """`at` is inside a shell reference opened on its line: the label of `${POSTGRES_PASSWORD:?set it}`."""
    # (looked for within 200 characters: a scan back to the start for every label is quadratic on a long line; and
    # still open once the values replaced before it in this pass are placeholders, see `_REPLACED`)
    lo = max(0, at - 200)
    return _opens_reference(text[lo:at]) and _opens_reference(_as_replaced(text, lo, at))


def _opens_reference(before: str) -> bool:
    opened = before.rfind("${")
    return opened != -1 and "}" not in before[opened:] and "\n" not in before[opened:]


def _reference_at(text: str, at: int) -> bool:
    """A shell reference starts at `at` and closes on the same line: `${VAR:?set it in .env}`."""
    if not text.startswith("${", at):
        return False
    end = text.find("}", at)
    newline = text.find("\n", at)
    return end != -1 and (newline == -1 or end < newline)


_CURSOR_BEFORE = re.compile(
    r"(?<![A-Za-z])(?:page|next|continuation|sync|cursor|resume|prev(?:ious)?)[ \t_.-]?\Z", _I
)
_PUBLIC_BEFORE = re.compile(r"(?<![A-Za-z])(?:public|publishable)[ \t_-]*\Z", _I)


_BARE_TO = re.compile(r"[ \t]+to[ \t]*", _I)
_ITS = re.compile(r"[ \t]*[-—–,][ \t]*(?:it'?s|it[ \t]+is|that'?s)[ \t]+", _I)
_VERB_CONNECTOR = re.compile(r"[ \t]+(?:is|was|are|were)(?:n't|[ \t]+not)?[ \t]*", _I)
_DENIED = re.compile(r"[ \t]*(?:并|並)?不是[ \t]*[:：]?|[ \t]+(?:is|was)(?:n't|[ \t]+not)[ \t]*", _I)
_PLURAL_VERB = re.compile(r"[ \t]+(?:are|were)[ \t]*:?[ \t]*", _I)
_RESPECTIVELY = re.compile(r"[ \t]respectively(?![A-Za-z])", _I)


# Code where a value would be that READS a secret from elsewhere (the environment, a prompt, a secret store) or
# GENERATES one (Terraform's / Pulumi's random_password): `password = os.environ.get("DB_PASSWORD")`,
# `getpass.getpass(...)`, `process.env.DB_PASS`, `System.getenv(...)`, `random_password.db.result`. No secret.
_READS_SECRET = re.compile(
    r"(?:os\.)?(?:environ|getenv)(?![A-Za-z0-9_])|(?:getpass\.)?getpass[ \t]*\(|process\.env[.\[]"
    r"|(?:System|Environment)\.(?:getenv|GetEnvironmentVariable)[ \t]*\(|os\.Getenv[ \t]*\(|(?:std::)?env::var"
    r"|ENV\[|(?:import\.meta|Deno)\.env[.\[(]|secretKeyRef|keyring\.get_password"
    r"|random_(?:password|string|id|bytes)\.|(?:new[ \t]+)?random\.(?:Random)?(?:Password|String)[ \t]*\(",
    _I,
)
# A variable passed on in code under its own name: `Client(user="etl", password=password)`, `pwd=self.pwd,`:
# an identifier that ends in the label's word, followed by `)` / `,` (an argument), not a value. Also a short
# variable of one to three small letters bound to an argument (set 19: `authenticate(request, username=u, password=p)`,
# `login(user=usr, pwd=pw)`, `{ password: pwd }`): no password is so short, and a value with a digit still goes.
_PASSED_ON = re.compile(
    r"(?:(?:[A-Za-z_$][\w$]*[._])?(?:password|passwd|passphrase|pwd|pw|pass|secret|token|api_?key)"
    r"|(?-i:[a-z_]{1,3}))[ \t]*[),}]",
    _I,
)


_SECRET_VAR_NAME = re.compile(
    r"[A-Za-z]+(?:_[A-Za-z]+)*_(?:password|passwd|passphrase|pwd|pw|pass|pin|secret|token|key"
    r"|api_?key)s?",
    _I,
)


def _plain_word(s: str) -> bool:
    return s.replace("-", "").isalpha() and s.isascii()


# An SSH public key's algorithm name or base64 body (set 18: "deploy keys：ssh-ed25519 AAAAC3Nza... deploy@ci"):
# public by design, never a value.
_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp[0-9]{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"(?![A-Za-z0-9-])|AAAA(?:B3NzaC1|C3NzaC1|E2VjZHNh)"
)
# A parenthesised status word after a label ends its reach (set 18: "reset the shared admin password (done) - Tom
# to enable 2FA"): the label's item is closed, what follows is the next item.
_STATUS_PAREN = re.compile(
    r"[(（][ \t]*(?:done|todo|to[ \t]-?do|wip|pending|ok|fixed|resolved|complete[d]?|finished|in[ \t]+progress|tbd"
    r"|n/a|blocked|已完成|完成|已处理|待办|进行中)[ \t]*[)）]",
    _I,
)
# A number followed by 次 / 回 / 遍 / times is a count (set 18: "连续输错密码5次"), as "5 failed attempts" is.
_HOST_QUALIFIER = re.compile(r"[ \t]+(?:for|to|of|on|at)[ \t]+[^\s:]*[.\w][ \t]*:\Z", _I)
# the two connectors that ask a password-shaped value (see `_STRONG`): a verb then 的, and "'s"
_SHAPED_CONNECTOR = re.compile(r"(?:的(?:是|为|為)?[ \t]*[:：]?|['’]s)\Z")
_COUNT_AFTER = re.compile(r"[ \t]*(?:次|回|遍|times?(?![A-Za-z]))", _I)
# A length or a range of lengths, as a password policy states it (set 21: "密码8-16位", "password 12 to 64 characters")
_LENGTH_RANGE = re.compile(r"[0-9]{1,3}(?:[-~～][0-9]{1,3})?")
_LENGTH_AFTER = re.compile(
    r"[ \t]*(?:位|个字符|個字元|字符|字元|chars?(?![A-Za-z])|characters?(?![A-Za-z]))", _I
)


def _opened_string(text: str, at: int, quote: str) -> bool:
    """A string is open at `at`: the last quote before it on its line (within 200 characters) is `quote`, right after
    a `=` or a `:` (an HTML attribute, `msg = "...`, `label: '...`)."""
    lo = max(0, at - 200)
    lo = max(lo, text.rfind("\n", lo, at) + 1)
    # (and still open once the values replaced before it in this pass are placeholders, see `_REPLACED`)
    return _opens_string(text[lo:at], quote) and _opens_string(_as_replaced(text, lo, at), quote)


def _opens_string(before: str, quote: str) -> bool:
    last = max(before.rfind('"'), before.rfind("'"))
    return last != -1 and before[last] == quote and before[:last].rstrip(" \t").endswith(("=", ":"))


# An ARN up to its resource type's colon: `arn:aws:secretsmanager:us-east-1:123456789012:` (partition, service,
# region, account).
_ARN_BEFORE = re.compile(r"(?<![A-Za-z0-9])arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[0-9]{0,12}:\Z", _I)
# Chinese words for "none" / "empty" in quotes after a label ("密码短语是「无」", "密码是“留空”"): no value.
_ZH_NO_VALUE = frozenset(
    ("无", "無", "空", "空的", "留空", "没有", "沒有", "不设", "不設", "未设置", "未設置", "无密码", "無密碼")
)
# A test's name or path as a runner prints it after PASS: a pytest node id (`tests/test_a.py::test_b`), a test file
# (`src/a.test.tsx`, `pkg/a_test.go`, `tests/test_a.py`), a Go test function (`TestLogin`, `TestLogin/sub_case`).
_TEST_NAME = re.compile(
    r"[\w./\\-]+::[\w\[\]./:-]+|(?:[\w.-]+[/\\])*(?:[\w.-]*[._](?:test|spec)|test_[\w.-]*)\.[a-z]{1,5}"
    r"|(?-i:Test[A-Z0-9_][\w/-]*)",
    _I,
)
_FLAG_AFTER = re.compile(r"[ \t]+--?[A-Za-z][A-Za-z-]*(?=[ \t]|\r?\n|\Z)")
_TEST_TIME_AFTER = re.compile(r"[ \t]*\([ \t]*[0-9.]+[ \t]*(?:ms|s|sec|seconds)[ \t]*\)", _I)


_MARK_AFTER_SPACES = re.compile(r"[ \t]*" + re.escape(_MARK))


def _labelled_value(m: re.Match[str], *, generated: bool) -> tuple[int, int] | None:
    """The span of the secret in a labelled match, or None when the value is no secret.

    ``generated``: the label names a key or token, whose values are generated strings (`_token_like`);
    otherwise (passwords) any value counts, except stand-ins, words of prose and, after a bare space,
    plain words (unless a user was just named: "username admin password admin")."""
    text, v0, v1 = m.string, m.start("v"), m.end("v")
    if text.endswith(_MARK, 0, m.start("label")) or text.startswith(_MARK, v1) or not _head_starts_word(m):
        return None
    if m.group("q"):
        secret = m.group("v")
    else:
        value = m.group("v")
        if generated and (cut := _KEY_CUT.search(value)):
            value = value[: cut.start()]
        secret = value.rstrip(_PW_TRAILING)
        # a word closing a bracket opened before it, then a question's mark (set 21: "(not an actual password
        # please)?"): the word is prose, the "?" no part of a value
        core = secret.rstrip("?!")
        if "(" not in secret and core.endswith(")") and _plain_word(core.rstrip(_PW_TRAILING)):
            secret = core.rstrip(_PW_TRAILING)
        v1 = v0 + len(secret)
    # (a key's value must look generated, whatever else holds: asked first, it turns away the value of each label of
    # a long run that repeats one, "token=token=...", before the checks below read it)
    if generated and not _token_like(secret):
        return None
    if (
        not secret
        or _stand_in(secret)
        or _stand_in(m.group("v"))
        or _READS_SECRET.match(text, v0) is not None
        or (not m.group("q") and _PASSED_ON.match(text, v0) is not None)
        # a prompt's closing quote read as a value's opening one: `getpass("Password: ")`
        or (m.group("q") and not any(c.isalnum() for c in secret))
        or _reference_at(text, v0)
        or _inside_reference(text, m.start("label"))
        or _example_default(text, secret)
        or _ANGLE_SLOT.match(text, v0) is not None
    ):
        return None
    if _SSH_PUBLIC.match(text, v0) is not None:
        return None
    label_at = m.start("label")
    # a quote right after a label that sits inside a quoted string closes that string (set 24: `placeholder="请输入密码"
    # autocomplete="..."`, `msg = "请输入密码" + name`): what follows is no value
    if m.group("q") and m.group("strong") is None and _opened_string(text, label_at, m.group("q")[-1]):
        return None
    # an ARN's resource type, not a label (set 24: `arn:aws:secretsmanager:...:secret:prod/app/db-creds-f0Vzal`)
    if text[label_at - 1 : label_at] == ":" and _ARN_BEFORE.search(text, max(0, label_at - 120), label_at):
        return None
    if _STATUS_PAREN.search(text, m.end("label"), v0) is not None:
        return None
    if secret.isdigit() and _COUNT_AFTER.match(text, v1) is not None:
        return None
    # a postal PIN code after an address (set 26: "..., Karnataka, PIN 560087")
    if secret == m.group("v") and secret.isdigit() and _postal_pin(m, text[label_at:v0]):
        return None
    if _LENGTH_RANGE.fullmatch(secret) and _LENGTH_AFTER.match(text, v1) is not None:
        return None
    # "the app password for smtp.gmail.com:587 is X": a port after a qualifier's host, its colon no connector
    if (
        secret.isdigit()
        and len(secret) <= 5
        and text[v0 - 1 : v0] == ":"
        and text[v0 - 2 : v0 - 1].isalnum()
        and m.group("strong") is not None
        and _HOST_QUALIFIER.match(m.group("strong")) is not None
    ):
        return None
    if len(secret) == 1 and _MARK_AFTER_SPACES.match(text, v1) is not None:
        return None  # Cisco's `password 0 <value>`: the 0 is the type, the value is already replaced
    if generated and _PUBLIC_BEFORE.search(text, max(0, m.start("label") - 16), m.start("label")):
        return None  # "the public token: ...", "publishable key = ...": published by design
    if generated and _CURSOR_BEFORE.search(text, max(0, m.start("label") - 16), m.start("label")):
        return None  # `pageToken=`, `next_token:`, `continuation-token`: a page's cursor
    # "the username and password are deploy and X respectively": the list's own rule reads it (the first value
    # is the username's)
    if (
        m.group("strong") is not None
        and _PLURAL_VERB.fullmatch(m.group("strong")) is not None
        and _RESPECTIVELY.search(text, v1, v1 + 200) is not None
    ):
        return None
    if generated:
        return v0, v1  # (its value looks generated: asked first)
    # after a verb and 的 or after "'s", a value must look like a password (8+ characters after "'s", which is also
    # the possessive: "the password's sha256") or be 4+ digits
    if (strong_text := m.group("strong")) is not None and _SHAPED_CONNECTOR.search(strong_text) is not None:
        shaped = _pw_shaped(secret) and (len(secret) >= 8 or not strong_text.endswith("s"))
        if not (shaped or (secret.isdigit() and len(secret) >= 4)):
            return None
    if m.group("q"):
        return None if secret in _ZH_NO_VALUE else (v0, v1)
    if secret[0] == "{" and (len(secret) == 1 or secret[1] in "\"'"):  # `"password": {"type": ...}`
        return None
    if len(secret) <= 2 and not any(
        c.isalnum() for c in secret
    ):  # `var.db_password   # from Vault`: a comment
        return None
    label = m.group("label").lower()
    strong = m.group("strong") is not None
    word = secret.rstrip("?!")  # "where does compose read DB_PASSWORD from?": a question, no value
    # a command's flag after the command (set 24: "passwd -e works on ubuntu", `pass -c email/work`), and a command's
    # name before its flag ("改密码：passwd --expire alice"): no value
    if (not strong and word.startswith("-") and _plain_word(word)) or (
        secret == value and _plain_word(word) and _FLAG_AFTER.match(text, v1) is not None
    ):
        return None
    # a test runner's status (set 24: pytest's `PASS tests/test_login.py::test_x (0.41s)`, Jest's `PASS src/a.test.ts`,
    # Go's `--- PASS: TestLogin (0.00s)`): a capital PASS, then a test's name or path, or its time after it
    # (and a time in brackets where the value would be: "test_wrong_password (0.41s)")
    if _TEST_TIME_AFTER.match(text, v0) is not None or (
        m.group("label") == "PASS"
        and (_TEST_NAME.fullmatch(secret) is not None or _TEST_TIME_AFTER.match(text, v1) is not None)
    ):
        return None
    # the first word of an aside opened by a dash or a bracket that closes with "— is ..." / ") is ..." (set 24: "the
    # password — Karen changed it ..., so the one in the wiki is dead — is now X"): the value is told after it
    # (`_PW_ASIDE`)
    bracket = word.startswith("(") and ")" not in word
    aside_word = word[1:] if bracket else word
    if (
        (bracket or (strong and _ASIDE_DASH.search(m.group("strong")) is not None))
        and (
            not aside_word
            or _plain_word(aside_word)
            or not (_pw_shaped(aside_word) or (aside_word.isdigit() and len(aside_word) >= 4))
        )
        and _aside_tells_value(text, v0 + bracket)
    ):
        return None
    if _CONTRACTION.fullmatch(word):  # "DB password: it's in 1Password": prose, not a value
        return None
    if _TYPE_ANNOTATION.fullmatch(word):  # "pw: str", "password: Optional[str]": a type in code
        return None
    # "the password is never emailed", "is hashed": after a verb, an adverb or a participle is prose
    if (
        strong
        and word.isalpha()
        and word.islower()
        and len(word) >= 5
        and word.endswith("ed")
        and _VERB_CONNECTOR.fullmatch(m.group("strong")) is not None
    ):
        return None
    if _plain_word(word) and (
        word.split("-")[0].lower() in _NOT_A_PASSWORD
        # "the password isn't specified / 不是 admin": a word denied is prose or a default's name
        or (strong and _DENIED.fullmatch(m.group("strong")) is not None)
        or (not strong and not _USER_BEFORE.search(text, max(0, m.start() - 60), m.start()))
        # "changed the root password to comply with ...": after a bare "to", a word is the verb's object
        or (strong and _BARE_TO.fullmatch(m.group("strong")) is not None)
        # "the wifi password, it's Monday and I forgot": a plain word after "it's" is prose
        or (strong and _ITS.fullmatch(m.group("strong")) is not None)
    ):
        return None
    # a date or a time after spaces: a listing's column ("db-password     11/2/2026", "api-token  2026-01-04")
    if not strong and _DATE_OR_TIME.fullmatch(secret):
        return None
    # after spaces, a snake_case name of words whose last names a secret is the variable, not its value (a value
    # has digits: "邮箱密码 mail_2024_pw" goes): "how do I
    # pass db_password to the module", "set the PIN DOOR_PIN in .env", "密码 DB_PASSWORD 从哪读"
    if not strong and _SECRET_VAR_NAME.fullmatch(secret):
        return None
    # "the password 0 days before expiry", "password 5 attempts max": a count, not a value
    if secret.isdigit() and len(secret) < 4 and not strong and label not in ("pin", "密码", "密碼"):
        return None
    if secret.rstrip("+").isdigit():
        if _LENGTH_WORD.match(text, v1) is not None:  # "the password is 12 characters long", "密码至少8位"
            return None
        # "pass: 142, fail: 3", "214 passed, 3 skipped ... 'pass: 213'": test counts
        if label == "pass" and _TEST_COUNTS.search(text, max(0, m.start() - 120), v1 + 60):
            return None
    if label == "pin" and not secret.isdigit():
        return None
    # "出厂默认的管理账号和密码都是admin": a product's published default
    if _vendor_default(text, v0, secret):
        return None
    if label == "pwd" and secret[0] in "/~":  # PWD=/home/me is the shell's working directory
        return None
    return v0, v1


def _labelled_action(kind: str, *, generated: bool) -> _Action:
    tag = _tag(kind)

    def action(m: re.Match[str]) -> tuple[str, int]:
        span = _labelled_value(m, generated=generated)
        if span is None:
            return m.group(), 0
        base = m.start()
        whole = m.group()
        return whole[: span[0] - base] + tag + whole[span[1] - base :], 1

    return action


# Pairs: "user/pass: bob / hunter2", "账号/密码：admin/123456", "login: admin / hunter2", "creds deploy:s3cret",
# "log in with admin / admin", "账号密码 ops/Ops_2024!". Only the second of the pair is replaced.
_PAIR_VALUE = r"(?P<v>(?!\[REDACTED:)(?![\"'`:=>\]\[/])" + _BARE_RUN + ")"  # (bounded as `_VALUE` is)
_PAIR_HEAD_TEXT = (
    r"(?P<label>(?:user(?:[ _-]?name)?|login|account|acct|e-?mail|用户名?|账号|帐号|账户)[ \t]*"
    r"(?:/|／|&|\+|and|和|及)[ \t]*(?:pass(?:word|wd)?|pwd|pw|密码|口令))(?![A-Za-z0-9_])"
)
_PAIR_HEAD = re.compile(_PAIR_HEAD_TEXT, _I)
_PAIR_LABELLED = re.compile(
    r"(?P<lead>" + _PAIR_HEAD_TEXT + _ANY_CONNECTOR + r"[ \t]*"
    r"(?P<user>[^\s/／:,，|\"'`\[\]]{1,64})(?:[ \t]*[/／|,，][ \t]*|:|[ \t]+))" + _PAIR_VALUE,
    _I,
)
_CREDENTIAL_HEAD_TEXT = (
    r"(?P<label>(?:log(?:ged)?|sign(?:ed)?)[ \t-]?in(?:[ \t]+(?:with|as|using))?|creds?|credentials?"
    r"|ssh(?:[ \t]+in)?[ \t]+(?:with|as|using)|账号密码|帐号密码|账号|帐号|登录信息|登录账号|登录|凭据|凭证"
    r"|(?P<acct>account|acct|user(?:[ _-]?name)?|帳號|帳户|帳戶|账户|用户名?|用戶名?))"
    r"(?![A-Za-z0-9_])"
)
_CREDENTIAL_HEAD = re.compile(_CREDENTIAL_HEAD_TEXT, _I)
# (Chinese words between the label and its colon too, the fourteenth set: "测试环境账号发你：test_zhao / X",
# "登录信息如下：ops / X", "账号给你：bob / X"; the pair may start the next line after that colon. Any account
# label in either language: account, user name, 帳號, 用户名 ..., where the value must look like a password:
# "the test account for you: qa_li / X"; "account: billing / invoices" stays)
_CREDENTIALS = re.compile(
    r"(?P<lead>"
    + _CREDENTIAL_HEAD_TEXT
    + r"(?:(?P<far>(?:(?:[ \t]+[A-Za-z'-]+){1,4}?|[ \t]*[\u4e00-\u9fff]{1,6}?)[ \t]*[:：](?:[ \t]*\r?\n)?)|"
    + _ANY_CONNECTOR
    + r")[ \t]*"
    # (or a pipe between, as a note or a table cell joins them, set 26: "Prime Video login -> a@b.com | X"; the value
    # must then look like a password)
    r"(?P<user>[A-Za-z0-9_.@+-]{1,64})(?:[ \t]*[/／][ \t]*|:|[ \t]*(?P<pipe>[|｜])[ \t]*))" + _PAIR_VALUE,
    _I,
)
# "用 test01 / Test0101 登录"
_CREDENTIALS_ZH = re.compile(
    r"(?P<lead>用[ \t]*(?P<user>[A-Za-z0-9_.@+-]{1,64})[ \t]*[/／:][ \t]*)"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{1,64}?)[ \t]*(?=登录|登陆|登入|登錄)"
)


def _pair_action(m: re.Match[str]) -> tuple[str, int]:
    text, start = m.string, m.start()
    label = m.groupdict().get("label") or ""
    if label and not _head_starts_word_at(text, m.start("label")):
        return m.group(), 0
    user, value = m.group("user"), m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    # the last piece of a name (`registry-cred`, `db_creds`) followed only by spaces is a name in a listing
    # (`kubectl get secrets`: "registry-cred   kubernetes.io/dockerconfigjson"), not a label
    if (
        label
        and m.start("label") > 0
        and text[m.start("label") - 1] in "-_./"
        and not text[m.end("label") : m.start("user")].strip(" \t")
    ):
        return m.group(), 0
    if (
        not secret
        or text.startswith(_MARK, m.end())
        or text.endswith(_MARK, 0, start)
        or not any(c.isalpha() for c in user)  # "login: 2024-03-15 / 10:30"
        # a resource's name, not a user and a password (set 20: "User: arn:aws:sts::0298...:assumed-role/R/p is
        # not authorized", "user: urn:li:person:x1")
        or (user.lower() in ("arn", "urn") and text.startswith(":", m.end("user")))
        or _stand_in(secret)
        or (_plain_word(secret) and secret.lower() in _NOT_A_PASSWORD)
        # words between the label and its colon ("creds as before: admin / 07UD0ska"): the pair must
        # look like credentials, the password not a word ("login page steps: home / settings")
        or (m.groupdict().get("far") is not None and (len(secret) < 6 or _plain_word(secret)))
        or (m.groupdict().get("acct") is not None and not _strong_secret(secret, 6))
        or (m.groupdict().get("pipe") is not None and not (len(secret) >= 6 and _pw_shaped(secret)))
        or _vendor_default(text, m.start("v"), secret)
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password") + value[len(secret) :], 1


def _head_starts_word_at(text: str, start: int) -> bool:
    if start == 0:
        return True
    before = text[start - 1]
    return not (before.isascii() and before.isalnum())


# The value first: "hunter2 is my password", "Abc123 是我的邮箱密码".
_PW_BEFORE = re.compile(
    r"(?P<v>[\x21-\x7e](?<![\x21-\x7e][\x21-\x7e])[\x21-\x7e]{2,63})"
    r"(?=[ \t]+(?:is|was)[ \t]+(?:(?:my|our|the|his|her|their|your)[ \t]+)?(?:[\w-]+[ \t]+){0,2}?"
    r"(?:password|passcode|passphrase|pwd|pin)(?![A-Za-z0-9])"
    r"|[ \t]*(?:就|也)?是(?:我|我们|他|她|你)的?[^\s，。,]{0,6}?(?:密码|口令))",
    _I,
)


def _pw_before_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.lstrip("\"'`“‘「『(").rstrip(_PW_TRAILING)
    if (
        not secret
        or _MARK in value
        or "]" in value
        or _stand_in(secret)
        or _plain_word(secret)
        or (secret.isdigit() and len(secret) < 4)
    ):
        return value, 0
    lead = value[: value.index(secret)]
    return lead + _tag("password") + value[len(lead) + len(secret) :], 1


# A shell assignment whose name ends with a password word, glued or not: `PGPASSWORD='...' psql`,
# `MYSQL_PWD=...`, `export REDISCLI_AUTH=...` (the labelled rules need the word to start a name).
_ENV_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_])(?P<lead>[A-Z][A-Z0-9_]*?(?:PASSWORD|PASSWD|PASS|PWD|_AUTH)[ \t]*=[ \t]*(?P<q>['\"]?))"
    r"(?P<v>(?!\[REDACTED:)[^\s'\"]+)"
)
# A password given on a command line: the mysql family's attached `-pSECRET`, `sshpass -p SECRET`.
_CLI_PASSWORD = re.compile(
    r"(?P<lead>(?<![\w\]-])(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlsh)(?![\w-])[^\n`]{0,600}?[ \t]-p"
    r"(?P<q>['\"]?))(?P<v>(?!\[REDACTED:)[^\s'\"-][^\s'\"]*)"
    r"|(?P<lead2>(?<![\w\]-])sshpass[ \t]+-p[ \t]*(?P<q2>['\"]?))(?P<v2>(?!\[REDACTED:)[^\s'\"-][^\s'\"]*)"
)


# A password handed to a command-line tool by the flag that tool reads it from. The flag alone says nothing
# (`-a` is "all" to ls and git, `-p` a port to psql, redis-cli and docker run), so each tool is named with its
# own flags; the command may run over continuation lines (`\\` + newline) but not past a pipe or `;`.
# (the command's reach is bounded, 600 characters: a text saying "zip" 3,000 times on one line looked
# for a `-P` to the line's end after each, quadratic: 6 s for 60 KB; a command line is seldom longer)
_CMD_REST = r"(?![\w-])(?:[^\n|;&`]|&(?!&)|\\\n){0,600}?[ \t]"
_SEP = r"(?:[ \t]+|=)"
# The flag's value; a placeholder left by an earlier run is matched too (and kept by the action), so that on a
# rerun the tool's reach stops at the same flag instead of running on to a later command's.
_CLI_VALUE = r"\[REDACTED:[a-z_]+\]|(?!\[REDACTED:)[^\s'\"-][^\s'\"]*"
_CLI_TOOL_FLAGS = (
    (r"redis-cli|keydb-cli|valkey-cli", r"-a|--pass"),
    (
        r"(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane)(?:[ \t]+registry)?[ \t]+login",
        r"-p|--password",
    ),
    (
        r"mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongofiles|cqlsh|rabbitmqadmin",
        r"-p|--password",
    ),
    (r"sqlcmd|bcp|osql", r"-P"),
    (r"ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)", r"-w"),
    (r"mosquitto_(?:pub|sub|rr)", r"-P|--pw"),
    (r"zip|unzip|zipcloak", r"-P|--password"),
    (r"keytool|jarsigner", r"-(?:src|dest)?(?:storepass|keypass)"),
    (r"wget", r"--(?:http-|ftp-|proxy-)?password"),
    (r"openssl", r"-pass(?:in|out)?[ \t]+pass:|-k[ \t]+"),  # openssl's own separators: no `_SEP` after
    # 7-Zip and RAR take the password glued to the switch (set 20: "7z x a.7z -p'X' -o./out", "rar a -hpX b.rar")
    (r"7z|7za|7zz|7zr|rar|unrar|winrar", r"-h?p(?![-\s])"),
)
_GLUED_FLAG_TOOLS = ("openssl", "7z|7za|7zz|7zr|rar|unrar|winrar")
_CLI_FLAG_PASSWORD = re.compile(
    r"(?P<lead>(?<![\w.\]-])(?:"
    + "|".join(
        "(?:" + tools + ")" + _CMD_REST + "(?:" + flags + ")" + ("" if tools in _GLUED_FLAG_TOOLS else _SEP)
        for tools, flags in _CLI_TOOL_FLAGS
    )
    + r")(?P<q>['\"]?))(?P<v>"
    + _CLI_VALUE
    + ")"
)
_CLI_FLAG_GATE = (
    "redis-cli", "keydb-cli", "valkey-cli", "docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras",
    "crane", "mongo", "cqlsh", "rabbitmqadmin", "sqlcmd", "bcp", "osql", "ldap", "mosquitto_", "zip", "keytool",
    "jarsigner", "wget", "openssl", "7z", "rar ", "unrar", "winrar",
)  # fmt: skip
# `user:password` (or smbclient's `user%password`) after a tool's user flag: `curl -u AC12:tok`, HTTPie's
# `http -a me:pw`, `wget --user=me:pw`, `smbclient -U alice%pw`. Only what follows the first separator goes.
_CLI_USER_PASSWORD = re.compile(
    r"(?P<lead>(?<![\w.\]-])(?:(?:curl|wget)" + _CMD_REST + r"(?:-u|--user|-U|--proxy-user)"
    r"|(?:http|https|xh)(?=[ \t])" + _CMD_REST + r"(?:-a|--auth)"
    r"|(?:smbclient|rpcclient|smbget|smbmap|smbcacls)" + _CMD_REST + r"(?:-U|--user)"
    r")" + _SEP + r"(?P<q>['\"]?)[^\s:%'\"]{1,64}[:%])(?P<v>" + _CLI_VALUE + ")"
)
# not "http": every URL has it
_CLI_USER_GATE = ("curl", "wget", "http ", "https ", "xh ", "smb", "rpcclient")
# Server config files that take the password as a directive's argument: redis.conf `requirepass` /
# `masterauth` (also `CONFIG SET requirepass ...`), keepalived `auth_pass`, ldap.conf / nslcd `bindpw`,
# slapd.conf `rootpw`; with `=` only, wpa_supplicant `psk=` and sssd `ldap_default_authtok =`. A directive
# starts its line: a commented-out one (`# requirepass foobared`, redis.conf's own example) is kept.
_CONF_PASSWORD = re.compile(
    r"(?P<lead>(?:^[ \t]*|(?<![\w-])config[ \t]+set[ \t]+)"
    r"(?:(?:requirepass|masterauth|auth_pass|bindpw|rootpw)(?![\w-])[ \t]*[=:]?"
    r"|(?:psk|wpa_psk|ldap_default_authtok)[ \t]*=)[ \t]*(?P<q>['\"]?))"
    r"(?P<v>(?!\[REDACTED:)[^\s'\"#]+)",
    _I | re.MULTILINE,
)
_CONF_GATE = ("requirepass", "masterauth", "auth_pass", "bindpw", "rootpw", "psk", "ldap_default_authtok")
# The same directives quoted inside a sentence, in any language around them (the fourteenth set: "redis.conf
# 里写了 requirepass X ，重启以后..."; "I put masterauth X in the replica's conf"): the value must look like a
# password (a letter with a digit, a symbol or an inner capital), not a word ("set requirepass in redis.conf"),
# and a directive after a `#` on its line is commented out (`# requirepass foobared`) and kept.
_CONF_PROSE = re.compile(
    # (the name whole, ASCII letters around it: `AUTH_PASSWORD_VALIDATORS`, `auth_pass_type` are other names, and
    # Chinese may touch it: "里requirepass X")
    r"(?P<lead>(?<![A-Za-z0-9_-])(?:requirepass|masterauth|auth_pass|bindpw|rootpw)(?![A-Za-z0-9_-])"
    r"[ \t]*[=:]?[ \t]*(?P<q>['\"]?))"
    r"(?P<v>(?!\[REDACTED:)[^\s'\"，。；、）)]{1,128})",
    _I,
)


def _conf_prose_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    # (a comment mark within 200 characters before it on its line: a scan back to the line's start for every match is
    # quadratic on a long line)
    lo = max(0, m.start() - 200)
    line_start = text.rfind("\n", lo, m.start()) + 1 or lo
    secret = m.group("v").rstrip(_PW_TRAILING)
    if (
        not secret
        or "#" in text[line_start : m.start()]
        or not _pw_shaped(secret)
        or secret.lower() == "foobared"
    ):
        return m.group(), 0
    return _assigned_action(m)


# Passwords a tool reads from its input or its arguments, not after a flag: `echo 'deploy:x' | chpasswd` (each
# `user:password` pair, here-strings and a cloud-init `chpasswd:` list too), `echo 'x' | passwd --stdin bob`
# (`printf 'x\nx\n' | smbpasswd -s -a bob`: each line), `htpasswd -b file user x` / `htpasswd -nb user x`, Windows
# `net user bob x /add`. A crypt hash (`$6$...`, `chpasswd -e`) and cloud-init's `RANDOM` are kept.
_STDIN_ARG = r"'[^'\n]{1,300}'|\"[^\"\n]{1,300}\"|[^\s|;&'\"]{1,300}"
_STDIN_TOOL = r"chpasswd|passwd|smbpasswd|htpasswd|saslpasswd2|vncpasswd|pure-pw"
# (set 18: any command that reads its password from stdin, `echo X | docker login -u bot --password-stdin`,
# helm / podman / oras registry login likewise)
_STDIN_ANY = r"|[\w.-]+(?:[ \t]+[^\s|;&]+){0,12}?[ \t]+--password-stdin"
_STDIN_NEEDS = re.compile(r"passwd|pure-pw|net[ \t]+user|password-stdin")
_STDIN_PASSWORD = re.compile(
    r"(?<![\w-])(?:echo|printf)(?:[ \t]+-[A-Za-z]+)*[ \t]+(?P<arg>" + _STDIN_ARG + r")"
    r"(?=[ \t]*\|[ \t]*(?:sudo[ \t]+(?:-\S+[ \t]+)*)?(?P<tool>" + _STDIN_TOOL + _STDIN_ANY + r")(?![\w-]))"
    r"|(?<![\w-])(?P<tool2>chpasswd)(?:[ \t]+-\S+)*[ \t]*<<<[ \t]*(?P<arg2>" + _STDIN_ARG + r")"
    r"|(?<![\w-])(?P<tool3>chpasswd)(?:[ \t]*:[ \t]*(?:\r?\n[ \t]*list[ \t]*:[ \t]*[|>]?-?)?|(?:[ \t]+-\S+)*[ \t]*"
    r"<<-?[ \t]*['\"]?\w+['\"]?)[ \t]*"
    r"(?P<block>(?:\r?\n[ \t]*(?:-[ \t]+)?[\w.-]{1,32}:(?!\[REDACTED:)[^\s:]{1,128}[ \t]*(?=\r?\n|\Z))+)"
    r"|(?<![\w-])htpasswd(?P<flags>(?:[ \t]+-[A-Za-z]+)+)(?P<args>(?:[ \t]+[^\s|;&<>-][^\s|;&<>]*){2,3})"
    r"|(?<![\w-])net[ \t]+user[ \t]+(?:\"[^\"\n]{1,64}\"|[^\s/\"]{1,64})[ \t]+(?P<net>[^\s/*\"][^\s]{0,127})"
)


_STDIN_LINE = re.compile(r"(?:\\n|\n|\A)(?P<e>(?:(?!\\n)[^\n])*)")


def _stdin_secret(value: str) -> bool:
    return (
        bool(value)
        and not value.startswith("[REDACTED")
        and not _stand_in(value)
        and value not in ("RANDOM", "R")
        and not value.startswith("$")
    )


def _stdin_action(m: re.Match[str]) -> tuple[str, int]:
    whole, base = m.group(), m.start()
    tag = _tag("password")
    spans: list[tuple[int, int]] = []
    if m.group("net") is not None:
        if _stdin_secret(m.group("net")):
            spans.append(m.span("net"))
    elif m.group("args") is not None:
        args = list(re.finditer(r"[^\s]+", m.group("args")))
        flags = m.group("flags")
        want = 1 if "n" in flags else 2
        if "b" in flags and len(args) > want:
            a = args[want]
            if _stdin_secret(a.group()):
                start = m.start("args") + a.start()
                spans.append((start, start + len(a.group())))
    else:
        name = next(g for g in ("arg", "arg2", "block") if m.group(g) is not None)
        tool = m.group("tool") or m.group("tool2") or m.group("tool3")
        at = m.start(name)
        body = m.group(name)
        if body[:1] in "'\"":
            body, at = body[1:-1], at + 1
        # one entry a line (a real newline or a written `\n`); chpasswd's are `user:password`
        for line in _STDIN_LINE.finditer(body):
            entry = line.group("e").strip(" \t-")
            if not entry:
                continue
            offset = at + line.start("e") + line.group("e").index(entry)
            if tool == "chpasswd":
                if ":" not in entry:
                    continue
                user, _, value = entry.partition(":")
                offset += len(user) + 1
            else:
                value = entry
            if _stdin_secret(value):
                spans.append((offset, offset + len(value)))
    if not spans:
        return whole, 0
    out, done = [], base
    for start, end in spans:
        out += [m.string[done:start], tag]
        done = end
    out.append(m.string[done : m.end()])
    return "".join(out), len(spans)


# The rules above share one gate: one search of the text for all their words instead of four (they rarely
# match, and a gate search is most of what a rule that does not match costs).
_TOOL_GATE = (
    _CLI_FLAG_GATE + _CLI_USER_GATE + _CONF_GATE + ("passwd", "pure-pw", "net user", "password-stdin")
)


def _assigned_action(m: re.Match[str]) -> tuple[str, int]:
    groups = m.groupdict()
    lead_name, value_name = ("lead", "v") if groups.get("v") is not None else ("lead2", "v2")
    quoted = bool(groups.get("q") or groups.get("q2"))
    value = m.group(value_name)
    secret = value if quoted else value.rstrip(_PW_TRAILING)
    if (
        not secret
        or not secret[0].isascii()  # Chinese words where the value goes: `DB_PASSWORD=请填写数据库密码`
        or _ANGLE_SLOT.match(m.string, m.start(value_name)) is not None  # `SMTP_PASSWORD=<ask in #infra>`
        or _READS_SECRET.match(m.string, m.start(value_name)) is not None  # `DB_PASSWORD = os.environ[...]`
        or secret.startswith(_MARK)
        or _stand_in(secret)
        or _stand_in(value)
        or (_plain_word(secret) and secret.lower() in _NOT_A_PASSWORD)
        or _example_default(m.string, secret)
    ):
        return m.group(), 0
    lead_end = m.end(lead_name) - m.start()
    whole = m.group()
    return whole[:lead_end] + _tag("password") + whole[lead_end + len(secret) :], 1


# `user:password` where the sentence speaks of signing in: "use jdoe:Summer-Rain-4417 for the staging basic
# auth". The second half must look like a password (a letter and a digit or a symbol, 6+ characters): not a
# port, a time, an image tag or a version.
_AUTH_WORDS = re.compile(
    r"\b(?:basic[ \t]+auth|auth(?:entication|enticate)?|log(?:ged)?[ \t-]?in|sign(?:ed)?[ \t-]?in|creds?"
    r"|credentials?)\b|登录|登陆|登入|账号|帐号|认证|凭据",
    _I,
)
_USER_COLON_PASS = re.compile(
    r"(?P<lead>(?<![\w@./:%\[-])(?P<user>[A-Za-z][A-Za-z0-9_.+-]{0,63}):)"
    r"(?P<v>(?!\[REDACTED:)(?!//)[^\s:/@,，;；'\"`\[\]]{6,64})(?=[\s,，;；.。)]|\Z)"
)


def _user_pass_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    secret = m.group("v").rstrip(_PW_TRAILING)
    window = text[max(0, m.start() - 60) : m.end() + 60]
    has_letter = any(c.isalpha() for c in secret)
    has_other = any(c.isdigit() or not c.isalnum() for c in secret)
    if (
        len(secret) < 6
        or not (has_letter and has_other)
        or _VERSION.fullmatch(secret.lstrip("v"))
        or _stand_in(secret)
        or _AUTH_WORDS.search(window) is None
        or m.group("user").lower()
        in {"http", "https", "image", "tag", "version", "port", "host", "at", "time"}
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password") + m.group("v")[len(secret) :], 1


# A service's well-known account, a slash, then its password, where the text speaks of passwords or signing in:
# "grafana 还是 admin / Gr4nite-owl-19", "the NAS is root / Kiwi_2231 as before", "sa／Xr7#pq01". The account
# names one a product ships with or a team commonly shares (admin, root, sa, postgres, guest, ubuntu...); the
# value must look like a password (`_pw_shaped`), not a path's next part ("admin/settings", "root/2024-10").
_ACCOUNT_NAMES = (
    r"admin(?:istrator)?|root|sa|sys(?:tem)?|postgres|mysql|oracle|guest|ubuntu|ec2-user|centos|pi|elastic"
    r"|kibana|grafana|operator|superuser|deploy|jenkins|ftpuser|tomcat|manager|nacos|minioadmin"
)
# (the scan starts at the slash, a one-character test; the account is looked for before it by the action)
_ACCOUNT_PAIR = re.compile(
    r"[/／][ \t]*(?P<v>(?!\[REDACTED:)[^\s/／,，。;；、)）\]\[\"'`]{4,64})(?=[\s,，。;；、)）]|\Z)"
)
_ACCOUNT_BEFORE = re.compile(r"(?<![\w./:@\\-])(?:" + _ACCOUNT_NAMES + r")[ \t]*\Z", _I)
_ACCOUNT_CONTEXT = re.compile(
    r"pass(?:word|wd)?|pwd|(?<![A-Za-z])pw(?![A-Za-z])|密码|密碼|口令|登录|登陆|账号|帐号|log(?:ged)?[ \t-]?in"
    r"|sign(?:ed)?[ \t-]?in|creds?(?![A-Za-z])|credentials?|(?<![A-Za-z])auth"
    # (or a way into a machine: "staging box ... deploy / X, ssh on port 2222", "跳板机 root / X")
    r"|(?<![A-Za-z])(?:ssh|sftp|ftp|rdp|vnc|telnet|putty|winscp)(?![A-Za-z])|服务器|主机|堡垒机|跳板机|远程桌面",
    _I,
)


# ... or right after a host's name or address, as a team shares a login to a machine: "pg-stage-02.internal  admin /
# X", "10.0.4.17:22 root / X", "db01.corp.lan，账号 admin / X"
_HOST_THEN_ACCOUNT = re.compile(
    r"(?<![\w.-])(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|(?:[A-Za-z0-9-]+\.)+[A-Za-z][A-Za-z0-9-]*)(?::[0-9]{1,5})?"
    r"[ \t]*[,，:：;|-]?[ \t]*"
    r"(?:(?:账号|帐号|user(?:name)?|login)[ \t]*[:：]?[ \t]*)?(?:" + _ACCOUNT_NAMES + r")[ \t]*\Z",
    _I,
)


# ... or, with no such word near, when the slash stands between spaces and the value is one no path, word or
# version is: 8+ characters with a letter, a digit and a symbol (`!#$%&*+=?@^~`) or a capital after a small
# letter (the fourteenth
# set: "staging admin for the demo is admin / Tiger8864?riv , please rotate it"). Kept: "admin / settings",
# "root / 2 核 / 4G", "admin / v2.3.1", "admin / Users2024 tab".
_STRONG_SYMBOL = re.compile(r"[!#$%&*+=?@^~]")


def _strong_pair(text: str, m: re.Match[str], secret: str) -> bool:
    if not (
        text[m.start() - 1 : m.start()] in (" ", "\t") and text[m.start() + 1 : m.start() + 2] in (" ", "\t")
    ):
        return False
    return _strong_secret(secret, 8) or _joined_secret(secret)


# ... or 10+ characters with a run of digits between letters (set 20: "the staging grafana is still admin /
# Violet_1894canyon"): a word, a number, a word, as people make a password; "admin / Users2024" (digits at the end
# only), "admin / v2.3.1" stay.
_DIGITS_BETWEEN_LETTERS = re.compile(r"[A-Za-z][_-]?[0-9]{2,}[_-]?[A-Za-z]{2}")


def _joined_secret(secret: str) -> bool:
    return len(secret) >= 10 and _DIGITS_BETWEEN_LETTERS.search(secret) is not None


def _strong_secret(secret: str, shortest: int) -> bool:
    if len(secret) < shortest or _VERSION.fullmatch(secret.lstrip("vV")):
        return False
    letter = _has_letter(secret)
    digit = _has_digit(secret)
    return letter and digit and (_inner_capital(secret) or _STRONG_SYMBOL.search(secret) is not None)


def _account_pair_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    text = m.string
    if _ACCOUNT_BEFORE.search(text, max(0, m.start() - 24), m.start()) is None:
        return _any_account_pair(m, secret)
    if (
        not secret
        or not _pw_shaped(secret)
        or _stand_in(secret)
        or text.startswith(_MARK, m.end())
        or (
            _ACCOUNT_CONTEXT.search(text, max(0, m.start() - 200), m.end() + 200) is None
            and _HOST_THEN_ACCOUNT.search(text, max(0, m.start() - 90), m.start()) is None
            and not _strong_pair(text, m, secret)
        )
    ):
        return m.group(), 0
    lead = m.start("v") - m.start()
    return m.group()[:lead] + _tag("password") + value[len(secret) :], 1


# An account outside the list (set 13's leftover: "the wiki's password: li.wei / Hx7#kk20pq"): a user name, a
# slash between spaces, a value of 8+ characters with a letter, a digit and a symbol (`!#$%&*+=?@^~`; an inner
# capital alone is a product name: "iOS / macOS14"), not an e-mail address, and a word of passwords or signing
# in near it. Kept: "john / john2@example.com", "CI / v2.3.1+build".
_ANY_ACCOUNT_BEFORE = re.compile(r"(?<![\w./:@\\-])[A-Za-z][A-Za-z0-9_.-]{1,31}[ \t]+\Z")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


# ... or an e-mail address as the account after an account label (set 16: "demo account: demo@acme.io /
# huanglei1995", "测试账号：qa@corp.cn / tester2024"): the label and the address say a login is given, so the value
# after ` / ` needs only letters and digits, 6+ characters (no version, date or address). Kept: "account: a@b.io /
# v2.3.1", "user alice@corp.com / 2024-05-01", "contact: bob@x.io / 555-1234" (no account label).
# (or a phone number as the account, as sites that sign in by phone take it: set 19's "12306 用户名 186xxxxxxxx /
# X", "login +44 7700 900123 / X")
_EMAIL_ACCOUNT_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])(?:account|acct|login|log-in|user(?:name)?|creds?|credentials|sign[ -]?in)(?![A-Za-z])"
    r"|账号|帐号|帳號|账户|帳戶|登录|登入|用户名|用戶名)[^\n@]{0,16}?[ \t:：=]"
    r"(?:[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,6}|(?<![\w+-])\+?[0-9]{2,4}(?:[ -]?[0-9]{2,5}){1,4})[ \t]*\Z",
    _I,
)


def _email_account_pair(m: re.Match[str], secret: str) -> bool:
    text = m.string
    return (
        len(secret) >= 6
        and text[m.start() + 1 : m.start() + 2] in (" ", "\t")
        and any(c.isalpha() for c in secret)
        and any(c.isdigit() for c in secret)
        and _EMAIL.fullmatch(secret) is None
        and _VERSION.fullmatch(secret.lstrip("vV")) is None
        and _DATE_OR_TIME.fullmatch(secret) is None
        and not _stand_in(secret)
        and not text.startswith(_MARK, m.end())
        and (before := _EMAIL_ACCOUNT_BEFORE.search(text, max(0, m.start() - 100), m.start())) is not None
        and ("@" in before.group() or 7 <= sum(c.isdigit() for c in before.group()) <= 15)
    )


# ... or a generated password with no digit at all (set 17's h17-131 "ops-admin / =c*UyJCIqF%bLV", which may also
# start with `=`): 10+ characters, both cases with a capital inside, and two or more of `!#$%&*+=?@^~`. A word
# pair, a path or a product name has no such mix ("iOS / macOS", "R&D / Q&A").
def _symbol_strong(secret: str) -> bool:
    return (
        len(secret) >= 10
        and len(_STRONG_SYMBOL.findall(secret)) >= 2
        and _has_lower(secret)
        and _inner_capital(secret)
    )


def _any_account_pair(m: re.Match[str], secret: str) -> tuple[str, int]:
    text = m.string
    if secret and _email_account_pair(m, secret):
        lead = m.start("v") - m.start()
        return m.group()[:lead] + _tag("password") + m.group("v")[len(secret) :], 1
    if (
        not secret
        or text[m.start() + 1 : m.start() + 2] not in (" ", "\t")
        or _ANY_ACCOUNT_BEFORE.search(text, max(0, m.start() - 40), m.start()) is None
        or not (
            (_strong_secret(secret, 8) and _STRONG_SYMBOL.search(secret) is not None)
            or _symbol_strong(secret)
        )
        or _EMAIL.fullmatch(secret)
        or _stand_in(secret)
        or text.startswith(_MARK, m.end())
        or (
            _ACCOUNT_CONTEXT.search(text, max(0, m.start() - 200), m.end() + 200) is None
            and _LOGIN_PAGE_BEFORE.search(text, max(0, m.start() - 80), m.start()) is None
        )
    ):
        return m.group(), 0
    lead = m.start("v") - m.start()
    value = m.group("v")
    return m.group()[:lead] + _tag("password") + value[len(secret) :], 1


# HTTP basic auth: base64 of "user:password".
_BASIC = re.compile(r"(?<![A-Za-z])(?P<lead>basic[ \t]+)(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", _I)


def _basic_action(m: re.Match[str]) -> tuple[str, int]:
    raw = m.group("v")
    try:
        decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return m.group(), 0
    if ":" not in decoded or not decoded.isprintable():
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# ---------------------------------------------------------------- other national ID numbers

# Numbers that carry their own check, named by their label (a bare 9-digit run passes the Dutch 11-proof
# one time in eleven, so the label is required where the check is that weak): the Dutch BSN (11-proof),
# the Brazilian CPF (two check digits; its dotted form is distinctive enough alone), the Spanish DNI / NIE
# (a check letter).
# (set 22: the label may be a clause away from the number, "my Dutch BSN from when I lived in Utrecht is ...": up to
# 100 characters with no digit; beyond 24 they must stay in the label's sentence and name no other number, and the
# 11-proof still decides)
_BSN = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:bsn|burgerservicenummer|sofi[ -]?nummer)\b(?P<gap>[^0-9\n]{0,100}))"
    r"(?P<v>(?<![0-9])[0-9]{4}[ .]?[0-9]{2}[ .]?[0-9]{3}|[0-9]{9})(?![0-9])",
    _I,
)
_BSN_GAP_OTHER = re.compile(
    r"[.!?;。！？；](?:[ \t]|\Z)|(?<![A-Za-z])(?:phone|tel|mobile|order|invoice|ticket|account|iban|member|customer"
    r"|client|policy|zip|postcode|postal|kvk|btw|vat|case|reference|ref|tracking|booking|employee|student|passport)"
    r"(?![A-Za-z])",
    _I,
)
# The Polish PESEL (11 digits: the birth date, its month carrying the century, a serial and a check digit of
# weights 1-3-7-9), after its name in any form: "PESEL: ...", `<pesel>...</pesel>`, `"pesel": "..."`, a column.
_PESEL = re.compile(
    r"(?P<lead>(?<![A-Za-z])pesel(?![A-Za-z])[^0-9\n]{0,24})(?P<v>(?<![0-9])[0-9]{11})(?![0-9])",
    _I,
)
# (Patterns start with a character class, their lookbehind after it, so the engine can skip to candidates; a
# leading empty group or an alternation would make it try every position.)
_CPF = re.compile(r"(?P<v>[0-9](?<![0-9.][0-9])[0-9]{2}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}(?![0-9]))")
_CPF_LABELLED = re.compile(
    r"(?P<lead2>(?<![A-Za-z])cpf\b[^0-9\n]{0,16})(?P<v2>(?<![0-9])[0-9]{11}(?![0-9]))", _I
)
_DNI = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:dni|nie|nif)\b[^0-9\n]{0,16}?)"
    # (an NIE's letter may stand apart as its digits' check letter does, set 26: "Z-3348287-K")
    r"(?P<v>(?<![0-9A-Za-z])(?:[XYZxyz][ -]?)?[0-9]{7,8}[ -]?[A-Za-z](?![0-9A-Za-z]))",
    _I,
)
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _bsn_ok(s: str) -> bool:
    d = [int(c) for c in s if c.isdigit()]
    if len(d) != 9 or (d[0] == 0 and d[1] == 0):
        return False
    total = sum(x * w for x, w in zip(d[:8], range(9, 1, -1), strict=True)) - d[8]
    return total % 11 == 0


def _pesel_ok(s: str) -> bool:
    d = [int(c) for c in s]
    if len(d) != 11 or not 1 <= (d[2] * 10 + d[3]) % 20 <= 12 or not 1 <= d[4] * 10 + d[5] <= 31:
        return False
    return (10 - sum(x * w for x, w in zip(d[:10], (1, 3, 7, 9) * 3, strict=False)) % 10) % 10 == d[10]


def _cpf_ok(s: str) -> bool:
    d = [int(c) for c in s if c.isdigit()]
    if len(d) != 11 or len(set(d)) == 1:
        return False
    for n in (9, 10):
        check = sum(x * w for x, w in zip(d[:n], range(n + 1, 1, -1), strict=True)) * 10 % 11 % 10
        if check != d[n]:
            return False
    return True


def _dni_ok(s: str) -> bool:
    raw = s.replace(" ", "").replace("-", "").upper()
    body, letter = raw[:-1], raw[-1]
    body = body.replace("X", "0", 1).replace("Y", "1", 1).replace("Z", "2", 1) if body[0] in "XYZ" else body
    return body.isdigit() and len(body) == 8 and _DNI_LETTERS[int(body) % 23] == letter


# UK National Insurance number (no checksum: the format and its label decide), Taiwan and Hong Kong IDs
# (check digits), India's Aadhaar (Verhoeff), IBANs (ISO 13616 mod 97, strong enough without a label).
_NINO = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:national[ \t]+insurance|nino|ni[ \t]+(?:number|no))\b[^\n]{0,40}?)"
    r"(?P<v>(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r"(?:[ \t]?[0-9]{2}){3}[ \t]?[A-D](?![A-Za-z0-9]))",
    _I,
)
_TW_ID = re.compile(r"(?P<v>[A-Z](?<![A-Za-z0-9][A-Z])[12][0-9]{8}(?![A-Za-z0-9]))")
# (a space may stand after the letters, as the card prints them and people copy it, set 26: "R 889469 (7)")
_HKID = re.compile(
    r"(?P<v>[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]?[ \t]?[0-9]{6}[ \t]?(?:\([0-9A]\)|[0-9A])(?![A-Za-z0-9]))"
)
_AADHAAR = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:aadhaar|aadhar|uidai|आधार)[^0-9\n]{0,24}?)"
    r"(?P<v>(?<![0-9])[2-9][0-9]{3}[ -]?[0-9]{4}[ -]?[0-9]{4}(?![0-9]))",
    _I,
)
_IBAN = re.compile(
    r"(?P<v>[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?(?![A-Za-z0-9]))"
)
# "Aadhaar 3054 6592 0530", "Aadhaar no: ...": a number the user names an Aadhaar right before it is one even
# when its check digit is wrong (a mistyped Aadhaar still identifies its holder); further away
# ("Aadhaar linked to ... 1234 5678 9012") the Verhoeff check decides.
_AADHAAR_NEXT_TO_LABEL = re.compile(
    r"(?:aadhaar|aadhar|आधार)(?:[ \t]+(?:card|number|no\.?|num|#))*[ \t]*(?:[:：=#-]|is)?[ \t]*", _I
)


def _aadhaar_action(m: re.Match[str]) -> tuple[str, int]:
    if _AADHAAR_NEXT_TO_LABEL.fullmatch(m.group("lead")) or _verhoeff_ok(m.group("v")):
        return m.group("lead") + _tag("national_id"), 1
    return m.group(), 0


# A bank account number after its label, where the text speaks of a bank (a sort code, an IBAN, a SWIFT /
# BIC, routing or IFSC code, the bank's name under "Bank:", 开户行): "Account no: 29434437" in payment
# details. Without a bank nearby an "account number" is a customer or order account and is kept.
_BANK_ACCOUNT = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:(?:bank[ \t]+)?(?:account|acct|a/c)(?:[ \t]*(?:number|num|no\.?|nr\.?|#)"
    r"[ \t]*(?:[:：=]|is)?|[ \t]*(?:[:：=]|is))?"
    r"|(?:银行|收款|对公)?(?:账号|帐号|账户|帳號|帳戶)[ \t]*(?:[:：]|是|为)?)[ \t]*)"
    r"(?P<v>(?<![0-9])[0-9](?:[ -]?[0-9]){5,19}(?![0-9A-Za-z]))",
    _I,
)
_BANK_CONTEXT = re.compile(
    r"\b(?:sort[ \t]*code|iban|swift|bic|routing|aba|ifsc|bsb|banks?|banking|beneficiary|wire"
    # where pay goes: "direct deposit acct ...", "payroll account", "a checking / savings account", "ACH"
    r"|(?:direct[ \t]+)?deposits?|payroll|paycheck|salary|ach|(?:checking|savings|current)[ \t]+(?:account|acct))\b"
    r"|银行|開戶行|开户行|开户名|户名|汇款|匯款|工资|工資|代发|储蓄|存折",
    _I,
)
_BANK_GATE = ("account", "acct", "a/c", "账号", "帐号", "账户", "帳號", "帳戶")


def _bank_account_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    if _BANK_CONTEXT.search(text, max(0, m.start() - 200), m.end() + 200) is None:
        return m.group(), 0
    return m.group("lead") + _tag("bank_account"), 1


_ID_CARD_WORDS = (
    "身分",
    "身份",
    "hkid",
    "id card",
    "identity",
    "台灣",
    "台湾",
    "香港",
    "統一編號",
    "统一编号",
)
_TW_LETTERS = "ABCDEFGHJKLMNPQRSTUVXYWZIO"  # A=10 ... in the order of the check's letter codes


def _tw_id_ok(s: str) -> bool:
    code = _TW_LETTERS.index(s[0]) + 10
    digits = [code // 10, code % 10, *(int(c) for c in s[1:])]
    weights = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)
    return sum(d * w for d, w in zip(digits, weights, strict=True)) % 10 == 0


def _hkid_ok(s: str) -> bool:
    raw = s.replace(" ", "").replace("\t", "").replace("(", "").replace(")", "")
    letters, digits, check = raw[:-7], raw[-7:-1], raw[-1]
    values = ([36] if len(letters) == 1 else []) + [ord(c) - 55 for c in letters] + [int(c) for c in digits]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True))
    expected = (11 - total % 11) % 11
    return check == ("A" if expected == 10 else str(expected))


def _verhoeff_ok(s: str) -> bool:
    d = (
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
        (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
        (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
        (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
    )  # fmt: skip
    p = (
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
        (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
        (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
    )  # fmt: skip
    c = 0
    for i, ch in enumerate(reversed([x for x in s if x.isdigit()])):
        c = d[c][p[i % 8][int(ch)]]
    return c == 0


# The countries of the IBAN registry (set 23: a PGP fingerprint "EB49 63D7 5530 ..." passed mod 97 by chance).
_IBAN_COUNTRIES = frozenset(
    "AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE GI GL GR GT HN HR HU IE IL "
    "IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU NI NL NO OM PK PL PS PT QA RO RS RU SA SC SD SE SI "
    "SK SM SO ST SV TL TN TR UA VA VG XK YE".split()
)


def _iban_ok(s: str) -> bool:
    raw = s.replace(" ", "")
    # (letters and digits only: a table's account cell may hold a dot, `GB12.3456...`, which int(c, 36) refuses)
    if raw[:2] not in _IBAN_COUNTRIES or not 15 <= len(raw) <= 34 or not (raw.isascii() and raw.isalnum()):
        return False
    moved = raw[4:] + raw[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# Labels listed, then their values in the same order: "API Key 和 Secret Key 分别是 X 和 Y", "用户名、密码分别为 a、b",
# "the client id and client secret are X and Y respectively". Each value takes the kind of its label (by
# `secret_kind_of_name`, the names a mapping's key is read by): a key's value must look generated, a password's
# not be a word of prose; a value under a label that names no secret (an id, a user, an AppID) is kept.
_RESPECTIVE_VALUE = (
    r"[\"'`“‘]?(?!\[REDACTED:)[\x21\x23-\x26\x28-\x2b\x2d-\x3a\x3c-\x5f\x61-\x7e]{1,200}[\"'`”’]?"
)
_RESPECTIVE_SEP = r"(?:[ \t]*(?:和|与|及|、|[,，;；])[ \t]*|[ \t]+(?:/|and|&)[ \t]+|,[ \t]*and[ \t]+)"
_RESPECTIVE = re.compile(
    r"(?P<lead>(?:分别|各自|依次)(?:是|为|為)?[ \t]*[:：]?[ \t]*|[ \t]+(?:are|were)[ \t]*:?[ \t]*)"
    r"(?P<values>" + _RESPECTIVE_VALUE + "(?:" + _RESPECTIVE_SEP + _RESPECTIVE_VALUE + "){1,3})"
    r"(?P<tail>,?[ \t]+respectively(?![A-Za-z]))?",
    _I,
)
_RESPECTIVE_LABEL_SEP = re.compile(r"[ \t]*(?:和|与|及|、|[,，;；/&]|(?<![A-Za-z])and(?![A-Za-z]))[ \t]*", _I)
_RESPECTIVE_SPLIT = re.compile(_RESPECTIVE_SEP, _I)
# (and the labels a mapping's field name is not read by: an access key's id, the short AK / SK)
_KEY_NAME_END = re.compile(
    r"(?<![A-Za-z])(?:" + _ACCESS_KEY_ID + r"|(?-i:AK|SK|ak|sk)(?:[ _-]?id)?)\Z",
    _I,
)
_RESPECTIVE_GATE = ("分别", "各自", "依次", "respectively")
_RESPECTIVE_NEEDS = re.compile("|".join(_RESPECTIVE_GATE))


def _respective_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    if m.group("lead").strip().lower().startswith(("are", "were")) and m.group("tail") is None:
        return m.group(), 0  # "are X and Y" only with "respectively"
    # (the labels on its line within 120 characters before it: with no line break there, the split read the whole
    # text before it, once per list, quadratic)
    lo = max(0, m.start() - 120)
    line_start = text.rfind("\n", lo, m.start()) + 1 or lo
    labels = _RESPECTIVE_LABEL_SEP.split(text[line_start : m.start()])
    body = m.group("values")
    values, at = [], 0  # (start, piece) between the separators
    for sep in _RESPECTIVE_SPLIT.finditer(body):
        values.append((at, body[at : sep.start()]))
        at = sep.end()
    values.append((at, body[at:]))
    if len(labels) < len(values) or _MARK in text[m.end() : m.end() + 40]:
        return m.group(), 0  # (a list whose last values are already replaced: no shorter run is read again)
    found = 0
    out, done = [], 0
    for label, (start, raw) in zip(labels[-len(values) :], values, strict=True):
        label = label.strip(" \t:：的")
        kind = secret_kind_of_name(label) or ("api_key" if _KEY_NAME_END.search(label) else None)
        secret = raw.strip("\"'`“”‘’").rstrip(_PW_TRAILING)
        if kind is None or not secret or _stand_in(secret):
            continue
        if kind == "password" and _plain_word(secret) and secret.lower() in _NOT_A_PASSWORD:
            continue
        if kind != "password" and not _token_like(secret):
            continue
        at = start + raw.index(secret)
        out += [body[done:at], _tag(kind)]
        done = at + len(secret)
        found += 1
    if not found:
        return m.group(), 0
    out.append(body[done:])
    base = m.start("values") - m.start()
    whole = m.group()
    return whole[:base] + "".join(out) + whole[base + len(body) :], found


# An access key and its secret given as a pair: "AK/SK：<id> / <secret>", "access key / secret key: a / b"
# (the id may already be a placeholder: `LTAI...`, `AKIA...` are replaced by their own rules first).
_AK_SK = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:ak|access[ _-]?key(?:[ _-]?id)?)[ \t]*[/／&][ \t]*"
    r"(?:sk|secret(?:[ _-]?(?:access[ _-]?)?key)?)(?![A-Za-z0-9])[ \t]*(?:[:：=][ \t]*|is[ \t]+)?"
    r"(?:\[REDACTED:api_key\]|[A-Za-z0-9_+/=-]{8,128})[ \t]*[/／,，|][ \t]*)(?P<v>[A-Za-z0-9_+/=-]{16,128})"
    r"(?![A-Za-z0-9_+/=-])",
    _I,
)
# A cloud key under its short label, alone on its line or in a sentence: "AK：9J2V...", "SK = n4lA...",
# "ak 是 ...". The value must look generated (a digit, 16+ characters): "AK-47", "SK hynix" are no keys.
# (The label's letters come first and the checks on them after, so that the scan can skip to an a / s.)
_SHORT_KEY_LABEL = re.compile(
    r"[AaSs][Kk](?<![A-Za-z0-9_.-][AaSs][Kk])(?<=AK|SK|ak|sk)(?:[ _-]?(?:ID|Id|id))?"
    + _ZH_SUFFIX
    + r"[ \t]*(?:[:：=＝]|->|→|是|为|為)[ \t]*[\"'`]?"
    r"(?P<v>(?!\[REDACTED:)[A-Za-z0-9+/=_-]{16,128})(?![A-Za-z0-9+/=_-])"
)
# a longer list of label + connector spellings costs more to search than it saves
_SHORT_KEY_GATE = ("ak", "sk")


def _generated_key(s: str) -> bool:
    return _token_like(s) and any(c.isdigit() for c in s) and not _stand_in(s)


# A TOTP secret (base32: letters and the digits 2-7) written as the setup key is shown, in groups of four:
# "2FA 密钥：muv4 uxnb g5bi irmv ...", "setup key JBSW Y3DP EHPK 3PXP". The label names a secret, a
# second factor or an authenticator; the whole run of groups must be base32 (a hex fingerprint is not: it
# has no letter past F), one case, with a digit.
_TOTP_LABEL = (
    r"(?:(?<![A-Za-z])(?:2fa|mfa|totp|otp|two[ -]factor|authenticator|setup[ _-]?key|secret|seed|key)"
    r"(?![A-Za-z])|密钥|秘钥|密鑰|验证器|驗證器|两步验证|兩步驗證|二次验证|二步验证)"
)
_TOTP_HEAD = re.compile(_TOTP_LABEL, _I)
# (the label may be a clause away, set 24: "the setup key the site showed me was e2if tap7 ..."; the run is whole when
# no group of four stands right before or after it, and a word of another length may: "was", "and it works")
_TOTP_GROUPED = re.compile(
    r"(?P<lead>" + _TOTP_LABEL + r"[^\n]{0,60}?)"
    r"(?P<v>(?<![A-Za-z0-9])(?<!(?<![A-Za-z0-9])[A-Za-z2-7]{4} )[A-Za-z2-7]{4}(?: [A-Za-z2-7]{4}){3,15}"
    r"(?![A-Za-z0-9]| [A-Za-z2-7]{4}(?![A-Za-z0-9])))",
    _I,
)
# windowed (see `_Rule.head`): these words are found by the one scan shared with the other labelled rules
_TOTP_GATE = (
    "2fa", "mfa", "otp", "two-factor", "two factor", "authenticator", "secret", "seed", "key",
    "密钥", "秘钥", "密鑰", "验证器", "驗證器", "两步验证", "兩步驗證", "二次验证", "二步验证",
)  # fmt: skip


# A hex secret typed or read out in groups after its label, on the same line: "the auth token ..., I typed it in
# groups: dbb1a3d0 a82dbfe3 ...", "API secret: 9f3c 1a7e ...", "令牌分组念给你：...". Groups of 4 to 8 hex digits
# separated by single spaces, 24+ digits in all, letters with digits, the groups of one length (the last may be
# shorter). Not after a word naming a digest or a public identifier on the line (a PGP key's fingerprint, a
# checksum, a serial), which is written the same way.
_HEX_LABEL = r"(?:(?<![A-Za-z])(?:" + _KEY_WORDS + r")s?(?![A-Za-z])|密钥|秘钥|密鑰|令牌)"
_HEX_GROUPED = re.compile(
    r"(?P<lead>" + _HEX_LABEL + r"(?:(?!\[REDACTED:)[^\n]){0,80}?[ \t:：=])"
    # (the whole run of groups or nothing: no group right before it or after it)
    r"(?P<v>(?<![0-9a-fA-F]{4}[ \t])[0-9a-fA-F]{4,8}(?:[ \t][0-9a-fA-F]{4,8}){2,31})"
    r"(?![0-9A-Za-z]|[ \t][0-9a-fA-F]{4,8}(?![0-9A-Za-z]))",
    _I,
)
_HEX_HEAD = re.compile(_HEX_LABEL, _I)
_NOT_A_KEY_HEX = re.compile(
    r"fingerprint|指纹|指紋|checksum|digest|hash|sha-?[0-9]|md5|crc|校验|commit|serial|序列号|uuid"
    r"|(?<![A-Za-z])mac(?![A-Za-z])",
    _I,
)


def _hex_groups_action(m: re.Match[str]) -> tuple[str, int]:
    groups = m.group("v").split()
    digits = "".join(groups)
    # (its line's words within 200 characters before it: a scan back to the line's start for every match is quadratic
    # on a long line of hex groups)
    lo = max(0, m.start() - 200)
    line_start = m.string.rfind("\n", lo, m.start()) + 1 or lo
    if (
        len(digits) < 24
        or any(len(g) != len(groups[0]) for g in groups[:-1])
        or len(groups[-1]) > len(groups[0])
        or not any(c.isdigit() for c in digits)
        or not any(c.isalpha() for c in digits)
        or _NOT_A_KEY_HEX.search(m.string, line_start, m.start("v")) is not None
    ):
        return m.group(), 0
    return m.group("lead") + _tag("api_key"), 1


def _totp_action(m: re.Match[str]) -> tuple[str, int]:
    """The run of groups when it is a base32 key; or, when its first group is a word of four letters ("then JBSW Y3DP
    ..."), the rest of it."""
    value = m.group("v")
    start = m.start("v") - m.start()
    if _base32_groups(value):
        return m.group()[:start] + _tag("api_key"), 1
    first, rest = value.split(" ", 1)
    if first.isalpha() and rest.count(" ") >= 3 and _base32_groups(rest):
        return m.group()[: start + len(first) + 1] + _tag("api_key"), 1
    return m.group(), 0


def _base32_groups(s: str) -> bool:
    letters = [c for c in s if c.isalpha()]
    one_case = all(c.islower() for c in letters) or all(c.isupper() for c in letters)
    past_hex = any(c.lower() > "f" for c in letters)
    return one_case and past_hex and any(c.isdigit() for c in s)


# One-time recovery / backup codes listed after their label: each code goes (a code has a digit, 6 to 24
# characters, groups joined by dashes).
_CODES = re.compile(
    # (with a word between: "backup verification codes", "emergency login codes", 备用验证码, 恢复代码, 備用驗證碼)
    r"(?P<label>(?:recovery|backup|2fa|two[ -]factor|emergency|scratch)[ \t]+(?:(?:verification|login|sign[ -]?in"
    r"|security|access|auth(?:entication)?|2fa|mfa)[ \t]+)?codes?"
    r"|(?:恢复|备用|救援|备份|恢復|備用|備份|应急|應急)(?:验证|驗證|登录|登入|安全)?(?:码|碼|代码|代碼)"
    # or as codes each good for one use: "each can be used once:", "single-use codes:", "每个只能用一次："
    r"|(?<![A-Za-z])(?:(?:each|every)(?:[ \t]+(?:one|code))?|they|these(?:[ \t]+codes)?)[ \t]+(?:can|may|will)"
    r"[ \t]+(?:only[ \t]+)?(?:be[ \t]+)?used?[ \t]+(?:only[ \t]+)?once|single[ -]use[ \t]+codes"
    r"|one[ -]time(?:[ -]use)?[ \t]+codes|(?:每个|每一个)?(?:码)?(?:只能|仅能|只可)(?:使用|用)一次"
    # or copied from a second factor's page with no name for them ("from the GitHub 2FA page:", "两步验证页面："):
    # the codes that page shows are its recovery codes
    r"|(?P<page>(?<![A-Za-z0-9])(?:2fa|mfa|two[ -]factor|2-step|two-step)(?![A-Za-z0-9])"
    r"|两步验证|二步验证|双重验证|雙重驗證|兩步驗證|双因素|雙因素|二次验证)(?![^\n]{0,40}?(?:codes?(?![A-Za-z])|码|碼)))"
    # (any list separator: commas, semicolons, 、, |, / or a new line; an item may be a code with no digit, which
    # the action takes only in the shape of the list's codes, or a placeholder: an earlier rule that took the
    # first code after its 验证码 must not hide the rest)
    # (the account they belong to may stand on its own line first, as Google prints it: "BACKUP VERIFICATION
    # CODES\nanna@example.com\n\n5709 1687    9504 2605", set 20)
    r"(?P<body>[^\n]{0,40}?[:：\n]"
    r"(?:[ \t]*[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,6}[ \t]*\r?\n)?"
    r"(?P<list>(?:(?:[ \t,，;；:：\n、|/／]+|(?<=[:：]))"
    r"(?:\[REDACTED:[a-z_]+\]|[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{3,})*(?![\w-]))){1,32}))",
    _I,
)
_CODE_GATE = (
    "recovery code", "backup code", "2fa code", "two-factor code", "two factor code",
    "恢复码", "备用码", "救援码", "备份码", "恢復碼", "備用碼", "used once", "use once", "single-use codes",
    "single use codes", "one-time codes", "one time codes", "one-time use codes", "用一次",
    "2fa", "mfa", "two-factor", "two factor", "2-step", "two-step", "两步验证", "二步验证", "双重验证", "雙重驗證",
    "兩步驗證", "双因素", "雙因素", "二次验证",
)  # fmt: skip
# The labels with a word between ("backup verification codes", 备用验证码) or named otherwise (emergency, scratch,
# 应急): their words are common alone ("backup", 恢复), so the rule runs for them only once a short pattern of the
# label itself is found (the full pattern costs about 7 ms on a 32 KB paste, this one about 2)
_CODE_GATE_WIDE = (
    "recovery ", "backup ", "emergency ", "scratch ", "恢复", "备用", "救援", "备份", "恢復", "備用", "備份", "应急",
    "應急",
)  # fmt: skip
_CODE_LABEL_WIDE = re.compile(
    r"(?:recovery|backup|emergency|scratch)[ \t]+(?:[a-z-]+[ \t]+)?codes?(?![a-z])"
    r"|(?:恢复|备用|救援|备份|恢復|備用|備份|应急|應急)(?:验证|驗證|登录|登入|安全)?(?:码|碼|代码|代碼)",
    _I,
)
_AK_SK_GATE = ("ak/", "ak /", "ak／", "ak&", "access key", "access_key", "access-key", "accesskey")
_CODE_TOKEN = re.compile(r"(?<![\w-])(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{3,})*(?![\w-])")


# Any item of a code list (a placeholder kept as it is); a code of two groups of four digits joined by a space is
# one item, as a backup code is printed (set 19: "backup codes：9915 5156，7927 7604", "备用码 4821 0937、5530 2219")
_CODE_ITEM = re.compile(
    r"\[REDACTED:[a-z_]+\]|(?<![\w-])[0-9]{4} [0-9]{4}(?![\w-]| [0-9])"
    r"|(?<![\w-])[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{3,})*(?![\w-])"
)


_LINE_END_AFTER_CODE = re.compile(r"[ \t]*[,，。.;；!！]?[ \t]*(?:\r?\n|\Z)")


def _code_shape(code: str) -> tuple[int, ...]:
    return tuple(len(group) for group in code.split("-"))


def _code_ok(code: str) -> bool:
    letters = code.replace("-", "")
    one_case = letters == letters.lower() or letters == letters.upper()  # not a word like "1Password"
    return (
        6 <= len(code) <= 24
        and one_case
        and _VERSION.fullmatch(code) is None
        and _DATE_OR_TIME.fullmatch(code) is None
    )


def _codes_action(m: re.Match[str]) -> tuple[str, int]:
    body = m.group("body")
    if m.group("page") is not None:  # named by the page only: a list, the codes on the lines after the label
        first = _CODE_TOKEN.search(body)
        if first is None or "\n" not in body[: first.start()]:
            return m.group(), 0
    cut = m.start("list") - m.start("body")
    head, listed = body[:cut], body[cut:]
    # The list runs while its items are codes: a placeholder, a code with a digit, or a grouped code of letters
    # only; the first other item (a word, a short number) ends it.
    run: list[re.Match[str]] = []
    for c in _CODE_ITEM.finditer(listed):
        code = c.group()
        if not code.startswith("[") and not (
            _code_ok(code) and (any(ch.isdigit() for ch in code) or "-" in code)
        ):
            break
        run.append(c)
    # A code of letters only belongs to the list when it has the grouped shape (dash-joined groups) of two or
    # more of the list's codes with a digit: GitHub's `gsvr-qvja` among `rkk4-wys1`, `mu0e-m730`...; the first
    # that has not ends the list. The last one must end its line too: "read-only copies" after such a list is
    # prose, not a code.
    shapes: dict[tuple[int, ...], int] = {}
    for c in run:
        if any(ch.isdigit() for ch in c.group()):
            shape = _code_shape(c.group())
            shapes[shape] = shapes.get(shape, 0) + 1
    found = 0
    out: list[str] = []
    end = 0
    for c in run:
        code = c.group()
        if code.startswith("["):
            continue
        if not any(ch.isdigit() for ch in code) and (
            shapes.get(_code_shape(code), 0) < 2
            or (c is run[-1] and _LINE_END_AFTER_CODE.match(listed, c.end()) is None)
        ):
            break
        out.append(listed[end : c.start()] + _tag("password"))
        end = c.end()
        found += 1

    def one(c: re.Match[str]) -> str:  # a code in the words before the list (as before)
        nonlocal found
        if not _code_ok(c.group()):
            return c.group()
        found += 1
        return _tag("password")

    new_head = _CODE_TOKEN.sub(one, head)
    if not found:
        return m.group(), 0
    return m.group("label") + new_head + "".join(out) + listed[end:], found


# A Wi-Fi QR code's payload (set 18: "WIFI:T:WPA;S:Office-5G;P:IojWKaSm#3cB;;"): the `P:` field is the network's
# password, whatever fields come before it (T, S, H, with `\;` escapes); `nopass` and empty fields stay.
_WIFI_QR = re.compile(
    r"(?<![A-Za-z])WIFI:(?:[A-Z]{1,2}:(?:\\.|[^;\\\n]){0,64};){0,6}?P:"
    r"(?P<v>(?!\[REDACTED:)(?:\\.|[^;\\\n\s]){1,63})(?=;|\s|\Z)",
    _I,
)


# A command that prints a secret, its output the next line's lone token (set 18: "kubectl get secret db-creds -o
# jsonpath='{.data.password}' | base64 -d" then the password alone on the next line). The commands: base64 -d /
# --decode of a secret's data (the line names a secret, password, token, key or credential), `pass show` /
# `gopass show`, `vault kv get -field=...` / `vault read -field=...`, `aws secretsmanager get-secret-value`,
# 1Password's `op read`. The token must look like a password (`_pw_shaped`); a prompt, an error or a word stays.
_PRINTED_BY = re.compile(
    r"(?m)^(?P<cmd>[^\n]{0,300}?(?:\|[ \t]*base64[ \t]+(?:-d|--decode|-D)(?![\w-])"
    r"|(?<![\w-])(?:go)?pass[ \t]+show[ \t]+[^\s|]+"
    r"|(?<![\w-])vault[ \t]+(?:kv[ \t]+get|read)[ \t]+-field="
    r"|(?<![\w-])aws[ \t]+secretsmanager[ \t]+get-secret-value(?![\w-])"
    r"|(?<![\w-])op[ \t]+read[ \t]+op://))[^\n]{0,300}\r?\n[ \t]*"
    r"(?P<v>(?!\[REDACTED:)[^\s$#>{\[\"'][\x21-\x7e]{5,127})[ \t]*(?=\r?\n|\Z)"
)
_PRINTED_SECRET_WORD = re.compile(r"secret|passw|pwd|token|key|credential|auth", _I)


def _printed_action(m: re.Match[str]) -> tuple[str, int]:
    cmd, value = m.group("cmd"), m.group("v")
    if "base64" in cmd and _PRINTED_SECRET_WORD.search(cmd) is None:
        return m.group(), 0
    if not _pw_shaped(value) or _stand_in(value) or value.lower() in _NOT_A_PASSWORD:
        return m.group(), 0
    return _swap_value("password")(m)


def _wifi_qr_action(m: re.Match[str]) -> tuple[str, int]:
    if m.group("v").lower() == "nopass" or _stand_in(m.group("v")):
        return m.group(), 0
    return _swap_value("password")(m)


def _tag_value_head(m: re.Match[str], length: int, kind: str) -> tuple[str, int]:
    """The match with the first `length` characters of its `v` group replaced by the placeholder (the value
    without the punctuation that closes its sentence)."""
    whole, at = m.group(), m.start("v") - m.start()
    return whole[:at] + _tag(kind) + whole[at + length :], 1


def _swap_value(kind: str) -> _Action:
    """Replace the match's `v` group only (the lead is kept)."""

    def action(m: re.Match[str]) -> tuple[str, int]:
        whole, base = m.group(), m.start()
        return whole[: m.start("v") - base] + _tag(kind) + whole[m.end("v") - base :], 1

    return action


def _checked_action(check: Callable[[str], bool], kind: str = "national_id") -> _Action:
    tag = _tag(kind)

    def action(m: re.Match[str]) -> tuple[str, int]:
        groups = m.groupdict()
        lead, value = ("lead", "v") if groups.get("v") is not None else ("lead2", "v2")
        if not check(m.group(value)):
            return m.group(), 0
        return (groups.get(lead) or "") + tag, 1

    return action


# ---------------------------------------------------------------- more written forms

# An XML element named after a secret: Maven's settings.xml `<password>...</password>`, `<apiKey>`,
# `<client_secret>`, `<passphrase>`. The element's name decides, as a mapping key does in `redact_obj`
# (`secret_kind_of_name`); a key or token must look generated, a password not be a stand-in or a word of prose.
_XML_SECRET = re.compile(
    r"<(?P<tag>[A-Za-z_][\w.:-]{0,60})(?:[ \t][^<>\n]{0,200})?>(?P<v>[^<>\n]{1,300})</(?P=tag)[ \t]*>"
)
_XML_GATE = ("</",)  # one literal: a search for it costs a fraction of one for the names


def _xml_secret_action(m: re.Match[str]) -> tuple[str, int]:
    kind = secret_kind_of_name(m.group("tag").rsplit(":", 1)[-1])
    raw = m.group("v")
    secret = raw.strip()
    if (
        kind is None
        or not secret
        or _MARK in secret
        or _stand_in(secret)
        or (kind != "password" and not _token_like(secret))
        or (_plain_word(secret) and secret.lower() in _NOT_A_PASSWORD)
    ):
        return m.group(), 0
    base, start = m.start(), m.start("v") + raw.index(secret)
    whole = m.group()
    return whole[: start - base] + _tag(kind) + whole[start - base + len(secret) :], 1


# A card's security code after its label: "cvv 380", "CVC: 1234", "card verification code 512", "安全码 123".
# Its length ("CVV is 3 digits") is not one.
_CVV = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:cvv2?|cvc2?|cvn2?|cav2|card[ \t]+(?:security|verification)[ \t]+(?:code|value|number))"
    r"(?![A-Za-z])(?:[ \t]*(?:code|number|no\.?))?[\"']?[ \t]*"
    r"(?:[:：=#]|is(?![A-Za-z])|was(?![A-Za-z])|是|为)?[ \t]*[\"']?"
    r"|安全码[ \t]*(?:[:：]|是|为)?[ \t]*)"
    r"(?P<v>(?<![0-9])[0-9]{3,4})(?![0-9A-Za-z]|[ \t]*(?:digits?|chars?|characters?|numbers?|位|个))",
    _I,
)
_CVV_HEAD = re.compile(
    r"(?<![A-Za-z])(?:cvv2?|cvc2?|cvn2?|cav2|card[ \t]+(?:security|verification)[ \t]+(?:code|value|number))"
    r"(?![A-Za-z])|安全码",
    _I,
)
# windowed (see `_Rule.head`): found by the scan shared with the labelled rules
_CVV_GATE = ("cvv", "cvc", "cvn", "cav2", "card security", "card verification", "安全码")
# ... and after its other names (the fourteenth set: "use my Visa ..., the code on the back is 314"): "security
# code", "card code", CSC, and where a card is named near before, "the (3-digit) code / number / digits on the
# back (of the card)", "back of the card", Amex's CID, 背面 / 背后 / 反面 (的三位数, 的数字 ...).
_CVV_NAMED = re.compile(
    r"(?P<lead>(?:(?<![A-Za-z])(?:(?:card[ \t]+)?security[ \t]+code|card[ \t]+code|csc)(?P<free>)"
    r"|(?<![A-Za-z])(?:(?:(?:three|four|3|4)[ -]digits?[ \t]+)?(?:code|number|digits?|numbers)[ \t]+on[ \t]+(?:the|its)"
    r"[ \t]+back(?:[ \t]+of[ \t]+(?:the|my|your|his|her|our|their)[ \t]+card)?|back[ \t]+of[ \t]+(?:the|my|your)"
    r"[ \t]+card|cid)"
    r"|(?:背面|背后|背後|后面|後面|反面)(?:的|那)?(?:三位数字?|3位数字?|四位数字?|4位数字?|三个数字|数字|數字|号码|码)?)"
    r"(?![A-Za-z])[ \t]*(?:[:：=#]|(?<![A-Za-z])(?:is|was|are)(?![A-Za-z])|是|为|為)?[ \t]*[\"']?)"
    r"(?P<v>(?<![0-9])[0-9]{3,4})(?![0-9A-Za-z]|[ \t]*(?:digits?|chars?|characters?|numbers?|位|个|万|年|元|号))",
    _I,
)
_CVV_NAMED_HEAD = re.compile(
    r"(?<![A-Za-z])(?:(?:card[ \t]+)?security[ \t]+code|card[ \t]+code|csc|cid|(?:(?:three|four|3|4)[ -]digits?[ \t]+)?"
    r"(?:code|number|digits?|numbers)[ \t]+on|back)(?![A-Za-z])|背面|背后|背後|后面|後面|反面",
    _I,
)
# windowed: found by the scan shared with the labelled rules ("code" is the OTP rule's word too; "back" with
# what may follow it, as "backup words" is the seed rule's)
_CVV_NAMED_GATE = (
    *("code", "csc", "cid", "back ", "back\t", "back:", "back：", "back=", "back#"),
    *("背面", "背后", "背後", "后面", "後面", "反面"),
)
_CARD_NAMED = re.compile(
    r"(?<![A-Za-z])(?:card|visa|master ?card|amex|american express|discover|unionpay|diners|jcb)(?![A-Za-z])"
    r"|卡|\[REDACTED:card\]",
    _I,
)


def _cvv_named_action(m: re.Match[str]) -> tuple[str, int]:
    if (
        m.group("free") is None
        and _CARD_NAMED.search(m.string, max(0, m.start() - 160), m.start("v")) is None
    ):
        return m.group(), 0
    return _swap_value("card")(m)


# Unlabelled, after a card number and its expiry: "4111 1111 1111 1111 exp 12/27 123" (the card is replaced
# first; the expiry stays).
_CVV_AFTER_CARD = re.compile(
    r"\[REDACTED:card\](?P<mid>[ \t]*[,;/|]?[ \t]*"
    r"(?:(?:exp(?:iry|ires|iration)?(?:[ \t]+date)?|valid[ \t]+(?:thru|through|until)|有效期至?)\.?[ \t]*[:：]?[ \t]*)?"
    r"(?:0[1-9]|1[0-2])[ \t]*/[ \t]*(?:20)?[0-9]{2}[ \t]*[,;/|]?[ \t]*)(?P<v>[0-9]{3,4})(?![0-9A-Za-z/:]|\.[0-9])",
    _I,
)

# A JSON document encoded in base64 that holds a secret (the eleventh set: a `.dockerconfigjson` value,
# `{"auths": {"registry": {"auth": "<user:password in base64>"}}}`; also a k8s Secret's JSON `data`, a JSON
# credentials file pasted encoded): the blob is decoded (only one that starts as a JSON object does: `eyJ` is
# `{"`, `ewo` / `ew0K` `{` and a line break) and redacted as text; when that finds a secret, the blob goes whole.
# A JWT's header alone, or any encoded JSON with no secret inside (`{"alg": "HS256"}`), is kept.
_B64_JSON = re.compile(
    r"(?<![A-Za-z0-9+/_.-])(?P<v>(?:eyJ|ewo|ew0)[A-Za-z0-9+/_-]{37,}={0,2})(?![A-Za-z0-9+/=_.-])"
)


def _b64_json_action(m: re.Match[str]) -> tuple[str, int]:
    blob = m.group("v")
    try:
        raw = base64.b64decode(blob.replace("-", "+").replace("_", "/") + "=" * (-len(blob) % 4))
        decoded = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return blob, 0
    if not decoded.lstrip().startswith("{"):
        return blob, 0
    _, counts = redact_with_report(decoded)
    if not counts:
        return blob, 0
    return _tag(max(counts, key=lambda k: counts[k])), 1


# The rest of a key a terminal wrapped (the eleventh set: `export HF_TOKEN=hf_IhYQ...` then `pxTtTY...` alone on
# the next line): once a key that ends its line was replaced, each following line that holds one piece alone
# and looks generated goes with it, as the vendors' rules already do for their own keys (`_WRAP`). Not a
# UUID or a digest on its own line (an identifier), a word or a CamelCase name (`README`, `NextSteps`).
_KEY_WRAPPED = re.compile(
    r"(?P<lead>\[REDACTED:api_key\])(?P<wrap>(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9_+/=-]{6,400}[ \t]*(?=\r?\n|\Z))+)"
)
_KEY_WRAP_PIECE = re.compile(r"[ \t]*\r?\n[ \t]*(?P<p>[A-Za-z0-9_+/=-]+)[ \t]*")
_CAMEL_WORDS = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)*")


def _key_wrapped_action(m: re.Match[str]) -> tuple[str, int]:
    wrap, end = m.group("wrap"), 0
    for piece in _KEY_WRAP_PIECE.finditer(wrap):
        p = piece.group("p")
        if not (_token_like(p) and _wrapped_piece(p)) or _CAMEL_WORDS.fullmatch(p) or _stand_in(p):
            break
        end = piece.end("p")
    if not end:
        return m.group(), 0
    return m.group("lead") + wrap[end:], 1  # the key's placeholder stands for all of it


# A password turned into a credential object in code: PowerShell `ConvertTo-SecureString "X" -AsPlainText
# -Force` (the flags in any order, `-String "X"` too) and .NET `NetworkCredential("user", "X")`. The quoted
# literal is the password; a variable (`$pw`, `"$env:PW"`, `$(Get-Secret)`) or a stand-in is kept.
_PLAIN_TO_SECURE = re.compile(
    r"(?P<lead>(?<![\w-])ConvertTo-SecureString(?=[^\n|;]*-AsPlainText)(?:[ \t]+-(?!String\b)[A-Za-z]+)*"
    r"[ \t]+(?:-String[ \t]+)?|(?<![\w.])(?:System\.Net\.)?NetworkCredential[ \t]*\([ \t]*"
    r"(?:\"[^\"\n]{0,100}\"|'[^'\n]{0,100}'|[\w.$]{1,60})[ \t]*,[ \t]*)"
    r"(?P<q>[\"'])(?P<v>(?![$\[])[^\"'\n]{1,200})(?P=q)",
    _I,
)
_PLAIN_TO_SECURE_GATE = ("convertto-securestring", "networkcredential")


# A second key listed right after a key that was replaced: "密钥是 X 和 Y", "the keys are X and Y", "AK X / SK Y"
# (a pair of generated keys named once, the second with no label of its own). The joined value must look
# generated itself (16+ characters, letters with digits): "X and then run the job" or "X 和 img-cdn" stays.
_KEY_JOIN = r"[ \t]*(?:和|与|及|跟|以及|、|[,，/&]|(?<![A-Za-z])and(?![A-Za-z]))[ \t]*"
_KEY_JOINED = r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{16,200}(?![A-Za-z0-9_+/=.-])"
# (a list of them in one match: "X and Y, Z" is one pass, not one pass per key)
_KEY_AND_KEY = re.compile(r"\[REDACTED:api_key\](?P<rest>(?:" + _KEY_JOIN + _KEY_JOINED + ")+)", _I)
_KEY_JOINED_ITEM = re.compile(r"(?P<join>" + _KEY_JOIN + r")(?P<v>" + _KEY_JOINED + ")", _I)


def _key_and_key_action(m: re.Match[str]) -> tuple[str, int]:
    rest, out, found, done = m.group("rest"), [], 0, 0
    for item in _KEY_JOINED_ITEM.finditer(rest):
        if item.start() != done or not _generated_key(item.group("v")):
            break
        out += [item.group("join"), _tag("api_key")]
        found += 1
        done = item.end()
    return ("[REDACTED:api_key]" + "".join(out) + rest[done:], found) if found else (m.group(), 0)


# A second password joined to a replaced one by 和 / 与 / 及 / 以及 / 、 / and / & ("the passwords are X and Y",
# "密码是 X 和 Y"): it goes when it looks like a password itself (8+ characters, a letter with a digit
# or a symbol, not a word, a path or a version): "X and then restart", "X 和 admin", "X and user42" stay.
_PW_JOIN = r"[ \t]*(?:和|与|及|跟|以及|、|&|(?<![A-Za-z])and(?![A-Za-z]))[ \t]*"
_PW_JOINED = r"(?<![\x21-\x7e])(?!\[REDACTED:)[\x21-\x7e]{8,64}(?![\x21-\x7e])"
_PW_AND_PW = re.compile(r"\[REDACTED:password\](?P<rest>(?:" + _PW_JOIN + _PW_JOINED + ")+)", _I)
_PW_JOINED_ITEM = re.compile(r"(?P<join>" + _PW_JOIN + r")(?P<v>" + _PW_JOINED + ")", _I)


def _pw_and_pw_action(m: re.Match[str]) -> tuple[str, int]:
    rest, out, found, done = m.group("rest"), [], 0, 0
    for item in _PW_JOINED_ITEM.finditer(rest):
        value = item.group("v")
        secret = value.rstrip(_PW_TRAILING)
        if item.start() != done or len(secret) < 8 or not _pw_shaped(secret) or _stand_in(secret):
            break
        out += [item.group("join"), _tag("password"), value[len(secret) :]]
        found += 1
        done = item.end()
    return ("[REDACTED:password]" + "".join(out) + rest[done:], found) if found else (m.group(), 0)


# A pair after a password label (found while folding set 14 in: "the wiki's password: li.wei / Hx7#kk20pq", "wifi
# 密码：guest / Hk2!pp90"): the label's rule takes the account as the value; the password after the slash goes too
# when it looks like one. Kept: "password: [value] / 2 attempts left", "... / n/a".
# (a chain "a / b / c" is read in one match, each partner in turn until one is no password: taken one partner a
# pass, as the rule's rerun did, 5,000 pairs on one line cost 5,000 scans of it, about 4 s)
_PW_PARTNER = (
    r"[ \t]*[/／][ \t]*(?P<v>(?!\[REDACTED:)[^\s/／,，。;；、)）\]\[\"'`]{1,64})(?=[\s,，。;；、)）]|\Z)"
)
_PW_SLASH_PARTNER = re.compile(
    r"\[REDACTED:password\](?P<chain>(?:" + _PW_PARTNER.replace("?P<v>", "?:") + r")+)"
)
_PW_PARTNER_ONE = re.compile(_PW_PARTNER)


def _pw_slash_partner_action(m: re.Match[str]) -> tuple[str, int]:
    chain = m.group("chain")
    out, done, found = [], 0, 0
    for piece in _PW_PARTNER_ONE.finditer(chain):
        if piece.start() != done:
            break
        value = piece.group("v")
        secret = value.rstrip(_PW_TRAILING)
        if not secret or not _pw_shaped(secret) or _stand_in(secret) or _plain_word(secret):
            break
        out.append(chain[done : piece.start("v")] + _tag("password") + value[len(secret) :])
        done = piece.end()
        found += 1
        if len(secret) < len(value):  # a trailing mark ends the chain, as a placeholder then needs a slash
            break
    if not found:
        return m.group(), 0
    return "[REDACTED:password]" + "".join(out) + chain[done:], found


# A Wi-Fi password printed in groups under a Chinese or English Wi-Fi password label ("无线密码：8QWE 3KZP 77MD
# RT4X", "WiFi 密码: 4kq9b 7mzx2 pdw8e", "wifi password is ..."): the groups are one value when they hold letters
# and digits, read before a password label's rule takes the first group alone.
_WIFI_PW_GROUPS = re.compile(
    r"(?P<lead>(?:(?<![A-Za-z])(?:wi-?fi|wlan|wireless|hotspot)[ \t]*(?:网络|網路|network)?[ \t]*"
    r"(?:密码|密碼|口令|pass(?:word|key)?|pwd|key)|(?:无线|無線|热点|熱點)(?:网络|網路)?(?:密码|密碼|口令))"
    r"(?![A-Za-z])[ \t]*(?:[:：=]|是|为|is(?![A-Za-z]))[ \t]*)"
    r"(?P<v>[A-Za-z0-9]{4,5}(?: [A-Za-z0-9]{4,5}){2,7})(?![^\s.,;。，；])",
    _I,
)
_WIFI_PW_GROUPS_HEAD = re.compile(r"(?<![A-Za-z])(?:wi-?fi|wlan|wireless|hotspot)|无线|無線|热点|熱點", _I)


def _wifi_pw_groups_action(m: re.Match[str]) -> tuple[str, int]:
    v = m.group("v")
    if not (_has_digit(v) and any(c.isalpha() for c in v)):
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A Wi-Fi key: "the wifi is Casa-5G and the key is hZUG...", "WLAN key: ...", "network key = ...". "key" names
# no secret in general, so a Wi-Fi word must be near, and the value look like a passphrase (8 to 63
# characters, not a word, not a security mode like WPA2-PSK).
# (a sticker's "Wireless Key/PIN:" names the key and the WPS PIN as one label; a sticker prints the key in groups
# of four or five, "71JN R61Q H59N NMCL": the groups are one value when they hold digits and letters)
_WIFI_KEY = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:(?P<qual>wi-?fi|wlan|wpa[23]?|network|security|wireless)[ \t]+)?(?:pass[ \t-]?key|key)"
    r"(?:[ \t]*/[ \t]*(?:pin|password|passphrase|code)(?![A-Za-z]))?"
    r"(?![A-Za-z0-9_])(?:[ \t]*(?:[:：=]|is(?![A-Za-z])|was(?![A-Za-z])|是|为)|(?P<bare>(?(qual)[ \t]+|(?!))))"
    r"[ \t]*[\"'`“‘]?)"
    r"(?P<v>(?!\[REDACTED:)(?:(?P<groups>[A-Za-z0-9]{4,5}(?:[ ][A-Za-z0-9]{4,5}){2,7})(?![^\s.,;])"
    r"|[^\s\"'`“”‘’]{8,80}))",
    _I,
)
_WIFI_WORDS = re.compile(r"wi-?fi|wlan|ssid|wpa|hotspot|router|wireless|热点|无线|路由", _I)
_WIFI_CONTEXT = (
    "wifi",
    "wi-fi",
    "wlan",
    "ssid",
    "wpa",
    "hotspot",
    "router",
    "wireless",
    "热点",
    "无线",
    "路由",
)
_WIFI_HEAD = re.compile(
    r"(?<![A-Za-z])(?:(?:wi-?fi|wlan|wpa[23]?|network|security|wireless)[ \t]+)?(?:pass[ \t-]?key|key)"
    r"(?![A-Za-z0-9_])",
    _I,
)
# windowed: "key" is already a gate word of the TOTP rule; the Wi-Fi words are found by the same scan
_WIFI_GATE = ("key",)
_SECURITY_MODE = re.compile(
    r"(?:wpa[23]?|wep|tkip|aes|ccmp|psk|sae)(?:[-/ ](?:psk|sae|personal|enterprise|aes|tkip|ccmp|[0-9]+))*",
    _I,
)


def _wifi_key_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    secret = m.group("v").rstrip(_PW_TRAILING)
    if (
        not 8 <= len(secret) <= 63
        or _plain_word(secret)
        or _stand_in(secret)
        or _VERSION.fullmatch(secret)
        or _SECURITY_MODE.fullmatch(secret)
        or not any(c.isalpha() for c in secret)
        or (m.group("bare") is not None and not _has_digit(secret))  # "WPA2 key q9dv...": no connector
        or (m.group("groups") is not None and not (_has_digit(secret) and any(c.isalpha() for c in secret)))
        or _WIFI_WORDS.search(text, max(0, m.start() - 150), m.end() + 80) is None
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password") + m.group("v")[len(secret) :], 1


# Cookies, as a browser's "copy as cURL" or a response shows them: `-H 'cookie: a=1; sessionid=...'`,
# `curl -b 'sid=...'`, `Set-Cookie: session=...`. A value goes when its name speaks of a session or a
# credential (not a plain word: "remember_me=true"), or when it is long and generated (32+, no dots: analytics
# ids like `_ga=GA1.1.135...` are kept).
_COOKIE = re.compile(
    r"(?P<lead>(?<![A-Za-z0-9_-])(?:set-)?cookie[ \t]*:[ \t]*"
    r"|(?<![\w-])curl(?![\w-])(?:[^\n|;\\]|\\\r?\n|\\(?!\r?\n)){0,600}?[ \t](?:-b|--cookie)[ \t]+[\"']?)"
    r"(?P<body>[^\n'\"]{3,4000})",
    _I,
)
_COOKIE_PAIR = re.compile(r"(?P<n>[^=;,\s]{1,64})=(?P<v>[^;,\s]+)")
_COOKIE_SECRET_NAME = re.compile(
    r"sess|sid|auth|token|jwt|secret|passw|login|remember|csrf|xsrf|credential|identity|api[_-]?key|refresh",
    _I,
)


def _cookie_action(m: re.Match[str]) -> tuple[str, int]:
    found = 0

    def one(p: re.Match[str]) -> str:
        nonlocal found
        value = p.group("v")
        named = _COOKIE_SECRET_NAME.search(p.group("n")) is not None
        if _MARK in value or _stand_in(value) or _plain_word(value):
            return p.group()
        if (named and len(value) >= 8) or (len(value) >= 32 and "." not in value and _token_like(value)):
            found += 1
            return p.group("n") + "=" + _tag("api_key")
        return p.group()

    body = _COOKIE_PAIR.sub(one, m.group("body"))
    return (m.group("lead") + body, found) if found else (m.group(), 0)


# A URL query parameter named after a secret, in any URL: a signature (Azure SAS `&sig=`, AWS / GCS
# `X-Amz-Signature=`, COS `q-signature=`, `sign=`), a secret (WeCom `corpsecret=`, `appsecret=`,
# `client_secret=`), a key or token (`api_key=`, `access_token=`, `X-Amz-Security-Token=`), and an `appid=`
# holding a long generated value (OpenWeatherMap's key; a WeChat AppID, `wx` + 16 hex, is an id). The name
# ends with the word (`q-key-time`, `token_type` do not); pagination names (`pageToken`, `next_token`,
# `continuation-token`) name cursors. The value must look generated (16+ characters once percent escapes are
# dropped). `password=` / `pwd=` are the password labels' own. The name is read to its `=` with no nested
# repeat: `[?&;]`, up to 40 name characters, the word.
_URL_SECRET_WORD = (
    r"(?P<key>[a-z0-9_.-]{0,40}?(?:secret|signature|sig|sign|token|api[_-]?key|apikey|access[_-]?key|key)"
    r"|app[_-]?id)"
)
_URL_SECRET = re.compile(
    r"[?&;](?P<lead>(?P<name>" + _URL_SECRET_WORD + r")=)"
    r"(?P<v>(?!\[REDACTED:)[A-Za-z0-9%+/=_.~-]{16,4096})",
    _I,
)
_URL_CURSOR = re.compile(r"(?:page|next|continuation|sync|cursor|resume|start|prev(?:ious)?)[_.-]?token", _I)
_URL_SECRET_GATE = ("secret=", "sig=", "sign=", "signature=", "token=", "key=", "appid=", "app_id=")


def _url_signature_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    name = m.group("name")
    if _URL_CURSOR.fullmatch(name):
        return m.group(), 0
    plain = re.sub(r"%[0-9A-Fa-f]{2}", "", value)
    if len(plain) < 16 or not _key_piece(plain) or _stand_in(plain):
        return m.group(), 0
    if name.lower().replace("-", "_") in ("appid", "app_id") and (len(plain) < 24 or not _token_like(plain)):
        return m.group(), 0
    return m.group()[0] + m.group("lead") + _tag("api_key"), 1


# A password dictated character by character (read out on a call, typed by speech to text): "capital T,
# lowercase r, 3, 5, exclamation mark, ...", "大写Q，小写k，数字8，井号，...". Six or more items in a row, each a
# letter with its case, a digit (or "number 7", 数字7) or a symbol's name, joined by commas, 、 or spaces; at least
# two carry a case or name a symbol (a list of digits alone is a number). The whole spelled run goes: it tells
# the password as well as the literal would.
_SPELL_CASE = r"(?:capital|upper(?:[ -]?case)?|lower(?:[ -]?case)?|small|big|大写|小写|大寫|小寫)(?:字母)?"
# a letter told by a word: "T as in Tango", "r for Romeo" (the case may be given too)
_SPELL_AS_IN = r"(?:" + _SPELL_CASE + r"[ \t]*)?[A-Za-z][ \t]+(?:as[ \t]+in|for)[ \t]+[A-Z][a-z]{2,}"
_SPELL_SYMBOL = (
    r"(?:exclamation(?:[ \t]+(?:mark|point))?|at[ \t]+(?:sign|symbol)|hash(?:[ \t]+sign)?|pound[ \t]+sign"
    r"|dollar(?:[ \t]+sign)?|percent(?:[ \t]+sign)?|caret|ampersand|asterisk|star|underscore|dash|hyphen|minus"
    r"|plus(?:[ \t]+sign)?|equals(?:[ \t]+sign)?|dot|period|full[ \t]+stop|question[ \t]+mark|slash|backslash"
    r"|tilde|colon|semicolon|comma"
    r"|井号|星号|感叹号|叹号|下划线|横杠|横线|中划线|减号|加号|等号|句号|点号|美元符号|百分号|艾特|at符号|@符号|问号|斜杠"
    r"|反斜杠|波浪号|冒号|分号|逗号)"
)
_SPELL_ITEM = (
    r"(?:(?P<marked>" + _SPELL_CASE + r"[ \t]*[A-Za-z]|" + _SPELL_SYMBOL + r"|" + _SPELL_AS_IN + r")"
    r"|(?:(?:number|digit|数字)[ \t]*)?[0-9])(?![A-Za-z0-9\u4e00-\u9fff])"
)
_SPELL_SEP = (
    r"(?:[ \t]*[,，、;；][ \t]*(?:and[ \t]+)?(?:then[ \t]+)?(?:然后|再)?|[ \t]+(?:and[ \t]+)?(?:then[ \t]+)?)"
)
_SPELLED = re.compile(
    r"(?<![A-Za-z0-9])(?:" + _SPELL_ITEM.replace("?P<marked>", "") + _SPELL_SEP + r"){5,63}" + _SPELL_ITEM,
    _I,
)
_SPELL_MARKED = re.compile(
    r"(?<![A-Za-z])(?:"
    + _SPELL_CASE
    + r"[ \t]*[A-Za-z](?![A-Za-z])|"
    + _SPELL_SYMBOL
    + "|"
    + _SPELL_AS_IN
    + ")",
    _I,
)
# windowed: the run is tried from each item found within reach of a case word
# ("small" / "upper" / "lower" alone are common words; a spelled run names a case in one of these. "as in" is
# no gate either: a run told only by words, "K as in Kilo, m as in Mike", is read only when a case is named.)
_SPELL_GATE = (
    "capital", "uppercase", "upper case", "upper-case", "lowercase", "lower case", "lower-case", "大写", "小写",
    "大寫", "小寫",
)  # fmt: skip
_SPELL_HEAD = re.compile(r"(?<![A-Za-z0-9])" + _SPELL_ITEM.replace("?P<marked>", ""), _I)


def _spelled_action(m: re.Match[str]) -> tuple[str, int]:
    if len(_SPELL_MARKED.findall(m.group())) < 2:
        return m.group(), 0
    return _tag("password"), 1


# A secret sent in pieces: "first half: AWz81kq ... second half: 0pQmR7e", "前半段是 ...，后半段 ...", "第二部分：...".
# Each piece goes where the text speaks of a password, key or token (searched once per text) and the piece
# looks like part of one (4+ characters: a letter with a digit or a symbol, or an inner capital; digits only
# after a colon or "is"; a letter with a digit when no connector is written).
_SPLIT_LABEL = (
    r"(?:(?<![A-Za-z])(?:first|second|third|fourth|last|other|remaining|final|1st|2nd|3rd|4th)[ \t]+"
    r"(?:half|part|piece|bit|chunk|segment)(?:[ \t]+(?:is|was))?(?![A-Za-z])"
    r"|(?:前|后|後|上|下)一?半(?:部分|段|截)?|第[一二三四1-4](?:段|部分|截)"
    # the rest of a value sent in two messages ("and the rest: ...", "剩下的是 ...", "其余部分：...")
    r"|(?P<rest>(?<![A-Za-z])(?:the[ \t]+)?(?:rest|remainder)"
    r"(?:[ \t]+of[ \t]+(?:it|the[ \t]+(?:key|token|secret|password)))?"
    r"(?:[ \t]+(?:is|was))?(?![A-Za-z])|(?:剩下|剩余|其余|其餘|剩餘)(?:的|部分|那部分|那段)?))"
)
_SPLIT = re.compile(
    r"(?P<lead>"
    + _SPLIT_LABEL
    + r"[ \t]*(?:[:：=]|(?:是|为|為)[ \t]*[:：]?)?[ \t]*)(?P<v>(?!\[REDACTED:)[\x21-\x7e]{3,200})",
    _I,
)
# windowed on the piece's noun; the secret word is looked for around the piece by the action
_SPLIT_GATE = (
    "half", "part", "piece", "chunk", "segment", "半", "段", "截", "rest", "remainder", "剩", "其余", "其餘",
)  # fmt: skip
_SPLIT_HEAD = re.compile(_SPLIT_LABEL, _I)
_SPLIT_TOLD = re.compile(r"[:：=]|是|为|為|(?<![A-Za-z])(?:is|was)(?![A-Za-z])", _I)
# (and a bare "pw", set 21: "sending the printer admin pw in two parts ...: first half X")
_SPLIT_NEEDS = re.compile(r"pass|pwd|(?<![a-z])pw(?![a-z])|secret|token|key|密码|密碼|口令|密钥|秘钥")


def _split_action(m: re.Match[str]) -> tuple[str, int]:
    if _SPLIT_NEEDS.search(m.string[max(0, m.start() - 300) : m.end() + 300].lower()) is None:
        return m.group(), 0
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    # told with a colon or "is" / 是, or else a piece with a letter and a digit ("first half 2024 was slow")
    strong = _SPLIT_TOLD.search(m.group("lead")) is not None
    if m.group("rest") is not None and not strong:
        return m.group(), 0  # "the REST /v1/users route": the rest of a value is told with a colon or "is"
    shaped = _pw_shaped(secret) if strong else _has_digit(secret) and any(c.isalpha() for c in secret)
    # ("$jviEP" is no environment reference, set 21: those are upper-case, "$HOME")
    if (
        len(secret) < 4
        or (_stand_in(secret) and not (secret[:1] == "$" and not secret[1:].isupper()))
        or _VERSION.fullmatch(secret)
        or not (shaped or (strong and secret.isdigit()))
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password") + value[len(secret) :], 1


# A wallet's seed phrase (BIP-39: 12 to 24 words from a list of short words) after its label: "recovery
# phrase: stand reward apple ...", "seed words\n1. stand\n2. reward ...", "助记词：...". No wordlist is at hand,
# so the form decides: 12+ words of 3 to 8 letters in one case, none of them a word of prose that the BIP-39
# English list lacks ("the", "and", "your", "with" ...), which prose after such a label always has.
_SEED_LABEL = (
    r"(?<![A-Za-z])(?:(?:secret[ \t]+)?(?:recovery|backup|seed|mnemonic|wallet)[ \t_-]+(?:phrase|words|seed)"
    r"|seed|mnemonic|bip[ -]?39)(?![A-Za-z])|助记词|助記詞|种子短语|恢复短语|恢复词"
)
_SEED_WORD = r"(?:[0-9]{1,2}[.):][ \t]*)?[A-Za-z]{3,8}"
_SEED_SEP = r"(?:[ \t]*[,，][ \t]*|[ \t]*\r?\n[ \t]*|[ \t]+)"
_SEED = re.compile(
    r"(?P<lead>(?:" + _SEED_LABEL + r")"
    r"(?:[^\n:：=]{0,60}?(?:[:：=]|[?!.](?=[ \t]|\r?\n)|[ \t](?:is|are|was|were)(?![A-Za-z]))|[ \t]*(?:是|为)?)"
    r"[ \t]*(?:\r?\n[ \t]*)?)"
    r"(?P<v>" + _SEED_WORD + r"(?:" + _SEED_SEP + _SEED_WORD + r"){11,23}(?![A-Za-z])"
    r"|[\u4e00-\u9fff](?:[ \t]+[\u4e00-\u9fff]){11,23}(?![\u4e00-\u9fff]))",
    _I,
)
_SEED_HEAD = re.compile(_SEED_LABEL, _I)
# windowed
_SEED_GATE = (
    "seed", "mnemonic", "bip39", "bip-39", "bip 39", "phrase", "recovery words", "backup words", "wallet words",
    "助记词", "助記詞", "短语", "恢复词",
)  # fmt: skip
# Common English words that are not in the BIP-39 English wordlist: one in the run ends the phrase.
_NOT_SEED_WORDS = frozenset(
    """the and your with for from has are was were not but its them their these those than which who whom
    why how would could should she her here his him our out been does did get got may might some anyone
    anything words wallet phrases mnemonic recovery backup seeds""".split()
)
_SEED_TOKEN = re.compile(r"[A-Za-z]+|[\u4e00-\u9fff]")


def _seed_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    tokens = list(_SEED_TOKEN.finditer(value))
    words = [t.group() for t in tokens]
    if words[0].isascii() and not (all(w.islower() for w in words) or all(w.isupper() for w in words)):
        return m.group(), 0
    n = 0
    for w in words[:24]:
        if w.lower() in _NOT_SEED_WORDS:
            break
        n += 1
    if n < 12:
        return m.group(), 0
    end = tokens[n - 1].end()
    return m.group("lead") + _tag("private_key") + value[end:], 1


# ---------------------------------------------------------------- forms of the fifth hold-out set

# A password label in another language, then the value: Spanish `contraseña` / `clave`, German `Passwort`,
# `Kennwort`, `WLAN-Schlüssel`, French `mot de passe`, Swedish `lösenord`, Dutch `wachtwoord`, Portuguese
# `senha`, Russian `пароль`, Polish `hasło`, Japanese `パスワード` / `暗証番号`, Korean `비밀번호`, Chinese
# `暗号` and the pinyin abbreviation `mm` (only before 是 / 为 / ：, where it cannot be millimetres). A few
# words may come between the label and a connector of that language ("WLAN-Schlüssel im Büro ist ...");
# with no connector the value must not be a plain word, as after an English label.
_FOREIGN_PW_WORDS = (
    r"contraseñas?|(?<![A-Za-z])clave(?![A-Za-z])|passw(?:o|ö)rt|kennwort|(?:wlan|wifi|wi-fi|netzwerk)-?schl(?:ü|ue)ssel"
    r"|mot[ \t]+de[ \t]+passe|(?<![A-Za-z])(?P<mdp>mdp)(?![A-Za-z])"
    r"|lösenord(?:et)?|wachtwoord|senha|пароль|Пароль|ПАРОЛЬ|hasło|パスワード|暗証番号"
    r"|비밀번호|비번|暗号|暗號"
)
_FOREIGN_CONNECTOR = (
    r"[ \t]*(?:[:：=＝]|->|→)"
    r"|[ \t]+(?:ist|lautet|war|es|era|est|était|är|var|is|was|é|era|это|wynosi|to)(?![\w])[ \t]*[:：]?"
    r"|[ \t]*(?:就|也|还)?(?:是|为|為|は|が|는|은)[ \t]*[:：]?"
)
_FOREIGN_PW_LABEL = (
    r"(?P<pz>" + _FOREIGN_PW_WORDS + r"|(?<![A-Za-z0-9])(?<![0-9] )mm(?=[ \t]*(?:是|为|為|：)))"
)
_FOREIGN_PW_HEAD = re.compile(_FOREIGN_PW_LABEL, _I)
_FOREIGN_PW = re.compile(
    r"(?P<lead>(?P<label>" + _FOREIGN_PW_LABEL + ")"
    r"(?:(?P<strong>(?:[ \t]+(?!\[)[^\s:：=,，。、\[\]]{1,20}){0,5}?(?:"
    + _FOREIGN_CONNECTOR
    + r"))|[ \t]+))"
    + _VALUE,
    _I,
)


def _foreign_pw_action(m: re.Match[str]) -> tuple[str, int]:
    span = _labelled_value(m, generated=False)
    if span is None:
        return m.group(), 0
    secret = m.string[span[0] : span[1]]
    if _plain_word(secret) and not re.search(r"[:：=＝][ \t]*\Z", m.group("lead")):
        return m.group(), 0
    # "mdp" is also a Markov decision process ("MDP: states S"): its value must look like a password
    if m.group("mdp") is not None and not (_pw_shaped(secret) or (secret.isdigit() and len(secret) >= 4)):
        return m.group(), 0
    base, whole = m.start(), m.group()
    return whole[: span[0] - base] + _tag("password") + whole[span[1] - base :], 1


# 密 alone, the handwritten abbreviation of 密码, as a label between non-Chinese text (set 20: "房间 1207 / 无线
# Hilton_Guest / 密 vfgg4296", "密：Lk29xq77"): with no Chinese character next to it, 密 cannot be a word's part
# (保密, 密度, 机密 are kept); the value must look like a password (a letter with a digit or a symbol) or be 6+
# digits.
_MI = re.compile(
    r"(?P<lead>(?<![\u3400-\u9fff])密(?:[ \t]*[:：=＝][ \t]*|[ \t]+))"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64})(?![\x21-\x7e])"
)


def _mi_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    if _stand_in(secret) or not (_pw_shaped(secret) or (secret.isdigit() and len(secret) >= 6)):
        return m.group(), 0
    return m.group("lead") + _tag("password") + value[len(secret) :], 1


# A mail service's SMTP / IMAP authorization code (QQ, 163 mail's 授权码: 16 small letters), after its label with a
# space or nothing between (set 20: "授权码 rongvgvvsvkkuhzl"); a colon or 是 was caught as a password label's
# value already. 16 small letters exactly: "授权码 expired" or "授权码过期" are prose.
_MAIL_AUTH_CODE = re.compile(
    r"(?P<lead>(?:授权码|授權碼)[ \t]*(?:[:：=＝]|(?:就|也)?(?:是|为|為))?[ \t]*)"
    r"(?P<v>(?<![A-Za-z])[a-z]{16})(?![A-Za-z0-9])"
)


# windowed ("pass" is the English rules' word already: Passwort, mot de passe)
_FOREIGN_PW_GATE = (
    "contraseña", "clave", "pass", "kennwort", "schlüssel", "schluessel", "lösenord", "wachtwoord", "senha",
    "пароль", "hasło", "パスワード", "暗証番号", "비밀번호", "비번", "暗号", "暗號",
    "mm是", "mm 是", "mm为", "mm 为", "mm：", "mdp",
)  # fmt: skip

# A numeric code told as a secret: a door / entry / gate code, a PIN, a bank card's withdrawal or payment
# PIN (门禁码, 取款密码, 支付密码), or the digits "entered at the ATM" (取款时输的是 ...). 4 to 8 digits, not a
# length ("6 位").
# A code that opens something, told a few words after the thing it opens: "lockbox by the blue door, code 4821",
# "the key safe on the wall - combination 0719", "storage unit gate: pin is 55031". The thing: a lockbox, key
# safe, safe, padlock or other lock, a keypad, mailbox, locker, door, gate, garage or alarm; then, within a few
# words and in the same sentence, code / combo / combination / pin / passcode. Not another kind of code named
# there ("the gate's error code 4012").
_LOCK_WORDS = (
    r"(?<![A-Za-z])(?:lock[ \t-]?box(?:es)?|key[ \t-]?(?:box|safe|lock[ \t-]?box)|safe|padlock|(?:combination|bike"
    r"|door|smart|keypad)[ \t-]+lock|keypad|mailbox|locker|storage[ \t]+unit|(?:front[ \t]+)?door|gate|garage|alarm)"
    r"(?![A-Za-z])"
)
_PIN_LABEL = (
    r"(?:门禁(?:码|密码)|开门密码|门锁密码|密码锁|大门密码|取款密码|支付密码|交易密码|付款密码|(?:银行)?卡密码"
    r"|(?:取款|取钱|柜员机|ATM|刷卡|付款|支付|开门)(?:时|的时候)?(?:输入?|按)的?(?:是|了)?"
    r"|"
    + _LOCK_WORDS
    + r"(?:'s)?[^\n.;!?0-9]{0,30}?(?<![A-Za-z])(?P<word>code|combo|combination|pin|passcode)"
    r"(?:[ \t]+(?:number|no\.?))?"
    r"|(?<![A-Za-z])(?:entry|atm)[ \t]+(?:code|pin|combo|combination)(?:[ \t]+(?:number|no\.?))?"
    r"|(?<![A-Za-z])pin(?:[ \t]+(?:code|number|no\.?))?"
    # a SIM card's PUK, the PIN's unlock key (set 19: "PIN 0130，PUK 92706471"): PUK, PUK1 / PUK2, PUK 码
    r"|(?<![A-Za-z])puk[12]?(?:[ \t]*(?:code|number|码|碼))?"
    # a parcel's pickup code, which opens its locker (set 17's h17-136 "快递柜取件码6048"): 取件码, 取货码, 提货码,
    # 快递柜密码, "pickup code", "parcel locker code", "package pick-up PIN"
    # (set 18: a meal's 取餐码 likewise, and a 驿站 shelf code "29-6-5155", digit groups joined by dashes, read
    # only after a pickup label: group `pick`)
    r"|(?P<pick>(?:取件|取貨|取货|提货|提貨|取餐)(?:码|碼|號|号|密码|密碼)|(?:快递柜|快遞櫃)(?:密码|密碼|码|碼)"
    r"|(?<![A-Za-z])pick[ \t-]?up[ \t]+(?:code|pin|passcode)(?:[ \t]+(?:number|no\.?))?)"
    r"|(?<![A-Za-z])(?:parcel|package)[ \t]+(?:locker[ \t]+)?(?:code|pin)"
    # a device's lock screen ("我手机锁屏是5338", "解锁密码 0412", "lock screen passcode is 2580", "unlock PIN: 1397")
    r"|(?:手机|电脑|平板|手機|電腦)?(?:锁屏|鎖屏|解锁|解鎖|开机|開機|屏幕|螢幕)(?:密码|密碼|码|碼)?"
    r"|(?<![A-Za-z])(?:lock[ \t-]?screen|screen[ \t-]?lock|unlock)[ \t]+(?:code|passcode|pin))(?![A-Za-z])"
)
_PIN_HEAD = re.compile(_PIN_LABEL, _I)
_PIN_CODE = re.compile(
    r"(?P<lead>"
    + _PIN_LABEL
    # (a qualifier between the label and its verb, as a password label takes one: set 19's "the gate code for the
    # new building is 0021#", "the PIN to the side door was 7730")
    + r"(?:(?:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[A-Za-z'-]+){1,4}?(?=[ \t]+(?:is|was)[ \t]))?"
    r"[ \t]+(?:is|was|are)(?:[ \t]+(?:still|now))?(?![A-Za-z])"
    r"|[ \t]*(?:[:：=#]|(?:就|也)?(?:是|为|為)[ \t]*[:：]?)"
    # (or in brackets after its label, set 20: "his debit card PIN (5865), any tips", "银行卡密码（820417）")
    r"|[ \t]*[(（](?=[ \t]*[0-9]{4,8}[ \t]*[)）,，]))?[ \t]*)"
    # 4 to 8 digits; a lock's combination also as numbers joined by dashes ("combination is 3-14-27")
    r"(?P<v>(?<![0-9])(?:[0-9]{4,8}|(?P<dial>[0-9]{1,2}(?:-[0-9]{1,2}){2,3})|(?P<shelf>[0-9]{1,3}(?:-[0-9]{1,4}){1,3})))"
    r"(?![0-9A-Za-z]|-[0-9]|[ \t]*(?:digits?|numbers?|characters?|chars?|位|个|年|秒|分钟|小时|天|次))",
    _I,
)
# windowed: found by the scan shared with the labelled rules ("密码" and "pin" are theirs already; "code" is in
# every English label: door / entry / gate / alarm code). The scan costs by the first letters of its words:
# new words start with letters the old ones start with.
_PIN_CODE_GATE = (
    "门禁", "密码", "取款", "取钱", "柜员机", "atm", "刷卡", "付款", "支付", "开门", "code", "pin", "combo",
    "combination", "锁屏", "鎖屏", "解锁", "解鎖", "开机", "開機", "屏幕", "螢幕", "unlock",
    "取件", "取货", "取貨", "提货", "提貨", "快递柜", "快遞櫃", "取餐", "puk",
)  # fmt: skip


# India's postal code is its "PIN code" (Postal Index Number: six digits, the first not 0): after an address on its line
# it is no PIN (set 26's h26-044: "Delivery address: Flat 321, HSR Layout, Bengaluru, Karnataka, PIN code 560087").
# A card's or a door's PIN with no address before it still goes.
_POSTAL_PIN_LEAD = re.compile(r"pin(?:[ \t]*code)?[ \t]*(?:[:：=#-]|is)?[ \t]*", _I)
_ADDRESS_BEFORE = re.compile(
    r"(?<![A-Za-z])(?:address|addr|deliver(?:y|ed)?|ship(?:ping)?[ \t]+to|flat|road|street|lane|nagar|layout|colony"
    r"|sector|district|taluk|tehsil|village|landmark|post[ \t]+office)(?![A-Za-z])[^\n]*\Z",
    _I,
)


def _postal_pin(m: re.Match[str], lead: str) -> bool:
    """``m``'s value is a six-digit postal PIN code after an address (``lead``: its label and connector)."""
    value = m.group("v")
    return (
        len(value) == 6
        and value[0] != "0"
        and _POSTAL_PIN_LEAD.fullmatch(lead) is not None
        and _ADDRESS_BEFORE.search(m.string, max(0, m.start("v") - 180), m.start("v") - len(lead)) is not None
    )


def _pin_action(m: re.Match[str]) -> tuple[str, int]:
    if _postal_pin(m, m.group("lead")):
        return m.group(), 0
    word = m.start("word")
    if word != -1 and _OTHER_CODE.search(m.string, max(0, word - 24), word) is not None:
        return m.group(), 0  # "the gate's error code 4012"
    if (
        m.group("dial") is not None
        and m.group("pick") is None
        and (word == -1 or m.group("word").lower() not in ("combo", "combination"))
    ):
        return m.group(), 0  # dashed numbers only as a lock's combination (not a date after "pin")
    if m.group("shelf") is not None and m.group("pick") is None:
        return m.group(), 0  # a shelf code's dashed groups only after a pickup label
    return _swap_value("password")(m)


# A one-time code told as a code: "验证码608116", "短信校验码：4417", "your verification code is 482913", "OTP
# 771204", "the login code: G-540981"; a bare "code is 482913" where the text speaks of a text message or of
# verification (SMS, OTP, 2FA, 短信, 验证) and no other kind of code is named just before ("error code",
# "zip code", "模板"), told with "is" or a colon. 4 to 8 digits (Google's `G-` kept with them), not a length or a
# duration. A code goes whoever asked for it: one the writer says they never requested ("我没在登录，是不是诈骗",
# "I didn't request this, phishing?") is still a live second factor of their account (the nineteenth hold-out set;
# the third had kept it as evidence of someone else's attempt, see LABELS_IN_CONFLICT in the redaction tests).
_OTP_LABEL = (
    r"(?:(?:短信|手机|动态|登录|登陆|支付|安全|邮箱)?(?:验证码|校验码|动态码|确认码)|动态密码|一次性(?:验证码|密码)"
    r"|(?P<app>(?:身份)?验证器|(?<![A-Za-z])authenticator(?![A-Za-z]))"
    r"|(?<![A-Za-z])(?:(?:verification|one[ -]?time|login|log-?in|sign[ -]?in|2fa|mfa|two[ -]factor|otp|sms|text"
    r"|auth(?:entication|orization)?|confirmation|access)[ \t]+(?:code|pin|passcode)|otp|one[ -]?time[ \t]+"
    r"pass(?:code|word)|(?P<bare>code))(?![A-Za-z]))"
)
_OTP_HEAD = re.compile(_OTP_LABEL, _I)
_OTP = re.compile(
    r"(?P<lead>"
    + _OTP_LABEL
    + r"(?:[ \t]*(?:[:：=#]|(?:就|也)?(?:是|为|為)[ \t]*[:：]?)|[ \t]+(?:is|was)(?:[ \t]*:)?(?![A-Za-z])"
    # (or asked about, a few words between: "验证码是不是 X", "code，现在是 X 吗", "the MFA code should be X?")
    r"|(?P<gap>[^\n0-9。.!！?？;；]{1,16}?(?:是|为|為|显示|(?<![A-Za-z])(?:is|be|was|it|now|currently|shows?|says?"
    r"|reads?)(?![A-Za-z])|[:：=])))?[ \t]*)"
    # (a backup code printed as two groups of four, "备用验证码：3381 9042", whole: its first group alone is no code)
    r"(?P<v>(?:G-)?(?<![0-9])(?:[0-9]{3}[ -][0-9]{3}|[0-9]{4} [0-9]{4}(?![ \t]?[0-9])|[0-9]{4,8}))"
    r"(?![0-9A-Za-z.,:/-]?[0-9]|[A-Za-z]|[ \t]*(?:digits?|numbers?|characters?|chars?|seconds?|secs?|minutes?|mins?"
    r"|hours?|lines?|words?|bytes?|kb|mb|位|个|秒|分钟|小时|年|月|日|号|行|字))",
    _I,
)
_OTP_GATE = ("验证码", "校验码", "动态码", "确认码", "密码", "code", "otp", "验证器", "authenticator")
_OTP_CONTEXT = re.compile(
    r"sms|text(?:ed|s)?[ \t]+(?:message|me|you|him|her|us|them)|(?:by|via|over|in[ \t]+a)[ \t]+text(?![A-Za-z])"
    r"|otp|2fa|mfa|one[ -]?time|verif|短信|验证|口令"
    # an authenticator app or a second step (the fourteenth set: "Google Authenticator 上 ... 那个 code")
    r"|authenticator|authy|totp|2-?step|two[ -](?:step|factor)|动态"
    # a code that lasts minutes, or one a machine read out on a call (set 26: "The code from Chase is X, it says it
    # expires in 10 minutes", "The automated call read out the code: X"): a one-time code's own words
    r"|(?:expires?|expiring|valid|good)[ \t]+(?:in|for|within)[ \t]+(?:[0-9]{1,2}|one|two|three|five|ten|fifteen"
    r"|twenty|thirty)[ \t]*(?:minutes?|mins?)(?![A-Za-z])|(?:automated|voice|robo)[ \t-]*call",
    _I,
)
_NEXT_GROUP = re.compile(r"[ \t]+[0-9]")
# a text's own wording: "Your code is 752913", "your Acme code: 4410" (a bare "code" told to its reader)
_YOUR_CODE = re.compile(r"(?<![A-Za-z])your[ \t]+(?:[A-Za-z][\w-]*[ \t]+){0,2}\Z", _I)
# words in the gap between a code's label and a number that make it some other number: "验证码发到尾号 4821 的手机",
# "the verification code for order 482910 is", "code length is 6"
_OTP_GAP_OTHER = re.compile(
    r"order|ticket|phone|number|(?<![A-Za-z])no\.|#|length|expire|valid|digit|error|status|订单|单号|手机|号码|尾号"
    r"|工单|长度|位数|有效|错误|状态|次",
    _I,
)
_OTHER_CODE = re.compile(
    r"(?:error|err|status|exit|return|response|http|zip|postal|post|area|country|promo|coupon|discount|product"
    r"|item|sku|order|tracking|template|region|currency|language|source|qr|bar|invite|referral|color|colour"
    r"|错误|状态|返回|邮编|区号|模板|优惠|商品|订单)[ \t_-]*\Z",
    _I,
)


# The code first: "G-550192 is your Google verification code", "608116 是您的登录验证码".
_OTP_FIRST = re.compile(
    r"(?<![0-9A-Za-z-])(?P<v>(?:G-)?(?:[0-9]{3}[ -][0-9]{3}|[0-9]{4,8}))(?![0-9])"
    r"(?=[ \t]*(?:(?:is|as)[ \t]+your[ \t]+(?:[\w-]+[ \t]+){0,4}?(?:verification|security|login|log-?in|sign-?in"
    r"|one-time|confirmation|2fa|mfa|otp|access|auth(?:entication)?)[ \t]+(?:code|pin|passcode)(?![A-Za-z])"
    r"|(?:is|as)[ \t]+your[ \t]+code(?![A-Za-z])"
    r"|(?:是|为)(?:你|您)的[^\s，。,]{0,6}?(?:验证码|校验码|动态码|动态密码)))",
    _I,
)
# windowed on the OTP rule's words: the match ends at one of them ("code", 验证码, 密码 of 动态密码), so a window
# reaching back from it holds the whole match


def _otp_first_action(m: re.Match[str]) -> tuple[str, int]:
    return _tag("password"), 1


# "code 264 709 came by text": a bare code's number said to have just arrived by text or SMS (set 23)
_CAME_BY_TEXT = re.compile(
    r"[ \t]*(?:(?:just[ \t]+)?(?:came|arrived|got[ \t]+sent|was[ \t]+sent)[ \t]+"
    r"(?:by|via|in[ \t]+a|over|as[ \t]+a)[ \t]+(?:text|sms)|(?:was[ \t]+|just[ \t]+)?texted)(?![A-Za-z])",
    _I,
)


def _otp_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    if _OTHER_CODE.search(text, max(0, m.start() - 24), m.start()) is not None:
        return m.group(), 0
    if m.group("gap") is not None and _OTP_GAP_OTHER.search(m.group("gap")) is not None:
        return m.group(), 0
    # what an authenticator app shows, in groups of four, is a key's groups, not a code ("验证器里显示 4827 5531")
    if m.group("app") is not None and (" " in m.group("v") or _NEXT_GROUP.match(text, m.end()) is not None):
        return m.group(), 0
    if m.group("bare") is not None and (
        (
            _OTP_CONTEXT.search(text, max(0, m.start() - 200), m.end() + 200) is None
            and _YOUR_CODE.search(text, max(0, m.start() - 30), m.start()) is None
        )
        or (
            re.fullmatch(r"code[ \t]*", m.group("lead"), re.I)
            is not None  # "code 2024": told with is / a colon
            and _CAME_BY_TEXT.match(text, m.end()) is None  # ... or said to have come by text (set 23)
        )
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A password told as changed, with the old value, the new one or both: "支付密码换了，原来那个 351048 停用了，
# 新的是 167728", "changed my password from Winter24! to Spring25?", "把跳板机 root 从 X 改成了 Y" (an account
# named, its value changed from one to the other). The sentence must say it changed; each value follows a
# marker of old or new and must look like a password (digits only: 6+, or 4+ after a PIN).
_CHANGE_LABEL = (
    r"(?P<label>密码|密碼|口令|(?<![A-Za-z])(?:pass(?:word|code|phrase)?s?|pwd?|pin)(?![A-Za-z])"
    r"|(?P<account>(?<![A-Za-z])(?:root|admin|administrator|account)(?![A-Za-z])|管理员|账号|帐号))"
)
_CHANGE_LABEL_HEAD = re.compile(_CHANGE_LABEL, _I)
_CHANGE_HEAD = re.compile(_CHANGE_LABEL + r"(?P<body>[^\n。！？]{4,90})", _I)
_CHANGE_VERB = re.compile(r"改|换|變|变|更新|重置|(?<![A-Za-z])(?:chang|reset|rotat|updat|switch)", _I)
_CHANGED_FROM_TO = re.compile(r"从[ \t]*[\x21-\x7e]+[ \t]*(?:改|换|变)(?:成|为)")
_CHANGE_VALUE = re.compile(
    # (or an arrow between the old value and the new, set 20: "changed the admin pw: X → Y", "PIN 4821 -> 7730"; the
    # value before an arrow is the old one)
    r"(?:(?P<arrow>(?<![\x21-\x7e])(?=[\x21-\x7e]{4,64}[ \t]*(?:→|->|=>|⇒|⟶))|→|->|=>|⇒|⟶)"
    r"|从|原来(?:的|那个)?(?:是)?|旧的?(?:是|为)?|之前(?:的|那个)?(?:是)?|以前(?:的|那个)?(?:是)?|改成了?|改为"
    r"|换成了?|变成了?|新的(?:是|为)?|现在(?:的)?是|(?:现在|以后|今后)(?:改)?用|改用|新密码(?:是|为)?"
    r"|(?<![A-Za-z])(?:[Ii]t'?s|[Ii]t[ \t]+is)[ \t]+now|(?<![A-Za-z])now[ \t]+(?:use|it'?s|it[ \t]+is)"
    r"|(?<![A-Za-z])(?:from|to|(?:old|previous|former)(?:[ \t]+one)?(?:[ \t]+(?:was|is))?"
    r"|new(?:[ \t]+one)?(?:[ \t]+(?:is|was))?)"
    r"(?![A-Za-z]))[ \t]*[:：]?[ \t]*[\"'`“‘]?"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64})(?![\x21-\x7e])"
)
# windowed, on the labels (the verb is looked for by the action)
_CHANGE_GATE = (
    "密码",
    "密碼",
    "口令",
    "pass",
    "pw",
    "pin",
    "root",
    "admin",
    "account",
    "管理员",
    "账号",
    "帐号",
)


# "the account was reset ... it's now X": the new value told of the account, not of its password
_NOW_IS = re.compile(r"(?<![A-Za-z])(?:it'?s|it[ \t]+is)[ \t]+now[ \t]+\S", _I)


_PW_SYMBOL = re.compile(r"[!@#$%^&*_+=?]")
_DOT_PW_SYMBOL = re.compile(r"[!@#$%^&*+=?]")


def _pw_shaped(s: str) -> bool:
    """Looks like a password, not a word, a path or a version: a letter with a digit or a symbol, or a
    capital right after a small letter ("RJNyYowqmj"; not "IT-Sec")."""
    if _VERSION.fullmatch(s) or "://" in s:
        return False
    letter = _has_letter(s)
    digit = _has_digit(s)
    symbol = _PW_SYMBOL.search(s) is not None
    # a path or a dotfile starts so (/etc, ~/x, .env.local); a password may too, when it has a digit and a
    # symbol no file name has (".J3FF^lC+@x!DA")
    if s[0] in "/~." and not (s[0] == "." and digit and _DOT_PW_SYMBOL.search(s) is not None):
        return False
    return letter and (digit or symbol or _inner_capital(s))


def _change_action(m: re.Match[str]) -> tuple[str, int]:
    body = m.group("body")
    # the verb after the label ("支付密码换了") or just before it ("I changed my email password from ...")
    if _CHANGE_VERB.search(m.string, max(0, m.start() - 40), m.end()) is None:
        return m.group(), 0
    if (
        m.group("account") is not None
        and _CHANGED_FROM_TO.search(body) is None
        and _NOW_IS.search(body) is None
    ):
        return m.group(), 0
    pin = m.group("label").lower() in ("pin", "pins")
    found = 0

    def one(v: re.Match[str]) -> str:
        nonlocal found
        value = v.group("v")
        secret = value.rstrip(_PW_TRAILING)
        if not secret or _stand_in(secret) or secret.lower() in _NOT_A_PASSWORD:
            return v.group()
        # by an arrow, only a value no setting's name or version is ("bcrypt → argon2id", "TLS1.2 -> TLS1.3")
        if v.group("arrow") is not None and not (secret.isdigit() or _strong_secret(secret, 6)):
            return v.group()
        if secret.isdigit():
            if len(secret) < (4 if pin or m.group("label") in ("密码", "密碼") else 6):
                return v.group()
            if _LENGTH_WORD.match(body, v.end("v")) is not None:
                return v.group()
        elif not _pw_shaped(secret):
            return v.group()
        found += 1
        return v.group()[: v.start("v") - v.start()] + _tag("password") + value[len(secret) :]

    new = _CHANGE_VALUE.sub(one, body)
    return (m.group()[: m.start("body") - m.start()] + new, found) if found else (m.group(), 0)


# A secret told, then corrected (the tenth set): "the garage keypad code is 8595 / wait no that's the old one, it's
# 3628 now", "邮箱密码是X\n不对不对，上周改过了，现在是Y". Both values are secrets (the old one may still be in use
# elsewhere). Runs once a password was replaced in this call: after its placeholder, on its line or the next, a
# word of correction (wait, sorry, actually, scratch that, my bad, the old one, typo, 不对, 错了, 说错, 更正, 改过,
# 旧的) then the first value after "it's / is / now / use / should be" or 是 / 现在是 / 应该是 / 改成 that looks like a
# password (a letter with a digit or a symbol, or 4+ digits; not a word, a date, a length).
_CORRECTED = re.compile(r"\[REDACTED:password\](?P<body>[^\n]{0,100}(?:\r?\n[^\n]{0,120})?)")
_CORRECTION_WORD = re.compile(
    r"(?<![A-Za-z])(?:wait|sorry|oops|actually|correction|scratch[ \t]+that|my[ \t]+bad|wrong|old[ \t]+one|typo"
    r"|i[ \t]+mean[t]?)(?![A-Za-z])|不对|不對|错了|錯了|说错|說錯|打错|打錯|写错|寫錯|更正|改过|改過|改了|旧的|舊的",
    _I,
)
_CORRECTED_VALUE = re.compile(
    r"(?:(?<![A-Za-z])(?:it'?s|it[ \t]+is|that'?s|is|now|use|try|should[ \t]+be|i[ \t]+mean[t]?)(?![A-Za-z'])"
    r"|现在是|現在是|应该是|應該是|正确的是|正確的是|新的是|改成了?|改为|改為|是|为|為)[ \t]*[:：]?[ \t]*[\"'`“‘]?"
    r"(?P<v>[\x21-\x7e]{3,64})(?![\x21-\x7e])",
    _I,
)


_DENIED_BEFORE = re.compile(
    r"(?:不是|(?<![A-Za-z])(?:is|was)(?:n't|[ \t]+not))[ \t]*[:：]?[ \t]*[\"'`“‘「]?\Z", _I
)


def _corrected_action(m: re.Match[str]) -> tuple[str, int]:
    body = m.group("body")
    if _DENIED_BEFORE.search(m.string, max(0, m.start() - 16), m.start()) is not None:
        start = 0  # "密码不是 X，应该是 Y": the denial is the correction word
    else:
        fix = _CORRECTION_WORD.search(body)
        if fix is None:
            return m.group(), 0
        start = fix.end()
    if _MARK in body[start:]:
        return m.group(), 0
    for v in _CORRECTED_VALUE.finditer(body, start):
        value = v.group("v")
        secret = value.rstrip(_PW_TRAILING)
        if (
            len(secret) < 3
            or _stand_in(secret)
            or secret.lower() in _NOT_A_PASSWORD
            or _DATE_OR_TIME.fullmatch(secret)
            or _LENGTH_WORD.match(body, v.start("v") + len(secret)) is not None
        ):
            continue
        if not (secret.isdigit() and len(secret) >= 4) and not (len(secret) >= 4 and _pw_shaped(secret)):
            continue
        at = v.start("v") + len(_MARK) + len("password]")
        whole = m.group()
        return whole[:at] + _tag("password") + whole[at + len(secret) :], 1
    return m.group(), 0


# The decoded value of a password replaced just before, told in prose (set 17's h17-149: a k8s Secret's
# `password: <base64>`, then "解码后应该是 eow5K8ZaqI_Y"; "which decodes to X", "decoded: X", "base64 解出来是 X"):
# within the line after the mark and the next, a word of decoding, a verb or colon, then the value, which must
# look like a password (no word of prose, no stand-in, no date).
_DECODED_VALUE = re.compile(
    r"(?:解码|解碼|解出来|解出來|(?<![A-Za-z])decod(?:es|ed|ing)(?![A-Za-z]))"
    r"(?:后|後|出来|出來|之后|之後)?[ \t]*(?:的?(?:值|密码|密碼|结果|結果|明文))?[ \t]*"
    r"(?:(?:应该|應該|应|應|就|其实)?(?:是|为|為)|[:：=]|(?<![A-Za-z])(?:(?:back[ \t]+)?to|is|as|should[ \t]+be)"
    r"(?![A-Za-z]))"
    r"[ \t]*[:：]?[ \t]*[\"'`“‘]?(?P<v>[\x21-\x7e]{6,64})(?![\x21-\x7e])",
    _I,
)


def _decoded_action(m: re.Match[str]) -> tuple[str, int]:
    body = m.group("body")
    if _MARK in body:
        return m.group(), 0
    for v in _DECODED_VALUE.finditer(body):
        secret = v.group("v").rstrip(_PW_TRAILING)
        if (
            len(secret) < 6
            or not _pw_shaped(secret)
            or _stand_in(secret)
            or secret.lower() in _NOT_A_PASSWORD
            or _DATE_OR_TIME.fullmatch(secret)
        ):
            continue
        at = v.start("v") + len(_MARK) + len("password]")
        whole = m.group()
        return whole[:at] + _tag("password") + whole[at + len(secret) :], 1
    return m.group(), 0


# A password label that ends its line, the value alone on the next one (the thirteenth set: a router sticker read by
# OCR, "Wireless Key / Passphrase:\nSummit99&ciz58"; "初始密码：\nX"; a form's "Password:\n  X"): the label, a colon,
# the line's end, then one token that is the whole next line and looks like a password (a letter with a digit or a
# symbol, or 6+ digits). Kept: a YAML key or list item on the next line ("password:\n  secretKeyRef:", "- must be
# 12 characters"), a word, a mask.
_PW_NEXT_LINE = re.compile(
    r"(?:" + _HEAD_PW + r")[ \t]*(?:[(（][^()（）\n]{1,24}[)）][ \t]*)?[:：][ \t]*\r?\n[ \t]*"
    r"(?P<v>(?!\[REDACTED:)[^\s\-#*>|{}\[\]<\"'`][\x21-\x7e]{3,63})(?=[ \t]*(?:\r?\n|\Z))",
    _I,
)


def _pw_next_line_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    at = m.start()
    if m.group("ph") is not None and at and (m.string[at - 1].isalnum() or m.string[at - 1] in "_.-/~"):
        return m.group(), 0  # inside a word or a file's name (~/.pgpass:)
    if (
        len(secret) < 4
        or value.endswith(":")
        or value.count(":") > 1
        or _stand_in(secret)
        or secret.lower() in _NOT_A_PASSWORD
        or _DATE_OR_TIME.fullmatch(secret)
        or not (_pw_shaped(secret) or (secret.isdigit() and len(secret) >= 6))
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A credential told by that word alone, as an IT desk's mail does (the thirteenth set: "Username: pnair. Temporary
# credential: P7s5_mxdGQkGuY"; "临时凭据：X", "初始凭证是 X"): "credential" (singular, or 凭据 / 凭证) with a colon or
# "is" / 是, then one token of 8+ characters with a letter, a digit and a symbol or a capital inside. A pair
# after the word ("credentials: admin / X") is the pair rules'; kept: "credential: see the vault", "credential:
# [REDACTED:...]", a file name (~/.aws/credentials), a type ("credential: OAuth2").
_CREDENTIAL_VALUE = re.compile(
    r"(?:(?<![A-Za-z_./-])credential(?![A-Za-z_])(?:[ \t]*[:：=][ \t]*|[ \t]+(?:is|was)[ \t]+[:：]?[ \t]*)"
    r"|(?:凭据|凭证|憑據|憑證)[ \t]*(?:[:：=]|(?:就|也)?(?:是|为|為)[ \t]*[:：]?)[ \t]*)"
    r"[\"'`“‘]?(?P<v>(?!\[REDACTED:)[^\s/／:\"'`“”‘’\[\]]{8,64})(?![^\s\"'`“”‘’,，。;；])",
    _I,
)
_CREDENTIAL_VALUE_GATE = ("credential", "凭据", "凭证", "憑據", "憑證")


def _credential_value_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    if (
        len(secret) < 8
        or _stand_in(secret)
        or secret.lower() in _NOT_A_PASSWORD
        or not _pw_shaped(secret)
        or _VERSION.fullmatch(secret)
        or not _has_digit(secret)
        # (a symbol or a capital inside: "credential: OAuth2" or "Kerberos5" names a kind)
        or not (
            any(c in "!@#$%^&*_+=?" for c in secret)
            or any(a.islower() and b.isupper() for a, b in itertools.pairwise(secret))
        )
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A label read by OCR from a screenshot, its letters spaced out (the tenth set: a password manager's "p a s s w o r d
# bPxf..."; "密 码 ： ..."): the spaced label (password, passcode, passphrase, PIN, 密码, 口令 -> password; secret,
# token, api key -> a generated value), then a colon or two spaces (how OCR separates the spaced word from the
# next), then the value: after a password label any password-shaped value or 4+ digits, after a key label a
# generated one.
_SPACED_LABEL = re.compile(
    r"(?<![A-Za-z0-9])(?<![A-Za-z0-9] )(?:(?P<pw>p a s s (?:w o r d|c o d e|p h r a s e)|p i n|p w d)"
    r"|(?P<key>s e c r e t|t o k e n|a p i {1,2}k e y)|(?P<pz>密 码|密 碼|口 令))"
    r"(?:[ \t]*[:：=][ \t]*|[ \t]{2,})[\"'`]?(?P<v>(?!\[REDACTED:)"
    # (the value spaced out as its label is, one character and one space: "登 录 密 码 ： z B 7 d O M # j s 2")
    r"(?:(?P<sv>[\x21-\x7e](?!\S)(?: [\x21-\x7e](?!\S)){3,127})|[^\s\"'`]{3,128}))",
    _I,
)
_SPACED_GATE = ("p a s s", "p i n", "p w d", "s e c r e t", "t o k e n", "a p i", "密 码", "密 碼", "口 令")


def _spaced_label_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING + " ")
    if len(secret) < 3 or _stand_in(secret) or secret.lower() in _NOT_A_PASSWORD:
        return m.group(), 0
    word = secret.rstrip("?!")  # a screen's link ("p a s s w o r d   Forgot?") is a word and its mark
    if m.group("sv") is not None:  # judged as the value it spells
        word = secret = secret.replace(" ", "")
        if len(secret) < 4 or _stand_in(secret) or secret.lower() in _NOT_A_PASSWORD:
            return m.group(), 0
        value = m.group("v").rstrip(_PW_TRAILING + " ")
        ok = _token_like(secret) if m.group("key") is not None else secret.isdigit() or _pw_shaped(secret)
        if not ok or _DATE_OR_TIME.fullmatch(secret):
            return m.group(), 0
        return _tag_value_head(m, len(value), "api_key" if m.group("key") else "password")
    if m.group("key") is not None:
        ok = _token_like(secret)
    else:
        ok = (secret.isdigit() and len(secret) >= 4) or (len(word) >= 4 and _pw_shaped(word))
    if not ok or _DATE_OR_TIME.fullmatch(secret):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "api_key" if m.group("key") else "password")


# A secret asked for by its label and given alone as the answer on the next line (the tenth set: a support chat,
# "Can you confirm the auth token you're using?\n[10:43] Dev: 8f5f..."; 密码是多少？\n我：...). The question names
# the secret (password, passcode, PIN, auth / API / access token or key, secret, 密码, 口令, 密钥, 令牌) and ends
# its line with a question mark; the answer line holds only a speaker's name or a time stamp and the value: a
# generated one after a key label, a password-shaped one (or 4+ digits) after a password label.
# (the scan starts at the question mark that ends a line; the label is looked for on the question's line, within
# 80 characters before it)
_ASKED = re.compile(
    r"[?？][ \t]*\r?\n"
    r"[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*)?(?:[^\s:：\[\]][^\n:：]{0,30}[:：][ \t]*)?"
    r"[\"'`]?(?P<v>(?!\[REDACTED:)[^\s\"'`]{4,200})[\"'`]?[ \t]*(?=\r?\n|\Z)"
)
_ASKED_LABEL = re.compile(
    r"(?:(?<![A-Za-z])(?:(?P<pw>pass(?:word|code|phrase)|pin|pwd)|(?P<key>(?:(?:auth|api|access|secret|bot"
    r"|bearer|refresh|app|client)[ _-]?)?(?:token|key|secret)))s?(?![A-Za-z])"
    r"|(?P<pz>密码|密碼|口令)|(?P<kz>密钥|秘钥|密鑰|令牌))"
    # not a question about the secret's kind of thing ("what password policy do you use?", "which token scope?")
    r"(?![ \t_-]*(?:polic(?:y|ies)|manager|reset|length|rules?|requirements?|fields?|hints?|strength|expir|format"
    r"|recovery|history|generator|types?|versions?|scopes?|counts?|limits?|usage|rotation|names?|ids?(?![A-Za-z])"
    r"|endpoint|url|files?|store|vault|prompt|box|input|screen|page|form|策略|规则|規則|长度|長度|管理|重置|格式))",
    _I,
)
_ASKED_NEEDS = re.compile(r"[?？][ \t]*\r?\n")


def _asked_action(m: re.Match[str]) -> tuple[str, int]:
    text = m.string
    begin = max(text.rfind("\n", max(0, m.start() - 100), m.start()) + 1, m.start() - 100)
    question = text[begin : m.start()]
    label = None
    for found in _ASKED_LABEL.finditer(question):
        label = found  # the last label before the question mark
    if label is None or len(question) - label.end() > 80:
        return m.group(), 0
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    if (
        len(secret) < 4
        or _stand_in(secret)
        or secret.lower() in _NOT_A_PASSWORD
        or _DATE_OR_TIME.fullmatch(secret)
    ):
        return m.group(), 0
    key = label.group("key") is not None or label.group("kz") is not None
    ok = _token_like(secret) if key else secret.isdigit() or _pw_shaped(secret)
    if not ok:
        return m.group(), 0
    return _tag_value_head(m, len(secret), "api_key" if key else "password")


# Credentials told in prose, not labelled: "type admin in the first box and X in the second", "it takes the
# phrase we agreed on Friday, X". The value goes (a passphrase of words joined by dashes counts).
_PROSE_BOXES = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:type|enter|put|use|input)[ \t]+[\"'`]?[^\s\"'`]{1,64}[\"'`]?[ \t]+(?:in|into|for)"
    r"[ \t]+the[ \t]+(?:first|top|user(?:[ \t]?name)?|login|e-?mail)[ \t]+(?:box|field|one|line|input)[ \t]*,?"
    r"[ \t]+(?:and|then)[ \t]+(?:(?:type|enter|put|use)[ \t]+)?[\"'`]?)"
    r"(?P<v>(?!\[REDACTED:)[^\s\"'`]{1,64}?)(?=[\"'`]?[ \t]+(?:in|into|for)[ \t]+the[ \t]+"
    r"(?:second|bottom|other|next|password|pass)(?![A-Za-z]))",
    _I,
)
_PROSE_BOXES_HEAD = re.compile(r"(?<![A-Za-z])(?:type|enter|put|use|input)(?=[ \t])", _I)
# windowed ("log" is the sign-in rules' word already: "login field")
_PROSE_BOXES_GATE = ("the first", "the top", "the user", "the email", "the e-mail", "box", "log")
_AGREED = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:pass)?(?:phrase|word|code|password|passcode)[ \t]+(?:that[ \t]+)?"
    r"(?:we|you|i|they)[ \t]+(?:agreed|settled|decided)(?:[ \t]+(?:on|upon))?(?:[ \t]+[\w'-]+){0,3}?"
    r"[ \t]*(?:[,:：—–]|[ \t]-|[ \t]is)[ \t]*[\"'`“‘]?)"
    r"(?P<v>(?!\[REDACTED:)[^\s\"'`“”‘’]{4,64})",
    _I,
)


_AGREED_HEAD = re.compile(r"(?<![A-Za-z])(?:pass)?(?:phrase|word|code|password|passcode)(?![A-Za-z])", _I)


def _agreed_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    dashed = secret.count("-") >= 2 and all(p.isalnum() for p in secret.split("-"))
    if not secret or _stand_in(secret) or not (_pw_shaped(secret) or dashed):
        return m.group(), 0
    return m.group("lead") + _tag("password") + value[len(secret) :], 1


def _pw_prose_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v")
    if len(secret) < 4 or _stand_in(secret) or secret.lower() in _NOT_A_PASSWORD:
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# Network device configs: Cisco IOS `username x privilege 15 password 0 <plain>`, `enable secret 5 <hash>`,
# an indented line's `password 7 <reversible>`: the digit is the encoding, the value after it goes (type 0 is plain
# text, 7 reversible, 5/8/9 a hash of it). SNMP community strings grant access: `snmp-server community X RO`,
# net-snmp `rocommunity X`.
_DEVICE_CONFIG = re.compile(
    r"(?P<lead>^(?:[ \t]*(?P<named>username[ \t]+\S+(?:[ \t]+privilege[ \t]+[0-9]+)?[ \t]+|enable[ \t]+)|[ \t]+)"
    r"(?:password|secret)[ \t]+[0-9][ \t]+"
    r"|^[ \t]*(?:snmp-server[ \t]+community|rocommunity6?|rwcommunity6?)[ \t]+(?=\S+(?:[ \t]*$|[ \t]+(?:RO|RW|view|"
    r"default|\S*[0-9./]))))(?P<q>)(?P<v>(?!\[REDACTED:)\S+)",
    _I | re.MULTILINE,
)


_DEVICE_CONFIG_CONTEXT = re.compile(
    r"^[ \t]*(?:line[ \t]+(?:vty|con|aux)|interface[ \t]|hostname[ \t]|!)", re.M
)


@functools.lru_cache(maxsize=2)
def _device_config(text: str) -> bool:
    """The text is a device's config. (Asked once per text, not once per line: each "  password 7 days" of a long
    text searched the whole text again, quadratic.)"""
    return _DEVICE_CONFIG_CONTEXT.search(text) is not None


def _device_config_action(m: re.Match[str]) -> tuple[str, int]:
    """An indented `password 7 X` alone (a line's sub-mode) is a plain word only in a config ("line vty 0 4",
    "!"): "  password 7 days notice" is prose."""
    lead = m.group("lead")
    if (
        m.group("named") is None
        and "community" not in lead
        and _plain_word(m.group("v").rstrip(_PW_TRAILING))
        and not _device_config(m.string)
    ):
        return m.group(), 0
    return _assigned_action(m)


_DEVICE_CONFIG_GATE = (
    "password 0", "password 5", "password 7", "secret 0", "secret 4", "secret 5", "secret 7", "secret 8",
    "secret 9", "snmp-server community", "rocommunity", "rwcommunity",
)  # fmt: skip

# Cloud storage tools configured on the command line, keys given by flag: Huawei `obsutil config -i=AK
# -k=SK`, Alibaba `ossutil config -i AK -k SK`, Tencent `coscmd config -a ID -s KEY` (and `-t` a session
# token); any tool's `--secret-key`, `--access-key-secret`, `--secret-id`. A value goes when it looks generated.
_KEY_TOOL = re.compile(r"(?<![\w.\]-])(?:obsutil|ossutil(?:64)?|coscmd)(?![\w-])(?P<body>[^\n|;&]*)")
_KEY_TOOL_FLAG = re.compile(
    r"(?<=[ \t:：,，])(?:-[iakst]|--?(?:access[_-]?key(?:[_-]?(?:id|secret))?|secret[_-]?(?:id|key)))(?:[ \t]+|=)[\"']?"
    r"(?P<v>(?!\[REDACTED:)[^\s'\"]+)"
)
_KEY_FLAG = re.compile(
    r"(?P<lead>(?<![\w-])--(?:secret[_-]?(?:access[_-]?)?key|access[_-]?key[_-]?secret|secret[_-]?id)"
    r"(?:[ \t]+|=)[\"']?)(?P<v>(?!\[REDACTED:)[^\s'\"]+)",
    _I,
)
_KEY_FLAG_GATE = ("--secret", "--access-key-secret", "--access_key_secret", "--accesskeysecret")


def _key_tool_action(m: re.Match[str]) -> tuple[str, int]:
    found = 0

    def one(f: re.Match[str]) -> str:
        nonlocal found
        if not _generated_key(f.group("v")):
            return f.group()
        found += 1
        return f.group()[: f.start("v") - f.start()] + _tag("api_key")

    body = _KEY_TOOL_FLAG.sub(one, m.group("body"))
    return (m.group()[: m.start("body") - m.start()] + body, found) if found else (m.group(), 0)


# The MinIO client given an S3 endpoint's keys as positional arguments (set 19: `mc alias set myminio
# http://10.0.0.20:9000 AK SK`; the older `mc config host add`): after the alias's name and its URL, the access key
# goes when it looks generated, the secret key unless it is a stand-in or a variable (`$MINIO_SECRET`). Kept: a
# flag in their place (`--api S3v4`), no keys (mc asks for them), and a local server's default pair (the same word
# twice at localhost, as `guest:guest@localhost` is kept).
_MC_ARG = (
    r"(?!\[REDACTED:)(?:'(?!\[REDACTED:)[^'\n]{1,128}'|\"(?!\[REDACTED:)[^\"\n]{1,128}\""
    r"|(?![-$'\"])[^\s|;&'\"]{1,128})"
)
_MC_ALIAS = re.compile(
    r"(?<![\w.\]-])mc(?:li)?(?:\.exe)?[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+[^\s|;&]{1,64}"
    r"[ \t]+(?P<url>(?:https?://)?[^\s|;&]{1,200})[ \t]+(?P<ak>"
    + _MC_ARG
    + r")(?:[ \t]+(?P<sk>"
    + _MC_ARG
    + r"))?",
    _I,
)
_LOCAL_URL = re.compile(r"(?:https?://)?(?:localhost|127\.[0-9.]+|\[::1\]|0\.0\.0\.0)(?![\w.-])", _I)


def _mc_alias_action(m: re.Match[str]) -> tuple[str, int]:
    ak, sk = m.group("ak").strip("'\""), (m.group("sk") or "").strip("'\"")
    if ak == sk and _LOCAL_URL.match(m.group("url")) is not None:
        return m.group(), 0
    spans = []
    if _generated_key(ak):
        spans.append(m.span("ak"))
    if sk and not _stand_in(sk):
        spans.append(m.span("sk"))
    whole, base, out, end = m.group(), m.start(), [], 0
    for start, stop in spans:
        quoted = m.string[start] in "'\""
        out.append(whole[end : start - base + quoted] + _tag("api_key"))
        end = stop - base - quoted
    return "".join(out) + whole[end:], len(spans)


# Docker's `~/.docker/config.json`: `"auth": "<base64 of user:password>"` (and `identitytoken`).
_DOCKER_AUTH = re.compile(
    r"(?P<lead>\"(?P<name>auth|identitytoken)\"[ \t]*:[ \t]*\")(?P<v>[A-Za-z0-9+/._-]{8,}={0,2})(?=\")", _I
)


_USER_PASS_DECODED = re.compile(r"[^\s:{}\"]{1,128}:\S{1,256}")


# The four rules above share one gate (one search of the text for all their words, rare ones: not the tool
# rules' gate, whose words such as "zip" and "http " are common).
_CONFIG_FORMS_GATE = (
    *_DEVICE_CONFIG_GATE, "obsutil", "ossutil", "coscmd", *_KEY_FLAG_GATE, '"auth"', '"identitytoken"',
    "alias set", "host add",
)  # fmt: skip


def _docker_auth_action(m: re.Match[str]) -> tuple[str, int]:
    raw = m.group("v")
    if m.group("name").lower() == "auth":
        try:
            decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return m.group(), 0
        if _USER_PASS_DECODED.fullmatch(decoded) is None:
            return m.group(), 0
    elif not _token_like(raw):
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A card's security code after the card itself, under any of its names: Amex's CID (4 digits on the front),
# CVV / CVC / CVN2 / CSC, 安全码, 校验码, and the Chinese "the three digits on the back" (背面后三位, 卡背三位):
# only once a card was replaced earlier in the same text ("CID" alone is a customer id elsewhere). A full stop may
# end the sentence after it ("security code 010."; the tenth set); a decimal point may not.
# Set 26: its short name "sec code" ("good thru 0131, sec code 626"), "the (little four-digit) number on the front"
# as Amex prints its CID, "the code on the back" too; asked as a question and answered in the next sentence ("Code on
# the back? It's 988."), and told in number words ("nine-eight-eight"; three or four of them).
_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"  # (the spoken PIN's words, below)
_CVV_WORDS = (
    _DIGIT_WORD
    + r"(?:(?:[ \t]*-[ \t]*|[ \t]+)"
    + _DIGIT_WORD
    + r"){2,3}(?![A-Za-z]|[ \t]*-?[ \t]*"
    + _DIGIT_WORD
    + ")"
)
_CVV_NEAR_CARD = re.compile(
    r"\[REDACTED:card\](?P<mid>[^\n]{0,80}?"
    r"(?:(?<![A-Za-z])(?:cid|cvv2?|cvc2?|cvn2?|csc|sec(?:urity|\.)?[ \t]+code)(?![A-Za-z])|安全码|校验码|验证码"
    r"|(?<![A-Za-z])(?P<side>(?:code|number|digits?|numbers)[ \t]+on[ \t]+(?:the|its)[ \t]+(?:back|front))(?![A-Za-z])"
    r"|(?:卡?背面?|卡背)的?(?:后|末)?三位(?:数字?|码)?|(?:后|末)三位(?:数字?|码)?)"
    r"(?:[ \t]*(?:code|number|no\.?))?[ \t]*(?:[?？][ \t]*(?:it'?s|it[ \t]+is)?|[:：=#]|is(?![A-Za-z])|是|为)?[ \t]*)"
    r"(?P<v>(?<![0-9])[0-9]{3,4}|(?<![A-Za-z])"
    + _CVV_WORDS
    + r")(?![0-9A-Za-z/:]|\.[0-9]|[ \t]*(?:digits?|位|个))",
    _I,
)
# (the last four digits are printed on a card's front too: "the last four digits on the front: 4242" is no code)
_LAST_FOUR_BEFORE = re.compile(r"(?<![A-Za-z])(?:last|final|ending)(?![A-Za-z])[^\n]{0,20}\Z", _I)


def _cvv_near_card_action(m: re.Match[str]) -> tuple[str, int]:
    side = m.start("side")
    if side != -1 and _LAST_FOUR_BEFORE.search(m.string, max(0, side - 24), side) is not None:
        return m.group(), 0
    return _swap_value("card")(m)


# Vendor secrets with a check of their own or a fixed shape, numbers that identify a person, with their check.
# A BitLocker recovery key: 8 groups of 6 digits, each a multiple of 11 below 720896 (each encodes 16 bits).
_BITLOCKER = re.compile(r"(?P<v>[0-9](?<![0-9-][0-9])[0-9]{5}(?:-[0-9]{6}){7}(?![0-9-]))")


def _bitlocker_ok(s: str) -> bool:
    return all(int(g) % 11 == 0 and int(g) < 720896 for g in s.split("-"))


# Canada's Social Insurance Number after its label (9 digits, Luhn; a bare Luhn-valid 9 digits is one number
# in ten): "SIN 046 454 286", "social insurance number: 590-327-391", numéro d'assurance sociale.
_CA_SIN_LABEL = r"(?:(?-i:SIN)|(?<![A-Za-z])social[ \t]+insurance|assurance[ \t]+sociale)(?![A-Za-z])"
_CA_SIN = re.compile(
    r"(?P<lead>" + _CA_SIN_LABEL + r"[^0-9\n]{0,40}?)"
    r"(?P<v>(?<![0-9])[1-79][0-9]{2}(?P<sep>[ -]?)[0-9]{3}(?P=sep)[0-9]{3}(?![0-9]))",
    _I,
)


def _sin_ok(s: str) -> bool:
    return _luhn_ok("".join(c for c in s if c.isdigit()))


# Germany's tax identification number (Steuer-ID, IdNr) after its label (set 25: "Steuer-ID: 31 820 460 953"): 11
# digits, whole or as printed in groups of 2-3-3-3 (or 3-3-3-2, spaces or dashes between), the first not 0; in the
# first ten one digit occurs twice or three times (not three in a row) and each other at most once; the last is the
# ISO 7064 MOD 11,10 check digit. Not the Steuernummer (a business's number at its tax office, written with slashes).
# (Run where a long number is, as the other labelled IDs: a search for the label words cost more than the rule.)
_DE_TAX_ID_LABEL = (
    r"(?<![A-Za-z])(?:steuer[ \t-]?id(?:entifikations)?(?:[ \t-]?(?:nummer|nr\.?))?"
    r"|(?:steuerliche[ \t]+)?identifikationsnummer|id[ \t.-]?nr\.?|(?:german[ \t]+)?tax[ \t-]?id"
    r"(?:entification)?(?:[ \t]+(?:number|no\.?))?)(?![A-Za-z])"
)
_DE_TAX_ID = re.compile(
    r"(?P<lead>" + _DE_TAX_ID_LABEL + r"[^0-9\n]{0,40}?)(?P<v>(?<![0-9])[1-9]"
    r"(?:[0-9](?P<sep>[ -]?)[0-9]{3}(?P=sep)[0-9]{3}(?P=sep)[0-9]{3}|[0-9]{2}([ -])[0-9]{3}\4[0-9]{3}\4[0-9]{2})"
    r"(?![0-9]))",
    _I,
)


def _de_tax_id_ok(s: str) -> bool:
    d = [c for c in s if c.isdigit()]
    head = d[:10]
    repeats = [n for n in (head.count(c) for c in set(head)) if n > 1]
    if len(repeats) != 1 or repeats[0] > 3 or (repeats[0] == 3 and _THREE_IN_A_ROW.search("".join(head))):
        return False
    product = 10
    for c in head:
        product = ((int(c) + product) % 10 or 10) * 2 % 11
    return (11 - product) % 10 == int(d[10])


_THREE_IN_A_ROW = re.compile(r"([0-9])\1\1")


# Singapore NRIC / FIN: S, T, F or G, 7 digits, a check letter (weighted sum mod 11).
_SG_NRIC = re.compile(r"(?P<v>[STFG](?<![A-Za-z0-9][STFG])[0-9]{7}[A-Z](?![A-Za-z0-9]))")


def _nric_ok(s: str) -> bool:
    total = sum(int(c) * w for c, w in zip(s[1:8], (2, 7, 6, 5, 4, 3, 2), strict=True))
    total += 4 if s[0] in "TG" else 0
    letters = "JZIHGFEDCBA" if s[0] in "ST" else "XWUTRQPNMLK"
    return letters[total % 11] == s[8]


# Sweden's personnummer after its label: (YY)YYMMDD-NNNN, the last 10 digits Luhn-valid, a real date (a
# samordningsnummer adds 60 to the day).
_SE_PNR_LABEL = r"(?<![A-Za-z])(?:personnummer|personnr|samordningsnummer)(?![A-Za-z])"
_SE_PNR = re.compile(
    r"(?P<lead>" + _SE_PNR_LABEL + r"[^0-9\n]{0,30}?)"
    r"(?P<v>(?<![0-9])(?:19|20)?[0-9]{6}[-+ ]?[0-9]{4}(?![0-9]))",
    _I,
)


def _se_pnr_ok(s: str) -> bool:
    d = "".join(c for c in s if c.isdigit())[-10:]
    day = int(d[4:6]) - (60 if int(d[4:6]) > 60 else 0)
    return 1 <= int(d[2:4]) <= 12 and 1 <= day <= 31 and _luhn_ok(d)


# Korea's resident registration number: YYMMDD-SNNNNNC, a real month and day, the 7th digit 1-8, the check
# digit (11 - weighted sum mod 11) mod 10.
_KR_RRN_REST = (
    r"[0-9](?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])-[1-8][0-9]{6}(?![0-9-])"  # after its 1st digit
)


def _kr_rrn_ok(s: str) -> bool:
    d = [int(c) for c in s if c.isdigit()]
    total = sum(x * w for x, w in zip(d[:12], (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5), strict=True))
    return (11 - total % 11) % 10 == d[12]


# France's NIR (numéro de sécurité sociale): sex, year, month, department (2A / 2B for Corsica), commune,
# order, then a key = 97 - (the 13 digits mod 97); written whole or in its usual groups.
_FR_NIR_REST = (  # after its first digit
    r"(?<=[12])(?P<sep> ?)[0-9]{2}(?P=sep)[0-9]{2}(?P=sep)(?:[0-9]{2}|2[ABab])"
    r"(?P=sep)[0-9]{3}(?P=sep)[0-9]{3}(?P=sep)[0-9]{2}(?![0-9A-Za-z])"
)
# one rule for both (a rule costs its scan even when it finds nothing): the dash tells them apart
_RRN_OR_NIR = re.compile(r"(?P<v>[0-9](?<![0-9A-Za-z-][0-9])(?:" + _KR_RRN_REST + "|" + _FR_NIR_REST + "))")


def _rrn_or_nir_ok(s: str) -> bool:
    return _kr_rrn_ok(s) if "-" in s else _fr_nir_ok(s)


def _fr_nir_ok(s: str) -> bool:
    raw = s.replace(" ", "").upper()
    body = raw[:13].replace("2A", "19", 1) if raw[5:7] == "2A" else raw[:13]
    body = body.replace("2B", "18", 1) if raw[5:7] == "2B" else body
    return body.isdigit() and 97 - int(body) % 97 == int(raw[13:])


# India's PAN after its label: 5 letters (the 4th the holder's type), 4 digits, a letter.
_IN_PAN_LABEL = r"(?:(?-i:PAN)|(?<![A-Za-z])permanent[ \t]+account[ \t]+number)(?![A-Za-z])"
_IN_PAN = re.compile(
    # (a label's nouns may stack, set 26: "PAN card no: ...", "PAN card number")
    r"(?P<lead>" + _IN_PAN_LABEL + r"(?:[ \t]+(?:card|no\.?|number|#)){0,2}[ \t]*(?:[:：=#-]|is)?[ \t]*)"
    r"(?P<v>(?-i:[A-Z]{3}[PCHFATBLJG][A-Z][0-9]{4}[A-Z])(?![A-Za-z0-9]))",
    _I,
)


# ---------------------------------------------------------------- rule table (order matters)

# ---------------------------------------------------------------- forms of the sixth set
# A table (CSV, TSV or Markdown) whose header names a secret-bearing column: each row's cell of that column goes
# (a password / key column: any value but a stand-in; an id column: a value that passes an id check).
_TABLE_SECRET_COLUMN = re.compile(
    r"(?:[\w ]*[ _-])?(?:(?P<pw>pass(?:word|wd|code)|pwd)|secret|token|api[ _-]?key|access[ _-]?key[ _-]?secret)s?"
    r"|(?P<pz>密码|密碼|口令)|密钥|秘钥",
    _I,
)
# A cloud key pair's columns, as a console's credentials.csv names them (set 25: Huawei Cloud's and AWS's "Access Key
# Id,Secret Access Key", Alibaba's "AccessKey ID,AccessKey Secret", Tencent's "SecretId,SecretKey"): both go, the id
# being a credential's half as `_ACCESS_KEY_ID` is after its label. Only where one header names both halves, each
# column's whole name (a prefix joined by `_` or `-` at most): "secret key" in a line of prose with commas, or a
# key / value line ("AccessKey ID<TAB>LTAI..."), is no header of them. A cell must look generated, as a key column's.
_TABLE_KEY_ID_COLUMN = re.compile(r"(?:[A-Za-z0-9]+[_-])?(?:access[ _-]?key[ _-]?id|secret[ _-]?id)", _I)
_TABLE_KEY_SECRET_COLUMN = re.compile(
    r"(?:[A-Za-z0-9]+[_-])?(?:secret[ _-]?(?:access[ _-]?)?key|access[ _-]?key[ _-]?secret)", _I
)
_TABLE_ID_COLUMN = re.compile(
    r"id[ _-]?(?:no|num|number)\.?|national[ _-]?id|nric|fin|rrn|ssn|my[ _-]?number|身份证号?码?|身份證號?碼?"
    r"|マイナンバー|個人番号|주민등록번호",
    _I,
)
# A column named after an account or card number (the tenth set: `account_no` in a payroll CSV, 银行卡号 in a
# bank's export; 账号 alone is a login's name, so a bank or pay word must come first): a cell of 6 to 34 digits
# (spaces or dashes between groups) goes, as the card it is (issuer and Luhn), a valid IBAN, or a bank account;
# masked cells (`****1234`), names and amounts are kept. Not `account` alone (a name) nor a sort code, a routing
# number or an account id (public halves and references).
_TABLE_ACCOUNT_COLUMN = re.compile(
    r"(?:[\w ]*[ _-])?(?:(?:bank[ _-]?)?(?:account|acct|a/c)[ _-]?(?:no|nr|num|number|#)\.?|bank[ _-]?account|iban"
    r"|(?:(?:credit|debit|bank|payment)[ _-]?)?card[ _-]?(?:no|nr|num|number|#)\.?)s?"
    r"|[\u4e00-\u9fff]{0,4}卡(?:号|號)(?:码|碼)?"
    r"|(?:银行|銀行|收款|付款|对公|對公|工资|工資|结算|結算)(?:账|帐|賬|帳)(?:号|號|户|戶)(?:号|號)?(?:码|碼)?",
    _I,
)
_TABLE_ACCOUNT_CELL = re.compile(r"[0-9]+(?:[ -][0-9]+)*")
# A column named after a card's verification code (the eleventh set: `cvv` after `card_number, exp` in a CSV
# export): a cell of 3 or 4 digits goes as the card's, whatever the other columns are. `cid` alone (a customer's
# id) and 验证码 (a one-time code's) are not such names.
_TABLE_CVV_COLUMN = re.compile(
    r"(?:[\w ]*[ _-])?(?:cvv2?|cvc2?|cvn2?|csc|cav2|(?:card[ _-]?)?security[ _-]?code"
    r"|card[ _-]?verification(?:[ _-]?(?:code|value|number))?)s?|(?:卡片?)?(?:安全码|安全碼|校验码|校驗碼)|cvv码|cvv碼",
    _I,
)
_TABLE_CVV_CELL = re.compile(r"[0-9]{3,4}")
_TABLE_GATE = (
    "pass", "pwd", "secret", "token", "key", "密码", "密碼", "口令", "密钥", "秘钥", "id_no", "id no", "id num",
    "national", "nric", "ssn", "my number", "身份证", "身份證", "マイナンバー", "個人番号",
    "account", "acct", "a/c", "iban", "card", "卡号", "卡號", "账号", "帐号", "賬號", "帳號", "账户", "帐户",
    "帳戶", "賬戶", "cvv", "cvc", "cvn", "csc", "cav2", "security code", "security_code", "verification",
    "安全码", "安全碼", "校验码", "校驗碼",
)  # fmt: skip
# The match is a line with a delimiter and the lines with one after it; the rule runs only where a header word
# ends a cell (searched once, below).
_TABLE = re.compile(r"(?m)^(?P<rest>[^\n]*[,|\t][^\n]*)\n(?P<body>(?:[^\n]*[,|\t][^\n]*(?:\n|\Z))+)")
# (a table has lines: the rule runs on texts with a newline, and one of its header words)
_TABLE_WORDS = re.compile(
    "(?:" + "|".join(re.escape(w) for w in _TABLE_GATE) + r")[a-z_ ]{0,8}[\"'`*]*[ \t]*[,|\t\n]"
)
_TABLE_RULE = re.compile(r"\|?[ \t:|-]+\|?")


def _table_id_ok(cell: str) -> bool:
    digits = cell.replace(" ", "").replace("-", "")
    return (
        (_SG_NRIC.fullmatch(cell) is not None and _nric_ok(cell))
        or (len(digits) == 18 and _cn_id_ok(digits.upper()))
        or (len(digits) == 13 and digits.isdigit() and _kr_rrn_ok(digits))
        or (len(digits) == 12 and digits.isdigit() and _my_number_ok(digits))
        or (len(digits) == 9 and digits.isdigit() and _ssn_ok(digits))
    )


def _table_account_tag(cell: str) -> str | None:
    """The placeholder for a cell of an account / card number column, or None when it holds no number."""
    compact = cell.replace(" ", "").replace("-", "")
    if 15 <= len(compact) <= 34 and compact[:2].isalpha() and _iban_ok(compact.upper()):
        return _tag("iban")
    if not (6 <= len(compact) <= 34 and _TABLE_ACCOUNT_CELL.fullmatch(cell)):
        return None
    if 13 <= len(compact) <= 19 and _issuer_ok(compact) and _luhn_ok(compact):
        return _tag("card")
    return _tag("bank_account")


def _table_columns(head: str) -> tuple[str, dict[int, str]]:
    """The delimiter of a header line and the kind of secret each of its secret-bearing columns holds."""
    sep = "|" if "|" in head else "," if "," in head else "\t"  # Markdown, CSV, TSV
    kinds: dict[int, str] = {}
    if not _TABLE_WORDS.search(head.lower() + "\n"):
        return sep, kinds
    for i, cell in enumerate(head.split(sep)):
        name = cell.strip().strip("\"'`*")
        if _MARK in name:
            continue
        if column := _TABLE_SECRET_COLUMN.fullmatch(name):
            # a password column takes any value; a key / token column a generated one ("tokens: 1234" counts)
            kinds[i] = "password" if column.group("pw") or column.group("pz") else "api_key"
        elif _TABLE_ID_COLUMN.fullmatch(name):
            kinds[i] = "national_id"
        elif _TABLE_ACCOUNT_COLUMN.fullmatch(name):
            kinds[i] = "bank_account"
        elif _TABLE_CVV_COLUMN.fullmatch(name):
            kinds[i] = "cvv"
    names = [cell.strip().strip("\"'`*") for cell in head.split(sep)]
    pair_ids = [i for i, name in enumerate(names) if _TABLE_KEY_ID_COLUMN.fullmatch(name)]
    pair_secrets = [i for i, name in enumerate(names) if _TABLE_KEY_SECRET_COLUMN.fullmatch(name)]
    if pair_ids and pair_secrets:
        for i in pair_ids + pair_secrets:
            kinds.setdefault(i, "api_key")
    return sep, kinds


def _table_row(line: str, sep: str, kinds: dict[int, str]) -> tuple[str, int]:
    cells = line.split(sep)
    found = 0
    for i, kind in kinds.items():
        if i >= len(cells):
            continue
        bare = cells[i].strip().strip("\"'`")
        if not bare or _MARK in bare or _stand_in(bare) or bare.lower() in _NOT_A_PASSWORD:
            continue
        if kind == "national_id" and not _table_id_ok(bare):
            continue
        if kind == "api_key" and not _token_like(bare):
            continue
        if kind == "cvv" and not _TABLE_CVV_CELL.fullmatch(bare):
            continue
        tag = (
            _table_account_tag(bare)
            if kind == "bank_account"
            else _tag("card")
            if kind == "cvv"
            else _tag(kind)
        )
        if tag is None:
            continue
        cells[i] = cells[i].replace(bare, tag, 1)
        found += 1
    return sep.join(cells), found


def _table_action(m: re.Match[str]) -> tuple[str, int]:
    # every line of the block may be a header (a table after a line of prose with a comma): each header's rows
    # are the lines after it that hold its delimiter
    lines = m.group().split("\n")
    found = n = 0
    while n < len(lines):
        sep, kinds = _table_columns(lines[n])
        n += 1
        if not kinds:
            continue
        while n < len(lines) and sep in lines[n]:
            if not _TABLE_RULE.fullmatch(lines[n].strip()):
                lines[n], k = _table_row(lines[n], sep, kinds)
                found += k
            n += 1
    return ("\n".join(lines), found) if found else (m.group(), 0)


# SQL that writes a secret column: `INSERT INTO users (email, initial_password) VALUES ('a@b.io', 'x'), (...)`
# (each row's value in that column), `INSERT ... SET password = 'x'` and `UPDATE ... SET pwd = 'x'` are the labelled
# rules' own. A column is a secret one as a table header is (`_TABLE_SECRET_COLUMN`: password, passwd, pwd,
# secret, token, api_key, 密码 ...; not `password_hash`). A quoted literal goes, or the first quoted literal
# inside a function call (`crypt('x', gen_salt('bf'))`, `PASSWORD('x')`); parameters (`?`, `$1`, `%s`,
# `:pw`), NULL, DEFAULT and stand-ins are kept.
# Every repeat is possessive: a literal's `''` could also end it and open the next one, and without possessive
# repeats a row left open (`('a''a''a''...`) would be tried every way it splits.
_SQL_LITERAL = r"'(?:[^'\\\n]|\\.|'')*+'|\"(?:[^\"\\\n]|\\.)*+\""
# a call's parentheses, two levels deep (`crypt('x', gen_salt('bf'))`)
_SQL_CALL = r"\((?:" + _SQL_LITERAL + r"|\((?:" + _SQL_LITERAL + r"|[^()'\"])*+\)|[^()'\"])*+\)"
_SQL_ROW = r"\((?:" + _SQL_LITERAL + "|" + _SQL_CALL + r"|[^()'\";])*+\)"
_SQL_INSERT = re.compile(
    r"(?<![A-Za-z])INSERT[ \t\r\n]+(?:IGNORE[ \t\r\n]+)?INTO[ \t\r\n]+[\w.\"`\[\]]+[ \t\r\n]*"
    r"\((?P<cols>[^()'\";]{1,2000})\)[ \t\r\n]*VALUES[ \t\r\n]*"
    r"(?P<rows>" + _SQL_ROW + r"(?:[ \t\r\n]*,[ \t\r\n]*" + _SQL_ROW + r")*)",
    _I,
)
_SQL_CELL = re.compile(r"(?:" + _SQL_LITERAL + "|" + _SQL_CALL + r"|[^,()'\"])++")
_SQL_QUOTED = re.compile(_SQL_LITERAL)
_SQL_TUPLE = re.compile(_SQL_ROW)


def _sql_insert_action(m: re.Match[str]) -> tuple[str, int]:
    kinds: dict[int, str] = {}
    for i, col in enumerate(m.group("cols").split(",")):
        name = col.strip().strip('"`[]')
        c = _TABLE_SECRET_COLUMN.fullmatch(name)
        if c is not None:
            kinds[i] = "password" if c.group("pw") or c.group("pz") else "api_key"
    if not kinds:
        return m.group(), 0
    found = 0

    def one_cell(i: int, cell: str) -> str:
        nonlocal found
        if i not in kinds:
            return cell
        q = _SQL_QUOTED.search(cell)
        if q is None:
            return cell
        value = q.group()[1:-1]
        if not value or _MARK in value or _stand_in(value) or value.lower() in _NOT_A_PASSWORD:
            return cell
        if kinds[i] == "api_key" and not _token_like(value):
            return cell
        found += 1
        return cell[: q.start() + 1] + _tag(kinds[i]) + cell[q.end() - 1 :]

    def one_row(t: re.Match[str]) -> str:
        body = t.group()[1:-1]
        cells = [c.group() for c in _SQL_CELL.finditer(body)]
        if ",".join(cells) != body:
            return t.group()  # an empty cell or a form the split does not read: the row is left as is
        return "(" + ",".join(one_cell(i, c) for i, c in enumerate(cells)) + ")"

    rows = _SQL_TUPLE.sub(one_row, m.group("rows"))
    if not found:
        return m.group(), 0
    return m.group()[: m.start("rows") - m.start()] + rows + m.group()[m.end("rows") - m.start() :], found


# Oracle's inline `user/password[@db]`, wherever a connect string is given: a JDBC thin / OCI URL
# (`jdbc:oracle:thin:app/x@//host:1521/SVC`), the tools that take one (`sqlplus -s app/x@db`, `expdp`, `impdp`,
# `sqlldr`, `rman target sys/x@db catalog rco/y@rcat`, `dgmgrl`), a `userid=app/x` parameter, and SQL*Plus
# `CONNECT app/x@db` at the start of a line. Only the password goes; `sqlplus / as sysdba` names no user and has none.
_ORACLE_CONNECT = re.compile(
    r"(?P<lead>(?:jdbc:oracle:(?:thin|oci8?|kprb):"
    r"|(?<![\w.\]-])(?:sqlplus|expdp|impdp|sqlldr|rman|dgmgrl)(?:[ \t]+-{1,2}[A-Za-z]+)*"
    r"(?:[ \t]+(?:target|catalog|auxiliary)[ \t]*=?)?[ \t]+"
    r"|(?<![\w-])userid[ \t]*=[ \t]*|(?P<rman>(?<![\w-])(?:target|catalog|auxiliary)[ \t]*=?[ \t]+)"
    r"|^[ \t]*(?:SQL>[ \t]*)?conn(?:ect)?[ \t]+)"
    r"(?P<user>[A-Za-z][\w$#.]{0,63}|\"[^\"\n]{1,64}\")/)"
    r"(?P<v>(?!\[REDACTED:)(?:\"[^\"\n]{1,128}\"|[^\s/@\"'`;]{1,128}))(?=@|[ \t]*(?:\r?\n|\Z)|[ \t]+\S)",
    _I | re.MULTILINE,
)
# ("conn" alone would pass most prose about connections, "rman" every "performance": a line's `conn` is gated by
# its line start, RMAN by its connect keyword.) The rule's gate is the slash every form has, a one-character
# search; these words are looked for only in the texts that hold one (a search for ten words costs more).
_ORACLE_WORDS = (
    "jdbc:oracle", "sqlplus", "expdp", "impdp", "sqlldr", "rman target", "rman catalog", "rman auxiliary",
    "dgmgrl", "userid=", "userid =", "\nconn",
    "\nsql>", "sql> conn",
)  # fmt: skip


_ORACLE_NEEDS = re.compile("|".join(re.escape(w) for w in _ORACLE_WORDS))
# One gate search for the rules that read a slash (an account's, Oracle's) and for labels then values in order
# ("分别是"): each rule then looks for its own words (`needs`) only in the texts that hold one of them.
_SLASH_GATE = ("/", "／", *_RESPECTIVE_GATE)


def _oracle_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    if _stand_in(value.strip('"')) or m.group("user").upper() in ("USER", "USERNAME"):
        return m.group(), 0
    # RMAN's second connection (`catalog rco/x@rcat`) must name its database: "target arm64/linux" is no login
    if m.group("rman") is not None and not m.string.startswith("@", m.end()):
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# SQL that sets an account's password in the statement: `CREATE USER x IDENTIFIED BY "..."`, `ALTER USER x
# IDENTIFIED BY ...`, MySQL `GRANT ... IDENTIFIED BY '...'`, `IDENTIFIED WITH plugin BY '...'`, `SET PASSWORD [FOR
# 'u'@'h'] = '...'` (or `= PASSWORD('...')`). A hash (`IDENTIFIED BY PASSWORD '*6BB4...'`, `AS '...'`) is kept.
_SQL_CREDENTIAL = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:IDENTIFIED(?:[ \t]+WITH[ \t]+['\"`]?\w+['\"`]?)?[ \t]+BY"
    r"|SET[ \t]+PASSWORD(?:[ \t]+FOR[ \t]+[^\s=;]{1,128})?[ \t]*=(?:[ \t]*PASSWORD[ \t]*\()?)[ \t]*"
    r"(?P<q>['\"`])?)(?P<v>(?!\[REDACTED:)(?(q)[^'\"`\n]{1,128}|[^\s;'\"`)]{1,128}))",
    _I,
)


_SQL_ACCOUNT = re.compile(r"(?<![A-Za-z])(?:(?:create|alter)[ \t]+(?:user|role|login)|grant)(?![A-Za-z])", _I)


def _sql_credential_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    if value.upper() == "PASSWORD" or _stand_in(value) or value.startswith((":", "?", "$", "%", "&")):
        return m.group(), 0  # `BY PASSWORD '*hash'`, a bind variable or a substitution
    # unquoted, in a statement that makes or changes an account, or looking like a password ("identified by its
    # name" is prose)
    if m.group("q") is None and not _pw_shaped(value):
        line_start = m.string.rfind("\n", max(0, m.start() - 200), m.start()) + 1
        if _SQL_ACCOUNT.search(m.string, max(line_start, m.start() - 200), m.start()) is None:
            return m.group(), 0
    return m.group("lead") + _tag("password"), 1


def _my_number_ok(s: str) -> bool:
    """Japan's My Number: 11 digits and a check digit (weights 2..7, 2..6 from the right, mod 11)."""
    s = s.replace(" ", "").replace("-", "")
    body = s[:11][::-1]
    total = sum(int(c) * (n + 1 if n <= 6 else n - 5) for n, c in enumerate(body, start=1))
    r = total % 11
    return int(s[11]) == (0 if r <= 1 else 11 - r)


_MY_NUMBER = re.compile(r"(?P<v>[0-9](?<![0-9A-Za-z][0-9])[0-9]{3}([ -]?)[0-9]{4}\2[0-9]{4}(?![0-9A-Za-z]))")
_MY_NUMBER_GATE = ("マイナンバー", "個人番号", "my number", "mynumber")
# The rarer forms of the sixth set share one gate: one search of the text for all their words.
_SIXTH_GATE = (
    *_MY_NUMBER_GATE, "zhipu", "智谱", "glm", "bigmodel", "ls0tls1crudjti", "pgpass",
    "value=", "value =",
)  # fmt: skip

# Zhipu (智谱) API keys: an id of 32 hex, a dot, a secret of 16 letters and digits.
_ZHIPU = re.compile(r"[0-9a-f](?<![\w.-][0-9a-f])[0-9a-f]{31}\.[A-Za-z0-9]{16}(?![\w.-])")

# A PEM private key in base64 (a Kubernetes secret's `tls.key`): base64 of "-----BEGIN" starts with
# "LS0tLS1CRUdJTi"; it goes when it decodes to a private key's header.
_PEM_B64 = re.compile(r"LS0tLS1CRUdJTi(?<![A-Za-z0-9+/]LS0tLS1CRUdJTi)[A-Za-z0-9+/]{8,}={0,2}")


def _pem_b64_ok(s: str) -> bool:
    head = s[:120]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4])
    except ValueError:
        return False
    return b"PRIVATE KEY-----" in decoded.split(b"\n", 1)[0]


# A private key's DER body without its PEM lines (what Alipay and others ask to paste): base64 lines starting
# "MI" / "MH" whose DER is a SEQUENCE that opens with the INTEGER version 0 or 1 (PKCS#1, PKCS#8, SEC1 EC
# keys). Public keys and certificates open with a SEQUENCE instead, and are kept.
_DER_B64 = re.compile(
    r"M[IHG](?<![A-Za-z0-9+/]M[IHG])[A-Za-z0-9+/]{38,}={0,2}(?:[ \t]*(?:\r?\n|\\n)[ \t]*[A-Za-z0-9+/]{4,}={0,2})*"
)


_DER_GATE = ("mii", "mig", "mih", "mhc")  # the DER lengths' prefixes (MII: 256+ bytes, MIG / MIH, MHc)


def _der_private_ok(s: str) -> bool:
    try:
        der = base64.b64decode(s[:16])
    except ValueError:
        return False
    if len(der) < 8 or der[0] != 0x30:
        return False
    at = 2 + (der[1] & 0x7F if der[1] & 0x80 else 0)
    return der[at : at + 2] == b"\x02\x01" and der[at + 2] in (0, 1) and len(s) >= 100


# `.pgpass` lines (host:port:database:user:password), where the file is named.
_PGPASS = re.compile(r"(?m)^[ \t]*[\w.*-]+:(?:[0-9]+|\*):[^:\s]+:[^:\s]+:(?P<v>(?!\[REDACTED:)\S+)[ \t]*$")

# .NET appSettings: `<add key="SmtpPassword" value="..." />`: the key names a secret.
_APP_SETTING = re.compile(
    r"(?<![\w-])key[ \t]*=[ \t]*\"(?P<n>[^\"\n]{1,80})\"[ \t]+value[ \t]*=[ \t]*"
    r"\"(?P<v>(?!\[REDACTED:)[^\"\n]{1,300})\"",
    _I,
)


def _app_setting_action(m: re.Match[str]) -> tuple[str, int]:
    kind = secret_kind_of_name(m.group("n"))
    value = m.group("v")
    if kind is None or _stand_in(value) or _reference_at(value, 0):
        return m.group(), 0
    return _swap(kind)(m)


_DIGITS = tuple("0123456789")
# Numbers of 9+ digits, whole or in groups joined by single spaces or dashes: every card, Chinese ID, SSN,
# BitLocker key, Korean RRN and French NIR holds one. One search of the text decides whether those rules run.
_LONG_NUMBER = re.compile(r"[0-9](?:[ -]?[0-9]){8}")
# A Singapore NRIC / FIN is read near a word that names one or Singapore (a letter, 7 digits and a check letter
# is otherwise one string in eleven of that shape)
_NRIC_CONTEXT = ("ric", "singapore", "新加坡")  # windowed: the number within reach of (n)ric or Singapore
_to_private = _labelled_action("private_key", generated=True)
_to_api_key = _labelled_action("api_key", generated=True)
_to_password = _labelled_action("password", generated=False)
# A passport number after its label, in any of the common languages: "passport no. KX1234567", "护照号码
# E12345678", "Reisepass-Nr. C01X00T47", "パスポート番号 TK1234567". The country formats share one shape: 6 to
# 10 capital letters and digits, at most three letters first, at least five digits (CN E/G + 8 digits, US 9
# digits, UK 9, DE 9 alphanumeric, many 1-2 letters + 7 digits). No public checksum: the label decides.
_PASSPORT_LABEL = (
    r"(?i:(?<![A-Za-z])passport(?:[ \t]+(?:no\.?|nr\.?|number|num\.?|#))?"
    r"|(?:护照|護照)(?:号码|號碼|号|號|编号|編號)?|パスポート(?:番号)?|여권[ \t]*번호"
    # the travel permits China issues in a passport's stead (set 26: "往来港澳通行证号码 CK4799975"): to Hong Kong and
    # Macau, to Taiwan, and the home-return permit, each numbered as a passport is (a letter or two, then digits)
    r"|(?:(?:往来|往來)?(?:港澳|台湾|臺灣|台灣|大陆|大陸)(?:居民)?(?:来往|來往|往来|往來)?(?:内地|內地|大陆|大陸)?"
    r"通行(?:证|證)|回乡证|回鄉證)(?:号码|號碼|号|號|编号|編號|证号|證號)?"
    r"|(?<![A-Za-z])(?:reisepass|passeport|pasaporte|passaporto|paspoort)"
    r"(?:[ \t-]*(?:nummer|nr\.?|n[°o]\.?|numéro|número|numero))?)"
)
_PASSPORT = re.compile(
    r"(?P<lead>" + _PASSPORT_LABEL + r"(?:'s[ \t]+number)?"
    r"(?:[ \t]+(?i:is|was)(?![A-Za-z])|[ \t]*(?:[:：#=]|(?:是|为|為)[ \t]*[:：]?))?[ \t]*)"
    r"(?P<v>(?<![A-Za-z0-9])(?=[A-Z0-9]{6,10}(?![A-Za-z0-9]))(?=(?:[A-Z]*[0-9]){5})[A-Z]{0,3}[0-9][A-Z0-9]{4,9})"
    r"(?![A-Za-z0-9])"
)
_PASSPORT_HEAD = re.compile(_PASSPORT_LABEL)
# windowed: "pass" (already a word of the shared scan) stands for passport, Reisepass, passeport, passaporto
_PASSPORT_GATE = (
    "pass", "护照", "護照", "パスポート", "여권", "pasaporte", "paspoort", "通行证", "通行證", "回乡证", "回鄉證",
)  # fmt: skip

# A passport's or a visa's machine-readable zone, the line that carries the numbers (the eleventh set: a photo
# page read by OCR): TD3 (passports, 44 characters) and TD2 (36) line 2, document number, nationality, birth
# date, sex, expiry. The ICAO 9303 check digits decide (document number, birth date, expiry and the
# composite one), so no label is needed and a line that only looks like one is kept. Line 1 (a name) stays.
_MRZ = re.compile(
    r"(?P<v>(?<![A-Z0-9<])[A-Z0-9<]{9}[0-9<][A-Z<]{3}[0-9]{6}[0-9][MFX<][0-9]{6}[0-9]"
    r"(?:[A-Z0-9<]{14}[0-9<][0-9]|[A-Z0-9<]{7}[0-9])(?![A-Z0-9<]))"
)


# An identity card's MRZ (TD1: three lines of 30, the eleventh and twelfth sets' leftover): line 1 holds the
# document number (check digit at 15), line 2 the birth date and the expiry with their check digits and the composite
# one at its end (over line 1 from the document number on and line 2's dates and optional data). Both lines go; the
# name on line 3 stays. The check digits decide, so no label is needed.
_MRZ_TD1 = re.compile(
    r"(?P<v>(?<![A-Z0-9<])[A-Z][A-Z0-9<][A-Z<]{3}[A-Z0-9<]{9}[0-9<][A-Z0-9<]{15}[ \t]*\r?\n[ \t]*"
    r"[0-9]{6}[0-9][MFX<][0-9]{6}[0-9][A-Z<]{3}[A-Z0-9<]{11}[0-9](?![A-Z0-9<]))"
)
_MRZ_LINE_BREAK = re.compile(r"[ \t]*\r?\n[ \t]*")


def _mrz_td1_ok(block: str) -> bool:
    one, two = _MRZ_LINE_BREAK.split(block)
    if one[14] != _mrz_digit(one[5:14]) and not (one[14] == "<" and one[15] != "<"):
        return False  # (a number longer than 9 goes on in the optional data, its check digit there)
    if two[6] != _mrz_digit(two[:6]) or two[14] != _mrz_digit(two[8:14]):
        return False
    return two[29] == _mrz_digit(one[5:30] + two[:7] + two[8:15] + two[18:29])


def _mrz_digit(s: str) -> str:
    total = 0
    for i, c in enumerate(s):
        value = 0 if c == "<" else int(c) if c.isdigit() else ord(c) - 55
        total += value * (7, 3, 1)[i % 3]
    return str(total % 10)


def _mrz_ok(line: str) -> bool:
    if line[9] != _mrz_digit(line[:9]) and not (line[9] == "<" and line[:9].endswith("<")):
        return False
    if line[19] != _mrz_digit(line[13:19]) or line[27] != _mrz_digit(line[21:27]):
        return False
    if len(line) == 44:
        if line[42] != "<" and line[42] != _mrz_digit(line[28:42]):
            return False
        composite = line[:10] + line[13:20] + line[21:43]
    else:
        composite = line[:10] + line[13:20] + line[21:35]
    return line[-1] == _mrz_digit(composite)


# A PIN or code dictated as words (speech to text): "the pin they gave me is four one seven two", "支付密码是三五
# 七九二四", "门禁码：幺三五七". After a PIN / password / code label and a verb or colon (a few words may stand
# between: "the pin they sent is"), 4 to 12 digit words (English) or Chinese numerals (幺 and 两 included).
_CN_NUMERAL = "[零〇一二三四五六七八九幺两]"
_CN_NUMERAL_T = "[零〇一二三四五六七八九幺两兩]"  # with the traditional 兩
# or typed one by one, digits or words between spaces, dashes, commas or dots ("the alarm code is 2 3 2 1", "pin:
# 7-0-4-4", "门禁码是 5 8 0 3", "the code is 9, two, 2, 6"): single digits only, so a number is not taken
_SPOKEN_DIGIT = r"(?:" + _DIGIT_WORD + r"|(?<![0-9])(?<![0-9]\.)[0-9](?![0-9]))"
# (a dot only as a pause, "8... 1... 5... 0" or "8. 1. 5. 0": not a version's "1.2.3.4")
_SPOKEN_SEP = r"(?:[ \t]*[,-][ \t]*|[ \t]+|[ \t]*(?:\.{2,3}|…)[ \t]*|\.[ \t]+)"
_SPOKEN_PIN = re.compile(
    r"(?P<lead>(?:(?<![A-Za-z])(?P<label>pin|passcode|pass[ \t]code|password|code|combo|combination)(?![A-Za-z])"
    r"|密码|密碼|口令|验证码|驗證碼|动态码|動態碼|校验码|校驗碼|门禁码|开锁码)"
    r"[^\n.;!?。，,；！？0-9]{0,24}?(?:(?<![A-Za-z])(?:is|was|are)(?![A-Za-z])|[:：=]|是|为|為)[ \t]*(?:[:：][ \t]*)?)"
    r"(?P<v>"
    + _SPOKEN_DIGIT
    + r"(?:"
    + _SPOKEN_SEP
    + _SPOKEN_DIGIT
    + r"){3,15}(?![A-Za-z0-9])(?!"
    + _SPOKEN_SEP
    + _SPOKEN_DIGIT
    + r")"
    r"|" + _CN_NUMERAL + r"(?:[ \t]?" + _CN_NUMERAL + r"){3,11})"
    # not a length ("the password is 8 1 0 2 digits long" is no PIN)
    r"(?![ \t]*(?:digits?|numbers?|characters?|chars?|位|个|個))",
    _I,
)
_SPOKEN_PIN_GATE = (
    "pin", "code", "pass", "combo", "combination", "密码", "密碼", "口令", "验证码", "驗證碼", "门禁码", "开锁码",
    "动态码", "動態碼", "校验码", "校驗碼",
)  # fmt: skip
# (one pass, case-sensitive and the digit words' branch first, as before: a flag or a second word-led branch made
# this search cost a fifth of `redact` on a 32 KB paste)
_SPOKEN_PIN_NEEDS = re.compile(
    _DIGIT_WORD
    + r"[ \t,-]+(?:"
    + _DIGIT_WORD
    + r"(?![a-z])|[0-9](?![0-9]))|"
    + _CN_NUMERAL
    + r"[ \t]?"
    + _CN_NUMERAL
    + r"|(?<![0-9])[0-9][ \t,.…-]{1,5}(?:[0-9](?![0-9])|"
    + _DIGIT_WORD
    + r")"
)


def _spoken_pin_action(m: re.Match[str]) -> tuple[str, int]:
    # another kind of code named just before its label ("the zip code is 9 4 1 0 3", "error code 5 0 3 1")
    label = m.group("label")
    if label is not None and _OTHER_CODE.search(m.string, max(0, m.start("label") - 24), m.start("label")):
        return m.group(), 0
    return _swap_value("password")(m)


# Credentials passed positionally to a database / mail / FTP client, as string literals where the call takes
# the password: `new PDO($dsn, 'app', 'S3cret!')`, `new mysqli('db', 'app', 'pw', 'shop')`,
# `DriverManager.getConnection(url, "app", "pw")`, `new Sequelize('db', 'user', 'pw', {...})`,
# `pymysql.connect("h", "u", "pw")`, `cx_Oracle.connect("scott", "tiger", dsn)`, `smtp.login("me@x", "pw")`,
# `ftp_login($c, 'u', 'pw')`. The password's place is the call's: 2nd (user, password, ...), 3rd (target,
# user, password) or 4th (mysqli_real_connect). Variables there are kept (`new PDO($dsn, $user, $pass)`).
_CALL_ARG = r"[ \t\r\n]*(?:'[^'\n]{0,300}'|\"[^\"\n]{0,300}\"|[$\w.\[\]>-]{1,80})[ \t\r\n]*,"
_DB_CALL_1 = r"(?:(?<![\w$.])(?:cx_Oracle|oracledb)\.connect|(?<=[\w)\]])\.login)[ \t]*\("
_DB_CALL_2 = (
    r"(?<![\w$.])(?:(?:new[ \t]+)?(?:PDO|mysqli|Sequelize)|mysqli_connect|mysql_p?connect"
    r"|DriverManager\.getConnection|(?:pymysql|MySQLdb|ibm_db)\.connect|ftp_login|ssh2_auth_password|ldap_bind"
    r"|imap_open)[ \t]*\("
)
_DB_CALL_3 = r"(?<![\w$.])mysqli_real_connect[ \t]*\("
_DB_CALL = re.compile(
    r"(?P<lead>(?:" + _DB_CALL_1 + r"(?:" + _CALL_ARG + r"){1}|" + _DB_CALL_2 + r"(?:" + _CALL_ARG + r"){2}"
    r"|"
    + _DB_CALL_3
    + r"(?:"
    + _CALL_ARG
    + r"){3})[ \t\r\n]*(?P<q>['\"]))(?P<v>(?!\[REDACTED:)[^'\"\n]{1,200})(?P=q)"
)
_DB_CALL_HEAD = re.compile(_DB_CALL_1 + "|" + _DB_CALL_2 + "|" + _DB_CALL_3)
# windowed: "log" and "ssh" (words of the shared scan already) stand for .login, ftp_login and ssh2_auth_password;
# "connect" for getConnection
_DB_CALL_GATE = ("pdo", "mysql", "sequelize", "connect", "ssh", "ldap_bind", "imap_open", "log")  # fmt: skip


def _db_call_action(m: re.Match[str]) -> tuple[str, int]:
    v = m.group("v")
    if _stand_in(v) or v.startswith(("${", "{{", "%(", "<", "$")) or not any(c.isalnum() for c in v):
        return m.group(), 0
    return _swap_value("password")(m)


# A Wi-Fi network and its password written as a pair: "guest wifi: Cafe-Net / tulip-88-river", "WLAN：Home5G／
# 12345678", "ssid/pass: Lab24 / q7!mango". The second of the pair goes when it looks like a passphrase (8 to 63
# characters with a digit or a symbol, or all digits), not a band or a security mode ("2.4GHz / 5GHz",
# "WPA2 / WPA3").
_WIFI_PAIR_LABEL = (
    r"(?:(?<![A-Za-z])(?:wi-?fi|wlan|hotspot|wireless|ssid)(?:[ \t]*[/／][ \t]*(?:pass(?:word)?|pwd|pw|key))?"
    r"(?:[ \t]+(?:network|login|details|creds|credentials|info))?(?![A-Za-z])|无线网络?|热点)"
)
_WIFI_PAIR = re.compile(
    # (or with only a space after the label, as a check-in note lists it, set 20: "- WiFi BlueHeron-Guest /
    # orchid-juniper-harbor-23": then the network's name must look like one, see the action)
    r"(?P<lead>"
    + _WIFI_PAIR_LABEL
    + r"(?:[ \t]*(?:[:：=]|是)[ \t]*|(?P<sp>[ \t]+))(?P<net>[^\s/／:：]{1,32})"
    r"[ \t]*[/／][ \t]*)"
    r"(?P<v>(?!\[REDACTED:)[^\s/／]{1,80})",
    _I,
)
_WIFI_PAIR_HEAD = re.compile(_WIFI_PAIR_LABEL, _I)
# windowed: the Wi-Fi words are in the shared scan already (the Wi-Fi key rule's context)
_WIFI_PAIR_GATE = ("wifi", "wi-fi", "wlan", "hotspot", "wireless", "ssid", "无线", "热点")


# a network's name as routers and hosts write it: a capital, a digit, a dash or an underscore in it ("BlueHeron-Guest",
# "TP-LINK_5G", "Casa42"), not a word of prose ("wifi router / mesh", "wifi speed / 300Mbps")
_NETWORK_NAME = re.compile(r"(?=[^\s]*[A-Z0-9_-])[A-Za-z0-9][\w.-]*")


def _wifi_pair_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v").rstrip(_PW_TRAILING)
    if m.group("sp") is not None and (
        _NETWORK_NAME.fullmatch(m.group("net")) is None
        or _SECURITY_MODE.fullmatch(m.group("net"))
        or m.group("net").isdigit()
    ):
        return m.group(), 0
    if (
        not 8 <= len(secret) <= 63
        or _stand_in(secret)
        or _SECURITY_MODE.fullmatch(secret)
        or not (_pw_shaped(secret) or secret.isdigit())
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password") + m.group("v")[len(secret) :], 1


_PW_BEFORE_GATE = ("pass", "pw", "pin", "密码", "口令")
# A password told in passing, in brackets a few words after its label (set 20: "the shared drive password is the
# same as always (Thistle!9328, capital first letter)", "密码还是老的（Qm#2207lake）"): the first thing in the
# brackets, 8+ characters with a letter, a digit and a symbol (`!#$%&*+=?@^~`), which no hash's name, setting or
# version has ("password hashing (Argon2id, m=64MB)", "password rules (min 12 chars)" stay). Same sentence only.
_PW_IN_BRACKETS_LABEL = (
    r"(?<![A-Za-z])(?:pass(?:word|phrase|code)?|passwd|pwd|pw)s?(?![A-Za-z])|密码|密碼|口令"
)
_PW_IN_BRACKETS = re.compile(
    r"(?P<lead>(?:" + _PW_IN_BRACKETS_LABEL + r")[^\n()（）.!?;。！？；]{1,48}?[(（][ \t]*)"
    r"(?P<v>(?!\[REDACTED:)[^\s()（）,，;；]{8,64})(?=[ \t]*[)）,，;；])",
    _I,
)


def _pw_in_brackets_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v")
    if _stand_in(secret) or not (_strong_secret(secret, 8) and _STRONG_SYMBOL.search(secret) is not None):
        return m.group(), 0
    return _swap_value("password")(m)


# ... or right after its label in square or lenticular brackets, as a note marks a value off (set 26: "大众点评 密码
# [qq0413813]", "个税app密码【guoxiaoyan_19771130】"): the whole bracket's content, one run of 4 to 64 characters that
# looks like a password (or is 4+ digits). Kept: an index in code (`password[0]`, `user.password[i]`), a stand-in
# (`密码【请输入】`, `password [your password]`), a word (`password [required]`).
_PW_BRACKETED = re.compile(
    r"(?P<lead>(?<![0-9_.$>-])(?:" + _PW_IN_BRACKETS_LABEL + r")[ \t]*[:：]?[ \t]*[\[【〔])"
    r"(?P<v>(?!REDACTED:)[\x21-\x5a\x5c\x5e-\x7e]{4,64})(?=[ \t]*[\]】〕])",
    _I,
)


def _pw_bracketed_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v")
    if _stand_in(secret) or not (secret.isdigit() or _pw_shaped(secret)):
        return m.group(), 0
    return _swap_value("password")(m)


_PW_GATE = ("pass", "pw", "pin", "密码", "密碼", "口令", "授权码", "授權碼")
_KEY_GATE = ("secret", "key", "token", "psk", "密钥", "秘钥", "密鑰", "密匙", "秘匙", "令牌")
_PRIVATE_GATE = ("private", "私钥", "私鑰")
_PAIR_GATE = ("pass", "pw", "密码", "口令")
_CREDENTIAL_GATE = (
    *("log", "sign", "cred", "ssh", "账号", "帐号", "登录", "凭据", "凭证"),
    *("account", "acct", "帳號", "帳户", "帳戶", "账户", "用户", "用戶"),
    # "user" in the forms a label takes (a bare "user" is everywhere: a chat's role); "the user" is the prose
    # rule's word too, so that one scan finds it for both
    *(
        "username",
        "user name",
        "user_name",
        "user-name",
        "user:",
        "user：",
        "user is",
        "user for",
        "the user",
    ),
)
# ---------------------------------------------------------------- set 21: ordinary conversation

# Misspelt and slang password labels (set 21): "paswrod", "pasword", "passwrd"; Chinese 秘码 / 蜜码 (homophones of
# 密码), pinyin "mima" and its initials "mm". "mm" is a unit too ("10mm", "mm/dd"): only right after a Chinese character
# with no space ("无线mm", "我的mm"; "mm 是" after a space is `_FOREIGN_PW`'s). Read as `_PW_LABELLED` reads its labels.
_HEAD_PW_SLANG = (
    r"(?P<ph>(?:pas(?:wrod|word|wrd|wd)|pass(?:wrod|owrd|wrd|wod|ord)|pssw(?:or)?d|pswd)s?)(?![A-Za-z0-9_])"
    r"|(?P<pz>秘码|蜜码|秘碼|蜜碼|(?<![A-Za-z0-9])mima(?![A-Za-z0-9])"
    r"|(?<=[\u4e00-\u9fff])mm(?![A-Za-z0-9]))"
)
_PW_SLANG = _labelled(_HEAD_PW_SLANG, _VALUE_WHOLE)
_PW_SLANG_GATE = ("pasw", "passwrd", "passwrod", "passowrd", "passwod", "passord", "psswd", "pssword", "pswd")
_PW_SLANG_GATE_ZH = ("秘码", "蜜码", "秘碼", "蜜碼", "mima", "mm")

# A security question and its answer (set 21): the question named ("first pet", "mother's maiden name", "母亲的姓名",
# "小学名称") then `=`, `:`, `——`, "is" / "was" and the answer; or the answer told with a verb ("I answered 'X'",
# "我填的是 X"). Only in a text that speaks of security questions (密保, 安全问题): the answer is a credential there.
_SQ_GATE = (
    "security question",
    "secret question",
    "security answer",
    "challenge question",
    "密保",
    "安全问题",
    "安全問題",
)
_SQ_EN = (
    r"first[ \t]+(?:pet|car|school|teacher|boss|job|concert|love|street)(?:'?s)?(?:[ \t]+(?:name|make|model))?"
    r"|(?:mother|mom|mum|father|dad)'?s[ \t]+(?:maiden|middle)[ \t]+name|maiden[ \t]+name"
    r"|(?:elementary|primary|middle|high)[ \t]+school|(?:birth[ \t]*place|birth[ \t]+city|city[ \t]+of[ \t]+birth)"
    r"|city[ \t]+(?:where|you|she|he|your|her|his)[^\n=:：,;.?]{0,30}?"
    r"|favou?rite[ \t]+(?:teacher|food|book|movie|film|colou?r|sport|team|band|singer|place)"
    r"|childhood[ \t]+(?:best[ \t]+)?(?:friend|nickname|hero)|nickname"
    r"|street[ \t]+(?:you|she|he)[ \t]+grew[ \t]+up[ \t]+on"
)
_SQ_ZH = (
    r"(?:母亲|父亲|母親|父親|妈妈|爸爸|配偶)的?(?:姓名|名字|生日)|(?:小学|初中|高中|中学|小學|中學)(?:的)?(?:名称|名字|校名|名稱)"
    r"|(?:第一只|第一隻)?宠物的?名字|出生(?:地|城市)|最喜欢的(?:老师|食物|书|电影|颜色)|(?:第一辆车|初恋)的?(?:名字|品牌)?"
)
_SQ_PAIR = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:"
    + _SQ_EN
    + r")[ \t]*(?:=|[:：]|[—–]+|-(?=[ \t])|(?<![A-Za-z])(?:is|was)(?![A-Za-z]))"
    r"[ \t]*[\"'“‘]?(?:(?:Mrs|Mr|Ms|Miss|Dr)\.?[ \t]+)?)"
    r"(?P<v>[A-Z0-9][\w'-]{1,30}(?:[ \t][A-Z][\w'-]{1,30}){0,2})"
    r"|(?P<lead2>(?:" + _SQ_ZH + r")[ \t]*(?:[:：=]|——|—|－|-|是|为|填的是|写的是)[ \t]*)"
    r"(?P<v2>[\u4e00-\u9fff]{2,12}|[A-Za-z0-9][\w'-]{1,30})",
    _I,
)
_SQ_ANSWER = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:I[ \t]+(?:answered|put(?:[ \t]+down)?|wrote|typed|entered|chose|picked)"
    r"|(?:my[ \t]+)?answer[ \t]+(?:is|was)|answer[ \t]*[:：])[ \t]*(?P<q>[\"'“‘])?)"
    r"(?P<v>[A-Z0-9][\w'-]{1,30}(?:[ \t][A-Z][\w'-]{1,30}){0,2})"
    r"|(?P<lead2>(?:(?:我|当时|當時)*(?:填|写|寫|设|設|输入|輸入)的|答案)(?:是|为|為)[ \t]*[:：]?[ \t]*)"
    # (an answer in Chinese may end in digits, set 23: "答案是 捷安特2002")
    r"(?P<v2>[A-Za-z][\w'-]{1,30}|[\u4e00-\u9fff]{2,12}(?:[0-9]{2,4}(?![0-9]))?)",
)
_SQ_NOT = frozenset(
    "I It It's That This The A An My Yes No Wrong Right Correct Correctly Them All Something Nothing".lower().split()
)
_SQ_NOT_ZH = ("错", "對", "对", "什么", "啥", "这", "那", "哪", "一样", "一個", "一个", "正确")


def _sq_action(m: re.Match[str]) -> tuple[str, int]:
    lead, v = ("lead", "v") if m.group("v") is not None else ("lead2", "v2")
    value = m.group(v)
    if value.lower() in _SQ_NOT or value.lower() in _NOT_A_PASSWORD or value.startswith(_SQ_NOT_ZH):
        return m.group(), 0
    return m.group(lead) + _tag("password"), 1


# A card's expiry date after the card (set 21: "Amex 3445-..., exp 07/26", "卡号...，有效期10/28"): with the number
# and its CVV it is card data. Only after a card was replaced and only after an expiry word ("booked for 07/26" stays).
_CARD_EXPIRY = re.compile(
    r"\[REDACTED:card\](?P<mid>[^\n]{0,80}?"
    r"(?:(?<![A-Za-z])(?:exp(?:iry|ires|iration)?(?:[ \t]+date)?|valid[ \t]+(?:thru|through|until|till)|good[ \t]+thru)"
    r"(?![A-Za-z])\.?|有效期(?:至|到)?|到期(?:日|时间)?|过期(?:日|时间))"
    r"[ \t]*(?:[:：=]|is(?![A-Za-z])|是|为)?[ \t]*)"
    r"(?P<v>(?<![0-9])(?:0?[1-9]|1[0-2])[ \t]*[/／-][ \t]*(?:20)?[0-9]{2}(?![0-9/]))",
    _I,
)

# A code spelled out in words (set 21: "the alarm code. It's five four seven five"; "密码是六三九一"): 4 to 8 digit
# words after a code's label in the same or the next sentence. Prose counts ("one or two codes", "一五一十") stay.
_SPELLED_CODE = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:code|pin|passcode|password|combination|combo)s?(?![A-Za-z])[^\n0-9]{0,40}?"
    r"(?<![A-Za-z]))(?P<v>"
    + _DIGIT_WORD
    + r"(?:(?:[ \t]*[,-][ \t]*|[ \t]+)"
    + _DIGIT_WORD
    + r"){3,7}"
    # (or one digit said so many times, set 26: "取款密码：六个八" for 888888, "the PIN is four sevens")
    + r"|(?:four|five|six|eight)[ \t]+(?:zero|one|two|three|four|five|six|seven|eight|nine)e?s)(?![A-Za-z])"
    r"|(?P<lead2>(?:密码|密碼|口令|验证码|驗證碼|动态码|動態碼|校验码|校驗碼|门禁码|開門碼|开门码|取件码|取件碼|code)"
    r"[^\n0-9]{0,12}?)"
    r"(?P<v2>" + _CN_NUMERAL_T + r"{4,8}(?![零〇一二三四五六七八九十百千万幺两兩])"
    r"|[四五六八](?:个|個)" + _CN_NUMERAL_T + r"(?![\u3400-\u9fffA-Za-z0-9]))",
    _I,
)
# (a digit said so many times: a count of four to eight, as a PIN has, then the digit)
_SPELLED_NEEDS_REPEATED = re.compile(
    r"[四五六八][个個]"
    + _CN_NUMERAL_T
    + r"|(?:four|five|six|eight)[ \t]+(?:zero|one|two|three|four|five|six|seven"
    r"|eight|nine)e?s(?![a-z])"
)


def _spelled_code_action(m: re.Match[str]) -> tuple[str, int]:
    lead, v = ("lead", "v") if m.group("v") is not None else ("lead2", "v2")
    if m.group(v) == "一五一十":
        return m.group(), 0
    return m.group(lead) + _tag("password"), 1


# A code told before its label (set 21: "62780 is the gate code", "（037871）←这是我社保卡的密码", "934184 这个是
# office 大楼 gate 的 code"): 4 to 8 digits, then "is the / my ... code / PIN" with only an access word between
# ("10001 is the zip code", "40401 is the error code" stay), or 是 ... 密码 / 口令 / code within a few characters.
_ACCESS_NOUN = (
    r"(?:(?:front|back|side|main|garage|building|house|apartment|office)[ \t]+)?"
    r"(?:gate|door|lock|alarm|garage|entry|access|keypad|building|lockbox|key[ \t]?box|locker|safe|wi-?fi|unlock|pin)"
)
_CODE_FIRST = re.compile(
    r"(?<![\w.:/-])(?P<v>[0-9]{4,8})(?![0-9])(?P<rest>[ \t]*[)）]?[ \t]*"
    # (an arrow pointing back at the code may stand for "this is": "（6620）←信箱的密码")
    # (Chinese words only between: "2024 <- the year the code changed" stays)
    r"(?:(?:←|<-+)[ \t]*[^\x00-\x7f，。！？]{0,16}?(?:密码|密碼|口令|门禁码|開門碼|开门码)"
    r"|(?:←|<-+)?[ \t]*"
    r"(?:(?:is|was)[ \t]+(?:the|my|our|his|her|their|your)[ \t]+(?:" + _ACCESS_NOUN + r"[ \t]+)?"
    r"(?:code|pin|passcode|password|combo|combination)(?![A-Za-z])"
    r"|(?:(?:这|那|這)(?:个|個)?[ \t]*)?(?:就)?是[^\n，。,.!?！？0-9]{0,24}?"
    r"(?:密码|密碼|口令|门禁码|開門碼|开门码|code|pin)"
    r"(?![A-Za-z]))))",
    _I,
)
# (a code of another kind named between: "12345 是错误 code 吗", "10001 是邮编")
_CODE_FIRST_OTHER = re.compile(
    r"错误|錯誤|邮编|郵編|邮政|郵政|状态|狀態|订单|訂單|航班|error|zip|status|postal|order", _I
)


def _code_first_action(m: re.Match[str]) -> tuple[str, int]:
    if _CODE_FIRST_OTHER.search(m.group("rest")) is not None:
        return m.group(), 0
    return _tag("password") + m.group("rest"), 1


_CODE_FIRST_GATE = (
    "取件码",
    "取件碼",
    "验证码",
    "驗證碼",
    "code",
    "pin",
    "pass",
    "密码",
    "密碼",
    "口令",
    "门禁码",
    "开门码",
    "開門碼",
    "combo",
    "combination",
)

# A door, gate or lock code in a message to a visitor (set 21: "大门 code 5938", "Temporary code for the dog walker:
# 014979"): an access word and "code" then 4 to 8 digits, or "code for <someone>:" then digits in a text that names
# a lock, a door or a gate. The pattern starts at "code" / 码 (a fast scan of a long paste); the access word before it
# is checked by the action.
_VISITOR_CODE = re.compile(
    r"(?P<lead>(?P<code>[Cc][Oo][Dd][Ee](?![A-Za-z])|[码碼])(?:[ \t]*(?:[:：=#]|is(?![A-Za-z])|是|为)?[ \t]*"
    r"|(?P<for>[ \t]+for[ \t]+(?:the|my|our|your|his|her)?[ \t]*[A-Za-z' -]{1,30}?[:：][ \t]*)))"
    r"(?P<v>(?<![0-9])[0-9]{4,8})(?![0-9]|[ \t]*(?:digits?|位|个))",
    _I,
)
_ACCESS_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])" + _ACCESS_NOUN + r"|大门|大門|门禁|門禁|楼门|樓門|单元门|單元門|院门|门|門)[ \t]*\Z",
    _I,
)
_VISITOR_GATE = ("code", "码", "碼")
_LOCK_CONTEXT = re.compile(r"lock|door|gate|keypad|alarm|garage|门|門", _I)


@functools.lru_cache(maxsize=2)
def _names_lock(text: str) -> bool:
    """The text names a lock, a door or a gate. (Asked once per text, not once per code: each "code for the box: 1234"
    of a long text searched the whole text again, quadratic.)"""
    return _LOCK_CONTEXT.search(text) is not None


def _visitor_action(m: re.Match[str]) -> tuple[str, int]:
    if m.group("for") is not None:
        told = m.group("code")[:1] in "Cc" and _names_lock(m.string)
    else:
        access = _ACCESS_BEFORE.search(m.string, max(0, m.start() - 40), m.start())
        told = access is not None and not _postal_pin(m, m.string[access.start() : m.start("v")])
    if not told:
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A meeting's passcode (set 21: "Zoom ID 815 2294 0671, passcode geUopp"): after a meeting service is named, a
# passcode or password with a space may be a plain word ("passcode geUopp") as invitations print it.
_MEETING_PASSCODE = re.compile(
    r"(?P<lead>(?:zoom|meeting|webex|teams|google[ \t]+meet|腾讯会议|會議|会议)[^\n]{0,80}?(?<![A-Za-z])"
    r"(?:passcode|password|pwd|密码|密碼)(?![A-Za-z])[ \t]*(?:[:：=]|is(?![A-Za-z]))?[ \t]*)"
    r"(?P<v>[A-Za-z0-9@#$%^&*!_+=.-]{4,32})(?![\x21-\x7e])",
    _I,
)
_MEETING_GATE = ("zoom", "meeting", "webex", "teams", "google meet", "会议", "會議")


def _meeting_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v").rstrip(_PW_TRAILING)
    if len(value) < 4 or value.lower() in _NOT_A_PASSWORD or _stand_in(value):
        return m.group(), 0
    return m.group("lead") + _tag("password") + m.group("v")[len(value) :], 1


# A bank's memorable word (set 21: "characters 2, 5 and 7 of my memorable word. The word is sycamore"): after the
# label, "is" / ":" or "the word is" within the next sentence, a word of letters (prose words stay).
_MEMORABLE = re.compile(
    r"(?P<lead>(?<![A-Za-z])memorable[ \t]+(?:word|phrase|name|place|date)s?(?![A-Za-z])"
    r"(?:[ \t]*(?:[:：=]|is|was)|[^\n]{0,80}?(?<![A-Za-z])(?:word|it|phrase)(?:[ \t]+is|[ \t]+was|'s)(?![A-Za-z]))"
    r"[ \t]*[\"'“‘]?)(?P<v>[A-Za-z][A-Za-z0-9'-]{2,40})(?![A-Za-z0-9])",
    _I,
)


def _memorable_action(m: re.Match[str]) -> tuple[str, int]:
    if m.group("v").lower() in _NOT_A_PASSWORD or m.group("v").lower() in _SQ_NOT:
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A value of Chinese characters and digits after 口令 / 暗号 / 密码 with a colon or 是 (set 21: "门禁口令：海棠4113"): a
# word with 3+ digits after it ("密码：大于8位" stays).
_ZH_WORD_CODE = re.compile(
    r"(?P<lead>(?:口令|暗号|暗號|密码|密碼)[ \t]*(?:[:：]|是|为|為)[ \t]*)"
    r"(?P<v>[\u4e00-\u9fff]{1,6}[0-9]{3,12}[A-Za-z]{0,8})(?![0-9A-Za-z])"
)

# A one-time code read out to a caller (set 21: "让我报 OTP，我说了469357"; "asked for the code and I read him
# 482915"): after OTP / 验证码 / code, a verb of telling, then 4 to 8 digits.
_OTP_TOLD = re.compile(
    r"(?P<lead>(?:(?<![A-Za-z])(?:otp|code|pin)(?![A-Za-z])|验证码|驗證碼|动态码|動態碼)[^\n。.!?！？0-9]{0,16}?"
    r"(?:说了|說了|报了|報了|念了|给了|給了|告诉(?:了)?(?:他|她|对方|他们)?|告訴(?:了)?(?:他|她|對方)?|发给(?:了)?(?:他|她|对方)"
    r"|(?<![A-Za-z])(?:read|gave|told|sent)[ \t]+(?:him|her|them|it)(?:[ \t]+to[ \t]+(?:him|her|them))?"
    r"|(?<![A-Za-z])(?:read|gave|told)[ \t]+(?:it|out))[ \t]*[:：]?[ \t]*)"
    r"(?P<v>(?<![0-9])[0-9]{4,8})(?![0-9])",
    _I,
)
_OTP_TOLD_GATE = ("otp", "code", "pin", "验证码", "驗證碼", "动态码", "動態碼")

# Backup codes listed on the lines after a long heading sentence (set 21: "These are my Google backup codes, which
# ones did I already use? ...:\n5022 6934\n4604 0470"): two or more lines holding one code each, each in a shape a
# service prints its codes in: Google's two groups of four digits, 8 to 10 digits, two groups of four letters and
# digits, GitHub's two groups of five hex digits (set 25: "GitHub recovery codes for the org bot account, putting the
# first three here until the vault is set up:\n  a6449-cd509\n  ..."; set 23's numbered list read them first).
_CODE_LINE_SHAPE = r"(?:[0-9]{4}[ \t]?[0-9]{4}|[0-9]{8,10}|[a-z0-9]{4}-[a-z0-9]{4}|[0-9a-f]{5}-[0-9a-f]{5})"
_CODE_LINES = re.compile(
    r"(?<![A-Za-z])(?:backup|recovery|verification|scratch|2fa|mfa)[ \t]+codes(?![A-Za-z])[^\n]{0,240}\r?\n"
    r"(?P<list>(?:[ \t]*" + _CODE_LINE_SHAPE + r"[ \t]*(?:\r?\n|\Z)){2,32})",
    _I,
)
# (each code whole: a shape may hold a shorter one, "6449-cd50" inside "a6449-cd509")
_CODE_LINE = re.compile(r"(?<![0-9A-Za-z])" + _CODE_LINE_SHAPE + r"(?=[ \t]*(?:\r?\n|\Z))", _I)


def _code_lines_action(m: re.Match[str]) -> tuple[str, int]:
    base = m.start()
    start = m.start("list") - base
    body, n = _CODE_LINE.subn(_tag("password"), m.group("list"))
    return m.group()[:start] + body, n


# A seed phrase of 9 to 24 words after its label in the same or the next sentence (set 21: "asked for my phrase and
# I typed it into their form: badge abandon awkward ..."): small words of 3 to 8 letters, no prose word among them.
_SEED_LOOSE = re.compile(
    r"(?<![A-Za-z])(?:seed|recovery|mnemonic|secret|backup)?[ \t]*(?:phrase|words)(?![A-Za-z])"
    r"[^\n]{0,80}?[:：][ \t]*\r?\n?"
    r"(?P<v>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){8,23})(?![A-Za-z])",
    _I,
)
_SEED_LOOSE_GATE = ("phrase", "words")
_SEED_PROSE = frozenset(
    "the and for but not you your are was were this that with from have has had what when where which who how "
    "can could would should will into onto them they then than there their here just only also very been".split()
)


def _seed_loose_action(m: re.Match[str]) -> tuple[str, int]:
    words = m.group("v").split()
    if (
        any(w.lower() in _SEED_PROSE or w.lower() in _NOT_A_PASSWORD for w in words)
        or not m.group("v").islower()
    ):
        return m.group(), 0
    return _swap_value("private_key")(m)


# A wallet's private key as 0x and 58 to 64 hex digits in a text that names a private key (set 21: "It asks for a
# private key and I have this from my old paper backup: 0xe9b3..."); a transaction hash or an address named just
# before it stays.
_HEX_WALLET_KEY = re.compile(r"(?<![0-9A-Za-z])(?P<v>0x[0-9a-fA-F]{58,64})(?![0-9A-Za-z])")
_HEX_WALLET_GATE = ("private key", "private_key", "privatekey", "私钥", "私鑰")
_HASH_BEFORE = re.compile(r"(?:tx|hash|txid|交易|哈希|address|地址)[^\n]{0,20}\Z", _I)


def _hex_wallet_action(m: re.Match[str]) -> tuple[str, int]:
    if _HASH_BEFORE.search(m.string, max(0, m.start() - 24), m.start()) is not None:
        return m.group(), 0
    return _tag("private_key"), 1


# What the set-21 rules need in the (lower-cased) text before they scan it: their rare parts, so a long paste that
# only says "code" or "comment" skips them.
_PW_SLANG_NEEDS = re.compile(r"[\u4e00-\u9fff]mm|秘码|蜜码|秘碼|蜜碼|mima")
_SPELLED_NEEDS = re.compile(_DIGIT_WORD + r"[ \t,-]+" + _DIGIT_WORD + r"(?![a-z])")
_SPELLED_NEEDS_ZH = re.compile(_CN_NUMERAL_T + "{4}")
_CODE_FIRST_NEEDS = re.compile(
    r"[0-9]{4}[ \t]*[)）]?[ \t]*(?:←|<-|(?:is|was)[ \t]+(?:the|my|our|his|her|their|your)|这|那|這|就|是)"
)
_VISITOR_NEEDS = re.compile(r"(?:code|码|碼)[^\n0-9]{0,40}?[0-9]{4}")
_OTP_TOLD_NEEDS = re.compile(r"(?:read|gave|told|sent)[ \t]+(?:him|her|them|it|out)")
_OTP_TOLD_NEEDS_ZH = re.compile(r"说了|說了|报了|報了|念了|给了|給了|告诉|告訴|发给")


# ---------------------------------------------------------------- set 22: configs, logs and chat

# A Dutch BSN a clause away from its label (`_BSN`'s long reach): the gap past 24 characters stays in the label's
# sentence and names no other kind of number ("No BSN needed. The member number is ..." stays).
_bsn_checked = _checked_action(_bsn_ok)


def _bsn_action(m: re.Match[str]) -> tuple[str, int]:
    gap = m.group("gap")
    if len(gap) > 24 and _BSN_GAP_OTHER.search(gap) is not None:
        return m.group(), 0
    return _bsn_checked(m)


# A YAML key naming a password whose scalar is on the next, deeper-indented line (set 22: "password:\n
# \"oh^J...\""), the key's name ending in the password word (`bind_password:`, `smtp_pass:`): a quoted scalar that
# is the whole line, or a plain one that looks like a password. Kept: a nested mapping on the next line
# ("password:\n  secretKeyRef:"), a list item, a reference ("${PG_PASSWORD}"), a word ("required").
_YAML_NEXT_LINE = re.compile(
    r"^(?P<ind>[ \t]*)(?:-[ \t]+)?(?P<key>[\w.-]{0,40}?(?:password|passwd|passphrase|pass|pwd))[ \t]*:[ \t]*"
    r"(?:#[^\n]*)?\r?\n"
    r"(?P=ind)[ \t]+(?:(?P<q>[\"'])(?P<qv>(?!\[REDACTED:)[^\s\"']{4,64})(?P=q)"
    r"|(?P<v>[^\s\"'#&*!|>%@`{}\[\],:-][^\s]{3,63}))"
    r"[ \t]*(?=\r?\n|\Z)",
    _I | re.MULTILINE,
)
_YAML_NEXT_LINE_NEEDS = re.compile(r"(?:pass(?:word|wd|phrase)?|pwd)[ \t]*:[ \t]*(?:#[^\n]*)?\r?\n")


def _yaml_next_line_action(m: re.Match[str]) -> tuple[str, int]:
    quoted = m.group("qv") is not None
    group = "qv" if quoted else "v"
    value = m.group(group)
    if (
        secret_kind_of_name(m.group("key")) != "password"  # the word starts a part of the name: not `bypass:`
        or _stand_in(value)
        or value.lower() in _NOT_A_PASSWORD
        or _DATE_OR_TIME.fullmatch(value)
        or (not quoted and (value.endswith(":") or ": " in value or not _pw_shaped(value)))
    ):
        return m.group(), 0
    whole, at = m.group(), m.start(group) - m.start()
    return whole[:at] + _tag("password") + whole[at + len(value) :], 1


# A value written first, then pointed back at as a password (set 22: "X——这个是路由器后台的管理密码", "X   <- that's
# the new pw for the router admin page"): a token, an arrow, a dash or a comma, then "that's / this is / it's" and
# the / my / our ... up to four words and the label, which ends its phrase (a stop, "for ...", "in case": not "the
# password reset script"); or 这(个)是 / 就是, a few words and 密码 / 口令 ending its phrase. The token must look like a
# password or be 4+ digits. Kept: "iPhone15Pro——这个是我现在用的手机型号，不是密码", "MacBookAir2020 <- that's the
# laptop, ...", "Reset done <- that's the password ...".
_PW_POINTED_POINTER = r"[ \t]*(?:←|⟵|⬅|<-{1,2}|—{1,2}|–|-{1,2}|[,，])"
_PW_POINTED_REST = (
    r"[ \t]*(?:(?:(?:that|it)['’]?s|(?:that|this|it)(?:['’]s|[ \t]+(?:is|was)))"
    r"[ \t]+(?:the|my|our|his|her|their|your)[ \t]+"
    r"(?:[\w'-]+[ \t]+){0,4}?(?:pass(?:word|code|phrase)|pwd|pw|pass|(?P<pin>pin))s?"
    r"(?=[ \t]*(?:[,.;:!?)\]]|\r?\n|\Z)|[ \t]+(?:for|to|of|on|at|in|we|i|you|so|and|but|from)(?![A-Za-z]))"
    r"|(?:(?:这|這|那)(?:个|個|串|條|条)?[ \t]*(?:就|也)?|就)是"
    r"[^\n，。,.!?！？；;：:、()（）0-9]{0,20}?(?:密码|密碼|口令)"
    r"(?=[\s，。,.!?！？；;：:、)）]|\Z|[了啊哦呀呢吧哈]))"
)
_PW_POINTED = re.compile(
    r"(?P<v>[\x21-\x7e](?<![\x21-\x7e][\x21-\x7e])[\x21-\x7e]{3,63})(?P<rest>"
    + _PW_POINTED_POINTER
    + _PW_POINTED_REST
    + ")",
    _I,
)
# (the pointer and the label after it, searched first from a character class: a long paste with commas and "pass" in
# it skips the rule, which would try every token as the value)
_PW_POINTED_NEEDS = re.compile(r"[←⟵⬅—–,，<-]-{0,2}" + _PW_POINTED_REST, _I)


def _pw_pointed_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.lstrip("\"'`“‘「『(").rstrip(_PW_TRAILING)
    if (
        len(secret) < 4
        or _MARK in value
        or "]" in secret
        or _stand_in(secret)
        or not (_pw_shaped(secret) or (secret.isdigit() and len(secret) >= 4))
        or (m.group("pin") is not None and not secret.isdigit())  # a pin on a map ("Cafe42, that's the pin")
    ):
        return m.group(), 0
    lead = value[: value.index(secret)]
    return lead + _tag("password") + value[len(lead) + len(secret) :] + m.group("rest"), 1


# A wallet's private keys listed as a Hardhat / Truffle network's `accounts` (set 22: `accounts:
# ["0x843f..."]`): each item of the list that is a quoted 0x and 64 hex digits (a transaction hash has that shape
# too, and is kept outside such a list; an address has 40 digits; `process.env.KEY` is a reference).
_ACCOUNTS_LIST = re.compile(
    r"accounts(?<![\w.$-]accounts)[\"'`]?[ \t]*[:=][ \t]*\[(?P<body>[^\[\]]{1,4000})\]", _I
)
_ACCOUNTS_ITEM = re.compile(r"(?P<q>[\"'`])(?P<v>0x[0-9a-fA-F]{64})(?P=q)")
_LIST_ITEM_BEFORE = re.compile(r"(?:\A|,)[ \t\r\n]*\Z")
_LIST_ITEM_AFTER = re.compile(r"[ \t\r\n]*(?:,|//|\Z)")


def _accounts_action(m: re.Match[str]) -> tuple[str, int]:
    body, base = m.group("body"), m.start("body") - m.start()
    found = 0
    out: list[str] = []
    end = 0
    for item in _ACCOUNTS_ITEM.finditer(body):
        if _LIST_ITEM_BEFORE.search(body, 0, item.start()) is None or not _LIST_ITEM_AFTER.match(
            body, item.end()
        ):
            continue
        out += [body[end : item.start("v")], _tag("private_key")]
        end = item.end("v")
        found += 1
    if not found:
        return m.group(), 0
    whole = m.group()
    return whole[:base] + "".join(out) + body[end:] + whole[base + len(body) :], found


# Recovery codes on the lines under a file's name that says so (set 22: "github-recovery-codes.txt, keep these
# safe:\n\n19333-5a2be\n..."): `_CODE_LINES` with the label's words joined by `-` / `_` too, blank lines before
# the codes, and GitHub's shape, two groups of five hex digits.
_CODE_FILE_LINES = re.compile(
    r"(?<![A-Za-z])(?:backup|recovery|verification|scratch|2fa|mfa)[_-]codes(?![A-Za-z])[^\n]{0,240}\r?\n"
    r"(?:[ \t]*\r?\n){0,3}"
    r"(?P<list>(?:[ \t]*(?:[0-9]{4}[ \t]?[0-9]{4}|[0-9]{8,10}|[a-z0-9]{4}-[a-z0-9]{4}|[0-9a-f]{5}-[0-9a-f]{5})"
    r"[ \t]*(?:\r?\n|\Z)){2,32})",
    _I,
)
_CODE_FILE_LINE = re.compile(
    r"[0-9]{4}[ \t]?[0-9]{4}|[0-9]{8,10}|[a-z0-9]{4}-[a-z0-9]{4}|[0-9a-f]{5}-[0-9a-f]{5}", _I
)


def _code_file_lines_action(m: re.Match[str]) -> tuple[str, int]:
    base = m.start()
    start = m.start("list") - base
    body, n = _CODE_FILE_LINE.subn(_tag("password"), m.group("list"))
    return m.group()[:start] + body, n


# A password flag with its value as the next item of a command array (set 22: compose's `command: ["redis-server",
# "--requirepass", "X"]`; k8s `args:` as a YAML list), or glued with `=` inside one item; and redis-server's own
# `--requirepass` / `--masterauth` on a command line (every redis.conf directive is a flag of redis-server). Kept: a
# reference (`${REDIS_PASSWORD}`, k8s `$(REDIS_PASSWORD)`), a path, another flag, a word of prose; a flag naming a
# file (`--password-file`) is another flag.
_PW_FLAG_NAME = r"--(?:requirepass|masterauth|(?:[a-z0-9]+[_-])*(?:password|passwd|pass|pwd))"
_FLAG_IN_ARRAY = re.compile(
    r"(?P<q1>[\"'])" + _PW_FLAG_NAME + r"(?:(?P=q1)[ \t]*,[ \t\r\n]*(?P<q>[\"'])(?P<v>[^\"'\n]{1,200})(?P=q)"
    r"|=(?P<g>[^\"'\s]{1,200})(?P=q1))"
    r"|^[ \t]*-[ \t]+(?P<q3>[\"']?)" + _PW_FLAG_NAME + r"(?P=q3)[ \t]*\r?\n[ \t]*-[ \t]+(?P<q4>[\"']?)"
    r"(?P<y>[^\s\"']{1,200})(?P=q4)[ \t]*(?=\r?\n|\Z)"
    r"|(?<![\w.\]-])redis-server(?:[ \t]+[^\s|;&]+){0,12}?[ \t]+--(?:requirepass|masterauth)[ \t]+(?P<cq>[\"']?)"
    r"(?P<c>[^\s\"'|;&]{1,200})(?P=cq)",
    _I | re.MULTILINE,
)
_FLAG_IN_ARRAY_NEEDS = re.compile(_PW_FLAG_NAME + r"(?![a-z0-9_-])")
_REDIS_FLAG = re.compile(r"requirepass|masterauth", _I)  # redis-server's own: any value that is no reference


def _flag_in_array_action(m: re.Match[str]) -> tuple[str, int]:
    group = next(g for g in ("v", "g", "y", "c") if m.group(g) is not None)
    value = m.group(group)
    generic = _REDIS_FLAG.search(m.group()) is None
    if (
        value.startswith(("-", "/", "~", _MARK))
        or _stand_in(value)
        or value.lower() in _NOT_A_PASSWORD
        or _READS_SECRET.match(value) is not None
        or (generic and not _pw_shaped(value))
    ):
        return m.group(), 0
    whole, at = m.group(), m.start(group) - m.start()
    return whole[:at] + _tag("password") + whole[at + len(value) :], 1


# A user / password pair right after a login page's name (set 22: "wp-admin is editor2 / Summit#953"): the page
# names where the pair signs in, as a word of signing in near the pair does for `_any_account_pair`.
_LOGIN_PAGE_BEFORE = re.compile(
    r"(?<![A-Za-z])(?:wp-admin|wp-login(?:\.php)?|phpmyadmin|cpanel|plesk|webmin|directadmin|(?:admin|management"
    r"|control)[ \t-]?(?:panel|page|console|portal|dashboard|area)|管理后台|后台|控制台)(?![A-Za-z])"
    r"[^\n]{0,12}?(?:[ \t]+(?:is|was)|[:：=]|是)[ \t]*[A-Za-z][A-Za-z0-9_.@-]{1,31}[ \t]+\Z",
    _I,
)


# A password label a long clause away from its value (set 22: "The pasword for the Synology NAS, which I had to reset
# last Tuesday ... twice because she kept using the old one, is harbor-Hazel-biscuit7."): the label (misspelt ones
# too) and a short qualifier, a comma and a relative or subordinate clause (which, that, who, since, because ...) of
# up to 240 characters in the same sentence, a comma, "is" / "was", and a value that looks like a password. Kept:
# "..., is stored in Bitwarden now", "..., is 12 characters".
_PW_FAR = re.compile(
    # (no PIN: its digits are no password-shaped value; the lookbehind after the first letter, so the engine skips to
    # a "p")
    r"p(?<![A-Za-z0-9_]p)(?:ass(?:word|wd|code|phrase)s?|ass[ \t-]phrase|wd|w"
    r"|as(?:wrod|word|wrd|wd)|ass(?:wrod|owrd|wrd|wod|ord)|ssw(?:or)?d|swd)(?![A-Za-z0-9_])"
    r"(?:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[\w@.'-]+){1,5}?)?"
    r"[ \t]*,[ \t]*(?:which|that|who|where|when|since|after|because|as|though|although)(?![A-Za-z])"
    r"(?:[^\n.!?;]|[.!?](?=\S)){0,240}?"
    r",[ \t]*(?P<lead>(?:is|was)(?:[ \t]+(?:still|now))?[ \t]+)[\"'`“‘]?(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64})",
    _I,
)
_PW_FAR_NEEDS = re.compile(r",[ \t]*(?:is|was)[ \t]")
# (the value ends its clause: a small word after it says it was a description, "is Argon2 based now")
_PW_FAR_AFTER = re.compile(r"[ \t]+(?!(?:and|but|so|if|please|pls|btw|thanks|ok)(?![A-Za-z]))[a-z]")


def _pw_far_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING + "!?")
    if (
        len(secret) < 6
        or _stand_in(secret)
        or secret.lower() in _NOT_A_PASSWORD
        # (a description, not a value: "is WPA2-protected", "is Argon2 based")
        or secret.rsplit("-", 1)[-1].lower() in _NOT_A_PASSWORD
        or (secret == value and _PW_FAR_AFTER.match(m.string, m.end()) is not None)
        or not _pw_shaped(secret)
        or _DATE_OR_TIME.fullmatch(secret)
        or _EMAIL.fullmatch(secret)
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A keypad's code after the keypad alone (set 22: "side gate keypad is 8-3-6-1#"): "keypad is / was / :" and 4 to
# 8 digits, or 4 to 8 single digits keyed one by one between dashes or spaces; a `#` or `*` after stays. Kept: "the
# keypad is broken", "the keypad is 3-4 years old", "the Yale keypad 2000 series" (no verb or colon).
_KEYPAD_CODE = re.compile(
    r"(?P<lead>k(?<![A-Za-z]k)eypad(?:['’]s)?(?:[ \t]+(?:is|was)(?:[ \t]+(?:still|now|set[ \t]+to))?|[ \t]*[:：=])"
    r"[ \t]*)(?P<v>(?<![0-9])(?:[0-9]{4,8}|[0-9](?:[ \t]*-[ \t]*[0-9]|[ \t][0-9]){3,7}))"
    r"(?![0-9A-Za-z]|[ \t]*-?[ \t]*[0-9]|[ \t]*(?:digits?|numbers?|characters?|chars?|years?|series|model))",
    _I,
)


# ---------------------------------------------------------------- forms added for the twenty-third set

# A card whose groups are joined by something other than a space or a dash (set 23: dots "5589.1641.0338.9328",
# full-width dashes, Amex slashes 4/6/5, groups over two lines): groups of 3 to 7 digits, one kind of joiner
# throughout (a line break may stand between groups of spaced digits), 13 to 19 digits with a known issuer's prefix
# and length and a valid Luhn digit. A version or a date never has that many digits in such groups.
_CARD_JOINED = re.compile(
    r"[2-6](?<![0-9A-Za-z_+./／－\\][2-6])[0-9]{2,6}"
    r"(?:(?P<j>[.／/－]|[ \t]*\r?\n[ \t]*)[0-9]{3,7}(?:(?P=j)[0-9]{3,7}){0,5}"
    r"|(?:[ \t][0-9]{3,7})*[ \t]*\r?\n[ \t]*[0-9]{3,7}(?:[ \t][0-9]{3,7})*)"
    r"(?![0-9A-Za-z_]|[./／－][0-9])"
)
_CARD_JOINED_NEEDS = re.compile(r"[0-9]{3}(?:[.／/－]|[ \t]*\n[ \t]*)[0-9]{3}")


def _card_joined_action(m: re.Match[str]) -> tuple[str, int]:
    digits = "".join(_GROUP.findall(m.group()))
    if 13 <= len(digits) <= 19 and _issuer_ok(digits) and _luhn_ok(digits):
        return _tag("card"), 1
    return m.group(), 0


# A card read aloud (set 23: "four four five three, two four four three, ..." and 六二二五 八八零八 ...): 13 to 19
# digit words or Chinese numerals in a row, with spaces, commas or dashes between; the issuer's prefix and length
# and the Luhn digit decide, so a count said in words never matches.
_WORD_DIGIT = {
    "zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}  # fmt: skip
_CN_DIGIT = dict(zip("零〇一二三四五六七八九幺两兩", "00123456789122", strict=True))
_CARD_SPOKEN = re.compile(
    r"(?<![A-Za-z])"
    + _DIGIT_WORD
    + r"(?:(?:[ \t]*[,，][ \t]*|[ \t]*-[ \t]*|[ \t]+)"
    + _DIGIT_WORD
    + r"){12,18}"
    r"(?![A-Za-z])",
    _I,
)
_CARD_SPOKEN_ZH = re.compile(
    _CN_NUMERAL_T + r"(?:[ \t,，、-]?" + _CN_NUMERAL_T + r"){12,18}(?!" + _CN_NUMERAL_T + ")"
)
# (a card read aloud is named a card: its words gate the rules, and the spelled-code rules' searches for two digit
# words or four numerals in a row, made once per text, are shared)
_CARD_SPOKEN_GATE = ("card", "卡", "visa", "amex", "master", "unionpay", "银联", "銀聯", "discover", "jcb")
_CARD_SPOKEN_WORD = re.compile(_DIGIT_WORD + "|" + _CN_NUMERAL_T, _I)


def _card_spoken_action(m: re.Match[str]) -> tuple[str, int]:
    digits = "".join(_WORD_DIGIT.get(w.lower()) or _CN_DIGIT[w] for w in _CARD_SPOKEN_WORD.findall(m.group()))
    if 13 <= len(digits) <= 19 and _issuer_ok(digits) and _luhn_ok(digits):
        return _tag("card"), 1
    return m.group(), 0


# A US ITIN (set 23: "she use ITIN 934-84-7002"): after its label, 9, two digits and a group of 50-65, 70-88, 90-92
# or 94-99 (the IRS's ranges), then four digits. An SSN's rule never takes it (no SSN starts with 9).
_ITIN = re.compile(
    r"(?P<lead>(?<![A-Za-z])(?:ITIN|individual[ \t]+taxpayer[ \t]+identification[ \t]+number)(?![A-Za-z])"
    r"[^0-9\n]{0,24}?)(?P<v>(?<![0-9])9[0-9]{2}([ -]?)[0-9]{2}\3[0-9]{4}(?![0-9]))",
    _I,
)


def _itin_ok(s: str) -> bool:
    group = int("".join(c for c in s if c.isdigit())[3:5])
    return 50 <= group <= 65 or 70 <= group <= 88 or 90 <= group <= 92 or 94 <= group <= 99


# An Italian codice fiscale (set 23): six letters of the name, the birth year, a month letter, the day (+40 for a
# woman), the town's code and a check letter; the check letter decides (odd places by the ministry's table).
_CODICE_FISCALE = re.compile(
    r"(?P<v>[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]{5}[0-9LMNPQRSTUV]{2}[ABCDEHLMPRST][0-9LMNPQRSTUV]{2}"
    r"[A-Z][0-9LMNPQRSTUV]{3}[A-Z](?![A-Za-z0-9]))"
)
_CF_ODD = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16,
         10, 22, 25, 24, 23),
        strict=True,
    )
)  # fmt: skip


def _codice_fiscale_ok(s: str) -> bool:
    total = 0
    for i, c in enumerate(s[:15]):
        total += _CF_ODD[c] if i % 2 == 0 else (int(c) if c.isdigit() else ord(c) - 65)
    return chr(65 + total % 26) == s[15]


# Mexico's CURP (set 26: "墨西哥同事的 CURP：RAOD760521HQTMRG22"): four letters of the name (the second a vowel or X),
# the birth date, the sex (H, M, or X), one of the 32 states' codes (or NE, born abroad), three consonants of the
# name, a character that tells the century and the check digit (RENAPO's: each of the first 17 characters' place in
# 0-9 A-N Ñ O-Z weighted 18 down to 2, the sum's complement to ten). So narrow a shape with its check needs no label.
_CURP = re.compile(
    r"(?P<v>[A-Z](?<![A-Za-z0-9][A-Z])[AEIOUX][A-Z]{2}[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])[HMX]"
    r"(?:AS|BC|BS|CC|CL|CM|CS|CH|DF|CX|DG|GT|GR|HG|JC|MC|MN|MS|NT|NL|OC|PL|QT|QR|SP|SL|SR|TC|TS|TL|VZ|YN|ZS|NE)"
    r"[B-DF-HJ-NP-TV-Z]{3}[0-9A-Z][0-9](?![A-Za-z0-9]))"
)
_CURP_CHARS = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ"


def _curp_ok(s: str) -> bool:
    total = sum(_CURP_CHARS.index(c) * (18 - i) for i, c in enumerate(s[:17]))
    return (10 - total % 10) % 10 == int(s[17])


# A server's session cookie named by its framework's name (set 23: "cookie 是 JSESSIONID=B32A...", no `Cookie:`
# header): JSESSIONID, PHPSESSID, ASP.NET_SessionId, ASPSESSIONID..., connect.sid, laravel_session, the value a
# generated one of 16+ characters.
_SESSION_COOKIE = re.compile(
    r"(?<![\w.-])(?P<lead>(?:JSESSIONID|PHPSESSID|ASP\.NET_SessionId|ASPSESSIONID[A-Z]{8}|connect\.sid"
    r"|laravel_session|CFTOKEN)[ \t]*=[ \t]*)(?P<v>[A-Za-z0-9%._~+/-]{16,400})(?![A-Za-z0-9%._~+/=-])",
    _I,
)
_SESSION_COOKIE_NEEDS = re.compile(r"sessionid|phpsessid|connect\.sid|laravel_session|cftoken")
_ITIN_NEEDS = re.compile(r"itin(?<![a-z]itin)(?![a-z])|taxpayer")


def _session_cookie_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    if _stand_in(value) or not (_token_like(value) or (len(value) >= 24 and any(c.isdigit() for c in value))):
        return m.group(), 0
    return m.group("lead") + _tag("api_key"), 1


# A password said again (set 23: "the alarm panel password is X, I repeat, X", "密码X，再念一遍：X"): after a
# replaced password, "I repeat / again / once more / 再念一遍 / 再说一遍 / 重复一遍" and the same kind of value
# (password-shaped, or 4+ digits) within 60 characters.
_PW_REPEATED = re.compile(
    r"\[REDACTED:password\](?P<mid>[^\n\[]{0,40}?(?:(?<![A-Za-z])(?:i[ \t]+repeat|repeat(?:ing)?|again|once[ \t]+more)"
    r"(?![A-Za-z])|再(?:念|说|說|读|讀|重复|重複)(?:一)?(?:遍|次)|重复一遍|重複一遍)[ \t]*[,，:：]?[ \t]*)"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64})(?![\x21-\x7e])",
    _I,
)


def _pw_repeated_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING)
    if len(secret) < 4 or _stand_in(secret) or not (_pw_shaped(secret) or secret.isdigit()):
        return m.group(), 0
    return _tag("password") + m.group("mid") + _tag("password") + value[len(secret) :], 1


# A value then "是 <a few words> password / 密码" (set 23: "Yanglei#2005 是 VPN password，..."): the value starts its
# line or sentence, looks like a password, and the label ends its phrase (a stop or the line's end after it).
_PW_THEN_IS = re.compile(
    r"(?P<v>[\x21-\x7e](?<![\x21-\x7e][\x21-\x7e])[\x21-\x7e]{5,63})(?P<rest>[ \t]*(?:就)?是[ \t]*"
    r"(?:(?:my|the|our|我的|我们的|公司的?|家里的?)[ \t]*)?(?:[A-Za-z][\w-]{0,15}[ \t]+){0,3}"
    # (the label ends the phrase: "Python3.12 是 password 校验脚本要的版本" is no password)
    r"(?:pass(?:word|code|phrase)|pwd|pw|密码|密碼|口令)(?=[ \t]*(?:[，。,.!?！？；;：:、)）]|\r?\n|\Z)))",
    _I,
)
# (from the 是: a character a text rarely holds, where the scan can start)
_PW_THEN_IS_NEEDS = re.compile(
    r"是(?:(?<=[\x21-\x7e]{6}是)|(?<=[\x21-\x7e]{6}[ \t]是)|(?<=[\x21-\x7e]{6}就是))"
)
_SENTENCE_START = re.compile(r"(?:\A|[\n。！？!?；;]|[.][ \t])[ \t]*\Z")


def _pw_then_is_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v")
    if (
        not _SENTENCE_START.search(m.string, max(0, m.start() - 4), m.start())
        or _MARK in secret
        or _stand_in(secret)
        or not _pw_shaped(secret)
        or _plain_word(secret)
    ):
        return m.group(), 0
    return _tag("password") + m.group("rest"), 1


# A password described by what it is made of, then given (set 26: "The password? It's the dog's name plus the year we
# got him, so Rufus2010.", "passcode？就是猫的名字加 2012，Bobo2012。", "你问密码啊。我生日后面加名字首字母：
# 19640207zn"): a password label, then on its line within 160 characters a recipe, a part people build passwords
# from (a name, a birthday, a year, initials, 生日, 名字, 首字母 ...) joined to another (plus, followed by, then, +,
# 加, 接, 跟), then ", so", a colon or a Chinese comma and the value, which looks like a password and holds a letter
# and a digit. Kept: the recipe alone ("密码是生日加名字首字母，你猜"), a word after it ("..., so easy to
# remember"), 加密.
_PW_RECIPE = re.compile(
    r"(?:(?<![A-Za-z])(?:pass(?:word|code|phrase)|pwd|pw)(?![A-Za-z])|密码|密碼|口令)"
    r"(?P<lead>[^\n]{0,160}?(?:,?[ \t]+so[ \t]+|[:：][ \t]*|，[ \t]*)[\"'`“‘]?)"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{6,64})",
    _I,
)
_RECIPE_PART = re.compile(
    r"(?<![A-Za-z])(?:name|birthday|birth[ \t]*date|(?:birth[ \t]*)?year|initials?|surname|dob)s?(?![A-Za-z])"
    r"|生日|名字|姓名|首字母|拼音|年份|出生|缩写|縮寫",
    _I,
)
_RECIPE_JOIN = re.compile(r"(?<![A-Za-z])(?:plus|followed[ \t]+by|then)(?![A-Za-z])|\+|加(?!密)|接|跟", _I)
_PW_RECIPE_NEEDS = re.compile(r"plus|followed[ \t]+by|then|\+|加(?!密)|接|跟")


def _pw_recipe_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING + "!?")
    lead = m.group("lead")
    if (
        len(secret) < 6
        or _RECIPE_PART.search(lead) is None
        or _RECIPE_JOIN.search(lead) is None
        or not (_has_letter(secret) and _has_digit(secret) and _pw_shaped(secret))
        or _stand_in(secret)
        or _EMAIL.fullmatch(secret)
        or _DATE_OR_TIME.fullmatch(secret)
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A vendor's factory default named as such (set 23: "routers ship with the default login admin/admin", "出厂默认的
# 管理账号和密码都是admin", "Grafana 默认账号 admin / admin"): a product's published default, no one's credential.
# Only the well-known default words, and only when "default / factory / ships with / 默认 / 出厂" stands within 60
# characters before.
_VENDOR_DEFAULT_VALUES = frozenset(
    ("admin", "password", "root", "guest", "default", "changeme", "user", "1234")
)
_VENDOR_DEFAULT_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])(?:default|factory|ships?[ \t]+with|out[ \t]+of[ \t]+the[ \t]+box)(?![A-Za-z])"
    r"|默认|默認|出厂|出廠)[^\n。.!?！？]{0,60}\Z",
    _I,
)


def _vendor_default(text: str, at: int, secret: str) -> bool:
    return (
        secret.lower() in _VENDOR_DEFAULT_VALUES
        and _VENDOR_DEFAULT_BEFORE.search(text, max(0, at - 80), at) is not None
    )


# A card's security code read digit by digit (set 23: "..., expires 04/30, security code 7 8 2"): after a replaced
# card, within 80 characters, its label and three or four single digits with spaces, commas or dashes between.
_CVV_SPACED = re.compile(
    r"\[REDACTED:card\](?P<mid>[^\n]{0,80}?(?:(?<![A-Za-z])(?:security[ \t]+code|cvv2?|cvc2?|cvn2?|cid)(?![A-Za-z])"
    r"|安全码|安全碼|背面(?:三|3|四|4)位(?:数字?|數字?)?)[ \t]*(?:is|[:：=]|是)?[ \t]*)"
    r"(?P<v>(?<![0-9])[0-9](?:(?:[ \t]+|[ \t]*[,-][ \t]*)[0-9]){2,3})(?![0-9])",
    _I,
)


def _cvv_spaced_action(m: re.Match[str]) -> tuple[str, int]:
    return _tag("card") + m.group("mid") + _tag("card"), 1


# A question and its answer on one line or the next, each marked (set 23: "Q: garage door code? A: 50372# (hold
# ...)", "Q：JumpServer 堡垒机 login 口令？\nA：L0tus*N4257（每 90 天 rotate 一次）"): the question names a password
# (or a door's, gate's, garage's or alarm's code), the answer starts with the value, which looks like a password
# (or is 4 to 8 digits, a `#` after it kept) and ends at a space, a bracket or a stop.
_QA_INLINE = re.compile(
    r"(?<![A-Za-z])Q[ \t]*[:：](?P<q>[^\n?？]{1,100})[?？][ \t]*(?:\r?\n[ \t]*)?A[ \t]*[:：][ \t]*"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64}?)(?=[#*]?(?:[ \t(（,，。;；]|\r?\n|\Z))"
)
_QA_CODE_LABEL = re.compile(
    r"(?<![A-Za-z])(?:door|gate|garage|alarm|lock|keypad|safe)[ \t]+(?:\w+[ \t]+)?(?:code|pin)(?![A-Za-z])"
    r"|门禁|門禁|门锁|門鎖",
    _I,
)
_QA_NEEDS = re.compile(r"q[ \t]*[:：][^\n?？]{1,100}[?？][ \t]*(?:\r?\n[ \t]*)?a[ \t]*[:：]")


def _qa_inline_action(m: re.Match[str]) -> tuple[str, int]:
    question, secret = m.group("q"), m.group("v")
    pw = _ASKED_LABEL.search(question)
    if pw is not None and (pw.group("key") is not None or pw.group("kz") is not None):
        pw = None  # a key's answer is the asked-on-lines rule's
    code = _QA_CODE_LABEL.search(question)
    if pw is None and code is None:
        return m.group(), 0
    digits = secret.isdigit() and 4 <= len(secret) <= 8
    if _stand_in(secret) or not (digits or (pw is not None and _pw_shaped(secret))):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A password label, a few words of the writer's own, then a colon or "已重置为 / 改为 / 设为" and the value (set 23:
# "支付密码我记一下：731604", "root 密码已重置为 bK2D..."): up to 8 characters with no stop between, the value
# password-shaped or 6 to 12 digits, ending its phrase. Kept: "密码规则如下：至少8位" (no value), "密码修改时间：
# 2024-01-01" (a date).
_PW_NOTE = re.compile(
    r"(?P<lead>(?:密码|密碼|口令)(?P<mid>[^\n，。！？,.:：;；\[\]]{1,8}?)"
    r"(?:[:：]|(?:已|被)?(?:重置|改|修改|设|設|设置|設置|更新|更改)(?:为|為|成))[ \t]*)"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64}?)(?=[ \t，。！？；、（(]|[,.;!?](?:\s|\Z)|\r?\n|\Z)"
)
_PW_NOTE_NEEDS = re.compile(r"(?:密码|密碼|口令)[^\n，。！？,.:：;；]{1,8}?(?:[:：]|为|為|成)")


def _pw_note_action(m: re.Match[str]) -> tuple[str, int]:
    secret = m.group("v")
    if (
        _stand_in(secret)
        or _DATE_OR_TIME.fullmatch(secret)
        or not (
            (secret.isdigit() and 6 <= len(secret) <= 12) or (_pw_shaped(secret) and not _plain_word(secret))
        )
    ):
        return m.group(), 0
    return m.group("lead") + _tag("password"), 1


# A two-column Markdown table of names and values (set 23: "| 访问密钥编号 | C419... |", "| 秘密访问密钥 | jjwc... |"):
# a row whose first cell names a key, a secret or an access key's id (`secret_kind_of_name`, or 访问密钥编号 /
# AccessKey ID / AK), the second a generated value alone in its cell.
_MD_ROW = re.compile(
    r"(?m)^[ \t]*\|[ \t]*(?P<n>[^|\n]{1,40}?)[ \t]*\|[ \t]*(?P<v>[A-Za-z0-9+/=_-]{12,200})[ \t]*(?=\|[ \t]*$)"
)
_MD_KEY_ID = re.compile(
    r"(?:访问密钥|訪問密鑰|access[ _-]?key)[ _-]?(?:编号|編號|id)|^(?:ak|sk)$",
    _I,
)
_MD_ROW_NEEDS = re.compile(
    r"\|[ \t]*[^|\n]*(?:密钥|密鑰|秘钥|key|secret|token)[^|\n]*\|[ \t]*[a-z0-9+/=_-]{12}"
)


def _md_row_action(m: re.Match[str]) -> tuple[str, int]:
    name, value = m.group("n").strip(), m.group("v")
    kind = secret_kind_of_name(name)
    if kind is None and _MD_KEY_ID.search(name) is not None:
        kind = "api_key"
    if kind is None or _stand_in(value) or not _token_like(value):
        return m.group(), 0
    whole, at = m.group(), m.start("v") - m.start()
    return whole[:at] + _tag(kind) + whole[at + len(value) :], 1


# Recovery codes under a Chinese heading, or numbered (set 23: "两步验证的恢复码存这儿：\n1. 7b6c7-861a0\n2. ..."): a
# heading line naming recovery / backup codes (恢复码, 备用码, 备份码, 救援码, or set 21's English words), then two
# or more lines each holding one code, a list number ("1." "2)" "3、") before it allowed.
_CODE_LIST_NUMBER = r"(?:[0-9]{1,2}[.)、][ \t]*)?"
_CODE_LINES_ZH = re.compile(
    r"(?:(?:恢复|恢復|备用|備用|备份|備份|救援|找回)(?:码|碼|代码|代碼)"
    r"|(?<![A-Za-z])(?:backup|recovery|verification|scratch|2fa|mfa)[ \t_-]+codes(?![A-Za-z]))[^\n]{0,120}\r?\n"
    r"(?P<list>(?:[ \t]*" + _CODE_LIST_NUMBER + _CODE_LINE_SHAPE + r"[ \t]*(?:\r?\n|\Z)){2,32})",
    _I,
)
_CODE_LINES_ZH_NEEDS = re.compile(
    r"(?:恢复|恢復|备用|備用|备份|備份|救援|找回)(?:码|碼|代码|代碼)|codes[^\n]{0,120}\n[ \t]*[0-9]{1,2}[.)、]"
)


def _code_lines_zh_action(m: re.Match[str]) -> tuple[str, int]:
    at = m.start("list") - m.start()
    body, n = _CODE_LINE.subn(_tag("password"), m.group("list"))
    return m.group()[:at] + body, n


# A password or an ID told in parts (set 23: "门锁密码前三位是 747。后三位 is 592",
# "我身份证前六位是430104。中间是出生日期19751226。最后四位是5516"): after a password's, a PIN's, a code's or an
# ID's label, two or three parts, each "the first / last / middle (N digits) is" and its digits, within 40
# characters of each other. One part alone (a card's last four, "尾号") is kept, and so is an ID's pair of parts
# (its middle not told).
_PART_ZH = (
    r"(?:前|后|後|最后|最後|末|中间|中間|剩下的?)(?:[0-9一二三四五六七八九十两兩]{1,2}位)?(?:数字|數字)?[ \t]*"
    r"(?:是|为|為|(?<![A-Za-z])is(?![A-Za-z])|[:：])?[ \t]*(?:出生日期|生日)?[ \t]*"
)
_PART_EN = (
    r"(?<![A-Za-z])(?:first|last|middle|second|other)[ \t]+(?:(?:two|three|four|five|six|half|[0-9])[ \t]+)?"
    r"(?:digits|numbers|part|half|bit)?[ \t]*(?:are|is|:)?[ \t]*"
)
_PART = r"(?:" + _PART_ZH + "|" + _PART_EN + ")"
_PARTS = re.compile(
    r"(?P<label>密码|密碼|口令|(?<![A-Za-z])(?:pin|passcode|password|code)(?![A-Za-z])|(?P<id>身份证|身份證))"
    r"(?:号|號|号码|號碼)?[^\n]{0,24}?" + _PART + r"(?P<v1>(?<![0-9])[0-9]{2,8})(?![0-9])"
    r"[^\n0-9]{0,40}?" + _PART + r"(?P<v2>(?<![0-9])[0-9]{2,8}[Xx]?)(?![0-9A-Za-z])"
    r"(?:[^\n0-9]{0,40}?" + _PART + r"(?P<v3>(?<![0-9])[0-9]{2,8}[Xx]?)(?![0-9A-Za-z]))?",
    _I,
)
# (a label, then a part's word within 24 characters; the scan starts at a p, a c or a 密 / 口)
_PARTS_NEEDS = re.compile(
    r"(?:p(?<![a-z]p)(?:in|asscode|assword)(?![a-z])|c(?<![a-z]c)ode(?![a-z])|密码|密碼|口令)[^\n]{0,24}?"
    r"(?:前|后|後|中间|中間|最后|最後|first|last|middle|second|other)"
)


def _parts_action(m: re.Match[str]) -> tuple[str, int]:
    names = ("v1", "v2", "v3") if m.group("v3") else ("v1", "v2")
    # an ID's parts must be all of it, with a valid check digit
    if m.group("id") is not None and (
        m.group("v3") is None or not _cn_id_ok("".join(m.group(n) for n in names))
    ):
        return m.group(), 0
    whole, base, out, last = m.group(), m.start(), [], 0
    for name in names:
        s, e = m.start(name) - base, m.end(name) - base
        out += [whole[last:s], _tag("national_id" if m.group("id") else "password")]
        last = e
    out.append(whole[last:])
    return "".join(out), len(names)


# A password told as its start and what follows (set 23: "The new safe password starts with Saffron. Then it's
# 54?d."): after a password's label, "starts / begins with X" and, within 30 characters, "then (it's) / followed by
# / ends with Y"; Y must hold a digit or a symbol, and X a capital, a digit or a symbol ("starts with capital
# letter then digits" is a rule, kept).
_PW_STARTS = re.compile(
    r"(?<![A-Za-z])(?:password|passcode|passphrase|pin|pw|pwd)(?![A-Za-z])[^\n.]{0,40}?"
    r"(?<![A-Za-z])(?:starts|begins)[ \t]+with[ \t]+(?P<v1>[\x21-\x7e]{3,32}?)(?=[.,;]?(?:\s|\Z))"
    r"[^\n]{0,30}?(?<![A-Za-z])(?:then(?:[ \t]+(?:it['’]?s|it[ \t]+is|comes))?|followed[ \t]+by|ends[ \t]+with)[ \t]+"
    r"(?P<v2>[\x21-\x7e]{2,32}?)(?=[.,;]?(?:\s|\Z))",
    _I,
)


def _pw_starts_action(m: re.Match[str]) -> tuple[str, int]:
    v1, v2 = m.group("v1"), m.group("v2")
    if (
        _MARK in v1 + v2
        or not any(c.isdigit() or c in "!@#$%^&*_+=?" for c in v2)
        or not any(c.isupper() or c.isdigit() or c in "!@#$%^&*_+=?" for c in v1)
        or v1.lower() in _NOT_A_PASSWORD
        or _stand_in(v1)
        or _stand_in(v2)
    ):
        return m.group(), 0
    whole, base = m.group(), m.start()
    a, b, c, d = (x - base for x in (m.start("v1"), m.end("v1"), m.start("v2"), m.end("v2")))
    return whole[:a] + _tag("password") + whole[b:c] + _tag("password") + whole[d:], 2


# ---------------------------------------------------------------- set 24
# A key under the bare word "Key" in Chinese text (set 24: "高德地图 Web 服务的 Key：83befad6..."): a Chinese character
# right before the word (a space between allowed) or a full-width colon after it says the label is a Chinese one
# naming a service's key, not a mapping's `key:`; the value is generated (16 to 128 letters and digits, both). Kept:
# a cache's, a table's, an object's or a translation's key (缓存 Key：user:1001, 主键 Key：order_id, 对象 Key：a/b.png).
_ZH_KEY = re.compile(
    r"(?P<lead>k(?<![A-Za-z0-9_]k)ey(?![A-Za-z0-9_])[ \t]*(?P<conn>[:：=＝]|是|为|為)[ \t]*[\"'`“]?)"
    r"(?P<v>(?!\[REDACTED:)[A-Za-z0-9+=_-]{16,128})(?![A-Za-z0-9+/=_.@:-])",
    _I,
)
_ZH_KEY_NEEDS = re.compile(r"key[ \t]*(?:[:：=＝]|是|为|為)")
_CJK_BEFORE = re.compile(r"[\u3400-\u9fff][ \t]?\Z")
_DATA_KEY_BEFORE = re.compile(
    r"(?:缓存|快取|主|外|分区|分區|排序|索引|唯一|联合|聯合|复合|複合|幂等|冪等|对象|對象|字典|翻译|翻譯|多语言|多語言"
    r"|公钥|公鑰|(?<![A-Za-z])(?:redis|cache|primary|foreign|sort|partition|hash|object|s3|oss|cos|idempotency|i18n"
    r"|json|public|publishable))"
    r"[ \t]*(?:的)?[ \t]*\Z",
    _I,
)


def _zh_key_action(m: re.Match[str]) -> tuple[str, int]:
    text, at = m.string, m.start()
    before = text[max(0, at - 16) : at]
    if (
        (m.group("conn") != "：" and _CJK_BEFORE.search(before) is None)
        or _DATA_KEY_BEFORE.search(before) is not None
        or _SSH_PUBLIC.match(text, m.start("v")) is not None
        or not _generated_key(m.group("v"))
    ):
        return m.group(), 0
    return m.group("lead") + _tag("api_key"), 1


# A password told after an aside (set 24: "the password — Karen changed it on Monday after the phishing thing, so the
# one in the wiki is dead — is now Walnut@067pixel", "至于密码嘛——换成了我们俩生日拼起来的那串，就是 12240927"): the
# label, an aside opened by a dash or a bracket (in Chinese a dash or a comma, a particle such as 嘛 / 的话 before
# it), up to 160 characters on the line, then what ends the aside and tells the value: in English a closing dash or
# bracket and "is" / "was" (or "is now" after a comma or a space), in Chinese 就是, 现在是, 换成了... The value looks
# like a password or is 4 to 12 digits (not a count: "就是 2024 年"). The aside's first word is no value
# (`_labelled_value`).
# (the label's first letter, then its lookbehind, so the scan can skip to a "p")
_ASIDE_LABEL = (
    r"p(?<![A-Za-z0-9_]p)(?:ass(?:word|wd|code|phrase)s?|ass[ \t-]phrase|wd|w|(?-i:(?<=P)IN))(?![A-Za-z0-9_])"
)
_ASIDE_CLOSE_EN = (
    r"(?:[ \t]*(?:—{1,2}|–|(?<=[ \t])--?|\))[ \t]*(?:is|was)(?:[ \t]+(?:now|still|actually))?"
    r"|[ \t]*,?[ \t]+(?:is|was)[ \t]+now)(?![A-Za-z'])[ \t]*[:：]?[ \t]*"
)
_PW_ASIDE = re.compile(
    r"(?P<label>" + _ASIDE_LABEL + r")(?:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[\w@.'-]+){1,4}?)?"
    r"[ \t]*(?:—{1,2}|–|[ \t]--?(?=[ \t])|\()[^\n—–()]{3,160}?"
    r"(?P<lead>" + _ASIDE_CLOSE_EN + r")[\"'`“‘]?(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64})",
    _I,
)
# (a label and an aside's opening within 60 characters)
_PW_ASIDE_NEEDS = re.compile(r"p(?<![a-z0-9_]p)(?:ass|w|in)[^\n]{0,60}?(?:—|–|[ \t]--?[ \t]|\()")
_PW_ASIDE_ZH = re.compile(
    r"(?P<label>密码|密碼|口令|(?<![A-Za-z])(?:password|passcode|pin|PIN)(?![A-Za-z]))"
    r"[ \t]*(?:嘛|呢|啊|吧|的话|的話|这块|這塊|这个|這個|方面)?[ \t]*(?:——|—|–|--|[，,（(])[ \t]*"
    r"[^\n。！？!?；;]{1,80}?[，,、]?[ \t]*"
    r"(?P<lead>(?:也就是|就是|即|现在是|現在是|现在为|現在為|新的是|换成了?|換成了?|改成了?|设成了?|設成了?|改为|改為|换为|換為)"
    r"[ \t]*[:：]?[ \t]*)[\"'`“‘「]?"
    r"(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64}?)(?=[ \t，。！？；、（(」”’\"']|[,.;!?](?:\s|\Z)|\r?\n|\Z)",
    _I,
)
_PW_ASIDE_ZH_NEEDS = re.compile(
    r"(?:密码|密碼|口令|password|passcode|pin)[^\n。！？]{0,8}?(?:——|—|–|--|[，,（(])[^\n。！？]{1,90}?"
    r"(?:就是|即|现在是|現在是|现在为|現在為|新的是|换成|換成|改成|设成|設成|改为|改為|换为|換為)"
)
# (a number a unit follows is a count, a year or a size: "就是 2024 年", "is now 12 chars")
_UNIT_AFTER = re.compile(
    r"[ \t]*(?:年|月|日|号|號|位|个|個|次|点|點|分钟|分鐘|秒|元|块|塊|岁|歲|天|小时|小時|字|%|chars?(?![A-Za-z])"
    r"|characters?(?![A-Za-z])|digits?(?![A-Za-z])|days?(?![A-Za-z])|times?(?![A-Za-z]))",
    _I,
)
# what closes a dash's aside after a label, and the value it tells (the aside's first word is then no value,
# `_labelled_value`)
_ASIDE_CLOSES = re.compile(
    r"[^\n—–()]{0,160}?(?:—|–|[ \t]--?[ \t]|\))[ \t]*(?:is|was)(?:[ \t]+(?:now|still|actually))?(?![A-Za-z'])"
    r"[ \t]*[:：]?[ \t]*[\"'`“‘]?(?P<next>[\x21-\x7e]{4,64})",
    _I,
)


def _aside_tells_value(text: str, at: int) -> bool:
    """An aside starting at `at` closes with "— is" / ") was" and a value after it (or its placeholder)."""
    m = _ASIDE_CLOSES.match(text, at)
    if m is None:
        return False
    told = m.group("next").rstrip(_PW_TRAILING + "!?")
    return told.startswith(_MARK) or _pw_shaped(told) or (told.isdigit() and len(told) >= 4)


_ASIDE_DASH = re.compile(r"[ \t]*(?:[—–]+|-{1,2})[ \t]*\Z")


def _pw_aside_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING + "!?")
    digits = secret.isdigit() and 4 <= len(secret) <= 12
    if (
        not secret
        or _stand_in(secret)
        or _DATE_OR_TIME.fullmatch(secret)
        or _EMAIL.fullmatch(secret)
        or (digits and _UNIT_AFTER.match(m.string, m.start("v") + len(secret)) is not None)
        or not (
            digits
            or (
                len(secret) >= 6
                and _pw_shaped(secret)
                and secret.lower() not in _NOT_A_PASSWORD
                and (secret != value or _PW_FAR_AFTER.match(m.string, m.end()) is None)
            )
        )
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# A PIN (or a password) told as an aside in a sentence, after where it is written (set 24: "He wrote his card PIN on a
# post-it stuck to the card itself, 7315, and I told him ..."; "他把银行卡密码写在便利贴上，贴在卡背面，7315，..."): the
# label, a clause that says where it is kept (on / under / behind / stuck / taped / written ..., 写在 / 贴在 / 记在 ...)
# with no digit in it, a comma, and the value set off by a comma, a stop or "and". A PIN's value is 4 to 8 digits, a
# password's looks like one. Kept: "the PIN on the card, 4 digits", "my PIN in March, 2024, ..." (a month before).
_PIN_TOLD = re.compile(
    r"(?P<label>(?-i:PIN)(?:[ \t]*(?:code|number))?|(?<![A-Za-z])(?:(?:card|bank|debit|atm|sim)[ \t]+pin"
    r"|passcode|password|passwd)(?![A-Za-z]))"
    r"[ \t]+(?:on|under|behind|inside|in|taped|stuck|written|scribbled|kept|hidden|stored|jotted)(?![A-Za-z])"
    r"[^\n0-9.;:!?]{1,120}?,[ \t]*(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64}?)"
    r"(?=[ \t]*(?:,|;|\.(?:\s|\Z)|\)|\r?\n|\Z)|[ \t]+(?:and|but|so)(?![A-Za-z]))",
    _I,
)
_PIN_TOLD_ZH = re.compile(
    r"(?P<label>密码|密碼|口令|(?-i:PIN)码?)"
    r"[^\n。！？!?；;0-9]{0,40}?(?:写在|寫在|贴在|貼在|记在|記在|抄在|存在|放在|藏在|写到|寫到|记到|記到|夹在|夾在)"
    r"[^\n。！？!?；;0-9]{1,40}?[，,][ \t]*(?P<v>(?!\[REDACTED:)[\x21-\x7e]{4,64}?)"
    r"(?=[ \t]*(?:[，,。；;！!）)]|\r?\n|\Z))",
    _I,
)
_PIN_TOLD_NEEDS = re.compile(
    r"(?:pin|passcode|password|passwd)[ \t]+(?:on|under|behind|inside|in|taped|stuck|written|scribbled|kept|hidden"
    r"|stored|jotted)[ \t][^\n0-9.;:!?]{1,120}?,[ \t]*[\x21-\x7e]{4}"
)
_PIN_TOLD_ZH_NEEDS = re.compile(
    r"(?:写在|寫在|贴在|貼在|记在|記在|抄在|存在|放在|藏在|写到|寫到|记到|記到|夹在|夾在)[^\n。！？!?；;0-9]{1,40}?[，,]"
)
_MONTH_BEFORE = re.compile(
    r"(?<![A-Za-z])(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*[ \t]*,[ \t]*\Z", _I
)


def _pin_told_action(m: re.Match[str]) -> tuple[str, int]:
    value = m.group("v")
    secret = value.rstrip(_PW_TRAILING + "!?")
    label = m.group("label").lower()
    pin = "pin" in label
    if (
        _stand_in(secret)
        or _MONTH_BEFORE.search(m.string, max(0, m.start("v") - 16), m.start("v")) is not None
        or _UNIT_AFTER.match(m.string, m.start("v") + len(secret)) is not None
        or not (
            (secret.isdigit() and 4 <= len(secret) <= 8)
            or (not pin and len(secret) >= 6 and _pw_shaped(secret) and not _DATE_OR_TIME.fullmatch(secret))
        )
    ):
        return m.group(), 0
    return _tag_value_head(m, len(secret), "password")


# The set-22 rules' gates: the password words of their labels and flags (one search for four rules), and the rare
# words the other three need (one search, then the word itself).
_SET22_PW_GATE = ("pass", "pw", "pin", "pasw", "pssw", "pswd", "masterauth", "密码", "密碼", "口令")
_SET22_RARE_GATE = ("accounts", "_codes", "-codes", "keypad")
_SET23_RARE_GATE = (
    "itin", "taxpayer", "sessionid", "phpsessid", "connect.sid", "laravel_session", "cftoken", "q:", "q：", "q :",
    "q ：", "|", "码", "碼", "codes", "身份证", "身份證", "starts with", "begins with",
)  # fmt: skip
_ID_PARTS_NEEDS = re.compile(r"(?:身份证|身份證)[^\n]{0,30}?(?:前|后|後|中间|中間|最后|最後)")
_PW_STARTS_NEEDS = re.compile(r"(?:starts|begins)[ \t]+with")
_ACCOUNTS_NEEDS = re.compile("accounts")
_CODE_FILE_NEEDS = re.compile("[_-]codes")
_KEYPAD_NEEDS = re.compile("keypad")


_RULES: tuple[_Rule, ...] = (
    # Multi-line and structured secrets first, so their inner digits/words never feed the narrower rules.
    _Rule("private_key", _PRIVATE_KEY, _swap("private_key"), ("private key",)),
    _Rule("private_key", _PEM_B64, _swap("private_key", _pem_b64_ok), _SIXTH_GATE),
    _Rule("private_key", _DER_B64, _swap("private_key", _der_private_ok), _DER_GATE),
    _Rule("password", _TABLE, _table_action, ("\n",), needs=_TABLE_WORDS),
    _Rule("jwt", _JWT, _swap("jwt"), ("eyj",)),
    *(_Rule("api_key", _api_pattern(p), _key_action(c), g) for p, c, g in _API_RULES),
    _Rule("api_key", _AWS_SECRET, _aws_secret_action, ("secret",)),
    _Rule("api_key", _BEARER, _bearer_action, ("bearer",)),
    # a TOTP key in groups of four, before the password rules can read one group as a value ("E2PW 7JZ7")
    _Rule("api_key", _TOTP_GROUPED, _totp_action, _TOTP_GATE, _TOTP_HEAD, True),
    # a hex secret in groups after its label, before a label's rule reads the first group as its value
    _Rule("api_key", _HEX_GROUPED, _hex_groups_action, _KEY_GATE, _HEX_HEAD, True),
    _Rule("password", _URL_PASSWORD_WIDE, _url_password_wide_action, ("://",)),
    _Rule("password", _URL_PASSWORD, _url_password_action, ("://",)),
    _Rule("password", _GO_DSN, _url_password_action, _GO_DSN_GATE),
    _Rule("password", _BASIC, _basic_action, ("basic",)),
    _Rule("password", _ENV_PASSWORD, _assigned_action, ("pass", "pwd", "_auth")),
    _Rule("password", _CLI_PASSWORD, _assigned_action, ("mysql", "mariadb", "sshpass")),
    _Rule("password", _CLI_FLAG_PASSWORD, _assigned_action, _TOOL_GATE),
    _Rule("password", _CLI_USER_PASSWORD, _assigned_action, _TOOL_GATE),
    _Rule("password", _CONF_PASSWORD, _assigned_action, _TOOL_GATE),
    _Rule("password", _CONF_PROSE, _conf_prose_action, _CONF_GATE[:5]),
    _Rule("password", _STDIN_PASSWORD, _stdin_action, _TOOL_GATE, needs=_STDIN_NEEDS),
    _Rule("password", _DEVICE_CONFIG, _device_config_action, _CONFIG_FORMS_GATE),
    _Rule("api_key", _KEY_TOOL, _key_tool_action, _CONFIG_FORMS_GATE),
    _Rule("api_key", _MC_ALIAS, _mc_alias_action, _CONFIG_FORMS_GATE),
    _Rule("api_key", _KEY_FLAG, _swap("api_key", _generated_key), _CONFIG_FORMS_GATE),
    _Rule("password", _DOCKER_AUTH, _docker_auth_action, _CONFIG_FORMS_GATE),
    _Rule("password", _XML_SECRET, _xml_secret_action, _XML_GATE),
    _Rule("password", _B64_JSON, _b64_json_action, ("eyj", "ewo", "ew0")),
    _Rule("password", _PLAIN_TO_SECURE, _swap("password", lambda v: not _stand_in(v)), _PLAIN_TO_SECURE_GATE),
    _Rule("password", _APP_SETTING, _app_setting_action, _SIXTH_GATE),
    _Rule("password", _PGPASS, _swap("password", lambda v: not _stand_in(v)), _SIXTH_GATE),
    _Rule("api_key", _ZHIPU, _swap("api_key", lambda v: _key_piece(v.split(".")[1])), _SIXTH_GATE),
    _Rule("api_key", _COOKIE, _cookie_action, ("cookie", "curl")),
    _Rule("api_key", _URL_SECRET, _url_signature_action, _URL_SECRET_GATE),
    _Rule("private_key", _SEED, _seed_action, _SEED_GATE, _SEED_HEAD, True),
    _Rule("password", _SPELLED, _spelled_action, _SPELL_GATE, _SPELL_HEAD, True),
    _Rule("password", _SPLIT, _split_action, _SPLIT_GATE, _SPLIT_HEAD, True),
    # a Wi-Fi password in groups, before a password label's rule takes its first group alone
    _Rule("password", _WIFI_PW_GROUPS, _wifi_pw_groups_action, _WIFI_PAIR_GATE, _WIFI_PW_GROUPS_HEAD, True),
    # a Wi-Fi network / password pair before the pair rules read "ssid/pass: net / pw" as a label and a value
    _Rule("password", _WIFI_PAIR, _wifi_pair_action, _WIFI_PAIR_GATE, _WIFI_PAIR_HEAD, True),
    # Labels listed, then their values ("分别是 X 和 Y"), before a label's own rule takes the first value alone.
    _Rule("api_key", _RESPECTIVE, _respective_action, _SLASH_GATE, needs=_RESPECTIVE_NEEDS),
    # Pairs before single labels, so that only the password of "user / pass" is replaced.
    _Rule("password", _PAIR_LABELLED, _pair_action, _PAIR_GATE, _PAIR_HEAD, True, run_on=_RUN_ON),
    _Rule("password", _CREDENTIALS, _pair_action, _CREDENTIAL_GATE, _CREDENTIAL_HEAD, True, run_on=_RUN_ON),
    _Rule("password", _CREDENTIALS_ZH, _pair_action, ("登录", "登陆", "登入", "登錄")),
    _Rule("password", _CHANGE_HEAD, _change_action, _CHANGE_GATE, _CHANGE_LABEL_HEAD, True),
    _Rule("password", _SPACED_LABEL, _spaced_label_action, _SPACED_GATE),
    _Rule("password", _ASKED, _asked_action, ("?", "？"), needs=_ASKED_NEEDS),
    # a PIN said digit by digit before the labels' rules take its first digit as the value ("密码是 3 9 1 7")
    _Rule("password", _SPOKEN_PIN, _spoken_pin_action, _SPOKEN_PIN_GATE, needs=_SPOKEN_PIN_NEEDS),
    _Rule("password", _PROSE_BOXES, _pw_prose_action, _PROSE_BOXES_GATE, _PROSE_BOXES_HEAD, True),
    _Rule("password", _AGREED, _agreed_action, ("agreed", "settled"), _AGREED_HEAD, True),
    _Rule(
        "private_key",
        _PRIVATE_LABELLED,
        _to_private,
        _PRIVATE_GATE,
        re.compile(_HEAD_PRIVATE, _I),
        True,
        run_on=_KEY_RUN_ON,
    ),
    _Rule(
        "api_key", _KEY_LABELLED, _to_api_key, _KEY_GATE, re.compile(_HEAD_KEY, _I), True, run_on=_KEY_RUN_ON
    ),
    _Rule("password", _PW_LABELLED, _to_password, _PW_GATE, re.compile(_HEAD_PW, _I), True, run_on=_RUN_ON),
    # set 21: misspelt and slang labels, security answers, spelled-out codes, meeting passcodes
    _Rule("password", _PW_SLANG, _to_password, _PW_SLANG_GATE),
    _Rule("password", _PW_SLANG, _to_password, _PW_SLANG_GATE_ZH, needs=_PW_SLANG_NEEDS),
    _Rule("password", _SQ_PAIR, _sq_action, _SQ_GATE),
    _Rule("password", _SQ_ANSWER, _sq_action, _SQ_GATE),
    _Rule("password", _SPELLED_CODE, _spelled_code_action, _CODE_FIRST_GATE, needs=_SPELLED_NEEDS),
    _Rule("password", _SPELLED_CODE, _spelled_code_action, _CODE_FIRST_GATE, needs=_SPELLED_NEEDS_ZH),
    _Rule("password", _SPELLED_CODE, _spelled_code_action, _CODE_FIRST_GATE, needs=_SPELLED_NEEDS_REPEATED),
    _Rule("password", _MEETING_PASSCODE, _meeting_action, _MEETING_GATE),
    _Rule("password", _MEMORABLE, _memorable_action, ("memorable",)),
    _Rule("password", _ZH_WORD_CODE, _swap_value("password"), ("口令", "暗号", "暗號", "密码", "密碼")),
    _Rule("password", _PW_NEXT_LINE, _pw_next_line_action, _PW_GATE, re.compile(_HEAD_PW, _I), True),
    _Rule(
        "password",
        _PW_IN_BRACKETS,
        _pw_in_brackets_action,
        _PW_GATE,
        re.compile(_PW_IN_BRACKETS_LABEL, _I),
        True,
    ),
    _Rule(
        "password",
        _PW_BRACKETED,
        _pw_bracketed_action,
        _PW_GATE,
        re.compile(_PW_IN_BRACKETS_LABEL, _I),
        True,
    ),
    _Rule("password", _CREDENTIAL_VALUE, _credential_value_action, _CREDENTIAL_VALUE_GATE),
    _Rule("password", _PW_BEFORE, _pw_before_action, _PW_BEFORE_GATE, None, True),
    _Rule(
        "password", _FOREIGN_PW, _foreign_pw_action, _FOREIGN_PW_GATE, _FOREIGN_PW_HEAD, True, run_on=_RUN_ON
    ),
    _Rule("password", _MI, _mi_action, ("密",)),
    _Rule("password", _MAIL_AUTH_CODE, _swap_value("password"), ("授权码", "授權碼")),
    _Rule("password", _PIN_CODE, _pin_action, _PIN_CODE_GATE, _PIN_HEAD, True),
    _Rule("password", _WIFI_QR, _wifi_qr_action, ("wifi:",)),
    _Rule(
        "password",
        _PRINTED_BY,
        _printed_action,
        ("base64", "pass show", "vault", "secretsmanager", "op read"),
    ),
    _Rule("password", _OTP, _otp_action, _OTP_GATE, _OTP_HEAD, True),
    # (not windowed: a sender's name of up to four words may put the code beyond a window's reach from "code",
    # set 20: "155786 is your Northfield Bank verification code")
    _Rule("password", _OTP_FIRST, _otp_first_action, ("your", "您的", "你的")),
    _Rule("password", _WIFI_KEY, _wifi_key_action, _WIFI_GATE, _WIFI_HEAD, True, _WIFI_CONTEXT),
    _Rule("password", _DB_CALL, _db_call_action, _DB_CALL_GATE, _DB_CALL_HEAD, True),
    _Rule("national_id", _PASSPORT, _swap_value("national_id"), _PASSPORT_GATE, _PASSPORT_HEAD, True),
    _Rule("national_id", _MRZ, _swap("national_id", _mrz_ok), ("<",)),
    _Rule("national_id", _MRZ_TD1, _swap("national_id", _mrz_td1_ok), ("<",)),
    _Rule("card", _CVV, _swap_value("card"), _CVV_GATE, _CVV_HEAD, True),
    _Rule("card", _CVV_NAMED, _cvv_named_action, _CVV_NAMED_GATE, _CVV_NAMED_HEAD, True),
    # numbers of a fixed grouping before the card rule can read a Luhn-valid stretch of them as a card
    _Rule("api_key", _BITLOCKER, _checked_action(_bitlocker_ok, "api_key"), _DIGITS, needs=_LONG_NUMBER),
    _Rule("national_id", _RRN_OR_NIR, _checked_action(_rrn_or_nir_ok), _DIGITS, needs=_LONG_NUMBER),
    # Chinese IDs before cards: an 18-digit ID starting 62/65/35 could also pass as a Luhn-valid card.
    _Rule("cn_id", _BROKEN_NUMBER, _broken_number_action("cn_id"), ("\n",), needs=_BROKEN_NEEDS),
    _Rule("card", _BROKEN_NUMBER, _broken_number_action("card"), ("\n",), needs=_BROKEN_NEEDS),
    _Rule("cn_id", _CN_ID_RUN, _cn_id_action, _DIGITS, needs=_LONG_NUMBER),
    _Rule("card", _DIGIT_RUN, _card_action, _DIGITS, needs=_LONG_NUMBER),
    _Rule("api_key", _KEY_WRAPPED, _key_wrapped_action, after="api_key"),
    _Rule("api_key", _KEY_AND_KEY, _key_and_key_action, after="api_key"),
    _Rule("password", _PW_AND_PW, _pw_and_pw_action, after="password"),
    _Rule("password", _PW_SLASH_PARTNER, _pw_slash_partner_action, after="password"),
    _Rule("card", _CVV_AFTER_CARD, _swap_value("card"), after="card"),
    _Rule("card", _CVV_NEAR_CARD, _cvv_near_card_action, after="card"),
    _Rule("card", _CARD_EXPIRY, _swap_value("card"), after="card"),
    _Rule("ssn", _SSN, _ssn_action, _DIGITS, needs=_LONG_NUMBER),
    _Rule("ssn", _SSN_LABELLED, _ssn_action, ("ssn", "social")),
    _Rule(
        "national_id",
        _BSN,
        _bsn_action,
        ("bsn", "burgerservice", "sofinummer", "sofi-", "sofi "),
    ),
    _Rule("national_id", _PESEL, _checked_action(_pesel_ok), ("pesel",)),
    _Rule("national_id", _CPF, _checked_action(_cpf_ok), _DIGITS),
    _Rule("national_id", _CPF_LABELLED, _checked_action(_cpf_ok), ("cpf",)),
    _Rule("national_id", _DNI, _checked_action(_dni_ok), ("dni", "nif", "nie ", "nie:", "nie：")),
    _Rule("national_id", _NINO, _checked_action(lambda v: True), ("insurance", "nino", "ni no", "ni number")),
    # a letter and 9 digits passes the Taiwan check one time in ten: only where an identity card is named
    _Rule("national_id", _TW_ID, _checked_action(_tw_id_ok), _ID_CARD_WORDS),
    _Rule("national_id", _HKID, _checked_action(_hkid_ok), _ID_CARD_WORDS),
    _Rule("national_id", _AADHAAR, _aadhaar_action, ("aadhaar", "aadhar", "uidai", "आधार")),
    # numbers of 9+ digits after their label: run only where both are in the text
    _Rule("national_id", _CA_SIN, _checked_action(_sin_ok), _DIGITS, needs=_LONG_NUMBER),
    _Rule("national_id", _SE_PNR, _checked_action(_se_pnr_ok), _DIGITS, needs=_LONG_NUMBER),
    _Rule("national_id", _DE_TAX_ID, _checked_action(_de_tax_id_ok), _DIGITS, needs=_LONG_NUMBER),
    _Rule("national_id", _SG_NRIC, _checked_action(_nric_ok), _NRIC_CONTEXT, None, True),
    _Rule("national_id", _MY_NUMBER, _checked_action(_my_number_ok), _SIXTH_GATE),
    _Rule("password", _SQL_INSERT, _sql_insert_action, ("insert",)),
    _Rule(
        "password",
        _SQL_CREDENTIAL,
        _sql_credential_action,
        ("identified by", "identified with", "set password"),
    ),
    _Rule("password", _ORACLE_CONNECT, _oracle_action, _SLASH_GATE, needs=_ORACLE_NEEDS),
    _Rule("password", _ACCOUNT_PAIR, _account_pair_action, _SLASH_GATE),
    _Rule(
        "national_id",
        _IN_PAN,
        _swap_value("national_id"),
        ("pan", "permanent"),
        re.compile(_IN_PAN_LABEL, _I),
        True,
    ),
    _Rule("iban", _IBAN, _checked_action(_iban_ok, "iban"), _DIGITS),
    _Rule("bank_account", _BANK_ACCOUNT, _bank_account_action, _BANK_GATE),
    _Rule("api_key", _AK_SK, _swap_value("api_key"), _AK_SK_GATE),
    _Rule("api_key", _SHORT_KEY_LABEL, _swap("api_key", _generated_key), _SHORT_KEY_GATE),
    _Rule("password", _CODES, _codes_action, _CODE_GATE),
    _Rule("password", _CODES, _codes_action, _CODE_GATE_WIDE, needs=_CODE_LABEL_WIDE),
    # last: a user:password pair needs the sentence to speak of signing in, and must not eat what the
    # narrower rules above recognise
    _Rule("password", _USER_COLON_PASS, _user_pass_action, (":",)),
    # set 21: a code before its label, a code to a visitor or read to a caller, codes on lines, seeds, wallet keys
    _Rule("password", _CODE_FIRST, _code_first_action, _CODE_FIRST_GATE, needs=_CODE_FIRST_NEEDS),
    _Rule("password", _VISITOR_CODE, _visitor_action, _VISITOR_GATE, needs=_VISITOR_NEEDS),
    _Rule("password", _OTP_TOLD, _swap_value("password"), _OTP_TOLD_GATE, needs=_OTP_TOLD_NEEDS),
    _Rule("password", _OTP_TOLD, _swap_value("password"), _OTP_TOLD_GATE, needs=_OTP_TOLD_NEEDS_ZH),
    _Rule("password", _CODE_LINES, _code_lines_action, ("codes",)),
    _Rule("private_key", _SEED_LOOSE, _seed_loose_action, _SEED_LOOSE_GATE),
    _Rule("private_key", _HEX_WALLET_KEY, _hex_wallet_action, _HEX_WALLET_GATE),
    # set 22: a YAML value on the next line, a value pointed back at, a wallet key list, recovery codes under a file's
    # name, a password flag in a command array, a label a clause away, a keypad's code
    # (two shared gates, each searched once for its rules: the password words, and the rare words)
    _Rule("password", _YAML_NEXT_LINE, _yaml_next_line_action, _SET22_PW_GATE, needs=_YAML_NEXT_LINE_NEEDS),
    _Rule("password", _PW_POINTED, _pw_pointed_action, _SET22_PW_GATE, needs=_PW_POINTED_NEEDS),
    _Rule("private_key", _ACCOUNTS_LIST, _accounts_action, _SET22_RARE_GATE, needs=_ACCOUNTS_NEEDS),
    _Rule("password", _CODE_FILE_LINES, _code_file_lines_action, _SET22_RARE_GATE, needs=_CODE_FILE_NEEDS),
    _Rule("password", _FLAG_IN_ARRAY, _flag_in_array_action, _SET22_PW_GATE, needs=_FLAG_IN_ARRAY_NEEDS),
    _Rule("password", _PW_FAR, _pw_far_action, _SET22_PW_GATE, needs=_PW_FAR_NEEDS),
    _Rule("password", _KEYPAD_CODE, _swap_value("password"), _SET22_RARE_GATE, needs=_KEYPAD_NEEDS),
    # set 23: cards joined by dots, slashes, full-width dashes or a line break, cards read aloud and a CVV read digit
    # by digit, an ITIN, a codice fiscale, a session cookie by its framework's name, a password said again, a value
    # then "是 ... password", a Q: / A: answer, "密码我记一下：X", a Markdown key table, recovery codes under a Chinese
    # heading, a secret told in parts, "starts with X then Y"
    # (the rules gated by rare words share one gate search, each then asks for its own pattern)
    _Rule("card", _CARD_JOINED, _card_joined_action, _DIGITS, needs=_CARD_JOINED_NEEDS),
    _Rule("card", _CARD_SPOKEN, _card_spoken_action, _CARD_SPOKEN_GATE, needs=_SPELLED_NEEDS),
    _Rule("card", _CARD_SPOKEN_ZH, _card_spoken_action, _CARD_SPOKEN_GATE, needs=_SPELLED_NEEDS_ZH),
    _Rule("card", _CARD_EXPIRY, _swap_value("card"), after="card"),
    _Rule("card", _CVV_SPACED, _cvv_spaced_action, after="card"),
    _Rule("national_id", _CODICE_FISCALE, _swap("national_id", _codice_fiscale_ok), _DIGITS),
    _Rule("national_id", _CURP, _swap("national_id", _curp_ok), _DIGITS),
    _Rule("national_id", _ITIN, _swap("national_id", _itin_ok), _SET23_RARE_GATE, needs=_ITIN_NEEDS),
    _Rule("api_key", _SESSION_COOKIE, _session_cookie_action, _SET23_RARE_GATE, needs=_SESSION_COOKIE_NEEDS),
    _Rule("password", _QA_INLINE, _qa_inline_action, _SET23_RARE_GATE, needs=_QA_NEEDS),
    _Rule("api_key", _MD_ROW, _md_row_action, _SET23_RARE_GATE, needs=_MD_ROW_NEEDS),
    _Rule("password", _CODE_LINES_ZH, _code_lines_zh_action, _SET23_RARE_GATE, needs=_CODE_LINES_ZH_NEEDS),
    _Rule("national_id", _PARTS, _parts_action, _SET23_RARE_GATE, needs=_ID_PARTS_NEEDS),
    _Rule("password", _PW_STARTS, _pw_starts_action, _SET23_RARE_GATE, needs=_PW_STARTS_NEEDS),
    _Rule("password", _PW_REPEATED, _pw_repeated_action, after="password"),
    _Rule("password", _PW_NOTE, _pw_note_action, _SET22_PW_GATE, needs=_PW_NOTE_NEEDS),
    _Rule("password", _PARTS, _parts_action, _SET22_PW_GATE, needs=_PARTS_NEEDS),
    _Rule("password", _PW_THEN_IS, _pw_then_is_action, _SET22_PW_GATE, needs=_PW_THEN_IS_NEEDS),
    # set 26: a password described by its parts, then given
    _Rule("password", _PW_RECIPE, _pw_recipe_action, _SET22_PW_GATE, needs=_PW_RECIPE_NEEDS),
    # set 24: a key under a bare "Key" in Chinese text, a password told after an aside, a PIN told after where it is
    # written (the password rules share set 22's gate, each then asks for its own pattern)
    _Rule("api_key", _ZH_KEY, _zh_key_action, _KEY_GATE, needs=_ZH_KEY_NEEDS),
    _Rule("password", _PW_ASIDE, _pw_aside_action, _SET22_PW_GATE, needs=_PW_ASIDE_NEEDS),
    _Rule("password", _PW_ASIDE_ZH, _pw_aside_action, _SET22_PW_GATE, needs=_PW_ASIDE_ZH_NEEDS),
    _Rule("password", _PIN_TOLD, _pin_told_action, _SET22_PW_GATE, needs=_PIN_TOLD_NEEDS),
    _Rule("password", _PIN_TOLD_ZH, _pin_told_action, _SET22_PW_GATE, needs=_PIN_TOLD_ZH_NEEDS),
    # last: after every rule that may have replaced the password that is corrected
    _Rule("password", _CORRECTED, _corrected_action, after="password"),
    _Rule("password", _CORRECTED, _decoded_action, ("解码", "解碼", "解出", "decod"), after="password"),
)


def _alternation(words: tuple[str, ...]) -> str:
    """A regex matching any of ``words``, factored as a trie (`c(?:v(?:c|n|v)|ookie)`): the engine tries the
    branches of an alternation one by one at every position, so a flat list of 60 words costs about 60 tests
    per character, a trie only as many as the words sharing a prefix with the text there."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return emit(trie)


# One compiled search per distinct gate (a C-level scan instead of a Python loop over its words).
_GATE_RES = {
    id(rule.gate): re.compile(_alternation(rule.gate)) for rule in _RULES if rule.gate and not rule.windowed
}
_WINDOW_WORDS = tuple(
    dict.fromkeys(word for rule in _RULES if rule.windowed for word in (*rule.gate, *rule.context))
)
_GATE_SETS = {id(rule.gate): frozenset(rule.gate) for rule in _RULES if rule.windowed}
# No word is inside another (checked by the tests), so at most one word starts at a position and the scan
# finds every occurrence.
_GATE_SCAN = re.compile(_alternation(_WINDOW_WORDS))


def _apply(rule: _Rule, text: str) -> tuple[str, int]:
    found = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal found
        new, n = rule.action(m)
        found += n
        return new

    return rule.pattern.sub(replace, text), found


# Per rule, what the loop of `redact_with_report` reads to skip it: its window words (windowed rules), the kind
# it runs after, its gate's key (0: none) and the pattern it needs.
_PLAN = tuple(
    (
        rule,
        _GATE_SETS[id(rule.gate)] if rule.windowed else None,
        rule.after,
        id(rule.gate) if rule.gate and not rule.windowed else 0,
        rule.needs,
    )
    for rule in _RULES
)

_BACK, _AHEAD = 40, 24  # how far a label reaches before / after its gate word


def _windows(rule: _Rule, text: str, hits: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """Spans of ``text`` around each of the rule's gate words, merged."""
    merged: list[tuple[int, int]] = []
    words = _GATE_SETS[id(rule.gate)]
    for at, word in hits:
        if word not in words:
            continue
        start, end = max(0, at - _BACK), at + len(word) + _AHEAD
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _gate_hits(text: str) -> list[tuple[int, str]]:
    """Where the windowed rules' gate words occur (one scan for all of them); the whole text when
    lower() changes offsets (a few non-ASCII letters do)."""
    low = text.lower()
    if len(low) != len(text):
        return [(0, word) for word in _WINDOW_WORDS] + [(len(text), word) for word in _WINDOW_WORDS]
    return [(m.start(), m.group()) for m in _GATE_SCAN.finditer(low)]


def _bare_reach(m: re.Match[str], run_on: re.Pattern[str]) -> int | None:
    """Where the secret of a match ends when its bare value was cut at the bound (`_BARE_MAX`): at its run's end
    (`run_on`), less the punctuation a value's end loses; None when the value ended by itself (quoted, or shorter:
    a key's cut inside it ends it too)."""
    text, (v0, v1) = m.string, m.span("v")
    if v1 - v0 < _BARE_MAX or m.groupdict().get("q"):
        return None
    run = run_on.match(text, v0)
    end = run.end() if run is not None else v1
    return v0 + len(text[v0:end].rstrip(_PW_TRAILING)) if end > v1 else None


def _bare_resume(run_on: re.Pattern[str], m: re.Match[str], new: str) -> tuple[str, int, int]:
    """For a rule whose value is a bare run: the replacement of a match up to its last placeholder, where the text
    that placeholder stands for starts, and where the scan goes on. Right after that text when the rest of the match
    is the match's own (a key's value cut at `&` or `,`: "token=X&token=Y..." has its next label read in this pass,
    not one pass per label), or past the rest of the secret when its value was cut at the bound and replaced whole
    (`_bare_reach`); else after the match."""
    text, start = m.string, m.start()
    tag_at = new.rindex(_MARK)
    close = new.index("]", tag_at) + 1
    kept = len(new) - close  # the match's last characters, after its last placeholder
    if not (text.startswith(new[:tag_at], start) and text.endswith(new[close:], start, m.end())):
        return new, start, m.end()
    reach = None if new[close:].strip(_PW_TRAILING) else _bare_reach(m, run_on)
    return new[:close], start + tag_at, reach if reach is not None else m.end() - kept


# What a windowed rule with a bare value has replaced so far in its pass over a text: the text and the spans, in order.
# The checks that look back from a label for a reference or a string opened before it (`_inside_reference`,
# `_opened_string`) read those spans as the next pass will see them, placeholders: a `${` or a quote inside a value
# just replaced is gone. Else "pw=${x pw=${x ..." had one label let through per pass (each looked inside the `${` of
# the value before it until that value was replaced), a pass over the whole text each: 146 s for 32,000 characters.
_REPLACED: contextvars.ContextVar[tuple[str, list[tuple[int, int]]]] = contextvars.ContextVar(
    "_REPLACED", default=("", [])
)


def _as_replaced(text: str, lo: int, hi: int) -> str:
    """``text[lo:hi]`` with the spans replaced so far in this pass (`_REPLACED`) as placeholders."""
    replaced_in, spans = _REPLACED.get()
    if replaced_in is not text or not spans or spans[-1][1] <= lo:
        return text[lo:hi]
    inside = []
    for a, b in reversed(spans):
        if b <= lo:
            break
        if a < hi:
            inside.append((max(a, lo), min(b, hi)))
    parts, at = [], lo
    for a, b in reversed(inside):
        parts += [text[at:a], _MARK + "]"]
        at = b
    parts.append(text[at:hi])
    return "".join(parts)


def _apply_windowed(rule: _Rule, text: str, hits: list[tuple[int, str]]) -> tuple[str, int]:
    spans: list[tuple[int, int]] = []  # what this pass replaces, for the checks that look back (`_REPLACED`)
    token = _REPLACED.set((text, spans))
    try:
        return _apply_windows(rule, text, hits, spans)
    finally:
        _REPLACED.reset(token)


def _apply_windows(
    rule: _Rule, text: str, hits: list[tuple[int, str]], spans: list[tuple[int, int]]
) -> tuple[str, int]:
    out: list[str] = []
    found = done = 0
    for start, end in _windows(rule, text, hits):
        if rule.head is None:  # the pattern ends inside the window (its label is a lookahead)
            candidates = rule.pattern.finditer(text, max(start, done), end)
        else:
            # (a label inside the part already replaced is skipped before its pattern is tried: matched and then
            # dropped, each label of "password:password:..." read its value to the run's end, quadratic)
            candidates = (
                m
                for h in rule.head.finditer(text, max(start, done), end)
                if h.start() >= done and (m := rule.pattern.match(text, h.start())) is not None
            )
        for m in candidates:
            if m.start() < done:
                continue
            new, n = rule.action(m)
            if n:
                resume = m.end()
                if rule.run_on is not None:
                    new, replaced_from, resume = _bare_resume(rule.run_on, m, new)
                    spans.append((replaced_from, resume))
                out += [text[done : m.start()], new]
                found += n
                done = resume
    if not found:
        return text, 0
    out.append(text[done:])
    return "".join(out), found


# Text typed with an input method in full-width mode, or pasted with spaces that are not ASCII's (set 25:
# "支付密码是\u3000８４０６９６", "密码：ｙａｎｇｌｅｉ＃１９８４ｊｘ"): every rule reads ASCII letters, digits,
# symbols and spaces, so such a text is read as its ASCII twin. Full-width letters, digits and symbols
# (U+FF01-U+FF5E) fold to their ASCII forms; the ideographic space (U+3000), the no-break spaces (U+00A0, U+202F) and
# the typographic ones (U+2000-U+200A, U+205F) to a space; not the full-width marks that Chinese text writes as its
# own punctuation (！（），：；？), which end a value as they do now. Each character folds to one, so the text keeps its
# length and what is kept comes back as it was written (`_unfold`); the fold reads no neighbour, so a rerun folds the
# output to what was redacted: idempotent.
_FOLD = {
    **{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F) if chr(c) not in "！（），：；？"},
    **{c: 0x20 for c in (0x3000, 0x00A0, 0x202F, 0x205F, *range(0x2000, 0x200B))},
}
_FOLDED = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_FOLD)) + "]")
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]")


def _unfold(original: str, folded: str, out: str) -> str:
    """``out``, the redaction of ``folded`` (``original`` folded), with what it kept in ``original``'s characters.

    ``out`` is ``folded`` with some stretches replaced by placeholders: its text between them is found in ``folded`` in
    order, each at its first place after the stretch before it (a placeholder that ``folded`` held is kept), which is
    where it was or, when it occurs twice, a place that reads the same once folded. A replacement may end with a line
    break of its own (a number broken over two lines: "[REDACTED:card]\n"): up to two characters that open the text
    after a placeholder may be the replacement's, kept as they are. One pass, each ``find`` resuming where the last
    ended: linear. Should no alignment be found, ``out`` is returned as it is: redacted, its kept text folded."""
    if out == folded:
        return original
    parts = _PLACEHOLDER.split(out)
    tags = _PLACEHOLDER.findall(out)
    if not folded.startswith(parts[0]):
        return out
    pieces = [original[: len(parts[0])]]
    at = len(parts[0])
    pending: list[str] = []  # placeholders whose replaced stretch starts at `gap`
    gap = at
    for k, tag in enumerate(tags):
        if not pending and folded.startswith(tag, at):  # a placeholder the input held
            pieces.append(tag)
            at += len(tag)
        else:
            if not pending:
                gap = at
            pending.append(tag)
        kept = parts[k + 1]
        if not kept or not pending:
            if kept:
                if not folded.startswith(kept, at):
                    return out
                pieces.append(original[at : at + len(kept)])
                at += len(kept)
            continue
        last = k + 1 == len(tags)
        for own in range(min(3, len(kept))):  # the replacement's own characters before the kept text
            rest = kept[own:]
            found = len(folded) - len(rest) if last else folded.find(rest, gap + 1)
            if found >= gap + 1 and (not last or folded.endswith(rest)):
                break
        else:
            return out
        pieces += pending
        pending = []
        pieces += [kept[:own], original[found : found + len(rest)]]
        at = found + len(rest)
    if pending:
        if at >= len(folded):
            return out
        pieces += pending
        at = len(folded)
    return "".join(pieces) if at == len(folded) else out


def redact_with_report(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with secrets replaced by ``[REDACTED:<type>]`` and the number replaced per type."""
    if not text or text.isascii() or _FOLDED.search(text) is None:
        return _redact_with_report(text)
    folded = text.translate(_FOLD)
    out, counts = _redact_with_report(folded)
    return _unfold(text, folded, out), counts


def _redact_with_report(text: str) -> tuple[str, dict[str, int]]:
    counts: dict[str, int] = {}
    if not text:
        return text, counts
    # Gating on the input is safe: placeholders never complete a match, so no rule can need a gate
    # word that only a placeholder supplied.
    lowered = text.lower()
    # gate -> one of its words is in the input (several rules share a gate: the digits, the password words);
    # keyed by the tuple's identity, each distinct gate is looked for once
    present: dict[int, bool] = {}
    hits: list[tuple[int, str]] | None = None  # gate words of the windowed rules in the text as it is now
    words: set[str] = set()  # the words among them
    # (the checks that skip a rule come cheapest first, from a table made once: most texts skip most rules)
    for rule, window_words, after, gate, needs in _PLAN:
        if window_words is not None:
            if hits is None:
                hits = _gate_hits(text)
                words = {word for _, word in hits}
            if (
                not words
                or words.isdisjoint(window_words)
                or (rule.context and words.isdisjoint(rule.context))
            ):
                continue
            text, found = _apply_windowed(rule, text, hits)
            more = found  # rescanned like the rules below (the gate words' places moved with the text)
            while more:
                text, more = _apply_windowed(rule, text, _gate_hits(text))
                found += more
        else:
            if after and after not in counts:
                continue
            if gate:
                hit = present.get(gate)
                if hit is None:
                    hit = present[gate] = _GATE_RES[gate].search(lowered) is not None
                if not hit:
                    continue
                if needs is not None:  # (only gated rules name one)
                    has = present.get(id(needs))
                    if has is None:
                        has = present[id(needs)] = needs.search(lowered) is not None
                    if not has:
                        continue
            text, found = _apply(rule, text)
            # A value cut short after its match ("KEY = secret)=KEY = other") leaves the rest of the match
            # unscanned: the rule runs again until it finds nothing (placeholders never match, so it ends)
            more = found
            while more:
                text, more = _apply(rule, text)
                found += more
        if found:
            hits = None
            counts[rule.kind] = counts.get(rule.kind, 0) + found
    _forget_texts()
    return text, counts


def _forget_texts() -> None:
    """Drop the per-text caches (`_names_example_file`, `_device_config`, `_names_lock`): they hold the texts they
    were asked about, which may be the raw input with its secrets, and nothing of a text may outlive its redaction.
    (Another thread's call only loses its cache and asks again.)"""
    _names_example_file.cache_clear()
    _device_config.cache_clear()
    _names_lock.cache_clear()


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED:<type>]`` placeholders."""
    return redact_with_report(text)[0]


# A mapping key that names a secret: its value is a secret whatever it looks like ({"password": "hunter2"},
# {"SecretAccessKey": ...}, {"Authorization": "Basic ..."}, {"pin": 4821}). The key must end with the head
# (`password_reset`, `token_count`, `secret_name` are not secrets) and the head must start a word.
_SECRET_NAME = re.compile(
    r"(?:\A|(?<=[^A-Za-z0-9])|(?-i:(?<=[a-z0-9])(?=[A-Z])))(?:"
    r"(?P<private_key>private[ _-]?key)"
    r"|(?P<password>pass(?:word|wd|code|phrase)s?|(?<=[_ .-])pass|pwd|pw|pin|credentials?"
    r"|(?:proxy[ _-]?)?authorization)"
    r"|(?P<api_key>" + _KEY_WORDS + r")"
    r")[ \t]*\Z"
    r"|(?P<private_key_zh>私钥|私鑰)[ \t]*\Z|(?P<password_zh>(?:密码|密碼|口令)(?:短语|短語)?|授权码|授權碼)[ \t]*\Z"
    r"|(?P<api_key_zh>密钥|秘钥|密鑰|令牌)[ \t]*\Z",
    _I,
)


def secret_kind_of_name(name: str) -> str | None:
    """The placeholder type for the value of a field called ``name`` when that name labels a secret."""
    m = _SECRET_NAME.search(name)
    if m is None:
        return None
    group = m.lastgroup or ""
    return group.removesuffix("_zh")


def _redact_named(kind: str, value: object) -> object:
    """The value of a field whose name labels a secret: any scalar but a stand-in is replaced whole."""
    if isinstance(value, str):
        text = value.strip()
        if not text or _MARK in text or _stand_in(text) or text.lower() in ("null", "none", "true", "false"):
            return redact(value)
        return _tag(kind)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return _tag(kind)
    if isinstance(value, list | tuple | set | frozenset) and not hasattr(value, "_fields"):
        return type(value)(_redact_named(kind, v) for v in value)
    return redact_obj(value)


def redact_field(name: object, value: object) -> object:
    """The value of a field called ``name``, redacted: whole when the name labels a secret, else as
    ``redact_obj``."""
    kind = secret_kind_of_name(name) if isinstance(name, str) else None
    return redact_obj(value) if kind is None else _redact_named(kind, value)


def redact_obj(obj: object) -> object:
    """Rebuild containers with every ``str`` inside (dict keys included) redacted; other values as is.

    The value of a key that names a secret (``secret_kind_of_name``: "password", "client_secret",
    "SecretAccessKey", "密钥"...) is replaced whole, numbers included. Dicts come back as plain dicts, lists
    as lists, tuples as tuples (named tuples keep their type), sets as sets. Two keys that redact to the
    same text collapse into one, the later value winning.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): redact_field(k, v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    if isinstance(obj, tuple):
        items = [redact_obj(v) for v in obj]
        return cast(Any, type(obj))(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, set | frozenset):
        return type(obj)(redact_obj(v) for v in obj)
    return obj
