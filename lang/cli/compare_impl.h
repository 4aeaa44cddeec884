/*
 * compare_impl.h — what the files of `stagecraft compare` share (lang/cli
 * only): cmd_compare.c evaluates the rows, compare_out.c prints them.
 */
#ifndef SC_COMPARE_IMPL_H
#define SC_COMPARE_IMPL_H

#include <lua.h>
#include <stddef.h>

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

/* Parses the command line into c (recipes, -D with their sweeps, options). */
int sc_compare_parse(lua_State *L, int argc, char **argv, cmp *c);
/* Declared names of each recipe into the table at decl; an unknown -D name
 * is an error. */
int sc_compare_declared(lua_State *L, cmp *c, int decl);
/* Evaluates and simulates row w (its recipe and combination); a failed
 * recipe is kept in w->error. Non-zero only when stagecraft itself fails. */
int sc_compare_row(lua_State *L, cmp *c, int decl, row *w);
/* The index of def k's value in combination `combo` (the first def
 * changes slowest). */
int sc_compare_value_of(const cmp *c, int combo, int k);
/* A whole finite number in s. */
int sc_compare_number(const char *s, double *x);
int sc_compare_is_model_key(const char *name);
/* The model sizes are the command's own while on (sc._external). */
void sc_compare_set_model(lua_State *L, int on);
void sc_compare_free(lua_State *L, cmp *c);

#endif
