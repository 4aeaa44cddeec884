/*
 * test_verify_again.c — the compile driver proves the passes again only
 * where they changed since the last sc_verify_passes that passed
 * (check/verify.h: sc_verify_passes_again): the same passes are not proved
 * twice, and any change to an order, even one made in place behind the
 * program's back, is proved again and refused with the verifier's message.
 */
#include "check/verify.h"
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "ir/ir_impl.h"
#include "schedule/rules.h"

#include <string.h>

static sc_prog *fresh(void)
{
    sc_prog *pg = sc_prog_new(4, 4, 8);
    CHECK(sc_rule_fill(pg, "zb-h1") == SC_OK);
    CHECK(sc_verify_passes(pg) == SC_OK);
    CHECK(pg->vsnap != NULL);
    return pg;
}

/* Index of (op, stage, mb) in device d's order, or -1. */
static long find(const sc_prog *pg, int d, int op, int s, int mb)
{
    for (size_t k = 0; k < pg->order[d].n; k++) {
        const sc_instr *in = &pg->order[d].v[k];
        if (in->op == op && in->stage == s && in->mb == mb)
            return (long)k;
    }
    return -1;
}

TEST(unchanged_passes)
{
    sc_prog *pg = fresh();
    CHECK(sc_verify_passes_again(pg) == SC_OK);
    CHECK(pg->vsnap != NULL); /* kept: a second compile of them passes too */
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
}

TEST(changed_in_place)
{
    /* F and B of one microbatch swapped on the last device: the same
     * passes, the same count, out of order. */
    sc_prog *pg = fresh();
    long f = find(pg, 3, SC_OP_F, 3, 0), b = find(pg, 3, SC_OP_B, 3, 0);
    CHECK(f >= 0 && b > f);
    sc_instr t = pg->order[3].v[f];
    pg->order[3].v[f] = pg->order[3].v[b];
    pg->order[3].v[b] = t;
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order on d3: B s3 mb0");
    CHECK(pg->vsnap == NULL);
    sc_prog_free(pg);

    /* One pass renamed into another: a pass twice. */
    pg = fresh();
    long w = find(pg, 0, SC_OP_W, 0, 1);
    CHECK(w >= 0);
    pg->order[0].v[w].mb = 0;
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass twice: W s0 mb0");
    sc_prog_free(pg);

    /* The last pass of a device dropped: one instruction fewer. */
    pg = fresh();
    pg->order[2].n--;
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing");
    sc_prog_free(pg);
}

TEST(changed_placement)
{
    /* Stage 1 said to be on d2, its passes still on d1. */
    sc_prog *pg = fresh();
    pg->stage_dev[1] = 2;
    CHECK(sc_verify_passes_again(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass on the wrong device");
    pg->stage_dev[1] = 1;
    sc_prog_free(pg);
}

int main(void)
{
    RUN(unchanged_passes);
    RUN(changed_in_place);
    RUN(changed_placement);
    return harness_done("verify_again");
}
