/*
 * cmd_list.c — `stagecraft list [RECIPE]` (cli.h; docs/cli.md): one line
 * per stdlib recipe, or a recipe's doc and parameters. Everything printed
 * comes from recipes, so it is cleaned of control characters first.
 */
#include "cli.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Text from a recipe, cleaned for the terminal (core.h). */
static void put_clean(const char *s) { sc_fputs_clean(s, stdout, 0); }

static void print_params(lua_State *L, int decl)
{
    lua_Integer n = luaL_len(L, decl);
    int w = 10; /* names in a column as wide as the longest */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, decl, i);
        lua_getfield(L, -1, "name");
        int len = (int)strlen(lua_tostring(L, -1));
        w = len > w ? (len < 40 ? len : 40) : w;
        lua_pop(L, 2);
    }
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, decl, i);
        lua_getfield(L, -1, "name");
        lua_getfield(L, -2, "default");
        lua_getfield(L, -3, "desc");
        char name[64], dflt[64];
        sc_clean_text(name, sizeof name, lua_tostring(L, -3), 0);
        sc_clean_text(dflt, sizeof dflt, luaL_tolstring(L, -2, NULL), 0);
        lua_pop(L, 1);
        printf("    %-*s = %-8s ", w, name, dflt);
        put_clean(lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
        fputs("\n", stdout);
        lua_pop(L, 4);
    }
}

/* One recipe: its doc, and with `details` its parameters. */
static int list_one(lua_State *L, const char *recipe, int details)
{
    if (sc_eng_evaluate(L, recipe, 0, 1) != LUA_OK)
        return sc_cli_lua_fail(L);
    int top = lua_gettop(L);
    char name[200];
    sc_clean_text(name, sizeof name, recipe, 0);
    printf("%-12s ", name);
    put_clean(lua_isstring(L, top) ? lua_tostring(L, top) : "");
    fputs("\n", stdout);
    if (details)
        print_params(L, top - 1);
    lua_settop(L, top - 3);
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* list: one line per stdlib recipe; list NAME: its parameters too. */
int sc_cli_list(lua_State *L, const char *recipe)
{
    if (recipe)
        return list_one(L, recipe, 1);
    const char *names[128];
    int n = 0;
    for (int i = 0; sc_stdlib_name(i) && n < 128; i++)
        if (sc_stdlib_name(i)[0] != '_')
            names[n++] = sc_stdlib_name(i);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    for (int i = 0; i < n; i++) {
        int rc = list_one(L, names[i], 0);
        if (rc)
            return rc;
    }
    if (isatty(STDOUT_FILENO)) /* a hint for people; scripts read one recipe a line */
        printf("(stagecraft list NAME: its parameters. Every one takes p, m, the costs tf tb "
               "tw tcomm w_keep, mem, and offload with its parameters.)\n");
    return 0;
}
