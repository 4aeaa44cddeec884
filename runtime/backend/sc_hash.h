/*
 * sc_hash.h — the counter-based hash behind the built-in model's data
 * (model/model.h): inputs, targets and initial weights are functions of (seed,
 * stream, index) only, so any split into stages, any device and any backend
 * generates the same bits. Header-only so that the CPU (model/model.c,
 * backend_cpu.c) and the GPU (cuda_kernels.cu) compile the same code; every
 * step is exact (integer arithmetic, then a product by a power of two), so
 * host and device agree bit for bit.
 * Tested by: tests/gpu/test_backend_cuda.c (fill_uniform's bits), tests/run.sh (threads and ranks alike).
 */
#ifndef SC_HASH_H
#define SC_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SC_HD __host__ __device__
#else
#define SC_HD
#endif

/* splitmix64's finalizer */
SC_HD static inline uint64_t sc_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

SC_HD static inline uint64_t sc_hash3(long long seed, uint64_t stream, uint64_t i)
{
    return sc_mix(sc_mix((uint64_t)seed * 0x9e3779b97f4a7c15ULL ^ stream) + i);
}

/* The stream of tensor `idx` of kind `kind`. */
SC_HD static inline uint64_t sc_stream(int kind, long idx)
{
    return ((uint64_t)kind << 40) | (uint64_t)idx;
}

/* Uniform in [-1, 1): 24 bits of the hash, times 2^-23, minus 1 (exact). */
SC_HD static inline float sc_urand(long long seed, uint64_t stream, uint64_t i)
{
    return (float)((double)(sc_hash3(seed, stream, i) >> 40) * (1.0 / 8388608.0) - 1.0);
}

#endif
