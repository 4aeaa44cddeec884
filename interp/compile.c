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
#include "lower/lower.h"
#include "lower/offload.h"
#include "lower/steps.h"

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
    sc_status st = sc_verify_passes(pg);
    if (st != SC_OK)
        return st;
    sc_times proof = {0};
    int proved = 0;
    if (!pg->lowered) {
        if ((st = sc_lower(pg)) != SC_OK)
            return st;
        sc_prog_free_offload_info(pg);
        if (pg->off.policy != SC_OFFLOAD_NONE) {
            if ((st = plan_offload(pg, &proof)) != SC_OK) {
                for (int d = 0; d < pg->P; d++)
                    pg->stream[d].n = 0;
                pg->lowered = 0;
                return st;
            }
            proved = 1;
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

sc_status sc_compile_timed(sc_prog *pg, sc_times *t) { return compile(pg, t); }

sc_status sc_offload_lives(sc_prog *pg, sc_record_life *ls)
{
    sc_offload_cfg keep = pg->off;
    if (keep.policy != SC_OFFLOAD_NONE) {
        pg->off.policy = SC_OFFLOAD_NONE;
        sc_prog_invalidate(pg);
    }
    sc_times b;
    sc_status st = sc_compile_timed(pg, &b);
    for (int d = 0; d < pg->P && st == SC_OK; d++) {
        const sc_vec *sv = &pg->stream[d];
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
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
            ls[SC_SM(pg, s, mb)].transfer = sc_offload_time(pg, s, 1);
    sc_times_free(&b);
    if (keep.policy != SC_OFFLOAD_NONE) {
        pg->off = keep;
        sc_prog_invalidate(pg);
    }
    return st;
}
