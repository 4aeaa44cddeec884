/*
 * sc_limits.h — limits on running Lua: instructions and heap memory
 * (docs/interchange.md#chrome-trace).
 *
 *   static sc_limits lim = SC_LIMITS_DEFAULT;
 *   lua_State *L = sc_limits_newstate(&lim);   // counting allocator
 *   lim.max_steps = 1000000;                   // options may change them
 *   sc_limits_arm(L);                          // counters from 0, hook on
 *   if (lua_pcall(L, 0, 0, 0) != LUA_OK)
 *       sc_limits_error(L);                    // names the limit, if one was hit
 *
 * The step limit counts Lua VM instructions with a count hook, checked every
 * SC_LIMIT_PERIOD instructions; C loops that the hook cannot see count
 * their iterations with sc_limits_charge (the guarded library functions of
 * sc_limits_guard, and the pattern matcher of pattern.c that string.find,
 * match, gmatch and gsub run on). The memory limit caps the bytes the Lua
 * heap holds: the allocator refuses to grow past it. The time limit is a
 * deadline on the monotonic clock, read by the same hook and by
 * sc_limits_charge: no signal, no timer, no thread, so a host that embeds
 * the library keeps its SIGALRM, and a limit never ends the process (the
 * evaluation fails with the limit's error; the host goes on).
 *
 * Evaluations nest: sc_limits_arm while an evaluation is armed (a recipe
 * that calls sc.plan, whose candidates are evaluations of their own) starts
 * no new one; the inner evaluation runs under what the outer one has left
 * of its steps, time and memory, and its sc_limits_disarm ends only itself.
 *
 * A limit once hit ends the evaluation: every later Lua instruction raises
 * the same error again, so a recipe cannot swallow it with pcall. The error
 * carries exit code 7 (SC_ERR_LIMIT). sc_limits_arm starts a new evaluation
 * when none is armed (the REPL arms before each line).
 *
 * The memory limit covers C memory too: sc_limits_newstate makes lim the
 * hook of interp's allocator (ir/alloc.h), so the programs a recipe builds
 * and what lowering, verification and simulation allocate (c_used) count
 * with the Lua heap (used) against max_mem, during an evaluation and after
 * it. A refused C allocation makes interp fail with SC_ERR_NOMEM and marks
 * the memory limit as hit; sc_limits_message gives its message.
 *
 * Ownership: the state keeps a pointer to lim; lim must outlive it (until
 * sc_limits_close, which also takes the allocator's hook away).
 *
 * Tested by: tests/sandbox.sh.
 */
#ifndef SC_LIMITS_H
#define SC_LIMITS_H

#include <lua.h>
#include <stddef.h>

#define SC_DEFAULT_MAX_STEPS 1000000000LL /* about 2 to 10 s of Lua */
#define SC_DEFAULT_MAX_MEM ((size_t)1 << 30) /* 1 GiB of Lua heap */
#define SC_DEFAULT_MAX_TIME 60.0 /* seconds */
#define SC_LIMIT_PERIOD 1000
#define SC_LIMIT_GRACE 2 /* seconds past the deadline before a program's backstop */

typedef enum sc_limit_kind {
    SC_LIMIT_NONE,
    SC_LIMIT_STEPS,
    SC_LIMIT_MEM,
    SC_LIMIT_TIME
} sc_limit_kind;

typedef struct sc_limits {
    long long max_steps; /* Lua instructions per evaluation; 0: no limit */
    size_t max_mem;      /* bytes the Lua heap may hold; 0: no limit */
    double max_time;     /* seconds per evaluation; 0: no limit */
    long long steps;     /* counted since sc_limits_arm */
    size_t used;         /* bytes the heap holds now */
    size_t c_used;       /* bytes of C memory (ir/alloc.h) held now */
    size_t refused;      /* size of the last refused request (0: the last call succeeded) */
    long refusals;       /* refused requests since sc_limits_arm */
    int hit;             /* sc_limit_kind, sticky until sc_limits_arm */
    int armed;           /* evaluations armed and not yet disarmed (they nest) */
    double deadline;     /* monotonic seconds at which the armed evaluation's time is up */
    lua_State *L;        /* the state (its main thread), for the allocator */
    /* The program's own backstop, or NULL (the library's: a library never
     * signals or ends its host). Called with on = 1 when an evaluation with a
     * time limit starts and on = 0 when it ends. What no count can stop, a
     * finalizer that loops with --trust (Lua runs __gc with hooks off), only
     * the program that owns the process may end: lang/cli's backstop is an
     * alarm SC_LIMIT_GRACE seconds past the deadline that prints the limit's
     * message and exits with code 7. */
    void (*backstop)(const struct sc_limits *lim, int on);
} sc_limits;

#define SC_LIMITS_DEFAULT                                                                          \
    {SC_DEFAULT_MAX_STEPS, SC_DEFAULT_MAX_MEM, SC_DEFAULT_MAX_TIME, 0, 0, 0, 0, 0, SC_LIMIT_NONE, 0, 0, NULL, NULL}

/* A new state whose allocator counts into lim; NULL on out of memory. */
lua_State *sc_limits_newstate(sc_limits *lim);
/* Makes the limits of L (a state of sc_limits_newstate) the ones interp's
 * allocator charges again. The hook is one per process (ir/alloc.h): a host
 * that holds several states (libstagecraft's contexts, lang/api) calls this
 * before any work on one of them, so that each counts its own programs. */
void sc_limits_use(lua_State *L);
/* The limits of a state made by sc_limits_newstate (NULL otherwise). */
sc_limits *sc_limits_of(lua_State *L);
/* Starts an evaluation: step counter and hit flag to 0, count hook on, the
 * deadline set. Inside an armed evaluation, it only nests (see above). */
void sc_limits_arm(lua_State *L);
/* Ends an evaluation (the innermost): the deadline no longer applies once
 * none is armed (the C work that follows, verifying and simulating, is
 * bounded by the program's size instead). */
void sc_limits_disarm(lua_State *L);
/* Closes the state under fresh limits: finalizers a recipe left behind
 * run at close, and a limit stops them as it would any evaluation. */
void sc_limits_close(lua_State *L);
/* When a limit was hit, replaces the error on the stack top with the
 * limit's message (marked with exit code 7) and returns 1; else 0. */
int sc_limits_error(lua_State *L);
/* 1 when a limit was hit since sc_limits_arm, even if the recipe caught
 * the error: the evaluation has failed all the same. */
int sc_limits_hit(lua_State *L);
/* When a limit was hit (by a nested evaluation: sc.plan's candidates),
 * raises its error anew with the position of the C function's caller, the
 * recipe's line, not the candidate's where it was hit; returns 0 when no
 * limit was hit. */
int sc_limits_raise_here(lua_State *L);
/* When a limit was hit: its message in buf, returns 1; else 0. */
int sc_limits_message(const sc_limits *lim, char *buf, size_t len);
/* The message of limit `kind` of lim, hit or not (for a backstop's). */
void sc_limits_describe(const sc_limits *lim, sc_limit_kind kind, char *buf, size_t len);
/* Before building a program: a full garbage collection when the Lua heap
 * and C memory hold more than half the memory limit, so that programs a
 * recipe dropped give their C memory back (Lua's collector does not see
 * it) before the limit is reached. */
void sc_limits_make_room(lua_State *L);

/* Counts n iterations of a C loop as n instructions and reads the clock:
 * raises the limit's error (lua_error: the caller holds nothing that a
 * longjmp would leak) when the steps or the time of the armed evaluation
 * are spent. A no-op outside an armed evaluation. */
void sc_limits_charge(lua_State *L, unsigned long long n);

/* Wraps the library functions whose C loops the count hook cannot see, in
 * the global tables (so in every sandbox made after it): xpcall's message
 * handler is not called once a limit was hit (Lua runs it with hooks off
 * when the hook raised); string.rep returns an empty result at once;
 * table.move, table.insert and table.remove count the elements they shift
 * as instructions, before shifting. Call once, before sc_sandbox_init. */
void sc_limits_guard(lua_State *L);

/* Replaces lib.name (a global library's function) with fn, under the same
 * guard as the wrapped originals: an error fn raises keeps the recipe's
 * line and names the function "lib.name" (pattern.c's matcher). */
void sc_limits_wrap(lua_State *L, const char *lib, const char *name, lua_CFunction fn);

/* Command-line options: at argv[i], --max-steps N, --max-mem BYTES or
 * --max-time SECONDS (also --max-steps=N; BYTES may end in K, M or G).
 * Returns the number of
 * arguments used (1 or 2), 0 when argv[i] is not one of them, -1 with a
 * message in err when its value is bad. */
int sc_limits_option(sc_limits *lim, int argc, char **argv, int i, char *err, size_t errlen);

#endif
