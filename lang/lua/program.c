/*
 * program.c — sc.program and the Program type (sc_lua.h): orders, rules,
 * blocks and automatic schedules into one program, and its methods.
 */
#include "bound/bound.h"
#include "compile.h"
#include "sc_lua.h"
#include "sc_lua_impl.h"
#include "schedule/pairing.h"
#include "fields.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/render.h"
#include "schedule/rules.h"
#include "schedule/vocab.h"
#include "model/flops.h"
#include "auto.h"
#include "schedule/capfit.h"
#include "ir/text.h"
#include "check/verify.h"
#include "ir/p2p.h"

static sc_lprog *checkprog(lua_State *L, int i)
{
    sc_lprog *lp = luaL_checkudata(L, i, SC_PROGRAM_MT);
    if (!lp->pg)
        luaL_error(L, "the program is closed");
    return lp;
}

/* Device d's order from a string or a list of tokens at the stack top. */
static void order_from_value(lua_State *L, sc_prog *pg, int d)
{
    int ty = lua_type(L, -1);
    if (ty == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        sc_lua_check_st(L, pg, sc_order_parse(pg, d, s, len));
    } else if (ty == LUA_TTABLE) {
        lua_Integer n = luaL_len(L, -1);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            if (!s) {
                lua_pushfstring(L, "order of device %d: item %d is a %s, not a pass like 'F0'", d,
                                (int)i, luaL_typename(L, -2));
                sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            sc_lua_check_st(L, pg, sc_order_parse(pg, d, s, len));
            lua_pop(L, 1);
        }
    } else {
        lua_pushfstring(L, "order of device %d must be a string or a list of passes (got %s)", d,
                        luaL_typename(L, -1));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
}

static void set_order(lua_State *L, int t, sc_prog *pg, int P)
{
    lua_getfield(L, t, "order");
    int fn = lua_isfunction(L, -1);
    if (!fn && !lua_istable(L, -1))
        sc_lua_raise(L, SC_ERR_ARG, "program: 'order' must be a function(d) or a list of per-device orders");
    if (!fn && (int)luaL_len(L, -1) != P) {
        int n = (int)luaL_len(L, -1);
        lua_pushfstring(L, "program: 'order' lists %d device%s, but there are %d", n,
                        n == 1 ? "" : "s", P);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
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

/* Whether the program's orders are fitted to its cap (sc_cap_fit): with
 * fit = true (rules have knobs of their own, schedule/rules.h). */
static int want_fit(lua_State *L, int t)
{
    int ty = lua_getfield(L, t, "fit");
    int fit = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
        sc_lua_raise(L, SC_ERR_ARG, "program: 'fit' must be true or false");
    return fit;
}

/* Whether the table at t gives a memory policy (an offload other than
 * none): the policy then meets the cap, not the schedule. */
static int memory_policy(lua_State *L, int t)
{
    int any = 0;
    for (int i = 0; i < 2; i++) {
        int ty = lua_getfield(L, t, i ? "recompute" : "offload"), yes = ty != LUA_TNIL;
        if (ty == LUA_TSTRING)
            yes = strcmp(lua_tostring(L, -1), "none") != 0;
        else if (ty == LUA_TTABLE) {
            lua_getfield(L, -1, "policy");
            yes = !(lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "none") == 0);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        any |= yes;
    }
    return any;
}

/* A block of the table at 1. Under a memory policy the policy meets the cap
 * (docs/guide.md#memory-model): the block unrolls without it (its steady
 * state may pass it before the policy moves or drops records), and the cap
 * comes back for the compile driver's check. */
static void fill_block(lua_State *L, sc_prog *pg)
{
    if (!memory_policy(L, 1) || !isfinite(sc_prog_mem_limit(pg))) {
        sc_lua_fill_block(L, 1, pg);
        return;
    }
    int P = sc_prog_devices(pg), per = sc_prog_mem_per_device(pg);
    double *caps = lua_newuserdatauv(L, (size_t)P * sizeof(double), 0);
    for (int d = 0; d < P; d++)
        caps[d] = sc_prog_mem_cap(pg, d);
    sc_lua_check_st(L, pg, sc_prog_set_mem_limit(pg, INFINITY));
    sc_lua_fill_block(L, 1, pg);
    sc_lua_check_st(L, pg, per ? sc_prog_set_mem_caps(pg, caps) : sc_prog_set_mem_limit(pg, caps[0]));
    lua_pop(L, 1);
}

/* The orders from the program's one source (table at 1, the program's
 * userdata at ud): a rule, the automatic scheduler, a block or the orders. */
static void fill_orders(lua_State *L, int ud, sc_prog *pg, int P)
{
    if (lua_getfield(L, 1, "rule") == LUA_TSTRING) {
        sc_lua_check_st(L, pg, sc_rule_fill(pg, lua_tostring(L, -1)));
        lua_pop(L, 1);
        return;
    }
    if (!lua_isnil(L, -1))
        sc_lua_raise(L, SC_ERR_ARG, "program: 'rule' must be a string");
    lua_pop(L, 1);
    int has_auto = lua_getfield(L, 1, "auto") != LUA_TNIL;
    lua_pop(L, 1);
    if (has_auto && sc_vocab_split(sc_prog_vocab(pg))) {
        lua_pushfstring(L, "program: vocab_par = '%s' cannot be placed on an automatic "
                        "schedule ('auto'): give an order, a rule or a block",
                        sc_vocab_name(sc_prog_vocab(pg)));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    } else if (has_auto) {
        sc_lua_auto(L, 1, ud); /* auto.c: the automatic scheduler */
    } else if (lua_getfield(L, 1, "block") != LUA_TNIL) {
        lua_pop(L, 1);
        fill_block(L, pg);
    } else {
        lua_pop(L, 1);
        set_order(L, 1, pg, P);
    }
}

/* comm: the runtime's point-to-point semantics the program is verified
 * and simulated in (docs/semantics.md#modes). */
static void set_comm(lua_State *L, sc_prog *pg)
{
    if (lua_getfield(L, 1, "comm") != LUA_TNIL) {
        int mode = lua_type(L, -1) == LUA_TSTRING ? sc_p2p_parse(lua_tostring(L, -1)) : -1;
        if (mode < 0)
            sc_lua_raise(L, SC_ERR_ARG, "program: comm must be \"nccl\", \"gloo\" or "
                                        "\"per-link\" (docs/semantics.md#modes)");
        sc_lua_check_st(L, pg, sc_prog_set_p2p(pg, mode));
    }
    lua_pop(L, 1);
}

/* sc.program{...} */
int sc_lua_program(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    sc_lua_check_fields(L, 1, "program", sc_fields_of(SC_FT_PROGRAM));
    int nsrc = 0;
    const char *const *sources = sc_fields_of(SC_FT_ONE_OF);
    for (int i = 0; sources[i]; i++) {
        nsrc += lua_getfield(L, 1, sources[i]) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (nsrc != 1)
        return sc_lua_raise(L, SC_ERR_ARG, "program: give exactly one of 'order', 'rule' or 'block' "
                                    "(or 'auto', the automatic scheduler)");
    lua_Integer P, S, m;
    sc_lua_shape_sizes(L, 1, -1, &P, &S, &m);
    /* The userdata first, so that the program is freed by __gc whatever
     * error comes next. */
    sc_lprog *lp = lua_newuserdatauv(L, sizeof *lp, 1); /* user value: auto.c's figures */
    memset(lp, 0, sizeof *lp);
    luaL_setmetatable(L, SC_PROGRAM_MT);
    int ud = lua_gettop(L);
    luaL_where(L, 1);
    snprintf(lp->where, sizeof lp->where, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    sc_lua_build_shape(L, 1, P, S, m, &lp->pg);
    sc_prog *pg = lp->pg;
    if (sc_prog_forward_only(pg) && lua_getfield(L, 1, "order") == LUA_TNIL)
        return sc_lua_raise(L, SC_ERR_ARG, "program: forward_only = true needs an ordered program "
                            "('order'): rules, blocks and 'auto' make training schedules "
                            "(docs/guide.md#forward-only)");
    lua_settop(L, ud);

    fill_orders(L, ud, pg, (int)P);
    /* The memory knob of orders that ask for it: forwards wait for memory
     * (docs/guide.md#memory-model). With a memory policy the policy meets
     * the cap instead; the compile driver checks the promise. */
    int changed = 0; /* the orders after the source gave them */
    if (want_fit(L, 1) && !memory_policy(L, 1)) {
        changed = 1;
        sc_lua_check_st(L, pg, sc_verify_passes(pg));
        sc_lua_check_st(L, pg, sc_cap_fit(pg));
    }
    /* A split vocabulary: its passes go into the orders unless the recipe
     * placed them itself (docs/vocab.md#placing-the-passes). */
    if (sc_vocab_split(sc_prog_vocab(pg)) && !sc_vocab_placed(pg)) {
        double lag = sc_lua_num_field(L, 1, "program", "vocab_lag", -1);
        sc_lua_check_st(L, pg, sc_vocab_place(pg, lag));
    }
    /* The passes themselves are checked now: a recipe that names a pass
     * twice fails where it is built (a program verified already, as the
     * automatic scheduler leaves its winner, passed this check in the
     * compile driver, and any change since would have cleared that). */
    if (!sc_is_verified(pg))
        sc_lua_check_st(L, pg, sc_verify_passes(pg));
    /* pairs = true: neighbouring F and B joined into overlapped pairs where
     * the costs gain (docs/blocks.md#pairing). */
    if (lua_getfield(L, 1, "pairs") != LUA_TNIL && lua_toboolean(L, -1)) {
        changed = 1;
        sc_lua_check_st(L, pg, sc_pair_greedy(pg, sc_prog_mem_limit(pg), NULL));
    }
    lua_pop(L, 1);
    set_comm(L, pg);
    sc_lua_set_offload(L, 1, pg);
    sc_lua_set_recompute(L, 1, pg);
    sc_lua_set_steps(L, 1, pg);
    sc_lua_set_fsdp(L, 1, pg);
    sc_lua_apply_costs_fsdp(L, 1, pg); /* a trace's UNSHARD and REDUCE_GRAD */
    /* The automatic scheduler's simulation of its winner (auto.c) is the
     * program's while nothing above changed it: every change clears the
     * verification; pairing and the cap fit change the orders. */
    if (lp->sim && (!sc_is_verified(pg) || changed)) {
        sc_sim_free(lp->sim);
        lp->sim = NULL;
    }
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

sc_status sc_lua_set_comm(sc_lprog *lp, int mode)
{
    sc_sim_free(lp->sim); /* its figures were of the other mode */
    lp->sim = NULL;
    return sc_prog_set_p2p(lp->pg, mode);
}

sc_status sc_lua_set_lower_target(sc_lprog *lp, int target)
{
    if (sc_prog_lower_target(lp->pg) != target) {
        sc_sim_free(lp->sim); /* its figures were of the other lowering */
        lp->sim = NULL;
    }
    return sc_prog_set_lower_target(lp->pg, target);
}

static int raise_prog(lua_State *L, sc_lprog *lp, sc_status st)
{
    lua_pushfstring(L, "%s%s", lp->where, sc_errmsg(lp->pg));
    return sc_lua_throw(L, sc_status_exit_code(st));
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

int sc_lua_balance(const sc_sim *sim, double *idle)
{
    int P = sim->P, b = 0, equal = 1;
    double span = sim->makespan > 0 ? sim->makespan : 1;
    for (int d = 0; d < P; d++) {
        if (idle)
            idle[d] = 1 - sim->busy[d] / span;
        if (sim->busy[d] > sim->busy[b])
            b = d;
    }
    for (int d = 0; d < P; d++)
        equal &= fabs(sim->busy[d] - sim->busy[b]) <= 1e-9 * fmax(1, sim->busy[b]);
    return equal ? -1 : b;
}

/* Into the table on the stack top: the model's bytes (docs/vocab.md), and
 * what each device holds (docs/model.md#bytes) as sim --json has it. */
static void set_model_bytes(lua_State *L, const sc_prog *pg, const sc_sim *sim)
{
    int P = sim->P;
    lua_createtable(L, P, 0);
    for (int d = 0; d < P; d++) {
        lua_pushnumber(L, sc_prog_param_bytes(pg, d));
        lua_seti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "param_bytes");
    lua_pushnumber(L, sc_prog_unit_bytes(pg));
    lua_setfield(L, -2, "unit_bytes");
    static const char *const keys[] = {"params", "grads", "optimizer", "activations",
                                       "workspace", "total"};
    double most = 0;
    lua_createtable(L, P, 0);
    for (int d = 0; d < P; d++) {
        lua_pushinteger(L, (lua_Integer)sc_prog_dev_bytes(pg, d).params);
        lua_seti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "params");
    lua_createtable(L, 0, 6);
    for (int k = 0; k < 6; k++) {
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            sc_dev_bytes db = sc_prog_dev_bytes(pg, d);
            double x[] = {db.param_bytes, db.grads, db.optimizer,
                          sim->peak_mem[d] * sc_prog_unit_bytes(pg), db.workspace,
                          sc_prog_total_bytes(pg, d, sim->peak_mem[d])};
            most = k == 5 && x[5] > most ? x[5] : most;
            lua_pushnumber(L, x[k]);
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -2, keys[k]);
    }
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, most);
    lua_setfield(L, -2, "total_bytes_max");
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
    sc_bound bd; /* docs/bound.md */
    if (sc_bound_prog(lp->pg, &bd) == SC_OK) {
        lua_pushnumber(L, bd.bound);
        lua_setfield(L, -2, "lower_bound");
        lua_pushnumber(L, sc_bound_gap(sim->makespan, bd.bound));
        lua_setfield(L, -2, "bound_gap");
        lua_pushstring(L, sc_bound_term_name(bd.binding));
        lua_setfield(L, -2, "bound_binding");
    }
    double *idle = lua_newuserdatauv(L, (size_t)P * sizeof *idle, 0);
    int b = sc_lua_balance(sim, idle);
    push_array(L, idle, P);
    lua_setfield(L, -3, "idle");
    lua_pop(L, 1);
    if (b >= 0) {
        lua_pushinteger(L, b);
        lua_setfield(L, -2, "bottleneck");
    }
    if (sc_lua_push_offload(L, lp->pg, sim))
        lua_setfield(L, -2, "offload");
    if (sc_lua_push_recompute(L, lp->pg))
        lua_setfield(L, -2, "recompute");
    if (sim->coll_busy) { /* collectives (docs/semantics.md#collectives) */
        push_array(L, sim->coll_busy, P);
        lua_setfield(L, -2, "coll_busy");
    }
    if (sc_prog_vocab(lp->pg) != SC_VOCAB_NONE) {
        lua_pushstring(L, sc_vocab_name(sc_prog_vocab(lp->pg)));
        lua_setfield(L, -2, "vocab_par");
    }
    if (sc_prog_has_model(lp->pg))
        set_model_bytes(L, lp->pg, sim);
    if (sc_prog_copies(lp->pg) > 1) { /* docs/guide.md#copies */
        lua_pushinteger(L, sc_prog_copies(lp->pg));
        lua_setfield(L, -2, "copies");
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            lua_pushnumber(L, sc_prog_param_share(lp->pg, d));
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -2, "param_share");
    }
    sc_lua_set_step_figures(L, lp->pg, sim);
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

static void get_devices(lua_State *L, const void *pg) { lua_pushinteger(L, sc_prog_devices(pg)); }
static void get_stages(lua_State *L, const void *pg) { lua_pushinteger(L, sc_prog_stages(pg)); }
static void get_steps(lua_State *L, const void *pg) { lua_pushinteger(L, sc_prog_steps(pg)); }
static void get_slices(lua_State *L, const void *pg) { lua_pushinteger(L, sc_prog_slices(pg)); }

static void get_microbatches(lua_State *L, const void *pg)
{
    lua_pushinteger(L, sc_prog_microbatches(pg));
}

static void get_optim_sync(lua_State *L, const void *pg)
{
    lua_pushstring(L, sc_sync_name(sc_prog_optim_sync(pg)));
}

static void get_placement(lua_State *L, const void *pg)
{
    int S = sc_prog_stages(pg);
    lua_createtable(L, S, 0);
    for (int s = 0; s < S; s++) {
        lua_pushinteger(L, sc_prog_stage_device(pg, s));
        lua_seti(L, -2, s + 1);
    }
}

/* The fields a Program reads (docs/language.md#the-program-type-and-the-module). */
static const sc_lua_getter prog_fields[] = {
    {"devices", get_devices}, {"stages", get_stages},   {"microbatches", get_microbatches},
    {"placement", get_placement}, {"steps", get_steps}, {"optim_sync", get_optim_sync},
    {"slices", get_slices}, {NULL, NULL},
};

static int l_index(lua_State *L)
{
    return sc_lua_index(L, "Program", checkprog(L, 1)->pg, prog_fields);
}

static const luaL_Reg prog_meta[] = {
    {"__gc", l_gc},       {"__close", l_gc}, {"__tostring", l_tostring},
    {"__index", l_index}, {NULL, NULL},
};

void sc_lua_open_program(lua_State *L)
{
    if (luaL_newmetatable(L, SC_PROGRAM_MT)) {
        luaL_setfuncs(L, prog_meta, 0);
        luaL_newlib(L, prog_methods);
        lua_setfield(L, -2, "__methods");
        sc_lua_set_getters(L, prog_fields); /* the REPL's completion and :help */
    }
    lua_pop(L, 1);
}
