/*
 * cmd_run.h — `stagecraft run` (SPEC.md §15): the command line of the CPU
 * runtime, kept apart from main.c.
 */
#ifndef SC_CMD_RUN_H
#define SC_CMD_RUN_H

#include <lua.h>

/* stagecraft run RECIPE [-D k=v]... [--backend cpu|cuda] [--check] [--json];
 * argv[1] is "run". Prints the result (rank 0 only under MPI) or one error
 * line; returns the exit code. */
int sc_cmd_run(lua_State *L, int argc, char **argv);

#endif
