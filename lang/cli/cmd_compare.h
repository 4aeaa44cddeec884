/*
 * cmd_compare.h — `stagecraft compare RECIPE... [-D k=v]...` and the
 * parameter sweeps of `sim` (docs/cli.md): one table, a row per recipe and
 * combination of swept values (-D m=16,32,64, -D link_gbps=10:100:10),
 * with makespan, bubble, the most idle device, the bottleneck, per-device
 * peaks, instructions (and peak bytes with model sizes); --json, and
 * --svg FILE for the programs stacked on one time axis.
 *
 * Tested by: tests/compare.sh.
 */
#ifndef SC_CMD_COMPARE_H
#define SC_CMD_COMPARE_H

#include <lua.h>

#include "engine/compare.h"

/* argv[1] is "compare" (or "sim" with a sweep). Prints the table, or one
 * error line; returns the exit code. */
int sc_cmd_compare(lua_State *L, int argc, char **argv);
/* Parses the command line into c (recipes, -D, options): the values
 * stay text until sc_eng_compare_prepare, which it calls. */
int sc_cli_compare_parse(lua_State *L, int argc, char **argv, cmp *c);
/* Whether a -D value of the command line is a sweep (a list or a range). */
int sc_cmd_is_sweep(int argc, char **argv);

#endif
