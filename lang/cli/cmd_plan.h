/*
 * cmd_plan.h — `stagecraft plan` (docs/plan.md): cmd_plan.c parses the
 * command line into the engine's settings (engine/plan.h), which plans;
 * plan_out.c and plan_for.c print (text, --json, --svg, the notes,
 * --costs-out). lang/cli only.
 *
 * Tested by: tests/plan.sh.
 */
#ifndef SC_CMD_PLAN_H
#define SC_CMD_PLAN_H

#include <lua.h>

#include "engine/plan.h"

int sc_cmd_plan(lua_State *L, int argc, char **argv);
/* plan_out.c: the plan as text or JSON on stdout, the notes on stderr,
 * --costs-out and --svg FILE written; the exit code (7 without a pick). */
int sc_plan_print(const sc_plan_run *r, int json, const char *svg);

/* plan_for.c (docs/plan.md#for-a-framework). --costs-out FILE at argv[*i]
 * (moves *i past the value) into s: 0, or the exit code of the error
 * printed. The other options are engine/plan.h's table. */
int sc_plan_for_option(sc_plan_settings *s, int argc, char **argv, int *i);
/* The notes on stderr (the command's, not sc.plan's). */
void sc_plan_for_notes(const sc_plan_run *r);
/* The lines after the pick's: the commands that reproduce it (sim,
 * export), the frameworks that run it and, with --for, that framework's
 * settings. */
void sc_plan_for_print(const sc_plan_run *r);
/* --costs-out: writes the pick's stage costs; 0, or the exit code. */
int sc_plan_for_write(const sc_plan_run *r);
#endif
