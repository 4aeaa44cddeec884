/*
 * torchcsv_write.c — writes PyTorch pipelining CSV (torchcsv.h): the
 * compute_only columns, and the compute_comms streams in the dialect of the
 * PyTorch version asked for.
 */
#include "torchcsv.h"
#include "ir/numfmt.h"
#include "ir/ir_impl.h"
#include "check/replay.h"
#include "check/verify.h"
#include "ir/p2p.h"

#include <stdlib.h>

/* PyTorch's name of a stage's pass kind. */
/* One cell: sep, then STAGE NAME MB ("3SEND_F12"), in one write; the
 * numbers by numfmt.h (printf was most of the export's time). */
static void put_cell(FILE *f, const char *sep, int stage, const char *name, int mb)
{
    char b[2 * SC_NUMFMT_MAX + 32];
    size_t n = 0;
    for (; *sep; sep++)
        b[n++] = *sep;
    n += (size_t)sc_fmt_int(b + n, stage);
    for (; *name && n < sizeof b - SC_NUMFMT_MAX; name++)
        b[n++] = *name;
    n += (size_t)sc_fmt_int(b + n, mb);
    fwrite(b, 1, n, f);
}

/* PyTorch's letter of a stage pass (its look, ir.h): F, I, W, B (the full
 * backward); "?" for the others (a pair's halves are written one by one;
 * R is left out; the rest refused before). */
static const char *compute_letter(int op)
{
    const char *t = sc_op_look_of(op)->torch;
    return t ? t : "?";
}

/* One compute cell: `0F3`, or for an overlapped pair PyTorch's
 * `(0F3;7B1)OVERLAP_F_B` (docs/interchange.md#pytorch-pipelining-csv). */
static void put_compute(FILE *f, const char *sep, const sc_instr *in)
{
    if (!sc_op_is_pair(in->op)) {
        put_cell(f, sep, in->stage, compute_letter(in->op), in->mb);
        return;
    }
    sc_instr b = sc_pair_half(in);
    fprintf(f, "%s(%dF%d;%d%s%d)OVERLAP_F_B", sep, in->stage, in->mb, b.stage,
            compute_letter(b.op), b.mb);
}

/* Column of every pass (compute_only): the first after the pass before it
 * on its device and after the pass it depends on. */
static sc_status columns(sc_prog *pg, const size_t *base, long *col)
{
    int P = pg->P, S = pg->S;
    size_t SM = (size_t)S * (size_t)pg->m;
    long *colF = malloc(SM * sizeof(long)), *colB = malloc(SM * sizeof(long));
    size_t *pc = calloc((size_t)P, sizeof(size_t));
    long *last = malloc((size_t)P * sizeof(long));
    sc_status st = SC_OK;
    if (!colF || !colB || !pc || !last) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < SM; i++)
        colF[i] = colB[i] = -1;
    for (int d = 0; d < P; d++)
        last[d] = -1;
    for (int left = P, progress = 1; left > 0 && progress;) {
        progress = 0;
        left = 0;
        for (int d = 0; d < P; d++) {
            const sc_vec *ov = &pg->order[d];
            while (pc[d] < ov->n) {
                sc_instr h[2]; /* a pass, or both halves of a pair: one cell */
                int nh = sc_instr_halves(&ov->v[pc[d]], h);
                long dep = -2; /* none */
                for (int i = 0; i < nh; i++) {
                    int dop, ds;
                    long e = -2;
                    if (sc_pass_dep(pg, &h[i], &dop, &ds))
                        e = (dop == SC_OP_F ? colF : colB)[SC_SM(pg, ds, h[i].mb)];
                    dep = e == -1 || dep == -1 ? -1 : e > dep ? e : dep;
                }
                if (dep == -1)
                    break; /* not placed yet */
                long c = last[d] + 1 > dep + 1 ? last[d] + 1 : dep + 1;
                col[base[d] + pc[d]] = c;
                for (int i = 0; i < nh; i++) {
                    if (sc_op_is_fwd(h[i].op))
                        colF[SC_SM(pg, h[i].stage, h[i].mb)] = c;
                    else if (sc_op_is_bgrad(h[i].op))
                        colB[SC_SM(pg, h[i].stage, h[i].mb)] = c;
                }
                last[d] = c;
                pc[d]++;
                progress = 1;
            }
            left += pc[d] < ov->n;
        }
        if (left > 0 && !progress)
            st = sc_fail(pg, SC_ERR_PROGRAM, "the passes form a dependency cycle across devices");
    }
done:
    free(colF);
    free(colB);
    free(pc);
    free(last);
    return st;
}

static sc_status write_compute_only(FILE *f, sc_prog *pg)
{
    sc_status st = sc_verify_passes(pg);
    if (st)
        return st;
    size_t *base = malloc(((size_t)pg->P + 1) * sizeof(size_t));
    if (!base)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    base[0] = 0;
    for (int d = 0; d < pg->P; d++)
        base[d + 1] = base[d] + pg->order[d].n;
    long *col = malloc((base[pg->P] + 1) * sizeof(long));
    if (!col) {
        free(base);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    if ((st = columns(pg, base, col)) == SC_OK) {
        for (int d = 0; d < pg->P; d++) {
            const sc_vec *ov = &pg->order[d];
            long c = 0;
            for (size_t k = 0; k < ov->n; k++) {
                for (; c < col[base[d] + k]; c++)
                    fputc(',', f); /* idle steps: empty cells */
                put_compute(f, "", &ov->v[k]);
            }
            fputc('\n', f);
        }
    }
    free(col);
    free(base);
    return st;
}

/* One transfer cell; PyTorch names the sending stage in SEND_* and the
 * receiving stage in RECV_*, our SEND names the consumer. */
static void put_transfer(FILE *f, const char *sep, const sc_instr *in)
{
    int act = in->dir == SC_DIR_ACT;
    if (sc_op_has(in->op, SC_OPF_OUT))
        put_cell(f, sep, act ? in->stage - 1 : in->stage + 1, act ? "SEND_F" : "SEND_B", in->mb);
    else
        put_cell(f, sep, in->stage, act ? "RECV_F" : "RECV_B", in->mb);
}

/* A SEND not yet waited for (PyTorch 2.15 and later): its cell's stage,
 * direction and microbatch, the index of its group on the device, and
 * whether a WAIT of the stream (an import's) has been written for it. */
typedef struct pending {
    int stage, act, mb;
    long group;
    int done;
    int peer;   /* the device it goes to */
    size_t key; /* its transfer's (direction, consuming stage, microbatch) */
    size_t at;  /* its place in the stream */
} pending;

static void put_wait(FILE *f, const char *sep, const pending *p)
{
    put_cell(f, sep, p->stage, p->act ? "WAIT_SEND_F" : "WAIT_SEND_B", p->mb);
}

/* The waits of every pending send whose group is at most g. */
static void put_waits(FILE *f, const char **sep, pending *q, size_t *head, size_t n, long g)
{
    for (; *head < n && q[*head].group <= g; (*head)++)
        if (!q[*head].done) {
            put_wait(f, *sep, &q[*head]);
            *sep = ",";
        }
}

static size_t xkey(const sc_prog *pg, int act, int stage, int mb)
{
    return ((size_t)!act * (size_t)pg->S + (size_t)stage) * (size_t)pg->m + (size_t)mb;
}

/* gloo's and the per-link mode (docs/modes.md#files): no group order to
 * lean on. The wait of a pending SEND to device e is free before a pass
 * that reads a RECV from e whose SEND e posts after its RECV of ours
 * (pos[] holds each transfer's place in its sender's stream, pos[K + key]
 * in its receiver's): that pass waits for e to post its SEND, so e has
 * posted our RECV, and the transfer completes once both halves are posted
 * (on a link, once the ones before it have: posted before it too). */
static void put_waits_peer(FILE *f, const char **sep, pending *q, size_t *head, size_t n,
                           const size_t *pos, size_t K, int from, size_t key)
{
    for (size_t i = *head; i < n; i++)
        if (!q[i].done && q[i].peer == from && pos[key] > pos[K + q[i].key]) {
            put_wait(f, *sep, &q[i]);
            *sep = ",";
            q[i].done = 1;
        }
    while (*head < n && q[*head].done)
        (*head)++;
}

/* The per-link mode with tcomm > 0: a link's transfers queue, so a send can
 * complete after a later receive from its peer. The wait of a pending SEND
 * goes before the first pass that starts, in the replay, once the SEND has
 * completed (t: the replay's times of device d's stream from t0, t1). Sound
 * in any timing: the peer posted our RECV at least tcomm before that, so
 * only from what happened before the pass, which is before the wait. */
static void put_waits_timed(FILE *f, const char **sep, pending *q, size_t *head, size_t n,
                            const double *t0, const double *t1, size_t k)
{
    for (size_t i = *head; i < n; i++)
        if (!q[i].done && t1[q[i].at] <= t0[k]) {
            put_wait(f, *sep, &q[i]);
            *sep = ",";
            q[i].done = 1;
        }
    while (*head < n && q[*head].done)
        (*head)++;
}

/* Group index on its device of the RECV a compute pass reads, or -1 when it
 * reads nothing from another device. recv_group[key] was set while walking
 * the device's stream (the verifier put that RECV before the pass). */
static long needed_group(const sc_prog *pg, const sc_instr *in, const long *recv_group, int d)
{
    int s = in->stage, act = sc_op_is_fwd(in->op);
    if (!act && !sc_op_is_bgrad(in->op))
        return -1; /* W reads nothing from another device */
    int ps = act ? s - 1 : s + 1;
    if (ps < 0 || ps >= pg->S || pg->stage_dev[ps] == d)
        return -1;
    return recv_group[((size_t)!act * (size_t)pg->S + (size_t)s) * (size_t)pg->m + (size_t)in->mb];
}

static sc_status write_compute_comms(FILE *f, sc_prog *pg, int version)
{
    if (!pg->lowered || !pg->verified)
        return sc_fail(pg, SC_ERR_ARG, "compute_comms needs a lowered, verified program");
    int waits = version >= SC_TORCH_WAITS;
    size_t K = 2 * (size_t)pg->S * (size_t)pg->m, most = 1;
    for (int d = 0; d < pg->P; d++)
        most = pg->stream[d].n > most ? pg->stream[d].n : most;
    int peer = waits && sc_prog_p2p(pg) != SC_P2P_NCCL; /* put_waits_peer */
    long *recv_group = waits ? malloc(K * sizeof(long)) : NULL;
    pending *q = waits ? malloc(most * sizeof(pending)) : NULL;
    int *reduced = calloc((size_t)pg->S, sizeof(int)); /* a stage's REDUCE_GRAD written */
    size_t *pos = peer ? malloc(2 * K * sizeof(size_t)) : NULL;
    if ((waits && (!recv_group || !q)) || (peer && !pos) || !reduced) {
        free(recv_group);
        free(q);
        free(pos);
        free(reduced);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    sc_times tm = {0};
    int timed = peer && sc_prog_p2p(pg) == SC_P2P_LINK && pg->tcomm > 0 &&
                sc_replay_timed(pg, &tm) == SC_OK;
    for (int d = 0; peer && d < pg->P; d++)
        for (size_t k = 0; k < pg->stream[d].n; k++) {
            const sc_instr *in = &pg->stream[d].v[k];
            if (sc_op_is_transfer(in->op))
                pos[(sc_op_has(in->op, SC_OPF_OUT) ? 0 : K) +
                    xkey(pg, in->dir == SC_DIR_ACT, in->stage, in->mb)] = k;
        }
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *sv = &pg->stream[d];
        const char *sep = "";
        size_t nq = 0, head = 0;
        long group = -1;
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            if (sc_op_is_transfer(in->op)) {
                group += sc_starts_group(sv->v, k);
                put_transfer(f, sep, in);
                sep = ",";
                int act = in->dir == SC_DIR_ACT;
                if (waits && sc_op_has(in->op, SC_OPF_OUT))
                    q[nq++] = (pending){act ? in->stage - 1 : in->stage + 1, act, in->mb, group, 0,
                                        in->peer, xkey(pg, act, in->stage, in->mb), k};
                else if (waits)
                    recv_group[((size_t)!act * (size_t)pg->S + (size_t)in->stage) * (size_t)pg->m +
                               (size_t)in->mb] = group;
            } else if (sc_op_is_slot(in->op) && in->op != SC_OP_R) {
                /* PyTorch has no recomputation pass (R is left out: activation
                 * checkpointing on the stage module does it, docs/recompute.md).
                 * docs/semantics.md#the-semantics: the pass waits for this
                 * group, hence for every group before it: their sends are
                 * complete, their waits free. A pair: both halves' groups. */
                sc_instr h[2];
                long g = -1;
                for (int i = sc_instr_halves(in, h); i-- > 0;) {
                    long gi = waits ? needed_group(pg, &h[i], recv_group, d) : -1;
                    g = gi > g ? gi : g;
                    int act = sc_op_is_fwd(h[i].op), ps = act ? h[i].stage - 1 : h[i].stage + 1;
                    if (peer && !timed && gi >= 0)
                        put_waits_peer(f, &sep, q, &head, nq, pos, K, pg->stage_dev[ps],
                                       xkey(pg, act, h[i].stage, h[i].mb));
                }
                if (waits && !peer)
                    put_waits(f, &sep, q, &head, nq, g);
                if (timed)
                    put_waits_timed(f, &sep, q, &head, nq, tm.t0 + tm.offset[d], tm.t1 + tm.offset[d], k);
                put_compute(f, sep, in);
                sep = ",";
            } else if (sc_op_is_wait(in->op) && waits) {
                /* A WAIT of the stream (an import's) is written where it is. */
                int act = in->dir == SC_DIR_ACT;
                for (size_t i = head; i < nq; i++)
                    if (!q[i].done && q[i].act == act && q[i].mb == in->mb &&
                        q[i].stage == (act ? in->stage - 1 : in->stage + 1)) {
                        put_wait(f, sep, &q[i]);
                        sep = ",";
                        q[i].done = 1;
                        break;
                    }
            } else if (sc_op_is_fsdp(in->op)) {
                /* FSDP (docs/fsdp.md#interchange): where the streams have
                 * them; a REDUCE_GRAD with its wait (PyTorch 2.15), so that
                 * REDUCE writes none for its stage. */
                int s = in->stage;
                fprintf(f, "%s%d%s", sep, s, sc_op_name(in->op));
                if (in->op == SC_OP_REDUCE_GRAD && waits)
                    fprintf(f, ",%dWAIT_REDUCE_GRAD", s);
                reduced[s] |= in->op == SC_OP_REDUCE_GRAD;
                sep = ",";
            } else if (in->op == SC_OP_REDUCE) {
                /* REDUCE waits for every group (rule 6): the last waits. */
                if (waits)
                    put_waits(f, &sep, q, &head, nq, group);
                for (int c = 0; c < pg->nchunks[d]; c++, sep = ",") {
                    int s = pg->dev_stages[d][c]; /* one reduction pending at a time */
                    if (reduced[s])
                        continue;
                    fprintf(f, "%s%dREDUCE_GRAD", sep, s);
                    if (waits)
                        fprintf(f, ",%dWAIT_REDUCE_GRAD", s);
                }
            }
            /* OPTIM is outside PyTorch's schedule; PyTorch has no offload
             * action: OFFLOAD, DROP, RELOAD are left out. */
        }
        if (waits && pg->fwd_only) /* no REDUCE: the stream's end waits for its sends, */
            put_waits(f, &sep, q, &head, nq, group); /* as _ScheduleForwardOnly does */
        fputc('\n', f);
    }
    free(recv_group);
    free(q);
    free(reduced);
    free(pos);
    sc_times_free(&tm);
    return SC_OK;
}

sc_status sc_torchcsv_write(FILE *f, sc_prog *pg, sc_torch_dialect dialect, int version)
{
    if (sc_vocab_split(sc_prog_vocab(pg)))
        return sc_fail(pg, SC_ERR_ARG, "PyTorch's pipelining schedules have no vocabulary passes "
                       "or collectives (vocab_par = %s): export json, trace or svg",
                       sc_vocab_name(sc_prog_vocab(pg)));
    if (pg->copies > 1)
        return sc_fail(pg, SC_ERR_ARG, "PyTorch's pipelining runs one copy of the model (this "
                       "program has %d, docs/guide.md#copies): export json, trace or svg",
                       pg->copies);
    if (pg->slices > 1) /* its microbatches would be our slices: a renaming (docs/slices.md) */
        return sc_fail(pg, SC_ERR_ARG, "PyTorch's pipelining has no sequence slices (this program "
                       "has %d per microbatch, docs/slices.md): export json, trace or svg",
                       pg->slices);
    /* PyTorch's file is one step's schedule, which the runtime repeats. */
    if (sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE)
        return sc_fail(pg, SC_ERR_ARG, "a PyTorch schedule holds one training step without "
                       "optimizer synchronization: export with -D steps=1 -D optim_sync=none "
                       "(this program has %d steps, optim_sync %s)", sc_prog_steps(pg),
                       sc_sync_name(sc_prog_optim_sync(pg)));
    sc_status st = dialect == SC_TORCH_COMPUTE_ONLY ? write_compute_only(f, pg)
                                                    : write_compute_comms(f, pg, version);
    if (st == SC_OK && (fflush(f) != 0 || ferror(f)))
        st = sc_fail(pg, SC_ERR_ARG, "write error");
    return st;
}
