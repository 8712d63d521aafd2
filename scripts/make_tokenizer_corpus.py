#!/usr/bin/env python3
"""Writes tests/data/tokenizer/corpus.txt, the text zerotune's tokenizers must encode exactly
as Hugging Face's do.

Format: one sample per line, each line a JSON string (so samples may hold newlines, tabs
and carriage returns, escaped). The output is deterministic: the same script writes the
same bytes. Usage: python3 scripts/make_tokenizer_corpus.py [output_path]
"""
import json
import random
import sys
import unicodedata
from pathlib import Path

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged; we'll see, they've said, I'd go, you're right.",
    "DON'T SHOUT. She'S here? THEY'LL come, I'M sure.",
    "Fine-tuning large language models needs memory: ZeRO partitions optimizer state.",
    "e.g. U.S.A., Mr. Smith, 3 p.m. -- 'quoted' and \"double quoted\" text...",
    "CamelCaseIdentifiers and snake_case_names and kebab-case-names",
]
CHINESE = [
    "你好，世界！今天天气很好。",
    "机器学习是人工智能的一个分支，深度学习又是机器学习的一个分支。",
    "《红楼梦》是中国古典四大名著之一。",
    "请问：这个模型支持多少种语言？答：很多种。",
    "数据并行、张量并行和流水线并行是三种常见的并行方式。",
]
JAPANESE_KOREAN = [
    "こんにちは、世界。今日はいい天気ですね。",
    "カタカナとひらがなと漢字が混ざった文章です。",
    "ｶﾞｷﾞｸﾞ 半角カナ",
    "안녕하세요, 세계! 오늘 날씨가 좋네요.",
    "한국어 형태소 분석은 어렵습니다.",
]
OTHER_SCRIPTS = [
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε! Ελληνικά γράμματα.",
    "مرحبا بالعالم! هذا نص عربي.",
    "שלום עולם! זה טקסט בעברית.",
    "नमस्ते दुनिया! यह हिंदी पाठ है।",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Xin chào thế giới! Tiếng Việt có nhiều dấu.",
    "ଓଡ଼ିଆ ଭାଷା ଲିପି",
]
CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += x[i] * y[i];\n}",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }",
    "const f = async (x) => { await fetch(`/api/${x}`); };",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n}",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "if [ -f \"$FILE\" ]; then echo \"exists\"; fi",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}",
    "{\"key\": [1, 2.5, -3e10, null, true], \"nested\": {\"a\": \"b\"}}",
    "<div class=\"x\"><p>Hello &amp; welcome</p></div>",
    "    indented with four spaces\n        and eight\n\t\tand two tabs",
]
NUMBERS = [
    "3.14159265358979323846264338327950288419716939937510",
    "1234567890123456789012345678901234567890",
    "Phone: +86 138-0013-8000, ID 110101199003078888",
    "Version 2.0.1-rc3, build 20240612, 99.9% uptime",
    "１２３４５ 全角数字 ٠١٢٣٤٥٦٧٨٩ ۱۲۳ ⅠⅡⅢⅣ ①②③ ½ ¾ ²³",
]
EMOJI = [
    "Emoji: 😀😃😄 👍🏽 ❤️ 🇨🇳🇺🇸",
    "ZWJ families: 👨‍👩‍👧‍👦 👩‍💻 🏳️‍🌈 🧑🏿‍🚀",
    "Rare 4-byte: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕳𝖊𝖑𝖑𝖔 𠀀𠀁𪚥 𓀀𓁐",
    "Keycaps 1️⃣ #️⃣ and variation selectors ☺︎ ☺️",
]
SPECIAL = [
    "<|im_start|>user\nHello<|im_end|>",
    "text <|endoftext|> more text",
    "<think>\nreasoning\n</think>\n\nanswer",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|im_start|><|im_end|><|im_start|>",
    "almost special: <|im_star|> <|im_end| <im_start>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
]
WHITESPACE = [
    "a  b   c    d",
    "tabs\tand\t\tmore\t\t\ttabs",
    "lines\n\nwith\n\n\nblank\n\n\n\nlines",
    "windows\r\nline\r\nendings\r\n",
    "trailing spaces   ",
    "   leading spaces",
    " \n \n\t\n ",
    "non-breaking\u00a0space and\u2003em space and\u3000ideographic space",
    "next line\u0085char and line\u2028separator and para\u2029separator",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
]
# Decomposed forms that NFC composes (and some it must leave alone).
COMBINING = [
    "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "A\u030a ångström \u212b",
    "\u1100\u1161\u11a8 jamo compose to 각",
    "o\u0323\u0302 and o\u0302\u0323 reorder",
    "\u0b47\u0b3e Oriya two-part vowel",
    "ﬁ ligature, ½ fraction, Ⅻ numeral stay (NFC is not NFKC)",
    "e\u0301\u0301\u0301 stacked marks",
    "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o zalgo",
]
CATEGORIES = [ENGLISH, CHINESE, JAPANESE_KOREAN, OTHER_SCRIPTS, CODE, NUMBERS, EMOJI, SPECIAL, WHITESPACE, COMBINING]
SEPARATORS = ["", " ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "。", ", "]


def random_word(rng):
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'_-.,;:!?()[]{}"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


def random_unicode(rng):
    """A run of random characters from assorted blocks (no surrogates, no unassigned)."""
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x4E00, 0x9FFF),
              (0x3040, 0x30FF), (0xAC00, 0xD7A3), (0x1F300, 0x1F6FF), (0x300, 0x36F), (0x2000, 0x206F)]
    out = []
    for _ in range(rng.randint(1, 20)):
        lo, hi = rng.choice(blocks)
        c = chr(rng.randint(lo, hi))
        if unicodedata.category(c) not in ("Cn", "Cs"):
            out.append(c)
    return "".join(out)


def samples():
    rng = random.Random(20240601)
    for category in CATEGORIES:  # every fixed sample once, as is
        yield from category
    yield " " * 100 + "x"
    yield "\n" * 50
    yield "9" * 200
    yield "中" * 300
    yield "ab" * 400
    while True:
        parts = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.6:
                parts.append(rng.choice(rng.choice(CATEGORIES)))
            elif kind < 0.8:
                parts.append(random_word(rng))
            else:
                parts.append(random_unicode(rng))
            parts.append(rng.choice(SEPARATORS))
        yield "".join(parts)


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "tests/data/tokenizer/corpus.txt"
    lines = []
    for sample in samples():
        lines.append(json.dumps(sample, ensure_ascii=False))
        if len(lines) >= 2400:
            break
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} samples to {out}")


if __name__ == "__main__":
    main()
