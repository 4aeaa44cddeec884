/*
 * program_export.c — drawing and exporting a Program from Lua
 * (docs/language.md#the-program-type-and-the-module): p:export(format [, file
 * [, opts]]), p:svg([file [, opts]]), p:trace([file [, opts]]). Without a file
 * the text is returned; with one it is written whole or not at all
 * (sc_write_atomic_at), to a path the sandbox allows (sc_sandbox_write_path:
 * in the folder granted by --allow-write, through its descriptor, when a
 * recipe or script is being evaluated; anywhere from the REPL).
 *
 *     > p = sc.load("zb-h1", {p = 4, m = 8})
 *     > p:svg("zb.svg")
 *     > csv = p:export("torch-csv")
 */
#include "sc_lua.h"
#include "fields.h"
#include "sc_lua_impl.h"

#include <fcntl.h> /* AT_FDCWD */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "formats/json.h"
#include "formats/svg.h"
#include "formats/export.h"
#include "formats/torchcsv.h"
#include "formats/trace.h"
#include "ir/p2p.h"
#include "sandbox/sandbox.h"


static sc_lprog *checkprog(lua_State *L, int i)
{
    sc_lprog *lp = luaL_checkudata(L, i, SC_PROGRAM_MT);
    if (!lp->pg)
        luaL_error(L, "the program is closed");
    return lp;
}

/* Writes the format into f. */
static sc_status render(FILE *f, const char *fm, sc_lprog *lp, const sc_sim *sim,
                        const char *title, const sc_svg_opts *so)
{
    if (strcmp(fm, "torch-csv") == 0)
        return sc_torchcsv_write(f, lp->pg, SC_TORCH_COMPUTE_ONLY, SC_TORCH_CURRENT);
    if (strcmp(fm, "torch-csv-comms") == 0)
        return sc_torchcsv_write(f, lp->pg, SC_TORCH_COMPUTE_COMMS, SC_TORCH_CURRENT);
    if (strcmp(fm, "json") == 0)
        return sc_json_write(f, lp->pg, sim, title);
    if (strcmp(fm, "svg") == 0)
        return sc_svg_write_opts(f, lp->pg, sim, title, so);
    sc_timing t = {sim, "simulated", sc_prog_seconds(lp->pg) ? 1e6 : 0}; /* as the CLI's */
    return sc_trace_write(f, lp->pg, &t, 1);
}

static int push_light(lua_State *L)
{
    lua_pushlstring(L, lua_touserdata(L, 1), (size_t)lua_tointeger(L, 2));
    return 1;
}

/* export(self, format, file, opts) with the format at index 2. */
static int do_export(lua_State *L)
{
    sc_lprog *lp = checkprog(L, 1);
    const char *fm = luaL_checkstring(L, 2);
    if (sc_export_format_named(fm) < 0)
        return luaL_error(L, "export: unknown format '%s' (%s)", fm, sc_export_format_list());
    const char *file = luaL_optstring(L, 3, NULL);
    sc_svg_opts so = {0};
    const char *title = "program";
    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        sc_lua_check_fields(L, 4, "export: options", sc_fields_of(SC_FT_EXPORT));
        if (lua_getfield(L, 4, "title") != LUA_TNIL)
            title = luaL_checkstring(L, -1); /* anchored in the table */
        lua_pop(L, 1);
        so.width = (int)sc_lua_num_field(L, 4, "export", "width", 0);
        so.from = sc_lua_num_field(L, 4, "export", "from", 0);
        so.to = sc_lua_num_field(L, 4, "export", "to", 0);
    }
    /* The path first: a refused path raises before anything is allocated.
     * A sandboxed one is relative to the granted folder's descriptor. */
    int dirfd = AT_FDCWD;
    const char *path = file ? sc_sandbox_write_path(L, file, fm, &dirfd) : NULL;
    /* A compute_comms file is lowered for its own reading
     * (docs/semantics.md#lowering-per-mode); the program goes back to its
     * target after, so that p:sim() still times the streams. */
    int comms = strcmp(fm, "torch-csv-comms") == 0, was = sc_prog_lower_target(lp->pg);
    sc_status st = comms ? sc_lua_set_lower_target(lp, SC_LOWER_FILE) : SC_OK;
    /* the simulation verifies too, in the replay that times it */
    const sc_sim *sim = st ? NULL : sc_lua_sim(lp, &st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = st ? NULL : open_memstream(&buf, &len);
    if (f) {
        st = render(f, fm, lp, sim, title, &so);
        if (fclose(f) != 0 && st == SC_OK)
            st = SC_ERR_NOMEM;
    }
    if (comms) /* leaves the program's message as it is */
        sc_lua_set_lower_target(lp, was);
    if (!sim) {
        lua_pushfstring(L, "%s%s", lp->where, sc_errmsg(lp->pg));
        return sc_lua_throw(L, sc_status_exit_code(st));
    }
    if (!f && !st)
        return luaL_error(L, "out of memory");
    if (st) {
        free(buf);
        if (st == SC_ERR_NOMEM)
            return luaL_error(L, "out of memory");
        lua_pushfstring(L, "export: %s", sc_errmsg(lp->pg));
        return sc_lua_throw(L, sc_status_exit_code(st));
    }
    if (path) {
        char err[512];
        int rc = sc_write_atomic_at(dirfd, path, file, buf, len, err, sizeof err);
        free(buf);
        if (rc != 0) {
            lua_pushstring(L, err);
            return sc_lua_throw(L, SC_EXIT_USAGE);
        }
        lua_pushboolean(L, 1);
        return 1;
    }
    /* The text, freed also when Lua cannot copy it. */
    lua_pushcfunction(L, push_light);
    lua_pushlightuserdata(L, buf);
    lua_pushinteger(L, (lua_Integer)len);
    int rc = lua_pcall(L, 2, 1, 0);
    free(buf);
    return rc == LUA_OK ? 1 : lua_error(L);
}

/* p:export(format [, file [, opts]]) */
static int l_export(lua_State *L)
{
    lua_settop(L, 4);
    return do_export(L);
}

/* p:svg([file [, opts]]), p:trace([file [, opts]]): p:export with the
 * format named; an options table may come in the file's place. */
static int with_format(lua_State *L, const char *fm)
{
    lua_settop(L, 3);
    if (lua_istable(L, 2)) { /* p:svg{width = 2000}: options, no file */
        lua_pushvalue(L, 2);
        lua_replace(L, 3);
        lua_pushnil(L);
        lua_replace(L, 2);
    }
    lua_pushstring(L, fm);
    lua_insert(L, 2);
    return do_export(L);
}

static int l_svg(lua_State *L) { return with_format(L, "svg"); }
static int l_trace(lua_State *L) { return with_format(L, "trace"); }

void sc_lua_open_export(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"export", l_export},
        {"svg", l_svg},
        {"trace", l_trace},
        {NULL, NULL},
    };
    luaL_getmetatable(L, SC_PROGRAM_MT);
    lua_getfield(L, -1, "__methods");
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 2);
}
