/*
 * cmd_plan.h — `stagecraft plan` (docs/plan.md): cmd_plan.c searches,
 * plan_out.c prints (text, --json, --svg). lang/cli only.
 */
#ifndef SC_CMD_PLAN_H
#define SC_CMD_PLAN_H

#include <lua.h>

#include "compare_impl.h"
#include "plan/partition.h"
#include "plan/plan.h"

#define SC_PLAN_SPLITS 8

/* The layers split into S stages: the best split and the even one, each
 * with its cost file. */
typedef struct sc_plan_split {
    int S;
    int *first, *even; /* [S + 1] each (one allocation, first's) */
    double best_w, even_w; /* the heaviest stage's weight; even_w < 0: no even split */
    char path[600], even_path[600];
} sc_plan_split;

typedef struct sc_plan_run {
    cmp c;                 /* the user's -D, then a candidate's knobs while it runs */
    int decl;              /* the declared names of the recipes (a Lua table's index) */
    int P, m;
    double cap;            /* units, or bytes when bytes_cap; 0: none */
    int bytes_cap;
    const char *cap_text;  /* as given */
    const char *layers_spec;
    sc_layers *layers;     /* NULL without --layers */
    char dir[512];         /* the cost files' temporary folder */
    sc_plan_split split[SC_PLAN_SPLITS];
    int nsplit;
    sc_plan *plan;
    int evaluated, refused, last_over;
    row even_row;          /* the pick on the even split */
    int have_even;
    double seconds;
    const char *svg;       /* --svg FILE */
    int note_ref;          /* sc.note while the search mutes it (a registry ref; 0: none) */
} sc_plan_run;

int sc_cmd_plan(lua_State *L, int argc, char **argv);
/* Sets sc.plan, the command from Lua (main.c, once the module is set up). */
void sc_plan_register(lua_State *L);
/* plan_out.c: the plan as a table on the stack (the --json object's
 * members; indices from 1). */
void sc_plan_push(lua_State *L, const sc_plan_run *r);
/* plan_out.c: the plan as text or JSON on stdout, and the --svg picture. */
int sc_plan_print(lua_State *L, const sc_plan_run *r);
#endif
