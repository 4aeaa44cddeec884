/*
 * coll.c — collectives in the IR (ir.h, docs/semantics.md#collectives): member groups, the
 * descriptions behind collective instructions, their cost, and which
 * collectives an instruction reads (the readers' map shared by the replay
 * and the executor).
 */
#include "ir_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Group 0 (every device) is made on first use. */
static sc_status ensure_groups(sc_prog *pg)
{
    if (pg->ngroups > 0)
        return SC_OK;
    pg->grp = sc_calloc(1, sizeof(int *));
    pg->ngrp = sc_calloc(1, sizeof(int));
    if (!pg->grp || !pg->ngrp)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->grp[0] = sc_malloc((size_t)pg->P * sizeof(int));
    if (!pg->grp[0])
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int d = 0; d < pg->P; d++)
        pg->grp[0][d] = d;
    pg->ngrp[0] = pg->P;
    pg->ngroups = 1;
    return SC_OK;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int sc_prog_add_group(sc_prog *pg, const int *devs, int n)
{
    if (ensure_groups(pg) != SC_OK)
        return -1;
    if (n < 1 || n > pg->P) {
        sc_fail(pg, SC_ERR_ARG, "group: %d members, but there are %d devices", n, pg->P);
        return -1;
    }
    int *m = sc_malloc((size_t)n * sizeof(int));
    int **grp = sc_realloc(pg->grp, ((size_t)pg->ngroups + 1) * sizeof(int *));
    if (grp)
        pg->grp = grp;
    int *ngrp = grp ? sc_realloc(pg->ngrp, ((size_t)pg->ngroups + 1) * sizeof(int)) : NULL;
    if (ngrp)
        pg->ngrp = ngrp;
    if (!m || !grp || !ngrp) {
        sc_free(m);
        sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        return -1;
    }
    memcpy(m, devs, (size_t)n * sizeof(int));
    qsort(m, (size_t)n, sizeof(int), int_cmp);
    for (int i = 0; i < n; i++) {
        if (m[i] < 0 || m[i] >= pg->P || (i > 0 && m[i] == m[i - 1])) {
            sc_fail(pg, SC_ERR_ARG, "group: member %d is %s (devices are 0..%d)", m[i],
                    m[i] < 0 || m[i] >= pg->P ? "out of range" : "given twice", pg->P - 1);
            sc_free(m);
            return -1;
        }
    }
    pg->grp[pg->ngroups] = m;
    pg->ngrp[pg->ngroups] = n;
    return pg->ngroups++;
}

const int *sc_prog_group(const sc_prog *pg, int g, int *n)
{
    if (g == 0 && pg->ngroups == 0 && ensure_groups((sc_prog *)pg) != SC_OK)
        return NULL;
    if (g < 0 || g >= pg->ngroups)
        return NULL;
    *n = pg->ngrp[g];
    return pg->grp[g];
}

int sc_prog_groups(const sc_prog *pg)
{
    return pg->ngroups > 0 ? pg->ngroups : 1;
}

sc_status sc_coll_push(sc_prog *pg, sc_vec *vec, const sc_coll *c)
{
    if ((unsigned)c->op >= SC_OP_COUNT || !sc_op_is_coll(c->op))
        return sc_fail(pg, SC_ERR_ARG, "collective: '%s' is not a collective kind",
                       sc_op_name(c->op));
    if (sc_op_has(c->op, SC_OPF_REDUCES) && (c->red < 0 || c->red >= SC_RED_COUNT))
        return sc_fail(pg, SC_ERR_ARG, "collective: unknown reduction %d", c->red);
    if ((unsigned)c->what >= SC_OP_COUNT || c->part < 0 || c->part > SC_COLL_MAX_PART)
        return sc_fail(pg, SC_ERR_ARG, "collective: tag %d part %d is out of range", c->what,
                       c->part);
    if (ensure_groups(pg) != SC_OK)
        return SC_ERR_NOMEM;
    if (c->group < 0 || c->group >= pg->ngroups)
        return sc_fail(pg, SC_ERR_ARG, "collective: unknown group %d (groups are 0..%d)",
                       c->group, pg->ngroups - 1);
    if (!(c->bytes >= 0) || !isfinite(c->bytes))
        return sc_fail(pg, SC_ERR_ARG, "collective: size %g bytes must be finite and >= 0",
                       c->bytes);
    if (pg->ncoll >= INT32_MAX)
        return sc_fail(pg, SC_ERR_LIMIT, "too many collectives");
    if (pg->ncoll == pg->capcoll) {
        size_t cap = pg->capcoll ? 2 * pg->capcoll : 64;
        sc_ctail *t = sc_realloc(pg->coll, cap * sizeof *t);
        if (!t)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        pg->coll = t;
        pg->capcoll = cap;
    }
    sc_instr in = {.op = (uint8_t)c->op,
                   .dir = (uint8_t)(sc_op_has(c->op, SC_OPF_REDUCES) ? c->red : 0),
                   .flags = (uint16_t)((unsigned)c->what | ((unsigned)c->part << 8)),
                   .stage = c->stage,
                   .mb = c->mb,
                   .coll = (int32_t)pg->ncoll};
    if (sc_vec_push(vec, in) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->coll[pg->ncoll++] = (sc_ctail){.root = sc_op_has(c->op, SC_OPF_ROOTED) ? c->root : -1,
                                       .group = c->group, .step = c->step, .bytes = c->bytes};
    return SC_OK;
}

sc_status sc_prog_push_coll(sc_prog *pg, int d, const sc_coll *c)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if (pg->ngiven >= (4 * sc_prog_max_passes(pg) + 8 * (size_t)pg->P) * (size_t)pg->steps)
        return sc_fail(pg, SC_ERR_PROGRAM, "device %d: too many instructions for %d stages x "
                       "%d microbatches", d, pg->S, pg->m);
    pg->nmb = pg->m * pg->steps; /* given streams hold every step */
    sc_status st = sc_coll_push(pg, &pg->stream[d], c);
    if (st)
        return st;
    pg->ngiven++;
    pg->lowered = pg->given = 1;
    pg->verified = 0;
    return SC_OK;
}

void sc_prog_coll(const sc_prog *pg, const sc_instr *in, sc_coll *out)
{
    const sc_ctail *t = &pg->coll[in->coll];
    *out = (sc_coll){.op = in->op, .red = sc_op_has(in->op, SC_OPF_REDUCES) ? in->dir : 0,
                     .what = sc_coll_what(in), .part = sc_coll_part(in), .stage = in->stage,
                     .mb = in->mb, .step = t->step, .root = t->root, .group = t->group,
                     .bytes = t->bytes};
}

sc_status sc_prog_set_coll_cost(sc_prog *pg, double latency, double bandwidth)
{
    if (!(latency >= 0) || !isfinite(latency) || !(bandwidth > 0))
        return sc_fail(pg, SC_ERR_ARG, "collectives: the latency must be finite and >= 0 and "
                       "the bandwidth > 0 (got %g and %g)", latency, bandwidth);
    pg->coll_lat = latency;
    pg->coll_bw = bandwidth;
    sc_prog_invalidate(pg);
    return SC_OK;
}

double sc_prog_coll_latency(const sc_prog *pg) { return pg->coll_lat; }
double sc_prog_coll_bandwidth(const sc_prog *pg) { return pg->coll_bw; }

double sc_prog_coll_weight(const sc_prog *pg, const sc_instr *in)
{
    const sc_ctail *t = &pg->coll[in->coll];
    /* each device of the group stands for its EP ranks (ep.h) */
    int n = (t->group == 0 || t->group >= pg->ngroups ? pg->P : pg->ngrp[t->group]) * pg->ep;
    return n <= 1 ? 0 : sc_coll_factor(in->op, n) * t->bytes;
}

double sc_prog_coll_time(const sc_prog *pg, const sc_instr *in)
{
    const sc_ctail *t = &pg->coll[in->coll];
    /* each device of the group stands for its EP ranks (ep.h) */
    int n = (t->group == 0 || t->group >= pg->ngroups ? pg->P : pg->ngrp[t->group]) * pg->ep;
    /* a lowered ep program's all-to-alls are timed on their pass (ep.h) */
    if (n <= 1 || (pg->ep > 1 && !pg->given && !sc_op_has(in->op, SC_OPF_REDUCES | SC_OPF_ROOTED)))
        return 0;
    return pg->coll_lat + (isinf(pg->coll_bw) ? 0 : sc_prog_coll_weight(pg, in) / pg->coll_bw);
}

void sc_prog_instr_format(const sc_prog *pg, const sc_instr *in, char *buf, size_t len)
{
    sc_instr_format(in, buf, len);
    sc_prog_slice_names(pg, buf, len); /* "mb1.2": microbatch 1, slice 2 (slices.h) */
    if (!sc_op_is_coll(in->op) || in->coll < 0 || (size_t)in->coll >= pg->ncoll)
        return;
    const sc_ctail *t = &pg->coll[in->coll];
    size_t n = strlen(buf);
    if (sc_op_has(in->op, SC_OPF_ROOTED) && n < len)
        n += (size_t)snprintf(buf + n, len - n, " from d%d", t->root);
    if (t->step != 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, " step %d", t->step);
    if (t->group != 0 && n < len)
        snprintf(buf + n, len - n, " on group %d", t->group);
}

/* ---- which collectives an instruction reads ---- */

#define NONE ((size_t)-1)

/* Open addressing from a tag (what, stage, mb, part) to the index of the
 * last collective with it seen so far in the stream. */
typedef struct tagmap {
    uint64_t *key;
    size_t *val;
    size_t cap;
} tagmap;

static uint64_t tag_key(int what, int stage, int mb, int part)
{
    return ((uint64_t)(uint8_t)what << 56) | ((uint64_t)(part & 0xf) << 52) |
           ((uint64_t)((uint32_t)(stage + 1) & 0x3ffffu) << 34) |
           ((uint64_t)((uint32_t)(mb + 1) & 0x3ffffffu) << 8) | 1u;
}

static size_t tag_home(const tagmap *t, uint64_t k)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 17) & (t->cap - 1);
}

static void tag_put(tagmap *t, uint64_t k, size_t v)
{
    size_t h = tag_home(t, k);
    while (t->key[h] && t->key[h] != k)
        h = (h + 1) & (t->cap - 1);
    t->key[h] = k;
    t->val[h] = v;
}

static size_t tag_get(const tagmap *t, uint64_t k)
{
    for (size_t h = tag_home(t, k); t->key[h]; h = (h + 1) & (t->cap - 1))
        if (t->key[h] == k)
            return t->val[h];
    return NONE;
}

sc_status sc_coll_readers(const sc_prog *pg, int d, size_t base, size_t *last, char *err,
                          size_t errlen)
{
    const sc_vec *sv = &pg->stream[d];
    size_t ncoll = 0;
    for (size_t k = 0; k < sv->n; k++) {
        ncoll += sc_op_is_coll(sv->v[k].op);
        last[k] = NONE;
    }
    tagmap t = {0};
    t.cap = 16;
    while (t.cap < 2 * ncoll)
        t.cap *= 2;
    t.key = sc_calloc(t.cap, sizeof *t.key);
    t.val = sc_malloc(t.cap * sizeof *t.val);
    if (!t.key || !t.val) {
        sc_free(t.key);
        sc_free(t.val);
        snprintf(err, errlen, "out of memory mapping the readers of collectives");
        return SC_ERR_NOMEM;
    }
    sc_status st = SC_OK;
    size_t latest = NONE; /* the last collective so far */
    for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
        const sc_instr *in = &sv->v[k];
        if (sc_op_is_coll(in->op)) {
            tag_put(&t, tag_key(sc_coll_what(in), in->stage, in->mb, sc_coll_part(in)), k);
            latest = k;
            continue;
        }
        sc_cread rd[SC_CREAD_MAX];
        int nr = sc_coll_reads(pg, d, in, rd);
        for (int i = 0; i < nr && st == SC_OK; i++) {
            if (rd[i].what < 0) { /* every collective posted before it */
                if (latest != NONE && (last[k] == NONE || base + latest > last[k]))
                    last[k] = base + latest;
                continue;
            }
            for (int p = 0; p <= rd[i].part; p++) {
                size_t v = tag_get(&t, tag_key(rd[i].what, rd[i].stage, rd[i].mb, p));
                if (v == NONE) {
                    char a[96], s[24] = "";
                    sc_prog_instr_format(pg, in, a, sizeof a);
                    if (rd[i].stage >= 0)
                        snprintf(s, sizeof s, " s%d", rd[i].stage);
                    snprintf(err, errlen,
                             "d%d #%zu (%s) reads the collective of %s%s mb%d%s, but none comes "
                             "before it on d%d",
                             d, k, a, sc_op_name(rd[i].what), s, rd[i].mb,
                             p ? (p == 1 ? " part 1" : " (a later part)") : "", d);
                    st = SC_ERR_PROGRAM;
                    break;
                }
                if (last[k] == NONE || base + v > last[k])
                    last[k] = base + v;
            }
        }
    }
    sc_free(t.key);
    sc_free(t.val);
    return st;
}
