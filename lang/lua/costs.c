/*
 * costs.c — cost files in Lua (sc_lua_impl.h; docs/costs.md): sc.costs(FILE)
 * reads one into a table, and the `costs` field of sc.program (and of
 * sc.block, sc.block_search, sc.autoschedule: every table that goes
 * through sc_lua_build_shape) sets a program's costs from such a table.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/costs.h"
#include "formats/costs_tok.h"
#include "formats/jsonread.h"
#include "formats/readfile.h"
#include "ir/alloc.h"
#include "ir/fsdp.h"
#include "ir/pair.h"
#include "model/flops.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

/* A cost file is small (a few numbers per stage); this bounds a mistake. */
#define MAX_COST_FILE (64L << 20)

/* Pushes the JSON value as a Lua value: objects as tables with string
 * keys, lists as sequences, integral numbers as integers. */
static void push_json(lua_State *L, const sc_jv *v)
{
    luaL_checkstack(L, 4, "cost file nested too deep");
    switch (v->type) {
    case SC_JNULL: lua_pushnil(L); break;
    case SC_JBOOL: lua_pushboolean(L, v->num != 0); break;
    case SC_JNUM:
        if (v->num == floor(v->num) && fabs(v->num) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)v->num);
        else
            lua_pushnumber(L, v->num);
        break;
    case SC_JSTR: lua_pushlstring(L, v->str, v->len); break;
    case SC_JARR:
        lua_createtable(L, (int)v->len, 0);
        for (size_t i = 0; i < v->len; i++) {
            push_json(L, v->item[i]);
            lua_seti(L, -2, (lua_Integer)i + 1);
        }
        break;
    case SC_JOBJ:
        lua_createtable(L, 0, (int)v->len);
        for (size_t i = 0; i < v->len; i++) {
            push_json(L, v->item[i]);
            lua_setfield(L, -2, v->keys[i]);
        }
        break;
    }
}

static int push_protected(lua_State *L)
{
    push_json(L, lua_touserdata(L, 1));
    return 1;
}

/* Raises "NAME: msg" with exit code 3 (invalid argument). */
static int costs_error(lua_State *L, const char *name, const char *msg)
{
    lua_pushfstring(L, "cost file %s: %s", name, msg);
    return sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

void sc_lua_read_json(lua_State *L, const char *path, const char *label, size_t max,
                      const char *kind, sc_read *rd)
{
    const sc_limits *lim = sc_limits_of(L);
    double max_time = lim ? lim->max_time : 0;
    *rd = (sc_read){.format = SC_READ_JSON, .max_bytes = max,
                    .deadline = max_time > 0 ? sc_clock_now() + max_time : 0};
    char err[384];
    sc_status st = sc_read_file(path, rd, err, sizeof err);
    if (st == SC_ERR_LIMIT && rd->over == SC_READ_OVER_TIME) {
        snprintf(err, sizeof err, "%.200s: time limit exceeded: still reading after %g s "
                 "(--max-time SECONDS raises it; 0 for no limit)", label, max_time);
        sc_lua_raise(L, SC_ERR_LIMIT, err);
    }
    if (st == SC_ERR_NOMEM) /* counted in --max-mem: its error */
        luaL_error(L, "not enough memory");
    if (st == SC_ERR_LIMIT)
        lua_pushfstring(L, "%s: larger than %d MiB: not a %s", label, (int)(max >> 20), kind);
    else if (st != SC_OK)
        lua_pushfstring(L, "%s: %s", label, err);
    if (st != SC_OK)
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

/* sc._costs_read(path, name): the cost file at path as a table; messages
 * call it `name` (the path as the recipe gave it). The text and the tree
 * are interp's counted memory (--max-mem); a device or a pipe is read only
 * as far as its bytes can be JSON, and not past --max-time (readfile.h). */
static int l_costs_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1), *name = luaL_optstring(L, 2, path);
    sc_read rd;
    lua_pushfstring(L, "cost file %s", name);
    sc_lua_read_json(L, path, lua_tostring(L, -1), MAX_COST_FILE, "cost file", &rd);
    lua_pop(L, 1);
    char err[384];
    sc_status st;
    sc_jv *root = NULL;
    sc_costs c;
    st = sc_json_parse(rd.text, rd.len, &root, err, sizeof err);
    sc_free(rd.text);
    if (st == SC_OK && (st = sc_costs_from_json(root, &c, err, sizeof err)) == SC_OK)
        sc_costs_free(&c);
    if (st != SC_OK) {
        sc_jv_free(root);
        if (st == SC_ERR_NOMEM) /* the tree is counted in --max-mem: its error */
            return luaL_error(L, "not enough memory");
        return costs_error(L, name, err);
    }
    /* Building the table may raise (memory): under pcall, so that the
     * tree is freed on every path. */
    lua_pushcfunction(L, push_protected);
    lua_pushlightuserdata(L, root);
    int rc = lua_pcall(L, 1, 1, 0);
    sc_jv_free(root);
    if (rc != LUA_OK)
        return lua_error(L);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "file");
    return 1;
}

/* sc.costs(path): the cost file at path (relative to the current directory;
 * in a recipe, the sandbox's version resolves it in the recipe's folder). */
static int l_costs(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    /* The sandbox's rule holds here too (the prelude's helpers reach this
     * function from recipes and scripts): a path named on the command line
     * (-D costs=FILE), or one the rule in force allows. */
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int granted = lua_getfield(L, -1, "stagecraft") == LUA_TTABLE &&
                  lua_getfield(L, -1, "_granted") == LUA_TTABLE &&
                  lua_getfield(L, -1, path) != LUA_TNIL;
    lua_settop(L, 1);
    if (granted) {
        lua_pushvalue(L, 1);
    } else if (!sc_sandbox_read_path(L, path, "sc.costs")) {
        errno = ENOENT;
        return costs_error(L, path, strerror(errno));
    }
    lua_pushvalue(L, 1);
    lua_remove(L, 1); /* (the path to open, the name the caller gave) */
    return l_costs_read(L);
}

/* ---- the `costs` field -------------------------------------------------- */

static void check(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st != SC_OK)
        sc_lua_raise(L, st, sc_errmsg(pg));
}

/* Per-stage list `key` of the cost table at c into out[S]; 0 when absent
 * and optional. */
static int cost_list(lua_State *L, int c, const char *name, const char *key, int S, int need,
                     double *out, const char *per)
{
    int ty = lua_getfield(L, c, key);
    if (ty == LUA_TNIL && !need) {
        lua_pop(L, 1);
        return 0;
    }
    char msg[160];
    if (ty != LUA_TTABLE) {
        snprintf(msg, sizeof msg, "'%s' %s (a list of %d times in seconds, one per %s)", key,
                 ty == LUA_TNIL ? "is missing" : "is not a list", S, per);
        return costs_error(L, name, msg);
    }
    lua_Integer n = luaL_len(L, -1);
    if (n != S) {
        snprintf(msg, sizeof msg, "'%s' has %lld values, but the program has %d %ss", key,
                 (long long)n, S, per);
        return costs_error(L, name, msg);
    }
    for (int s = 0; s < S; s++) {
        lua_geti(L, -1, s + 1);
        int ok;
        double x = lua_tonumberx(L, -1, &ok);
        if (!ok || !(x >= 0) || !isfinite(x)) {
            snprintf(msg, sizeof msg, "'%s'[%d]: a time must be a number >= 0", key, s);
            return costs_error(L, name, msg);
        }
        out[s] = x;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 1;
}

/* The per-token costs of the cost table at c (F stages; costs_tok.h), after
 * its times: as the program's stages (sc_prog_set_len_tokens). */
static void apply_tok(lua_State *L, int c, const char *name, int F, sc_prog *pg)
{
    int S = sc_prog_stages(pg), ok = 0;
    double T = lua_getfield(L, c, "tokens") == LUA_TNIL ? 0 : lua_tonumberx(L, -1, &ok);
    lua_pop(L, 1);
    int any = 0;
    for (int k = 0; k < 6; k++) {
        any |= lua_getfield(L, c, sc_cost_tok_keys[k % 3][k / 3]) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (!any)
        return; /* none (a cost file's reader refuses 'tokens' alone) */
    if (!ok || !(T > 0) || !isfinite(T))
        costs_error(L, name, "'tokens': expected a length > 0 (tokens per sequence)");
    double *x = lua_newuserdatauv(L, 6 * ((size_t)F + (size_t)S) * sizeof(double), 0);
    for (int k = 0; k < 6; k++) {
        double *in = x + (size_t)k * F, *out = x + 6 * (size_t)F + (size_t)k * S;
        int other = lua_getfield(L, c, sc_cost_tok_keys[k % 3][(k / 3) ^ 1]) != LUA_TNIL;
        lua_pop(L, 1); /* absent: 0, or NAN (linear) when the kind has neither list */
        int has = cost_list(L, c, name, sc_cost_tok_keys[k % 3][k / 3], F, 0, in, "stage");
        for (int s = 0; !has && s < F; s++)
            in[s] = other ? 0 : NAN;
        sc_costs_resample(in, F, out, S);
    }
    double *a = x + 6 * (size_t)F;
    check(L, pg, sc_prog_set_len_tokens(pg, a, a + 3 * (size_t)S, T));
    lua_pop(L, 1);
}

/* The vocabulary passes' times of the cost table at c (ts, tt, te, tew:
 * one per device), when it has them, on a program that places them; a
 * time the table lacks keeps the program's (its model's or vocab_costs'). */
static void apply_vocab(lua_State *L, int c, const char *name, sc_prog *pg)
{
    int have = 0;
    for (int k = 0; k < SC_COST_VOCAB; k++) {
        have |= lua_getfield(L, c, sc_cost_vocab_keys[k]) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (!have || !sc_vocab_split(sc_prog_vocab(pg)))
        return; /* a profile of a split vocabulary serves the plain program too */
    int P = sc_prog_devices(pg), ok;
    lua_getfield(L, c, "devices");
    lua_Integer cd = lua_tointegerx(L, -1, &ok);
    lua_pop(L, 1);
    if (!ok || cd != P) {
        char msg[200];
        snprintf(msg, sizeof msg, "the vocabulary passes' times are for %lld devices, but the "
                 "program has %d", ok ? (long long)cd : -1LL, P);
        costs_error(L, name, msg);
    }
    double *x = lua_newuserdatauv(L, SC_COST_VOCAB * (size_t)P * sizeof(double), 0);
    int has[SC_COST_VOCAB];
    for (int k = 0; k < SC_COST_VOCAB; k++)
        has[k] = cost_list(L, c, name, sc_cost_vocab_keys[k], P, 0, x + (size_t)k * (size_t)P,
                           "device");
    for (int d = 0; d < P; d++) {
        double t[SC_COST_VOCAB];
        for (int k = 0; k < SC_COST_VOCAB; k++)
            t[k] = has[k] ? x[(size_t)k * (size_t)P + (size_t)d]
                          : sc_prog_vocab_cost(pg, sc_vocab_op(k), d);
        check(L, pg, sc_prog_set_vocab_cost(pg, d, t[0], t[1], t[2], t[3]));
    }
    lua_pop(L, 1);
}

/* The collectives' line of the cost table at c, when it has one: latency +
 * per_byte · factor · bytes (sc_prog_set_coll_cost). */
static void apply_colls(lua_State *L, int c, const char *name, sc_prog *pg)
{
    if (lua_getfield(L, c, "collectives") == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    double x[2];
    static const char *const keys[2] = {"latency", "per_byte"};
    for (int i = 0; i < 2; i++) {
        int ok = lua_istable(L, -1);
        if (ok) {
            lua_getfield(L, -1, keys[i]);
            x[i] = lua_tonumberx(L, -1, &ok);
            lua_pop(L, 1);
        }
        if (!ok || !(x[i] >= 0) || !isfinite(x[i])) {
            char msg[96];
            snprintf(msg, sizeof msg, "'collectives'.%s: a number >= 0", keys[i]);
            costs_error(L, name, msg);
        }
    }
    lua_pop(L, 1);
    check(L, pg, sc_prog_set_coll_cost(pg, x[0], x[1] > 0 ? 1 / x[1] : INFINITY));
}

/* ---- the model a cost file was measured on (docs/costs.md#the-model) ---- */

static const char *const model_keys[] = {"hidden", "layers", "vocab", "seq", "batch"};
#define NMODEL 5

/* The sizes of this program's model into x: the model `run` trains
 * (sc._run_model, set before it evaluates the recipe; layers 0: two per
 * stage), else the program's own (its `model` field). 0 when it has none. */
static int this_model(lua_State *L, sc_prog *pg, long *x)
{
    lua_getglobal(L, "sc");
    lua_pushliteral(L, "_run_model");
    int run = lua_istable(L, -2) && lua_rawget(L, -2) == LUA_TTABLE;
    for (int i = 0; run && i < NMODEL; i++) {
        lua_getfield(L, -1, model_keys[i]);
        x[i] = (long)lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    if (run) {
        if (x[1] <= 0)
            x[1] = 2L * sc_prog_stages(pg);
        return 1;
    }
    if (!sc_prog_has_model(pg))
        return 0;
    const sc_model_desc *md = sc_prog_model(pg);
    long v[NMODEL] = {md->hidden, md->layers, md->vocab, md->seq, md->batch};
    memcpy(x, v, sizeof v);
    return 1;
}

/* "hidden 64, layers 8, ..." of x into buf. */
static void sizes_text(const long *x, char *buf, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < NMODEL && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s %ld", i ? ", " : "", model_keys[i], x[i]);
}

/* Whether the module's flag `key` is set (raw: no Lua runs). */
static int module_flag(lua_State *L, const char *key)
{
    lua_getglobal(L, "sc");
    lua_pushstring(L, key);
    int yes = lua_istable(L, -2) && (lua_rawget(L, -2), lua_toboolean(L, -1));
    if (!lua_istable(L, -2))
        lua_pushnil(L);
    lua_pop(L, 2);
    return yes;
}

/* Warns once per file and kind (sc._costs_warned). */
static int first_warning(lua_State *L, const char *name, const char *kind)
{
    lua_getglobal(L, "sc");
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushliteral(L, "_costs_warned");
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushliteral(L, "_costs_warned");
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
    }
    lua_pushfstring(L, "%s\n%s", name, kind);
    int seen = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 1);
    if (!seen) {
        lua_pushfstring(L, "%s\n%s", name, kind);
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
    }
    lua_pop(L, 2);
    return !seen;
}

static void warn(const char *msg)
{
    fflush(stdout);
    fprintf(stderr, "stagecraft: warning: ");
    sc_fputs_clean(msg, stderr, 0);
    fputc('\n', stderr);
}

/* A cost file measured on another model than this program's is refused
 * (unless --force-costs: a warning), naming both; a file that records no
 * model (written by hand, or by another tool) is taken as it is. When the
 * models agree, the file's bytes of a unit serve caps in bytes. */
static void check_model(lua_State *L, int c, const char *name, sc_prog *pg)
{
    long mine[NMODEL], theirs[NMODEL];
    if (lua_getfield(L, c, "measured") != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    int m = lua_gettop(L), known = lua_getfield(L, m, "model") == LUA_TTABLE;
    for (int i = 0; known && i < NMODEL; i++) {
        lua_getfield(L, -1, model_keys[i]);
        theirs[i] = (long)lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    int same = 1, have = known && this_model(L, pg, mine);
    for (int i = 0; have && i < NMODEL; i++)
        same &= mine[i] == theirs[i];
    if (have && !same) {
        char a[160], b[160], where[200] = "", msg[1024];
        sizes_text(theirs, a, sizeof a);
        sizes_text(mine, b, sizeof b);
        lua_getfield(L, m, "recipe");
        lua_getfield(L, m, "backend");
        if (lua_isstring(L, -2) && lua_isstring(L, -1))
            snprintf(where, sizeof where, " (run --profile of %s on %s)", lua_tostring(L, -2),
                     lua_tostring(L, -1));
        lua_pop(L, 2);
        int force = module_flag(L, "_force_costs");
        snprintf(msg, sizeof msg, "cost file %s was measured on another model: %s%s; this %s's "
                 "is %s%s", name, a, where, module_flag(L, "_run_model") ? "run" : "program", b,
                 force ? " (used anyway: --force-costs)"
                       : ": profile this model (stagecraft run RECIPE --profile FILE with its "
                         "sizes), or give --force-costs to use the file anyway");
        if (!force)
            sc_lua_raise(L, SC_ERR_ARG, msg);
        if (first_warning(L, name, "model"))
            warn(msg);
    } else if (lua_getfield(L, m, "unit_bytes") == LUA_TNUMBER && lua_tonumber(L, -1) > 0) {
        sc_prog_set_byte_unit(pg, lua_tonumber(L, -1)); /* caps in bytes (mem.c) */
    }
    lua_settop(L, m - 1);
}

/* A profile is noisy when a stage time's interquartile range passes this
 * share of its median. */
#define SC_COSTS_NOISY 0.1

/* The largest spread of the stage times relative to their median (0
 * without spreads), what it is into what. */
static double costs_spread(lua_State *L, int c, char *what, size_t len)
{
    double worst = 0;
    what[0] = 0;
    if (lua_getfield(L, c, "spread") != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    int sp = lua_gettop(L);
    static const char *const keys[] = {"tf", "tb", "tw", "tbw"};
    for (int k = 0; k < 4; k++) {
        int a = lua_getfield(L, sp, keys[k]) == LUA_TTABLE;
        int b = lua_getfield(L, c, keys[k]) == LUA_TTABLE;
        lua_Integer n = a && b ? luaL_len(L, -1) : 0;
        for (lua_Integer s = 1; s <= n; s++) {
            lua_geti(L, -2, s);
            lua_geti(L, -2, s);
            double x = lua_tonumber(L, -2), med = lua_tonumber(L, -1);
            lua_pop(L, 2);
            if (med > 0 && x / med > worst) {
                worst = x / med;
                snprintf(what, len, "%s of s%lld varies by %.0f%% of its median (interquartile "
                         "range %.3g s of %.3g s)", keys[k], (long long)(s - 1), 100 * worst, x,
                         med);
            }
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    return worst;
}

/* A noisy profile: a warning with the figure (once per file). */
static void check_spread(lua_State *L, int c, const char *name)
{
    char what[200], msg[512];
    double rel = costs_spread(L, c, what, sizeof what);
    if (rel <= SC_COSTS_NOISY || !first_warning(L, name, "spread"))
        return;
    snprintf(msg, sizeof msg, "cost file %s: its profile is noisy: %s; predictions from it are "
             "no better than that (profile again on a quiet machine, or with run --profile-spread "
             "0.1 to repeat until it settles)", name, what);
    warn(msg);
}

/* Pushes the cost table of the program table at t: its field `costs`, or
 * without it the cost file of the recipe's parameters (-D costs=FILE;
 * sc._pcosts, set by sc.params): it overrides every other source of the
 * costs, and sc.params already turned P.tf and the others into its
 * seconds, so a program built from them without the file would be neither
 * the file's nor the recipe's. 0 (nothing pushed) when there is none. */
static int push_costs(lua_State *L, int t)
{
    if (lua_getfield(L, t, "costs") != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    int has = 0;
    if (lua_getglobal(L, "sc") == LUA_TTABLE) {
        lua_pushliteral(L, "_pcosts");
        has = lua_rawget(L, -2) == LUA_TTABLE;
        lua_remove(L, -2);
    }
    if (!has)
        lua_pop(L, 1);
    return has;
}

void sc_lua_apply_costs_fsdp(lua_State *L, int t, sc_prog *pg)
{
    sc_fsdp_cfg fc = *sc_prog_fsdp(pg);
    t = lua_absindex(L, t);
    if (!fc.dp || !push_costs(L, t))
        return;
    int c = lua_gettop(L), set = 0;
    if (lua_istable(L, c)) {
        lua_getfield(L, c, "file");
        const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(a table)";
        static const char *const fk[2] = {"fsdp_time", "reduce_time"};
        double *slot[2] = {&fc.time, &fc.reduce_time};
        for (int k = 0; k < 2; k++) {
            int ok = 1;
            if (lua_getfield(L, c, fk[k]) != LUA_TNIL) {
                double v = lua_tonumberx(L, -1, &ok);
                if (!ok || !(v >= 0) || !isfinite(v)) {
                    char msg[64];
                    snprintf(msg, sizeof msg, "'%s': a time must be a number >= 0", fk[k]);
                    costs_error(L, name, msg);
                }
                *slot[k] = v, set = 1;
            }
            lua_pop(L, 1);
        }
    }
    if (set)
        check(L, pg, sc_prog_set_fsdp(pg, &fc));
    lua_settop(L, c - 1);
}

void sc_lua_apply_costs(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    if (!push_costs(L, t))
        return;
    if (!lua_istable(L, -1))
        sc_lua_raise(L, SC_ERR_ARG, "program: 'costs' must be a cost table (sc.costs(FILE))");
    int c = lua_gettop(L);
    lua_getfield(L, c, "file");
    const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(a table)";
    int S = sc_prog_stages(pg);
    int ok, nil = lua_getfield(L, c, "stages") == LUA_TNIL;
    lua_Integer cs = lua_tointegerx(L, -1, &ok);
    lua_pop(L, 1);
    char msg[600];
    if (!ok) {
        snprintf(msg, sizeof msg, "'stages' is %s", nil ? "missing" : "not an integer");
        costs_error(L, name, msg);
    }
    int force = module_flag(L, "_force_costs");
    if (cs != S && (!force || cs < 1 || cs > SC_MAX_STAGES)) {
        snprintf(msg, sizeof msg, "'stages' is %lld, but the program has %d stages (profile a "
                 "recipe with %d stages: stagecraft run RECIPE --profile FILE; or give "
                 "--force-costs to share each stage's times among the program's)", (long long)cs,
                 S, S);
        costs_error(L, name, msg);
    }
    if (cs != S && first_warning(L, name, "stages")) {
        snprintf(msg, sizeof msg, "cost file %s: 'stages' is %lld, but the program has %d stages "
                 "(used anyway: --force-costs; each stage takes its share of the file's stages' "
                 "times)", name, (long long)cs, S);
        warn(msg);
    }
    check_model(L, c, name, pg);
    check_spread(L, c, name);
    /* The file's lists (F = cs values each), then the program's (S). */
    int F = (int)cs;
    double *x = lua_newuserdatauv(L, (8 * (size_t)F + 8 * (size_t)S) * sizeof(double), 0);
    double *in[8], *out[8];
    static const char *const keys[8] = {"tf", "tb", "tw", "tbw", "optim", "tfb", "dispatch",
                                        "combine"};
    int has[8];
    for (int k = 0; k < 8; k++) {
        in[k] = x + (size_t)k * F, out[k] = x + 8 * (size_t)F + (size_t)k * S;
        has[k] = cost_list(L, c, name, keys[k], F, k < 3, in[k], "stage");
        if (has[k])
            sc_costs_resample(in[k], F, out[k], S); /* the same values when F == S */
    }
    double tcomm = 0;
    int ty = lua_getfield(L, c, "tcomm");
    if (ty != LUA_TNIL) {
        tcomm = lua_tonumberx(L, -1, &ok);
        if (!ok || !(tcomm >= 0) || !isfinite(tcomm))
            costs_error(L, name, "'tcomm': a time must be a number >= 0");
    }
    lua_pop(L, 1);
    for (int s = 0; s < S; s++) {
        check(L, pg, sc_prog_set_cost(pg, s, out[0][s], out[1][s], out[2][s]));
        check(L, pg, sc_prog_set_cost_bw(pg, s, has[3] ? out[3][s] : NAN));
        check(L, pg, sc_prog_set_cost_optim(pg, s, has[4] ? out[4][s] : 0));
        if (has[5]) /* an overlapped pair of F and B (OVERLAP_F_B of a trace) */
            check(L, pg, sc_prog_set_cost_pair(pg, s, out[5][s]));
        if (has[6] || has[7]) /* expert parallelism's all-to-alls (ir/ep.h) */
            check(L, pg, sc_prog_set_ep_time(pg, s, (has[6] ? out[6][s] : 0) +
                                                        (has[7] ? out[7][s] : 0)));
    }
    check(L, pg, sc_prog_set_comm(pg, tcomm));
    apply_tok(L, c, name, F, pg);
    apply_vocab(L, c, name, pg);
    apply_colls(L, c, name, pg);
    sc_prog_set_seconds(pg, 1);
    lua_settop(L, c - 1);
}

/* sc._costs_resample(list, S): a cost file's per-stage list as S stages of
 * the same model (sc_costs_resample; --force-costs of a file of other
 * stages, for a recipe that reads the lists itself: 1f1b). */
static int l_costs_resample(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1), S = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 1 && n <= SC_MAX_STAGES, 1, "a list of stage times");
    luaL_argcheck(L, S >= 1 && S <= SC_MAX_STAGES, 2, "a number of stages");
    double *x = lua_newuserdatauv(L, (size_t)(n + S) * sizeof(double), 0);
    for (lua_Integer i = 0; i < n; i++) {
        lua_geti(L, 1, i + 1);
        x[i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    sc_costs_resample(x, (int)n, x + n, (int)S);
    lua_createtable(L, (int)S, 0);
    for (lua_Integer s = 0; s < S; s++) {
        lua_pushnumber(L, x[n + s]);
        lua_seti(L, -2, s + 1);
    }
    return 1;
}

void sc_lua_open_costs(lua_State *L)
{
    lua_pushcfunction(L, l_costs_resample);
    lua_setfield(L, -2, "_costs_resample");
    lua_pushcfunction(L, l_costs);
    lua_setfield(L, -2, "costs");
    lua_pushcfunction(L, l_costs_read);
    lua_setfield(L, -2, "_costs_read");
    lua_newtable(L); /* paths named on the command line (-D costs=FILE) */
    lua_setfield(L, -2, "_granted");
}
