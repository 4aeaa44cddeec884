/*
 * text.c — parse and format the text form of orders (text.h).
 */
#include "text.h"
#include "ir_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_sep(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; }

static sc_status bad(sc_prog *pg, int d, long ntok, const char *tok, size_t len, const char *why)
{
    return sc_fail(pg, SC_ERR_ARG, "device %d, token %ld '%.*s': %s", d, ntok,
                   (int)(len > 40 ? 40 : len), tok, why);
}

/* Reads digits at *p (at most 9), returns -1 when there are none. */
static long digits(const char **p, const char *end)
{
    long v = 0;
    int n = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (++n > 9)
            return -2;
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    return n ? v : -1;
}

sc_status sc_order_parse(sc_prog *pg, int d, const char *text, size_t len)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "order for device %d, but devices are 0..%d", d, pg->P - 1);
    const char *p = text, *end = text + len;
    long ntok = 0;
    while (p < end) {
        if (is_sep(*p)) {
            p++;
            continue;
        }
        if (*p == '#') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        const char *tok = p;
        while (p < end && !is_sep(*p) && *p != '#')
            p++;
        size_t tlen = (size_t)(p - tok);
        ntok++;
        const char *q = tok;
        size_t klen;
        int op = sc_op_parse_pass(q, tlen, &klen);
        if (op < 0)
            return bad(pg, d, ntok, tok, tlen,
                       "unknown pass kind (F, B, W or BW; S, T, E, EW with a split vocabulary)");
        q += klen;
        long mb = digits(&q, p);
        if (mb < 0)
            return bad(pg, d, ntok, tok, tlen, "expected a microbatch number after the kind");
        long chunk = 0;
        if (q < p && *q == '.' && sc_op_is_vocab(op))
            return bad(pg, d, ntok, tok, tlen,
                       "a vocabulary pass runs on its device's shard and names no chunk");
        if (q < p && *q == '.') {
            q++;
            chunk = digits(&q, p);
            if (chunk < 0)
                return bad(pg, d, ntok, tok, tlen, "expected a chunk number after '.'");
        }
        if (q != p)
            return bad(pg, d, ntok, tok, tlen, "unexpected characters (form: KIND MB[.CHUNK])");
        if (mb >= pg->m) {
            char why[96];
            snprintf(why, sizeof why, "microbatch %ld is out of range (0..%d)", mb, pg->m - 1);
            return bad(pg, d, ntok, tok, tlen, why);
        }
        if (chunk >= pg->nchunks[d]) {
            char why[96];
            snprintf(why, sizeof why, "chunk %ld is out of range (device %d holds %d stage%s)",
                     chunk, d, pg->nchunks[d], pg->nchunks[d] == 1 ? "" : "s");
            return bad(pg, d, ntok, tok, tlen, why);
        }
        sc_status st = sc_prog_push(pg, d, op, sc_op_is_vocab(op) ? d : pg->dev_stages[d][chunk],
                                    (int)mb);
        if (st)
            return st;
    }
    return SC_OK;
}

char *sc_order_format(const sc_prog *pg, int d)
{
    const sc_vec *ov = &pg->order[d];
    size_t cap = ov->n * 24 + 1, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = 0;
    for (size_t k = 0; k < ov->n; k++) {
        const sc_instr *in = &ov->v[k];
        int c = sc_op_is_vocab(in->op) ? 0 : pg->chunk[in->stage];
        n += (size_t)snprintf(s + n, cap - n, c ? "%s%s%d.%d" : "%s%s%d", k ? " " : "",
                              sc_op_name(in->op), in->mb, c);
    }
    return s;
}
