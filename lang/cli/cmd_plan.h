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
    /* plan_for.c: --for, the commands that reproduce the pick, the notes */
    int fw;                /* --for NAME (interp/plan/plan_for.h); 0: any framework */
    const char *costs_out; /* --costs-out FILE: the pick's stage costs (with --layers) */
    int argc;              /* the command line, for the options the pick's commands repeat */
    char **argv;
    int p_default, m_default; /* no -D p, -D m: 4 and 8 */
    int left_out;          /* candidates that --for's framework does not run, not evaluated */
    unsigned notes;        /* plan_for.c's notes, said by the command */
} sc_plan_run;

int sc_cmd_plan(lua_State *L, int argc, char **argv);
/* Sets sc.plan, the command from Lua (main.c, once the module is set up). */
void sc_plan_register(lua_State *L);
/* plan_out.c: the plan as a table on the stack (the --json object's
 * members; indices from 1). */
void sc_plan_push(lua_State *L, const sc_plan_run *r);
/* plan_out.c: the plan as text or JSON on stdout, and the --svg picture. */
int sc_plan_print(lua_State *L, const sc_plan_run *r);

/* plan_for.c (docs/plan.md#for-a-framework). --for NAME, --costs-out FILE
 * at argv[*i] (moves *i past the value): 0, or the exit code of the error
 * printed. */
int sc_plan_for_option(sc_plan_run *r, int argc, char **argv, int *i);
/* After parsing (--layers read, before -D p and m get their defaults):
 * refuses --layers that contradicts -D layers, and keeps the notes to say
 * (no -D p; --layers timing a model in units). 0, or the exit code. */
int sc_plan_for_check(sc_plan_run *r, int p_given, int m_given);
/* The notes on stderr (the command's, not sc.plan's). */
void sc_plan_for_notes(const sc_plan_run *r);
/* The lines after the pick's: the commands that reproduce it (sim,
 * export), the frameworks that run it and, with --for, that framework's
 * settings. */
void sc_plan_for_print(const sc_plan_run *r);
/* --json's members: "left_out" with --for, "reproduce" (an object of the
 * same commands, or null without a pick). */
void sc_plan_for_json(const sc_plan_run *r, sc_jw *w);
/* The same as fields of the table on top of L's stack. */
void sc_plan_for_push(lua_State *L, const sc_plan_run *r);
/* --costs-out: writes the pick's stage costs; 0, or the exit code. */
int sc_plan_for_write(const sc_plan_run *r);
#endif
