/*
 * fuzz_stream.c — libFuzzer harness for lowered streams given whole
 * (sc_prog_push_stream: the way imported schedules arrive), then verified
 * by the replay, simulated and rendered.
 *
 * Input: three header bytes, then one instruction per 5 bytes:
 *   [0] P = 1 + b % 4   [1] v = 1 + b % 2 (S = P v)   [2] m = 1 + b % 4
 *   then device, op | dir << 4, stage, mb, peer; stage, mb and peer run
 *   one past their ranges on both sides (-1 and P, S or m) so that bad
 *   instructions are tried too. For OFFLOAD, DROP and RELOAD the last byte
 *   is the fraction: b / 254 of the record, 0 and 255 out of range. For
 *   ALLREDUCE and BCAST (docs/semantics.md#collectives) the bytes are: reduction (the dir
 *   bit), tag kind (stage byte / 16), tag stage and microbatch as above,
 *   root (the peer byte) and group (its top bit: group 1 = every device
 *   but the last, when P > 1), size = the peer byte.
 *
 * Invariant checked (abort when broken): a program that verifies also
 * simulates (the same replay, timed).
 */
#include <stdint.h>
#include <stdlib.h>

#include "cpu_limit.h"
#include "compile.h"
#include "ir/ir.h"
#include "formats/render.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* b mapped onto -1..n (both ends out of range). */
static int32_t spread(uint8_t b, int n) { return (int32_t)(b % (n + 2)) - 1; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    if (size < 3)
        return 0;
    int P = 1 + data[0] % 4, S = P * (1 + data[1] % 2), m = 1 + data[2] % 4;
    sc_prog *pg = sc_prog_new(P, S, m);
    if (!pg)
        return 0;
    int all[4] = {0, 1, 2, 3};
    int g1 = P > 1 ? sc_prog_add_group(pg, all, P - 1) : 0;
    for (size_t k = 3; k + 5 <= size; k += 5) {
        const uint8_t *r = data + k;
        sc_instr in = {.op = (uint8_t)(r[1] & 15), .dir = (uint8_t)((r[1] >> 4) & 1),
                       .stage = spread(r[2], S), .mb = spread(r[3], m), .peer = spread(r[4], P)};
        if (sc_op_is_host(in.op))
            in.frac = r[4] == 255 ? SC_FRAC_ONE + 1 : (int32_t)r[4] * (SC_FRAC_ONE / 254);
        if (sc_op_is_coll(in.op)) {
            sc_coll c = {.op = in.op, .red = in.dir, .what = (r[2] >> 4) % SC_OP_COUNT,
                         .part = r[1] >> 5, .stage = spread(r[2] & 15, S), .mb = in.mb,
                         .root = spread(r[4], P), .group = (r[4] & 128) ? g1 : 0,
                         .bytes = r[4]};
            if (sc_prog_push_coll(pg, r[0] % P, &c) != SC_OK)
                goto done;
            continue;
        }
        if (sc_prog_push_stream(pg, r[0] % P, in) != SC_OK)
            goto done;
    }
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
done:
    sc_prog_free(pg);
    return 0;
}
