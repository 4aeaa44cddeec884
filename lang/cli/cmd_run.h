/*
 * cmd_run.h — `stagecraft run` (docs/interchange.md): the command line of the CPU
 * runtime, kept apart from main.c.
 *
 * Tested by: tests/runtime.sh, tests/steps.sh.
 */
#ifndef SC_CMD_RUN_H
#define SC_CMD_RUN_H

#include <lua.h>

/* stagecraft run RECIPE [-D k=v]... [--backend cpu|cuda] [--graph] [--check] [--json];
 * argv[1] is "run". Prints the result (rank 0 only under MPI) or one error
 * line; returns the exit code. */
int sc_cmd_run(lua_State *L, int argc, char **argv);

#include <stddef.h>

#include "formats/jsonw.h"
#include "run/run.h"

/* A cap in bytes while a recipe builds its program counts in the unit of
 * the built-in model mc (layers 0: two per stage), the one run (and compare
 * with model sizes) sets after the recipe (docs/run.md#memory-units-in-bytes):
 * sets sc._unit_bytes for lang/lua/mem.c; NULL takes it away. */
void sc_cli_set_unit_bytes(lua_State *L, const sc_model_cfg *mc);
/* The runtime's byte model for the engine (engine.h: sc_eng_set_runtime). */
const struct sc_eng_runtime *sc_cli_runtime(void);

/* run_steps.c (docs/steps.md): the progress line of each step (stderr; arg:
 * the start, a double of sc_exec_now), the table of the steps, the JSON
 * members of the steps ("steps", ... in w), nothing for one step without
 * synchronization; and the per-step part of --check (0, or 1 with the
 * failure in msg). */
void sc_cli_run_progress(void *arg, int step, int steps, double loss);
void sc_cli_run_steps_text(const sc_prog *pg, const sc_run_opts *o, const sc_run_result *r);
void sc_cli_run_steps_json(sc_jw *w, const sc_prog *pg, const sc_run_opts *o,
                           const sc_run_result *r);
int sc_cli_run_steps_verdict(const sc_run_result *r, char *msg, size_t len);
/* --check of a forward-only program (docs/run.md#check): prints the
 * reference's line and returns 1; 0 for a training program. */
int sc_cli_run_forward_text(const sc_run_result *r);

/* run_model.c (docs/run.md#the-decoder): the decoder of config.json `path`
 * into mc (0, or the exit code after one error line: a file that cannot be
 * read, a model with MLA, a DeepSeek router, biases or qk_norm); its members of run
 * --json's "model" object ("kind", and the decoder's sizes); its line of
 * run's text (nothing for the MLP). */
int sc_cli_run_decoder(const char *path, sc_model_cfg *mc);
/* The model's sizes and the optimizer's settings from -D (table t) and the
 * recipe's declarations (the recipe is evaluated): SC_RUN_MODEL_KEYS of
 * them, given[i] set for those given; 0, or the exit code of the error
 * printed. A decoder's hidden, layers and vocab stay its config's unless
 * given. */
#define SC_RUN_MODEL_KEYS (SC_MODEL_NSIZES + 8)
int sc_cli_run_model_sizes(lua_State *L, const char *recipe, int t, sc_model_cfg *mc,
                           int *given);
void sc_cli_run_decoder_json(sc_jw *w, const sc_model_cfg *mc);
void sc_cli_run_decoder_text(const sc_model_cfg *mc);

#endif
