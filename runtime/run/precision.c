/*
 * precision.c — the bootstrap interval of a median over steps
 * (precision.h).
 */
#include "precision.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* xorshift64*: a fixed sequence, so that a profile's decision to go on
 * depends only on its samples. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static int below(uint64_t *s, int n)
{
    return (int)(next(s) % (uint64_t)n);
}

/* The k-th smallest of x[0..n) (x is reordered): Hoare's selection. */
static double select_kth(double *x, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = x[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                double t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sc_median_precision(const double *v, int n, const int *end, int steps, double *scratch)
{
    if (n < 1)
        return NAN;
    /* The steps that hold samples: the units resampled. */
    int units = 0;
    for (int k = 0; k < steps; k++)
        units += end[k] > (k ? end[k - 1] : 0);
    int by_step = units >= 5;
    double *pool = scratch, *med = scratch + n;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < SC_PRECISION_B; b++) {
        int m = 0;
        if (by_step) {
            /* steps draws of a step (empty ones too: a step without the
             * figure is a step of the run, drawn as often as the others). */
            while (m == 0)
                for (int i = 0; i < steps; i++) {
                    int k = below(&seed, steps), from = k ? end[k - 1] : 0;
                    for (int j = from; j < end[k] && m < n; j++)
                        pool[m++] = v[j];
                }
        } else {
            for (; m < n; m++)
                pool[m] = v[below(&seed, n)];
        }
        /* A resample of steps can hold more samples than n: the pool keeps
         * the first n (the order of the draws is random). */
        med[b] = select_kth(pool, m, (m - 1) / 2);
    }
    qsort(med, SC_PRECISION_B, sizeof *med, cmp_double);
    double lo = med[(int)(0.025 * SC_PRECISION_B)], hi = med[(int)(0.975 * SC_PRECISION_B) - 1];
    return (hi - lo) / 2;
}
