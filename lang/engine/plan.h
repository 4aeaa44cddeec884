/*
 * plan.h — the engine's planner (docs/plan.md): what to run on p devices
 * with m microbatches under a memory cap. plan.c searches every stdlib
 * recipe with its knobs as compare rows (compare.h); plan_for.c words the
 * pick for the frameworks; plan_push.c gives the plan as a Lua table.
 * Clients: `stagecraft plan` (lang/cli: parse, print), sc.plan
 * (engine_lua.c), stagecraft_plan (lang/api). Settings are typed; nothing
 * is printed, and no file is written but the --layers cost files in a
 * temporary folder of the plan's own.
 *
 *     sc_plan_settings s = {.p = 8, .m = 32, .cap = "6", .time_limit = -1};
 *     sc_plan_run r;
 *     if (sc_eng_plan(L, &s, &r) == 0) sc_plan_push(L, &r);
 *     sc_eng_plan_free(L, &r);
 *
 * Tested by: tests/plan.sh, tests/lua/test_plan.lua.
 */
#ifndef SC_ENG_PLAN_H
#define SC_ENG_PLAN_H

#include <lua.h>
#include <stdio.h>

#include "compare.h"
#include "formats/jsonw.h"
#include "plan/partition.h"
#include "plan/order.h"
#include "plan/plan.h"

#define SC_PLAN_SPLITS 8
#define SC_PLAN_MAX_DEFS (MAX_DEFS - 4)

/* What to plan (the command line's options, typed). */
typedef struct sc_plan_settings {
    int p, m;              /* devices, microbatches; 0: not given (4 and 8, with a note) */
    const char *cap;       /* units ("6") or bytes ("40GiB"); NULL: none */
    const char *costs;     /* a cost file (granted to the candidates by the caller); NULL */
    const char *layers;    /* the model's layers to split (docs/plan.md); NULL */
    const char *framework; /* "megatron", "torchtitan", "pytorch"; NULL: any */
    const char *costs_out; /* the file the caller writes the pick's costs to (named in
                              the reproducing commands); NULL */
    double time_limit;     /* the automatic schedules' search, seconds; < 0: theirs */
    int force_costs, trust; /* repeated in the reproducing commands */
    /* the other parameters: "NAME=VALUE" (no sweeps), ndefs of them */
    const char *const *defs;
    int ndefs;
} sc_plan_settings;

/* The options of a plan, one row each: X(field of sc_plan_settings, the
 * command line's flag, its value, what it is). The field's name is also
 * sc.plan's field and Python's keyword (docs/plan.md). --json, --svg,
 * --costs-out, --trust and --force-costs are the command's own (outputs
 * and grants). */
#define SC_PLAN_OPTIONS(X)                                                                         \
    X(cap, "--cap", "UNITS|BYTES", "the memory cap: units of activation memory, or bytes")       \
    X(costs, "--costs", "FILE", "a cost file, read by every candidate")                           \
    X(layers, "--layers", "LIST", "the model's layers to split into stages (E,t*16,L)")           \
    X(framework, "--for", "FRAMEWORK", "megatron, torchtitan or pytorch: what runs the pick")     \
    X(time_limit, "--time-limit", "SECONDS", "the automatic schedules' search")

#define SC_PLAN_OPT_ONE_(field, flag, value, help) +1
enum { SC_PLAN_NOPTS = 0 SC_PLAN_OPTIONS(SC_PLAN_OPT_ONE_) };

typedef struct sc_plan_opt {
    const char *field, *flag, *value, *help;
    size_t offset; /* in sc_plan_settings */
} sc_plan_opt;

/* The SC_PLAN_NOPTS rows, then one whose field is NULL (plan_opts.c). */
extern const sc_plan_opt sc_plan_opts[];
/* The row named name: its field (by_flag 0) or its flag (1); NULL: none. */
const sc_plan_opt *sc_plan_opt_find(const char *name, int by_flag);
/* Sets the option from its text (the string is kept, not copied): 0, or
 * -1 with one line in err (a time that is not a number of seconds >= 0, a
 * framework that is none of the three). */
int sc_plan_opt_set(sc_plan_settings *s, const sc_plan_opt *o, const char *v, char *err,
                    size_t errlen);

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
    int note_ref;          /* sc.note while the search mutes it (a registry ref; 0: none) */
    /* plan_for.c: --for, the commands that reproduce the pick, the notes */
    int fw;                /* --for NAME (interp/plan/plan_for.h); 0: any framework */
    const char *costs_out; /* --costs-out FILE: the pick's stage costs (with --layers) */
    double time_limit;     /* < 0: not given */
    int force_costs, trust;
    unsigned notes;        /* SC_PLAN_NOTE_*: what the caller may say */
    int left_out;          /* candidates that --for's framework does not run, not evaluated */
    /* -D lengths=FILE (docs/lengths.md#planning-the-order): the pick's
     * order of microbatches (plan_order.c) */
    sc_len_order order;
    int have_order;
    int keep;              /* candidate(): keep the program of the row asked for (its ud) */
} sc_plan_run;

enum { SC_PLAN_NOTE_P = 1, SC_PLAN_NOTE_M = 2, SC_PLAN_NOTE_LAYERS_UNITS = 4 };

/* Plans into *r: checks the settings, evaluates the candidates, picks.
 * The Lua stack keeps one table (r->decl) until sc_eng_plan_free, which
 * the caller calls whatever this returns. 0, or the error's code (the
 * engine's error, engine.h). A plan with no pick is not an error here
 * (sc_plan_why says why; the command exits 7). */
int sc_eng_plan(lua_State *L, const sc_plan_settings *s, sc_plan_run *r);
/* Frees r's memory and pops what sc_eng_plan left on the stack. */
void sc_eng_plan_free(lua_State *L, sc_plan_run *r);
/* The value of -D name among the plan's, or NULL. */
const char *sc_plan_def(const sc_plan_run *r, const char *name); /* plan_for.c */

/* plan_order.c: with -D lengths, the order of the pick's microbatches
 * into r->order (have_order), on the program in the registry at ref
 * (unreferenced here). 0, or the error's code. */
int sc_plan_order(lua_State *L, sc_plan_run *r, int ref);
/* The order found, as lines (after the pick) or as the member "order";
 * nothing without -D lengths. */
void sc_plan_order_print(FILE *out, const sc_plan_run *r);
void sc_plan_order_json(const sc_plan_run *r, sc_jw *w);
/* The same as the field "order" of the table on top of L's stack. */
void sc_plan_order_push(lua_State *L, const sc_plan_run *r);

/* plan_push.c: the plan as a table on the stack (the --json object's
 * members; indices from 1). */
void sc_plan_push(lua_State *L, const sc_plan_run *r);
/* The pick's split (with --layers), or NULL; whether the pick is placed
 * in a loop (Megatron's layout applies). */
const sc_plan_split *sc_plan_pick_split(const sc_plan_run *r);
int sc_plan_pick_is_loop(const sc_plan_run *r);

/* plan_for.c (docs/plan.md#for-a-framework). Refuses --layers that
 * contradicts -D layers, and keeps the notes (no -D p; --layers timing a
 * model in units). 0, or the code. */
int sc_plan_for_check(sc_plan_run *r, int p_given, int m_given);
/* The pick, or NULL. */
const sc_plan_cand *sc_plan_the_pick(const sc_plan_run *r);
/* The split of candidate c (with --layers), or NULL; the name its costs
 * are written to (costs_out, or "SPLIT.json"). */
const sc_plan_split *sc_plan_split_of(const sc_plan_run *r, const sc_plan_cand *c);
const char *sc_plan_costs_name(const sc_plan_run *r);
/* A line that reproduces candidate c into s (len bytes): what is
 * SC_PLAN_CMD_SIM or _EXPORT (the stagecraft commands) or a framework
 * (SC_FW_*: its settings). */
enum { SC_PLAN_CMD_SIM = -1, SC_PLAN_CMD_EXPORT = -2 };
void sc_plan_command(const sc_plan_run *r, const sc_plan_cand *c, int what, char *s, size_t len);
/* --json's members: "left_out" with --for, "reproduce" (an object of the
 * same commands, or null without a pick), into the caller's writer. */
void sc_plan_for_json(const sc_plan_run *r, sc_jw *w);
/* `plan --json`: the whole object of r into w (engine_json.c; the command
 * and stagecraft_plan_json write it). */
void sc_eng_plan_json(const sc_plan_run *r, sc_jw *w);
/* The same as fields of the table on top of L's stack. */
void sc_plan_for_push(lua_State *L, const sc_plan_run *r);

#endif
