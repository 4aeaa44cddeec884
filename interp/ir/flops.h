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
 * and the parameter bytes of every device. A cost file read afterwards
 * (docs/costs.md) overrides T_F, T_B, T_W and T_comm: a measurement beats
 * the model.
 */
#ifndef SC_FLOPS_H
#define SC_FLOPS_H

#include "ir.h"

typedef struct sc_model_desc {
    long layers, hidden, seq, vocab, batch;
    long heads;             /* attention heads (0: hidden / 128) */
    double tflops;          /* a device's achieved TFLOP/s */
    double coll_gbps;       /* collectives: bandwidth (GB/s) ... */
    double coll_us;         /* ... and latency (microseconds) */
    double p2p_gbps;        /* P2P transfers (GB/s; 0: T_comm as given) */
    double bytes_per_param; /* weights, gradients and optimizer state per parameter */
} sc_model_desc;

/* tflops 400, coll_gbps 100, coll_us 10, p2p_gbps 0, bytes_per_param 18
 * (bf16 weights and gradients, fp32 master weights and two Adam moments:
 * 2 + 4 + 4 + 4 + 4); the sizes 0. */
sc_model_desc sc_model_desc_default(void);

/* Applies the model to the program (above). SC_ERR_ARG with one message
 * for sizes below 1 (heads: 0 is the default), fewer layers than stages,
 * a vocabulary that the placement splits over P devices and P does not
 * divide, or non-positive rates. */
sc_status sc_prog_set_model(sc_prog *pg, const sc_model_desc *md);
/* Whether a model was applied; its description. */
int sc_prog_has_model(const sc_prog *pg);
const sc_model_desc *sc_prog_model(const sc_prog *pg);
/* Transformer layers of stage s (the model's split: even, or by cost with
 * redis); 0 without a model. */
int sc_prog_stage_layers(const sc_prog *pg, int s);
/* Bytes of the parameters (with gradients and optimizer state) device d
 * holds; 0 without a model. */
double sc_prog_param_bytes(const sc_prog *pg, int d);
/* Bytes of one unit of activation memory; 0 without a model. */
double sc_prog_unit_bytes(const sc_prog *pg);

#endif
