/*
 * model.h — the built-in model the runtime trains (design.md §3).
 *
 * A stack of `layers` residual MLP blocks on `hidden` features, then a
 * projection to `vocab` logits and softmax cross-entropy. One microbatch is
 * R = seq * batch rows. Block l:  z = x W1_l,  a = tanh(z),  x' = x + a W2_l.
 * Head:  logits = x Wout,  loss = mean over rows and microbatches of
 * -log softmax(logits)[target]. No biases. Inputs (R x hidden, uniform in
 * [-1, 1)), targets and initial weights come from a counter-based hash of
 * (seed, tensor, index): the same for any split into stages.
 *
 * Stages: the layers are split into S consecutive groups, the first
 * layers % S stages taking one more (or as cfg.stage_layers says); the head
 * belongs to the last stage.
 *
 * Vocabulary layers (cfg.vocab_par, SPEC.md §21.4; model_vocab.h): with any
 * placement but none, the inputs are the rows of an embedding table for
 * tokens drawn from the hash (baseline, redis: the table on the first
 * stage, its gradient scattered in B s0); vocab-1 and vocab-2 split the
 * embedding and the head over every device by vocabulary, with the passes
 * S, T, E, EW and their collectives; the last stage then ends at its blocks
 * and its B starts from the all-reduced input gradient.
 *
 * Passes (all matrix products through the backend's gemm):
 *   F   the stage's blocks (and, on the last stage, the head, the loss and
 *       dlogits = (softmax - onehot) / (m R), kept for B and W);
 *   B   the input gradient only: dA = dY W2^T, dZ = dA (1 - a^2),
 *       dX = dY + dZ W1^T (last stage: dY = dlogits Wout^T);
 *   W   the weight gradients from the kept tensors: G2 += a^T dY,
 *       G1 += x^T dZ (last stage: Gout += x^T dlogits);
 *   OPTIM  SGD, w -= lr * g, on the device's stages (gradients are kept);
 *   REDUCE nothing: one replica, no data parallelism to reduce over.
 * Gradients accumulate over microbatches in the order W runs.
 *
 * Activation record of (stage, microbatch), allocated by F: per block
 * x, a, dZ, dY (4 R hidden floats; B writes dZ and dY into it and W reads
 * them), and on the last stage x and dlogits of the head (R (hidden +
 * vocab) floats). Everything in it is needed by W, so B frees nothing:
 * w_keep = 1 (the papers' counting). Each of these tensors is a part of its
 * own (sc_model_record_parts): the executor allocates them separately, so
 * that offload can move the last ones to the host and back.
 */
#ifndef SC_MODEL_H
#define SC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "exec.h"

typedef struct sc_model_cfg {
    long hidden, layers, vocab, seq, batch;
    long long seed;
    double lr;
    /* The vocabulary layers (SPEC.md §21.4), from the program: vocab_par
     * is its sc_vocab placement (none: no embedding, the inputs are drawn;
     * the head on the last stage as always), devices its P; stage_layers
     * (or NULL: the even split below) the layers of each stage. */
    int vocab_par, devices;
    const int *stage_layers;
} sc_model_cfg;

typedef struct sc_model sc_model;

/* Checks the sizes for S stages and m microbatches (SC_ERR_ARG: a size
 * below 1, fewer layers than stages; SC_ERR_LIMIT: a dimension beyond
 * what BLAS indexes) and creates the model with no parameters yet. */
sc_status sc_model_new(const sc_model_cfg *cfg, int S, int m, sc_model **out, char *err,
                       size_t errlen);
/* Frees the parameters through the backends that allocated them: free the
 * model before its backends. */
void sc_model_free(sc_model *md);

/* Layers of stage s (first layer in *first). */
int sc_model_stage_layers(const sc_model *md, int s, int *first);
/* Bytes of the activation record of one (stage, microbatch), and of the
 * tensor between two stages. */
size_t sc_model_record_bytes(const sc_model *md, int s);
/* The record of stage s in parts, one per tensor (x, a, dZ, dY of each
 * block, then x and dlogits of the head): returns their number and writes
 * the first min(n, max) sizes in bytes. Offload moves whole parts. */
int sc_model_record_parts(const sc_model *md, int s, size_t *bytes, int max);
size_t sc_model_boundary_bytes(const sc_model *md);
/* Bytes of the parameters and gradients of stage s (the embedding with the
 * first stage's in baseline; a split vocabulary's shards are the devices'
 * and not counted here). */
size_t sc_model_param_bytes(const sc_model *md, int s);
/* Bytes of the record S keeps for T (a split vocabulary), 0 otherwise. */
size_t sc_model_vocab_record_bytes(const sc_model *md);
/* Bytes of the vocabulary shard every device holds with a split
 * vocabulary (embedding rows and output columns with their gradients),
 * 0 otherwise: a device's parameters are the sc_model_param_bytes of its
 * stages plus this. */
size_t sc_model_shard_param_bytes(const sc_model *md);
/* Bytes of parameters and gradients device d allocated on its backend
 * when attached (sc_model_attach), counted as allocated; 0 when it is not
 * attached in this process. */
size_t sc_model_allocated_param_bytes(const sc_model *md, int d);

/* Makes device d's workload: allocates and initialises the parameters of
 * every stage with stage_dev[s] == d (zero gradients) on backend be. */
sc_status sc_model_attach(sc_model *md, int d, sc_backend *be, const int *stage_dev,
                          sc_workload *wl, char *err, size_t errlen);

/* The step's loss (mean over all rows of all microbatches, summed in
 * microbatch order); NAN when the last stage is not attached here. */
double sc_model_loss(const sc_model *md);

/* Gradient tensors: 2 per layer (G1, G2) then Gout; NULL when the tensor's
 * stage is not attached here (or, with a split vocabulary, Gout: it is in
 * shards, compared by sc_model_compare). Device memory of the backend that
 * holds the stage (read it with that backend's download). */
int sc_model_tensors(const sc_model *md);
const float *sc_model_grad(const sc_model *md, int t, size_t *n);

/* Trains the same step on one device without a pipeline: every microbatch
 * in order, F through all layers, then B and W. The result is a model with
 * one stage whose loss and gradients are the reference. */
sc_status sc_model_reference(const sc_model_cfg *cfg, int m, size_t mem_cap, sc_model **out,
                             char *err, size_t errlen);

/* Largest per-tensor relative error max|g - r| / max|r| over the tensors
 * present in both (read through their backends), the embedding's and the
 * head's shards against the reference's rows and columns; *bitwise = 1 when
 * all of them are identical. NaN when a backend failed reading them. */
double sc_model_compare(const sc_model *md, const sc_model *ref, int *bitwise);

#endif
