/*
 * flops.h — costs, memory and parameters of a program from a description
 * of the model (docs/vocab.md#the-model-flops-and-bytes): a GPT-like transformer of `layers` layers
 * of width `hidden`, sequences of `seq` tokens, `batch` sequences per
 * microbatch, a vocabulary of `vocab` tokens (input embedding, output layer
 * with softmax cross-entropy), placed as the program's vocabulary placement
 * says (sc_prog_set_vocab first).
 *
 *     sc_model_desc md = sc_model_desc_default();
 *     md.layers = 32; md.hidden = 3072; md.seq = 2048; md.vocab = 256000;
 *     sc_prog_set_vocab(pg, SC_VOCAB_V1);
 *     if (sc_prog_set_model(pg, &md) != SC_OK) puts(sc_errmsg(pg));
 *
 * It sets, in seconds (FLOPs / the device's achieved FLOP/s): every
 * stage's T_F, T_B, T_W, the vocabulary passes' times, T_comm (with
 * p2p_gbps), the collectives' cost and sizes; in units (one unit = the
 * activations of one microbatch on a device's share of the transformer
 * layers, the papers' M_B): every stage's activation and the record of S;
 * and the bytes every device holds besides (sc_prog_dev_bytes). A cost file read afterwards
 * (docs/costs.md) overrides T_F, T_B, T_W and T_comm: a measurement beats
 * the model.
 *
 * Tested by: tests/unit/test_model.c.
 */
#ifndef SC_FLOPS_H
#define SC_FLOPS_H

#include <stdint.h>

#include "ir/ir.h"

struct sc_mdesc; /* model/mdesc.h */

/* The training set-up: how parameters, gradients and the optimizer's
 * states are kept (docs/model.md#bytes). */
typedef enum sc_precision {
    SC_PREC_MIXED, /* parameters in dtype, fp32 gradients, fp32 master weights
                    * (when dtype is not fp32) and fp32 optimizer states */
    SC_PREC_PURE   /* everything in dtype, no master copy */
} sc_precision;
typedef enum sc_optimizer {
    SC_OPT_ADAMW, /* two moments per parameter */
    SC_OPT_SGD,   /* no state (plain SGD; mixed precision keeps the master) */
    SC_OPT_NONE   /* no optimizer: parameters and gradients only */
} sc_optimizer;

typedef struct sc_model_desc {
    long layers, hidden, seq, vocab, batch;
    long heads;             /* attention heads (0: hidden / 128) */
    double tflops;          /* a device's achieved TFLOP/s */
    double coll_gbps;       /* collectives: bandwidth (GB/s) ... */
    double coll_us;         /* ... and latency (microseconds) */
    double p2p_gbps;        /* P2P transfers (GB/s; 0: T_comm as given) */
    /* The description (model/mdesc.h: a config.json's), or NULL for the
     * shorthand's: sc_mdesc_gpt(layers, hidden, vocab, heads). The program
     * keeps its own copy; layers, hidden, vocab and heads are then the
     * description's (a layers given besides must equal its own). */
    const struct sc_mdesc *desc;
    int dtype_bytes;        /* a parameter's bytes: 2 or 4; 0: the description's dtype */
    sc_precision precision;
    sc_optimizer optimizer;
    int zero;               /* 0; 1 shards optimizer states (and master weights) over dp,
                             * 2 also gradients, 3 (FSDP) also parameters */
    long dp;                /* data-parallel ranks the shards are spread over */
    double workspace;       /* bytes per device besides (CUDA context, cuBLAS, NCCL) */
    /* The decoder layers per stage (docs/model.md#the-split): split[0 .. S-1]
     * given (the caller's array, copied; a stage may hold none when it
     * holds the embedding or the head), or NULL: evenly, the first L % S
     * stages one more (with redis: by cost); split_best: the contiguous
     * split whose heaviest stage (its F + B + W, the embedding and the head
     * counted) is lightest. */
    const int *split;
    int split_best;
} sc_model_desc;

/* tflops 400, coll_gbps 100, coll_us 10, p2p_gbps 0; mixed precision,
 * AdamW, zero 0, dp 1, workspace 1 GiB; the sizes 0, no description, the
 * even split. */
sc_model_desc sc_model_desc_default(void);

/* Applies the model to the program (above). SC_ERR_ARG with one message
 * for sizes below 1 (heads: 0 is the default), fewer layers than stages,
 * a vocabulary that the placement splits over P devices and P does not
 * divide, or non-positive rates. */
sc_status sc_prog_set_model(sc_prog *pg, const sc_model_desc *md);
/* Whether a model was applied; its description (desc: the program's copy). */
int sc_prog_has_model(const sc_prog *pg);
const sc_model_desc *sc_prog_model(const sc_prog *pg);
/* Transformer layers of stage s (the model's split: even, or by cost with
 * redis); 0 without a model. */
int sc_prog_stage_layers(const sc_prog *pg, int s);

/* What device d holds besides activations (docs/model.md#bytes): the
 * parameters it holds (a tied head's copy not counted: the counts of all
 * devices sum to the model's total), and the bytes of its parameters (the
 * copy counted), gradients, optimizer states (with master weights) and
 * workspace, each after the ZeRO sharding. All 0 without a model. */
typedef struct sc_dev_bytes {
    int64_t params;
    double param_bytes, grads, optimizer, workspace;
} sc_dev_bytes;
sc_dev_bytes sc_prog_dev_bytes(const sc_prog *pg, int d);
/* param_bytes + grads + optimizer of device d: what the parameters cost
 * (0 without a model). */
double sc_prog_param_bytes(const sc_prog *pg, int d);
/* All of sc_dev_bytes's bytes: what device d holds before any activation. */
double sc_prog_static_bytes(const sc_prog *pg, int d);
/* What device d holds at its peak: sc_prog_static_bytes and peak_units
 * (the simulation's peak of activations, sc_sim.peak_mem[d]) in bytes. */
double sc_prog_total_bytes(const sc_prog *pg, int d, double peak_units);
/* A cap of `bytes` on device d's total (docs/model.md#caps) as a cap on
 * its activations, in units: what the device holds before any activation
 * taken off. SC_ERR_PROGRAM, a cap refusal (sc_prog_cap_refused), when
 * nothing is left; SC_ERR_ARG without a model. */
sc_status sc_prog_bytes_cap(sc_prog *pg, int d, double bytes, double *units);
/* Bytes of one unit of activation memory; 0 without a model. */
double sc_prog_unit_bytes(const sc_prog *pg);
/* The program's copy of the model's description, or NULL without a model. */
const struct sc_mdesc *sc_prog_mdesc(const sc_prog *pg);

#endif
