/*
 * fuzz_ptrace.c — libFuzzer harness for torch.profiler traces read by
 * `costs --from-trace` (docs/costs.md#costs-from-a-pytorch-trace): the JSON
 * reader handing the events over one by one, and interp/formats/ptrace.c
 * and ptrace_costs.c, on any bytes.
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
#include "formats/ptrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    if (size > 1 << 16)
        return 0;
    char err[512], note[300];
    sc_ptrace *t = sc_ptrace_new();
    if (!t)
        abort();
    sc_costs c;
    err[0] = 0;
    sc_status st = sc_ptrace_read(t, "fuzz.json", (const char *)data, size, 0, err, sizeof err);
    if (st == SC_OK)
        st = sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err);
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
