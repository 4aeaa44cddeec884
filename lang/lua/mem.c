/*
 * mem.c — the `mem` field of sc.program (sc_lua_impl.h,
 * docs/language.md#fields): the memory cap in units or in bytes, one for
 * every device or one per device.
 *
 *   mem = 6                         6 units on every device
 *   mem = "40GiB"                   bytes, converted with the program's bytes per unit
 *   mem = {6, 6, 8, 8}              per device (numbers or byte strings)
 *   mem = "[40GiB,40GiB,80GiB,80GiB]"   the same list as one string (-D mem=[...])
 *
 * Bytes per unit come from the program's model (`model`, docs/vocab.md),
 * its cost file (the unit of the run that measured it, docs/costs.md) or,
 * in `run`, the model it trains (docs/run.md#memory-units-in-bytes); a cap
 * in bytes without any is an error that says so.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <ctype.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/flops.h"

/* The suffixes of a size in bytes, lower case. */
static const struct {
    const char *name;
    double scale;
} units[] = {{"b", 1},
             {"kb", 1e3},
             {"mb", 1e6},
             {"gb", 1e9},
             {"tb", 1e12},
             {"kib", 1024.0},
             {"mib", 1048576.0},
             {"gib", 1073741824.0},
             {"tib", 1099511627776.0}};

/* One value of mem: "6" (units, *bytes = 0) or "40GiB" (*bytes = 1).
 * Returns 0 when it reads as neither. */
static int parse_one(const char *s, size_t len, double *x, int *bytes)
{
    char buf[64];
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    *x = strtod(buf, &end);
    if (end == buf || !isfinite(*x))
        return 0;
    while (*end == ' ')
        end++;
    *bytes = 0;
    if (!*end)
        return 1;
    for (char *c = end; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].name) == 0) {
            *x *= units[i].scale;
            *bytes = 1;
            return 1;
        }
    return 0;
}

static void check(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st != SC_OK)
        sc_lua_raise(L, st, sc_errmsg(pg));
}

static void raise_bad(lua_State *L, const char *text)
{
    lua_pushfstring(L, "program: 'mem' must be a number of units, a size in bytes (\"40GiB\"; "
                       "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB) or a list of either per device "
                       "(got '%s')", text);
    sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

/* The bytes of one unit, or a raised error naming the cap. Where the
 * program's memory model will be the built-in model's (`run`, `compare`
 * with model sizes: runtime/run/run.h), sc._unit_bytes(P, S, vocab_par)
 * from lang/cli/cmd_run.c gives that unit (or nil and why not), before the
 * program's own (its model's or its cost file's). */
static double byte_unit(lua_State *L, sc_prog *pg, const char *text)
{
    double unit = 0;
    int top = lua_gettop(L);
    lua_getglobal(L, "sc");
    if (lua_istable(L, -1) && lua_getfield(L, -1, "_unit_bytes") == LUA_TFUNCTION) {
        lua_pushinteger(L, sc_prog_devices(pg));
        lua_pushinteger(L, sc_prog_stages(pg));
        lua_pushinteger(L, (lua_Integer)sc_prog_vocab(pg));
        lua_call(L, 3, 2);
        if (lua_isstring(L, -1)) /* the built-in model cannot be made: why */
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        unit = lua_tonumber(L, -2);
        if (!(unit > 0) || sc_prog_set_byte_unit(pg, unit) != SC_OK)
            unit = 0;
    }
    lua_settop(L, top);
    if (unit > 0 || (unit = sc_prog_byte_unit(pg)) > 0)
        return unit;
    lua_pushfstring(L, "program: mem = %s is in bytes, but this program counts memory in units "
                       "only: give the model's sizes (-D layers=... with hidden, seq, batch, "
                       "vocab), or a cost file that records its unit (run --profile writes it), "
                       "or mem in units", text);
    sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    return 0;
}

/* The value at idx: x in units, or in bytes (*bytes = 1). */
static double value_of(lua_State *L, int idx, int *bytes)
{
    double x = 0;
    *bytes = 0;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        x = lua_tonumber(L, idx);
    } else if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (!parse_one(s, len, &x, bytes))
            raise_bad(L, s);
    } else {
        raise_bad(L, luaL_typename(L, idx));
    }
    if (!(x > 0)) {
        lua_pushfstring(L, "program: 'mem' must be > 0 (got %s)", luaL_tolstring(L, idx, NULL));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    return x;
}

/* Device d's cap from the value at idx, in units. With a model a cap in
 * bytes caps the device's total (sc_prog_bytes_cap: what it holds before
 * any activation taken off); else bytes go by the unit (byte_unit). */
static double value_units(lua_State *L, sc_prog *pg, int idx, int d)
{
    int bytes;
    double x = value_of(L, idx, &bytes);
    if (bytes && sc_prog_has_model(pg)) {
        double u;
        sc_status st = sc_prog_bytes_cap(pg, d, x, &u);
        if (st != SC_OK && sc_prog_cap_refused(pg))
            sc_lua_mark_cap_refused(L);
        check(L, pg, st);
        return u;
    }
    return bytes ? x / byte_unit(L, pg, lua_tostring(L, idx)) : x;
}

double sc_lua_set_mem_at(lua_State *L, int idx, sc_prog *pg, int set)
{
    idx = lua_absindex(L, idx);
    int ty = lua_type(L, idx), top = lua_gettop(L);
    if (ty == LUA_TNIL || (ty == LUA_TBOOLEAN && !lua_toboolean(L, idx)))
        return INFINITY; /* false: none (blk:program{mem = false} drops a Block's) */
    int P = sc_prog_devices(pg);
    lua_pushvalue(L, idx);
    /* A list given as one string, "[a,b,...]": into a table. */
    if (ty == LUA_TSTRING && lua_tostring(L, -1)[0] == '[') {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len < 2 || s[len - 1] != ']')
            raise_bad(L, s);
        lua_newtable(L);
        const char *p = s + 1, *e = s + len - 1;
        for (int i = 1; p <= e; i++) {
            const char *c = memchr(p, ',', (size_t)(e - p));
            size_t n = c ? (size_t)(c - p) : (size_t)(e - p);
            lua_pushlstring(L, p, n);
            lua_seti(L, -2, i);
            if (!c)
                break;
            p = c + 1;
        }
        ty = LUA_TTABLE;
    }
    if (ty != LUA_TTABLE && ty != LUA_TNUMBER && ty != LUA_TSTRING)
        raise_bad(L, luaL_typename(L, idx));
    int list = lua_gettop(L);
    if (ty == LUA_TTABLE && (int)luaL_len(L, list) != P) {
        int n = (int)luaL_len(L, list);
        lua_pushfstring(L, "program: 'mem' lists %d device%s, but there are %d", n,
                        n == 1 ? "" : "s", P);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    /* One cap per device: a list's, or one value's (the same in units; in
     * bytes each device's own with a model). */
    double *caps = lua_newuserdatauv(L, (size_t)P * sizeof(double), 0), least = INFINITY;
    int same = 1;
    for (int d = 0; d < P; d++) {
        if (ty == LUA_TTABLE)
            lua_geti(L, list, d + 1);
        else
            lua_pushvalue(L, list);
        caps[d] = value_units(L, pg, -1, d);
        least = fmin(least, caps[d]);
        same &= caps[d] == caps[0];
        lua_pop(L, 1);
    }
    if (set)
        check(L, pg, ty != LUA_TTABLE && same ? sc_prog_set_mem_limit(pg, caps[0])
                                              : sc_prog_set_mem_caps(pg, caps));
    lua_settop(L, top);
    return least;
}

void sc_lua_mark_cap_refused(lua_State *L)
{
    /* the command line names what fits (cli_fit.c); the module's table,
     * not a global: a host's Lua may have no global sc */
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "stagecraft") == LUA_TTABLE) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "_cap_refused");
    }
    lua_pop(L, 2);
}

double sc_lua_mem_field(lua_State *L, int t, sc_prog *pg, double dflt)
{
    double x = dflt;
    if (lua_getfield(L, t, "mem") != LUA_TNIL)
        x = sc_lua_set_mem_at(L, -1, pg, 0);
    lua_pop(L, 1);
    return x;
}

void sc_lua_set_mem(lua_State *L, int t, sc_prog *pg)
{
    lua_getfield(L, t, "mem");
    sc_lua_set_mem_at(L, -1, pg, 1);
    lua_pop(L, 1);
}
