/*
 * fsdp.c — the FSDP policies (fsdp.h, docs/fsdp.md#policies).
 *
 * Per device: the passes' stages (chunks of the device), the next use of
 * every chunk from every pass (a table of n·v keys, 2·pass + half, so that
 * a pair's F half comes first), and from it PyTorch's windows; the derived
 * policy ends each window at its last pass. The inserts are (pass, phase, kind) sorted:
 * before a pass, RESHARD then UNSHARD; after it, REDUCE_GRAD then RESHARD.
 */
#include "fsdp.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <stdlib.h>
#include <string.h>

#define NEVER ((size_t)-1)

typedef struct ins {
    size_t slot;   /* the pass it goes before (phase 0) or after (phase 1) */
    int phase, op, stage;
    size_t seq;
} ins;

typedef struct dev_plan {
    const sc_prog *pg;
    int d, v;
    size_t ns;        /* passes */
    size_t *at;       /* [ns] their index in the stream */
    size_t *next;     /* [(ns + 1) * v] key of the next use of chunk c from pass j */
    ins *out;
    size_t nout, cap;
} dev_plan;

static int add(dev_plan *p, size_t slot, int phase, int op, int stage, size_t seq)
{
    if (p->nout == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        ins *o = sc_realloc(p->out, cap * sizeof *o);
        if (!o)
            return -1;
        p->out = o;
        p->cap = cap;
    }
    p->out[p->nout] = (ins){slot, phase, op, stage, seq};
    p->nout++;
    return 0;
}

static int rank(int op) { return op == SC_OP_REDUCE_GRAD ? 0 : op == SC_OP_RESHARD ? 1 : 2; }

static int cmp_ins(const void *a, const void *b)
{
    const ins *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if (x->phase != y->phase)
        return x->phase - y->phase;
    if (x->op != y->op) /* REDUCE_GRAD, then RESHARD: free before gathering */
        return rank(x->op) - rank(y->op);
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The chunks of the next `count` distinct stages used from pass j, by next
 * use: out[0..*n). */
static void upcoming(const dev_plan *p, size_t j, int count, int *out, int *n)
{
    const size_t *nx = &p->next[j * (size_t)p->v];
    *n = 0;
    for (int c = 0; c < p->v; c++) {
        if (nx[c] == NEVER)
            continue;
        int i = (*n)++;
        while (i > 0 && nx[out[i - 1]] > nx[c]) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = c;
    }
    if (*n > count)
        *n = count;
}

static int in_list(const int *l, int n, int c)
{
    for (int i = 0; i < n; i++)
        if (l[i] == c)
            return 1;
    return 0;
}

/* PyTorch's windows (lookahead L, residency R); for the derived policy each
 * window is trimmed as it closes. */
static int windows(dev_plan *p, int L, int R, int derived)
{
    const sc_prog *pg = p->pg;
    int v = p->v, na = 0, nres, npre;
    int *active = sc_malloc(3 * (size_t)v * sizeof(int)), *res = active + v, *pre = res + v;
    size_t *from = sc_malloc(2 * (size_t)v * sizeof(size_t)); /* the window's UNSHARD slot */
    size_t *fseq = from ? from + v : NULL, nfetch = 0, nclose = 0; /* PyTorch's orders */
    if (!active || !from) {
        sc_free(active);
        sc_free(from);
        return -1;
    }
    int err = 0;
    for (size_t j = 0; j <= p->ns && !err; j++) {
        if (j < p->ns) {
            upcoming(p, j, R, res, &nres);
            upcoming(p, j, L, pre, &npre);
        } else {
            nres = npre = 0; /* after the last pass: every window closes */
        }
        for (int i = 0; i < na && !err;) {
            int c = active[i], s = pg->dev_stages[p->d][c];
            if (in_list(res, nres, c)) {
                i++;
                continue;
            }
            size_t u = from[c], last = u;
            for (size_t x = u; x < j; x++) { /* the window's passes of c */
                const sc_instr *in = &pg->stream[p->d].v[p->at[x]];
                sc_instr h[2];
                for (int k = sc_instr_halves(in, h); k-- > 0;)
                    if (h[k].stage == s)
                        last = x;
            }
            if (!derived) {
                err = add(p, u, 0, SC_OP_UNSHARD, s, fseq[c]) ||
                      add(p, j < p->ns ? j : p->ns - 1, j < p->ns ? 0 : 1, SC_OP_RESHARD, s,
                          nclose++);
            } else { /* the derived policy: freed right after the window's last pass */
                err = add(p, u, 0, SC_OP_UNSHARD, s, fseq[c]) ||
                      add(p, last, 1, SC_OP_RESHARD, s, nclose++);
            }
            memmove(&active[i], &active[i + 1], (size_t)(na - i - 1) * sizeof(int));
            na--;
        }
        for (int i = 0; i < npre; i++)
            if (!in_list(active, na, pre[i])) {
                active[na++] = pre[i];
                from[pre[i]] = j;
                fseq[pre[i]] = nfetch++;
            }
    }
    sc_free(active);
    sc_free(from);
    return err;
}

/* Each stage's REDUCE_GRAD right after its last weight gradient pass (W or
 * BW, either half of a pair), before a RESHARD there: PyTorch's
 * _add_reduce_grad, which runs after _add_unshard_reshard. */
static int reduce_grads(dev_plan *p)
{
    const sc_prog *pg = p->pg;
    for (int c = 0; c < p->v; c++) {
        int s = pg->dev_stages[p->d][c];
        size_t last = NEVER;
        for (size_t j = 0; j < p->ns; j++) {
            sc_instr h[2];
            for (int k = sc_instr_halves(&pg->stream[p->d].v[p->at[j]], h); k-- > 0;)
                if (h[k].stage == s && sc_op_is_wgrad(h[k].op))
                    last = j;
        }
        if (last != NEVER && add(p, last, 1, SC_OP_REDUCE_GRAD, s, last))
            return -1;
    }
    return 0;
}

sc_status sc_lower_fsdp_device(sc_prog *pg, int d, int R)
{
    sc_vec *sv = &pg->stream[d];
    dev_plan p = {.pg = pg, .d = d, .v = pg->nchunks[d]};
    for (size_t k = 0; k < sv->n; k++)
        p.ns += sc_op_is_slot(sv->v[k].op);
    if (!p.ns)
        return SC_OK;
    p.at = sc_malloc(p.ns * sizeof(size_t));
    p.next = sc_malloc((p.ns + 1) * (size_t)p.v * sizeof(size_t));
    sc_vec outv = {0};
    sc_status st = p.at && p.next ? SC_OK : sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    if (st == SC_OK) {
        size_t j = 0;
        for (size_t k = 0; k < sv->n; k++)
            if (sc_op_is_slot(sv->v[k].op))
                p.at[j++] = k;
        for (int c = 0; c < p.v; c++)
            p.next[p.ns * (size_t)p.v + (size_t)c] = NEVER;
        for (j = p.ns; j-- > 0;) {
            size_t *nx = &p.next[j * (size_t)p.v];
            memcpy(nx, nx + p.v, (size_t)p.v * sizeof(size_t));
            sc_instr h[2];
            int nh = sc_instr_halves(&sv->v[p.at[j]], h);
            for (int k = nh; k-- > 0;)
                nx[pg->chunk[h[k].stage]] = 2 * j + (size_t)k;
        }
        const sc_fsdp_cfg *c = &pg->fsdp;
        int L = c->policy == SC_FSDP_AUTO && d + 2 < R ? d + 2 : R;
        if (windows(&p, L, R, c->policy == SC_FSDP_DERIVED) || reduce_grads(&p))
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    if (st == SC_OK) {
        qsort(p.out, p.nout, sizeof *p.out, cmp_ins);
        size_t i = 0, j = 0;
        for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
            int slot = sc_op_is_slot(sv->v[k].op);
            for (; slot && i < p.nout && p.out[i].slot == j && p.out[i].phase == 0 && !st; i++)
                st = sc_vec_push(&outv, (sc_instr){.op = (uint8_t)p.out[i].op,
                                                   .stage = p.out[i].stage, .mb = -1, .peer = -1});
            if (st == SC_OK)
                st = sc_vec_push(&outv, sv->v[k]);
            for (; slot && i < p.nout && p.out[i].slot == j && !st; i++)
                st = sc_vec_push(&outv, (sc_instr){.op = (uint8_t)p.out[i].op,
                                                   .stage = p.out[i].stage, .mb = -1, .peer = -1});
            j += (size_t)slot;
        }
        if (st != SC_OK)
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    if (st == SC_OK) {
        sc_vec_free(sv);
        *sv = outv;
    } else {
        sc_vec_free(&outv);
    }
    sc_free(p.at);
    sc_free(p.next);
    sc_free(p.out);
    return st;
}

sc_status sc_lower_fsdp(sc_prog *pg)
{
    if (!pg->fsdp.dp)
        return SC_OK;
    for (int d = 0; d < pg->P; d++) {
        sc_status st = sc_lower_fsdp_device(pg, d, pg->fsdp.max_active);
        if (st != SC_OK)
            return st;
    }
    return SC_OK;
}
