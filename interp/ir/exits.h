/*
 * exits.h — the classes of errors of the interpreter: the statuses its
 * functions return and the exit codes of the process (docs/errors.md).
 * Included by ir.h; kept apart so that the program's header stays short.
 * Tested by: tests/unit/test_errors.c, tests/errors.sh.
 */
#ifndef SC_EXITS_H
#define SC_EXITS_H

/* The classes of errors and their exit codes (docs/errors.md), one row
 * each, in the order of their codes: S(NAME, STATUS, code, class) is also a
 * status that functions return (sc_status, SC_STATUS); E(NAME, code, class) is raised only by the command line and
 * the Lua surface (lang/). Every row gives SC_EXIT_NAME = code; the Lua
 * module has them as sc._exits (the prelude's codes), and tests/py/lists.py
 * compares them with the documented table. A new class is one row. */
#define SC_EXITS(S, E)                                                  \
    S(OK, OK, 0, "ok")                                                  \
    E(INTERNAL, 1, "internal error")                                    \
    E(USAGE, 2, "usage")                                                \
    S(ARG, ERR_ARG, 3, "invalid argument")                              \
    S(NOMEM, ERR_NOMEM, 4, "out of memory")                             \
    S(PROGRAM, ERR_PROGRAM, 5, "invalid program")                       \
    S(DEADLOCK, ERR_DEADLOCK, 6, "deadlock")                            \
    S(LIMIT, ERR_LIMIT, 7, "limit exceeded")                            \
    E(RECIPE, 8, "recipe error")                                        \
    S(RUNTIME, ERR_RUNTIME, 9, "runtime failure")                       \
    E(SANDBOX, 10, "sandbox")

/* Status codes of every interp function (the S rows). */
typedef enum sc_status {
#define S(name, status, code, text) SC_##status,
#define E(name, code, text)
    SC_EXITS(S, E)
#undef S
#undef E
    SC_STATUS_COUNT
} sc_status;

/* Exit codes of the process (every row). */
enum {
#define S(name, status, code, text) SC_EXIT_##name = code,
#define E(name, code, text) SC_EXIT_##name = code,
    SC_EXITS(S, E)
#undef S
#undef E
};

/* The class of a status ("invalid argument"; "unknown status" past the table),
 * and its exit code. */
const char *sc_status_name(sc_status st);
int sc_status_exit_code(sc_status st);
/* The rows in order: the i-th row's exit code, NAME and class; 0 past
 * the end. */
int sc_exit_row(int i, int *code, const char **name, const char **text);

#endif
