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
        /* One pass, or a pair of two joined by '+' (docs/language.md#ordered-programs). */
        const char *q = tok;
        int op[2], stage[2];
        long mbs[2];
        int n = 0;
        for (;;) {
            size_t klen;
            op[n] = sc_op_parse_pass(q, (size_t)(p - q), &klen);
            if (op[n] < 0)
                return bad(pg, d, ntok, tok, tlen,
                           "unknown pass kind (F, B, W or BW; S, T, E, EW with a split "
                           "vocabulary)");
            q += klen;
            long mb = digits(&q, p);
            if (mb < 0)
                return bad(pg, d, ntok, tok, tlen, "expected a microbatch number after the kind");
            long chunk = 0;
            if (q < p && *q == '.' && sc_op_is_vocab(op[n]))
                return bad(pg, d, ntok, tok, tlen,
                           "a vocabulary pass runs on its device's shard and names no chunk");
            if (q < p && *q == '.') {
                q++;
                chunk = digits(&q, p);
                if (chunk < 0)
                    return bad(pg, d, ntok, tok, tlen, "expected a chunk number after '.'");
            }
            if (q != p && !(*q == '+' && n == 0))
                return bad(pg, d, ntok, tok, tlen,
                           "unexpected characters (form: KIND MB[.CHUNK], or two joined by '+')");
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
            stage[n] = sc_op_is_vocab(op[n]) ? d : pg->dev_stages[d][chunk];
            mbs[n++] = mb;
            if (q == p)
                break;
            q++; /* the '+' of a pair */
        }
        sc_status st;
        if (n == 1) {
            st = sc_prog_push(pg, d, op[0], stage[0], (int)mbs[0]);
        } else {
            int f = op[0] == SC_OP_F ? 0 : 1, b = 1 - f; /* either half may come first */
            if (op[f] != SC_OP_F || (op[b] != SC_OP_B && op[b] != SC_OP_BW))
                return bad(pg, d, ntok, tok, tlen,
                           "a pair joins a forward with a backward (F+B or F+BW)");
            st = sc_prog_push_pair(pg, d, stage[f], (int)mbs[f], op[b], stage[b], (int)mbs[b]);
        }
        if (st)
            return st;
    }
    return SC_OK;
}

char *sc_order_format(const sc_prog *pg, int d)
{
    const sc_vec *ov = &pg->order[d];
    size_t cap = ov->n * 48 + 1, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = 0;
    for (size_t k = 0; k < ov->n; k++) {
        sc_instr h[2]; /* a pair: its halves joined by '+', F first */
        for (int i = 0, nh = sc_instr_halves(&ov->v[k], h); i < nh; i++) {
            const sc_instr *in = &h[i];
            int c = sc_op_is_vocab(in->op) ? 0 : pg->chunk[in->stage];
            n += (size_t)snprintf(s + n, cap - n, c ? "%s%s%d.%d" : "%s%s%d",
                                  i ? "+" : k ? " " : "", sc_op_name(in->op), in->mb, c);
        }
    }
    return s;
}
