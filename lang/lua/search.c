/*
 * search.c — the block search from Lua (sc.block_search,
 * sc.tradeoff): schedule/search.h's family on the placement of the table
 * (the V placement unless it names another), its best block a Block.
 * docs/blocks.md#blocks-as-values.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"
#include "fields.h"
#include "schedule/pairing.h"
#include "schedule/search.h"

#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"F", "B", "W", "BW"};


/* A copy of the table at t, the V placement unless it names one (and then
 * v = 2 unless it gives v; m = 2p by default), on the stack top. */
static int v_spec(lua_State *L, int t)
{
    lua_newtable(L);
    int c = lua_gettop(L);
    sc_lua_merge(L, c, t);
    int named = lua_getfield(L, c, "placement") != LUA_TNIL;
    lua_pop(L, 1);
    if (!named) {
        lua_pushliteral(L, "v");
        lua_setfield(L, c, "placement");
        lua_pushnil(L);
        lua_setfield(L, c, "stages");
        lua_pushinteger(L, 2);
        lua_setfield(L, c, "v");
    }
    lua_getfield(L, c, "p");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_getfield(L, c, "devices");
    }
    lua_Integer P = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, c, "m") == LUA_TNIL && P > 0) {
        lua_pushinteger(L, 2 * P);
        lua_setfield(L, c, "m");
    }
    lua_pop(L, 1);
    return c;
}

/* The search on the shape of table c; budgets[nb] in units, or (chunks)
 * in chunk activations (scaled here by a chunk's units). Leaves a holder
 * userdata on the stack (it frees the scratch program, and the orders
 * handed with one budget, in its sc_lua_block_hand slot) and returns the
 * candidates (malloc'd). */
static sc_vcand *run_search(lua_State *L, int c, double *budgets, int nb, int chunks, size_t *n,
                           sc_prog **pgout, int *holder)
{
    lua_Integer P, S, m;
    sc_lua_shape_sizes(L, c, -1, &P, &S, &m);
    sc_prog **slot = sc_lua_block_holder(L); /* frees the scratch program */
    *holder = lua_gettop(L);
    sc_lua_build_shape(L, c, P, S, m, slot);
    sc_prog *spg = *slot;
    lua_Integer kmax = (lua_Integer)sc_lua_num_field(L, c, "block_search", "kmax", 5);
    if (kmax < 1 || kmax > 32)
        sc_lua_raise(L, SC_ERR_ARG, "block_search: kmax must be within 1..32");
    for (int b = 0; chunks && b < nb; b++)
        budgets[b] *= sc_prog_mem(spg, 0);
    sc_vcand *cands;
    sc_block_hand **hand = sc_lua_block_hand(L, *holder);
    sc_lua_check_st(L, spg, sc_vblock_search(spg, (int)kmax, budgets, nb, &cands, n,
                                             nb == 1 ? hand : NULL));
    *pgout = spg;
    return cands;
}

static void push_cand(lua_State *L, const sc_vcand *c)
{
    lua_createtable(L, 0, 8);
    sc_lua_set_num(L, "k", c->pat.k);
    sc_lua_set_num(L, "af", c->pat.af);
    sc_lua_set_num(L, "aB", c->pat.aB);
    sc_lua_set_num(L, "ab", c->pat.ab);
    sc_lua_set_num(L, "peak", c->peak);
    sc_lua_set_num(L, "bubble_rate", c->bubble_rate);
    sc_lua_set_num(L, "makespan", c->makespan);
}

/* sc.block_search{p = , m = , costs..., mem = , kmax = , placement = }: the
 * best block under the memory limit, and its figures. */

static int l_block_search(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    sc_lua_check_fields(L, 1, "block_search", sc_fields_of(SC_FT_SEARCH));
    int c = v_spec(L, 1);
    double limit = sc_lua_num_field(L, c, "block_search", "mem", INFINITY);
    lua_pushnil(L);
    lua_setfield(L, c, "mem"); /* the limit picks among blocks; each keeps its own peak */
    size_t n;
    sc_prog *pg;
    int holder;
    sc_vcand *cands = run_search(L, c, &limit, 1, 0, &n, &pg, &holder);
    lua_pushnil(L);
    lua_setfield(L, c, "kmax"); /* a field of the search, not of the Block */
    const sc_vcand *b = sc_vcand_best(cands, n, limit);
    if (!b) {
        double least = INFINITY;
        for (size_t i = 0; i < n; i++)
            least = fmin(least, cands[i].peak);
        free(cands);
        sc_lua_mark_cap_refused(L);
        return sc_lua_raisef(L, SC_ERR_PROGRAM, "block_search: no block fits mem = %g (the least peak "
                      "is %g)", limit, least);
    }
    sc_vcand best = *b;
    int S = sc_prog_stages(pg);
    double *off = lua_newuserdatauv(L, 3 * (size_t)S * sizeof(double), 0);
    sc_block blk;
    sc_status st = sc_vpattern_block(pg, &best.pat, off, &blk);
    free(cands);
    sc_lua_check_st(L, pg, st);
    /* The Block: the spec with the offsets found. */
    lua_pushcfunction(L, sc_lua_block_new);
    lua_pushvalue(L, c);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "slots");
    sc_lua_set_int(L, "interval", 3 * (S / sc_prog_devices(pg)));
    if (sc_prog_pair_gain(pg) > 0) { /* its program joins pairs (docs/blocks.md#pairing), */
        lua_pushboolean(L, 1);       /* within the block's peak as the search did */
        lua_setfield(L, -2, "pairs");
        if (limit == INFINITY)
            limit = best.peak;
    }
    for (int k = 0; k < 2; k++) {
        lua_createtable(L, S, 0);
        for (int s = 0; s < S; s++) {
            lua_pushnumber(L, off[k * S + s]);
            lua_seti(L, -2, s + 1);
        }
        lua_setfield(L, -2, kinds[k]);
    }
    if (limit != INFINITY) {
        sc_lua_set_num(L, "mem", limit);
    }
    lua_call(L, 1, 1);
    /* the search's orders of this block go with it (the holder is below) */
    sc_block_hand **hand = sc_lua_block_hand(L, holder);
    *sc_lua_block_hand(L, -1) = *hand;
    *hand = NULL;
    push_cand(L, &best);
    sc_lua_set_int(L, "candidates", (lua_Integer)n);
    return 2;
}

/* sc.tradeoff{p = , m = , costs...}: for memory budgets of p to 2p chunk
 * activations, the least bubble of a V block within each. */
static int l_tradeoff(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    sc_lua_check_fields(L, 1, "tradeoff", sc_fields_of(SC_FT_SEARCH));
    int c = v_spec(L, 1);
    lua_pushnil(L);
    lua_setfield(L, c, "mem");
    lua_Integer P, S, m;
    sc_lua_shape_sizes(L, c, -1, &P, &S, &m);
    /* budgets in chunk activations; run_search scales them by a chunk's units */
    double *budgets = lua_newuserdatauv(L, (size_t)(P + 1) * sizeof *budgets, 0);
    for (lua_Integer b = P; b <= 2 * P; b++)
        budgets[b - P] = (double)b;
    size_t n;
    sc_prog *pg;
    int holder;
    sc_vcand *cands = run_search(L, c, budgets, (int)P + 1, 1, &n, &pg, &holder);
    double unit = sc_prog_mem(pg, 0); /* one chunk's activation */
    lua_createtable(L, (int)P + 1, 0);
    for (lua_Integer b = P; b <= 2 * P; b++) {
        const sc_vcand *best = sc_vcand_best(cands, n, (double)b * unit);
        if (best)
            push_cand(L, best);
        else
            lua_createtable(L, 0, 2);
        sc_lua_set_num(L, "chunks", (double)b);
        sc_lua_set_num(L, "mem", (double)b * unit);
        lua_seti(L, -2, b - P + 1);
    }
    free(cands);
    return 1;
}


void sc_lua_open_search(lua_State *L, int mod)
{
    lua_pushcfunction(L, l_block_search);
    lua_setfield(L, mod, "block_search");
    lua_pushcfunction(L, l_tradeoff);
    lua_setfield(L, mod, "tradeoff");
}
