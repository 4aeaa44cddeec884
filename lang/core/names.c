/*
 * names.c — text for people (core.h): "did you mean" for near names, and
 * text from recipes cleaned of control characters before it is printed.
 */
#include "core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Optimal string alignment distance (Damerau-Levenshtein with adjacent
 * transpositions), ignoring case; gives up (returns cap + 1) past cap. */
static int distance(const char *a, const char *b, int cap)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 64 || lb > 64 || abs(la - lb) > cap)
        return cap + 1;
    int d[65][65];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int c = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

/* One is a prefix of the other at a word boundary ("mem_limit", "mem"). */
static int prefix_of(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    const char *s = la < lb ? a : b, *l = la < lb ? b : a;
    size_t n = la < lb ? la : lb;
    return n >= 3 && strncmp(s, l, n) == 0 && (l[n] == '_' || l[n] == '-');
}

int sc_near_names(const char *word, const char *const *cands, int n, const char **out, int max)
{
    int len = (int)strlen(word), cap = len <= 2 ? 0 : len <= 4 ? 1 : 2, k = 0;
    if (max <= 0)
        return 0;
    /* A pass per distance, the least first, keeps ties in list order. */
    for (int want = 0; want <= cap + 1 && k < max && (k == 0 || want == 0); want++)
        for (int i = 0; i < n && k < max; i++) {
            if (!cands[i] || strcmp(cands[i], word) == 0)
                continue;
            int dist = distance(word, cands[i], cap);
            int hit = want <= cap ? dist == want : dist > cap && prefix_of(word, cands[i]);
            if (hit)
                out[k++] = cands[i];
        }
    return k;
}

int sc_did_you_mean(char *buf, size_t len, const char *word, const char *const *cands, int n)
{
    const char *near[3];
    int k = sc_near_names(word, cands, n, near, 3);
    if (len)
        buf[0] = 0;
    if (!k || !len)
        return 0;
    size_t used = (size_t)snprintf(buf, len, "did you mean '%s'", near[0]);
    for (int i = 1; i < k && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i + 1 < k ? ", '%s'" : " or '%s'",
                                 near[i]);
    if (used < len)
        snprintf(buf + used, len - used, "?");
    return 1;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, past U+10FFFF */
    return n;
}

/* Calls put(ctx, bytes, n) for the cleaned pieces of s. */
static void clean(const char *in, int keep_newlines, void (*put)(void *, const char *, size_t),
                  void *ctx)
{
    const unsigned char *s = (const unsigned char *)in;
    while (*s) {
        if (*s >= 0x20 && *s < 0x7f) {
            size_t n = 1;
            while (s[n] >= 0x20 && s[n] < 0x7f)
                n++;
            put(ctx, (const char *)s, n);
            s += n;
        } else if (*s == '\n' && keep_newlines) {
            put(ctx, "\n", 1);
            s++;
        } else if (*s == '\t' || *s == '\n' || *s == '\r') {
            put(ctx, " ", 1);
            s++;
        } else if (*s >= 0x80 && utf8_len(s)) {
            int n = utf8_len(s);
            /* U+0080..U+009F are the C1 controls (0xc2 0x80..0x9f); the
             * bidirectional controls reorder what a terminal shows (U+202E
             * makes "exe.txt" of "txt.exe"): U+061C, U+200E, U+200F,
             * U+202A..U+202E, U+2066..U+2069. */
            int bad = (s[0] == 0xc2 && s[1] < 0xa0) || (s[0] == 0xd8 && s[1] == 0x9c) ||
                      (s[0] == 0xe2 && s[1] == 0x80 &&
                       (s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xaa && s[2] <= 0xae))) ||
                      (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9);
            put(ctx, bad ? "?" : (const char *)s, bad ? 1 : (size_t)n);
            s += n;
        } else {
            put(ctx, "?", 1);
            s++;
        }
    }
}

typedef struct sink {
    char *out;
    size_t len, n;
} sink;

static void to_buf(void *ctx, const char *b, size_t n)
{
    sink *k = ctx;
    if (k->n + n >= k->len) { /* never half a UTF-8 character */
        if ((unsigned char)b[0] >= 0x80)
            return;
        n = k->len - 1 - k->n;
    }
    memcpy(k->out + k->n, b, n);
    k->n += n;
}

char *sc_clean_text(char *out, size_t len, const char *in, int keep_newlines)
{
    if (!len)
        return out;
    sink k = {out, len, 0};
    clean(in ? in : "", keep_newlines, to_buf, &k);
    out[k.n] = 0;
    return out;
}

static void to_file(void *ctx, const char *b, size_t n) { fwrite(b, 1, n, ctx); }

void sc_fputs_clean(const char *s, FILE *f, int keep_newlines)
{
    clean(s ? s : "", keep_newlines, to_file, f);
}
