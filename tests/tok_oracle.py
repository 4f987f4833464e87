#!/usr/bin/env python3
"""tok_oracle.py TOKENIZER_JSON OUT [SEED] -- the HF `tokenizers` (0.23.3,
project venv) reference for tests/test_tokenizer_hf.c.

Generates a seeded corpus of hard strings (many scripts, emoji with ZWJ and
modifiers, combining marks, whitespace runs with tabs / CR LF / trailing
spaces, digit runs, code, upper-case contractions, special tokens inside
words, the empty string) and writes, per string, one line:
    FLAG <TAB> hex(utf-8 text) <TAB> ids (comma separated) <TAB> hex(decode)
FLAG 1: encoded with add_special_tokens=True, else False; special tokens are
always parsed (HF's default, split_special_tokens=False). decode is HF's
decode(ids, skip_special_tokens=True). Truncation and padding are off.
"""
import random
import sys

from tokenizers import Tokenizer

PIECES = [
    "Hello", "world", "HELLO", "naïve", "café", "Ünïcödé", "straße", "ﬁ", "Ǆ", "İstanbul", "ΣΊΣΥΦΟΣ", "ὈΔΥΣΣΕΎΣ",
    "Привет", "мир", "Ёлка", "مرحبا", "بالعالم", "שלום", "नमस्ते", "हिन्दी", "สวัสดี", "ภาษาไทย", "日本語", "東京都",
    "中文字符", "汉字", "한국어", "안녕하세요", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "Ｆｕｌｌ", "ქართული", "Ελληνικά",
    "🙂", "😀😃", "👍🏽", "👨‍👩‍👧‍👦", "🤦🏼‍♂️", "🇫🇷🇯🇵", "❤️", "✨", "🚀", "e\u0301", "a\u0308\u0301", "n\u0303",
    "\u0915\u094d\u0937", " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2009",
    "0", "7", "42", "123", "2024", "12345", "3.14159", "1,000,000", "٣٤٥", "१२३", "Ⅻ", "½", "x²",
    "def f(x):\n    return x**2", "int main(void) { return 0; }", "a=b+c;", "if (a && b || !c)", "<div class=\"x\">",
    "#include <stdio.h>", "foo_bar_baz", "camelCaseName", "snake_case", "http://example.com/a?b=c&d=e", "$HOME",
    "I'm", "can't", "WON'T", "THEY'LL", "WE'RE", "I'VE", "SHE'S", "HE'D", "it's", "'s", "''", "'",
    "!!!", "???", "...", "—", "–", "«quoted»", "“smart”", "(parens)", "[brackets]", "{braces}", "@user", "#tag",
    "100%", "€5", "£3", "¥1000", "§", "©", "™", "°C", "±", "≠", "→", "∑", "∞",
    "unaffable", "tokenization", "supercalifragilisticexpialidocious", "a" * 120, "ab" * 30,
]


def corpus(specials, seed):
    rng = random.Random(seed)
    out = ["", " ", "a", "Hello world", "   trailing   ", "\t\ttabs\tinside\t", "line1\r\nline2\r\n", "\n\n\n",
           "x  \n  y", "      ", "1234567890", "I'm can't won't they'll", "I'M CAN'T WON'T THEY'LL"]
    for s in specials:
        out += [s, "abc" + s + "def", " " + s + " ", s + s, "x" + s, s + "\n", "[" + s + "]"]
    for _ in range(300):
        k = rng.randint(1, 8)
        parts = [rng.choice(PIECES) for _ in range(k)]
        if specials and rng.random() < 0.15:
            parts.insert(rng.randint(0, len(parts)), rng.choice(specials))
        seps = ["", " ", " ", " ", "  ", "\n", "\t", ", ", "-"]
        out.append("".join(p + rng.choice(seps) for p in parts))
    return out


def main(argv):
    tok = Tokenizer.from_file(argv[1])
    tok.no_truncation()
    tok.no_padding()
    seed = int(argv[3]) if len(argv) > 3 else 12
    specials = [a.content for a in tok.get_added_tokens_decoder().values()][:8]
    with open(argv[2], "w", encoding="ascii") as f:
        for i, s in enumerate(corpus(specials, seed)):
            flag = 1 if i % 5 == 0 else 0
            ids = tok.encode(s, add_special_tokens=bool(flag)).ids
            dec = tok.decode(ids, skip_special_tokens=True)
            f.write(f"{flag}\t{s.encode().hex()}\t{','.join(map(str, ids))}\t{dec.encode().hex()}\n")


if __name__ == "__main__":
    main(sys.argv)
