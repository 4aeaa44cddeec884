/*
 * model_impl.h — the built-in model's state (internal to runtime/):
 * model.c builds it and runs its passes, model_check.c trains the
 * reference and compares, model_vocab.c holds the vocabulary layers.
 */
#ifndef SC_MODEL_IMPL_H
#define SC_MODEL_IMPL_H

#include "model.h"
#include "model_vocab.h"

/* Host staging of generated tensors: they reach device memory through the
 * backend's upload, CHUNK floats at a time. */
#define CHUNK ((size_t)1 << 16)

typedef struct dev {
    sc_model *md;
    int d;
    sc_backend *be;
    int32_t *targets;    /* [R] scratch (host) */
    float *stage;        /* [CHUNK] scratch (host) */
    sc_mvocab *mv;       /* its vocabulary layers (model_vocab.h), or NULL */
    size_t pbytes;       /* bytes of parameters and gradients it allocated (the layers') */
    char err[384];
} dev;

struct sc_model {
    sc_model_cfg c;
    int S, m, L, R, h, V;
    int *first, *count;  /* [S] layers of each stage */
    float **W1, **W2, **G1, **G2; /* [L] */
    float *Wout, *Gout;
    sc_backend **owner;  /* [S] backend holding the stage's parameters */
    dev **devs;          /* [S] device context of each attached stage */
    double *loss;        /* [m] summed loss of each microbatch */
    int have_loss;
    sc_backend *own_be;  /* the reference's backend */
    int vocab, split, P; /* cfg.vocab_par; split: 1 vocab-1, 2 vocab-2, 0 not split */
    int first_dev, last_dev; /* devices of the first and last stage (attach) */
};

enum { T_W1 = 1, T_W2, T_WOUT, T_INPUT, T_TARGET }; /* model_vocab.c: 3, 5 */
_Static_assert(T_WOUT == 3 && T_TARGET == 5, "model_vocab.c's streams");

#endif
