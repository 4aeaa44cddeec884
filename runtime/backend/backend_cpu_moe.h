/*
 * backend_cpu_moe.h — the cpu backend's mixture-of-experts slots
 * (backend.h: the router's top-k and its backward, the dispatch of the
 * routed rows and their weighted combine), plain loops in a fixed order,
 * for backend_cpu.c's table and the unit tests.
 *
 * Semantics are backend.h's, exactly: the softmax's normaliser, the sum
 * of the k chosen probabilities and the combine's dot products in double,
 * the rest in float, index order; ties in the top-k go to the lower
 * expert. The same bits on every run and any thread count. ctx is unused.
 *
 * Tested by: tests/unit/test_moe_ops.c, tests/unit/test_moe_model.c.
 */
#ifndef SC_BACKEND_CPU_MOE_H
#define SC_BACKEND_CPU_MOE_H

#include <stddef.h>
#include <stdint.h>

void sc_cpu_moe_route(void *ctx, int rows, int E, int k, float *prob, int32_t *sel, float *wt,
                      int32_t *pos, int *count);
void sc_cpu_moe_route_bwd(void *ctx, int rows, int E, int k, const float *prob,
                          const int32_t *sel, const float *wt, const float *dwt, float *dlogits);
void sc_cpu_moe_gather(void *ctx, int rows, int k, int n, const int32_t *pos, const float *x,
                       float *xg);
void sc_cpu_moe_combine(void *ctx, int rows, int k, int n, const int32_t *pos, const float *wt,
                        const float *yg, float beta, float *y);
void sc_cpu_moe_combine_bwd(void *ctx, int rows, int k, int n, const int32_t *pos,
                            const float *wt, const float *yg, const float *dy, float *dyg,
                            float *dwt);

#endif
