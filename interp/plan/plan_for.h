/*
 * plan_for.h — which training frameworks run a candidate schedule
 * (docs/plan.md#for-a-framework): Megatron-LM, torchtitan, PyTorch's
 * torch.distributed.pipelining. `stagecraft plan --for NAME` keeps the
 * candidates that framework runs; every candidate's row names the ones
 * that run it.
 *
 *     sc_plan_shape sh;
 *     sc_plan_shape_of(pg, &sh);           // after compiling the candidate
 *     if (sh.runs_on & SC_FW_BIT(SC_FW_MEGATRON)) ...
 *     sc_plan_fw_why_not(&sh, SC_FW_MEGATRON);   // "the V placement" or NULL
 *
 * What each runs is read from the program itself (its placement, its
 * passes, its order); the recipe's name only spares evaluating what cannot
 * be the framework's (sc_plan_fw_knobs):
 *   - Megatron-LM runs its own two schedules: 1F1B
 *     (forward_backward_pipelining_without_interleaving) and interleaved
 *     1F1B (..._with_interleaving, --num-virtual-stages-per-pipeline-rank,
 *     microbatch groups of p). A candidate is Megatron's when its placement
 *     is the loop, its passes F and fused BW only, and every device's order
 *     is the one Megatron's schedule runs (sc_plan_megatron_order, after
 *     Megatron-Core's get_pp_rank_microbatches). No V placement, no split
 *     W (zero bubble: not in Megatron's mainline scheduler), no offload or
 *     recomputation of ours, no vocabulary passes.
 *   - PyTorch runs any placement from a compute_only CSV (_load_csv), and
 *     torchtitan runs that CSV with the placement of the schedule class it
 *     is named with (loop, or V for ZBVZeroBubble and DualPipeV): neither
 *     has offload, recomputation or vocabulary passes of ours (the CSV
 *     leaves OFFLOAD and R out, and refuses a split vocabulary), so a
 *     candidate that uses them is not theirs.
 * Pure functions of the program; no allocation but sc_plan_shape_of's
 * scratch (freed before it returns).
 *
 * Tested by: tests/unit/test_plan_for.c.
 */
#ifndef SC_PLAN_FOR_H
#define SC_PLAN_FOR_H

#include <stddef.h>

#include "ir/ir.h"

/* The frameworks: id, the name --for takes, the name in prose. */
#define SC_PLAN_FWS(X)                         \
    X(MEGATRON, "megatron", "Megatron-LM")     \
    X(TORCHTITAN, "torchtitan", "torchtitan")  \
    X(PYTORCH, "pytorch", "PyTorch")

typedef enum sc_plan_fw {
    SC_FW_NONE = 0,
#define X(id, name, title) SC_FW_##id,
    SC_PLAN_FWS(X)
#undef X
    SC_FW_COUNT
} sc_plan_fw;

#define SC_FW_BIT(fw) (1u << (fw))

/* The placement's kind (cli_torch.c reads the same). */
typedef enum sc_plan_place {
    SC_PLAN_PLACE_NONE = 0, /* not known: the candidate was not compiled */
    SC_PLAN_PLACE_LOOP,     /* stage s on device s mod p */
    SC_PLAN_PLACE_V,        /* device d holds stages d and 2p-1-d */
    SC_PLAN_PLACE_TABLE     /* any other */
} sc_plan_place;

typedef struct sc_plan_shape {
    sc_plan_place placement;
    int chunks;       /* stages per device (v) */
    int pairs;        /* overlapped F-B pairs (DualPipe's) */
    int split_w;      /* B and W apart (zero bubble) */
    int offload;      /* moves activations to the host (OFFLOAD) */
    int recompute;    /* recomputes (R) */
    int vocab;        /* vocabulary passes (a split vocabulary) */
    int megatron;     /* its order is Megatron-LM's: 1 1F1B, 2 interleaved 1F1B; 0 neither */
    unsigned runs_on; /* SC_FW_BIT(fw) of every framework that runs it */
    int decoders;     /* with a model (docs/model.md): its decoder layers; 0 without */
    char layout[512]; /* with a model whose head is on the ends (baseline, redis): its
                       * split as Megatron's --pipeline-model-parallel-layout; "" else */
} sc_plan_shape;

/* "megatron" -> SC_FW_MEGATRON; -1 for any other name. */
int sc_plan_fw_parse(const char *name);
/* "megatron", and "Megatron-LM"; "" for SC_FW_NONE. */
const char *sc_plan_fw_name(int fw);
const char *sc_plan_fw_title(int fw);
/* "loop", "V", "table", "" (not known). */
const char *sc_plan_place_name(sc_plan_place p);

/* The shape of a compiled (lowered) program and the frameworks that run
 * it. */
void sc_plan_shape_of(const sc_prog *pg, sc_plan_shape *sh);
/* Why fw does not run a candidate of this shape, in a few words ("the V
 * placement"), or NULL when it does. */
const char *sc_plan_fw_why_not(const sc_plan_shape *sh, int fw);

/* Whether device d's order of compute passes (F, BW; n of them) is the one
 * Megatron-LM runs for P ranks, m microbatches and v chunks per rank
 * (v = 1: 1F1B; v > 1: interleaved 1F1B, groups of P microbatches, which
 * needs m to be a multiple of P). Stage of chunk c on rank d: c·P + d. */
int sc_plan_megatron_order(const sc_instr *order, size_t n, int P, int m, int v, int d);

/* PyTorch's schedule class that places a shape's stages (torchtitan takes
 * the placement from it when it loads a CSV): "1F1B", "Interleaved1F1B",
 * "ZBVZeroBubble", "DualPipeV"; NULL for a table placement. */
const char *sc_plan_torch_class(const sc_plan_shape *sh);

/* Before a candidate is evaluated: the knobs framework fw runs recipe with,
 * into out; 0 when fw does not run it at all, so that it is not evaluated:
 * an offload, recompute or vocab_par knob (no framework runs ours), and
 * for Megatron-LM any recipe but the two that write its schedules, `1f1b`
 * and `interleaved`. Megatron-LM runs its schedules as they are: the
 * memory cap (`mem=`) is dropped from its knobs, so that the candidate is
 * Megatron's own order and the cap only says whether it fits. Whether the
 * program is then what fw runs is sc_plan_shape_of's to say. */
int sc_plan_fw_knobs(int fw, const char *recipe, const char *knobs, char *out, size_t len);

#endif
