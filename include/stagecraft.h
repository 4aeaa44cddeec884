/*
 * stagecraft.h — libstagecraft, the C library of stagecraft: load a recipe
 * with parameters, compile and verify it, simulate it, export it; compare
 * recipes and plan what to run (docs/embed.md). The one public header;
 * everything else is private.
 *
 *     #include <stagecraft.h>
 *
 *     stagecraft *sc = stagecraft_open();
 *     const char *defs[] = {"p=4", "m=8", NULL};
 *     stagecraft_program *p;
 *     if (stagecraft_load(sc, "zb-h1", defs, &p) != STAGECRAFT_OK) {
 *         fprintf(stderr, "%s\n", stagecraft_errmsg(sc));   // code: docs/errors.md
 *     } else {
 *         stagecraft_figures f;
 *         if (stagecraft_simulate(p, &f) == STAGECRAFT_OK)
 *             printf("makespan %g, bubble %.2f%%\n", f.makespan, 100 * f.bubble_rate);
 *         stagecraft_export(p, "svg", "zb.svg");
 *         stagecraft_program_free(p);
 *     }
 *     stagecraft_close(sc);
 *
 * Built with `pkg-config --cflags --libs stagecraft` (after `make install`).
 *
 * Contexts. A context (stagecraft) is one Lua state with the module, the
 * sandbox and the limits of the command line (docs/sandbox.md): every
 * recipe it loads runs sandboxed (no io, no os beyond the clock, files in
 * its own folder only) under a step, memory and time limit; the memory
 * limit counts the programs too. Contexts share nothing: two in one
 * process are independent. A context and its programs are used by one
 * thread at a time (calls on two contexts from two threads at once are not
 * supported: the library keeps per-process state while a call runs). No
 * call ends or signals the process: the time limit is a deadline that the
 * evaluation reads (its count hook and its pattern matcher), and a recipe
 * past it fails with STAGECRAFT_LIMIT; the library installs no signal
 * handler and no timer.
 *
 * Errors. Every function that can fail returns a code of the table below
 * (the exit codes of the command line, docs/errors.md) and leaves a one-line
 * message in its context (stagecraft_errmsg), valid until the next call on
 * that context. Arguments are checked: a NULL context or program is
 * STAGECRAFT_USAGE.
 *
 * Ownership. A program belongs to its context: stagecraft_program_free
 * frees it, stagecraft_close frees the context and every program still
 * open from it (their handles are then gone). Strings returned are owned
 * by the library, valid as each function says.
 */
#ifndef STAGECRAFT_H
#define STAGECRAFT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The codes: the command line's exit codes (docs/errors.md; the library's
 * build checks them against lang/'s table). */
enum stagecraft_code {
    STAGECRAFT_OK = 0,
    STAGECRAFT_INTERNAL = 1, /* a bug of stagecraft's */
    STAGECRAFT_USAGE = 2,    /* a bad argument to the library: unknown recipe, -D, format */
    STAGECRAFT_ARG = 3,      /* a parameter out of range (m < p, ...) */
    STAGECRAFT_NOMEM = 4,    /* out of memory */
    STAGECRAFT_PROGRAM = 5,  /* the program is invalid (a pass missing, twice, ...) */
    STAGECRAFT_DEADLOCK = 6, /* the streams can hang */
    STAGECRAFT_LIMIT = 7,    /* a step, memory or time limit was hit */
    STAGECRAFT_RECIPE = 8,   /* the recipe raised an error */
    STAGECRAFT_RUNTIME = 9,  /* a failure while running (not raised by this library) */
    STAGECRAFT_SANDBOX = 10  /* the recipe did what the sandbox refuses */
};

typedef struct stagecraft stagecraft;                 /* a context */
typedef struct stagecraft_program stagecraft_program; /* a loaded recipe */

/* The figures of a simulation (units of the recipe's costs, or seconds
 * with a cost file). peak_memory has `devices` entries, owned by the
 * program, valid until it is freed. */
typedef struct stagecraft_figures {
    int devices, stages, microbatches;
    long long instructions;   /* in every device's stream, transfers included */
    double makespan;          /* the step's length */
    double bubble_rate;       /* idle share of the devices, from their first pass */
    double peak_memory_max;   /* the largest of peak_memory */
    const double *peak_memory; /* per device */
} stagecraft_figures;

/* The library's version ("0.2.0": the language's, sc.version). */
const char *stagecraft_version(void);
/* The class of a code ("invalid argument"), "unknown code" past the table. */
const char *stagecraft_code_name(int code);

/* A new context (NULL: out of memory). */
stagecraft *stagecraft_open(void);
/* Frees the context and the programs still open from it; NULL: nothing. */
void stagecraft_close(stagecraft *sc);
/* The last error's message on this context ("" after a success). */
const char *stagecraft_errmsg(const stagecraft *sc);
/* The limits of every later evaluation (the command line's --max-steps,
 * --max-mem, --max-time; 0: no limit of that kind). Defaults: 1e9 Lua
 * instructions, 1 GiB, 60 s. */
int stagecraft_limits(stagecraft *sc, long long max_steps, size_t max_mem, double max_time);

/* Evaluates a recipe (a stdlib name like "zb-h1", or a path to a .lua
 * file) with parameters: defs is a NULL-terminated list of "NAME=VALUE"
 * (the command line's -D; NULL: none). On success *out is the program
 * (unrolled; compiled on first use) and the code STAGECRAFT_OK; else *out
 * is NULL. A -D costs=FILE is the caller's choice: the recipe may read
 * that file wherever it lies, as on the command line. */
int stagecraft_load(stagecraft *sc, const char *recipe, const char *const *defs,
                    stagecraft_program **out);
/* Lowers and verifies (once): STAGECRAFT_OK when the streams are proved. */
int stagecraft_check(stagecraft_program *p);
/* Verifies and simulates (once); fills *f. */
int stagecraft_simulate(stagecraft_program *p, stagecraft_figures *f);
/* Exports in `format` (torch-csv, torch-csv-comms, json, trace, svg) to
 * path, whole or not at all (a temporary file renamed into place). */
int stagecraft_export(stagecraft_program *p, const char *format, const char *path);
/* The export as text: *text (len bytes and a NUL) is owned by the program,
 * valid until the next export_text or free. */
int stagecraft_export_text(stagecraft_program *p, const char *format, const char **text,
                           size_t *len);
/* Frees the program; NULL: nothing. */
void stagecraft_program_free(stagecraft_program *p);

/* ---- the command's texts, in process (the Python package) ----
 *
 * Written by the same functions as the command line's, so they equal its
 * output for the same recipe and parameters. Each text (len bytes and a
 * NUL) is owned by the program, valid until the same call again or free. */

/* `stagecraft sim RECIPE --json` (docs/interchange.md#python): the
 * figures as one JSON object, "recipe" the name given to stagecraft_load. */
int stagecraft_figures_json(stagecraft_program *p, const char **text, size_t *len);
/* The program's digest: 16 hex digits and a NUL into hex (FNV-1a 64 of its
 * JSON dump with the streams lowered for running): equal for equal
 * programs, whatever the recipe's name. */
int stagecraft_digest(stagecraft_program *p, char hex[17]);
/* What `stagecraft export RECIPE --format F [--torch V] [--torchtitan]`
 * checks and writes (json and svg titled with the recipe's name); o NULL:
 * no options. The text is the one of stagecraft_export_text. */
typedef struct stagecraft_export_options {
    const char *torch; /* torch-csv*: the PyTorch version of the dialect ("2.14"); NULL: current */
    int torchtitan;    /* torch-csv: refuse what torchtitan cannot load */
} stagecraft_export_options;
int stagecraft_export_as(stagecraft_program *p, const char *format,
                         const stagecraft_export_options *o, const char **text, size_t *len);
/* The mode the program is verified in (--comm: "nccl", "gloo", "per-link";
 * docs/semantics.md#modes); verified again on next use. */
int stagecraft_comm(stagecraft_program *p, const char *mode);
/* The automatic schedules' search time of later loads (--time-limit):
 * seconds >= 0 (0: the heuristic alone, reproducible), < 0: theirs. */
int stagecraft_search_time(stagecraft *sc, double seconds);

/* ---- compare and plan (the engine of `stagecraft compare` and `plan`) ----
 *
 *     const char *recipes[] = {"1f1b", "zb-h1", NULL}, *defs[] = {"p=4", "m=8,16", NULL};
 *     const stagecraft_row *rows;
 *     int n;
 *     if (stagecraft_compare(sc, recipes, defs, &rows, &n) == STAGECRAFT_OK)
 *         for (int i = 0; i < n; i++)
 *             printf("%s %s %g\n", rows[i].recipe, rows[i].parameters, rows[i].makespan);
 *
 *     stagecraft_plan_settings ps = {.devices = 8, .microbatches = 32, .cap = "6"};
 *     stagecraft_plan_result plan;
 *     if (stagecraft_plan(sc, &ps, &plan) == STAGECRAFT_OK && plan.pick >= 0)
 *         printf("%s\n", plan.why);
 *
 * Both run on the context, as stagecraft_load does: every evaluation under
 * its sandbox and within its limits (the whole call counts against one
 * step, memory and time budget). What they return is owned by the context,
 * valid until the next call of the same function on it or its close. Model
 * sizes among the parameters (-D hidden, layers, ...: bytes of the
 * runtime's model) need the command line; a model file (model=FILE) works.
 */

/* One row of a comparison: a recipe under one combination of the values. */
typedef struct stagecraft_row {
    const char *recipe;
    const char *parameters;  /* this row's values, "NAME=VALUE" separated by spaces */
    int code;                /* STAGECRAFT_OK, or the code of error */
    const char *error;       /* NULL, or why the row has no figures */
    int over_cap;            /* the error is a refusal by the memory cap (an answer) */
    int devices, stages, microbatches;
    long long instructions;
    double makespan, bubble_rate, peak_memory_max, lower_bound;
} stagecraft_row;

/* Compares recipes (NULL-terminated names or .lua paths) under defs
 * (NULL-terminated "NAME=VALUE"; a value "a,b,c" or "lo:hi[:step]" is a
 * sweep, as `stagecraft compare -D`): a row per combination and recipe, the
 * first name's values changing slowest. A recipe that fails is a row with
 * its error; the call fails only when the comparison itself cannot run
 * (an unknown parameter, a limit). *rows has *nrows entries. */
int stagecraft_compare(stagecraft *sc, const char *const *recipes, const char *const *defs,
                       const stagecraft_row **rows, int *nrows);

/* What to plan (`stagecraft plan`'s options, docs/plan.md); zero fields
 * are the defaults. */
typedef struct stagecraft_plan_settings {
    int devices, microbatches; /* 0: 4 and 8 */
    const char *cap;           /* the memory cap: units ("6") or bytes ("40GiB"); NULL: none */
    const char *costs;         /* a cost file (the caller's: the recipes may read it); NULL */
    const char *layers;        /* the model's layers to split into stages ("E,t*16,L"); NULL */
    const char *framework;     /* "megatron", "torchtitan" or "pytorch"; NULL: any */
    double time_limit;         /* the automatic schedules' search, seconds; 0: theirs;
                                  < 0: none (--time-limit 0: fast, reproducible) */
    const char *const *defs;   /* other parameters, NULL-terminated "NAME=VALUE"; NULL */
} stagecraft_plan_settings;

/* One candidate of a plan: a recipe with its knobs, evaluated. */
typedef struct stagecraft_candidate {
    const char *recipe, *knobs;
    const char *error;         /* NULL, or why it has no figures */
    double makespan, bubble_rate;
    double peak_memory;        /* in the cap's unit (units, or bytes with a cap in bytes) */
    int fits;                  /* within the cap */
    int front;                 /* on the front of makespan against memory */
} stagecraft_candidate;

typedef struct stagecraft_plan_result {
    int devices, microbatches;
    int ncandidates;
    const stagecraft_candidate *candidates;
    int pick;                  /* index of the pick in candidates; -1: none */
    const char *why;           /* the pick and why, or why there is none */
    const char *sim_command;   /* `stagecraft sim ...` that reproduces the pick; NULL: none */
} stagecraft_plan_result;

/* Plans: every stdlib recipe with its knobs evaluated and simulated, the
 * pick the fastest within the cap (docs/plan.md). STAGECRAFT_OK with
 * pick < 0 when nothing fits (why says so; the command exits 7). */
int stagecraft_plan(stagecraft *sc, const stagecraft_plan_settings *s, stagecraft_plan_result *out);

/* The same as the commands' --json objects, by their writers: `stagecraft
 * compare ... --json` and `stagecraft plan ... --json` (docs/plan.md). The
 * text (len bytes and a NUL) is owned by the context, valid until the next
 * compare_json or plan_json on it or its close. Like the commands' exit
 * codes: compare_json returns the first failed row's code (its message
 * "RECIPE: error"; the text is there), plan_json STAGECRAFT_LIMIT when
 * nothing fits (the message is why; the text is there). */
int stagecraft_compare_json(stagecraft *sc, const char *const *recipes, const char *const *defs,
                            const char **text, size_t *len);
int stagecraft_plan_json(stagecraft *sc, const stagecraft_plan_settings *s, const char **text,
                         size_t *len);

/* The planner's options, from the one table that `stagecraft plan`'s
 * flags and sc.plan's fields read (docs/plan.md): the name of option i (a
 * field of stagecraft_plan_settings, sc.plan's field, the Python package's
 * keyword), NULL past the last; *flag (when flag is not NULL) the command
 * line's ("--cap"). */
const char *stagecraft_plan_option(int i, const char **flag);

#ifdef __cplusplus
}
#endif

#endif
