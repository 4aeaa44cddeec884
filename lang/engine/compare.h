/*
 * compare.h — the engine's compare rows (compare.c): the recipes and -D
 * (sweeps: lists and ranges) of one comparison, and a row per recipe and
 * combination, evaluated, compiled and simulated. Clients: `stagecraft
 * compare` and sim's sweeps (lang/cli: parse, then compare_out.c prints),
 * the plan's candidates (plan.c), sc.compare and stagecraft_compare.
 * Errors go to the engine's (engine.h); nothing is printed.
 *
 * Tested by: tests/compare.sh, tests/embed.sh.
 */
#ifndef SC_ENG_COMPARE_H
#define SC_ENG_COMPARE_H

#include <lua.h>
#include <stddef.h>

#include "formats/jsonw.h"
#include "model/model.h" /* SC_MODEL_NSIZES */

#define MAX_RECIPES 64
#define MAX_DEFS 64
#define MAX_VALUES 1000
#define MAX_ROWS 10000

#define NMODEL SC_MODEL_NSIZES /* the model sizes (SC_MODEL_SIZES, runtime/model.h) */

typedef struct def {
    const char *name;
    char *text;    /* the value as given */
    char **values; /* its values: one, or a sweep's */
    int n, sweep;
} def;

typedef struct row {
    int recipe, combo;
    int code; /* 0, or the exit code of its error */
    char *error;
    int over_mem; /* the error is a refusal by the memory cap (the row does not fit) */
    int P, S, m, bneck, idlest;
    size_t instructions;
    double makespan, bound, bubble, idle_max, peak_max, peak_min, unit_bytes;
    double *peak, *idle; /* [P] */
    int own_model;       /* the program has a model (docs/model.md): its bytes, not run's */
    double *total, total_max; /* [P] with own_model: each device's total bytes */
    int ud;              /* the Program's reference in the registry (for --svg), or LUA_NOREF */
} row;

typedef struct cmp {
    const char *recipes[MAX_RECIPES];
    int nrec;
    def defs[MAX_DEFS];
    int ndefs;
    int json, width, bytes;
    int model_rows; /* rows whose program has a model: bytes are the whole device's */
    int fit;       /* --fit: leave out the rows that do not meet mem */
    double from, to;
    const char *svg;
    row *rows;
    int nrows;
} cmp;

/* After the recipes and -D (text) are in c: the -D's values (a list
 * "a,b,c" or a range "lo:hi[:step]" is a sweep), their files granted to
 * the recipes (costs, model), c->bytes with a model size. 0, or the code. */
int sc_eng_compare_prepare(lua_State *L, cmp *c);
/* Every row of c (declared names checked first): c->rows, c->nrows; the
 * first failed row's code (a row over the cap is an answer) in *first.
 * Non-zero: the code of an error that stopped the comparison. */
int sc_eng_compare_rows(lua_State *L, cmp *c, int decl, int *first);
/* Declared names of each recipe into the table at decl; an unknown -D name
 * is an error. */
int sc_eng_compare_declared(lua_State *L, cmp *c, int decl);
/* Evaluates and simulates row w (its recipe and combination); a failed
 * recipe is kept in w->error. Non-zero only when stagecraft itself fails. */
int sc_eng_compare_row(lua_State *L, cmp *c, int decl, row *w);
/* The index of def k's value in combination `combo` (the first def
 * changes slowest). */
int sc_eng_compare_value_of(const cmp *c, int combo, int k);
/* A whole finite number in s. */
int sc_eng_compare_number(const char *s, double *x);
int sc_eng_compare_is_model_key(const char *name);
/* The model sizes are the command's own while on (sc._external). */
void sc_eng_compare_set_model(lua_State *L, int on);
void sc_eng_compare_free(lua_State *L, cmp *c);
/* `compare --json`: the object {"rows": [...]} of c's rows into w
 * (engine_json.c; the command and stagecraft_compare_json write it). */
void sc_eng_compare_json(const cmp *c, sc_jw *w);

#endif
