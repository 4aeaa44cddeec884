/*
 * plan_opts.c — the planner's options, one table (plan.h): the command
 * line's --NAME VALUE, sc.plan's fields and Python's keywords all read it,
 * and stagecraft_plan_option lists it for the C API and Python.
 * Tested by: tests/plan.sh, tests/embed.sh, tests/py (the package's names).
 */
#include "plan.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_for.h"

const sc_plan_opt sc_plan_opts[] = {
#define X(field, flag, value, help)                                                                \
    {#field, flag, value, help, offsetof(sc_plan_settings, field)},
    SC_PLAN_OPTIONS(X)
#undef X
    {NULL, NULL, NULL, NULL, 0},
};

const sc_plan_opt *sc_plan_opt_find(const char *name, int by_flag)
{
    for (const sc_plan_opt *o = sc_plan_opts; o->field; o++)
        if (strcmp(name, by_flag ? o->flag : o->field) == 0)
            return o;
    return NULL;
}

int sc_plan_opt_set(sc_plan_settings *s, const sc_plan_opt *o, const char *v, char *err,
                    size_t errlen)
{
    char *at = (char *)s + o->offset;
    if (o->offset == offsetof(sc_plan_settings, time_limit)) {
        char *end = NULL;
        double tl = v ? strtod(v, &end) : -1;
        if (!end || end == v || *end || !(tl >= 0) || tl > 1e9) {
            snprintf(err, errlen, "%s needs a number of seconds >= 0", o->flag);
            return -1;
        }
        memcpy(at, &tl, sizeof tl);
        return 0;
    }
    if (o->offset == offsetof(sc_plan_settings, framework) && sc_plan_fw_parse(v) < 0) {
        snprintf(err, errlen, "%s '%.40s': expected megatron, torchtitan or pytorch", o->flag, v);
        return -1;
    }
    memcpy(at, &v, sizeof v); /* a text option: the caller's string */
    return 0;
}
