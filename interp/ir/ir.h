/*
 * ir.h — the intermediate representation of a pipeline schedule.
 * A program (sc_prog) owns everything about one schedule:
 *   - the shape: P devices, S virtual stages, m microbatches, a placement
 *     stage -> device;
 *   - the cost model: per-stage T_F, T_B, T_W (T_BW when measured apart,
 *     the optimizer's T_OPT) and the P2P time T_comm;
 *   - the memory model: activation units per (stage, microbatch) and the
 *     fraction w_keep of it still held after B (W or BW frees the rest);
 *   - per device, the *order* of its compute passes (F, B, W, BW), as given
 *     by a recipe (ordered program) or produced by unrolling a block;
 *   - after sc_lower(), per device, the *stream*: the same passes with the
 *     SEND/RECV transfers and the end-of-step REDUCE and OPTIM inserted.
 *
 * Worked example (1F1B on two devices, one microbatch):
 *
 *     sc_prog *pg = sc_prog_new(2, 2, 1);           // P=2, S=2, m=1
 *     sc_prog_set_placement(pg, SC_PLACE_LOOP, NULL);
 *     sc_prog_push(pg, 0, SC_OP_F, 0, 0);           // device 0: F s0 mb0
 *     sc_prog_push(pg, 1, SC_OP_F, 1, 0);           // device 1: F s1 mb0
 *     sc_prog_push(pg, 1, SC_OP_BW, 1, 0);          //           BW s1 mb0
 *     sc_prog_push(pg, 0, SC_OP_BW, 0, 0);          // device 0: BW s0 mb0
 *     if (sc_check(pg) != SC_OK) puts(sc_errmsg(pg));  // compile.h: verify
 *     sc_prog_free(pg);                                 // passes, lower, verify
 *
 * Ownership: the program owns every array it hands out; pointers returned
 * by accessors stay valid until the next call that changes the program.
 * Thread-safety: none; one program is used by one thread at a time.
 * Tested by: tests/unit/test_interp.c, tests/unit/test_opkinds.c.
 */
#ifndef SC_IR_H
#define SC_IR_H

#include <stddef.h>
#include <stdint.h>

#include "exits.h" /* the classes of errors, their statuses and exit codes */

/* Instruction kinds: one table, one row per kind.
 *
 *   F, B, W    forward of (stage, mb), allocating its activation; backward
 *              for the input gradient; for the weight gradient
 *   BW         B and W fused
 *   S, T       output layer on the vocabulary shard (docs/vocab.md); its weight gradient
 *   E, EW      input embedding (the shard's masked lookup); its weight gradient
 *   SEND, RECV post a send to a peer device; a receive from one
 *   REDUCE     end-of-step gradient reduction
 *   OPTIM      optimizer step
 *   OFFLOAD    start copying part of a record to host (offload.h, docs/semantics.md#host-copies)
 *   DROP       wait for that copy; free the device part
 *   RELOAD     allocate it again; start copying it back
 *   ALLREDUCE  all-reduce (sum or max) over a group (docs/semantics.md#collectives)
 *   BCAST      broadcast from a root to a group
 *   VALIDATE   post-validation: check the eager step (docs/steps.md#optimizer-synchronization)
 *   WAIT       wait until an earlier SEND has completed (docs/semantics.md#waits)
 *   FB         F of one (stage, mb) with B or BW of another (docs/semantics.md#overlapped-pairs)
 *   R          recompute a record's part dropped after its F (docs/recompute.md)
 *   UNSHARD    FSDP: start the all-gather of a stage's parameters over the
 *              data-parallel group; they live until its RESHARD (docs/fsdp.md)
 *   RESHARD    FSDP: free the stage's unsharded parameters
 *   REDUCE_GRAD FSDP: start the reduce-scatter of a stage's gradients over the
 *              group after its last weight gradient of the step; the step's
 *              OPTIM waits for it (docs/fsdp.md#memory-and-time)
 *   DISPATCH, COMBINE  the all-to-alls of expert parallelism (ep.h)
 *
 * The columns:
 *   name   SC_OP_<name>; the text sc_op_name prints and sc_op_parse reads;
 *   class  what it is (SC_OPK_*): a stage's pass, a vocabulary shard's
 *          pass, a point-to-point transfer, an end-of-step instruction, a
 *          host copy, a collective. The class fixes its operands (sc_instr)
 *          and its channel: passes and end-of-step instructions run on the
 *          device's compute stream, transfers on its point-to-point channel,
 *          collectives on its collective channel, host copies on its host
 *          link (DROP waits for one on the compute stream);
 *   flags  its role in the data flow (SC_OPF_*);
 *   mem    what it does to the device memory of the record it names
 *          (SC_OPM_*);
 *   cost   which cost of the program times it (SC_OPC_*);
 *   look   how the outputs show it (sc_op_look): SC_NOLOOK for a kind no
 *          picture draws as a pass, else SC_LOOK(letter in the ASCII
 *          timeline, background colour there (an SGR code), colour in the
 *          SVG timeline, its legend there, letter in PyTorch's CSV or NULL).
 * The enum, the names, the parser, the property table (sc_op_tab) and the
 * looks are generated from the rows; code asks a kind's properties through
 * the predicates below, never by ranges of the enum.
 *
 * To add a kind: append a row (rows keep their numbers: F, B, W, BW are
 * 0..3 and index arrays of four; the vocabulary passes stay in a row) and
 * give it the columns that say what it is. No list of kinds needs it:
 * code asks properties, and what is new about the kind (where the lowering
 * puts it, what a transport runs for it) is code of its own. A switch on
 * the kind acts for the kinds it names, `default:` for the rest (sc_pass_dep;
 * the vocabulary's collectives, buffers and the built-in model's passes; the
 * executor's end-of-step kinds, which refuses one it does not know). Code
 * that does something different for each class, memory effect or cost
 * switches on that column without a `default:`, so
 * that -Wswitch (part of -Wall) names every such place when a new value
 * comes: the executor's dispatch (exec/exec.c), the writers' operands,
 * sc_mem_effect, sc_op_cost, the profile's. Properties read from the rows:
 * the lowering inserts transfers by the roles (SC_OPF_FWD, SC_OPF_BGRAD),
 * the replay and the simulator time by the class and the cost column,
 * memory follows the memory column, a collective's primitive and ring
 * factor follow its flags (sc_coll_factor; SC_OPF_REDUCES, SC_OPF_ROOTED,
 * neither: all-to-all), the index among the four stage passes follows the
 * cost column (sc_op_stage_index), the pictures and the PyTorch writer
 * follow the look column, and the bound on passes per record is counted
 * from the rows (SC_STAGE_PASSES_PER_RECORD, ir_impl.h). test_opkinds checks it. */
#define SC_OPS(X)                                                                      \
    /* name      class  flags                          mem        cost    look */          \
    X(F,         STAGE, SC_OPF_FWD,                    ALLOC,     TF,                      \
      SC_LOOK('F', 46, 0x4a90d9, "F forward", "F"))                                        \
    X(B,         STAGE, SC_OPF_BGRAD,                  FREE_PART, TB,                      \
      SC_LOOK('B', 43, 0xf5a623, "B input grad", "I"))                                     \
    X(W,         STAGE, SC_OPF_WGRAD,                  FREE_REST, TW,                      \
      SC_LOOK('W', 42, 0x6bbf3b, "W weight grad", "W"))                                    \
    X(BW,        STAGE, SC_OPF_BGRAD | SC_OPF_WGRAD,   FREE_ALL,  TBW,                     \
      SC_LOOK('X', 45, 0xa561c9, "BW fused B+W", "B")) /* PyTorch's full backward */       \
    X(S,         VOCAB, 0,                             ALLOC,     TS,                      \
      SC_LOOK('S', 41, 0xd9534f, "S output", NULL))                                        \
    X(T,         VOCAB, 0,                             FREE_ALL,  TT,                      \
      SC_LOOK('T', 47, 0x8c564b, "T output grad", NULL))                                   \
    X(E,         VOCAB, 0,                             NONE,      TE,                      \
      SC_LOOK('E', 44, 0x17becf, "E embed", NULL))                                         \
    X(EW,        VOCAB, 0,                             NONE,      TEW,                     \
      SC_LOOK('e', 44, 0x7f7f7f, "EW embed grad", NULL))                                   \
    X(SEND,      XFER,  SC_OPF_OUT,                    NONE,      COMM,    SC_NOLOOK)      \
    X(RECV,      XFER,  SC_OPF_IN,                     NONE,      COMM,    SC_NOLOOK)      \
    X(REDUCE,    STEP,  0,                             NONE,      NONE,    SC_NOLOOK)      \
    X(OPTIM,     STEP,  SC_OPF_READS_COLLS,            NONE,      OPTIM,   SC_NOLOOK)      \
    X(OFFLOAD,   HOST,  SC_OPF_OUT | SC_OPF_FRAC,      NONE,      LINK,    SC_NOLOOK)      \
    X(DROP,      HOST,  SC_OPF_FRAC,                   FREE_ALL,  NONE,    SC_NOLOOK)      \
    X(RELOAD,    HOST,  SC_OPF_IN | SC_OPF_FRAC,       ALLOC,     LINK,    SC_NOLOOK)      \
    X(ALLREDUCE, COLL,  SC_OPF_REDUCES,                NONE,      COLL,    SC_NOLOOK)      \
    X(BCAST,     COLL,  SC_OPF_ROOTED,                 NONE,      COLL,    SC_NOLOOK)      \
    X(VALIDATE,  STEP,  SC_OPF_READS_COLLS,            NONE,      NONE,    SC_NOLOOK)      \
    X(FB,        PAIR,  0,                             NONE,      TFB,                     \
      SC_LOOK(0, 0, 0x222222, "F+B overlapped pair (outlined)", NULL))                     \
    X(WAIT,      WAIT,  0,                             NONE,      NONE,    SC_NOLOOK)      \
    X(R,         STAGE, SC_OPF_FRAC,                   ALLOC,     TR,                      \
      SC_LOOK('R', 106, 0xbcbd22, "R recompute", NULL))                                    \
    X(UNSHARD,   FSDP,  0,                             ALLOC,     GATHER,  SC_NOLOOK)      \
    X(RESHARD,   FSDP,  0,                             FREE_ALL,  NONE,    SC_NOLOOK)      \
    X(REDUCE_GRAD, FSDP, 0,                            NONE,      SCATTER, SC_NOLOOK)     \
    X(DISPATCH,  COLL,  0,                             NONE,      COLL,    SC_NOLOOK)      \
    X(COMBINE,   COLL,  0,                             NONE,      COLL,    SC_NOLOOK)

/* The look column: how the outputs show a kind (sc_op_look). */
#define SC_LOOK(letter, ansi, rgb, legend, torch) {letter, ansi, rgb, legend, torch}
#define SC_NOLOOK {0, 0, 0, NULL, NULL}

typedef enum sc_op {
#define X(name, cls, flags, mem, cost, look) SC_OP_##name,
    SC_OPS(X)
#undef X
} sc_op;

/* The number of kinds (not an enumerator: a switch on sc_op lists kinds only). */
enum {
#define X(name, cls, flags, mem, cost, look) +1
    SC_OP_COUNT = 0 SC_OPS(X)
#undef X
};

/* Classes. */
typedef enum sc_op_class {
    SC_OPK_STEP,  /* an end-of-step instruction: no operands (stage = mb = peer = -1);
                     first: a byte that names no kind reads as one */
    SC_OPK_STAGE, /* a pass of a stage: stage, mb (docs/guide.md#passes-and-dependencies) */
    SC_OPK_VOCAB, /* a pass of the device's vocabulary shard: stage = the device, mb */
    SC_OPK_XFER,  /* a transfer: stage (the consumer's), mb, dir, peer */
    SC_OPK_HOST,  /* a host copy of a record: stage, mb, frac */
    SC_OPK_COLL,  /* a collective: dir (reduction), flags (tag), stage, mb, coll */
    SC_OPK_WAIT,  /* a wait for a SEND: the SEND's stage, mb, dir, peer */
    SC_OPK_PAIR,  /* an overlapped pair of two stage passes: stage, mb (its F);
                     dir, flags, bmb (its B or BW: sc_pair_half) */
    SC_OPK_FSDP,  /* FSDP's parameters of a stage (docs/fsdp.md): stage; mb = peer = -1.
                     Its memory effect is on the stage's unsharded parameters
                     (sc_prog_fsdp_units), not on a record */
} sc_op_class;

/* Flags: the role of a kind in the data flow. */
enum {
    SC_OPF_FWD = 1u << 0,   /* reads the previous stage's activation (or the input),
                               writes its own stage's: F */
    SC_OPF_BGRAD = 1u << 1, /* writes the input gradient: reads the next stage's (the
                               last stage: its own F's loss) and its record: B, BW */
    SC_OPF_WGRAD = 1u << 2, /* writes the weight gradient: W, BW */
    SC_OPF_OUT = 1u << 3,   /* moves data off the device: to a peer (SEND), to host
                               (OFFLOAD) */
    SC_OPF_IN = 1u << 4,    /* moves data onto it: from a peer (RECV), from host
                               (RELOAD); a host copy with neither (DROP) waits for
                               the copy out */
    SC_OPF_READS_COLLS = 1u << 5, /* reads every collective its device posted
                                     before it (sc_coll_reads) */
    SC_OPF_REDUCES = 1u << 6, /* a collective with a reduction (dir, SC_RED_*) */
    SC_OPF_ROOTED = 1u << 7,  /* a collective with a root (sc_coll.root) */
    SC_OPF_FRAC = 1u << 8,    /* names a fraction of its record (frac): its memory
                                 effect and its time are on that fraction (host
                                 copies, R) */
};

/* Memory effects, on the units u of the record an instruction names
 * (docs/guide.md#memory-model; a host copy's record: its fraction of it). */
typedef enum sc_op_mem_effect {
    SC_OPM_NONE,
    SC_OPM_ALLOC,     /* + u */
    SC_OPM_FREE_PART, /* - (1 - w_keep) u: what W does not need */
    SC_OPM_FREE_REST, /* - w_keep u: what B left for W */
    SC_OPM_FREE_ALL,  /* - u */
} sc_op_mem_effect;

/* Costs: the program's field that times a kind. TS..TEW are in the order of
 * the vocabulary cost arrays (sc_op_vocab_index). COMM, COLL and LINK are
 * times of channels (T_comm, sc_prog_coll_time, the offload link), not of
 * the compute stream. */
typedef enum sc_op_cost_kind {
    SC_OPC_NONE,
    SC_OPC_TF, SC_OPC_TB, SC_OPC_TW, SC_OPC_TBW,
    SC_OPC_TS, SC_OPC_TT, SC_OPC_TE, SC_OPC_TEW,
    SC_OPC_OPTIM, /* the optimizer steps of the device's stages */
    SC_OPC_COMM, SC_OPC_COLL, SC_OPC_LINK,
    SC_OPC_TFB, /* an overlapped pair: sc_pair_cost (ir_impl.h) */
    SC_OPC_TR, /* a recomputation: its fraction of the record times the stage's
                  recompute time (sc_prog_rtime; T_F by default) */
    SC_OPC_GATHER, /* an all-gather of a stage's parameters, on the device's
                      data-parallel channel (sc_prog_fsdp_time) */
    SC_OPC_SCATTER, /* a reduce-scatter of a stage's gradients, on the same
                       channel (sc_prog_fsdp_reduce_time) */
} sc_op_cost_kind;

/* The property table (ir.c makes it from the rows), one entry per value of
 * an instruction's byte (sc_instr.op), so that a lookup needs no bounds
 * check: bits holds the class as one bit (SC_OPB_CLASS; fewer than 12 classes) and
 * the flags above it, so that every predicate is one load and one test; cls, mem and cost
 * the columns. A byte that names no kind reads as zeros: class SC_OPK_STEP,
 * no flags, no memory effect, no cost. The accessors take op as that byte;
 * the entry points that take an int check its range first (sc_prog_push,
 * sc_coll_push, sc_op_name). */
typedef struct sc_op_props {
    uint32_t bits;
    uint8_t cls, mem, cost;
} sc_op_props;

#define SC_OPB_CLASS(cls) (1u << (cls))
#define SC_OPB_FLAGS(flags) ((uint32_t)(flags) << 12) /* classes: the bits below */
extern const sc_op_props sc_op_tab[256];

static inline uint32_t sc_op_bits(int op) { return sc_op_tab[(uint8_t)op].bits; }
static inline sc_op_class sc_op_class_of(int op) { return (sc_op_class)sc_op_tab[(uint8_t)op].cls; }
static inline sc_op_mem_effect sc_op_mem_of(int op)
{
    return (sc_op_mem_effect)sc_op_tab[(uint8_t)op].mem;
}
static inline sc_op_cost_kind sc_op_cost_of(int op)
{
    return (sc_op_cost_kind)sc_op_tab[(uint8_t)op].cost;
}
/* How the outputs show a kind (the look column): letter and ansi in the
 * ASCII timeline (render.h), rgb and legend in the SVG one (svg.h), torch
 * in PyTorch's CSV (torchcsv.h); zeros and NULL where a kind has none.
 * sc_op_look_of takes any int: out of range, a kind without a look. */
typedef struct sc_op_look {
    char letter;
    uint8_t ansi;
    uint32_t rgb;
    const char *legend, *torch;
} sc_op_look;

const sc_op_look *sc_op_look_of(int op);

static inline int sc_op_has(int op, unsigned flags) { return (sc_op_bits(op) & SC_OPB_FLAGS(flags)) != 0; }

/* Compute passes: sc_op_is_pass. Those of a stage (F, B, W, BW, with the
 * stage semantics of docs/guide.md#passes-and-dependencies): sc_op_is_compute. Those of a device's
 * vocabulary shard (S, T, E, EW; stage = the device): sc_op_is_vocab. */
#define SC_OP_IS_(op, cls) ((sc_op_bits(op) & SC_OPB_CLASS(cls)) != 0)
static inline int sc_op_is_compute(int op) { return SC_OP_IS_(op, SC_OPK_STAGE); }
static inline int sc_op_is_vocab(int op) { return SC_OP_IS_(op, SC_OPK_VOCAB); }
static inline int sc_op_is_pass(int op)
{
    return (sc_op_bits(op) & (SC_OPB_CLASS(SC_OPK_STAGE) | SC_OPB_CLASS(SC_OPK_VOCAB))) != 0;
}
static inline int sc_op_is_transfer(int op) { return SC_OP_IS_(op, SC_OPK_XFER); }
static inline int sc_op_is_host(int op) { return SC_OP_IS_(op, SC_OPK_HOST); }
static inline int sc_op_is_coll(int op) { return SC_OP_IS_(op, SC_OPK_COLL); }
/* An overlapped pair (FB): two stage passes in one instruction, on the
 * compute stream (sc_instr_halves). */
static inline int sc_op_is_pair(int op) { return SC_OP_IS_(op, SC_OPK_PAIR); }
/* What runs on the compute stream and reads or writes a stage's data: a
 * stage pass or a pair of them. */
static inline int sc_op_is_slot(int op)
{
    return (sc_op_bits(op) & (SC_OPB_CLASS(SC_OPK_STAGE) | SC_OPB_CLASS(SC_OPK_PAIR))) != 0;
}
/* The transfers that send (SEND) and that receive (RECV). */
static inline int sc_op_is_send(int op)
{
    uint32_t b = SC_OPB_CLASS(SC_OPK_XFER) | SC_OPB_FLAGS(SC_OPF_OUT);
    return (sc_op_bits(op) & b) == b;
}
static inline int sc_op_is_recv(int op)
{
    return (sc_op_bits(op) & (SC_OPB_CLASS(SC_OPK_XFER) | SC_OPB_FLAGS(SC_OPF_IN))) ==
           (SC_OPB_CLASS(SC_OPK_XFER) | SC_OPB_FLAGS(SC_OPF_IN));
}
/* The data-flow roles: F; B and BW; W and BW. */
static inline int sc_op_is_fwd(int op) { return sc_op_has(op, SC_OPF_FWD); }
static inline int sc_op_is_bgrad(int op) { return sc_op_has(op, SC_OPF_BGRAD); }
static inline int sc_op_is_wgrad(int op) { return sc_op_has(op, SC_OPF_WGRAD); }
/* The index of stage pass op in the arrays of four kinds per stage (a
 * block's offsets, the verifier's and the profile's tables): F 0, B 1, W 2,
 * BW 3, their own numbers; -1 for every other kind. */
#define SC_STAGE_PASSES 4
static inline int sc_op_stage_index(int op)
{
    int c = (int)sc_op_cost_of(op); /* TF..TBW: the order of F, B, W, BW */
    return c >= SC_OPC_TF && c <= SC_OPC_TBW ? c - SC_OPC_TF : -1;
}

/* The index of vocabulary pass op in the per-device arrays of four (costs,
 * offsets, counters): S 0, T 1, E 2, EW 3; and the pass of index i. */
#define SC_VOCAB_PASSES 4
static inline int sc_op_vocab_index(int op) { return (int)sc_op_cost_of(op) - SC_OPC_TS; }
static inline int sc_vocab_op(int i)
{
    return ((const uint8_t[SC_VOCAB_PASSES]){SC_OP_S, SC_OP_T, SC_OP_E, SC_OP_EW})[i];
}

/* The name of kind op ("?" out of range); the kind named `name` (exactly),
 * or -1. */
const char *sc_op_name(int op);
int sc_op_parse(const char *name);
/* The compute pass whose name is the longest prefix of s[0..n), or -1;
 * *len = its length (the order texts: "BW3" is BW, then 3). */
int sc_op_parse_pass(const char *s, size_t n, size_t *len);

/* Direction of a transfer: activations flow F(s-1) -> F(s), gradients flow
 * B(s+1) -> B(s) (B means B or BW). */
enum { SC_DIR_ACT = 0, SC_DIR_GRAD = 1 };

/* Reductions of an all-reduce (the `dir` field of an ALLREDUCE). */
#define SC_REDS(X) X(SUM, "sum") X(MAX, "max")

enum {
#define X(name, text) SC_RED_##name,
    SC_REDS(X)
#undef X
    SC_RED_COUNT
};

const char *sc_red_name(int red);

/* One instruction: 16 bytes, plain data.
 *   compute: stage = the pass's stage, mb = its microbatch, peer = -1;
 *   SEND/RECV: stage = the stage that *consumes* the data, mb, dir, and
 *              peer = the other device;
 *   REDUCE/OPTIM: stage = mb = peer = -1;
 *   OFFLOAD/DROP/RELOAD: stage, mb of the record, and frac = the fraction of
 *              it that moves, in parts of SC_FRAC_ONE (1..SC_FRAC_ONE);
 *   R:         stage, mb of the record, and frac = the fraction recomputed
 *              (that of the DROP after its F);
 *   ALLREDUCE/BCAST: dir = the reduction (SC_RED_*; 0 for BCAST), flags =
 *              the tag's pass kind and part (sc_coll_what, sc_coll_part),
 *              stage and mb = the tag's, coll = the index of the rest of its
 *              description in the program (root, members, step, size;
 *              sc_prog_coll gives all of it);
 *   FB (a pair): stage, mb = its F half; its other half (B or BW of another
 *              stage and microbatch of the same device) packed into dir,
 *              flags and bmb: sc_pair_make, sc_pair_half, sc_instr_halves. */
typedef struct sc_instr {
    uint8_t op;
    uint8_t dir;
    uint16_t flags;
    int32_t stage;
    int32_t mb;
    union {
        int32_t peer;
        int32_t frac;
        int32_t coll;
        int32_t bmb;
    };
} sc_instr;

/* The tag of a collective instruction: the pass kind whose output it
 * carries and which of that pass's collectives it is (0..SC_COLL_MAX_PART). */
#define SC_COLL_MAX_PART 15
#define sc_coll_what(in) ((int)((in)->flags & 0xffu))
#define sc_coll_part(in) ((int)(((in)->flags >> 8) & 0xfu))

/* The whole record, for frac: fractions are fixed point with 30 bits. */
#define SC_FRAC_ONE (1 << 30)

/* flags of a transfer: SC_IF_GROUP makes it start a new group even when
 * the instruction before it is a transfer too (docs/semantics.md#the-semantics). */
#define SC_IF_GROUP 0x1u

/* flags of any instruction (the high bits: a collective's tag holds the low
 * twelve) for post-validation's rollback path
 * (docs/steps.md#optimizer-synchronization): SC_IF_ROLLBACK: runs only when
 * the VALIDATE before it found the eager step wrong (a redone F, a broadcast
 * of its output); SC_IF_REDO_IN: an F that then reads its input from the
 * broadcast of a redone F (tagged F s-1 mb) instead of its transfer. */
#define SC_IF_ROLLBACK 0x8000u
#define SC_IF_REDO_IN 0x4000u

/* Whether instruction k of a stream v starts a group: a transfer after a
 * non-transfer (or first), or one flagged SC_IF_GROUP. */
static inline int sc_starts_group(const sc_instr *v, size_t k)
{
    return sc_op_is_transfer(v[k].op) &&
           (k == 0 || !sc_op_is_transfer(v[k - 1].op) || (v[k].flags & SC_IF_GROUP));
}

typedef struct sc_prog sc_prog;

/* Limits that keep a bad recipe from asking for a giant allocation. An
 * order never holds more than 3·S·m passes (no valid program has more).
 * SC_MAX_PASSES may be lowered at build time (the fuzzers do). */
#define SC_MAX_DEVICES 4096
#define SC_MAX_STAGES 65536
#define SC_MAX_MICROBATCHES 1000000
#ifndef SC_MAX_PASSES
#define SC_MAX_PASSES 50000000L
#endif

/* Where the vocabulary layers (input embedding, output layer with softmax
 * cross-entropy) go (docs/vocab.md): none (the program has no vocabulary
 * layers), baseline (the embedding in stage 0's passes, the output layer in
 * the last stage's), redis (baseline with transformer layers moved off the
 * first and last stages, by the model's costs), vocab-1 and vocab-2 (both
 * layers split over every device by vocabulary: the passes S, T, E, EW of
 * every device and their collectives; one barrier, or two). */
#define SC_VOCABS(X)                                                    \
    X(NONE, "none") X(BASELINE, "baseline") X(REDIS, "redis") X(V1, "vocab-1") X(V2, "vocab-2")

typedef enum sc_vocab {
#define X(name, text) SC_VOCAB_##name,
    SC_VOCABS(X)
#undef X
    SC_VOCAB_COUNT
} sc_vocab;

const char *sc_vocab_name(int v);
/* The placement named `name`, or -1. */
int sc_vocab_parse(const char *name);
/* Whether placement v splits the vocabulary layers (vocab-1, vocab-2). */
#define sc_vocab_split(v) ((v) == SC_VOCAB_V1 || (v) == SC_VOCAB_V2)

/* Placements of stages on devices. */
typedef enum sc_place { SC_PLACE_LOOP, SC_PLACE_V, SC_PLACE_TABLE, SC_PLACE_WAVE } sc_place;

/* New program with P devices, S stages, m microbatches: default placement
 * loop, unit costs (T_F = T_B = T_W = 1 per device share), T_comm = 0,
 * w_keep = 1, P/S units of activation per (stage, microbatch).
 * Returns NULL on out of memory or when a size is out of range; then
 * sc_new_errmsg() says which. */
sc_prog *sc_prog_new(int P, int S, int m);
const char *sc_new_errmsg(void);
void sc_prog_free(sc_prog *pg);

/* Placement: LOOP (s mod P), V (needs S == 2P), WAVE (S a multiple of P:
 * chunk c = s / P goes 0..P-1 when c is even, back P-1..0 when odd; V is
 * the wave of two chunks), or TABLE (table[s] = dev). */
sc_status sc_prog_set_placement(sc_prog *pg, sc_place kind, const int *table);

/* Costs of one stage (s) or of all stages (s = -1). Times are for the stage
 * itself; negative or non-finite values are refused. */
sc_status sc_prog_set_cost(sc_prog *pg, int s, double tf, double tb, double tw);
sc_status sc_prog_set_comm(sc_prog *pg, double tcomm);
/* BW's own time on stage s (s = -1: all); NAN (the default) means tb + tw.
 * A profile measures it (a fused pass can be faster than its halves). */
sc_status sc_prog_set_cost_bw(sc_prog *pg, int s, double tbw);
/* Time of the optimizer step over stage s's parameters (default 0): OPTIM
 * on a device takes the sum over its stages. */
sc_status sc_prog_set_cost_optim(sc_prog *pg, int s, double topt);
/* Whether the costs are seconds (they came from a cost file, docs/costs.md)
 * or abstract time units (the default). Only outputs read it. */
void sc_prog_set_seconds(sc_prog *pg, int seconds);
int sc_prog_seconds(const sc_prog *pg);
/* Vocabulary layers (docs/vocab.md). sc_prog_set_vocab drops the orders'
 * lowering, as a cost does. The costs of device d's vocabulary passes
 * (d = -1: every device; times >= 0): S, T, E, EW; the units of memory
 * the record of S holds until T frees it. The sizes of the vocabulary
 * collectives: act_bytes for a tensor of one microbatch's rows x hidden (the
 * last stage's output, its gradient, the embedding's output and gradient),
 * row_bytes for one number per row (the maxima; the sums carry two). */
sc_status sc_prog_set_vocab(sc_prog *pg, sc_vocab v);
sc_vocab sc_prog_vocab(const sc_prog *pg);
sc_status sc_prog_set_vocab_cost(sc_prog *pg, int d, double ts, double tt, double te,
                                 double tew);
sc_status sc_prog_set_vocab_mem(sc_prog *pg, int d, double units);
sc_status sc_prog_set_vocab_bytes(sc_prog *pg, double act_bytes, double row_bytes);
double sc_prog_vocab_cost(const sc_prog *pg, int op, int d);
double sc_prog_vocab_mem(const sc_prog *pg, int d);
double sc_prog_vocab_bytes(const sc_prog *pg, int what, int part);

/* Memory (units, w_keep, the limit and per-device caps): memcap.h. */

/* Training steps (docs/steps.md). A program describes `steps` training steps
 * back to back (default 1): the orders give one step's passes, and the
 * lowering repeats them, each step ending with REDUCE and OPTIM. In the
 * lowered streams, microbatch i of step k is numbered k·m + i, so the
 * streams hold sc_prog_stream_microbatches() = m·steps microbatch numbers;
 * the k-th OPTIM of a stream ends its step k. `optim_sync` says how the
 * optimizer steps synchronize: NONE, each device steps on its own; SYNC, an
 * all-reduce of the gradient norm and of the inf/NaN flag that every device
 * waits for; POSTVAL, the Zero Bubble paper's post-validation (a chain of
 * partial states, an eager step, validation during the next step's warm-up,
 * and a rollback path). */
#define SC_SYNCS(X)                                                     \
    X(NONE, "none")                                                     \
    X(SYNC, "sync")                                                     \
    X(POSTVAL, "post-validation")

typedef enum sc_sync {
#define X(name, text) SC_SYNC_##name,
    SC_SYNCS(X)
#undef X
    SC_SYNC_COUNT
} sc_sync;

#define SC_MAX_STEPS 100000

/* Name of a synchronization ("post-validation"), and the reverse (-1 for
 * an unknown name). */
const char *sc_sync_name(int sync);
int sc_sync_parse(const char *name);
/* Sets the number of steps (1..SC_MAX_STEPS; the passes of all steps
 * together stay within SC_MAX_PASSES) and the synchronization. Set them
 * before pushing streams directly (sc_prog_push_stream). */
sc_status sc_prog_set_steps(sc_prog *pg, int steps);
sc_status sc_prog_set_optim_sync(sc_prog *pg, int sync);
int sc_prog_steps(const sc_prog *pg);
int sc_prog_optim_sync(const sc_prog *pg);
/* Microbatch numbers the lowered streams use: m·steps (m before the steps
 * are unrolled, within the compile driver). */
int sc_prog_stream_microbatches(const sc_prog *pg);

/* Append a compute pass to device d's order. Checks only ranges (stage,
 * microbatch, kind); sc_verify_passes() checks the rest. A vocabulary pass
 * (S, T, E, EW) names its device's shard: stage = d. */
sc_status sc_prog_push(sc_prog *pg, int d, int op, int stage, int mb);
/* Append an instruction to device d's lowered stream directly, for
 * schedules that arrive fully lowered (imports) and for tests of the
 * verifier. Compute passes also go to the order, so sc_verify_passes
 * applies; the program counts as lowered, and sc_verify_streams (or
 * sc_check) proves the streams as given. Do not mix with sc_prog_push. */
sc_status sc_prog_push_stream(sc_prog *pg, int d, sc_instr in);
/* A collective (docs/semantics.md#collectives), as a whole: what kind, its
 * members, what it carries (the tag) and its size. Each member has one
 * instruction for it in its stream; members must post the collectives of a
 * group in the same order. */
typedef struct sc_coll {
    int op;        /* SC_OP_ALLREDUCE or SC_OP_BCAST */
    int red;       /* all-reduce: SC_RED_SUM or SC_RED_MAX; 0 for a broadcast */
    int what;      /* tag: the kind of the pass whose output it carries (an sc_op) */
    int part;      /* tag: which of that pass's collectives, 0..SC_COLL_MAX_PART */
    int stage, mb; /* tag: the pass's stage and microbatch (-1: none) */
    int step;      /* tag: the training step (0 in a program of one step) */
    int root;      /* broadcast: the device that sends; -1 for an all-reduce */
    int group;     /* members: 0 = every device, else a group of sc_prog_add_group */
    double bytes;  /* size of the buffer */
} sc_coll;

/* A group of member devices (n >= 1 distinct devices, in any order): its
 * number (>= 1), or -1 with sc_errmsg() saying why. Group 0 is every
 * device. */
int sc_prog_add_group(sc_prog *pg, const int *devs, int n);
/* Members of group g, ascending (*n of them); NULL for an unknown group. */
const int *sc_prog_group(const sc_prog *pg, int g, int *n);
int sc_prog_groups(const sc_prog *pg);
/* Appends a collective instruction to device d's stream given as it is
 * (as sc_prog_push_stream; the device need not be a member: the verifier
 * says so). */
sc_status sc_prog_push_coll(sc_prog *pg, int d, const sc_coll *c);
/* The whole description of collective instruction `in` of this program. */
void sc_prog_coll(const sc_prog *pg, const sc_instr *in, sc_coll *out);
/* Cost of collectives: latency + factor * bytes / bandwidth, factor the
 * ring algorithm's (all-reduce 2(n-1)/n, broadcast (n-1)/n of n members).
 * Default latency 0, bandwidth infinite: collectives take no time. */
sc_status sc_prog_set_coll_cost(sc_prog *pg, double latency, double bandwidth);
double sc_prog_coll_latency(const sc_prog *pg);
double sc_prog_coll_bandwidth(const sc_prog *pg);
/* Simulated time of collective instruction `in`. */
double sc_prog_coll_time(const sc_prog *pg, const sc_instr *in);
/* The bytes term of that time: factor · bytes (the time is latency + this
 * / bandwidth); 0 for a collective of one member. */
double sc_prog_coll_weight(const sc_prog *pg, const sc_instr *in);

/* Formats instruction `in` of this program (sc_instr_format, and for a
 * collective also its root, step and group). */
void sc_prog_instr_format(const sc_prog *pg, const sc_instr *in, char *buf, size_t len);
/* Which collective each instruction of device d's stream waits for:
 * last[k] = base + the index of the latest collective instruction k reads
 * (posted before it on d; a later one completes after the earlier ones on
 * d's channel), or (size_t)-1. The reading rules are sc_coll_reads
 * (ir_impl.h). SC_ERR_PROGRAM, with the instruction named in err, when one
 * reads a collective not posted before it. */
sc_status sc_coll_readers(const sc_prog *pg, int d, size_t base, size_t *last, char *err,
                          size_t errlen);

/* Drop device d's order (to rebuild it). */
void sc_prog_clear_order(sc_prog *pg, int d);
/* Shape and model accessors. */
int sc_prog_devices(const sc_prog *pg);
int sc_prog_stages(const sc_prog *pg);
int sc_prog_microbatches(const sc_prog *pg);
int sc_prog_stage_device(const sc_prog *pg, int s);
double sc_prog_tf(const sc_prog *pg, int s);
double sc_prog_tb(const sc_prog *pg, int s);
double sc_prog_tw(const sc_prog *pg, int s);
double sc_prog_tbw(const sc_prog *pg, int s); /* BW's time: its own, or tb + tw */
double sc_prog_topt(const sc_prog *pg, int s);
double sc_prog_tcomm(const sc_prog *pg);
/* Chunk index of stage s on its device: 0 for its lowest stage there. */
int sc_prog_chunk(const sc_prog *pg, int s);
/* Stage of chunk c on device d, or -1. */
int sc_prog_stage_of(const sc_prog *pg, int d, int chunk);
int sc_prog_chunks(const sc_prog *pg, int d);

/* Device d's order of compute passes (before lowering). */
const sc_instr *sc_prog_order(const sc_prog *pg, int d, size_t *n);
/* Device d's lowered stream; NULL (n = 0) before sc_lower(). */
const sc_instr *sc_prog_stream(const sc_prog *pg, int d, size_t *n);
size_t sc_prog_total_instructions(const sc_prog *pg);
int sc_prog_is_lowered(const sc_prog *pg);

/* The last error message of any call on this program. */
const char *sc_errmsg(const sc_prog *pg);

/* Formats "F s3 mb12" style names of an instruction into buf. */
void sc_instr_format(const sc_instr *in, char *buf, size_t len);

/* A timing of lowered streams: the start and end of every instruction, k of
 * device d at offset[d] + k (offset has P+1 entries). Made by the replay
 * (check/replay.h); the owner frees it with sc_times_free. */
typedef struct sc_times {
    size_t *offset;
    double *t0, *t1;
} sc_times;
void sc_times_free(sc_times *t);
#include "pair.h"   /* overlapped pairs: their instruction, costs and append */
#include "copies.h" /* copies of the model, each microbatch through one */
#include "memcap.h" /* the memory limit, per-device caps, bytes of a unit */
#include "fsdp.h"   /* FSDP: the data-parallel group, its policy and costs */
#include "lengths.h" /* microbatches of different lengths */
#include "fwdonly.h" /* forward-only programs: F passes only */
#include "slices.h"  /* sequence slices: K causal slices per microbatch */
#include "ep.h"      /* expert parallelism: DISPATCH and COMBINE */
#endif
