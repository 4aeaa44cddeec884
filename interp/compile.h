/*
 * compile.h — the compile driver: runs the stages of the interpreter in
 * order, each a function of the stage before, and caches the result in the
 * program.
 *
 *     orders ──verify passes──> lowered streams ──(offload plan)──> verified streams
 *     (schedule/, recipe)  check/verify.h   lower/lower.h  lower/offload.h   check/replay.h
 *
 *   1. sc_verify_passes: every pass once, on its device, local order;
 *   2. sc_lower: SEND/RECV in one global order, REDUCE and OPTIM (skipped
 *      for streams given as they are, sc_prog_push_stream);
 *   3. with an offload policy: the streams are replayed for their timing
 *      (which also proves them), the plan inserts the host copies, the new
 *      streams are replayed, and the plan's promise (no pass later) checked;
 *   4. the memory cap (check/caps.h): no device's level passes it in its
 *      final streams;
 *   5. the streams are replayed under the communication semantics: the
 *      proof that they cannot hang (when step 3 ran, its second replay is
 *      that proof).
 *
 * No stage calls a later one, and none calls back into this driver; what
 * was computed stays in the program until it changes (sc_prog_invalidate).
 * The simulator (sim/sim.h) asks the driver for the timing of the verified
 * streams and derives its figures from it.
 *
 *     if (sc_check(pg) != SC_OK)
 *         fprintf(stderr, "%s\n", sc_errmsg(pg));
 *
 * Ownership: the program owns what the stages produce; a timing handed out
 * by sc_compile_timed is the caller's (sc_times_free).
 *
 * Tested by: tests/unit/test_verify_again.c, tests/unit/test_interp.c.
 */
#ifndef SC_COMPILE_H
#define SC_COMPILE_H

#include "ir/ir.h"

/* Runs the pipeline up to verified streams. Idempotent: a verified program
 * returns SC_OK at once. On failure the message names the devices, the
 * instructions and, for a deadlock, the wait-for cycle (sc_errmsg). */
sc_status sc_check(sc_prog *pg);

/* Whether the program is verified as it is: sc_check would return at once
 * (any change to it since its check clears this). */
int sc_is_verified(const sc_prog *pg);

/* sc_check, and the timing of the verified streams (the replay under the
 * cost model) into *t. A program not yet verified is replayed once: the
 * proof and the timing are the same replay. On failure *t is empty. */
sc_status sc_compile_timed(sc_prog *pg, sc_times *t);

/* A floor under the makespan that sc_simulate would give, found without
 * lowering: the dataflow timing of the orders (schedule/dataflow.h), which
 * no replay of their streams beats, into *mk; -1 where the program is not
 * of the kind for which it holds (a split vocabulary, FSDP, copies, memory
 * policies or several steps) or its orders do not verify (sc_check says
 * why). For choosing among programs without simulating those that cannot
 * win. */
sc_status sc_sim_floor(sc_prog *pg, double *mk);

/* A record's life in the timing of the program without offload. */
typedef struct sc_record_life {
    int stage, mb, device, chunk;
    double f_start, f_end;   /* its F */
    double b_start, b_end;   /* its B or BW */
    double end;              /* the end of its W or BW: the lifespan is end - f_start */
    double transfer;         /* time to move all of it over the host link */
} sc_record_life;

/* The lives of all records, ls[s * m + mb], from the timing of the program
 * compiled without its offload policy (for policies written as functions of
 * the lifespan). The policy stays as it was; the program is compiled again
 * with it on the next sc_check. */
sc_status sc_offload_lives(sc_prog *pg, sc_record_life *ls);

#endif
