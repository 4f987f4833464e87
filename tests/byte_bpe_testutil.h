/* Tests that build a tiny byte-level BPE tokenizer.json by hand (the
 * tokenizer, its defect cases, the grammar's masks) write each byte as
 * GPT-2's byte-level character: one helper for all of them. */
#ifndef WICK_TESTS_BYTE_BPE_TESTUTIL_H
#define WICK_TESTS_BYTE_BPE_TESTUTIL_H
#include <stdio.h>
#include <stddef.h>

/* GPT-2's byte-level char of byte b, JSON-escaped, appended to s; returns
 * the bytes written. */
static inline size_t put_byte_char(char *s, unsigned b) {
    unsigned cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE))) {
        unsigned k = 0;
        for (unsigned x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) k++;
        cp = 256 + k;
    }
    if (cp == '"' || cp == '\\') return (size_t)sprintf(s, "\\%c", (char)cp);
    if (cp < 0x80) return (size_t)sprintf(s, "%c", (char)cp);
    return (size_t)sprintf(s, "%c%c", (char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F)));
}

#endif
