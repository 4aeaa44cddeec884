/*
 * model_vocab.h — the vocabulary layers of the built-in model (internal to
 * runtime/model/; model.h, docs/vocab.md#running-the-split-model): the input
 * embedding (a table of vocab rows of hidden floats) and, split over the
 * devices, the output layer with softmax cross-entropy.
 *
 * Tokens and targets of row r of microbatch mb come from the model's hash
 * (the same on every device). The embedding table row t and the output
 * weight Wout[k][j] (hidden x vocab) are functions of (seed, t, k) and
 * (seed, k, j): a shard holds exactly the rows and columns of the whole.
 *
 * baseline: one device holds the whole table (the first stage's, or the
 *   reference's): x0 = Emb[tok] in F s0, Gemb[tok] += dX0 in B s0;
 *   the output layer stays in the last stage's passes (model.c).
 * split (vocab-1, vocab-2; device d of P holds rows and columns
 *   [d V/P, (d+1) V/P)):
 *   E   x0's part: the shard's rows of the tokens it holds (others 0);
 *       all-reduced (sum) into the input of F s0;
 *   S   Y = X Wout_d (X: the last stage's output, broadcast), per row the
 *       shard's maximum m_d, P = exp(Y - m_d), s_d = sum of P, the target's
 *       logit z_d where the target is in the shard; with vocab-1 also
 *       G_d = P Wout_d^T;
 *   all-reduces: max of m_d (M); sum of s_d exp(m_d - M) (Z) and of z_d;
 *       with vocab-1, sum of dX_d = (exp(m_d - M) / Z G_d - onehot_d
 *       Wout_d^T) / (m R), computed when the all-reduce starts (the
 *       statistics are complete there): the input gradient of the last
 *       stage. The loss of the microbatch: sum over rows of log Z + M - z.
 *   T   dY = (P exp(m_d - M) / Z - onehot_d) / (m R), Gout_d += X^T dY;
 *       with vocab-2 also dX_d = dY Wout_d^T, all-reduced after T;
 *   EW  Gemb_d[tok] += dX0 (the first stage's input gradient, broadcast).
 * The record of S (allocated by the executor, freed after T): P (R x V/P),
 * X (R x hidden), m_d, s_d, z_d (R each).
 *
 * Per-row statistics are computed on the host (the backend's download and
 * upload around them), in float with sums in double, in row order: the
 * same bits on every run and backend.
 * Tested by: tests/unit/test_vocab.c, tests/runtime.sh (vocab_par runs).
 */
#ifndef SC_MODEL_VOCAB_H
#define SC_MODEL_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "transport/transport.h"

typedef struct sc_mvocab_cfg {
    int R, h, V, m;       /* rows per microbatch, hidden, vocabulary, microbatches */
    const int *rows;      /* baseline: [m] tokens per sequence of each microbatch, rows
                           * rows[i]·batch (docs/lengths.md), or NULL: R rows; R is the most */
    int batch;
    int M;                /* microbatch numbers of the streams (m·steps); the data of
                           * number mb are those of microbatch mb % m */
    int P, d;             /* devices and this one (split); 1, 0 for the whole */
    int split;            /* 0: baseline (whole table); 1: vocab-1; 2: vocab-2 */
    int last_dev, first_dev; /* devices of the last and first stage */
    long long seed;
    int slices, seq;      /* sequence slices (docs/slices.md#run; 0 or 1: none): the m
                           * records are slices of rows[i] tokens of microbatches of seq;
                           * their tokens are those of their microbatch's rows */
    float init_scale;     /* of the initial weights (model.c's sqrt(3/hidden)) */
    int share;            /* expert parallelism: the rank's share of the batch, its rows
                           * the microbatch's after share x its rows (0: the first) */
} sc_mvocab_cfg;

typedef struct sc_mvocab sc_mvocab;

/* Allocates and initialises this device's parameters (and zero gradients)
 * on be: split: Emb_d, Wout_d; baseline: Emb. NULL and a message in err on
 * failure (out of memory, a failing backend). */
sc_mvocab *sc_mvocab_new(const sc_mvocab_cfg *c, sc_backend *be, char *err, size_t errlen);
void sc_mvocab_free(sc_mvocab *v);

/* Token and target of row r of microbatch mb. */
int32_t sc_mvocab_token(const sc_mvocab_cfg *c, int mb, int r);
int32_t sc_mvocab_target(const sc_mvocab_cfg *c, int mb, int r);

/* Bytes of the parameters and gradients it allocated (embedding rows and,
 * split, output columns). */
size_t sc_mvocab_param_bytes(const sc_mvocab *v);

/* Bytes of S's record (split). */
size_t sc_mvocab_record_bytes(const sc_mvocab *v);

/* F s0's input into x (R x hidden, device memory): the all-reduced E of mb
 * (split; its buffer is then freed), or the gathered rows (baseline). */
sc_status sc_mvocab_input(sc_mvocab *v, int mb, float *x);
/* Where B s0 writes its input gradient dX0 of mb (R x hidden; NULL when out
 * of memory); once written, sc_mvocab_dx0_done: split, it is broadcast to
 * every EW; baseline, scattered into Gemb at once. */
float *sc_mvocab_dx0(sc_mvocab *v, int mb);
sc_status sc_mvocab_dx0_done(sc_mvocab *v, int mb);
/* Where the last stage writes its output of mb, to be broadcast (split). */
float *sc_mvocab_output_buf(sc_mvocab *v, int mb);
/* The last stage's input gradient of mb (split: the all-reduced dX) into
 * dy; its buffer is then freed. */
sc_status sc_mvocab_output_grad(sc_mvocab *v, int mb, float *dy);

/* S, T, E or EW of mb (record: S's, for S and T; NULL otherwise). */
sc_status sc_mvocab_pass(sc_mvocab *v, int op, int mb, void *record);
/* The buffer of a vocabulary collective (exec/exec.h's coll_buffer) and its
 * completion. */
sc_status sc_mvocab_coll_buffer(sc_mvocab *v, const sc_coll *c, sc_cxfer *x);
sc_status sc_mvocab_coll_done(sc_mvocab *v, const sc_coll *c);

/* The loss of mb summed over its rows (split: known once the statistics
 * are reduced; NaN before). */
double sc_mvocab_loss(const sc_mvocab *v, int mb);
/* This device's vocabulary parameters and their gradients for the
 * optimizer, in a fixed order: i = 0 the embedding (rows), 1 the output
 * layer's columns (split only); 0 when there is no tensor i. */
int sc_mvocab_tensor(sc_mvocab *v, int i, float **w, float **g, size_t *n);
/* The optimizer changed the parameters: drop what was cached of them. */
void sc_mvocab_params_changed(sc_mvocab *v);

/* The tensors this device holds (params 0: gradients; 1: parameters): the
 * embedding's (rows first_row .. first_row + rows) and the output layer's
 * (columns first_col .. +cols of a hidden x vocab matrix; NULL in
 * baseline, model.c holds it). */
const float *sc_mvocab_emb(const sc_mvocab *v, int params, int *first_row, int *rows);
const float *sc_mvocab_out(const sc_mvocab *v, int params, int *first_col, int *cols);
sc_backend *sc_mvocab_backend(const sc_mvocab *v);
const char *sc_mvocab_errmsg(const sc_mvocab *v);

#endif
