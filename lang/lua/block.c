/*
 * block.c — building blocks in Lua: the `block` field of sc.program,
 * the Block type (sc.block) with its lifespans and peak memory, and the block
 * search (sc.block_search, sc.tradeoff). docs/blocks.md#building-blocks,
 * docs/blocks.md#blocks-as-values.
 */
#include <lauxlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/block.h"
#include "schedule/block_hand.h"
#include "sc_lua.h"
#include "sc_lua_impl.h"
#include "fields.h"
#include "schedule/search.h"

#define SC_BLOCK_MT "stagecraft.Block"

static const char *const kinds[] = {"F", "B", "W", "BW"};

/* Block userdata: its shape and costs (a program with no passes), the
 * offsets, where it was built, the orders handed with it (or NULL). The
 * spec table is its user value. */
typedef struct lblock {
    sc_prog *pg;
    double *off; /* [4*S] */
    sc_block blk;
    sc_block_hand *hand;
    char where[160];
} lblock;

/* n numbers of the list at the stack top into out. */
static void read_list(lua_State *L, const char *what, const char *name, int n, double *out)
{
    if (!lua_istable(L, -1))
        sc_lua_raisef(L, SC_ERR_ARG, "block: '%s%s' must be a list of offsets", what, name);
    if ((int)luaL_len(L, -1) != n)
        sc_lua_raisef(L, SC_ERR_ARG, "block: '%s%s' lists %d offsets, but %d are needed", what, name,
               (int)luaL_len(L, -1), n);
    for (int i = 0; i < n; i++) {
        lua_geti(L, -1, i + 1);
        int ok;
        out[i] = lua_tonumberx(L, -1, &ok);
        if (!ok)
            sc_lua_raisef(L, SC_ERR_ARG, "block: '%s%s'[%d] is not a number", what, name, i + 1);
        lua_pop(L, 1);
    }
}

static int max_chunks(const sc_prog *pg)
{
    int c = 1;
    for (int d = 0; d < sc_prog_devices(pg); d++)
        if (sc_prog_chunks(pg, d) > c)
            c = sc_prog_chunks(pg, d);
    return c;
}

/* The compact form: first = {F = {...}, B = {...}}, delta = {...}, one
 * number per chunk. */
static void parse_compact(lua_State *L, int b, sc_prog *pg, double *off, sc_block *blk)
{
    int C = max_chunks(pg), S = sc_prog_stages(pg);
    double first[64], delta[64];
    if (C > 64)
        sc_lua_raisef(L, SC_ERR_ARG, "block: the compact form allows at most 64 chunks per device");
    lua_getfield(L, b, "first");
    lua_getfield(L, b, "delta");
    if (!lua_istable(L, -2))
        sc_lua_raisef(L, SC_ERR_ARG, "block: 'first' must be a table {F = {...}, B = {...}}");
    if (!lua_isnil(L, -1) && !lua_istable(L, -1))
        sc_lua_raisef(L, SC_ERR_ARG, "block: 'delta' must be a table {F = {...}, B = {...}}");
    sc_lua_check_fields(L, -2, "block: first", sc_fields_of(SC_FT_OFFSETS));
    if (lua_istable(L, -1))
        sc_lua_check_fields(L, -1, "block: delta", sc_fields_of(SC_FT_OFFSETS));
    for (int k = 0; k < 4; k++) {
        if (lua_getfield(L, -2, kinds[k]) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        read_list(L, "first.", kinds[k], C, first);
        lua_pop(L, 1);
        for (int c = 0; c < C; c++)
            delta[c] = 0;
        if (lua_istable(L, -1)) {
            if (lua_getfield(L, -1, kinds[k]) != LUA_TNIL)
                read_list(L, "delta.", kinds[k], C, delta);
            lua_pop(L, 1);
        }
        sc_block_pattern(pg, first, delta, off + k * S);
        blk->off[k] = off + k * S;
    }
    lua_pop(L, 2);
}

/* The block spec in the table at b (interval, slots, reorder, overlap, offsets) into
 * blk, offsets stored in off[4*S] (and a split vocabulary's, one per device,
 * in off[4*S + 4*P]). W missing beside F and B: placed. */
static void parse_block(lua_State *L, int b, sc_prog *pg, double *off, sc_block *blk)
{
    int S = sc_prog_stages(pg), P = sc_prog_devices(pg);
    memset(blk, 0, sizeof *blk);
    static const char *const vkinds[] = {"S", "T", "E", "EW"};
    for (int k = 0; k < 4; k++) {
        if (lua_getfield(L, b, vkinds[k]) != LUA_TNIL) {
            read_list(L, "", vkinds[k], P, off + 4 * (size_t)S + (size_t)k * P);
            blk->voff[k] = off + 4 * (size_t)S + (size_t)k * P;
        }
        lua_pop(L, 1);
    }
    int compact = lua_getfield(L, b, "first") != LUA_TNIL;
    lua_pop(L, 1);
    for (int k = 0; k < 4; k++) {
        if (lua_getfield(L, b, kinds[k]) != LUA_TNIL) {
            if (compact)
                sc_lua_raisef(L, SC_ERR_ARG,
                       "block: give offsets per stage ('%s') or 'first' and 'delta', not both",
                       kinds[k]);
            read_list(L, "", kinds[k], S, off + k * S);
            blk->off[k] = off + k * S;
        }
        lua_pop(L, 1);
    }
    if (compact)
        parse_compact(L, b, pg, off, blk);
    blk->interval = sc_lua_num_field(L, b, "block", "interval", NAN);
    lua_getfield(L, b, "slots");
    blk->slots = lua_toboolean(L, -1);
    lua_getfield(L, b, "reorder");
    blk->keep_order = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
    lua_getfield(L, b, "overlap");
    blk->overlap = lua_toboolean(L, -1);
    lua_pop(L, 3);
    if (!blk->off[SC_OP_F])
        sc_lua_raise(L, SC_ERR_ARG, "block: offsets 'F' are missing");
    if (blk->off[SC_OP_BW] && (blk->off[SC_OP_B] || blk->off[SC_OP_W]))
        sc_lua_raise(L, SC_ERR_ARG, "block: give offsets for BW, or for B and W, not both");
    if (!blk->off[SC_OP_BW] && !blk->off[SC_OP_B])
        sc_lua_raise(L, SC_ERR_ARG, "block: offsets 'B' (or 'BW') are missing");
    if (blk->off[SC_OP_B] && !blk->off[SC_OP_W]) {
        if (!(blk->interval > 0) || !isfinite(blk->interval))
            sc_lua_check_st(L, pg, sc_block_check(pg, blk)); /* names the interval */
        sc_lua_check_st(L, pg, sc_block_place_w(pg, blk, off + SC_OP_W * S));
        blk->off[SC_OP_W] = off + SC_OP_W * S;
    }
}

static lblock *toblock(lua_State *L, int i) { return luaL_testudata(L, i, SC_BLOCK_MT); }

static lblock *checkblock(lua_State *L, int i)
{
    lblock *lb = luaL_checkudata(L, i, SC_BLOCK_MT);
    if (!lb->pg)
        luaL_error(L, "the block is closed");
    return lb;
}

void sc_lua_fill_block(lua_State *L, int t, sc_prog *pg)
{
    int S = sc_prog_stages(pg), P = sc_prog_devices(pg);
    size_t noff = 4 * (size_t)S + 4 * (size_t)P; /* the stages', then the vocabulary's */
    lua_getfield(L, t, "block");
    int b = lua_gettop(L);
    double *off = lua_newuserdatauv(L, noff * sizeof(double), 0);
    sc_block blk;
    lblock *lb = toblock(L, b);
    if (lb) {
        if (!lb->pg || sc_prog_stages(lb->pg) != S)
            sc_lua_raisef(L, SC_ERR_ARG, "program: the block has %d stages, the program %d",
                   lb->pg ? sc_prog_stages(lb->pg) : 0, S);
        if (sc_prog_devices(lb->pg) != P)
            sc_lua_raisef(L, SC_ERR_ARG, "program: the block has %d devices, the program %d",
                   sc_prog_devices(lb->pg), P);
        memcpy(off, lb->off, noff * sizeof(double));
        blk = lb->blk;
        for (int k = 0; k < 4; k++) {
            blk.off[k] = lb->blk.off[k] ? off + k * S : NULL;
            blk.voff[k] = lb->blk.voff[k] ? off + 4 * (size_t)S + (size_t)k * P : NULL;
        }
        lua_getfield(L, t, "reorder"); /* the program's own choice wins */
        if (lua_isboolean(L, -1))
            blk.keep_order = !lua_toboolean(L, -1);
        lua_pop(L, 1);
    } else if (lua_istable(L, b)) {
        sc_lua_check_fields(L, b, "block", sc_fields_of(SC_FT_BLOCK_SPEC));
        parse_block(L, b, pg, off, &blk);
    } else {
        sc_lua_raise(L, SC_ERR_ARG,
                     "program: 'block' must be a Block or a table {interval=T, F={...}, BW={...}}");
    }
    /* A Block from the search hands its reordered orders on: installed
     * when every input of the unroll is the search's (block_hand.h). */
    sc_lua_check_st(L, pg, sc_block_unroll_hand(pg, &blk, lb ? lb->hand : NULL));
    lua_settop(L, b - 1);
}

/* ---- the Block type ---------------------------------------------------- */

/* sc.block{...}: the shape fields of sc.program (m optional) and the block
 * fields at the top level. Raises if the block is invalid. */
int sc_lua_block_new(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    sc_lua_check_fields(L, 1, "block", sc_fields_of(SC_FT_BLOCK));
    lua_Integer P, S, m;
    sc_lua_shape_sizes(L, 1, 1, &P, &S, &m);
    lblock *lb = lua_newuserdatauv(L, sizeof *lb, 1);
    memset(lb, 0, sizeof *lb);
    luaL_setmetatable(L, SC_BLOCK_MT);
    int ud = lua_gettop(L);
    luaL_where(L, 1);
    snprintf(lb->where, sizeof lb->where, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    sc_lua_build_shape(L, 1, P, S, m, &lb->pg);
    lb->off = calloc(4 * (size_t)S + 4 * (size_t)P, sizeof(double));
    if (!lb->off)
        return luaL_error(L, "out of memory");
    parse_block(L, 1, lb->pg, lb->off, &lb->blk);
    sc_lua_check_st(L, lb->pg, sc_block_check(lb->pg, &lb->blk));
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, ud, 1);
    lua_settop(L, ud);
    return 1;
}

static int l_block_valid(lua_State *L)
{
    lblock *lb = checkblock(L, 1);
    sc_status st = sc_block_check(lb->pg, &lb->blk);
    lua_pushboolean(L, st == SC_OK);
    if (st)
        lua_pushstring(L, sc_errmsg(lb->pg));
    return st ? 2 : 1;
}

static int l_block_lifespans(lua_State *L)
{
    lblock *lb = checkblock(L, 1);
    int S = sc_prog_stages(lb->pg);
    sc_lifespan *ls = lua_newuserdatauv(L, (size_t)S * sizeof *ls, 0);
    sc_lua_check_st(L, lb->pg, sc_block_lifespans(lb->pg, &lb->blk, ls));
    lua_createtable(L, S, 0);
    for (int s = 0; s < S; s++) {
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, ls[s].stage);
        lua_setfield(L, -2, "stage");
        lua_pushinteger(L, ls[s].device);
        lua_setfield(L, -2, "device");
        lua_pushnumber(L, ls[s].start);
        lua_setfield(L, -2, "start");
        lua_pushnumber(L, ls[s].end);
        lua_setfield(L, -2, "end");
        lua_pushnumber(L, ls[s].end - ls[s].start);
        lua_setfield(L, -2, "length");
        lua_pushnumber(L, ls[s].b_end);
        lua_setfield(L, -2, "b_end");
        lua_seti(L, -2, s + 1);
    }
    return 1;
}

static int l_block_peak(lua_State *L)
{
    lblock *lb = checkblock(L, 1);
    int P = sc_prog_devices(lb->pg);
    double *peak = lua_newuserdatauv(L, (size_t)P * sizeof *peak, 0);
    sc_lua_check_st(L, lb->pg, sc_block_peak(lb->pg, &lb->blk, peak));
    double mx = 0;
    lua_createtable(L, P, 0);
    for (int d = 0; d < P; d++) {
        lua_pushnumber(L, peak[d]);
        lua_seti(L, -2, d + 1);
        mx = fmax(mx, peak[d]);
    }
    lua_pushnumber(L, mx);
    return 2;
}

static int l_block_offsets(lua_State *L)
{
    lblock *lb = checkblock(L, 1);
    int S = sc_prog_stages(lb->pg);
    lua_newtable(L);
    for (int k = 0; k < 4; k++) {
        if (!lb->blk.off[k])
            continue;
        lua_createtable(L, S, 0);
        for (int s = 0; s < S; s++) {
            lua_pushnumber(L, lb->blk.off[k][s]);
            lua_seti(L, -2, s + 1);
        }
        lua_setfield(L, -2, kinds[k]);
    }
    static const char *const vkinds[] = {"S", "T", "E", "EW"};
    int P = sc_prog_devices(lb->pg);
    for (int k = 0; k < 4; k++) {
        if (!lb->blk.voff[k])
            continue;
        lua_createtable(L, P, 0); /* one per device */
        for (int d = 0; d < P; d++) {
            lua_pushnumber(L, lb->blk.voff[k][d]);
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -2, vkinds[k]);
    }
    return 1;
}

/* Sets every field of the table at src in the table at dst. */
void sc_lua_merge(lua_State *L, int dst, int src)
{
    src = lua_absindex(L, src);
    lua_pushnil(L);
    while (lua_next(L, src)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, dst);
    }
}

/* blk:program{m = ..., mem = ...}: sc.program with the block's fields,
 * overridden by the table given. */
static int l_block_program(lua_State *L)
{
    checkblock(L, 1);
    int over = lua_istable(L, 2) ? 2 : 0;
    lua_newtable(L);
    int t = lua_gettop(L);
    lua_getiuservalue(L, 1, 1);
    sc_lua_merge(L, t, -1);
    lua_pop(L, 1);
    if (over)
        sc_lua_merge(L, t, over);
    /* The offsets and the block's own fields travel in the Block: those
     * of a block table that sc.program does not take. */
    const char *const *own = sc_fields_of(SC_FT_BLOCK_SPEC);
    for (int k = 0; own[k]; k++)
        if (!sc_field_in(own[k], SC_FT_PROGRAM)) {
            lua_pushnil(L);
            lua_setfield(L, t, own[k]);
        }
    lua_pushvalue(L, 1);
    lua_setfield(L, t, "block");
    lua_getfield(L, lua_upvalueindex(1), "program");
    lua_pushvalue(L, t);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        /* Raised inside sc.program, a C function called from C: give it
         * the position of the blk:program call, and keep its exit code. */
        int code = sc_lua_exit_for(L, -1);
        if (lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        if (code)
            sc_lua_mark(L, -1, code);
        return lua_error(L);
    }
    return 1;
}

static int l_block_gc(lua_State *L)
{
    lblock *lb = luaL_checkudata(L, 1, SC_BLOCK_MT);
    sc_prog_free(lb->pg);
    free(lb->off);
    sc_block_hand_free(lb->hand);
    lb->pg = NULL;
    lb->off = NULL;
    lb->hand = NULL;
    return 0;
}

static int l_block_tostring(lua_State *L)
{
    lblock *lb = luaL_checkudata(L, 1, SC_BLOCK_MT);
    if (!lb->pg) {
        lua_pushliteral(L, "Block (closed)");
        return 1;
    }
    int P = sc_prog_devices(lb->pg);
    double mx = 0, *peak = malloc((size_t)P * sizeof *peak);
    if (peak && sc_block_peak(lb->pg, &lb->blk, peak) == SC_OK)
        for (int d = 0; d < P; d++)
            mx = fmax(mx, peak[d]);
    free(peak);
    char buf[200];
    snprintf(buf, sizeof buf, "Block(%d devices, %d stages, interval %g%s, peak %g units)", P,
             sc_prog_stages(lb->pg), lb->blk.interval, lb->blk.slots ? " slots" : "", mx);
    lua_pushstring(L, buf);
    return 1;
}

#define LB(b) ((const lblock *)(b))
static void get_devices(lua_State *L, const void *b)
{
    lua_pushinteger(L, sc_prog_devices(LB(b)->pg));
}
static void get_stages(lua_State *L, const void *b)
{
    lua_pushinteger(L, sc_prog_stages(LB(b)->pg));
}
static void get_interval(lua_State *L, const void *b) { lua_pushnumber(L, LB(b)->blk.interval); }
static void get_slots(lua_State *L, const void *b) { lua_pushboolean(L, LB(b)->blk.slots); }
static void get_overlap(lua_State *L, const void *b) { lua_pushboolean(L, LB(b)->blk.overlap); }

/* The fields a Block reads (docs/blocks.md#blocks-as-values). */
static const sc_lua_getter block_fields[] = {
    {"devices", get_devices}, {"stages", get_stages}, {"interval", get_interval},
    {"slots", get_slots},     {"overlap", get_overlap}, {NULL, NULL},
};

static int l_block_index(lua_State *L)
{
    return sc_lua_index(L, "Block", checkblock(L, 1), block_fields);
}

static int l_isblock(lua_State *L)
{
    lua_pushboolean(L, toblock(L, 1) != NULL);
    return 1;
}


sc_prog **sc_lua_block_holder(lua_State *L)
{
    lblock *lb = lua_newuserdatauv(L, sizeof *lb, 1);
    memset(lb, 0, sizeof *lb);
    luaL_setmetatable(L, SC_BLOCK_MT);
    return &lb->pg;
}

sc_block_hand **sc_lua_block_hand(lua_State *L, int idx)
{
    return &((lblock *)luaL_checkudata(L, idx, SC_BLOCK_MT))->hand;
}

void sc_lua_open_block(lua_State *L)
{
    int mod = lua_gettop(L);
    static const luaL_Reg meta[] = {
        {"__gc", l_block_gc},       {"__close", l_block_gc},
        {"__tostring", l_block_tostring}, {"__index", l_block_index},
        {NULL, NULL},
    };
    static const luaL_Reg methods[] = {
        {"valid", l_block_valid},   {"lifespans", l_block_lifespans},
        {"peak", l_block_peak},     {"offsets", l_block_offsets},
        {"program", l_block_program}, {NULL, NULL},
    };
    if (luaL_newmetatable(L, SC_BLOCK_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlibtable(L, methods);
        lua_pushvalue(L, mod);
        luaL_setfuncs(L, methods, 1);
        lua_setfield(L, -2, "__methods");
        sc_lua_set_getters(L, block_fields); /* REPL completion, :help block */
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, sc_lua_block_new);
    lua_setfield(L, mod, "block");
    lua_pushcfunction(L, l_isblock);
    lua_setfield(L, mod, "isblock");
}
