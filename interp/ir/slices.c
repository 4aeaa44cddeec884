/*
 * slices.c — sequence slices (slices.h, docs/slices.md): the setter, the
 * accessors, the per-slice scale and the settings they do not go with.
 */
#include "ir_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sc_status sc_prog_set_slices(sc_prog *pg, int K)
{
    if (K < 1 || K > SC_MAX_SLICES)
        return sc_fail(pg, SC_ERR_ARG, "slices = %d: must be 1..%d", K, SC_MAX_SLICES);
    if (pg->m % K != 0)
        return sc_fail(pg, SC_ERR_ARG,
                       "slices = %d: the program's %d records are not whole microbatches of %d "
                       "slices", K, pg->m, K);
    pg->slices = K;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_slices(const sc_prog *pg) { return pg->slices; }

int sc_prog_slice_of(const sc_prog *pg, int mb) { return mb < 0 ? -1 : mb % pg->slices; }

int sc_prog_slice_mb(const sc_prog *pg, int mb) { return mb < 0 ? -1 : mb / pg->slices; }

sc_status sc_prog_set_slice_split(sc_prog *pg, int split)
{
    if (split != SC_SLICE_EVEN && split != SC_SLICE_COMPUTE)
        return sc_fail(pg, SC_ERR_ARG, "slice split %d: even (0) or compute (1)", split);
    pg->slice_split = split;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_slice_split(const sc_prog *pg) { return pg->slice_split; }

double sc_prog_slice_cut(const sc_prog *pg, int j)
{
    int K = pg->slices;
    if (j <= 0 || j >= K)
        return j <= 0 ? 0 : 1;
    double q = (double)j / K, a = 0;
    if (pg->slice_split == SC_SLICE_EVEN)
        return q;
    for (int s = 0; s < pg->S; s++) /* the stages' mean linear share of F */
        a += (pg->len_lin ? pg->len_lin[(size_t)SC_LK_F * (size_t)pg->S + (size_t)s] : 1) / pg->S;
    if (a >= 1 - 1e-12)
        return q;
    /* a c + (1 - a) c^2 = q: the first c of the sequence costs q of it */
    return (-a + sqrt(a * a + 4 * (1 - a) * q)) / (2 * (1 - a));
}

double sc_prog_slice_tokens(const sc_prog *pg, int mb)
{
    int j = mb % pg->slices;
    return sc_prog_slice_cut(pg, j + 1) - sc_prog_slice_cut(pg, j);
}

double sc_prog_slice_scale(const sc_prog *pg, int k, int s, int mb)
{
    int j = mb % pg->slices;
    double c0 = sc_prog_slice_cut(pg, j), c1 = sc_prog_slice_cut(pg, j + 1);
    int in = pg->len_lin && k >= 0 && k < SC_LK_COUNT && s >= 0 && s < pg->S;
    size_t i = in ? (size_t)k * (size_t)pg->S + (size_t)s : 0;
    double a = in ? pg->len_lin[i] : 1, f = in && pg->len_fix ? pg->len_fix[i] : 0; /* lengths.h */
    return f + a * (c1 - c0) + (1 - a - f) * (c1 * c1 - c0 * c0); /* each slice: the fixed part */
}

sc_status sc_prog_check_slices(sc_prog *pg)
{
    if (pg->slices <= 1)
        return SC_OK;
    const char *no = pg->len                                  ? "lengths"
                     : pg->off.policy != SC_OFFLOAD_NONE      ? "offload"
                     : pg->rc.policy != SC_RECOMPUTE_NONE     ? "recompute"
                     : pg->fsdp.dp                            ? "FSDP"
                     : sc_vocab_split(pg->vocab)              ? "a split vocabulary (vocab_par)"
                     : pg->fwd_only                           ? "forward_only"
                     : pg->copies > 1                         ? "copies"
                                                              : NULL;
    if (no)
        return sc_fail(pg, SC_ERR_ARG,
                       "program: slices = %d (docs/slices.md) does not go with %s yet",
                       pg->slices, no);
    return SC_OK;
}

void sc_prog_mb_format(const sc_prog *pg, int mb, char *buf, size_t len)
{
    if (pg->slices > 1 && mb >= 0)
        snprintf(buf, len, "%d.%d", mb / pg->slices, mb % pg->slices);
    else
        snprintf(buf, len, "%d", mb);
}

void sc_prog_slice_names(const sc_prog *pg, char *buf, size_t len)
{
    if (pg->slices <= 1 || len == 0)
        return;
    char out[256];
    size_t o = 0;
    for (const char *p = buf; *p && o + 1 < sizeof out;) {
        if (strncmp(p, "mb", 2) == 0 && (p == buf || p[-1] == ' ') && p[2] >= '0' && p[2] <= '9') {
            char *end, num[24];
            long r = strtol(p + 2, &end, 10);
            sc_prog_mb_format(pg, (int)r, num, sizeof num);
            o += (size_t)snprintf(out + o, sizeof out - o, "mb%s", num);
            p = end;
        } else {
            out[o++] = *p++;
        }
    }
    out[o < sizeof out ? o : sizeof out - 1] = 0;
    snprintf(buf, len, "%s", out);
}
