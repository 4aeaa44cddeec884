/*
 * ir_impl.h — the body of sc_prog, for the modules of interp/ only.
 * Outside interp/, use the accessors of ir.h.
 * Tested by: tests/unit/test_opkinds.c, tests/unit/test_pair.c.
 */
#ifndef SC_IR_IMPL_H
#define SC_IR_IMPL_H

#include "ir.h"
#include "offload_cfg.h"
#include "recompute_cfg.h"
#include <stdarg.h>

/* A growable array of instructions (one device's order or stream). */
typedef struct sc_vec {
    sc_instr *v;
    size_t n, cap;
} sc_vec;

/* The cells of a file (p2p.h: sc_prog_note_cell): one device's, by
 * instruction of its given stream; 0 where none was noted. */
typedef struct sc_cellv {
    int32_t *v;
    size_t n, cap;
} sc_cellv;
/* The part of a collective's description the instruction does not hold
 * (sc_instr.coll indexes the program's array of them). */
typedef struct sc_ctail {
    int32_t root, group, step;
    double bytes;
} sc_ctail;

struct sc_prog {
    int P, S, m;
    int *stage_dev; /* [S] placement */
    int *chunk;     /* [S] index of the stage among its device's stages */
    int *nchunks;   /* [P] stages per device */
    int **dev_stages; /* [P][nchunks] stages of each device, ascending */
    double *tf, *tb, *tw; /* [S] per-stage costs */
    double *tbw;    /* [S] BW's own time; NAN: tb + tw */
    double *topt;   /* [S] the optimizer step of the stage's parameters (OPTIM) */
    double *tfb;    /* [S] time of a pair of F and B at the stage's costs; NAN: tf + tb */
    double *ta;     /* [S] communication part of F, B and BW (all-to-all), exposed alone */
    int seconds;    /* costs are seconds (a cost file), not abstract units */
    double *mem;    /* [S] units per (stage, microbatch) */
    double tcomm, w_keep;
    double *wks;    /* [S] per-stage w_keep (sc_prog_set_stage_w_keep), or NULL: w_keep */
    int p2p;        /* SC_P2P_*: the semantics the replay models */
    int target;     /* SC_LOWER_*: what pick_lowering judges (p2p.h) */
    double eager_bytes, msg_bytes; /* NCCL's eager sends of a file's cells (p2p.h) */
    sc_cellv *cells;  /* [P] the file cell of each given stream instruction, or NULL */
    double mem_limit; /* peak memory allowed per device, units (INFINITY: none); with
                       * per-device caps, the smallest of them */
    double *mem_cap;  /* [P] per-device caps (memcap.c), or NULL: mem_limit on every device */
    double *cap_need; /* [P] the least peak sc_cap_fit reaches per device, or NULL (not run) */
    int units_moved;  /* the memory model changed after the orders were made (run's bytes):
                       * a fit, a rule's knob and cap_need were in the old units */
    int cap_refused;  /* the last error refused the program for its memory cap */
    sc_vec *order;  /* [P] compute passes as given */
    sc_vec *stream; /* [P] lowered; n = 0 until lowered */
    int lowered, verified;
    void *vsnap;    /* what the last sc_verify_passes that passed read (check/verify.c) */
    double flow_mk; /* the makespan of the dataflow timing the last sc_lower lowered by (the
                     * compile driver reads it right after; compile.c's flow_makespan) */
    int given;      /* streams came from sc_prog_push_stream: never re-lowered */
    size_t npasses; /* Σ order[d].n: at most sc_prog_max_passes (a guard on memory) */
    size_t ngiven;  /* Σ stream[d].n of given streams, likewise bounded */
    int copies;     /* copies of the model (sc_prog_set_copies); 1: every mb every stage */
    int fwd_only;   /* forward-only: F passes only (fwdonly.h) */
    int ep;         /* expert-parallel degree (ep.h); 1: none */
    double *ep_bytes; /* [3S+2P] a2a bytes, times (NAN: from bytes), dense bytes, layers,
                       routed share; or NULL (ep.c) */
    int *ep_grp;    /* [P] each device's EP group, -1 not made yet, or NULL */
    sc_fsdp_cfg fsdp; /* FSDP's data-parallel group (fsdp.h); dp = 0: none */
    int steps;      /* training steps (1..SC_MAX_STEPS) */
    int sync;       /* sc_sync of the optimizer steps */
    int nmb;        /* microbatch numbers in the streams: m, or m·steps once unrolled */
    sc_offload_cfg off;   /* offload policy (offload.h); policy NONE: none */
    double *off_frac;     /* [S*m] fractions of the TABLE policy, or NULL */
    double **off_levels;  /* [S] fractions the runtime can move, or NULL (offload.h) */
    int *off_nlevels;     /* [S] */
    sc_offload_info *off_info; /* what the last lowering moved, or NULL */
    sc_recompute_cfg rc;  /* recomputation policy (recompute_cfg.h); policy NONE: none */
    double *rc_frac;      /* [S*m] fractions of the TABLE policy, or NULL */
    double *rc_q;         /* [S*m] what the last lowering recomputes, or NULL */
    sc_recompute_info *rc_info; /* what the last lowering recomputed, or NULL */
    sc_ctail *coll;       /* [ncoll] collectives of the streams (sc_instr.coll) */
    void *rcache;         /* check/'s matching of the verified streams' collectives, */
    void (*rcache_free)(void *); /* kept for the next timed replay (replay_coll.c) */
    size_t ncoll, capcoll;
    int **grp;            /* [ngroups] members of each group, ascending; grp[0]: all */
    int *ngrp;            /* [ngroups] */
    int ngroups;
    double coll_lat, coll_bw; /* cost of collectives (sc_prog_set_coll_cost) */
    sc_vocab vocab;       /* where the vocabulary layers go (docs/vocab.md) */
    double *vcost[4];     /* [P] times of S, T, E, EW on each device */
    double *vmem;         /* [P] units of S's record (freed by T) */
    double vact_bytes, vrow_bytes; /* sizes of the vocabulary collectives */
    struct sc_model_desc *model; /* the model the costs came from (flops.h), or NULL */
    struct sc_mdesc *mdesc; /* its description (the program's copy) */
    void (*mdesc_free)(struct sc_mdesc *); /* set by model/flops.c */
    int *slayers;         /* [S] its transformer layers per stage */
    double *pbytes;       /* [P] its parameter bytes per device (with gradients, optimizer) */
    struct sc_dev_bytes *dbytes; /* [P] what each device holds besides activations */
    double unit_bytes;    /* bytes of one unit of activation memory */
    double byte_unit;     /* the same from a cost file or a run (memcap.c), 0: unknown */
    double *len;          /* [m] tokens of each microbatch (lengths.h), or NULL: alike */
    double len_mean;      /* their mean */
    double *len_lin;      /* [SC_LK_COUNT * S] linear shares (the model's), or NULL: all 1 */
    double len_ref;       /* the model's seq when len_lin is set, else 0 (the mean) */
    double *len_fix;      /* [SC_LK_COUNT * S] fixed shares (a cost file's), or NULL: all 0 */
    int slices, slice_split; /* causal slices per microbatch, their split (slices.h) */
    double *len_rec;      /* [2 S m] measured units, kept share of each record, or NULL */
    char err[768];
};

sc_status sc_vec_push(sc_vec *vec, sc_instr in);
/* Appends compute instruction `in` (a pass or a pair, checked by the
 * caller) to device d's order, within the bound on passes. */
sc_status sc_order_add(sc_prog *pg, int d, sc_instr in);
/* Room for n instructions in all (n - vec->n more pushes need no growth). */
sc_status sc_vec_reserve(sc_vec *vec, size_t n);
void sc_vec_free(sc_vec *vec);

/* Appends collective c to vec (a stream of pg), its description to pg->coll.
 * Checks the kind, reduction, tag part and group; not the members. */
sc_status sc_coll_push(sc_prog *pg, sc_vec *vec, const sc_coll *c);

/* Ring factor of a collective kind: the fraction of the buffer each member
 * sends, by its primitive (its flags): all-reduce (SC_OPF_REDUCES)
 * 2(n-1)/n, a reduce-scatter and an all-gather; broadcast (SC_OPF_ROOTED)
 * and all-to-all (neither) (n-1)/n, the broadcast pipelined along the
 * ring; 0 for a kind that is no collective. */
static inline double sc_coll_factor(int op, int n)
{
    if (n <= 1 || !sc_op_is_coll(op))
        return 0;
    return (sc_op_has(op, SC_OPF_REDUCES) ? 2.0 : 1.0) * (n - 1) / n;
}

/* A WAIT: a wait for a SEND (docs/semantics.md#waits). */
static inline int sc_op_is_wait(int op) { return SC_OP_IS_(op, SC_OPK_WAIT); }

/* Records a printf-style message as the program's error; returns st. */
sc_status sc_fail(sc_prog *pg, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The most passes one record (stage, microbatch) can have: one of each
 * stage kind, a fused one (BW) standing for its halves (F, B and W: 3);
 * and the vocabulary passes of one device and microbatch (S, T, E, EW: 4).
 * Counted from the table. */
enum {
#define X(name, cls, flags, mem, cost, look)                                              \
    +(SC_OPK_##cls == SC_OPK_STAGE && !((flags) & SC_OPF_FRAC) /* R: lowered, not ordered */ \
      && ((flags) & (SC_OPF_BGRAD | SC_OPF_WGRAD)) != (SC_OPF_BGRAD | SC_OPF_WGRAD))
    SC_STAGE_PASSES_PER_RECORD = 0 SC_OPS(X),
#undef X
#define X(name, cls, flags, mem, cost, look) +(SC_OPK_##cls == SC_OPK_VOCAB)
    SC_VOCAB_PASSES_PER_MB = 0 SC_OPS(X),
#undef X
};

/* 3·S·m (with a split vocabulary, + 4·P·m): no valid program has more
 * passes, so no order may grow past it. */
#define sc_prog_max_passes(pg)                                                          \
    (((size_t)SC_STAGE_PASSES_PER_RECORD * (size_t)(pg)->S +                              \
      (sc_vocab_split((pg)->vocab) ? (size_t)SC_VOCAB_PASSES_PER_MB * (size_t)(pg)->P : 0)) * \
     (size_t)(pg)->m)

/* sc_fail for a refusal by the memory cap (SC_ERR_PROGRAM; memcap.c):
 * sc_prog_cap_refused is then true. */
sc_status sc_fail_cap(sc_prog *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drops lowering and verification results (after the order changed). */
void sc_prog_invalidate(sc_prog *pg);

/* Free what the last compilation's offload plan (off_info) and its
 * recomputation plan (rc_info, rc_q) reported. */
void sc_prog_free_offload_info(sc_prog *pg);
void sc_prog_free_recompute_info(sc_prog *pg);

#include "ir/ir_scale.h" /* lengths' and slices' scales of a record */

/* Time of pass op on stage s (a vocabulary pass: on device s) by its cost
 * column (BW: its own time when given, else B + W); 0 for the kinds the
 * compute stream does not time by a stage (OPTIM: sc_instr_cost; the
 * channels' kinds). */
static inline double sc_op_cost(const sc_prog *pg, int op, int s)
{
    sc_op_cost_kind c = sc_op_cost_of(op);
    switch (c) {
    case SC_OPC_TF: return pg->tf[s] + pg->ta[s];
    case SC_OPC_TB: return pg->tb[s] + pg->ta[s];
    case SC_OPC_TW: return pg->tw[s];
    case SC_OPC_TBW:
        return (pg->tbw[s] == pg->tbw[s] ? pg->tbw[s] : pg->tb[s] + pg->tw[s]) + pg->ta[s];
    case SC_OPC_TS: case SC_OPC_TT: case SC_OPC_TE: case SC_OPC_TEW:
        return pg->vcost[c - SC_OPC_TS] ? pg->vcost[c - SC_OPC_TS][s] : 0;
    case SC_OPC_TR: return pg->tf[s] * pg->rc.time / pg->rc.frac; /* all of the record */
    case SC_OPC_NONE: case SC_OPC_OPTIM: case SC_OPC_COMM: case SC_OPC_COLL: case SC_OPC_LINK:
    case SC_OPC_TFB: /* needs both halves: sc_pair_cost */
    case SC_OPC_GATHER: case SC_OPC_SCATTER: /* on the data-parallel channel: fsdp.h */
        return 0;
    }
    return 0;
}

/* sc_op_cost of microbatch mb (lengths.h): each part scaled by its kind;
 * sc_op_cost itself without lengths. */
static inline double sc_op_cost_mb(const sc_prog *pg, int op, int s, int mb)
{
    if (!sc_scaled(pg) || mb < 0)
        return sc_op_cost(pg, op, s);
    double r = sc_len_r(pg, mb), tb, tw;
    switch (sc_op_cost_of(op)) {
    case SC_OPC_TF: return pg->tf[s] * sc_len_k(pg, SC_LK_F, s, mb) + pg->ta[s] * r;
    case SC_OPC_TB: return pg->tb[s] * sc_len_k(pg, SC_LK_B, s, mb) + pg->ta[s] * r;
    case SC_OPC_TW: return pg->tw[s] * sc_len_k(pg, SC_LK_W, s, mb);
    case SC_OPC_TBW:
        tb = pg->tb[s] * sc_len_k(pg, SC_LK_B, s, mb);
        tw = pg->tw[s] * sc_len_k(pg, SC_LK_W, s, mb);
        if (pg->tbw[s] == pg->tbw[s]) /* its own time, scaled as its halves */
            return (pg->tb[s] + pg->tw[s] > 0 ? pg->tbw[s] * (tb + tw) / (pg->tb[s] + pg->tw[s])
                                              : pg->tbw[s] * r) + pg->ta[s] * r;
        return tb + tw + pg->ta[s] * r;
    case SC_OPC_TR: return pg->tf[s] * sc_len_k(pg, SC_LK_F, s, mb) * pg->rc.time / pg->rc.frac;
    default: return sc_op_cost(pg, op, s) * r; /* the vocabulary passes: linear */
    }
}

/* Time of an overlapped pair (docs/guide.md#overlapped-pairs): F of stage f
 * and B (or BW) of stage b, each half its compute c then its all-to-all
 * part a = ta, of which l is the link's (sc_prog_ep_link_time; the rest a
 * latency that overlaps anything). The longest of: the compute, cf + cb;
 * the link, lf + lb; each half, cf + af and cb + ab; less the mean of the
 * two stages' gains tf + tb - tfb (0 where tfb is not set). With l = a
 * (no latency part) this is cf + cb plus each half's a beyond what the
 * other's compute hides. Never below 0. */
static inline double sc_pair_cost(const sc_prog *pg, const sc_instr *in)
{
    sc_instr h = sc_pair_half(in);
    int f = in->stage, b = h.stage;
    /* with lengths each half, its gain and its all-to-all part as its
     * microbatch's (the factors are 1 without) */
    double kf = sc_len_k(pg, SC_LK_F, f, in->mb), kb = sc_len_k(pg, SC_LK_B, b, h.mb);
    double af = pg->ta[f] * sc_len_r(pg, in->mb), ab = pg->ta[b] * sc_len_r(pg, h.mb);
    double cf = pg->tf[f] * kf, cb = sc_op_cost_mb(pg, h.op, b, h.mb) - ab;
    double gf = pg->tfb[f] == pg->tfb[f] ? (pg->tf[f] + pg->tb[f] - pg->tfb[f]) * kf : 0;
    double gb = pg->tfb[b] == pg->tfb[b] ? (pg->tf[b] + pg->tb[b] - pg->tfb[b]) * kb : 0;
    double lf = sc_prog_ep_link_time(pg, f) * sc_len_r(pg, in->mb);
    double lb = sc_prog_ep_link_time(pg, b) * sc_len_r(pg, h.mb);
    double most[4] = {cf + cb, lf + lb, cf + af, cb + ab}, t = most[0];
    for (int i = 1; i < 4; i++)
        t = most[i] > t ? most[i] : t;
    t -= (gf + gb) / 2;
    return t > 0 ? t : 0;
}

/* Length of pass op on the papers' cost-oblivious grid of unit slots: one
 * slot, two for a pass that fuses B and W (BW). */
static inline int sc_op_slots(int op)
{
    return sc_op_is_bgrad(op) && sc_op_is_wgrad(op) ? 2 : 1;
}

/* Time of OPTIM on device d: the optimizer steps of its stages. */
static inline double sc_optim_cost(const sc_prog *pg, int d)
{
    double t = 0;
    for (int c = 0; c < pg->nchunks[d]; c++)
        t += pg->topt[pg->dev_stages[d][c]];
    return t;
}

/* The fraction an OFFLOAD, DROP, RELOAD or R names, in [0, 1]. */
static inline double sc_instr_frac(const sc_instr *in)
{
    return (double)in->frac / SC_FRAC_ONE;
}

/* Time of a pass or a pair on the compute stream (R: its fraction). */
static inline double sc_pass_cost(const sc_prog *pg, const sc_instr *in)
{
    if (sc_op_is_pair(in->op))
        return sc_pair_cost(pg, in);
    double t = sc_op_cost_mb(pg, in->op, in->stage, in->mb);
    return sc_op_has(in->op, SC_OPF_FRAC) ? t * sc_instr_frac(in) : t;
}

/* Time of instruction `in` of device d on its compute stream: a pass's
 * cost, OPTIM's sc_optim_cost, 0 for the rest. */
static inline double sc_instr_cost(const sc_prog *pg, int d, const sc_instr *in)
{
    return sc_op_cost_of(in->op) == SC_OPC_OPTIM ? sc_optim_cost(pg, d) : sc_pass_cost(pg, in);
}

/* The fraction of record (s, mb)'s W still needs after B (s < 0: w_keep). */
static inline double sc_w_keep_at(const sc_prog *pg, int s, int mb)
{
    if (s >= 0 && mb >= 0 && pg->len_rec) /* a run's measured share (lengths.h) */
        return pg->len_rec[(size_t)(pg->S + s) * (size_t)pg->m + (size_t)(mb % pg->m)];
    return s >= 0 && pg->wks ? pg->wks[s] : pg->w_keep;
}

/* The memory effect e on a record of stage s of u units (SC_OPM_*). */
static inline double sc_mem_effect(const sc_prog *pg, sc_op_mem_effect e, double u, int s,
                                   int mb)
{
    switch (e) {
    case SC_OPM_ALLOC: return u;
    case SC_OPM_FREE_PART: return -(1.0 - sc_w_keep_at(pg, s, mb)) * u;
    case SC_OPM_FREE_REST: return -sc_w_keep_at(pg, s, mb) * u;
    case SC_OPM_FREE_ALL: return -u;
    case SC_OPM_NONE: return 0;
    }
    return 0;
}

/* Memory change of pass op on stage s, in units (docs/guide.md#memory-model), by its
 * memory column: F adds the stage's units, B frees (1 - w_keep) of them, W
 * w_keep, BW all; a vocabulary pass (s: the device) S's record, which lives
 * until T. */
static inline double sc_op_mem(const sc_prog *pg, int op, int s)
{
    sc_op_mem_effect e = sc_op_mem_of(op);
    if (e == SC_OPM_NONE || pg->fwd_only) /* forward-only: nothing held after F (fwdonly.h) */
        return 0;
    if (sc_op_is_vocab(op))
        return pg->vmem ? sc_mem_effect(pg, e, pg->vmem[s], -1, -1) : 0;
    return sc_mem_effect(pg, e, pg->mem[s], s, -1);
}

/* Units of record (s, mb): the stage's, scaled by its length (lengths.h). */
static inline double sc_rec_units(const sc_prog *pg, int s, int mb)
{
    if ((pg->len || pg->slices > 1) && pg->len_rec && mb >= 0) /* a run's measured units
                                                                * (lengths.h, slices.h) */
        return pg->len_rec[(size_t)s * (size_t)pg->m + (size_t)(mb % pg->m)];
    return sc_scaled(pg) ? pg->mem[s] * sc_len_k(pg, SC_LK_MEM, s, mb) : pg->mem[s];
}

/* sc_op_mem of microbatch mb. */
static inline double sc_op_mem_mb(const sc_prog *pg, int op, int s, int mb)
{
    if (!sc_scaled(pg) || mb < 0 || pg->fwd_only) /* forward-only: 0 (fwdonly.h) */
        return sc_op_mem(pg, op, s);
    sc_op_mem_effect e = sc_op_mem_of(op);
    if (e == SC_OPM_NONE)
        return 0;
    if (sc_op_is_vocab(op))
        return pg->vmem ? sc_mem_effect(pg, e, pg->vmem[s] * sc_len_r(pg, mb), -1, -1) : 0;
    return sc_mem_effect(pg, e, sc_rec_units(pg, s, mb), s, mb);
}

/* A pass's memory change (R: on its fraction of the record); a pair's:
 * both halves'. */
static inline double sc_pass_mem(const sc_prog *pg, const sc_instr *in)
{
    if (sc_op_is_pair(in->op)) {
        sc_instr b = sc_pair_half(in);
        return sc_op_mem_mb(pg, SC_OP_F, in->stage, in->mb) + sc_op_mem_mb(pg, b.op, b.stage, b.mb);
    }
    if (sc_op_has(in->op, SC_OPF_FRAC))
        return sc_mem_effect(pg, sc_op_mem_of(in->op), sc_instr_frac(in) *
                             sc_rec_units(pg, in->stage, in->mb), in->stage, in->mb);
    return sc_op_mem_mb(pg, in->op, in->stage, in->mb);
}

/* What an instruction allocates before it frees anything: F's record, also
 * as the F half of a pair (its backward half frees only once both halves
 * have run); a forward-only F's record, held only while it runs
 * (fwdonly.h); 0 for the rest. The memory peak counts a pair at the level
 * before it plus this (docs/semantics.md#overlapped-pairs). */
static inline double sc_instr_mem_rise(const sc_prog *pg, const sc_instr *in)
{
    if (sc_op_is_pair(in->op) && !(in->flags & SC_IF_ROLLBACK))
        return sc_op_mem_mb(pg, SC_OP_F, in->stage, in->mb);
    if (pg->fwd_only && in->op == SC_OP_F) /* its record, while it runs (fwdonly.h) */
        return sc_rec_units(pg, in->stage, in->mb);
    return 0;
}

/* Device memory change of any instruction of a stream: compute passes as
 * sc_pass_mem; a host copy's effect on its fraction of the record (DROP
 * frees it, RELOAD allocates it); UNSHARD and RESHARD on the stage's
 * parameters (docs/fsdp.md#memory-and-time); the rest changes nothing. */
static inline double sc_instr_mem(const sc_prog *pg, const sc_instr *in)
{
    if (in->flags & SC_IF_ROLLBACK)
        return 0; /* a redone F computes into the record it made before */
    if (sc_op_has(in->op, SC_OPF_FRAC))
        return sc_mem_effect(pg, sc_op_mem_of(in->op), sc_instr_frac(in) *
                             sc_rec_units(pg, in->stage, in->mb), in->stage, in->mb);
    if (sc_op_is_fsdp(in->op)) /* the stage's unsharded parameters */
        return sc_mem_effect(pg, sc_op_mem_of(in->op), sc_prog_fsdp_units(pg), -1, -1);
    return sc_pass_mem(pg, in);
}

/* The route of microbatch mb through the copies of the model
 * (sc_prog_set_copies): its first and last stage; whether stage s is on
 * it. mb may be a stream's number (any step). */
static inline int sc_mb_first(const sc_prog *pg, int mb)
{
    if (pg->copies <= 1)
        return 0;
    return (mb % pg->m) / (pg->m / pg->copies) * (pg->S / pg->copies);
}
static inline int sc_mb_last(const sc_prog *pg, int mb)
{
    return pg->copies <= 1 ? pg->S - 1 : sc_mb_first(pg, mb) + pg->S / pg->copies - 1;
}
static inline int sc_mb_has(const sc_prog *pg, int s, int mb)
{
    return s >= sc_mb_first(pg, mb) && s <= sc_mb_last(pg, mb);
}

/* Dense index of (stage, mb): s * m + mb. */
#define SC_SM(pg, s, mb) ((size_t)(s) * (size_t)(pg)->m + (size_t)(mb))
/* The same for the microbatch numbers of the streams (all steps, nmb). */
#define SC_SMN(pg, s, mb) ((size_t)(s) * (size_t)(pg)->nmb + (size_t)(mb))

/* The pass a compute pass depends on (docs/guide.md#passes-and-dependencies): F(s) on F(s-1), B or
 * BW(s) on B(s+1) (the last stage's on its own F), W(s) on B(s); the
 * vocabulary passes S on F of the last stage, EW on B (or BW) of stage 0
 * (through a broadcast, docs/vocab.md#placements). Sets *dop to SC_OP_F or SC_OP_B
 * (meaning B or BW) and *ds; 0 when there is none (E, T: see
 * sc_vocab_all_dep). */
static inline int sc_pass_dep(const sc_prog *pg, const sc_instr *in, int *dop, int *ds)
{
    int s = in->stage;
    *dop = SC_OP_B;
    *ds = 0;
    switch ((sc_op)in->op) {
    case SC_OP_F:
        *dop = SC_OP_F;
        *ds = s - 1;
        return s > sc_mb_first(pg, in->mb);
    case SC_OP_B: case SC_OP_BW:
        if (s == sc_mb_last(pg, in->mb))
            *dop = SC_OP_F, *ds = s;
        else
            *ds = s + 1;
        return 1;
    case SC_OP_W:
        *ds = s;
        return 1;
    case SC_OP_S:
        *dop = SC_OP_F;
        *ds = pg->S - 1;
        return 1;
    case SC_OP_EW: return 1;
    case SC_OP_T: case SC_OP_E: return 0;
    case SC_OP_R: return 0; /* its record's input is on its device */
    case SC_OP_FB: return 0; /* two: the halves' (sc_instr_halves) */
    default: return 0; /* no pass */
    }
}

/* ---- the vocabulary collectives (docs/vocab.md#placements) ----
 * After E, an all-reduce (sum) of the embedding's output (tag E, part 0);
 * after F of the last stage, the broadcast of its output from its device
 * (F s(S-1)); after S, the all-reduces of the row maxima (S part 0, max),
 * of the rescaled sums (S part 1: sum of exponentials and target logit)
 * and, with vocab-1, of the input gradient (S part 2); with vocab-2, after
 * T the all-reduce of the input gradient (T part 0); after B (or BW) of
 * stage 0, the broadcast of the embedding's gradient (B s0). Every device
 * is a member. */

/* Bytes of the vocabulary collective (what, part). */
static inline double sc_vocab_coll_bytes(const sc_prog *pg, int what, int part)
{
    if (what == SC_OP_S && part < 2)
        return (part ? 2 : 1) * pg->vrow_bytes;
    return pg->vact_bytes;
}

static inline double sc_vocab_coll_time(const sc_prog *pg, int what, int part)
{
    int bcast = what == SC_OP_F || what == SC_OP_B;
    if (pg->P <= 1)
        return 0;
    double f = sc_coll_factor(bcast ? SC_OP_BCAST : SC_OP_ALLREDUCE, pg->P);
    return pg->coll_lat + f * sc_vocab_coll_bytes(pg, what, part) / pg->coll_bw;
}

/* The collectives a pass of a vocabulary-split program posts after it
 * (into out[0..n), n returned, at most 3). */
static inline int sc_vocab_colls(const sc_prog *pg, const sc_instr *in, sc_coll *out)
{
    if (!sc_vocab_split(pg->vocab))
        return 0;
    sc_coll c = {.op = SC_OP_ALLREDUCE, .red = SC_RED_SUM, .what = in->op, .stage = -1,
                 .mb = in->mb, .root = -1};
    sc_coll b = {.op = SC_OP_BCAST, .red = 0, .what = SC_OP_F, .stage = in->stage, .mb = in->mb,
                 .root = -1}; /* the broadcast of a stage's output from its device */
    int n = 0;
    switch ((sc_op)in->op) {
    case SC_OP_E: out[n++] = c; break;
    case SC_OP_T:
        if (pg->vocab == SC_VOCAB_V2)
            out[n++] = c;
        break;
    case SC_OP_S:
        for (int part = 0; part < (pg->vocab == SC_VOCAB_V1 ? 3 : 2); part++) {
            out[n] = c;
            out[n].part = part;
            out[n++].red = part == 0 ? SC_RED_MAX : SC_RED_SUM;
        }
        break;
    case SC_OP_F:
        if (in->stage == pg->S - 1)
            out[n] = b, out[n++].root = pg->stage_dev[in->stage];
        break;
    case SC_OP_B: case SC_OP_BW:
        if (in->stage == 0)
            out[n] = b, out[n].what = SC_OP_B, out[n++].root = pg->stage_dev[in->stage];
        break;
    default: break; /* W, EW and the kinds that are no pass post none */
    }
    for (int i = 0; i < n; i++)
        out[i].bytes = sc_vocab_coll_bytes(pg, out[i].what, out[i].part);
    return n;
}

/* The dependency of a pass on a pass of every device, through collectives,
 * in a vocabulary-split program: F(0) on every E, T on every S (the
 * statistics, part 1), B or BW of the last stage on every S (vocab-1, the
 * input gradient of part 2) or every T (vocab-2). Sets the kind and the
 * part of the collective read; 0 when there is none. */
static inline int sc_vocab_all_dep(const sc_prog *pg, const sc_instr *in, int *op, int *part)
{
    if (!sc_vocab_split(pg->vocab))
        return 0;
    switch ((sc_op)in->op) {
    case SC_OP_F:
        if (in->stage != 0)
            return 0;
        *op = SC_OP_E;
        *part = 0;
        return 1;
    case SC_OP_T:
        *op = SC_OP_S;
        *part = 1;
        return 1;
    case SC_OP_B: case SC_OP_BW:
        if (in->stage != pg->S - 1)
            return 0;
        *op = pg->vocab == SC_VOCAB_V1 ? SC_OP_S : SC_OP_T;
        *part = pg->vocab == SC_VOCAB_V1 ? 2 : 0;
        return 1;
    default: return 0;
    }
}

/* Time from the last of the passes of a sc_vocab_all_dep to its reader's
 * data: the collectives of parts 0..part, one after the other. */
static inline double sc_vocab_chain_time(const sc_prog *pg, int what, int part)
{
    double t = 0;
    for (int p = 0; p <= part; p++)
        t += sc_vocab_coll_time(pg, what, p);
    return t;
}

/* When pass `in` of device d may start as far as its dependency goes, from
 * end times endF/endB [S*m] (< 0: not run yet): 0 without a dependency,
 * < 0 while it has not run, else its end plus T_comm across devices (a
 * vocabulary pass: plus its broadcast). The dependencies on every device's
 * passes (sc_vocab_all_dep) are not counted here. */
static inline double sc_dep_ready(const sc_prog *pg, int d, const sc_instr *in,
                                  const double *endF, const double *endB)
{
    int dop, ds;
    if (!sc_pass_dep(pg, in, &dop, &ds))
        return 0;
    double e = (dop == SC_OP_F ? endF : endB)[SC_SM(pg, ds, in->mb)];
    if (e < 0)
        return -1;
    if (sc_op_is_vocab(in->op))
        return e + sc_vocab_coll_time(pg, dop, 0);
    return e + (pg->stage_dev[ds] != d ? pg->tcomm * sc_len_r(pg, in->mb) : 0);
}

/* What an instruction reads from collectives (docs/semantics.md#collectives,
 * rule 5: "an instruction waits only for the collectives whose results it
 * reads"): the collectives tagged (what, stage, mb) with parts 0..part, all
 * posted before it on its device; what < 0 means every collective posted
 * before it. */
typedef struct sc_cread {
    int what, stage, mb, part;
} sc_cread;
#define SC_CREAD_MAX 4

/* The reading rules, in one place: instruction `in` of device d reads the
 * collectives rd[0..n) (returns n). OPTIM waits for every collective its
 * device posted before it (the end of the step: a gradient norm or an
 * inf/NaN flag is read by the optimizer). */
static inline int sc_coll_reads(const sc_prog *pg, int d, const sc_instr *in, sc_cread *rd)
{
    (void)d;
    if (sc_op_has(in->op, SC_OPF_READS_COLLS)) {
        rd[0] = (sc_cread){-1, -1, -1, 0};
        return 1;
    }
    /* Post-validation's rollback path
     * (docs/steps.md#optimizer-synchronization): an F whose producer was
     * redone reads the broadcast of the redone output. */
    if (sc_op_is_fwd(in->op) && (in->flags & SC_IF_REDO_IN)) {
        rd[0] = (sc_cread){SC_OP_F, in->stage - 1, in->mb, 0};
        return 1;
    }
    /* Copies of the model (docs/guide.md#copies): REDUCE reads the sum of
     * the copies' weight gradients. */
    if (in->op == SC_OP_REDUCE && (pg->copies > 1 || pg->ep > 1)) { /* ep: the dense ones */
        rd[0] = (sc_cread){SC_OP_W, -1, -1, 0};
        return 1;
    }
    if (!sc_vocab_split(pg->vocab) || !sc_op_is_pass(in->op))
        return 0;
    /* Vocabulary parallelism (docs/vocab.md#placements): F(0) reads the embedding's
     * all-reduce, S the broadcast of the last stage's output, T the
     * statistics, the last stage's B the input gradient, EW the broadcast
     * of the embedding's gradient. */
    int op, part, ds;
    if (sc_vocab_all_dep(pg, in, &op, &part)) {
        rd[0] = (sc_cread){op, -1, in->mb, part};
        return 1;
    }
    if (sc_op_is_vocab(in->op) && sc_pass_dep(pg, in, &op, &ds)) { /* S, EW: sc_pass_dep */
        rd[0] = (sc_cread){op, ds, in->mb, 0};
        return 1;
    }
    return 0;
}

/* Whether some instruction of the program may read a collective other than
 * through OPTIM (then the replay maps readers even without collectives, so
 * that a missing collective is reported). */
static inline int sc_prog_reads_colls(const sc_prog *pg)
{
    return sc_vocab_split(pg->vocab) || pg->copies > 1 || pg->ep > 1;
}

#endif
