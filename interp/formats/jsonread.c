/*
 * jsonread.c — the strict JSON reader (jsonread.h): recursive descent over
 * the text, one node per value. The tree lives in interp's counted memory
 * (ir/alloc.h: --max-mem bounds it), and an object's keys are checked for
 * duplicates through a hash of the keys seen, so that reading is linear in
 * the text (a list scan made 100k keys quadratic). A list handed over
 * (sc_json_opts.each) is parsed item by item, each freed after the call,
 * so that a trace's events never all stand in memory at once.
 */
#include "jsonread.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"
#include "readfile.h"

typedef struct rd {
    const char *p, *end;
    int line;
    char *err;
    size_t errlen;
    sc_status st;
    const sc_json_opts *o; /* NULL: none */
    unsigned long nodes;   /* values made, for the deadline's checks */
} rd;

static sc_jv *fail(rd *r, sc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static sc_jv *fail(rd *r, sc_status st, const char *fmt, ...)
{
    if (r->st == SC_OK) {
        r->st = st;
        int n = snprintf(r->err, r->errlen, "line %d: ", r->line);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < r->errlen)
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static void skip_ws(rd *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) {
        if (*r->p == '\n')
            r->line++;
        r->p++;
    }
}

static sc_jv *node(rd *r, sc_jtype t)
{
    if ((++r->nodes & 4095) == 0 && r->o && sc_deadline_passed(r->o->deadline))
        return fail(r, SC_ERR_LIMIT, "time limit reached");
    sc_jv *v = sc_calloc(1, sizeof *v);
    if (!v)
        return fail(r, SC_ERR_NOMEM, "out of memory");
    v->type = t;
    v->line = r->line;
    return v;
}

void sc_jv_free(sc_jv *v)
{
    if (!v)
        return;
    for (size_t i = 0; (v->type == SC_JARR || v->type == SC_JOBJ) && i < v->len; i++) {
        sc_jv_free(v->item[i]);
        if (v->keys)
            sc_free(v->keys[i]);
    }
    sc_free(v->item);
    sc_free(v->keys);
    sc_free(v->str);
    sc_free(v);
}

static int hex4(const char *p, unsigned *out)
{
    unsigned u = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        u <<= 4;
        if (c >= '0' && c <= '9')
            u |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            u |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            u |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = u;
    return 1;
}

static size_t utf8(unsigned cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string literal at r->p (the opening quote): its decoded bytes. */
static char *string(rd *r, size_t *len)
{
    const char *p = ++r->p;
    size_t cap = 0;
    while (p < r->end && *p != '"') { /* the decoded text is never longer */
        if (*p == '\\' && p + 1 < r->end)
            p++;
        p++;
        cap++;
    }
    char *s = sc_malloc(cap * 2 + 5), *o = s; /* \u escapes: 6 bytes in, at most 4 out */
    if (!s) {
        fail(r, SC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (;;) {
        if (r->p >= r->end) {
            sc_free(s);
            fail(r, SC_ERR_ARG, "a string is not closed");
            return NULL;
        }
        unsigned char c = (unsigned char)*r->p++;
        if (c == '"')
            break;
        if (c < 0x20) {
            sc_free(s);
            fail(r, SC_ERR_ARG, "a control character inside a string");
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        char e = r->p < r->end ? *r->p++ : 0;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at = e ? strchr(from, e) : NULL;
        if (at) {
            *o++ = to[at - from];
            continue;
        }
        unsigned cp;
        if (e != 'u' || r->end - r->p < 4 || !hex4(r->p, &cp)) {
            sc_free(s);
            fail(r, SC_ERR_ARG, "a bad escape in a string");
            return NULL;
        }
        r->p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
            unsigned lo;
            if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || !hex4(r->p + 2, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF) {
                sc_free(s);
                fail(r, SC_ERR_ARG, "an unpaired surrogate in a string");
                return NULL;
            }
            r->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            sc_free(s);
            fail(r, SC_ERR_ARG, "an unpaired surrogate in a string");
            return NULL;
        }
        o += utf8(cp, o);
    }
    *o = 0;
    *len = (size_t)(o - s);
    return s;
}

static sc_jv *value(rd *r, int depth);
static sc_jv *handed_list(rd *r, int depth);

/* The keys of one object seen so far: a short object is scanned, a long
 * one gets an open-addressing table of key indices + 1 (0: empty), kept
 * at most half full, so that each key costs O(1) on average. */
typedef struct keyset {
    size_t *slot, cap;
} keyset;

static size_t key_hash(const char *k)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211u;
    return h;
}

/* Whether key is among v's keys (1, or 1 with r->st set when out of
 * memory); else records it as the key of member v->len. */
static int seen_key(rd *r, keyset *ks, const sc_jv *v, const char *key)
{
    enum { SCAN = 16 };
    if (v->len < SCAN) {
        for (size_t i = 0; i < v->len; i++)
            if (strcmp(v->keys[i], key) == 0)
                return 1;
        if (v->len + 1 < SCAN)
            return 0;
    }
    if (2 * (v->len + 1) > ks->cap) { /* (re)build from every key so far */
        size_t cap = ks->cap ? 2 * ks->cap : 4 * SCAN;
        size_t *slot = sc_calloc(cap, sizeof *slot);
        if (!slot) {
            fail(r, SC_ERR_NOMEM, "out of memory");
            return 1;
        }
        sc_free(ks->slot);
        ks->slot = slot;
        ks->cap = cap;
        for (size_t i = 0; i < v->len; i++) {
            size_t j = key_hash(v->keys[i]) & (cap - 1);
            while (slot[j])
                j = (j + 1) & (cap - 1);
            slot[j] = i + 1;
        }
        if (v->len < SCAN) /* the scan above found no match */
            goto add;
    }
    for (size_t j = key_hash(key) & (ks->cap - 1); ks->slot[j]; j = (j + 1) & (ks->cap - 1))
        if (strcmp(v->keys[ks->slot[j] - 1], key) == 0)
            return 1;
add:;
    size_t j = key_hash(key) & (ks->cap - 1);
    while (ks->slot[j])
        j = (j + 1) & (ks->cap - 1);
    ks->slot[j] = v->len + 1;
    return 0;
}

/* The list at r->p (the opening bracket) at depth, its elements handed to
 * the item function one by one (sc_json_opts.each): an empty list. */
static sc_jv *handed_list(rd *r, int depth)
{
    sc_jv *v = node(r, SC_JARR);
    if (!v)
        return NULL;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return v;
    }
    for (size_t i = 0;; i++) {
        sc_jv *x = value(r, depth + 1);
        sc_status st = x ? r->o->item(r->o->ud, i, x, r->err, r->errlen) : r->st;
        sc_jv_free(x);
        if (st != SC_OK) {
            r->st = st; /* err: the item function's, or the reader's */
            sc_jv_free(v);
            return NULL;
        }
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return v;
        }
        sc_jv_free(v);
        return fail(r, SC_ERR_ARG, "expected ',' or ']'");
    }
}

/* Members of an array or object at r->p (the opening bracket); seen: the
 * keys so far (the caller frees its table). */
static sc_jv *members_in(rd *r, sc_jv *v, int depth, keyset *seen)
{
    int obj = v->type == SC_JOBJ;
    char close = obj ? '}' : ']';
    size_t cap = 0;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        size_t klen;
        skip_ws(r);
        if (obj) {
            if (r->p >= r->end || *r->p != '"') {
                sc_jv_free(v);
                return fail(r, SC_ERR_ARG, "expected a key in quotes");
            }
            if (!(key = string(r, &klen))) {
                sc_jv_free(v);
                return NULL;
            }
            if (seen_key(r, seen, v, key)) {
                if (r->st == SC_OK)
                    fail(r, SC_ERR_ARG, "the key '%s' appears twice in one object", key);
                sc_free(key);
                sc_jv_free(v);
                return NULL;
            }
            skip_ws(r);
            if (r->p >= r->end || *r->p != ':') {
                sc_free(key);
                sc_jv_free(v);
                return fail(r, SC_ERR_ARG, "expected ':' after a key");
            }
            r->p++;
        }
        if (v->len == cap) {
            cap = cap ? 2 * cap : 8;
            sc_jv **it = sc_realloc(v->item, cap * sizeof *it);
            char **ks = it && obj ? sc_realloc(v->keys, cap * sizeof *ks) : NULL;
            if (it)
                v->item = it;
            if (ks)
                v->keys = ks;
            if (!it || (obj && !ks)) {
                sc_free(key);
                sc_jv_free(v);
                return fail(r, SC_ERR_NOMEM, "out of memory");
            }
        }
        skip_ws(r);
        int each = obj && depth == 0 && r->o && r->o->each && r->o->item &&
                   strcmp(key, r->o->each) == 0 && r->p < r->end && *r->p == '[';
        sc_jv *x = each ? handed_list(r, depth + 1) : value(r, depth + 1);
        if (!x) {
            sc_free(key);
            sc_jv_free(v);
            return NULL;
        }
        if (obj)
            v->keys[v->len] = key;
        v->item[v->len++] = x;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return v;
        }
        sc_jv_free(v);
        return fail(r, SC_ERR_ARG, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static sc_jv *members(rd *r, sc_jv *v, int depth)
{
    keyset seen = {0};
    sc_jv *out = members_in(r, v, depth, &seen);
    sc_free(seen.slot);
    return out;
}

static sc_jv *number(rd *r)
{
    const char *p = r->p;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end || !(*p >= '0' && *p <= '9'))
        return fail(r, SC_ERR_ARG, "expected a value");
    if (*p == '0' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9')
        return fail(r, SC_ERR_ARG, "a number with a leading zero");
    while (p < r->end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' ||
                          *p == '+' || *p == '-'))
        p++;
    char buf[64];
    size_t n = (size_t)(p - r->p);
    if (n >= sizeof buf)
        return fail(r, SC_ERR_ARG, "a number of more than 63 characters");
    memcpy(buf, r->p, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    double x = strtod(buf, &end);
    /* strtod accepts more than JSON ("1.", ".5" cannot start here, "1.e3"): check the rest. */
    const char *dot = strchr(buf, '.');
    if (*end || (dot && !(dot[1] >= '0' && dot[1] <= '9')))
        return fail(r, SC_ERR_ARG, "a malformed number '%s'", buf);
    if (!isfinite(x) || (errno == ERANGE && fabs(x) > 1))
        return fail(r, SC_ERR_ARG, "the number '%s' is out of range", buf);
    sc_jv *v = node(r, SC_JNUM);
    if (v)
        v->num = x;
    r->p = p;
    return v;
}

static sc_jv *value(rd *r, int depth)
{
    skip_ws(r);
    if (depth > SC_JSON_MAX_DEPTH)
        return fail(r, SC_ERR_ARG, "nested more than %d deep", SC_JSON_MAX_DEPTH);
    if (r->p >= r->end)
        return fail(r, SC_ERR_ARG, "expected a value, found the end of the file");
    char c = *r->p;
    sc_jv *v;
    if (c == '{' || c == '[') {
        if (!(v = node(r, c == '{' ? SC_JOBJ : SC_JARR)))
            return NULL;
        return members(r, v, depth);
    }
    if (c == '"') {
        if (!(v = node(r, SC_JSTR)))
            return NULL;
        if (!(v->str = string(r, &v->len))) {
            sc_free(v);
            return NULL;
        }
        return v;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(r->end - r->p) >= n && memcmp(r->p, words[i], n) == 0) {
            if (!(v = node(r, i == 2 ? SC_JNULL : SC_JBOOL)))
                return NULL;
            v->num = i == 0;
            r->p += n;
            return v;
        }
    }
    return number(r);
}

sc_status sc_json_parse(const char *text, size_t len, sc_jv **out, char *err, size_t errlen)
{
    return sc_json_parse_opts(text, len, NULL, out, err, errlen);
}

sc_status sc_json_parse_opts(const char *text, size_t len, const sc_json_opts *o, sc_jv **out,
                             char *err, size_t errlen)
{
    rd r = {.p = text, .end = text + len, .line = 1, .err = err, .errlen = errlen, .o = o};
    *out = NULL;
    if (errlen)
        err[0] = 0;
    sc_jv *v = value(&r, 0);
    if (v) {
        skip_ws(&r);
        if (r.p < r.end) {
            sc_jv_free(v);
            v = fail(&r, SC_ERR_ARG, "text after the value");
        }
    }
    *out = v;
    return v ? SC_OK : r.st;
}

const sc_jv *sc_jv_get(const sc_jv *v, const char *key)
{
    if (!v || v->type != SC_JOBJ)
        return NULL;
    for (size_t i = 0; i < v->len; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->item[i];
    return NULL;
}

const char *sc_jv_typename(sc_jtype t)
{
    static const char *const names[] = {"null", "a boolean", "a number", "a string", "a list",
                                        "an object"};
    return (unsigned)t < 6 ? names[t] : "?";
}
