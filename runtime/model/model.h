/*
 * model.h — the built-in model the runtime trains (runtime/README.md).
 *
 * A stack of `layers` blocks on `hidden` features: residual MLP blocks (below)
 * or, with cfg.kind SC_MODEL_DECODER, Llama-style decoder layers
 * (model_decoder.c, docs/run.md#the-decoder: their record has b_only parts
 * that B frees, and the first stage embeds tokens), then a
 * projection to `vocab` logits and softmax cross-entropy. One microbatch is
 * R = seq * batch rows. Block l:  z = x W1_l,  a = tanh(z),  x' = x + a W2_l.
 * Head:  logits = x Wout,  loss = mean over rows and microbatches of
 * -log softmax(logits)[target]. No biases. Inputs (R x hidden, uniform in
 * [-1, 1)), targets and initial weights come from a counter-based hash of
 * (seed, tensor, index): the same for any split into stages.
 *
 * Stages: the layers are split into S consecutive groups, the first
 * layers % S stages taking one more; the head belongs to the last stage.
 *
 * Passes (all matrix products through the backend's gemm):
 *   F   the stage's blocks (and, on the last stage, the head, the loss and
 *       dlogits = (softmax - onehot) / (m R), kept for B and W);
 *   B   the input gradient only: dA = dY W2^T, dZ = dA (1 - a^2),
 *       dX = dY + dZ W1^T (last stage: dY = dlogits Wout^T);
 *   W   the weight gradients from the kept tensors: G2 += a^T dY,
 *       G1 += x^T dZ (last stage: Gout += x^T dlogits);
 *   REDUCE the state of the device's gradients for the optimizer (the sum
 *       of their squares, the count of non-finite values; optim.h): one
 *       replica, no data parallelism to reduce over;
 *   OPTIM  AdamW on the device's stages (optim.h), clipped or skipped as
 *       the state summed over the devices says (gradients are kept);
 *   VALIDATE (post-validation) the eager step checked against the global
 *       state, undone and redone when it was wrong.
 * Gradients accumulate over microbatches in the order W runs; the first W
 * of a stage in a step zeroes them. With several steps (cfg.steps), step k
 * trains microbatches k·m .. k·m+m-1 on the data of microbatches 0..m-1:
 * the same batch every step, so that the loss falls as the model learns it.
 *
 * Activation record of (stage, microbatch), allocated by F: per block
 * x, a, dZ, dY (4 R hidden floats; B writes dZ and dY into it and W reads
 * them), and on the last stage x and dlogits of the head (R (hidden +
 * vocab) floats). Everything in it is needed by W, so B frees nothing:
 * w_keep = 1 (the papers' counting). Each of these tensors is a part of its
 * own (sc_model_record_parts): the executor allocates them separately, so
 * that offload can move the last ones to the host and back.
 * Tested by: tests/unit/test_runtime.c, tests/unit/test_model.c, tests/run.sh, tests/decoder.sh.
 */
#ifndef SC_MODEL_H
#define SC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "exec/exec.h"
#include "optim.h"

/* The model's sizes, fields of sc_model_cfg that `run` takes as -D NAME,
 * writes in run --json and in a cost file's "measured", and `compare`
 * takes for its bytes: one list, X(name). The seed is last (it changes no
 * byte). */
#define SC_MODEL_SIZES(X) X(hidden) X(layers) X(vocab) X(seq) X(batch) X(seed)
#define SC_MODEL_ONE_(name) +1
enum { SC_MODEL_NSIZES = 0 SC_MODEL_SIZES(SC_MODEL_ONE_) };

/* The block the layers are made of: the residual MLP above, or a
 * Llama-style decoder layer (docs/run.md#the-decoder). */
enum { SC_MODEL_MLP, SC_MODEL_DECODER };

typedef struct sc_model_cfg {
    long hidden, layers, vocab, seq, batch;
    long long seed;
    /* The decoder (kind SC_MODEL_DECODER; a config.json's sizes): heads,
     * KV heads (dividing heads), head_dim (even), intermediate_size,
     * rope_theta, rms_norm_eps. Its first stage embeds tokens (an
     * untied embedding: vocab_par none counts as baseline), its last stage
     * applies the final RMSNorm before the output layer. */
    int kind;
    long heads, kv_heads, head_dim, inter;
    double rope_theta, norm_eps;
    /* Mixture of experts in every layer's MLP (experts > 0;
     * docs/run.md#mixture-of-experts): num_local_experts, experts per token,
     * an expert's width (moe_intermediate_size, else inter), and the shared
     * experts' total width (n_shared_experts times it; 0: none). */
    long experts, experts_per_tok, moe_inter, shared_inter;
    int steps;           /* training steps (0 or 1: one) */
    int sync;            /* sc_sync of the program: what OPTIM and VALIDATE do */
    int devices;         /* the program's devices (post-validation's chain ends at the last;
                          * a split vocabulary is split over them) */
    int vocab_par;       /* sc_vocab of the program (docs/vocab.md): none, the model
                          * above; any other adds an input embedding (vocab rows of
                          * hidden floats, the first stage's input: the rows of the
                          * microbatch's tokens); vocab-1 and vocab-2 split the
                          * embedding and the output layer over the devices
                          * (model_vocab.h) */
    const int *stage_layers; /* [S] layers of each stage (redis), or NULL: even */
    int copies;          /* copies of the model (docs/guide.md#copies; 0 or 1: one): the
                          * S stages are `copies` copies of the layers, stage s holding
                          * copy s/(S/copies)'s share, each copy's first stage reading
                          * the input and its last holding an output layer; copies start
                          * equal and sum their gradients (a collective tagged W) */
    const double *lengths; /* [m] tokens per sequence of each microbatch (docs/lengths.md: whole
                          * numbers), or NULL: seq; microbatch i has batch sequences of
                          * lengths[i] tokens, rows lengths[i]·batch: its tensors, record,
                          * messages and loss rows take them (the loss: mean over all rows) */
    int ep, ep_rank;     /* expert parallelism (docs/semantics.md#expert-parallelism; 0 or 1:
                          * none): this model is rank ep_rank of an EP group of ep, holding
                          * experts / ep of the routed experts (from ep_rank experts / ep)
                          * and the batch's sequences ep_rank batch / ep ..: batch / ep of
                          * them; its loss and gradients are its share of the whole batch's
                          * (the mean over ep x its rows; model_moe_ep.c) */
    int slices;          /* sequence slices (docs/slices.md#run; 0 or 1: none): the m records
                          * are slices, record r slice r % slices of microbatch r / slices,
                          * lengths[r] of its tokens (the slices of one sum to seq); the
                          * data and the reference are the unsliced microbatches' */
    int forward_only;    /* forward-only (docs/guide.md#forward-only): the reference runs
                          * F only, no backward, no optimizer step */
    sc_optim_cfg opt;
    /* Optional: called by the device holding the last stage when it ends
     * step k (its OPTIM), with the step's loss; from that device's thread. */
    void (*progress)(void *arg, int step, int steps, double loss);
    void *progress_arg;
} sc_model_cfg;

/* What the optimizer did in one step (on one device; the verdict is the
 * same on every device under sync and post-validation). */
typedef struct sc_step_info {
    double norm;         /* the gradient norm the verdict used (global, or local under none) */
    double coef;         /* clip coefficient (1: not clipped) */
    int skipped;         /* inf or NaN: no update */
    int eager;           /* post-validation: the device stepped before validation */
    int rolled_back;     /* post-validation: the eager step was undone and redone */
} sc_step_info;

typedef struct sc_model sc_model;

/* Checks the sizes for S stages and m microbatches (SC_ERR_ARG: a size
 * below 1, fewer layers than stages; SC_ERR_LIMIT: a dimension beyond
 * what BLAS indexes) and creates the model with no parameters yet. */
sc_status sc_model_new(const sc_model_cfg *cfg, int S, int m, sc_model **out, char *err,
                       size_t errlen);
/* Frees the parameters through the backends that allocated them: free the
 * model before its backends. */
void sc_model_free(sc_model *md);

/* The sizes it was created with (cfg's stage_layers: NULL). */
const sc_model_cfg *sc_model_config(const sc_model *md);
/* Layers of stage s (first layer in *first). */
int sc_model_stage_layers(const sc_model *md, int s, int *first);
/* Bytes of the activation record of one (stage, microbatch mb): all of it
 * (what F allocates), the part W needs (kept) and the part B alone needs
 * (b_only, freed by B: the decoder's q, k, v, p, gate, up; 0 for the MLP);
 * and of the tensor between two stages. mb: a stream's number (any step),
 * or -1 for a microbatch of seq tokens (they differ with cfg.lengths). */
size_t sc_model_record_bytes(const sc_model *md, int s, int mb);
size_t sc_model_record_kept_bytes(const sc_model *md, int s, int mb);
size_t sc_model_record_bonly_bytes(const sc_model *md, int s, int mb);
/* The kept record of stage s in parts, one per tensor (x, a, dZ, dY of each
 * block, then x and dlogits of the head; the decoder's: model_decoder.c,
 * 17 per layer and 5 of the head): returns their number and writes the
 * first min(n, max) sizes in bytes. Offload moves whole parts (b_only is
 * one more, after them: exec/exec.h). */
int sc_model_record_parts(const sc_model *md, int s, int mb, size_t *bytes, int max);
size_t sc_model_boundary_bytes(const sc_model *md, int mb);
/* Bytes of one float per row of a microbatch (seq · batch rows). */
size_t sc_model_row_bytes(const sc_model *md);
/* Bytes of the parameters and gradients of stage s (with the whole
 * embedding on stage 0 and the whole output layer on the last stage, when
 * they are not split), of the vocabulary shard each device holds (split;
 * else 0), and what device d allocated (0 when it is not attached here). */
size_t sc_model_param_bytes(const sc_model *md, int s);
size_t sc_model_shard_param_bytes(const sc_model *md);
size_t sc_model_allocated_param_bytes(const sc_model *md, int d);
/* Bytes of AdamW's moments device d allocated (0 when it is not attached
 * here). */
size_t sc_model_allocated_optim_bytes(const sc_model *md, int d);
/* Of sc_model_allocated_param_bytes, the gradients'. */
size_t sc_model_allocated_grad_bytes(const sc_model *md, int d);
/* Bytes of the record S keeps for T (split; else 0). */
size_t sc_model_vocab_record_bytes(const sc_model *md);

/* Makes device d's workload: allocates and initialises the parameters of
 * every stage with stage_dev[s] == d (zero gradients) on backend be. */
sc_status sc_model_attach(sc_model *md, int d, sc_backend *be, const int *stage_dev,
                          sc_workload *wl, char *err, size_t errlen);

/* The loss of step k (mean over all rows of its microbatches, summed in
 * microbatch order); NAN when the last stage is not attached here. */
double sc_model_step_loss(const sc_model *md, int k);
/* The last step's loss. */
double sc_model_loss(const sc_model *md);
/* What step k did on the lowest device attached here (0 when none is). */
int sc_model_step_info(const sc_model *md, int k, sc_step_info *out);
/* post-validation: on how many attached devices step k was undone. */
int sc_model_rollbacks(const sc_model *md, int k);

/* Gradient tensors: per layer 2 for the MLP (G1, G2) or 9 for the decoder
 * (g1, Wq, Wk, Wv, Wo, g2, Wg, Wu, Wd; with experts 10 or 13: model_moe.c),
 * then Gout, then the decoder's final
 * norm, then Gemb when there is an embedding; NULL when the tensor's stage is not attached here or the
 * tensor is split (its shards are compared by sc_model_compare). Device memory of the backend that holds the
 * stage (read it with that backend's download). */
int sc_model_tensors(const sc_model *md);
const float *sc_model_grad(const sc_model *md, int t, size_t *n);

/* Trains the same steps on one device without a pipeline: every
 * microbatch of a step in order, F through all layers, then B and W; then
 * the optimizer with the state of all gradients (the verdict a
 * synchronized pipeline reaches). The result is a model with one stage
 * whose losses, gradients and parameters are the reference. */
sc_status sc_model_reference(const sc_model_cfg *cfg, int m, size_t mem_cap, sc_model **out,
                             char *err, size_t errlen);

/* Largest per-tensor relative error max|g - r| / max|r| over the tensors
 * present in both (read through their backends); *bitwise = 1 when all of
 * them are identical. NaN when a backend failed reading them. */
double sc_model_compare(const sc_model *md, const sc_model *ref, int *bitwise);
/* The same for the parameters (in the same order), beyond
 * 2 lr per AdamW step the reference took: an AdamW step moves every
 * parameter by about lr whatever its gradient's size, so a gradient near
 * zero that rounds to the other sign moves it the other way (bitwise is
 * still the exact comparison). */
double sc_model_compare_params(const sc_model *md, const sc_model *ref, int *bitwise);

/* Expert parallelism (docs/semantics.md#expert-parallelism): what an MoE
 * layer gives and takes in the all-to-alls DISPATCH and COMBINE that
 * follow a pass. The executor calls `out` for the rows this EP rank sends
 * (row_bytes each, destination-major: nsend[e] rows for rank e, e in
 * 0..ep-1, itself included) and the room it has for rows in (*cap rows at
 * *recv); it moves them over the EP group (transport.h's a2a_start), then
 * calls `in` with the rows received, source-major, nrecv[e] from rank e.
 * Buffers are the layer's: valid from `out` until `in` returns. A layer
 * that drops no token gives cap >= the tokens x k it can receive; more is
 * an error of the run (the transport's overflow), never a silent drop.
 * tests/unit/test_a2a_run.c drives it with a test double; the MoE layer of
 * the decoder is to implement it. */
typedef struct sc_ep_call {
    int op;          /* SC_OP_DISPATCH or SC_OP_COMBINE */
    int pass;        /* the pass it follows: SC_OP_F, SC_OP_B or SC_OP_BW */
    int stage, mb;   /* its tag */
    int rank, ep;    /* this device's EP rank and the group's size */
} sc_ep_call;

typedef struct sc_ep_hook {
    void *ctx;
    size_t row_bytes;
    sc_status (*out)(void *ctx, const sc_ep_call *c, const void **send, size_t *nsend,
                     void **recv, size_t *cap, char *err, size_t errlen);
    sc_status (*in)(void *ctx, const sc_ep_call *c, const void *recv, const size_t *nrecv,
                    char *err, size_t errlen);
} sc_ep_hook;

/* Runs the all-to-all c of this rank through hook h on transport tp (its
 * devices: the EP group, this rank = device c->rank): out, the exchange,
 * in. Blocks until it completes. */
struct sc_transport;
/* Rank e of md's EP group (md: rank 0 of a config with cfg.ep > 1): the
 * same config and split of the layers, its own share; and the EP group's
 * transports of a device's workload (wl from sc_model_attach; lane_tp:
 * the one its pairs' lane uses, or NULL), its number there. */
sc_status sc_model_new_ep_rank(const sc_model *md, int e, sc_model **out, char *err,
                               size_t errlen);
void sc_model_set_ep(sc_workload *wl, struct sc_transport *tp, struct sc_transport *lane_tp,
                     int dev);
/* ep > 1: stage s's measured all-to-alls of one pass (seconds, the mean
 * over its F, B and BW passes; the stage's MoE layers summed): its
 * dispatch exchanges (counts, then rows) and its combine's; 0 when not
 * measured. */
void sc_model_ep_times(const sc_model *md, int s, double *dispatch, double *combine);
sc_status sc_ep_exchange(const sc_ep_hook *h, const sc_ep_call *c, struct sc_transport *tp,
                         char *err, size_t errlen);

#endif
