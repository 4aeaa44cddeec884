/*
 * stagecraft.c — libstagecraft, the public C API (include/stagecraft.h,
 * docs/embed.md). A context is a Lua state set up as the command line's
 * (the module, the sandbox, the limits, sealed: recipes are strangers'
 * code); a program is a Program userdata anchored in its registry. The
 * work is the module's own: sc._evaluate loads a recipe exactly as
 * `stagecraft sim` does, p:export renders, sc_lua_check and sc_lua_sim
 * compile and simulate.
 *
 * Every Lua call runs under lua_pcall (no error escapes to the host's
 * stack, nothing longjmps over it), and every entry first makes this
 * context's limits the ones interp's allocator charges (sc_limits_use):
 * the hook is one per process, and two contexts must each count their own
 * programs.
 */
#include <stagecraft.h> /* include/: the public header, as its users include it */

#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "engine/engine.h"
#include "engine/export_out.h"
#include "engine/sim_out.h"
#include "formats/atomic.h"
#include "formats/jsonw.h"
#include "ir/p2p.h"
#include "lua/auto.h"
#include "lua/sc_lua.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

/* The public codes are the exit codes of lang/'s table (SC_EXITS). */
#define S(name, status, code, text) _Static_assert(STAGECRAFT_##name == code, #name);
#define E(name, code, text) _Static_assert(STAGECRAFT_##name == code, #name);
SC_EXITS(S, E)
#undef S
#undef E

struct stagecraft_program {
    stagecraft *sc;
    int ref;       /* the Program in the registry */
    char *recipe;  /* as loaded: the name of `sim --json` and of exports */
    char *text;    /* the last export_text */
    char *figures; /* the last figures_json */
    stagecraft_program *prev, *next;
};

void sc_api_keep_free(keep *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->p[i]);
    free(k->p);
    memset(k, 0, sizeof *k);
}

void *sc_api_keep(keep *k, size_t n)
{
    if (k->n == k->cap) {
        int cap = k->cap ? 2 * k->cap : 16;
        void **p = realloc(k->p, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        k->p = p, k->cap = cap;
    }
    void *b = calloc(1, n ? n : 1);
    if (b)
        k->p[k->n++] = b;
    return b;
}

const char *sc_api_keep_str(keep *k, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *b = sc_api_keep(k, n);
    if (b)
        memcpy(b, s, n);
    return b;
}

const char *stagecraft_version(void) { return SC_VERSION; }

const char *stagecraft_code_name(int code)
{
    int c;
    const char *name, *text;
    for (int i = 0; sc_exit_row(i, &c, &name, &text); i++)
        if (c == code)
            return text;
    return "unknown code";
}

#define fail sc_api_fail
int sc_api_fail(stagecraft *sc, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->err, sizeof sc->err, fmt, ap);
    va_end(ap);
    return code;
}

int sc_api_enter(stagecraft *sc, int ok, const char *need)
{
    if (!sc)
        return STAGECRAFT_USAGE;
    sc->err[0] = 0;
    return ok ? STAGECRAFT_OK : fail(sc, STAGECRAFT_USAGE, "%s", need);
}

/* The error on the stack top (a limit named as such): its code, its
 * message into sc->err; pops it. */
static int fail_lua(stagecraft *sc)
{
    lua_State *L = sc->L;
    sc_limits_error(L);
    int code = sc_lua_exit_for(L, -1);
    const char *msg = lua_tostring(L, -1);
    fail(sc, code ? code : STAGECRAFT_RECIPE, "%s", msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
    return code ? code : STAGECRAFT_RECIPE;
}

/* An interp failure of program pg (status st): the limit's message when
 * the memory limit refused a C allocation, else where the program was
 * built and interp's message. */
static int fail_status(stagecraft *sc, sc_status st, const sc_lprog *lp)
{
    char msg[512];
    if (st == SC_ERR_NOMEM && sc_limits_message(&sc->lim, msg, sizeof msg))
        return fail(sc, STAGECRAFT_LIMIT, "%s", msg);
    return fail(sc, sc_status_exit_code(st), "%s%s", lp->where, sc_errmsg(lp->pg));
}

static int do_setup(lua_State *L)
{
    sc_eng_setup(L); /* the module with the engine's sc.plan, sc.compare */
    return 0;
}

stagecraft *stagecraft_open(void)
{
    stagecraft *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc_limits def = SC_LIMITS_DEFAULT;
    sc->lim = def;
    sc->L = sc_limits_newstate(&sc->lim);
    if (!sc->L) {
        free(sc);
        return NULL;
    }
    lua_State *L = sc->L;
    lua_pushcfunction(L, do_setup);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        sc_limits_close(L);
        free(sc);
        return NULL;
    }
    sc_sandbox_seal(L); /* no files outside an evaluation: recipes are strangers' */
    return sc;
}

void stagecraft_close(stagecraft *sc)
{
    if (!sc)
        return;
    sc_limits_use(sc->L);
    while (sc->progs)
        stagecraft_program_free(sc->progs);
    sc_api_keep_free(&sc->plan_kept);
    sc_api_keep_free(&sc->compare_kept);
    free(sc->json);
    sc_limits_close(sc->L);
    free(sc);
}

const char *stagecraft_errmsg(const stagecraft *sc) { return sc ? sc->err : "no context"; }

int stagecraft_limits(stagecraft *sc, long long max_steps, size_t max_mem, double max_time)
{
    if (!sc)
        return STAGECRAFT_USAGE;
    sc->err[0] = 0;
    if (max_steps < 0 || !(max_time >= 0) || max_time > 1e9)
        return fail(sc, STAGECRAFT_USAGE, "limits must be >= 0 (max_time at most 1e9 s)");
    sc->lim.max_steps = max_steps;
    sc->lim.max_mem = max_mem;
    sc->lim.max_time = max_time;
    return STAGECRAFT_OK;
}

/* The module table (package.loaded.stagecraft), pushed. */
static void push_module(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "stagecraft");
    lua_remove(L, -2);
}

/* Under pcall: (recipe, defs) -> sc._evaluate(recipe, overrides, false).
 * A -D costs=FILE or model=FILE grants FILE to the recipe (sc._granted), as
 * the command line's does. */
static int do_load(lua_State *L)
{
    const char *recipe = lua_touserdata(L, 1);
    const char *const *defs = lua_touserdata(L, 2);
    lua_settop(L, 0);
    push_module(L);
    lua_getfield(L, 1, "_evaluate");
    lua_pushstring(L, recipe);
    lua_newtable(L);
    for (int i = 0; defs && defs[i]; i++) {
        const char *eq = strchr(defs[i], '=');
        if (!eq || eq == defs[i]) {
            lua_pushfstring(L, "-D needs NAME=VALUE (got '%s')", defs[i]);
            return sc_lua_throw(L, SC_EXIT_USAGE);
        }
        if (eq - defs[i] == 5 &&
            (strncmp(defs[i], "costs", 5) == 0 || strncmp(defs[i], "model", 5) == 0) && eq[1] &&
            lua_getfield(L, 1, "_granted") == LUA_TTABLE) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, eq + 1);
        }
        lua_settop(L, 4);
        lua_pushlstring(L, defs[i], (size_t)(eq - defs[i]));
        lua_pushstring(L, eq + 1);
        lua_settable(L, 4);
    }
    lua_pushboolean(L, 0);
    lua_call(L, 3, 1);
    return 1;
}

int stagecraft_load(stagecraft *sc, const char *recipe, const char *const *defs,
                    stagecraft_program **out)
{
    if (out)
        *out = NULL;
    if (!sc)
        return STAGECRAFT_USAGE;
    sc->err[0] = 0;
    if (!recipe || !out)
        return fail(sc, STAGECRAFT_USAGE, "stagecraft_load needs a recipe and a place for it");
    stagecraft_program *p = calloc(1, sizeof *p);
    if (p && !(p->recipe = strdup(recipe))) {
        free(p);
        p = NULL;
    }
    if (!p)
        return fail(sc, STAGECRAFT_NOMEM, "out of memory");
    lua_State *L = sc->L;
    sc_limits_use(L);
    lua_pushcfunction(L, do_load);
    lua_pushlightuserdata(L, (void *)recipe);
    lua_pushlightuserdata(L, (void *)defs);
    sc_limits_arm(L);
    int rc = lua_pcall(L, 2, 1, 0);
    sc_limits_disarm(L);
    if (rc == LUA_OK && sc_limits_hit(L)) { /* hit, and caught by the recipe */
        lua_pop(L, 1);
        lua_pushliteral(L, "limit");
        rc = LUA_ERRRUN;
    }
    if (rc != LUA_OK) {
        free(p->recipe);
        free(p);
        return fail_lua(sc);
    }
    p->ref = luaL_ref(L, LUA_REGISTRYINDEX); /* a Program: sc._evaluate checked */
    p->sc = sc;
    p->next = sc->progs;
    if (sc->progs)
        sc->progs->prev = p;
    sc->progs = p;
    *out = p;
    return STAGECRAFT_OK;
}

/* The program's Program, pushed; NULL when it was closed. */
static sc_lprog *push_prog(stagecraft_program *p)
{
    lua_rawgeti(p->sc->L, LUA_REGISTRYINDEX, p->ref);
    sc_lprog *lp = sc_lua_toprog(p->sc->L, -1);
    return lp && lp->pg ? lp : NULL;
}

/* p's program (anchored by the registry) with its context's limits in
 * use; NULL, with the usage error, when p is closed. */
static sc_lprog *prog_of(stagecraft_program *p)
{
    sc_limits_use(p->sc->L);
    sc_lprog *lp = push_prog(p);
    lua_pop(p->sc->L, 1);
    if (!lp)
        fail(p->sc, STAGECRAFT_USAGE, "the program is closed");
    return lp;
}

int stagecraft_check(stagecraft_program *p)
{
    int rc = sc_api_enter(p ? p->sc : NULL, 1, NULL);
    sc_lprog *lp = rc ? NULL : prog_of(p);
    if (!lp)
        return rc ? rc : STAGECRAFT_USAGE;
    sc_status st = sc_lua_check(lp);
    return st ? fail_status(p->sc, st, lp) : STAGECRAFT_OK;
}

int stagecraft_simulate(stagecraft_program *p, stagecraft_figures *f)
{
    int rc = sc_api_enter(p ? p->sc : NULL, f != NULL, "stagecraft_simulate needs figures");
    sc_lprog *lp = rc ? NULL : prog_of(p);
    if (!lp)
        return rc ? rc : STAGECRAFT_USAGE;
    stagecraft *sc = p->sc;
    sc_status st = SC_OK;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim)
        return fail_status(sc, st, lp);
    memset(f, 0, sizeof *f);
    f->devices = sc_prog_devices(lp->pg);
    f->stages = sc_prog_stages(lp->pg);
    f->microbatches = sc_prog_microbatches(lp->pg);
    f->instructions = (long long)sc_prog_total_instructions(lp->pg);
    f->makespan = sim->makespan;
    f->bubble_rate = sim->bubble_rate;
    f->peak_memory = sim->peak_mem;
    for (int d = 0; d < f->devices; d++)
        if (sim->peak_mem[d] > f->peak_memory_max)
            f->peak_memory_max = sim->peak_mem[d];
    return STAGECRAFT_OK;
}

/* Under pcall: (Program, format) -> p:export(format), the text. */
static int do_export(lua_State *L)
{
    lua_getfield(L, 1, "export");
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    if (!lua_isstring(L, -1))
        return luaL_error(L, "export returned no text");
    return 1;
}

int stagecraft_export_text(stagecraft_program *p, const char *format, const char **text,
                           size_t *len)
{
    int rc = sc_api_enter(p ? p->sc : NULL, format && text,
                          "stagecraft_export_text needs a format and a place for the text");
    if (rc)
        return rc;
    stagecraft *sc = p->sc;
    lua_State *L = sc->L;
    sc_limits_use(L);
    lua_pushcfunction(L, do_export);
    if (!push_prog(p)) {
        lua_pop(L, 2);
        return fail(sc, STAGECRAFT_USAGE, "the program is closed");
    }
    lua_pushstring(L, format);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK)
        return fail_lua(sc);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    char *copy = malloc(n + 1);
    if (!copy) {
        lua_pop(L, 1);
        return fail(sc, STAGECRAFT_NOMEM, "out of memory");
    }
    memcpy(copy, s, n + 1);
    lua_pop(L, 1);
    free(p->text);
    p->text = copy;
    *text = copy;
    if (len)
        *len = n;
    return STAGECRAFT_OK;
}

int stagecraft_export(stagecraft_program *p, const char *format, const char *path)
{
    if (!p)
        return STAGECRAFT_USAGE;
    if (!path)
        return fail(p->sc, STAGECRAFT_USAGE, "stagecraft_export needs a path");
    const char *text;
    size_t n;
    int rc = stagecraft_export_text(p, format, &text, &n);
    if (rc)
        return rc;
    char err[512];
    if (sc_write_atomic(path, text, n, err, sizeof err) != 0)
        return fail(p->sc, STAGECRAFT_USAGE, "%s", err);
    return STAGECRAFT_OK;
}

void stagecraft_program_free(stagecraft_program *p)
{
    if (!p)
        return;
    stagecraft *sc = p->sc;
    sc_limits_use(sc->L);
    /* The Program's own __close frees the C program now (its memory back
     * to this context's limit), not at the next collection. */
    lua_rawgeti(sc->L, LUA_REGISTRYINDEX, p->ref);
    sc_lprog *lp = sc_lua_toprog(sc->L, -1);
    if (lp && lp->pg && luaL_getmetafield(sc->L, -1, "__close") != LUA_TNIL) {
        lua_insert(sc->L, -2);
        lua_pcall(sc->L, 1, 0, 0) == LUA_OK ? (void)0 : lua_pop(sc->L, 1);
    } else {
        lua_pop(sc->L, 1);
    }
    luaL_unref(sc->L, LUA_REGISTRYINDEX, p->ref);
    if (p->prev)
        p->prev->next = p->next;
    else
        sc->progs = p->next;
    if (p->next)
        p->next->prev = p->prev;
    free(p->recipe);
    free(p->text);
    free(p->figures);
    free(p);
}

/* ---- what the Python package needs: the command's texts, in process ---- */

/* Under pcall: (Program) -> its automatic schedule's figures, or nil. */
static int do_autoinfo(lua_State *L)
{
    lua_pushcfunction(L, sc_lua_autoinfo);
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* Closes the memory stream f (open_memstream(buf, n)): its text kept in
 * *slot; or the failure (st, or the stream's). */
static int keep_text(stagecraft *sc, FILE *f, char **buf, size_t *n, sc_status st, char **slot,
                     const char **text, size_t *len)
{
    if (fclose(f) != 0 && !st)
        st = SC_ERR_NOMEM;
    if (st) {
        free(*buf);
        return fail(sc, st == SC_ERR_NOMEM ? STAGECRAFT_NOMEM : sc_status_exit_code(st),
                    st == SC_ERR_NOMEM ? "out of memory" : "cannot write the text");
    }
    free(*slot);
    *slot = *buf;
    *text = *buf;
    if (len)
        *len = *n;
    return STAGECRAFT_OK;
}

int stagecraft_figures_json(stagecraft_program *p, const char **text, size_t *len)
{
    int rc = sc_api_enter(p ? p->sc : NULL, text != NULL,
                          "stagecraft_figures_json needs a place for the text");
    if (rc)
        return rc;
    stagecraft *sc = p->sc;
    lua_State *L = sc->L;
    sc_limits_use(L);
    int top = lua_gettop(L);
    lua_pushcfunction(L, do_autoinfo);
    sc_lprog *lp = push_prog(p);
    if (!lp) {
        lua_settop(L, top);
        return fail(sc, STAGECRAFT_USAGE, "the program is closed");
    }
    if (lua_pcall(L, 1, 1, 0) != LUA_OK)
        return fail_lua(sc);
    int info = lua_istable(L, -1) ? lua_gettop(L) : 0;
    sc_status st = SC_OK;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim) {
        lua_settop(L, top);
        return fail_status(sc, st, lp);
    }
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        lua_settop(L, top);
        return fail(sc, STAGECRAFT_NOMEM, "out of memory");
    }
    sc_jw w; /* the object of `sim --json`, by its own writer (sim_out.h) */
    sc_jw_init(&w, f);
    sc_jw_object(&w, NULL);
    st = sc_eng_sim_json(&w, L, &sc->lim, lp, sim, p->recipe, info, NULL);
    sc_jw_end(&w);
    fputc('\n', f);
    lua_settop(L, top);
    return keep_text(sc, f, &buf, &n, st, &p->figures, text, len);
}

int stagecraft_digest(stagecraft_program *p, char hex[17])
{
    int rc = sc_api_enter(p ? p->sc : NULL, hex != NULL,
                          "stagecraft_digest needs a place for the digest");
    sc_lprog *lp = rc ? NULL : prog_of(p);
    if (!lp)
        return rc ? rc : STAGECRAFT_USAGE;
    sc_status st = sc_eng_program_digest(lp, hex);
    return st ? fail_status(p->sc, st, lp) : STAGECRAFT_OK;
}

int stagecraft_export_as(stagecraft_program *p, const char *format,
                         const stagecraft_export_options *o, const char **text, size_t *len)
{
    int rc = sc_api_enter(p ? p->sc : NULL, text != NULL,
                          "stagecraft_export_as needs a place for the text");
    sc_lprog *lp = rc ? NULL : prog_of(p);
    if (!lp)
        return rc ? rc : STAGECRAFT_USAGE;
    stagecraft *sc = p->sc;
    lua_State *L = sc->L;
    int was = sc_prog_lower_target(lp->pg), version;
    const sc_sim *sim;
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    rc = sc_eng_export_prepare(L, lp, format, o ? o->torch : NULL, o ? o->torchtitan : 0,
                                   &version, &sim);
    sc_eng_release(prev);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = rc ? NULL : open_memstream(&buf, &n);
    if (!rc && !f)
        rc = fail(sc, STAGECRAFT_NOMEM, "out of memory");
    else if (rc)
        fail(sc, rc, "%s", e.msg);
    else
        rc = keep_text(sc, f, &buf, &n,
                       sc_eng_export_write(f, lp->pg, sim, format, p->recipe, version, NULL),
                       &p->text, text, len);
    /* The program goes back to its target: a later figure times the streams. */
    if (sc_prog_lower_target(lp->pg) != was)
        sc_lua_set_lower_target(lp, was);
    return rc;
}

int stagecraft_comm(stagecraft_program *p, const char *mode)
{
    if (!p)
        return STAGECRAFT_USAGE;
    stagecraft *sc = p->sc;
    sc->err[0] = 0;
    int m = mode ? sc_p2p_parse(mode) : -1;
    if (m < 0)
        return fail(sc, STAGECRAFT_USAGE, "--comm '%.40s': expected " SC_P2P_NAMES, mode ? mode : "");
    sc_limits_use(sc->L);
    sc_lprog *lp = push_prog(p);
    lua_pop(sc->L, 1);
    if (!lp)
        return fail(sc, STAGECRAFT_USAGE, "the program is closed");
    sc_status st = sc_lua_set_comm(lp, m);
    return st ? fail_status(sc, st, lp) : STAGECRAFT_OK;
}

/* Under pcall: sc._time_limit = seconds (nil below 0). */
static int do_search_time(lua_State *L)
{
    double s = lua_tonumber(L, 1);
    push_module(L);
    if (s >= 0)
        lua_pushnumber(L, s);
    else
        lua_pushnil(L);
    lua_setfield(L, -2, "_time_limit");
    return 0;
}

int stagecraft_search_time(stagecraft *sc, double seconds)
{
    if (!sc)
        return STAGECRAFT_USAGE;
    sc->err[0] = 0;
    if (!(seconds <= 1e9))
        return fail(sc, STAGECRAFT_USAGE, "--time-limit needs a number of seconds >= 0");
    sc_limits_use(sc->L);
    lua_pushcfunction(sc->L, do_search_time);
    lua_pushnumber(sc->L, seconds);
    return lua_pcall(sc->L, 1, 0, 0) == LUA_OK ? STAGECRAFT_OK : fail_lua(sc);
}
