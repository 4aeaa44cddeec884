/*
 * slices.c — sequence slices (slices.h, docs/slices.md): the setter, the
 * accessors, the per-slice scale and the settings they do not go with.
 */
#include "ir_impl.h"

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

double sc_prog_slice_scale(const sc_prog *pg, int k, int s, int mb)
{
    int K = pg->slices, j = mb % K;
    double a = sc_prog_len_linear(pg, k, s);
    return a / K + (1 - a) * (2.0 * j + 1) / ((double)K * K);
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
