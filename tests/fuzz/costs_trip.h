/*
 * costs_trip.h — the round trip that the cost-file harnesses share
 * (fuzz_costs.c: cost files; fuzz_ptrace.c: the cost file made from a
 * torch.profiler trace). An accepted sc_costs is written as a cost file
 * (sc_costs_write), parsed and checked again (sc_costs_from_json); the
 * harness aborts when the file is refused or names other stages, and, when
 * `medians` is set, when a measured median did not survive (to 1e-8: the
 * writer prints 17 significant digits, the reader parses them).
 */
#ifndef SC_FUZZ_COSTS_TRIP_H
#define SC_FUZZ_COSTS_TRIP_H

#include <stdio.h>
#include <stdlib.h>

#include "formats/costs.h"
#include "formats/jsonread.h"

static void sc_fuzz_costs_trip(const sc_costs *c, int medians, const char *what)
{
    char *buf = NULL, err[512];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || sc_costs_write(f, c) != SC_OK)
        abort();
    fclose(f);
    sc_jv *again = NULL;
    sc_costs d;
    if (sc_json_parse(buf, len, &again, err, sizeof err) != SC_OK ||
        sc_costs_from_json(again, &d, err, sizeof err) != SC_OK) {
        fprintf(stderr, "%s: %s\n%s\n", what, err, buf);
        abort();
    }
    if (d.S != c->S)
        abort();
    for (int k = 0; medians && k < SC_COST_KINDS; k++)
        for (int s = 0; s < c->S; s++) {
            double a = c->kind[k][s].median, b = d.kind[k][s].median;
            if (c->kind[k][s].n > 0 && !(a == b || (a > 0 && b / a > 1 - 1e-8 && b / a < 1 + 1e-8)))
                abort();
        }
    sc_costs_free(&d);
    sc_jv_free(again);
    free(buf);
}

#endif
