/*
 * postval.c — post-validation's collectives, VALIDATE and rollback path
 * (postval.h).
 */
#include "postval.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <stdlib.h>

typedef struct pv {
    sc_prog *pg;
    int P, S, m, N;
    size_t *len;        /* [P] one step's instructions on each device */
    size_t *cut;        /* [P] index in a step of its first pass that is not a chunk-0 F */
    int *s0;            /* [P] the stage of each device's chunk 0 */
    int *cross;         /* [P] that stage's output goes to another device */
    unsigned char *in_r;/* [P * m] F of chunk 0 of microbatch i is before the cut */
    int *chain;         /* [P] devices by ascending s0 */
    double bytes;
} pv;

static int redone(const pv *v, int d, int i) { return v->in_r[(size_t)d * (size_t)v->m + (size_t)i]; }

/* Whether F(s, i) reads a redone and broadcast output: its producer is the
 * chunk-0 F of another device, before that device's cut. */
static int reads_redo(const pv *v, int s, int i)
{
    if (s < 1)
        return 0;
    int p = v->pg->stage_dev[s - 1];
    return v->s0[p] == s - 1 && v->cross[p] && redone(v, p, i);
}

static sc_status push(pv *v, sc_vec *out, sc_instr in)
{
    if (sc_vec_push(out, in) != SC_OK)
        return sc_fail(v->pg, SC_ERR_NOMEM, "out of memory building post-validation");
    return SC_OK;
}

static sc_status bcast(pv *v, sc_vec *out, int what, int part, int stage, int mb, int step,
                       int root, double bytes, unsigned flags)
{
    sc_coll c = {.op = SC_OP_BCAST, .what = what, .part = part, .stage = stage, .mb = mb,
                 .step = step, .root = root, .group = 0, .bytes = bytes};
    sc_status st = sc_coll_push(v->pg, out, &c);
    if (st == SC_OK)
        out->v[out->n - 1].flags |= (uint16_t)flags;
    return st;
}

/* The chain's partial state of devices 0..j in step k (root j). */
static sc_status fwd(pv *v, sc_vec *out, int k, int j)
{
    return bcast(v, out, SC_OP_OPTIM, 0, -1, -1, k, j, v->bytes, 0);
}

/* The rollback path of device e after VALIDATE of step k: the redone F of
 * step k+1 and the broadcasts of their outputs, by microbatch, then stage. */
static sc_status rollback_path(pv *v, sc_vec *out, int e, int k)
{
    int base = (k + 1) * v->m;
    sc_status st = SC_OK;
    for (int i = 0; i < v->m && st == SC_OK; i++)
        for (int c = 0; c < v->P && st == SC_OK; c++) {
            int d = v->chain[c];
            if (!redone(v, d, i))
                continue;
            if (d == e) {
                unsigned f = SC_IF_ROLLBACK | (reads_redo(v, v->s0[d], i) ? SC_IF_REDO_IN : 0);
                sc_instr in = {.op = SC_OP_F, .flags = (uint16_t)f, .stage = v->s0[d],
                               .mb = base + i, .peer = -1};
                st = push(v, out, in);
            }
            if (st == SC_OK && v->cross[d])
                st = bcast(v, out, SC_OP_F, 0, v->s0[d], base + i, k + 1, d, 0, SC_IF_ROLLBACK);
        }
    return st;
}

/* Device d's new stream (postval.h). */
static sc_status device(pv *v, int d, sc_vec *out)
{
    const sc_vec *sv = &v->pg->stream[d];
    sc_status st = SC_OK;
    sc_instr validate = {.op = SC_OP_VALIDATE, .stage = -1, .mb = -1, .peer = -1};
    for (int j = 0; j < d && j < v->P - 1 && st == SC_OK; j++)
        st = fwd(v, out, 0, j);
    for (int k = 0; k < v->N && st == SC_OK; k++) {
        const sc_instr *step = sv->v + (size_t)k * v->len[d];
        for (size_t i = 0; i < v->len[d] && st == SC_OK; i++) {
            if (k > 0 && i == v->cut[d]) { /* step k-1 is validated here */
                if ((st = push(v, out, validate)) == SC_OK)
                    st = rollback_path(v, out, d, k - 1);
                for (int j = 0; j < d && j < v->P - 1 && st == SC_OK; j++)
                    st = fwd(v, out, k, j);
            }
            sc_instr in = step[i];
            if (k > 0 && i >= v->cut[d] && sc_op_is_fwd(in.op) && reads_redo(v, in.stage, in.mb % v->m))
                in.flags |= SC_IF_REDO_IN;
            if (st == SC_OK)
                st = push(v, out, in);
            if (in.op != SC_OP_OPTIM || st != SC_OK)
                continue;
            for (int j = d; j < v->P - 1 && st == SC_OK; j++)
                st = fwd(v, out, k, j);
            if (st == SC_OK)
                st = bcast(v, out, SC_OP_OPTIM, 1, -1, -1, k, v->P - 1, v->bytes, 0);
        }
    }
    if (st == SC_OK)
        st = push(v, out, validate); /* the last step's */
    return st;
}

/* Where each step-0 transfer's partner and each F lie: global indices
 * base[d] + k into the first step of every device (SIZE_MAX: none). */
typedef struct where {
    size_t *base;       /* [P + 1] */
    int *devof;         /* [total] device of a global index */
    size_t *partner;    /* [total] a transfer's partner */
    size_t *posF;       /* [S * m] the F of (stage, mb) */
    int *grp;           /* [total] a transfer's group on its device */
} where;

#define NOWHERE ((size_t)-1)

static int in_rest(const pv *v, const where *w, size_t g)
{
    int e = w->devof[g];
    return g - w->base[e] >= v->cut[e];
}

/* The cut of device d lowered so that, with the rollback path taken at
 * every device's VALIDATE (a collective over all devices, so every device
 * must reach its VALIDATE first), d reaches its VALIDATE whatever the
 * others do after theirs: no pass before it waits for data made after
 * another device's cut, nor for a transfer group posted behind one whose
 * partner is after its device's cut (groups start in order). */
static int lower_cut(pv *v, const where *w, int d)
{
    const sc_instr *in = v->pg->stream[d].v;
    int blocked = -1; /* the first group with a partner after its cut */
    for (size_t k = 0; k < v->cut[d]; k++) {
        size_t g = w->base[d] + k;
        if (sc_op_is_transfer(in[k].op)) {
            if (blocked < 0 && w->partner[g] != NOWHERE && in_rest(v, w, w->partner[g]))
                blocked = w->grp[g];
            continue;
        }
        if (!sc_op_is_fwd(in[k].op) || in[k].stage == 0)
            continue;
        size_t src = w->posF[SC_SM(v->pg, in[k].stage - 1, in[k].mb)];
        if (src == NOWHERE || w->devof[src] == d)
            continue;
        int late = in_rest(v, w, src);
        for (size_t j = k; j-- > 0 && !late && blocked >= 0;) /* its RECV's group */
            if (sc_op_is_recv(in[j].op) && in[j].stage == in[k].stage && in[j].mb == in[k].mb)
                late = w->grp[w->base[d] + j] >= blocked;
        if (late) {
            v->cut[d] = k;
            return 1;
        }
    }
    return 0;
}

/* The cuts: each device's first pass other than a forward of its first
 * chunk, lowered (lower_cut) until no device's prefix depends on another's
 * rest. */
static sc_status cuts(pv *v)
{
    sc_prog *pg = v->pg;
    int P = v->P;
    size_t SM = (size_t)v->S * (size_t)v->m, K = 2 * SM;
    where w = {0};
    w.base = sc_calloc((size_t)P + 1, sizeof(size_t));
    for (int d = 0; w.base && d < P; d++)
        w.base[d + 1] = w.base[d] + v->len[d];
    size_t total = w.base ? w.base[P] : 0;
    w.devof = sc_malloc((total + 1) * sizeof(int));
    w.partner = sc_malloc((total + 1) * sizeof(size_t));
    w.grp = sc_malloc((total + 1) * sizeof(int));
    w.posF = sc_malloc(SM * sizeof(size_t));
    size_t *at = sc_malloc(2 * K * sizeof(size_t)); /* SEND, RECV of each key */
    sc_status st = SC_OK;
    if (!w.base || !w.devof || !w.partner || !w.grp || !w.posF || !at) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory building post-validation");
        goto done;
    }
    for (size_t i = 0; i < SM; i++)
        w.posF[i] = NOWHERE;
    for (size_t i = 0; i < 2 * K; i++)
        at[i] = NOWHERE;
    for (int d = 0; d < P; d++) {
        const sc_instr *in = pg->stream[d].v;
        int g = -1;
        for (size_t k = 0; k < v->len[d]; k++) {
            size_t gi = w.base[d] + k;
            w.devof[gi] = d;
            w.partner[gi] = NOWHERE;
            if (sc_op_is_transfer(in[k].op)) {
                g += sc_starts_group(in, k);
                w.grp[gi] = g;
                size_t key = ((size_t)in[k].dir * (size_t)v->S + (size_t)in[k].stage) *
                                 (size_t)v->m + (size_t)in[k].mb;
                at[sc_op_has(in[k].op, SC_OPF_IN) * K + key] = gi;
            } else if (sc_op_is_fwd(in[k].op)) {
                w.posF[SC_SM(pg, in[k].stage, in[k].mb)] = gi;
            }
        }
    }
    for (size_t key = 0; key < K; key++)
        if (at[key] != NOWHERE && at[K + key] != NOWHERE) {
            w.partner[at[key]] = at[K + key];
            w.partner[at[K + key]] = at[key];
        }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int d = 0; d < P; d++)
            changed |= lower_cut(v, &w, d);
    }
done:
    sc_free(w.base);
    sc_free(w.devof);
    sc_free(w.partner);
    sc_free(w.grp);
    sc_free(w.posF);
    sc_free(at);
    return st;
}

/* One step of each device: its length, its cut, its redone microbatches. */
static sc_status measure(pv *v)
{
    sc_prog *pg = v->pg;
    for (int d = 0; d < v->P; d++) {
        const sc_vec *sv = &pg->stream[d];
        if (sv->n % (size_t)v->N)
            return sc_fail(pg, SC_ERR_PROGRAM, "d%d: the steps are not copies of one", d);
        v->len[d] = sv->n / (size_t)v->N;
        v->s0[d] = pg->dev_stages[d][0];
        v->cross[d] = v->s0[d] + 1 < v->S && pg->stage_dev[v->s0[d] + 1] != d;
        v->cut[d] = v->len[d];
        for (size_t i = 0; i < v->len[d]; i++) {
            const sc_instr *in = &sv->v[i];
            if ((sc_op_is_compute(in->op) || in->op == SC_OP_REDUCE) &&
                (!sc_op_is_fwd(in->op) || in->stage != v->s0[d])) {
                v->cut[d] = i;
                break;
            }
        }
    }
    sc_status st = cuts(v);
    for (int d = 0; d < v->P && st == SC_OK; d++)
        for (size_t i = 0; i < v->cut[d]; i++) {
            const sc_instr *in = &pg->stream[d].v[i];
            if (sc_op_is_fwd(in->op))
                v->in_r[(size_t)d * (size_t)v->m + (size_t)in->mb] = 1;
        }
    /* The chain of redone passes goes by stage. */
    for (int d = 0; d < v->P; d++)
        v->chain[d] = d;
    for (int a = 1; a < v->P; a++)
        for (int b = a; b > 0 && v->s0[v->chain[b - 1]] > v->s0[v->chain[b]]; b--) {
            int t = v->chain[b];
            v->chain[b] = v->chain[b - 1];
            v->chain[b - 1] = t;
        }
    return st;
}

sc_status sc_lower_postval(sc_prog *pg, double state_bytes)
{
    /* A redone F writes into its record: not while part of it is moved. */
    if (pg->off.policy != SC_OFFLOAD_NONE)
        return sc_fail(pg, SC_ERR_ARG, "optim_sync post-validation with an offload policy is "
                       "not supported (a redone forward pass would write into moved records)");
    if (pg->rc.policy != SC_RECOMPUTE_NONE)
        return sc_fail(pg, SC_ERR_ARG, "optim_sync post-validation with a recompute policy is "
                       "not supported (a redone forward pass would write into dropped records)");
    pv v = {.pg = pg, .P = pg->P, .S = pg->S, .m = pg->m, .N = pg->steps, .bytes = state_bytes};
    size_t P = (size_t)pg->P;
    v.len = sc_calloc(P, sizeof(size_t));
    v.cut = sc_calloc(P, sizeof(size_t));
    v.s0 = sc_calloc(P, sizeof(int));
    v.cross = sc_calloc(P, sizeof(int));
    v.chain = sc_calloc(P, sizeof(int));
    v.in_r = sc_calloc(P * (size_t)pg->m, 1);
    sc_vec *out = sc_calloc(P, sizeof(sc_vec));
    sc_status st = SC_OK;
    if (!v.len || !v.cut || !v.s0 || !v.cross || !v.chain || !v.in_r || !out)
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory building post-validation");
    if (st == SC_OK)
        st = measure(&v);
    for (int d = 0; d < pg->P && st == SC_OK; d++)
        st = device(&v, d, &out[d]);
    for (int d = 0; d < pg->P && out; d++) {
        if (st == SC_OK) {
            sc_vec_free(&pg->stream[d]);
            pg->stream[d] = out[d];
        } else {
            sc_vec_free(&out[d]);
        }
    }
    sc_free(out);
    sc_free(v.len);
    sc_free(v.cut);
    sc_free(v.s0);
    sc_free(v.cross);
    sc_free(v.chain);
    sc_free(v.in_r);
    return st;
}
