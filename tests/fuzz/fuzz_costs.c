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

#include "costs_trip.h"
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
    sc_fuzz_costs_trip(&c, 1, "round trip");
    sc_costs_free(&c);
    sc_jv_free(root);
    return 0;
}
