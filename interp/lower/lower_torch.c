/*
 * lower_torch.c — PyTorch's placement of the transfers (lower.h,
 * sc_lower_torch); the compile driver chooses between it and ours.
 */
#include "lower.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"


/* The transfer a half sends (*to: the consuming stage, < 0: none; *dir),
 * as sc_lower decides it: a dependency across devices on the
 * microbatch's route. */
static void half_send(const sc_prog *pg, int d, const sc_instr *in, int *to, int *sdir)
{
    int s = in->stage, mb = in->mb;
    int is_f = sc_op_is_fwd(in->op), is_b = sc_op_is_bgrad(in->op);
    int first = sc_mb_first(pg, mb), last = sc_mb_last(pg, mb);
    *to = -1;
    *sdir = 0;
    if (is_f && s < last && pg->stage_dev[s + 1] != d)
        *to = s + 1, *sdir = SC_DIR_ACT;
    else if (is_b && s > first && pg->stage_dev[s - 1] != d)
        *to = s - 1, *sdir = SC_DIR_GRAD;
}

/* Whether the data a half reads is on its device: its RECV is in the
 * stream already, or the producing pass (on the same device) ran. have[]
 * is indexed by (dir, consuming stage, microbatch). */
static int half_ready(const sc_prog *pg, const sc_instr *in, const unsigned char *have)
{
    int s = in->stage, mb = in->mb, first = sc_mb_first(pg, mb), last = sc_mb_last(pg, mb);
    size_t SM = (size_t)pg->S * (size_t)pg->m;
    if (sc_op_is_fwd(in->op))
        return s == first || have[SM * SC_DIR_ACT + SC_SM(pg, s, mb)];
    if (sc_op_is_bgrad(in->op))
        return s == last || have[SM * SC_DIR_GRAD + SC_SM(pg, s, mb)];
    return 1;
}

sc_status sc_lower_torch(sc_prog *pg)
{
    int P = pg->P;
    size_t SM = (size_t)pg->S * (size_t)pg->m, tot = 0;
    for (int d = 0; d < P; d++)
        tot += pg->order[d].n;
    unsigned char *have = sc_calloc(2 * SM + 1, 1);
    size_t *next = sc_calloc((size_t)P, sizeof(size_t));
    sc_status st = have && next ? SC_OK : sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    for (int d = 0; d < P && st == SC_OK; d++) {
        pg->stream[d].n = 0;
        st = sc_vec_reserve(&pg->stream[d], 5 * pg->order[d].n + 2); /* a pair: 2 SENDs, 2 RECVs */
    }
    /* _add_send_recv: the ranks in turn, each scheduling its next pass once
     * what it reads is there; the pass's SEND follows it, and the peer's
     * RECV goes at the end of the peer's stream at that moment. */
    for (size_t done = 0; st == SC_OK && done < tot;) {
        int progress = 0;
        for (int d = 0; d < P && st == SC_OK; d++) {
            const sc_vec *ov = &pg->order[d];
            if (next[d] >= ov->n)
                continue;
            sc_instr h[2];
            int nh = sc_instr_halves(&ov->v[next[d]], h), ok = 1;
            for (int i = 0; i < nh; i++)
                ok &= half_ready(pg, &h[i], have);
            if (!ok)
                continue;
            sc_vec *sv = &pg->stream[d];
            sv->v[sv->n++] = ov->v[next[d]];
            for (int i = 0; i < nh; i++) {
                int to, sdir, s = h[i].stage, mb = h[i].mb;
                half_send(pg, d, &h[i], &to, &sdir);
                if (sc_op_is_fwd(h[i].op) && s < sc_mb_last(pg, mb))
                    have[SM * SC_DIR_ACT + SC_SM(pg, s + 1, mb)] = 1; /* local, or RECV below */
                if (sc_op_is_bgrad(h[i].op) && s > sc_mb_first(pg, mb))
                    have[SM * SC_DIR_GRAD + SC_SM(pg, s - 1, mb)] = 1;
                if (to < 0)
                    continue;
                int e = pg->stage_dev[to];
                sc_vec *pv = &pg->stream[e];
                sv->v[sv->n++] = (sc_instr){.op = SC_OP_SEND, .dir = (uint8_t)sdir, .stage = to,
                                            .mb = mb, .peer = e};
                pv->v[pv->n++] = (sc_instr){.op = SC_OP_RECV, .dir = (uint8_t)sdir, .stage = to,
                                            .mb = mb, .peer = d};
            }
            next[d]++;
            done++;
            progress = 1;
        }
        if (st == SC_OK && !progress)
            st = sc_fail(pg, SC_ERR_PROGRAM, "PyTorch's lowering cannot place the transfers of "
                         "this order (a pass waits for data no rank can send)");
    }
    for (int d = 0; d < P && st == SC_OK && !sc_prog_forward_only(pg); d++) { /* fwdonly.h */
        sc_vec *sv = &pg->stream[d];
        sv->v[sv->n++] = (sc_instr){.op = SC_OP_REDUCE, .stage = -1, .mb = -1, .peer = -1};
        sv->v[sv->n++] = (sc_instr){.op = SC_OP_OPTIM, .stage = -1, .mb = -1, .peer = -1};
    }
    sc_free(have);
    sc_free(next);
    return st;
}
