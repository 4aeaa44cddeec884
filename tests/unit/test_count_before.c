/*
 * test_count_before.c — sc_lower_count_before (lower/collectives.h), the
 * place of a RECV among its device's passes, against the definition read
 * pass by pass: on random devices as the dataflow timing makes them (passes
 * one after another, gaps, passes of no length, several ending at once, the
 * run's numbers ascending), for data produced at every end and start and in
 * between, by producers that ran before, between and after them.
 */
#include "harness.h"
#include "lower/collectives.h"

#include <stdlib.h>

/* The definition: passes before the data, counted from the first. */
static size_t linear(const double *start, const double *end, const size_t *sq, size_t n,
                     double tau, size_t seq)
{
    size_t c = 0;
    while (c < n && (end[c] < tau || (end[c] == tau && (start[c] < tau || sq[c] <= seq))))
        c++;
    return c;
}

TEST(against_the_definition)
{
    enum { MAXN = 300 };
    double start[MAXN], end[MAXN];
    size_t sq[MAXN];
    unsigned seed = 12345;
    long checked = 0;
    for (int dev = 0; dev < 400; dev++) {
        size_t n = (size_t)(rand_r(&seed) % MAXN);
        double t = 0;
        size_t s = (size_t)(rand_r(&seed) % 5);
        for (size_t k = 0; k < n; k++) {
            if (rand_r(&seed) % 3 == 0)
                t += rand_r(&seed) % 3; /* a gap, or none */
            start[k] = t;
            t += rand_r(&seed) % 4 == 0 ? 0 : 1 + rand_r(&seed) % 2; /* no length, or some */
            end[k] = t;
            sq[k] = s;
            s += 1 + (size_t)(rand_r(&seed) % 3);
        }
        for (int q = 0; q < 60; q++) {
            double tau = n && q % 3 ? (q % 2 ? end : start)[rand_r(&seed) % n]
                                    : (rand_r(&seed) % (int)(2 * t + 3)) / 2.0 - 0.5;
            size_t seq = (size_t)(rand_r(&seed) % (int)(s + 3));
            for (size_t m = 0; m <= n; m += 1 + (size_t)(rand_r(&seed) % 40)) {
                size_t want = linear(start, end, sq, m, tau, seq);
                size_t got = sc_lower_count_before(start, end, sq, m, tau, seq);
                CHECK(got == want);
                if (got != want)
                    return;
                checked++;
            }
        }
    }
    CHECK(checked > 10000);
}

int main(void)
{
    RUN(against_the_definition);
    return harness_done("count_before");
}
