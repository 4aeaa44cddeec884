/*
 * fuzz_csv.c — libFuzzer harness for the PyTorch pipelining CSV importer
 * (interp/torchcsv.c) and everything after it: verify (lowered by us, or
 * streams as given), simulate, export both dialects.
 *
 * Input: the CSV text itself.
 * Invariants checked (abort when broken):
 *   - a refused file has a message;
 *   - a program that verifies also simulates, and exports in both dialects.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_limit.h"
#include "compile.h"
#include "ir/ir.h"
#include "sim/sim.h"
#include "formats/torchcsv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    char err[512] = "";
    sc_status st;
    sc_torch_dialect dialect;
    sc_prog *pg = sc_torchcsv_read((const char *)data, size, &dialect, &st, err, sizeof err);
    if (!pg) {
        if (st == SC_OK || !err[0])
            abort();
        return 0;
    }
    if (sc_check(pg) == SC_OK) {
        sc_sim *sim = NULL;
        if (sc_simulate(pg, &sim) != SC_OK)
            abort();
        sc_sim_free(sim);
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            if (sc_torchcsv_write(f, pg, SC_TORCH_COMPUTE_ONLY, SC_TORCH_CURRENT) == SC_ERR_NOMEM ||
                sc_torchcsv_write(f, pg, SC_TORCH_COMPUTE_COMMS, SC_TORCH_CURRENT) == SC_ERR_NOMEM)
                abort();
            fclose(f);
        }
    }
    sc_prog_free(pg);
    return 0;
}
