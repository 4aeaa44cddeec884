/*
 * precision.h — how well a profile knows a median (docs/costs.md#profiling):
 * `run --profile` repeats until every figure it measures is known within a
 * share of itself, and says which ones it could not pin down.
 *
 *     double half = sc_median_precision(v, n, end, steps, scratch);
 *     if (half > 0.02 * median) ... // not yet known within 2%
 *
 * The samples of one figure (every F of stage 1, say) come in steps: the
 * passes of one step share its circumstances (another process on the
 * core, a page-fault storm), so they are not independent draws, and an
 * interval that treats them so is too narrow on a loaded machine. The
 * interval here is a bootstrap over whole steps: B = 200 resamples of the
 * steps with replacement (a fixed seed: the same samples give the same
 * figure), the median of each resample's pooled samples, and the 2.5th and
 * 97.5th percentiles of those medians. Its half width, in seconds, shrinks
 * like 1/sqrt(steps) while the machine stays as it is.
 * Tested by: tests/unit/test_costs.c.
 */
#ifndef SC_PRECISION_H
#define SC_PRECISION_H

/* Resamples of the bootstrap. */
#define SC_PRECISION_B 200

/* Half the width of the 95% bootstrap interval of the median of v[0..n),
 * whose step k holds v[end[k-1] .. end[k]) (end[-1] = 0, end[steps-1] =
 * n). With fewer than 5 steps that hold samples, the samples themselves
 * are resampled (one step alone would give a width of 0). scratch: room for
 * n + SC_PRECISION_B doubles. NAN when n = 0; v is not changed. */
double sc_median_precision(const double *v, int n, const int *end, int steps, double *scratch);

#endif
