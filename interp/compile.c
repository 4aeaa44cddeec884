/*
 * compile.c — the compile driver (compile.h): verify passes, lower, plan
 * the offload, prove the streams; nothing else calls the stages in order.
 */
#include "compile.h"

#include "check/caps.h"
#include "check/replay.h"
#include "check/rollback.h"
#include "check/steps.h"
#include "check/verify.h"
#include "ir/ir_impl.h"
#include "ir/p2p.h"
#include "lower/lower.h"
#include "lower/fsdp.h"
#include "ir/alloc.h"
#include "lower/offload.h"
#include "lower/recompute.h"
#include "lower/steps.h"
#include "schedule/dataflow.h"

#include <math.h>
#include <string.h>

/* Step 3 of compile.h: plans the host copies from the timing of the
 * transfer-only streams and checks the plan on the replay of the new ones,
 * which it leaves in *now (the proof of the new streams). */
static sc_status plan_offload(sc_prog *pg, sc_times *now)
{
    sc_times base;
    sc_offload_plan *pl = NULL;
    sc_status st = sc_replay_timed(pg, &base);
    if (st == SC_OK)
        st = sc_offload_plan_new(pg, &base, &pl);
    if (st == SC_OK)
        st = sc_replay_timed(pg, now);
    if (st == SC_OK && (st = sc_offload_plan_check(pl, now)) != SC_OK)
        sc_times_free(now);
    sc_offload_plan_free(pl);
    sc_times_free(&base);
    return st;
}

/* Step 3 of compile.h, first half: plans the recomputation from the timing
 * of the streams (levels: each device's, or NULL: the policy's). */
static sc_status plan_recompute(sc_prog *pg, const double *levels)
{
    sc_times base;
    sc_status st = sc_replay_timed(pg, &base);
    if (st == SC_OK)
        st = sc_recompute_plan(pg, &base, levels);
    sc_times_free(&base);
    return st;
}

/* The two budgets together (docs/recompute.md#budget): per record the
 * cheapest of keeping, offloading and recomputing that meets the cap.
 * Offload costs no compute while the host link keeps up, so each device
 * first offloads what the link takes (offload's budget, which backs off);
 * where that leaves it above the cap, it recomputes the least it needs on
 * top (in 1/64 chunk, longest lifespans first), found by doubling and then
 * halving its level, each try a whole plan (a recomputation delays the
 * passes after it, and so every offload window). */
typedef struct mix {
    sc_prog *pg;
    sc_vec *saved; /* [P] the lowered streams before any plan */
    double *lv, *peak, cap;
    sc_times *proof;
} mix;

/* Plans with levels m->lv; *over: the devices above the cap (a count). */
static sc_status mix_try(mix *m, int *over)
{
    sc_prog *pg = m->pg;
    sc_times_free(m->proof);
    *m->proof = (sc_times){0};
    for (int d = 0; d < pg->P; d++) {
        memcpy(pg->stream[d].v, m->saved[d].v, m->saved[d].n * sizeof(sc_instr));
        pg->stream[d].n = m->saved[d].n;
    }
    sc_status st = plan_recompute(pg, m->lv);
    if (st == SC_OK)
        st = plan_offload(pg, m->proof);
    if (st != SC_OK)
        return st;
    sc_stream_peaks(pg, m->peak);
    *over = 0;
    for (int d = 0; d < pg->P; d++)
        *over += m->peak[d] > m->cap + 1e-9 * (1 + m->cap);
    return SC_OK;
}

static sc_status plan_mix(sc_prog *pg, sc_times *proof)
{
    int P = pg->P, over = 0;
    mix m = {pg, sc_calloc((size_t)P, sizeof(sc_vec)), sc_calloc(4 * (size_t)P, sizeof(double)),
             NULL, fmin(pg->off.mem, pg->rc.mem), proof};
    double *lo = m.lv ? m.lv + P : NULL, *step = m.lv ? m.lv + 2 * P : NULL;
    m.peak = m.lv ? m.lv + 3 * P : NULL;
    sc_status st = m.saved && m.lv ? SC_OK : sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int d = 0; d < P && st == SC_OK; d++)
        if ((st = sc_vec_reserve(&m.saved[d], pg->stream[d].n)) == SC_OK) {
            memcpy(m.saved[d].v, pg->stream[d].v, pg->stream[d].n * sizeof(sc_instr));
            m.saved[d].n = pg->stream[d].n;
            step[d] = 1.0 / 64;
        }
    *proof = (sc_times){0};
    pg->off.soft = 1;
    /* Grow: double each device's step while it is above the cap. */
    int grew = 1;
    while (st == SC_OK && (st = mix_try(&m, &over)) == SC_OK && over && grew) {
        grew = 0;
        for (int d = 0; d < P; d++)
            if (m.peak[d] > m.cap + 1e-9 * (1 + m.cap) && m.lv[d] < pg->nchunks[d]) {
                lo[d] = m.lv[d];
                m.lv[d] = fmin(pg->nchunks[d], m.lv[d] + step[d]);
                step[d] *= 2;
                grew = 1;
            }
    }
    /* Halve: each device's level down to the least that keeps every device
     * within the cap (the others' levels as they are). */
    for (int d = 0; d < P && st == SC_OK && !over; d++) {
        double hi = m.lv[d], low = lo[d];
        if (hi <= 0)
            continue;
        while (st == SC_OK && hi - low > 1.0 / 64 + 1e-12) {
            m.lv[d] = round((low + hi) * 32) / 64;
            if ((st = mix_try(&m, &over)) == SC_OK && over)
                low = m.lv[d];
            else
                hi = m.lv[d];
        }
        m.lv[d] = hi;
        if (st == SC_OK && over)
            st = mix_try(&m, &over);
    }
    pg->off.soft = 0;
    for (int d = 0; m.saved && d < P; d++)
        sc_vec_free(&m.saved[d]);
    sc_free(m.saved);
    sc_free(m.lv);
    if (st != SC_OK) {
        sc_times_free(proof);
        *proof = (sc_times){0};
    }
    return st;
}

/* Step 3: the memory policies. Returns whether *proof holds the proof of
 * the new streams (the offload plan's replay). */
static sc_status plan_memory(sc_prog *pg, sc_times *proof, int *proved)
{
    sc_status st = SC_OK;
    *proved = 0;
    if (pg->rc.policy == SC_RECOMPUTE_BUDGET && pg->off.policy == SC_OFFLOAD_BUDGET) {
        if ((st = plan_mix(pg, proof)) == SC_OK)
            *proved = 1;
        return st;
    }
    if (pg->rc.policy != SC_RECOMPUTE_NONE && (st = plan_recompute(pg, NULL)) != SC_OK)
        return st;
    if (pg->off.policy != SC_OFFLOAD_NONE) {
        if ((st = plan_offload(pg, proof)) == SC_OK)
            *proved = 1;
    }
    return st;
}

static double makespan(const sc_prog *pg, const sc_times *t)
{
    double mk = 0;
    size_t n = t->offset[pg->P];
    for (size_t k = 0; k < n; k++)
        mk = t->t1[k] > mk ? t->t1[k] : mk;
    return mk;
}

/* Copies the streams into keep[], or back from it (back). */
static void copy_streams(sc_prog *pg, sc_vec *keep, int back)
{
    for (int d = 0; d < pg->P; d++) {
        sc_vec *from = back ? &keep[d] : &pg->stream[d], *into = back ? &pg->stream[d] : &keep[d];
        memcpy(into->v, from->v, from->n * sizeof(sc_instr));
        into->n = from->n;
    }
}

/* Swaps the streams with keep[] (no copy: PyTorch's placement is built in
 * keep's buffers while keep holds ours). */
static void swap_streams(sc_prog *pg, sc_vec *keep)
{
    for (int d = 0; d < pg->P; d++) {
        sc_vec t = pg->stream[d];
        pg->stream[d] = keep[d];
        keep[d] = t;
    }
}

/* *keep: P buffers of `most` instructions each, made on first use. */
static sc_status buffers(sc_prog *pg, sc_vec **keep, size_t most)
{
    if (!*keep && !(*keep = sc_calloc((size_t)pg->P, sizeof **keep)))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    for (int d = 0; d < pg->P; d++)
        if (sc_vec_reserve(&(*keep)[d], most) != SC_OK)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    return SC_OK;
}

static void buffers_free(const sc_prog *pg, sc_vec *keep)
{
    for (int d = 0; keep && d < pg->P; d++)
        sc_vec_free(&keep[d]);
    sc_free(keep);
}

/* Whether the streams have split groups (SC_IF_GROUP) in the NCCL mode. */
static int has_split(const sc_prog *pg)
{
    int split = 0;
    for (int d = 0; d < pg->P && sc_prog_p2p(pg) == SC_P2P_NCCL; d++)
        for (size_t k = 0; k < pg->stream[d].n; k++)
            split |= (pg->stream[d].v[k].flags & SC_IF_GROUP) != 0;
    return split;
}

/* The makespan as their compute_comms file reads in the NCCL mode of the
 * streams src (NULL: the program's own) into *fig, -1 when they do not
 * verify: a file has no groups, its reader makes one of adjacent transfer
 * cells (docs/modes.md#files), so the split groups are dropped for it. The
 * program's streams are left as they were (saved in *keep, buffers of
 * `most`, meanwhile). */
static sc_status file_figure(sc_prog *pg, sc_vec *src, sc_vec **keep, size_t most, double *fig)
{
    *fig = -1;
    sc_status st = buffers(pg, keep, most);
    if (st != SC_OK)
        return st;
    copy_streams(pg, *keep, 0);
    if (src)
        copy_streams(pg, src, 1);
    for (int d = 0; d < pg->P; d++)
        for (size_t k = 0; k < pg->stream[d].n; k++)
            pg->stream[d].v[k].flags &= (uint16_t)~SC_IF_GROUP;
    sc_times tf;
    if (sc_replay_timed(pg, &tf) == SC_OK) {
        *fig = makespan(pg, &tf);
        sc_times_free(&tf);
    }
    copy_streams(pg, *keep, 1);
    return SC_OK;
}

/* The makespan of the dataflow timing of the orders into *mk: no lowering
 * of them replays faster (every pass of the replay starts no sooner than
 * in that timing: its device runs the same passes in the same order at the
 * same costs, and a RECV completes T_comm after its SEND's group starts,
 * which is after the producer ends), so a candidate whose figure would have
 * to be below it cannot be chosen and need not be built. */
static sc_status flow_makespan(sc_prog *pg, double *mk)
{
    size_t n = 0;
    for (int d = 0; d < pg->P; d++)
        n += pg->order[d].n;
    double *t = sc_malloc(2 * (n + 1) * sizeof(double));
    if (!t)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    sc_status st = sc_dataflow(pg, t, t + n + 1, NULL);
    *mk = 0;
    for (size_t k = 0; k < n && st == SC_OK; k++)
        *mk = t[n + 1 + k] > *mk ? t[n + 1 + k] : *mk;
    sc_free(t);
    return st;
}

/* Step 2's choice (lower.h: lowering per mode, docs/semantics.md#lowering-per-mode):
 * after sc_lower, for a plain program of one step with tcomm > 0, replays
 * ours and PyTorch's placement (sc_lower_torch) in the program's mode and
 * keeps PyTorch's only where it verifies, is no slower as streams and
 * strictly faster as streams or as its file reads; otherwise the streams
 * stay ours, unchanged. Lowered for a file (SC_LOWER_FILE, p2p.h), the
 * file's reading decides, the streams' figure breaking a tie, so the file
 * is never slower than PyTorch's placement read back; then tcomm = 0 is
 * judged too in the NCCL mode, where the file's merged groups can wait.
 * A candidate that does not verify is dropped; PyTorch's is not built
 * when ours already meets the dataflow timing where it would have to be
 * faster (flow_makespan). The replay of the streams kept is their proof:
 * into *proof, and *proved = 1. */
static sc_status pick_lowering(sc_prog *pg, sc_times *proof, int *proved)
{
    /* Only plain streams (transfers, REDUCE, OPTIM) of one step, and only
     * with a transfer time: at tcomm = 0 ours meets the dataflow timing,
     * which no lowering of the order beats (docs/semantics.md#lowering),
     * except as an NCCL-mode file, whose merged groups can still wait. */
    int file = pg->target == SC_LOWER_FILE;
    int judged = pg->tcomm > 0 || (file && sc_prog_p2p(pg) == SC_P2P_NCCL);
    *proof = (sc_times){0};
    *proved = 0;
    if (!judged || pg->ncoll || pg->copies > 1 || sc_vocab_split(pg->vocab) ||
        pg->off.policy != SC_OFFLOAD_NONE || pg->rc.policy != SC_RECOMPUTE_NONE ||
        pg->steps > 1 || pg->sync != SC_SYNC_NONE)
        return SC_OK;
    int P = pg->P;
    size_t most = 1;
    for (int d = 0; d < P; d++)
        most = pg->stream[d].n > most ? pg->stream[d].n : most;
    for (int d = 0; d < P; d++)
        most = 5 * pg->order[d].n + 2 > most ? 5 * pg->order[d].n + 2 : most;
    sc_vec *keep = NULL, *mine = NULL;
    sc_times ta = {0}, tb = {0};
    double a = -1, af = -1, b = -1, bf = -1, floor = 0;
    sc_status st = SC_OK;
    if (sc_replay_timed(pg, &ta) != SC_OK) /* ours does not verify: the proof reports it */
        goto done;
    a = af = makespan(pg, &ta);
    /* PyTorch's placement only where it verifies and, for the streams, is
     * no slower as streams and strictly faster as streams or as a file
     * (the larger figure); for a file, is faster as a file, or as fast and
     * faster as streams. A file figure (a replay) is made only where it
     * can decide: for a file, ours at once; for the streams, once
     * PyTorch's is as fast as ours as streams. The figures of PyTorch's
     * are at least the dataflow timing's: within half the margin of what
     * they must beat, it cannot win and is not built. */
    int sa = has_split(pg);
    double eps = 1e-9 * (1 + a);
    if (sa && file && (st = file_figure(pg, NULL, &keep, most, &af)) != SC_OK)
        goto done;
    floor = pg->flow_mk; /* flow_makespan's figure: sc_lower's dataflow timing, just made */
    if ((file || !sa) && floor >= a - eps / 2 && (!file || floor >= af - eps / 2))
        goto done;
    pg->err[0] = '\0';
    if ((st = buffers(pg, &mine, most)) != SC_OK)
        goto done;
    swap_streams(pg, mine); /* mine: ours */
    if (sc_lower_torch(pg) == SC_OK && sc_replay_timed(pg, &tb) == SC_OK)
        b = bf = makespan(pg, &tb);
    int take = 0;
    if (b >= 0 && (file || b <= a + eps)) {
        if (has_split(pg) && (st = file_figure(pg, NULL, &keep, most, &bf)) != SC_OK)
            goto done;
        if (sa && !file && (st = file_figure(pg, mine, &keep, most, &af)) != SC_OK)
            goto done;
        double wa = af > a ? af : a, wb = bf > b ? bf : b;
        take = file ? bf < af - eps || (bf <= af + eps && b < a - eps) : wb < wa - eps;
    }
    if (take) {
        sc_times_free(&ta);
        ta = tb;
        tb = (sc_times){0};
    } else {
        swap_streams(pg, mine);
    }
done:
    sc_times_free(&tb);
    if (st == SC_OK && a >= 0) {
        *proof = ta;
        *proved = 1;
    } else {
        sc_times_free(&ta);
    }
    buffers_free(pg, keep);
    buffers_free(pg, mine);
    pg->err[0] = '\0'; /* a refused candidate's message is not the program's */
    return st;
}

/* The proof of the lowered streams, and their timing into *t when t: with
 * post-validation's rollback paths, the scenario where none runs, then
 * (once) each path and all of them (check/rollback.h). */
static sc_status prove(sc_prog *pg, sc_times *t)
{
    if (!sc_prog_has_rollback(pg))
        return t ? sc_replay_timed(pg, t) : sc_verify_streams(pg);
    sc_status st = sc_replay_scenario(pg, SC_SCEN_NONE, t);
    if (st == SC_OK && !pg->verified && (st = sc_verify_rollbacks(pg)) != SC_OK && t)
        sc_times_free(t);
    return st;
}

/* FSDP's UNSHARD and RESHARD (docs/fsdp.md#policies), into one step's
 * streams before the memory plans, which do not know them yet. */
static sc_status lower_fsdp(sc_prog *pg)
{
    if (!pg->fsdp.dp)
        return SC_OK;
    const char *no = pg->rc.policy != SC_RECOMPUTE_NONE ? "a recompute policy"
                     : pg->off.policy != SC_OFFLOAD_NONE ? "an offload policy"
                     : pg->sync == SC_SYNC_POSTVAL    ? "post-validation"
                     : sc_vocab_split(pg->vocab)      ? "a split vocabulary (vocab_par)"
                                                      : NULL;
    if (no) {
        pg->lowered = 0;
        return sc_fail(pg, SC_ERR_ARG, "fsdp: not supported with %s yet (docs/fsdp.md)", no);
    }
    sc_status st = SC_OK;
    if (pg->fsdp.policy != SC_FSDP_DERIVED || !isfinite(sc_prog_mem_limit(pg))) {
        st = sc_lower_fsdp(pg);
    } else { /* the derived policy under a cap: each device's widest window that fits */
        for (int d = 0; d < pg->P && st == SC_OK; d++) {
            sc_vec saved = {0};
            if ((st = sc_vec_reserve(&saved, pg->stream[d].n)) != SC_OK)
                break;
            memcpy(saved.v, pg->stream[d].v, pg->stream[d].n * sizeof(sc_instr));
            saved.n = pg->stream[d].n;
            for (int R = pg->nchunks[d]; R >= 1 && st == SC_OK; R--) {
                pg->stream[d].n = 0;
                for (size_t k = 0; k < saved.n && st == SC_OK; k++)
                    st = sc_vec_push(&pg->stream[d], saved.v[k]);
                if (st == SC_OK)
                    st = sc_lower_fsdp_device(pg, d, R);
                double cur = 0, top = 0;
                for (size_t k = 0; k < pg->stream[d].n; k++)
                    top = fmax(top, cur += sc_instr_mem(pg, &pg->stream[d].v[k]));
                if (top <= sc_prog_mem_cap(pg, d) + 1e-9)
                    break;
            }
            sc_vec_free(&saved);
        }
    }
    if (st != SC_OK)
        pg->lowered = 0;
    return st;
}

/* The pipeline; the timing of the verified streams into *t when t. */
static sc_status compile(sc_prog *pg, sc_times *t)
{
    if (t)
        *t = (sc_times){0};
    if (pg->verified)
        return t ? prove(pg, t) : SC_OK;
    /* The vocabulary passes (docs/vocab.md) are placed in one step. */
    if (sc_vocab_split(pg->vocab) && (pg->steps > 1 || pg->sync != SC_SYNC_NONE))
        return sc_fail(pg, SC_ERR_ARG,
                       "program: vocab_par = %s places the vocabulary passes of one training "
                       "step: give steps = 1 and optim_sync = none (this program has %d steps, "
                       "optim_sync %s)",
                       sc_vocab_name(pg->vocab), pg->steps, sc_sync_name(pg->sync));
    /* Overlapped pairs (docs/semantics.md#overlapped-pairs) are lowered
     * with transfers only: no host copies, recomputation, vocabulary
     * collectives or rollback paths around them yet. */
    const char *nopair = sc_vocab_split(pg->vocab) ? "a split vocabulary (vocab_par)"
                         : pg->off.policy != SC_OFFLOAD_NONE ? "offload"
                         : pg->rc.policy != SC_RECOMPUTE_NONE ? "recompute"
                         : pg->sync == SC_SYNC_POSTVAL ? "post-validation" : NULL;
    if (nopair && sc_prog_has_pairs(pg))
        return sc_fail(pg, SC_ERR_ARG,
                       "program: overlapped pairs (F+B) do not go with %s yet: give the pair's "
                       "passes apart",
                       nopair);
    if (pg->copies > 1 && (sc_vocab_split(pg->vocab) || pg->sync == SC_SYNC_POSTVAL))
        return sc_fail(pg, SC_ERR_ARG,
                       "program: copies = %d (docs/guide.md#copies) does not go with %s yet",
                       pg->copies, sc_vocab_split(pg->vocab) ? "a split vocabulary (vocab_par)"
                                                             : "post-validation");
    sc_status st = sc_prog_check_forward_only(pg); /* fwdonly.h */
    if (st == SC_OK)
        st = sc_prog_check_slices(pg); /* slices.h */
    if (st != SC_OK || (st = sc_verify_passes_again(pg)) != SC_OK) /* proved where built */
        return st;
    sc_times proof = {0};
    int proved = 0;
    if (!pg->lowered) {
        if ((st = sc_lower(pg)) != SC_OK || (st = pick_lowering(pg, &proof, &proved)) != SC_OK)
            return st;
        /* FSDP's instructions change the streams: the choice's replay is
         * not their proof. */
        if (proved && pg->fsdp.dp) {
            sc_times_free(&proof);
            proved = 0;
        }
        if ((st = lower_fsdp(pg)) != SC_OK)
            return st;
        sc_prog_free_offload_info(pg);
        sc_prog_free_recompute_info(pg);
        /* (The choice's proof comes only without memory policies.) */
        if (!proved && (st = plan_memory(pg, &proof, &proved)) != SC_OK) {
            for (int d = 0; d < pg->P; d++)
                pg->stream[d].n = 0;
            pg->lowered = 0;
            return st;
        }
        /* Every step after the first, and the synchronization of their
         * optimizer steps: the proof of one step is not theirs. */
        if (pg->steps > 1 || pg->sync != SC_SYNC_NONE) {
            if (proved)
                sc_times_free(&proof);
            proved = 0;
            if ((st = sc_lower_steps(pg)) != SC_OK) {
                sc_prog_invalidate(pg);
                return st;
            }
        }
    }
    if ((st = sc_verify_steps(pg)) != SC_OK || (st = sc_verify_caps(pg)) != SC_OK) {
        if (proved)
            sc_times_free(&proof);
        return st;
    }
    if (proved) {
        if (t)
            *t = proof;
        else
            sc_times_free(&proof);
    } else {
        st = prove(pg, t);
    }
    if (st == SC_OK)
        pg->verified = 1;
    return st;
}

sc_status sc_check(sc_prog *pg) { return compile(pg, NULL); }

sc_status sc_sim_floor(sc_prog *pg, double *mk)
{
    *mk = -1;
    if (sc_vocab_split(pg->vocab) || pg->fsdp.dp || pg->copies > 1 ||
        pg->off.policy != SC_OFFLOAD_NONE || pg->rc.policy != SC_RECOMPUTE_NONE ||
        pg->steps > 1 || pg->sync != SC_SYNC_NONE)
        return SC_OK;
    sc_status st = sc_verify_passes_again(pg); /* a recipe's: proved where built */
    if (st == SC_OK)
        st = flow_makespan(pg, mk);
    if (st == SC_ERR_NOMEM)
        return st;
    if (st != SC_OK)
        *mk = -1;
    pg->err[0] = '\0'; /* the compile reports what is wrong */
    return SC_OK;
}

int sc_is_verified(const sc_prog *pg) { return pg->verified; }

sc_status sc_compile_timed(sc_prog *pg, sc_times *t) { return compile(pg, t); }

sc_status sc_offload_lives(sc_prog *pg, sc_record_life *ls)
{
    sc_offload_cfg keep = pg->off;
    sc_recompute_cfg rkeep = pg->rc;
    if (keep.policy != SC_OFFLOAD_NONE || rkeep.policy != SC_RECOMPUTE_NONE) {
        pg->off.policy = SC_OFFLOAD_NONE;
        pg->rc.policy = SC_RECOMPUTE_NONE;
        sc_prog_invalidate(pg);
    }
    sc_times b;
    sc_status st = sc_compile_timed(pg, &b);
    for (int d = 0; d < pg->P && st == SC_OK; d++) {
        const sc_vec *sv = &pg->stream[d];
        for (size_t k = 0, hi = 0, nh = 1; k < sv->n; k += ++hi >= nh, hi %= nh) {
            sc_instr h[2]; /* a pass, or each half of a pair (both timed as it) */
            nh = (size_t)sc_instr_halves(&sv->v[k], h);
            const sc_instr *in = &h[hi];
            if (!sc_op_is_compute(in->op) || in->mb >= pg->m)
                continue; /* the first step's lives stand for every step's */
            size_t g = b.offset[d] + k;
            sc_record_life *l = &ls[SC_SM(pg, in->stage, in->mb)];
            l->stage = in->stage;
            l->mb = in->mb;
            l->device = d;
            l->chunk = pg->chunk[in->stage];
            if (sc_op_is_fwd(in->op)) {
                l->f_start = b.t0[g];
                l->f_end = b.t1[g];
            }
            if (sc_op_is_bgrad(in->op)) {
                l->b_start = b.t0[g];
                l->b_end = b.t1[g];
            }
            if (sc_op_is_wgrad(in->op))
                l->end = b.t1[g];
        }
    }
    for (int s = 0; s < pg->S && st == SC_OK; s++)
        for (int mb = 0; mb < pg->m; mb++)
            ls[SC_SM(pg, s, mb)].transfer = sc_offload_time(pg, s, 1) * sc_len_k(pg, SC_LK_MEM, s, mb);
    sc_times_free(&b);
    if (keep.policy != SC_OFFLOAD_NONE || rkeep.policy != SC_RECOMPUTE_NONE) {
        pg->off = keep;
        pg->rc = rkeep;
        sc_prog_invalidate(pg);
    }
    return st;
}
