/*
 * fuzz_costs.c — libFuzzer harness for cost files (docs/costs.md): the
 * strict JSON reader (interp/formats/jsonread.c) and the cost file's checks
 * (interp/formats/costs.c) on any bytes, which a recipe may be handed.
 *
 * Invariants checked (abort when broken):
 *   - a refused input comes with a message, an accepted one with none lost;
 *   - an accepted cost file written back (sc_costs_write) reads back with
 *     the same stages and per-stage medians (round trip).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_limit.h"
#include "formats/costs.h"
#include "formats/jsonread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    if (size > 1 << 16)
        return 0;
    char err[256];
    sc_jv *root = NULL;
    if (sc_json_parse((const char *)data, size, &root, err, sizeof err) != SC_OK) {
        if (!err[0] || root)
            abort();
        return 0;
    }
    sc_costs c;
    err[0] = 0;
    if (sc_costs_from_json(root, &c, err, sizeof err) != SC_OK) {
        if (!err[0])
            abort();
        sc_jv_free(root);
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || sc_costs_write(f, &c) != SC_OK)
        abort();
    fclose(f);
    sc_jv *again = NULL;
    sc_costs d;
    if (sc_json_parse(buf, len, &again, err, sizeof err) != SC_OK ||
        sc_costs_from_json(again, &d, err, sizeof err) != SC_OK) {
        fprintf(stderr, "round trip: %s\n%s\n", err, buf);
        abort();
    }
    if (d.S != c.S)
        abort();
    for (int k = 0; k < SC_COST_KINDS; k++)
        for (int s = 0; s < c.S; s++) {
            double a = c.kind[k][s].median, b = d.kind[k][s].median;
            if (c.kind[k][s].n > 0 && !(a == b || (a > 0 && b / a > 1 - 1e-8 && b / a < 1 + 1e-8)))
                abort();
        }
    sc_costs_free(&d);
    sc_costs_free(&c);
    sc_jv_free(again);
    sc_jv_free(root);
    free(buf);
    return 0;
}
