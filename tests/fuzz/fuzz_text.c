/*
 * fuzz_text.c — libFuzzer harness for the text form of orders (interp/text.c)
 * and everything after it: verify, lower, simulate, render.
 *
 * Input: four header bytes, then the devices' orders separated by '|':
 *   [0] P = 1 + b % 6        [1] v = 1 + b % 3 (S = P v)
 *   [2] m = 1 + b % 8        [3] bits 0-1 placement (0 loop, 1 v, 2 table
 *                                 from the next S bytes), bits 2-4 costs,
 *                                 bit 5 tcomm > 0, bit 6 w_keep = 0.5
 *   then "F0 F1 B0 W0 | F0 B0 ..." (device 0 | device 1 | ...)
 *
 * Invariants checked (abort when broken):
 *   - format then parse gives back the same order (text round trip);
 *   - a program that verifies also simulates.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_limit.h"
#include "compile.h"
#include "ir/ir.h"
#include "formats/render.h"
#include "sim/sim.h"
#include "ir/text.h"
#include "check/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sc_prog *shaped(int P, int S, int m, int place, const uint8_t *table)
{
    sc_prog *pg = sc_prog_new(P, S, m);
    if (!pg)
        return NULL;
    sc_status st = SC_OK;
    if (place == 1)
        st = sc_prog_set_placement(pg, SC_PLACE_V, NULL);
    else if (place == 2) {
        int tab[18];
        for (int s = 0; s < S; s++)
            tab[s] = table[s] % P;
        st = sc_prog_set_placement(pg, SC_PLACE_TABLE, tab);
    }
    if (st != SC_OK) {
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

/* Parses device orders from text separated by '|'; SC_OK when all parse. */
static sc_status parse_all(sc_prog *pg, const char *text, size_t len)
{
    int P = sc_prog_devices(pg);
    size_t at = 0;
    for (int d = 0; d < P && at <= len; d++) {
        const char *bar = memchr(text + at, '|', len - at);
        size_t n = bar ? (size_t)(bar - (text + at)) : len - at;
        sc_status st = sc_order_parse(pg, d, text + at, n);
        if (st)
            return st;
        at += n + 1;
    }
    return SC_OK;
}

static void round_trip(const sc_prog *pg, int place, const uint8_t *table)
{
    int P = sc_prog_devices(pg);
    sc_prog *again = shaped(P, sc_prog_stages(pg), sc_prog_microbatches(pg), place, table);
    if (!again)
        abort();
    for (int d = 0; d < P; d++) {
        char *s = sc_order_format(pg, d);
        if (!s)
            abort();
        if (sc_order_parse(again, d, s, strlen(s)) != SC_OK)
            abort();
        free(s);
        size_t n1, n2;
        const sc_instr *a = sc_prog_order(pg, d, &n1), *b = sc_prog_order(again, d, &n2);
        if (n1 != n2)
            abort();
        for (size_t k = 0; k < n1; k++)
            if (a[k].op != b[k].op || a[k].stage != b[k].stage || a[k].mb != b[k].mb)
                abort();
    }
    sc_prog_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    if (size < 4)
        return 0;
    int P = 1 + data[0] % 6, v = 1 + data[1] % 3, m = 1 + data[2] % 8, S = P * v;
    int place = data[3] & 3, costs = (data[3] >> 2) & 7;
    const uint8_t *table = data + 4;
    size_t hdr = 4;
    if (place == 2) {
        if (size < 4 + (size_t)S)
            return 0;
        hdr += (size_t)S;
    }
    if (place == 3)
        place = 0;
    sc_prog *pg = shaped(P, S, m, place, table);
    if (!pg)
        return 0;
    static const double tf[] = {1, 0, 1, 2, 0.5, 1, 3, 0};
    static const double tb[] = {1, 1, 0, 1, 1, 2, 0.25, 0};
    static const double tw[] = {1, 1, 1, 0, 2, 0.5, 1, 0};
    sc_prog_set_cost(pg, -1, tf[costs], tb[costs], tw[costs]);
    if (data[3] & 32)
        sc_prog_set_comm(pg, 0.5);
    if (data[3] & 64)
        sc_prog_set_w_keep(pg, 0.5);
    if (parse_all(pg, (const char *)data + hdr, size - hdr) == SC_OK) {
        round_trip(pg, place, table);
        if (sc_check(pg) == SC_OK) {
            char *dump = sc_render_dump(pg);
            free(dump);
            sc_sim *sim = NULL;
            if (sc_simulate(pg, &sim) != SC_OK)
                abort(); /* verified, yet the simulation refuses it */
            char *tl = sc_render_timeline(pg, sim, 40, 0);
            free(tl);
            sc_sim_free(sim);
        }
    }
    sc_prog_free(pg);
    return 0;
}
