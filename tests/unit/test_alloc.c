/*
 * test_alloc.c — the allocator hook of interp (ir/alloc.h): every byte a
 * program, its lowering, verification and simulation take is seen by the
 * hook and given back when freed; a refused allocation fails cleanly
 * (SC_ERR_NOMEM, nothing half-built, nothing leaked), at every point.
 */
#include "ir/alloc.h"
#include "harness.h"
#include "ir/ir.h"
#include "schedule/rules.h"
#include "sim/sim.h"
#include "check/verify.h"
#include "compile.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct budget {
    size_t used, cap, peak;
    long refused, calls;
    long fail_at; /* the call that is refused (counting from 1); 0: none */
} budget;

static int charge(void *ud, size_t bytes, int grow)
{
    budget *b = ud;
    if (!grow) {
        CHECK(bytes <= b->used);
        b->used -= bytes;
        return 1;
    }
    b->calls++;
    if ((b->cap && b->used + bytes > b->cap) || b->calls == b->fail_at) {
        b->refused++;
        return 0;
    }
    b->used += bytes;
    if (b->used > b->peak)
        b->peak = b->used;
    return 1;
}

/* Builds 1f1b on p devices, m microbatches; checks and simulates. */
static sc_status build(int p, int m, sc_prog **out, sc_sim **sim)
{
    *sim = NULL;
    sc_prog *pg = *out = sc_prog_new(p, p, m);
    if (!pg)
        return SC_ERR_NOMEM;
    sc_status st = sc_rule_fill(pg, "1f1b");
    if (!st)
        st = sc_check(pg);
    if (!st)
        st = sc_simulate(pg, sim);
    return st;
}

/* Counted exactly: the hook's count is the allocator's, and everything
 * comes back when the program and its simulation are freed. */
TEST(counts_and_gives_back)
{
    budget b = {0};
    sc_alloc_hook(charge, &b);
    size_t before = sc_alloc_used();
    sc_prog *pg;
    sc_sim *sim;
    CHECK(build(4, 32, &pg, &sim) == SC_OK);
    CHECK(b.used > 4 * 32 * 3 * sizeof(sc_instr)); /* at least the passes */
    CHECK(b.used == sc_alloc_used() - before);
    sc_sim_free(sim);
    sc_prog_free(pg);
    CHECK(b.used == 0);
    CHECK(sc_alloc_used() == before);
    /* Larger programs take more: the count follows S x m. */
    CHECK(build(8, 256, &pg, &sim) == SC_OK);
    size_t big = b.used;
    sc_sim_free(sim);
    sc_prog_free(pg);
    CHECK(big > 16 * 4 * 32 * 3 * sizeof(sc_instr));
    CHECK(b.used == 0);
    sc_alloc_hook(NULL, NULL);
}

/* A cap: the program is refused with SC_ERR_NOMEM, nothing stays held. */
TEST(cap_refuses)
{
    budget b = {.cap = 64 << 10};
    sc_alloc_hook(charge, &b);
    sc_prog *pg;
    sc_sim *sim;
    sc_status st = build(16, 512, &pg, &sim);
    CHECK(st == SC_ERR_NOMEM);
    CHECK(b.refused > 0 && b.peak <= b.cap);
    sc_sim_free(sim);
    sc_prog_free(pg);
    CHECK(b.used == 0);
    sc_alloc_hook(NULL, NULL);
}

/* Every allocation refused in turn: each failure is a clean status (or, at
 * creation, NULL), and everything is given back (AddressSanitizer checks
 * that nothing leaks and no block is freed twice). */
TEST(each_refusal_is_clean)
{
    budget probe = {0};
    sc_alloc_hook(charge, &probe);
    sc_prog *pg;
    sc_sim *sim;
    CHECK(build(3, 6, &pg, &sim) == SC_OK);
    sc_sim_free(sim);
    sc_prog_free(pg);
    long n = probe.calls;
    CHECK(n > 10);
    int clean = 0;
    for (long k = 1; k <= n; k++) {
        budget b = {.fail_at = k};
        sc_alloc_hook(charge, &b);
        sc_status st = build(3, 6, &pg, &sim);
        clean += (st == SC_ERR_NOMEM || st == SC_OK) && b.refused == 1;
        sc_sim_free(sim);
        sc_prog_free(pg);
        CHECK(b.used == 0);
    }
    CHECK(clean == n);
    sc_alloc_hook(NULL, NULL);
}

/* The C-like contract: calloc zeroes and checks overflow, realloc keeps the
 * contents and gives back what it shrinks, size 0 frees. */
TEST(contract)
{
    budget b = {0};
    sc_alloc_hook(charge, &b);
    int *v = sc_calloc(100, sizeof(int));
    CHECK(v && v[0] == 0 && v[99] == 0);
    size_t one = b.used;
    for (int i = 0; i < 100; i++)
        v[i] = i;
    v = sc_realloc(v, 1000 * sizeof(int));
    CHECK(v && v[99] == 99 && b.used == one + 900 * sizeof(int));
    v = sc_realloc(v, 10 * sizeof(int));
    CHECK(v && v[9] == 9 && b.used == one - 90 * sizeof(int));
    CHECK(sc_calloc(SIZE_MAX / 2, 4) == NULL);
    CHECK(sc_malloc(SIZE_MAX) == NULL);
    CHECK(sc_realloc(v, 0) == NULL);
    CHECK(b.used == 0);
    sc_free(NULL);
    sc_alloc_hook(NULL, NULL);
}

int main(void)
{
    RUN(counts_and_gives_back);
    RUN(cap_refuses);
    RUN(each_refusal_is_clean);
    RUN(contract);
    return harness_done("alloc");
}
