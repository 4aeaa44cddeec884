/*
 * partition.h — the layers of a model split into pipeline stages
 * (docs/plan.md#layer-partition): contiguous layers per stage, the split
 * that minimizes the heaviest stage, the even split it is measured
 * against, and the split as Megatron-LM's --pipeline-model-parallel-layout
 * string and as torchtitan's module names per stage.
 *
 *     sc_layers ly;
 *     sc_layers_parse("E:4,t*14,L:6", &ly, err, sizeof err);   // 16 layers
 *     int first[5];                                  // stage s: first[s] .. first[s+1]-1
 *     sc_part_best(&ly, 4, first);                   // the lightest heaviest stage
 *     sc_part_layout(&ly, 4, first, buf, sizeof buf);   // "Et*2|t*4|t*5|t*3L"
 *
 * A layer is one of Megatron's kinds: E the embedding, t a transformer
 * (decoder) layer, m a multi-token-prediction layer, L the loss with the
 * output layer (the head); its weight is its cost relative to one t. A
 * stage may hold any run of consecutive layers, at least one. Stages are in
 * the model's order (Megatron's: virtual stage k·p + r is rank r's k-th
 * chunk); which device runs a stage is the schedule's placement.
 *
 * Tested by: tests/unit/test_plan.c.
 */
#ifndef SC_PARTITION_H
#define SC_PARTITION_H

#include <stddef.h>

#include "formats/jsonw.h"

#define SC_LAYERS_MAX 4096

typedef struct sc_layers {
    int n;
    char kind[SC_LAYERS_MAX];     /* 'E', 't', 'm', 'L' */
    double weight[SC_LAYERS_MAX]; /* cost relative to one 't' (> 0) */
} sc_layers;

/* "K[*N][:W],..." into ly: kind K, N layers of it (default 1), each of
 * weight W (default 1), e.g. "E:4,t*14,L:6". Returns 0, or -1 with the
 * reason in err. */
int sc_layers_parse(const char *spec, sc_layers *ly, char *err, size_t errlen);

/* The split into S stages with the smallest heaviest stage (first[0..S],
 * first[S] = ly->n); among those, the most even (the least sum of squared
 * stage weights). Returns that stage's weight, or -1 when S is not
 * 1..ly->n. Exact (dynamic programming over prefix sums, O(S·n²)). */
double sc_part_best(const sc_layers *ly, int S, int *first);
/* The even split: the t and m layers as evenly as they go (the first stages
 * one more), E with the first stage, L with the last; what Megatron does
 * without a layout. Returns its heaviest stage's weight, or -1 when there
 * are fewer t and m layers than stages. */
double sc_part_even(const sc_layers *ly, int S, int *first);
/* The weight of stage s. */
double sc_part_weight(const sc_layers *ly, const int *first, int s);

/* The Megatron layout string: stages separated by '|', a run of one kind
 * as "t*3"; written into buf (cut to len). */
void sc_part_layout(const sc_layers *ly, int S, const int *first, char *buf, size_t len);
/* Megatron's grammar back (PipelineParallelLayerLayout.parse_str_to_list:
 * commas are cosmetic, "(...)*N" and "X*N" repeat): the kinds into ly
 * (weights 1) and the stage boundaries into first (room for
 * SC_LAYERS_MAX + 1); returns the number of stages, or -1 with the reason
 * in err. */
int sc_part_parse_layout(const char *s, sc_layers *ly, int *first, char *err, size_t errlen);

/* torchtitan's module names per stage ("tok_embeddings", "layers.K",
 * "norm", "output"; its module_fqns_per_model_part) as a JSON array of
 * arrays in w, member key; and the split points (the first layers.K of
 * every stage after the first; PyTorch's SplitPoint.BEGINNING) as an
 * array, member key2 (null when a stage after the first holds no t). */
void sc_part_torchtitan(const sc_layers *ly, int S, const int *first, sc_jw *w, const char *key,
                        const char *key2);

/* A cost file (docs/costs.md) for the split: stage s's tf, tb, tw are the
 * device share's times scaled by its weight (tf · P · weight / total, so
 * that a device's stages add up to tf on the even average), tcomm as
 * given. */
void sc_part_costs(const sc_layers *ly, int S, int P, const int *first, double tf, double tb,
                   double tw, double tcomm, sc_jw *w);

#endif
