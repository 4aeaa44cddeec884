/*
 * fuzz_ptrace.c — libFuzzer harness for torch.profiler traces read by
 * `costs --from-trace` (docs/costs.md#costs-from-a-pytorch-trace): the JSON
 * reader and interp/formats/ptrace.c on any bytes.
 *
 * Invariants checked (abort when broken):
 *   - a refused trace comes with a message;
 *   - an accepted one gives a cost file that the cost file's own checks
 *     accept (sc_costs_write, then sc_costs_from_json), with its stages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costs_trip.h"
#include "cpu_limit.h"
#include "formats/costs.h"
#include "formats/jsonread.h"
#include "formats/ptrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    if (size > 1 << 16)
        return 0;
    char err[512], note[300];
    sc_jv *root = NULL;
    if (sc_json_parse((const char *)data, size, &root, err, sizeof err) != SC_OK)
        return 0;
    sc_ptrace *t = sc_ptrace_new();
    if (!t)
        abort();
    sc_costs c;
    err[0] = 0;
    sc_status st = sc_ptrace_add(t, "fuzz.json", root, err, sizeof err);
    sc_jv_free(root);
    if (st == SC_OK)
        st = sc_ptrace_costs(t, &c, note, sizeof note, err, sizeof err);
    if (st != SC_OK) {
        if (!err[0])
            abort();
        sc_ptrace_free(t);
        return 0;
    }
    sc_fuzz_costs_trip(&c, 0, "the cost file of an accepted trace is refused");
    sc_costs_free(&c);
    sc_ptrace_free(t);
    return 0;
}
