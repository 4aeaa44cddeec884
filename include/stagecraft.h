/*
 * stagecraft.h — libstagecraft, the C library of stagecraft: load a recipe
 * with parameters, compile and verify it, simulate it, export it
 * (docs/embed.md). The one public header; everything else is private.
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

#ifdef __cplusplus
}
#endif

#endif
