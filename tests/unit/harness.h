/*
 * harness.h — a tiny test harness for the C unit tests.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-9); CHECK_STR(s, "sub"); }
 *   int main(void) { RUN(name); return harness_done("interp"); }
 *
 * Each failed check prints file:line and the expression; harness_done
 * prints "N passed, N failed" (per check) and returns the exit code.
 */
#ifndef SC_HARNESS_H
#define SC_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int harness_pass, harness_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond)                                                                                  \
            harness_pass++;                                                                        \
        else {                                                                                     \
            harness_fail++;                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (fabs(a_ - b_) <= (tol))                                                                \
            harness_pass++;                                                                        \
        else {                                                                                     \
            harness_fail++;                                                                        \
            fprintf(stderr, "%s:%d: %s = %.12g, expected %s = %.12g\n", __FILE__, __LINE__, #a,    \
                    a_, #b, b_);                                                                   \
        }                                                                                          \
    } while (0)

/* s contains sub */
#define CHECK_STR(s, sub)                                                                          \
    do {                                                                                           \
        const char *s_ = (s);                                                                      \
        if (s_ && strstr(s_, (sub)))                                                               \
            harness_pass++;                                                                        \
        else {                                                                                     \
            harness_fail++;                                                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    s_ ? s_ : "(null)", (sub));                                                    \
        }                                                                                          \
    } while (0)

#define TEST(name) static void test_##name(void)
#define RUN(name)                                                                                  \
    do {                                                                                           \
        int f_ = harness_fail;                                                                     \
        test_##name();                                                                             \
        if (harness_fail != f_)                                                                    \
            fprintf(stderr, "FAIL %s\n", #name);                                                   \
    } while (0)

static inline int harness_done(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, harness_pass, harness_fail);
    return harness_fail ? 1 : 0;
}

#endif
