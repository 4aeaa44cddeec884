/*
 * cmd_plan.c — `stagecraft plan` (docs/plan.md): the command line parsed
 * into the engine's settings (engine/plan.h), the engine plans, plan_out.c
 * prints.
 *
 *   stagecraft plan -D p=8 -D m=32 --cap 6 -D tw=0.63 -D tcomm=0.016
 */
#include "cmd_plan.h"
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "formats/atomic.h"

typedef struct plan_args {
    sc_plan_settings s;
    const char *defs[MAX_DEFS];
    int json;
    const char *svg;
} plan_args;

static int parse(lua_State *L, int argc, char **argv, plan_args *a)
{
    a->s.time_limit = -1;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        char msg[200];
        int used, rc;
        const sc_plan_opt *po;
        if (strncmp(o, "-D", 2) == 0) {
            const char *name, *value;
            size_t nlen;
            if ((rc = sc_cli_define(argc, argv, &i, &name, &nlen, &value)))
                return rc;
            if (a->s.ndefs == SC_PLAN_MAX_DEFS)
                return sc_cli_fail(SC_EXIT_USAGE, "at most 60 -D");
            a->defs[a->s.ndefs++] = name; /* NAME=VALUE, as given */
        } else if (strcmp(o, "--json") == 0) {
            a->json = 1;
        } else if ((po = sc_plan_opt_find(o, 1)) != NULL) { /* engine/plan.h's table */
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (!v && po->offset != offsetof(sc_plan_settings, time_limit))
                return sc_cli_failf(SC_EXIT_USAGE, "%s needs a value", o);
            if (sc_plan_opt_set(&a->s, po, v, msg, sizeof msg))
                return sc_cli_fail(SC_EXIT_USAGE, msg);
        } else if (strcmp(o, "--costs-out") == 0) {
            if ((rc = sc_plan_for_option(&a->s, argc, argv, &i))) /* plan_for.c */
                return rc;
        } else if (strcmp(o, "--svg") == 0) {
            if (i + 1 >= argc)
                return sc_cli_failf(SC_EXIT_USAGE, "%s needs a value", o);
            a->svg = argv[++i];
        } else if ((used = sc_cli_option(L, argc, argv, i, msg, sizeof msg)) != 0) {
            if (used < 0)
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            a->s.trust |= strcmp(o, "--trust") == 0; /* repeated by the reproducing commands */
            a->s.force_costs |= strcmp(o, "--force-costs") == 0;
            i += used - 1;
        } else {
            snprintf(msg, sizeof msg, "plan: unexpected '%.60s' (plan -D p=8 -D m=32 [--cap UNITS|BYTES] ...)", o);
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        }
    }
    char err[512]; /* an output that cannot be written: before the search (as compare) */
    if (a->svg && sc_atomic_check(a->svg, err, sizeof err) != 0)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    a->s.defs = a->defs;
    return 0;
}

int sc_cmd_plan(lua_State *L, int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof a);
    int top = lua_gettop(L);
    int rc = parse(L, argc, argv, &a);
    if (rc)
        return rc;
    sc_plan_run r;
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    rc = sc_eng_plan(L, &a.s, &r);
    sc_eng_release(prev);
    if (rc)
        rc = sc_cli_fail(rc, e.msg);
    else
        rc = sc_plan_print(&r, a.json, a.svg);
    sc_eng_plan_free(L, &r);
    lua_settop(L, top);
    return rc;
}
