/*
 * sim_out.h — what `sim` reports, written once for every front end: the
 * command line's `sim` (text and --json), the C library's
 * stagecraft_figures_json and so the Python package's Program.figures,
 * which can therefore never differ from `sim --json`.
 *
 *     sc_jw w;
 *     sc_jw_init(&w, f);
 *     sc_jw_object(&w, NULL);
 *     sc_status st = sc_eng_sim_json(&w, L, lim, lp, sim, "zb-h1", info, NULL);
 *     sc_jw_end(&w);
 *
 * The sc_eng_print_* functions write text lines to out, or (w non-NULL)
 * members of the --json object in w; they never write to stdout on their
 * own. Tested by: tests/py/test_package.py (figures equal to sim --json),
 * tests/embed.sh, the sim goldens.
 */
#ifndef SC_SIM_OUT_H
#define SC_SIM_OUT_H

#include <lua.h>
#include <stdio.h>

#include "formats/jsonw.h"
#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"

/* The figures of each training step (docs/steps.md), "steps", ...;
 * nothing for one step without synchronization. */
void sc_eng_print_steps(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w);
/* The vocabulary placement, the collectives' busy time and, with a model,
 * the bytes per device (in text: lines after the device table). */
void sc_eng_print_vocab(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w);
/* The recomputation figures ("recompute"); nothing without a policy. */
void sc_eng_print_recompute(FILE *out, const sc_prog *pg, sc_jw *w);
/* Microbatches of different lengths (docs/lengths.md): "lengths" and
 * "length_ref", or a line; nothing when they are alike (lengths_out.c). */
void sc_eng_print_lengths(FILE *out, const sc_prog *pg, sc_jw *w);
/* The offload figures (docs/offload.md#figures), "offload"; nothing
 * without a policy or host copies. */
void sc_eng_print_offload(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w);
/* sim --optimal: the time limit (seconds; 0: none) and, when want_lua is
 * set, the best schedule found as a Lua recipe (sc_exact_solve_lua): lua,
 * sc_malloc'd, for the caller to write and sc_free (NULL: none found). */
typedef struct sc_eng_optimal {
    double limit;
    int want_lua;
    char *lua;
} sc_eng_optimal;

/* The lower bound and the gap of makespan (docs/bound.md); with opt and
 * opt->limit > 0 (sim --optimal) also the exact optimum within that many
 * seconds, its solver held within what lim's memory limit leaves. */
void sc_eng_print_bound(FILE *out, const sc_limits *lim, const sc_prog *pg, double makespan,
                        sc_eng_optimal *opt, sc_jw *w);
/* The figures of an automatic schedule (the table at index info of L; 0:
 * none): the member "auto", or a line. */
void sc_eng_print_auto(FILE *out, lua_State *L, int info, sc_jw *w);

/* The members of `sim --json` from "recipe" to "steps" into the open
 * object of w (the command adds "digest" and "program" with
 * --with-program): lp simulated as sim, named recipe, info and optimal as
 * above. SC_ERR_NOMEM when a scratch block cannot be had. */
sc_status sc_eng_sim_json(sc_jw *w, lua_State *L, const sc_limits *lim, sc_lprog *lp,
                          const sc_sim *sim, const char *recipe, int info, sc_eng_optimal *opt);

/* The program's digest: FNV-1a 64 of its JSON dump (streams lowered for
 * running, whatever the lower target now), 16 hex digits and a NUL into
 * hex. SC_OK, or interp's status (the program's message). */
sc_status sc_eng_program_digest(sc_lprog *lp, char hex[17]);

#endif
