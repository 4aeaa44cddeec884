/*
 * adamw_k.h — the constants of one AdamW step, as the backend op adamw
 * takes them (backend.h); its own header so that the CUDA kernels
 * (cuda_kernels.cu, C++) can take it by value without the C headers.
 * Tested by: tests/unit/test_steps.c, tests/gpu/test_backend_cuda.c (the same bits on every backend).
 */
#ifndef SC_ADAMW_K_H
#define SC_ADAMW_K_H

struct sc_adamw_k {
    float b1, b2;      /* the moments' decay */
    float coef;        /* the gradients' factor (clipping), 1 without */
    float decay;       /* 1 - lr * weight_decay */
    float step;        /* lr / (1 - b1^t) */
    float sbc2;        /* sqrt(1 - b2^t) */
    float eps;
};

#endif
