/*
 * engine.h — the engine: what every front end of stagecraft calls
 * (docs/embed.md#the-engine). One context is a Lua state set up with the
 * module, the sandbox and the limits (sc_limits.h); on it the engine
 * evaluates recipes, evaluates compare rows (compare.h), plans (plan.h)
 * and finds the recipes that fit a cap. It returns a code of the exit-code
 * table and keeps the message; it never prints, exits or reads argv.
 *
 *     sc_eng_err e;
 *     sc_eng_err *prev = sc_eng_catch(&e);
 *     sc_plan_settings s = {.p = 8, .m = 32, .cap = "6"};
 *     sc_plan_run r;
 *     int code = sc_eng_plan(L, &s, &r);   // e.code, e.msg on failure
 *     ...  sc_eng_plan_free(L, &r);  sc_eng_release(prev);
 *
 * Clients: lang/cli (plan, compare: parse argv, call, print), lang/repl and
 * recipes (sc.plan, sc.compare: engine_lua.c), the Lua module
 * (luaopen_stagecraft, here), the C library (lang/api). A call from inside
 * a recipe runs on that recipe's state: its grants, its remaining limits
 * (nested, never reset), its memory; it grants no file and changes no
 * limit. Tested by: tests/plan.sh, tests/compare.sh, tests/embed.sh,
 * tests/sandbox.sh.
 */
#ifndef SC_ENGINE_H
#define SC_ENGINE_H

#include <lua.h>
#include <stdarg.h>
#include <stddef.h>

#include "ir/ir.h"
#include "model/model.h" /* sc_model_cfg: the type only (runtime/model) */

/* The error of one engine call: the code (0: none) and the first message,
 * raw (front ends clean it as they show it). */
typedef struct sc_eng_err {
    int code;
    char msg[8192];
} sc_eng_err;

/* Makes e (cleared) the error of the calls from now on; returns the one
 * before, for sc_eng_release (calls nest: sc.plan inside a recipe inside
 * a plan). */
sc_eng_err *sc_eng_catch(sc_eng_err *e);
void sc_eng_release(sc_eng_err *prev);
/* Records msg as the current call's error (the first one wins); returns
 * code. */
int sc_eng_fail(int code, const char *msg);
int sc_eng_failf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failure of interp (status st): the memory limit's message and code 7
 * when the limit of L's state refused a C allocation, else fmt's. */
int sc_eng_status_fail(lua_State *L, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct sc_limits;
/* The same under the limits lim (NULL: none), for a front end whose
 * limits are its own (the command line's sc_cli_status_fail). */
int sc_eng_vstatus_fail(const struct sc_limits *lim, sc_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* The error on the stack top (a limit named as such): recorded, popped,
 * its code returned. */
int sc_eng_lua_fail(lua_State *L);

/* The runtime's byte model, which the library does not link: the command
 * line sets it (main.c). Without it a compare or plan that counts bytes
 * (model sizes among the -D) is refused with a message that says so. */
typedef struct sc_eng_runtime {
    /* The program's memory model from the model sizes in cfg (defaults
     * filled): *unit is one unit's bytes. 0, or an exit code with err. */
    int (*model_memory)(const sc_model_cfg *cfg, sc_prog *pg, double *unit, char *err,
                        size_t errlen);
    /* run's defaults for `stages` stages. */
    sc_model_cfg (*defaults)(int stages);
    /* sc._unit_bytes of L for the model sizes cfg (NULL: none). */
    void (*set_unit_bytes)(lua_State *L, const sc_model_cfg *cfg);
} sc_eng_runtime;
void sc_eng_set_runtime(const sc_eng_runtime *rt);
const sc_eng_runtime *sc_eng_runtime_ops(void);

/* While on, what a recipe writes to stdout goes to stderr (the command
 * line: stdout carries the command's output only). Off by default: a
 * host's stdout is its own. */
void sc_eng_guard_stdout(int on);

/* The module table (package.loaded.stagecraft; in a state without it, the
 * global sc), pushed: the engine works on the module, not on a global a
 * host's Lua may not have. */
void sc_eng_push_module(lua_State *L);
/* Evaluates a recipe (sc._evaluate) with the overrides at index t (0:
 * none) under the state's limits; pushes its 3 results, or the error
 * (lua_pcall's code). */
int sc_eng_evaluate(lua_State *L, const char *recipe, int t, int listing);
/* A -D costs=FILE, model=FILE or lengths=FILE of the user's (not a recipe's): the file
 * is granted to the recipes (sc._granted). */
void sc_eng_grant(lua_State *L, const char *name, size_t nlen, const char *value);
/* sc._time_limit, read by the automatic schedules. */
void sc_eng_set_time_limit(lua_State *L, double seconds);

/* fit.c. Whether the last evaluation was refused by its memory cap; and
 * the hint after such a refusal ("; recipes that meet mem = X with these
 * parameters: a, b") into buf (t: the overrides). */
int sc_eng_cap_refused(lua_State *L);
void sc_eng_fit_hint(lua_State *L, const char *recipe, int t, char *buf, size_t len);

/* Sets up a state of stagecraft's own (sc_lua_setup) with the engine's
 * functions in the module: sc.plan, sc.compare (engine_lua.c). */
void sc_eng_setup(lua_State *L);
/* Adds sc.plan and sc.compare to the module table at index idx. */
void sc_eng_open(lua_State *L, int idx);

#endif
