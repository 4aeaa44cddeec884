/*
 * sc_lua.c — the `stagecraft` Lua module: sc.program and the Program type.
 * Parameters (sc.params) live in stdlib/_prelude.lua, which this file
 * loads into the module.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/render.h"
#include "schedule/rules.h"
#include "sc_auto.h"
#include "sandbox/sandbox.h"
#include "ir/text.h"
#include "check/verify.h"

#define STATUS_KEY "stagecraft.status"

struct sc_embedded {
    const char *name;
    const char *src;
    size_t len;
};
extern const struct sc_embedded sc_stdlib[];

const char *sc_stdlib_source(const char *name, size_t *len)
{
    for (int i = 0; sc_stdlib[i].name; i++)
        if (strcmp(sc_stdlib[i].name, name) == 0) {
            *len = sc_stdlib[i].len;
            return sc_stdlib[i].src;
        }
    return NULL;
}

const char *sc_stdlib_name(int i)
{
    for (int k = 0; sc_stdlib[k].name; k++)
        if (k == i)
            return sc_stdlib[k].name;
    return NULL;
}

#define STATUS_MSG_KEY "stagecraft.status_msg"

int sc_lua_exit_for(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
    int same = lua_rawequal(L, -1, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    int code = same ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 2);
    return code;
}

void sc_lua_clear_status(lua_State *L)
{
    lua_pushinteger(L, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
}

void sc_lua_mark(lua_State *L, int idx, int code)
{
    idx = lua_absindex(L, idx);
    lua_pushinteger(L, code);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    lua_pushvalue(L, idx);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
}

/* Raises the message on the stack top, remembering that it has this exit
 * code (a later, unrelated error is not mistaken for it). */
static int throw_code(lua_State *L, int code)
{
    sc_lua_mark(L, -1, code);
    return lua_error(L);
}

/* Raises a Lua error with the caller's position, remembering the exit
 * code of st. */
static int raise(lua_State *L, sc_status st, const char *msg)
{
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return throw_code(L, sc_status_exit_code(st));
}

sc_lprog *sc_lua_toprog(lua_State *L, int i)
{
    return luaL_testudata(L, i, SC_PROGRAM_MT);
}

static sc_lprog *checkprog(lua_State *L, int i)
{
    sc_lprog *lp = luaL_checkudata(L, i, SC_PROGRAM_MT);
    if (!lp->pg)
        luaL_error(L, "the program is closed");
    return lp;
}

/* ---- reading the table given to sc.program ---------------------------- */

/* Integer field (or alias), default when absent. */
static lua_Integer int_field(lua_State *L, int t, const char *name, const char *alias,
                             lua_Integer dflt)
{
    int ty = lua_getfield(L, t, name);
    if (ty == LUA_TNIL && alias) {
        lua_pop(L, 1);
        ty = lua_getfield(L, t, alias);
    }
    lua_Integer v = dflt;
    if (ty != LUA_TNIL) {
        int ok;
        v = lua_tointegerx(L, -1, &ok);
        if (!ok) {
            lua_pushfstring(L, "program: field '%s' must be an integer (got %s)", name,
                            ty == LUA_TNUMBER || ty == LUA_TSTRING ? lua_tostring(L, -1)
                                                                    : luaL_typename(L, -1));
            raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
    }
    lua_pop(L, 1);
    return v;
}

/* Per-stage numbers: a number (for a device's whole share: each stage gets
 * value * P / S) or a list of S numbers (one per stage). */
static void stage_numbers(lua_State *L, int t, const char *name, int P, int S, double dflt,
                          double *out)
{
    int ty = lua_getfield(L, t, name);
    if (ty == LUA_TNIL) {
        for (int s = 0; s < S; s++)
            out[s] = dflt * P / S;
    } else if (ty == LUA_TNUMBER) {
        double x = lua_tonumber(L, -1);
        for (int s = 0; s < S; s++)
            out[s] = x * P / S;
    } else if (ty == LUA_TTABLE) {
        if ((int)luaL_len(L, -1) != S) {
            lua_pushfstring(L, "program: '%s' lists %d values, but there are %d stages", name,
                            (int)luaL_len(L, -1), S);
            raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        for (int s = 0; s < S; s++) {
            lua_geti(L, -1, s + 1);
            int ok;
            out[s] = lua_tonumberx(L, -1, &ok);
            if (!ok) {
                lua_pushfstring(L, "program: '%s'[%d] is not a number", name, s + 1);
                raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            lua_pop(L, 1);
        }
    } else {
        lua_pushfstring(L, "program: '%s' must be a number or a list of numbers (got %s)", name,
                        luaL_typename(L, -1));
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
}

static double num_field(lua_State *L, int t, const char *name, double dflt)
{
    int ty = lua_getfield(L, t, name);
    double v = dflt;
    if (ty != LUA_TNIL) {
        int ok;
        v = lua_tonumberx(L, -1, &ok);
        if (!ok) {
            lua_pushfstring(L, "program: '%s' must be a number (got %s)", name,
                            ty == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
            raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
    }
    lua_pop(L, 1);
    return v;
}

static void check_st(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st != SC_OK)
        raise(L, st, sc_errmsg(pg));
}

static void set_placement(lua_State *L, int t, sc_prog *pg, int S)
{
    int ty = lua_getfield(L, t, "placement");
    if (ty == LUA_TNIL || ty == LUA_TSTRING) {
        const char *name = ty == LUA_TNIL ? "loop" : lua_tostring(L, -1);
        sc_place kind;
        if (strcmp(name, "loop") == 0)
            kind = SC_PLACE_LOOP;
        else if (strcmp(name, "v") == 0)
            kind = SC_PLACE_V;
        else {
            lua_pushfstring(L, "program: unknown placement '%s' (loop, v, or a table of devices)",
                            name);
            raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            return;
        }
        check_st(L, pg, sc_prog_set_placement(pg, kind, NULL));
    } else if (ty == LUA_TTABLE) {
        if ((int)luaL_len(L, -1) != S) {
            lua_pushfstring(L, "program: placement lists %d devices, but there are %d stages",
                            (int)luaL_len(L, -1), S);
            raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        int *tab = lua_newuserdatauv(L, (size_t)S * sizeof(int), 0);
        for (int s = 0; s < S; s++) {
            lua_geti(L, -2, s + 1);
            int ok;
            lua_Integer dv = lua_tointegerx(L, -1, &ok);
            if (!ok || dv < -1 || dv > SC_MAX_DEVICES) {
                lua_pushfstring(L, "program: placement[%d] must be a device number", s + 1);
                raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            tab[s] = (int)dv;
            lua_pop(L, 1);
        }
        check_st(L, pg, sc_prog_set_placement(pg, SC_PLACE_TABLE, tab));
        lua_pop(L, 1);
    } else {
        raise(L, SC_ERR_ARG, "program: placement must be 'loop', 'v' or a table");
    }
    lua_pop(L, 1);
}

/* Device d's order from a string or a list of tokens at the stack top. */
static void order_from_value(lua_State *L, sc_prog *pg, int d)
{
    int ty = lua_type(L, -1);
    if (ty == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        check_st(L, pg, sc_order_parse(pg, d, s, len));
    } else if (ty == LUA_TTABLE) {
        lua_Integer n = luaL_len(L, -1);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            if (!s) {
                lua_pushfstring(L, "order of device %d: item %d is a %s, not a pass like 'F0'", d,
                                (int)i, luaL_typename(L, -2));
                raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            check_st(L, pg, sc_order_parse(pg, d, s, len));
            lua_pop(L, 1);
        }
    } else {
        lua_pushfstring(L, "order of device %d must be a string or a list of passes (got %s)", d,
                        luaL_typename(L, -1));
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
}

static void set_order(lua_State *L, int t, sc_prog *pg, int P)
{
    lua_getfield(L, t, "order");
    int fn = lua_isfunction(L, -1);
    if (!fn && !lua_istable(L, -1))
        raise(L, SC_ERR_ARG, "program: 'order' must be a function(d) or a list of per-device orders");
    if (!fn && (int)luaL_len(L, -1) != P) {
        lua_pushfstring(L, "program: 'order' lists %d devices, but there are %d",
                        (int)luaL_len(L, -1), P);
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    for (int d = 0; d < P; d++) {
        if (fn) {
            lua_pushvalue(L, -1);
            lua_pushinteger(L, d);
            lua_call(L, 1, 1);
        } else {
            lua_geti(L, -1, d + 1);
        }
        order_from_value(L, pg, d);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* The shape, costs and memory model of the table at t, into a new program
 * stored at *slot (a userdata's field, so that __gc frees it whatever error
 * comes next). P, S, m are already checked. */
void sc_lua_build_shape(lua_State *L, int t, lua_Integer P, lua_Integer S, lua_Integer m,
                        sc_prog **slot)
{
    t = lua_absindex(L, t);
    *slot = sc_prog_new((int)P, (int)S, (int)m);
    if (!*slot) /* sizes are in range: the product is too large, or memory */
        raise(L, SC_ERR_LIMIT, sc_new_errmsg());
    sc_prog *pg = *slot;
    set_placement(L, t, pg, (int)S);
    double *tf = lua_newuserdatauv(L, 4 * (size_t)S * sizeof(double), 0);
    double *tb = tf + S, *tw = tb + S, *units = tw + S;
    stage_numbers(L, t, "tf", (int)P, (int)S, 1, tf);
    stage_numbers(L, t, "tb", (int)P, (int)S, 1, tb);
    stage_numbers(L, t, "tw", (int)P, (int)S, 1, tw);
    stage_numbers(L, t, "units", (int)P, (int)S, 1, units);
    for (int s = 0; s < S; s++) {
        check_st(L, pg, sc_prog_set_cost(pg, s, tf[s], tb[s], tw[s]));
        check_st(L, pg, sc_prog_set_mem(pg, s, units[s]));
    }
    lua_pop(L, 1);
    check_st(L, pg, sc_prog_set_comm(pg, num_field(L, t, "tcomm", 0)));
    check_st(L, pg, sc_prog_set_w_keep(pg, num_field(L, t, "w_keep", 1)));
    double limit = num_field(L, t, "mem", INFINITY);
    if (limit != INFINITY)
        check_st(L, pg, sc_prog_set_mem_limit(pg, limit));
}

/* P, S, m of the table at t, checked; m_dflt when m is optional. */
void sc_lua_shape_sizes(lua_State *L, int t, lua_Integer m_dflt, lua_Integer *P, lua_Integer *S,
                        lua_Integer *m)
{
    *P = int_field(L, t, "p", "devices", -1);
    *m = int_field(L, t, "m", "microbatches", m_dflt);
    if (*P == -1 || *m == -1)
        raise(L, SC_ERR_ARG, "program: 'p' (devices) and 'm' (microbatches) are required");
    /* Each size is checked before it takes part in a product. */
    if (*P < 1 || *P > SC_MAX_DEVICES) {
        lua_pushfstring(L, "devices p = %I is out of range (1..%d)", *P, SC_MAX_DEVICES);
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    int vplace = lua_getfield(L, t, "placement") == LUA_TSTRING &&
                 strcmp(lua_tostring(L, -1), "v") == 0;
    lua_pop(L, 1);
    lua_Integer v = int_field(L, t, "v", NULL, vplace ? 2 : 1);
    if (v < 1 || v > SC_MAX_STAGES) {
        lua_pushfstring(L, "program: 'v' (chunks per device) = %I is out of range (1..%d)", v,
                        SC_MAX_STAGES);
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    *S = int_field(L, t, "stages", NULL, *P * v);
    if (*m < 1 || *m > SC_MAX_MICROBATCHES) {
        lua_pushfstring(L, "microbatches m = %I is out of range (1..%d)", *m, SC_MAX_MICROBATCHES);
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    if (*S < *P || *S > SC_MAX_STAGES) {
        lua_pushfstring(L, "stages = %I is out of range (p..%d)", *S, SC_MAX_STAGES);
        raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
}

int sc_lua_raise(lua_State *L, sc_status st, const char *msg) { return raise(L, st, msg); }

void sc_lua_check_st(lua_State *L, sc_prog *pg, sc_status st) { check_st(L, pg, st); }

double sc_lua_num_field(lua_State *L, int t, const char *name, double dflt)
{
    return num_field(L, t, name, dflt);
}

/* sc.program{...} */
static int l_program(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int nsrc = 0;
    static const char *const sources[] = {"order", "rule", "block", "auto"};
    for (int i = 0; i < 4; i++) {
        nsrc += lua_getfield(L, 1, sources[i]) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (nsrc != 1)
        return raise(L, SC_ERR_ARG, "program: give exactly one of 'order', 'rule' or 'block' "
                                    "(or 'auto', the automatic scheduler)");
    lua_Integer P, S, m;
    sc_lua_shape_sizes(L, 1, -1, &P, &S, &m);
    /* The userdata first, so that the program is freed by __gc whatever
     * error comes next. */
    sc_lprog *lp = lua_newuserdatauv(L, sizeof *lp, 1); /* user value: sc_auto.c's figures */
    memset(lp, 0, sizeof *lp);
    luaL_setmetatable(L, SC_PROGRAM_MT);
    int ud = lua_gettop(L);
    luaL_where(L, 1);
    snprintf(lp->where, sizeof lp->where, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    sc_lua_build_shape(L, 1, P, S, m, &lp->pg);
    sc_prog *pg = lp->pg;

    if (lua_getfield(L, 1, "rule") == LUA_TSTRING) {
        check_st(L, pg, sc_rule_fill(pg, lua_tostring(L, -1)));
        lua_pop(L, 1);
    } else if (!lua_isnil(L, -1)) {
        return raise(L, SC_ERR_ARG, "program: 'rule' must be a string");
    } else {
        lua_pop(L, 1);
        int has_auto = lua_getfield(L, 1, "auto") != LUA_TNIL;
        lua_pop(L, 1);
        if (has_auto) {
            sc_lua_auto(L, 1, ud); /* sc_auto.c: the automatic scheduler */
        } else if (lua_getfield(L, 1, "block") != LUA_TNIL) {
            lua_pop(L, 1);
            sc_lua_fill_block(L, 1, pg);
        } else {
            lua_pop(L, 1);
            set_order(L, 1, pg, (int)P);
        }
    }
    /* The passes themselves are checked now: a recipe that names a pass
     * twice fails where it is built. */
    check_st(L, pg, sc_verify_passes(pg));
    sc_lua_set_offload(L, 1, pg);
    lua_settop(L, ud);
    return 1;
}

/* ---- Program methods -------------------------------------------------- */

sc_status sc_lua_check(sc_lprog *lp) { return sc_check(lp->pg); }

const sc_sim *sc_lua_sim(sc_lprog *lp, sc_status *st)
{
    *st = SC_OK;
    if (!lp->sim)
        *st = sc_simulate(lp->pg, &lp->sim);
    return lp->sim;
}

static int raise_prog(lua_State *L, sc_lprog *lp, sc_status st)
{
    lua_pushfstring(L, "%s%s", lp->where, sc_errmsg(lp->pg));
    return throw_code(L, sc_status_exit_code(st));
}

static int l_check(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    sc_status st = sc_lua_check(lp);
    if (st)
        return raise_prog(L, lp, st);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_valid(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    sc_status st = sc_lua_check(lp);
    lua_pushboolean(L, st == SC_OK);
    if (st)
        lua_pushstring(L, sc_errmsg(lp->pg));
    return st ? 2 : 1;
}

static void push_array(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_seti(L, -2, i + 1);
    }
}

static int l_sim(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    sc_status st;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim)
        return raise_prog(L, lp, st);
    int P = sim->P;
    double peak = 0;
    for (int d = 0; d < P; d++)
        peak = fmax(peak, sim->peak_mem[d]);
    lua_createtable(L, 0, 8);
    lua_pushnumber(L, sim->makespan);
    lua_setfield(L, -2, "makespan");
    lua_pushnumber(L, sim->bubble_rate);
    lua_setfield(L, -2, "bubble_rate");
    push_array(L, sim->peak_mem, P);
    lua_setfield(L, -2, "peak_memory");
    lua_pushnumber(L, peak);
    lua_setfield(L, -2, "peak_memory_max");
    push_array(L, sim->busy, P);
    lua_setfield(L, -2, "busy");
    push_array(L, sim->start, P);
    lua_setfield(L, -2, "start");
    push_array(L, sim->end, P);
    lua_setfield(L, -2, "finish");
    lua_pushinteger(L, (lua_Integer)sc_prog_total_instructions(lp->pg));
    lua_setfield(L, -2, "instructions");
    if (sc_lua_push_offload(L, lp->pg, sim))
        lua_setfield(L, -2, "offload");
    return 1;
}

static int push_light_string(lua_State *L)
{
    lua_pushstring(L, lua_touserdata(L, 1));
    return 1;
}

/* Pushes a malloc'd string and frees it, also when Lua cannot allocate the
 * copy (a memory error, e.g. under --max-mem, would otherwise leak it). */
static int push_owned(lua_State *L, char *s)
{
    if (!s)
        return luaL_error(L, "out of memory");
    lua_pushcfunction(L, push_light_string); /* light C function: no allocation */
    lua_pushlightuserdata(L, s);
    int rc = lua_pcall(L, 1, 1, 0);
    free(s);
    return rc == LUA_OK ? 1 : lua_error(L);
}

static int l_dump(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    sc_status st = sc_lua_check(lp);
    if (st)
        return raise_prog(L, lp, st);
    return push_owned(L, sc_render_dump(lp->pg));
}

static int l_timeline(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    lua_Integer w = luaL_optinteger(L, 2, 120);
    int width = w < 10 ? 10 : w > SC_RENDER_MAX_WIDTH ? SC_RENDER_MAX_WIDTH : (int)w;
    int color = lua_toboolean(L, 3);
    sc_status st;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim)
        return raise_prog(L, lp, st);
    return push_owned(L, sc_render_timeline(lp->pg, sim, width, color));
}

/* p:summary([width [, color]]): tostring(p), then the ASCII timeline with
 * makespan, bubble and peaks; an invalid program says why instead. */
static int l_summary(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    int width = (int)luaL_optinteger(L, 2, 100);
    int color = lua_toboolean(L, 3);
    luaL_tolstring(L, 1, NULL);
    sc_status st;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim) {
        lua_pushfstring(L, "%s\ninvalid: %s", lua_tostring(L, -1), sc_errmsg(lp->pg));
        return 1;
    }
    char *t = sc_render_timeline(lp->pg, sim, width < 10 ? 10 : width, color);
    if (!t)
        return luaL_error(L, "out of memory");
    size_t n = strlen(t);
    if (n && t[n - 1] == '\n')
        t[n - 1] = 0; /* the caller prints it as a line */
    push_owned(L, t); /* freed even if Lua cannot copy it */
    lua_pushfstring(L, "%s\n%s", lua_tostring(L, -2), lua_tostring(L, -1));
    return 1;
}

static int l_order(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    lua_Integer d = luaL_checkinteger(L, 2);
    if (d < 0 || d >= sc_prog_devices(lp->pg))
        return luaL_error(L, "device %d is out of range (0..%d)", (int)d,
                          sc_prog_devices(lp->pg) - 1);
    return push_owned(L, sc_order_format(lp->pg, (int)d));
}

static int l_gc(lua_State *L)
{
    sc_lprog *lp = luaL_checkudata(L, 1, SC_PROGRAM_MT);
    sc_sim_free(lp->sim);
    sc_prog_free(lp->pg);
    lp->sim = NULL;
    lp->pg = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    sc_lprog *lp = luaL_checkudata(L, 1, SC_PROGRAM_MT);
    if (!lp->pg) {
        lua_pushliteral(L, "Program (closed)");
        return 1;
    }
    size_t passes = 0, n;
    for (int d = 0; d < sc_prog_devices(lp->pg); d++) {
        sc_prog_order(lp->pg, d, &n);
        passes += n;
    }
    lua_pushfstring(L, "Program(%d devices, %d stages, %d microbatches, %d passes)",
                    sc_prog_devices(lp->pg), sc_prog_stages(lp->pg),
                    sc_prog_microbatches(lp->pg), (int)passes);
    return 1;
}

static const luaL_Reg prog_methods[] = {
    {"check", l_check},   {"valid", l_valid},       {"sim", l_sim},
    {"dump", l_dump},     {"timeline", l_timeline}, {"order", l_order},
    {"summary", l_summary},
    {NULL, NULL},
};

static int l_index(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "devices") == 0)
        lua_pushinteger(L, sc_prog_devices(lp->pg));
    else if (strcmp(k, "stages") == 0)
        lua_pushinteger(L, sc_prog_stages(lp->pg));
    else if (strcmp(k, "microbatches") == 0)
        lua_pushinteger(L, sc_prog_microbatches(lp->pg));
    else if (strcmp(k, "placement") == 0) {
        int S = sc_prog_stages(lp->pg);
        lua_createtable(L, S, 0);
        for (int s = 0; s < S; s++) {
            lua_pushinteger(L, sc_prog_stage_device(lp->pg, s));
            lua_seti(L, -2, s + 1);
        }
    } else {
        luaL_getmetafield(L, 1, "__methods");
        lua_getfield(L, -1, k);
    }
    return 1;
}

static const luaL_Reg prog_meta[] = {
    {"__gc", l_gc},       {"__close", l_gc}, {"__tostring", l_tostring},
    {"__index", l_index}, {NULL, NULL},
};

static int l_rules(lua_State *L)
{
    lua_newtable(L);
    for (int i = 0; sc_rule_names[i]; i++) {
        lua_pushstring(L, sc_rule_names[i]);
        lua_seti(L, -2, i + 1);
    }
    return 1;
}

/* sc._raise(exitcode, msg): an error without position, with its exit code. */
static int l_raise(lua_State *L)
{
    int code = (int)luaL_checkinteger(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    return throw_code(L, code);
}

static int is_path(const char *r)
{
    size_t n = strlen(r);
    return strchr(r, '/') || (n > 4 && strcmp(r + n - 4, ".lua") == 0);
}

/* sc._chunk(recipe): the recipe's chunk, from the stdlib or a file. */
static int l_chunk(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    size_t len;
    const char *src = is_path(r) || r[0] == '_' ? NULL : sc_stdlib_source(r, &len);
    int rc;
    if (src) {
        lua_pushfstring(L, "@stdlib/%s.lua", r);
        rc = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
    } else {
        FILE *f = fopen(r, "r");
        if (!f) {
            if (is_path(r)) {
                lua_pushfstring(L, "cannot open recipe file '%s'", r);
                return throw_code(L, 2);
            }
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; sc_stdlib_name(i); i++)
                if (sc_stdlib_name(i)[0] != '_') {
                    luaL_addstring(&b, i ? ", " : "");
                    luaL_addstring(&b, sc_stdlib_name(i));
                }
            luaL_pushresult(&b);
            lua_pushfstring(L, "unknown recipe '%s' (stdlib: %s; or a path to a .lua file)", r,
                            lua_tostring(L, -1));
            return throw_code(L, 2);
        }
        fclose(f);
        rc = luaL_loadfilex(L, r, "t");
    }
    if (rc != LUA_OK)
        return throw_code(L, 8);
    sc_sandbox_apply(L, -1, src ? NULL : r);
    return 1;
}

static int l_isprogram(lua_State *L)
{
    lua_pushboolean(L, sc_lua_toprog(L, 1) != NULL);
    return 1;
}

static const luaL_Reg module_funcs[] = {
    {"program", l_program},
    {"isprogram", l_isprogram},
    {"rules", l_rules},
    {"_raise", l_raise},
    {"_chunk", l_chunk},
    {"_autoinfo", sc_lua_autoinfo},
    {"_errcode", sc_lua_errcode},
    {NULL, NULL},
};

int luaopen_stagecraft(lua_State *L)
{
    if (luaL_newmetatable(L, SC_PROGRAM_MT)) {
        luaL_setfuncs(L, prog_meta, 0);
        luaL_newlib(L, prog_methods);
        lua_setfield(L, -2, "__methods");
        /* The fields l_index serves, for the REPL's completion. */
        static const char *const fields[] = {"devices", "stages", "microbatches", "placement"};
        lua_createtable(L, 4, 0);
        for (int i = 0; i < 4; i++) {
            lua_pushstring(L, fields[i]);
            lua_seti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "__fields");
    }
    lua_pop(L, 1);
    luaL_newlib(L, module_funcs);
    sc_lua_open_block(L);
    lua_pushliteral(L, "0.1.0");
    lua_setfield(L, -2, "version");
    /* The prelude (stdlib/_prelude.lua) adds the Lua-side functions. */
    size_t len;
    const char *src = sc_stdlib_source("_prelude", &len);
    if (!src || luaL_loadbuffer(L, src, len, "@stdlib/_prelude.lua") != LUA_OK)
        return luaL_error(L, "stagecraft: the prelude is missing or broken");
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
    return 1;
}

void sc_lua_setup(lua_State *L)
{
    luaL_openlibs(L);
    luaL_requiref(L, "stagecraft", luaopen_stagecraft, 1);
    lua_setglobal(L, "sc");
    sc_sandbox_init(L);
    sc_lua_clear_status(L);
}
