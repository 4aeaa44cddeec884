/*
 * rollback.c — post-validation's scenarios replayed (rollback.h).
 */
#include "rollback.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc_prog_has_rollback(const sc_prog *pg)
{
    /* Only post-validation's lowering (lower/postval.c) marks them; given
     * streams can hold any. */
    if (!pg->given && pg->sync != SC_SYNC_POSTVAL)
        return 0;
    for (int d = 0; d < pg->P; d++)
        for (size_t k = 0; k < pg->stream[d].n; k++)
            if (pg->stream[d].v[k].flags & (SC_IF_ROLLBACK | SC_IF_REDO_IN) &&
                (sc_op_is_compute(pg->stream[d].v[k].op) || sc_op_is_coll(pg->stream[d].v[k].op)))
                return 1;
    return 0;
}

/* Whether instruction in (after `path` VALIDATEs of its stream, less one)
 * runs in scenario scen, and with which flags. */
static int runs(const sc_prog *pg, int scen, int path, sc_instr *in)
{
    int all = scen == SC_SCEN_ALL;
    if ((in->flags & SC_IF_ROLLBACK) && (sc_op_is_compute(in->op) || sc_op_is_coll(in->op)))
        return all || scen == path;
    if (sc_op_is_fwd(in->op) && (in->flags & SC_IF_REDO_IN) && !all && in->mb / pg->m != scen + 1)
        in->flags &= (uint16_t)~SC_IF_REDO_IN; /* its producer was not redone */
    return 1;
}

/* Rewrites "dD #K" in the program's message from the filtered streams'
 * indices to the program's, and says which path it was. */
static void rename_message(sc_prog *pg, int scen, size_t *const *map, const size_t *n)
{
    char out[sizeof pg->err];
    size_t o = 0;
    if (scen >= 0)
        o = (size_t)snprintf(out, sizeof out, "on the rollback path of step %d: ", scen);
    else if (scen == SC_SCEN_ALL)
        o = (size_t)snprintf(out, sizeof out, "with every rollback path: ");
    for (const char *s = pg->err; *s && o + 1 < sizeof out;) {
        int d, len;
        size_t k;
        if (s[0] == 'd' && (s == pg->err || s[-1] == ' ' || s[-1] == '(') &&
            sscanf(s, "d%d #%zu%n", &d, &k, &len) == 2 && d >= 0 && d < pg->P && k < n[d]) {
            o += (size_t)snprintf(out + o, sizeof out - o, "d%d #%zu", d, map[d][k]);
            s += len;
            continue;
        }
        out[o++] = *s++;
    }
    out[o < sizeof out ? o : sizeof out - 1] = 0;
    snprintf(pg->err, sizeof pg->err, "%s", out);
}

/* The filtered streams' times (tf; map[d][j]: the stream index of kept
 * instruction j, nk[d] kept) over the whole streams into t: an instruction
 * left out takes no time, where its device is. */
static sc_status spread_times(sc_prog *pg, const sc_times *tf, const size_t *const *map,
                              const size_t *nk, sc_times *t)
{
    int P = pg->P;
    size_t N = 0;
    t->offset = sc_malloc(((size_t)P + 1) * sizeof(size_t));
    for (int d = 0; d < P; d++)
        N += pg->stream[d].n;
    t->t0 = sc_malloc((N + 1) * sizeof(double));
    t->t1 = sc_malloc((N + 1) * sizeof(double));
    if (!t->offset || !t->t0 || !t->t1) {
        sc_times_free(t);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the rollback paths");
    }
    t->offset[0] = 0;
    for (int d = 0; d < P; d++) {
        size_t n = pg->stream[d].n, o = t->offset[d], j = 0;
        double at = 0;
        t->offset[d + 1] = o + n;
        for (size_t k = 0; k < n; k++) {
            if (j < nk[d] && map[d][j] == k) {
                t->t0[o + k] = tf->t0[tf->offset[d] + j];
                t->t1[o + k] = at = tf->t1[tf->offset[d] + j];
                j++;
            } else {
                t->t0[o + k] = t->t1[o + k] = at;
            }
        }
    }
    return SC_OK;
}

sc_status sc_replay_scenario(sc_prog *pg, int scen, sc_times *t)
{
    int P = pg->P;
    sc_status st = SC_OK;
    sc_vec *keep = sc_calloc((size_t)P, sizeof(sc_vec));
    size_t **map = sc_calloc((size_t)P, sizeof(size_t *));
    size_t *nk = sc_calloc((size_t)P, sizeof(size_t));
    if (t)
        *t = (sc_times){0};
    if (!keep || !map || !nk) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the rollback paths");
        goto done;
    }
    for (int d = 0; d < P && st == SC_OK; d++) {
        const sc_vec *sv = &pg->stream[d];
        if (!(map[d] = sc_malloc((sv->n + 1) * sizeof(size_t)))) {
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the rollback paths");
            break;
        }
        int path = -1; /* the VALIDATE before: its path */
        for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
            sc_instr in = sv->v[k];
            if (in.op == SC_OP_VALIDATE)
                path++;
            if (!runs(pg, scen, path, &in))
                continue;
            map[d][keep[d].n] = k;
            if (sc_vec_push(&keep[d], in) != SC_OK)
                st = sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the rollback paths");
        }
        nk[d] = keep[d].n;
    }
    sc_times tf = {0};
    if (st == SC_OK) {
        for (int d = 0; d < P; d++) { /* the filtered streams stand in for a moment */
            sc_vec tmp = pg->stream[d];
            pg->stream[d] = keep[d];
            keep[d] = tmp;
        }
        st = sc_replay_timed(pg, &tf);
        for (int d = 0; d < P; d++) {
            sc_vec tmp = pg->stream[d];
            pg->stream[d] = keep[d];
            keep[d] = tmp;
        }
        if (st != SC_OK)
            rename_message(pg, scen, map, nk);
    }
    if (st == SC_OK && t)
        st = spread_times(pg, &tf, (const size_t *const *)map, nk, t);
    sc_times_free(&tf);
done:
    for (int d = 0; keep && d < P; d++)
        sc_vec_free(&keep[d]);
    for (int d = 0; map && d < P; d++)
        sc_free(map[d]);
    sc_free(keep);
    sc_free(map);
    sc_free(nk);
    return st;
}

sc_status sc_verify_rollbacks(sc_prog *pg)
{
    int paths = 0;
    for (size_t k = 0; k < pg->stream[0].n; k++)
        paths += pg->stream[0].v[k].op == SC_OP_VALIDATE;
    sc_status st = SC_OK;
    for (int k = 0; k < paths && k < 64 && st == SC_OK; k++)
        st = sc_replay_scenario(pg, k, NULL);
    if (st == SC_OK && paths > 1)
        st = sc_replay_scenario(pg, SC_SCEN_ALL, NULL);
    return st;
}
