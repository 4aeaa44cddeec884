/*
 * posting.c — the posting-order pairing of transfers (posting.h).
 *
 * Each device's SENDs, sorted stably by peer, list for every peer b the
 * messages in the order d posts them to b; each device's RECVs, sorted by
 * source, the same from the receiving side. The pair (a, b) is sound when
 * a's list for b and b's list for a are equal entry by entry.
 */
#include "posting.h"
#include "ir/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    int peer;
    size_t k; /* index in the device's stream */
} entry;

static int by_peer(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->peer != b->peer)
        return a->peer < b->peer ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k; /* stable: stream order */
}

/* Device d's transfers of kind op (SEND or RECV), sorted by peer, in
 * stream order within a peer. With at least as many transfers as devices a
 * counting sort by peer (cnt: P + 1 scratch counters), which the stream
 * order keeps stable: linear, where qsort took most of the check's time. */
static size_t collect(const sc_prog *pg, int d, int op, entry *out, entry *tmp, size_t *cnt)
{
    const sc_vec *sv = &pg->stream[d];
    int P = pg->P;
    size_t n = 0;
    for (size_t k = 0; k < sv->n; k++)
        if (sv->v[k].op == op)
            tmp[n++] = (entry){sv->v[k].peer, k};
    if (n < (size_t)P) {
        memcpy(out, tmp, n * sizeof *out);
        qsort(out, n, sizeof *out, by_peer);
        return n;
    }
    memset(cnt, 0, ((size_t)P + 1) * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[tmp[i].peer + 1]++; /* peers are in range: sc_replay checked them */
    for (int p = 0; p < P; p++)
        cnt[p + 1] += cnt[p];
    for (size_t i = 0; i < n; i++)
        out[cnt[tmp[i].peer]++] = tmp[i];
    return n;
}

/* The range [*lo, *hi) of entries with peer p. */
static void range(const entry *v, size_t n, int p, size_t *lo, size_t *hi)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (v[mid].peer < p)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    while (a < n && v[a].peer == p)
        a++;
    *hi = a;
}

static int same_message(const sc_instr *x, const sc_instr *y)
{
    return x->dir == y->dir && x->stage == y->stage && x->mb == y->mb;
}

static void describe(const sc_prog *pg, int d, size_t k, char *buf, size_t len)
{
    char tmp[96];
    sc_instr_format(&pg->stream[d].v[k], tmp, sizeof tmp);
    snprintf(buf, len, "d%d #%zu (%s)", d, k, tmp);
}

static sc_status mismatch(sc_prog *pg, int a, size_t ks, int b, size_t kr, size_t q)
{
    const sc_instr *in = &pg->stream[a].v[ks];
    const sc_vec *bv = &pg->stream[b];
    size_t own = bv->n;
    for (size_t j = 0; j < bv->n && own == bv->n; j++)
        if (sc_op_is_recv(bv->v[j].op) && bv->v[j].peer == a && same_message(&bv->v[j], in))
            own = j;
    char x[128], y[128], z[128];
    describe(pg, a, ks, x, sizeof x);
    describe(pg, b, kr, y, sizeof y);
    if (own < bv->n)
        describe(pg, b, own, z, sizeof z);
    else
        snprintf(z, sizeof z, "missing");
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "transfers out of posting order: %s and %s pair up (send and receive %zu "
                   "between d%d and d%d; NCCL and gloo match in posting order) but carry "
                   "different messages (its RECV is %s)",
                   x, y, q + 1, a, b, z);
}

sc_status sc_check_posting_order(sc_prog *pg)
{
    int P = pg->P;
    size_t most = 1;
    for (int d = 0; d < P; d++)
        most = pg->stream[d].n > most ? pg->stream[d].n : most;
    entry **recvs = sc_calloc((size_t)P, sizeof *recvs);
    size_t *nrecv = sc_calloc((size_t)P, sizeof *nrecv);
    entry *sends = sc_malloc(most * sizeof *sends), *tmp = sc_malloc(most * sizeof *tmp);
    size_t *cnt = sc_malloc(((size_t)P + 1) * sizeof *cnt);
    sc_status st = SC_OK;
    if (!recvs || !nrecv || !sends || !tmp || !cnt) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory checking the posting order");
        goto done;
    }
    for (int b = 0; b < P; b++) {
        recvs[b] = sc_malloc((pg->stream[b].n + 1) * sizeof **recvs);
        if (!recvs[b]) {
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory checking the posting order");
            goto done;
        }
        nrecv[b] = collect(pg, b, SC_OP_RECV, recvs[b], tmp, cnt);
    }
    for (int a = 0; a < P && !st; a++) {
        size_t ns = collect(pg, a, SC_OP_SEND, sends, tmp, cnt);
        for (size_t i = 0; i < ns && !st;) {
            int b = sends[i].peer;
            size_t lo, hi, j = i;
            range(recvs[b], nrecv[b], a, &lo, &hi);
            for (; j < ns && sends[j].peer == b; j++) {
                size_t q = j - i;
                if (lo + q >= hi) /* fewer receives: the matching found it first */
                    break;
                size_t kr = recvs[b][lo + q].k;
                if (!same_message(&pg->stream[a].v[sends[j].k], &pg->stream[b].v[kr])) {
                    st = mismatch(pg, a, sends[j].k, b, kr, q);
                    break;
                }
            }
            while (j < ns && sends[j].peer == b)
                j++;
            i = j;
        }
    }
done:
    for (int b = 0; recvs && b < P; b++)
        sc_free(recvs[b]);
    sc_free(recvs);
    sc_free(nrecv);
    sc_free(sends);
    sc_free(tmp);
    sc_free(cnt);
    return st;
}
