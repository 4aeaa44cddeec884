/*
 * steps.c — the number of training steps and how their optimizer steps
 * synchronize (ir.h, docs/steps.md).
 */
#include "ir_impl.h"

#include <string.h>

static const char *const sync_names[] = {
#define X(name, text) text,
    SC_SYNCS(X)
#undef X
};

const char *sc_sync_name(int sync)
{
    return sync >= 0 && sync < SC_SYNC_COUNT ? sync_names[sync] : "?";
}

int sc_sync_parse(const char *name)
{
    for (int i = 0; i < SC_SYNC_COUNT; i++)
        if (strcmp(name, sync_names[i]) == 0)
            return i;
    return -1;
}

sc_status sc_prog_set_steps(sc_prog *pg, int steps)
{
    if (steps < 1 || steps > SC_MAX_STEPS)
        return sc_fail(pg, SC_ERR_ARG, "steps = %d is out of range (1..%d)", steps, SC_MAX_STEPS);
    /* The streams hold every step's passes: the same bound as one step's. */
    if ((double)sc_prog_max_passes(pg) * steps > (double)SC_MAX_PASSES)
        return sc_fail(pg, SC_ERR_LIMIT,
                       "steps = %d of %d stages x %d microbatches is too large (at most %ld "
                       "passes in all)",
                       steps, pg->S, pg->m, SC_MAX_PASSES);
    if (pg->given && pg->ngiven > 0 && steps != pg->steps)
        return sc_fail(pg, SC_ERR_ARG, "set the steps before giving the streams");
    pg->steps = steps;
    if (pg->given || pg->lowered)
        pg->nmb = pg->m * steps;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_optim_sync(sc_prog *pg, int sync)
{
    if (sync < 0 || sync >= SC_SYNC_COUNT)
        return sc_fail(pg, SC_ERR_ARG, "unknown optimizer synchronization %d", sync);
    pg->sync = sync;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_steps(const sc_prog *pg) { return pg->steps; }
int sc_prog_optim_sync(const sc_prog *pg) { return pg->sync; }
int sc_prog_stream_microbatches(const sc_prog *pg) { return pg->nmb; }
