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


# Traditional characters frequent in chat, each to its simplified form (one character to one, so a span
# found in the converted text is the same span in the original). The rules are written in simplified
# Chinese; a turn in traditional script ("記住，我們的 API 回應欄位一律用 snake_case") is matched, and its
# memories written, in simplified characters. Not a full converter (no phrase-level conversions): the common
# characters only, which is what the rules' cue words and the vocabulary need.
_TRADITIONAL_PAIRS = (
    "並并佈布來来係系個个們们傳传價价億亿優优兒儿內内兩两別别刪删則则劃划劇剧劉刘動动務务勢势區区參参吳吴員员問问啟启單单嗎吗圍围園园圓圆圖图團团執执報报塊块壓压壞坏夾夹孫孙學学實实審审寫写將将專专尋寻對对"
    "導导層层屬属島岛帳账帶带幣币幾几庫库廠厂廣广張张彈弹後后從从復复愛爱態态憑凭憶忆應应戰战戲戏戶户掛挂換换擇择據据擴扩數数斷断於于時时書书會会東东條条楊杨業业構构樂乐標标樣样機机檔档檢检欄栏權权歡欢歲岁"
    "歷历歸归氣气決决沒没況况測测準准溫温濕湿灣湾為为熱热燈灯燒烧爲为獨独現现環环產产畫画異异當当發发監监盤盘確确碼码禮礼稅税種种節节範范簡简紀纪紅红級级細细組组結结絕绝絡络給给統统經经綠绿維维網网線线緩缓"
    "練练縮缩總总繫系繼继續续習习聯联聽听腦脑腳脚臉脸臺台與与舊旧華华萬万藍蓝藥药處处號号裏里補补裡里見见規规視视覺觉覽览觀观計计討讨記记設设註注詞词試试話话該该詳详認认語语誤误說说誰谁課课請请論论講讲證证"
    "識识議议護护讀读變变讓让貓猫貨货買买費费貼贴資资賣卖質质趙赵車车輸输轉转這这週周進进遊游運运過过遠远遷迁選选還还邊边鄭郑醫医釋释銀银鋼钢錄录錢钱錯错錶表鍵键鏈链鏡镜鐘钟鐵铁鑰钥長长門门閉闭開开間间閱阅"
    "關关陣阵陳陈隊队際际隨随隻只雖虽雙双雜杂難难雲云電电響响頁页須须預预頭头題题顏颜類类顯显飯饭飲饮館馆馬马驗验體体鬥斗魚鱼鳥鸟麵面麼么黃黄點点齊齐齡龄龍龙"
)
_TO_SIMPLIFIED = str.maketrans(_TRADITIONAL_PAIRS[0::2], _TRADITIONAL_PAIRS[1::2])


def simplified(text: str) -> str:
    """`text` with its common traditional characters in their simplified form (same length)."""
    return text.translate(_TO_SIMPLIFIED)
