/*
 * backend_cpu_dec.h — the cpu backend's decoder slots (backend.h: RMSNorm,
 * rotary positions, causal attention with grouped KV heads, SwiGLU), plain
 * loops in a fixed order, for backend_cpu.c's table and the unit tests.
 *
 * Semantics are backend.h's, exactly. Sums of squares and the softmax's
 * normaliser are summed in double; the rest in float, index order: the
 * same bits on every run and any thread count. ctx is unused (no state):
 * the slots never fail.
 *
 * Tested by: tests/unit/test_decoder_ops.c, tests/unit/test_decoder_model.c.
 */
#ifndef SC_BACKEND_CPU_DEC_H
#define SC_BACKEND_CPU_DEC_H

#include <stddef.h>

void sc_cpu_rmsnorm_fwd(void *ctx, int rows, int n, const float *x, const float *g, float eps,
                        float *y, float *rstd);
void sc_cpu_rmsnorm_bwd(void *ctx, int rows, int n, const float *x, const float *g,
                        const float *rstd, const float *dy, float beta, float *dx);
void sc_cpu_rmsnorm_wgrad(void *ctx, int rows, int n, const float *x, const float *rstd,
                          const float *dy, float *dg);
void sc_cpu_rope(void *ctx, int rows, int seq, int pos0, int heads, int dim, float theta,
                 int sign, float *x);
void sc_cpu_attn_fwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                     const float *q, const float *k, const float *v, float *p, float *o);
void sc_cpu_attn_bwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                     const float *q, const float *k, const float *v, float *p,
                     const float *dout, float *dq, float *dk, float *dv);
void sc_cpu_swiglu_fwd(void *ctx, size_t n, const float *g, const float *u, float *a);
void sc_cpu_swiglu_bwd(void *ctx, size_t n, const float *g, const float *u, float *du,
                       float *dg);

#endif
