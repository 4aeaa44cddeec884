/*
 * cmd_compare.c — `stagecraft compare` and parameter sweeps (cmd_compare.h,
 * docs/cli.md): the command line parsed into the engine's comparison
 * (engine/compare.h), which evaluates the rows; compare_out.c prints them.
 *
 *   stagecraft compare 1f1b zb-h1 zb-v v-half -D p=8 -D m=32
 *   stagecraft sim gis -D offload=all -D link_gbps=10:100:10
 */
#include "cmd_compare.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compare.h"
#include "engine/engine.h"
#include "formats/atomic.h"

static int failf(int code, const char *fmt, const char *a, const char *b)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a, b);
    return sc_cli_fail(code, msg);
}

/* ---- arguments ------------------------------------------------------------- */

int sc_cli_compare_parse(lua_State *L, int argc, char **argv, cmp *c)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        char msg[160];
        int used, rc;
        if (strncmp(a, "-D", 2) == 0) {
            const char *name, *value;
            size_t nlen;
            if ((rc = sc_cli_define(argc, argv, &i, &name, &nlen, &value)))
                return rc;
            if (c->ndefs == MAX_DEFS)
                return sc_cli_fail(SC_EXIT_USAGE, "at most 64 -D");
            def *d = &c->defs[c->ndefs++];
            d->name = strndup(name, nlen);
            d->text = strdup(value);
            if (!d->name || !d->text)
                return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
            for (int k = 0; k < c->ndefs - 1; k++)
                if (strcmp(c->defs[k].name, d->name) == 0)
                    return failf(SC_EXIT_USAGE, "-D %s given twice%s", d->name, "");
        } else if (strcmp(a, "--json") == 0) {
            c->json = 1;
        } else if (strcmp(a, "--fit") == 0) {
            c->fit = 1;
        } else if (strcmp(a, "--time-limit") == 0) {
            if ((rc = sc_cli_time_limit(L, argc, argv, &i, NULL)))
                return rc;
        } else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
            if ((rc = sc_cli_time(argc, argv, &i, a[2] == 'f' ? &c->from : &c->to)))
                return rc;
        } else if (strcmp(a, "--svg") == 0 || strcmp(a, "--width") == 0) {
            if (i + 1 >= argc) {
                snprintf(msg, sizeof msg, "%s needs a value", a);
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            }
            const char *v = argv[++i];
            char *end = NULL;
            double x = strtod(v, &end);
            int num = end != v && !*end && isfinite(x);
            if (a[2] == 's') {
                c->svg = v;
            } else {
                if (!num || x < 10 || x > 100000)
                    return sc_cli_fail(SC_EXIT_USAGE, "--width needs a number >= 10 (at most 100000)");
                c->width = (int)x;
            }
        } else if ((used = sc_cli_option(L, argc, argv, i, msg, sizeof msg)) != 0) {
            if (used < 0)
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            i += used - 1;
        } else if (strcmp(a, "--with-program") == 0 || strcmp(a, "--expect-digest") == 0) {
            snprintf(msg, sizeof msg, "%s is of one program, and a sweep (or compare) makes "
                     "several: give each parameter one value", a);
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        } else if (a[0] == '-' && a[1]) {
            snprintf(msg, sizeof msg, "unknown option '%.60s' for '%s'", a, argv[1]);
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        } else if (c->nrec == MAX_RECIPES) {
            return sc_cli_fail(SC_EXIT_USAGE, "at most 64 recipes");
        } else {
            c->recipes[c->nrec++] = a;
        }
    }
    if (!c->nrec)
        return sc_cli_fail(SC_EXIT_USAGE, "missing RECIPE (a stdlib name or a .lua file; see "
                                       "'stagecraft list')");
    if (c->to > 0 && c->to <= c->from)
        return sc_cli_fail(SC_EXIT_USAGE, "--to must be after --from");
    char err[512]; /* an output that cannot be written: before any recipe runs */
    if (c->svg && strcmp(c->svg, "-") != 0 && sc_atomic_check(c->svg, err, sizeof err) != 0)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    int rc = sc_eng_compare_prepare(L, c);
    sc_eng_release(prev);
    return rc ? sc_cli_fail(rc, e.msg) : 0;
}

int sc_cmd_is_sweep(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        const char *kv = strncmp(argv[i], "-D", 2) == 0
                             ? (argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[i + 1] : ""))
                             : NULL;
        const char *eq = kv ? strchr(kv, '=') : NULL;
        if (eq && eq[1] != '[' && (strchr(eq, ',') || strchr(eq, ':')))
            return 1; /* "[a,b]" is one value: a list (mem per device) */
    }
    return 0;
}
