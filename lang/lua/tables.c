/*
 * tables.c — reading the tables recipes give (sc_lua_impl.h): integer,
 * number and per-stage fields, the placement, and a program's shape, costs
 * and memory model built from them.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"
#include "sandbox/sc_limits.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- known fields (their lists: fields.h) --------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* After __index found nothing for k (the methods table at index methods):
 * a name near a field or method is a typo, raised at the caller's line. */
static void member_typo(lua_State *L, const char *what, const char *k, int methods,
                        const sc_lua_getter *fields)
{
    enum { MAX_NAMES = 128 };
    const char *names[MAX_NAMES];
    int n = 0;
    methods = lua_absindex(L, methods);
    for (; fields[n].name && n < MAX_NAMES; n++)
        names[n] = fields[n].name;
    if (lua_type(L, methods) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, methods)) {
            if (lua_type(L, -2) == LUA_TSTRING && n < MAX_NAMES)
                names[n++] = lua_tostring(L, -2); /* anchored in the table */
            lua_pop(L, 1);
        }
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    char hint[256];
    if (sc_did_you_mean(hint, sizeof hint, k, names, n))
        luaL_error(L, "%s has no field or method '%s': %s", what, k, hint);
}

int sc_lua_index(lua_State *L, const char *what, const void *obj, const sc_lua_getter *g)
{
    const char *k = luaL_checkstring(L, 2);
    for (int i = 0; g[i].name; i++)
        if (strcmp(g[i].name, k) == 0) {
            g[i].push(L, obj);
            return 1;
        }
    luaL_getmetafield(L, 1, "__methods");
    if (lua_getfield(L, -1, k) == LUA_TNIL)
        member_typo(L, what, k, -2, g);
    return 1;
}

void sc_lua_set_getters(lua_State *L, const sc_lua_getter *g)
{
    lua_newtable(L);
    for (int i = 0; g[i].name; i++) {
        lua_pushstring(L, g[i].name);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "__fields");
}

int sc_lua_unknown_fields(lua_State *L, int t, const char *what, const char *const *known)
{
    t = lua_absindex(L, t);
    int nk = 0;
    while (known[nk])
        nk++;
    /* The unknown keys, as strings, in a list kept on the stack. */
    lua_newtable(L);
    int list = lua_gettop(L), n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; i < nk && !ok; i++)
                ok = strcmp(known[i], lua_tostring(L, -1)) == 0;
        if (!ok) {
            if (lua_type(L, -1) == LUA_TSTRING)
                lua_pushvalue(L, -1);
            else
                lua_pushfstring(L, "[%s]", luaL_tolstring(L, -1, NULL)), lua_remove(L, -2);
            lua_seti(L, list, ++n);
        }
    }
    if (n == 0) {
        lua_pop(L, 1);
        return 0;
    }
    const char **keys = lua_newuserdatauv(L, (size_t)n * sizeof *keys, 0);
    for (int i = 0; i < n; i++) {
        lua_geti(L, list, i + 1);
        keys[i] = lua_tostring(L, -1); /* anchored in list */
        lua_pop(L, 1);
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_str);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, what);
    luaL_addstring(&b, n == 1 ? ": unknown field " : ": unknown fields ");
    int unhinted = n > 8;
    for (int i = 0; i < n && i < 8; i++) {
        char hint[160], clean[80];
        luaL_addstring(&b, i ? ", '" : "'");
        luaL_addstring(&b, sc_clean_text(clean, sizeof clean, keys[i], 0));
        luaL_addchar(&b, '\'');
        if (sc_did_you_mean(hint, sizeof hint, keys[i], known, nk)) {
            luaL_addstring(&b, " (");
            luaL_addstring(&b, hint);
            luaL_addchar(&b, ')');
        } else {
            unhinted = 1;
        }
    }
    if (n > 8)
        luaL_addstring(&b, ", ...");
    for (int i = 0; unhinted && i < nk; i++) { /* no near name: all of them */
        luaL_addstring(&b, i ? ", " : " (known: ");
        luaL_addstring(&b, known[i]);
        luaL_addstring(&b, i + 1 < nk ? "" : ")");
    }
    luaL_pushresult(&b);
    lua_replace(L, list);
    lua_settop(L, list);
    return 1;
}

void sc_lua_check_fields(lua_State *L, int t, const char *what, const char *const *known)
{
    if (sc_lua_unknown_fields(L, t, what, known))
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

sc_lprog *sc_lua_toprog(lua_State *L, int i)
{
    return luaL_testudata(L, i, SC_PROGRAM_MT);
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
                            sc_lua_got(L, -1));
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
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
        if (isnan(x)) { /* NaN is "not given" inside (tfb): never a value */
            lua_pushfstring(L, "program: '%s' must be a number (got nan)", name);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        for (int s = 0; s < S; s++)
            out[s] = x * P / S;
    } else if (ty == LUA_TTABLE) {
        if ((int)luaL_len(L, -1) != S) {
            lua_pushfstring(L, "program: '%s' lists %d values, but there are %d stages", name,
                            (int)luaL_len(L, -1), S);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        for (int s = 0; s < S; s++) {
            lua_geti(L, -1, s + 1);
            int ok;
            out[s] = lua_tonumberx(L, -1, &ok);
            if (!ok || isnan(out[s])) {
                lua_pushfstring(L, "program: '%s'[%d] is not a number (got %s)", name, s + 1,
                                sc_lua_got(L, -1));
                sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            lua_pop(L, 1);
        }
    } else {
        lua_pushfstring(L, "program: '%s' must be a number or a list of numbers (got %s)", name,
                        luaL_typename(L, -1));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
}

/* A number field of the table at t (what: the table's name in messages).
 * NaN is refused as not a number: inside, NaN often stands for "not
 * given" (fsdp's time, tfb), so a recipe's 0/0 must not pass for that. */
static double num_field_of(lua_State *L, int t, const char *what, const char *name, double dflt)
{
    int ty = lua_getfield(L, t, name);
    double v = dflt;
    if (ty != LUA_TNIL) {
        int ok;
        v = lua_tonumberx(L, -1, &ok);
        if (!ok || isnan(v)) {
            lua_pushfstring(L, "%s: '%s' must be a number (got %s)", what, name, sc_lua_got(L, -1));
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
    }
    lua_pop(L, 1);
    return v;
}

static double num_field(lua_State *L, int t, const char *name, double dflt)
{
    return num_field_of(L, t, "program", name, dflt);
}

static void check_st(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st == SC_OK)
        return;
    if (sc_prog_cap_refused(pg))
        sc_lua_mark_cap_refused(L);
    sc_lua_raise(L, st, sc_errmsg(pg));
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
        else if (strcmp(name, "wave") == 0)
            kind = SC_PLACE_WAVE;
        else {
            lua_pushfstring(L, "program: unknown placement '%s' (loop, v, wave, or a table of "
                            "devices)", name);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            return;
        }
        check_st(L, pg, sc_prog_set_placement(pg, kind, NULL));
    } else if (ty == LUA_TTABLE) {
        if ((int)luaL_len(L, -1) != S) {
            lua_pushfstring(L, "program: placement lists %d devices, but there are %d stages",
                            (int)luaL_len(L, -1), S);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        int *tab = lua_newuserdatauv(L, (size_t)S * sizeof(int), 0);
        for (int s = 0; s < S; s++) {
            lua_geti(L, -2, s + 1);
            int ok;
            lua_Integer dv = lua_tointegerx(L, -1, &ok);
            if (!ok || dv < -1 || dv > SC_MAX_DEVICES) {
                lua_pushfstring(L, "program: placement[%d] must be a device number", s + 1);
                sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
            }
            tab[s] = (int)dv;
            lua_pop(L, 1);
        }
        check_st(L, pg, sc_prog_set_placement(pg, SC_PLACE_TABLE, tab));
        lua_pop(L, 1);
    } else {
        sc_lua_raise(L, SC_ERR_ARG, "program: placement must be 'loop', 'v' or a table");
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
    sc_limits_make_room(L); /* programs dropped give their C memory back first */
    *slot = sc_prog_new((int)P, (int)S, (int)m);
    if (!*slot) /* sizes are in range: the product is too large, or memory */
        sc_lua_raise(L, SC_ERR_LIMIT, sc_new_errmsg());
    sc_prog *pg = *slot;
    set_placement(L, t, pg, (int)S);
    double *tf = lua_newuserdatauv(L, 6 * (size_t)S * sizeof(double), 0);
    double *tb = tf + S, *tw = tb + S, *units = tw + S, *tfb = units + S, *ta = tfb + S;
    stage_numbers(L, t, "tf", (int)P, (int)S, 1, tf);
    stage_numbers(L, t, "tb", (int)P, (int)S, 1, tb);
    stage_numbers(L, t, "tw", (int)P, (int)S, 1, tw);
    stage_numbers(L, t, "units", (int)P, (int)S, 1, units);
    /* Overlapped pairs (docs/guide.md#overlapped-pairs): NAN, not set. */
    stage_numbers(L, t, "tfb", (int)P, (int)S, NAN, tfb);
    stage_numbers(L, t, "ta", (int)P, (int)S, 0, ta);
    for (int s = 0; s < S; s++) {
        check_st(L, pg, sc_prog_set_cost(pg, s, tf[s], tb[s], tw[s]));
        check_st(L, pg, sc_prog_set_mem(pg, s, units[s]));
        check_st(L, pg, sc_prog_set_cost_pair(pg, s, tfb[s]));
        check_st(L, pg, sc_prog_set_cost_a2a(pg, s, ta[s]));
    }
    lua_pop(L, 1);
    lua_Integer copies = int_field(L, t, "copies", NULL, 1); /* docs/guide.md#copies */
    if (copies < 1 || copies > S) {
        lua_pushfstring(L, "program: 'copies' = %I is out of range (1..%I, the stages)", copies, S);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    if (copies != 1)
        check_st(L, pg, sc_prog_set_copies(pg, (int)copies));
    int fo = lua_getfield(L, t, "forward_only"); /* docs/guide.md#forward-only */
    if (fo != LUA_TNIL && fo != LUA_TBOOLEAN)
        sc_lua_raise(L, SC_ERR_ARG, "program: 'forward_only' must be true or false");
    if (lua_toboolean(L, -1))
        check_st(L, pg, sc_prog_set_forward_only(pg, 1));
    lua_pop(L, 1);
    lua_Integer slices = int_field(L, t, "slices", NULL, 1); /* docs/slices.md */
    if (slices < 1 || slices > SC_MAX_SLICES) {
        lua_pushfstring(L, "program: 'slices' = %I is out of range (1..%d)", slices, SC_MAX_SLICES);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    if (slices != 1)
        check_st(L, pg, sc_prog_set_slices(pg, (int)slices));
    int ty = lua_getfield(L, t, "slice_split"); /* docs/slices.md#split */
    const char *split = ty == LUA_TNIL ? "even" : ty == LUA_TSTRING ? lua_tostring(L, -1) : "";
    int cut = strcmp(split, "compute") == 0;
    if (!cut && strcmp(split, "even") != 0)
        sc_lua_raise(L, SC_ERR_ARG, "program: 'slice_split' must be \"even\" or \"compute\"");
    lua_pop(L, 1);
    check_st(L, pg, sc_prog_set_slice_split(pg, cut));
    check_st(L, pg, sc_prog_set_comm(pg, num_field(L, t, "tcomm", 0)));
    check_st(L, pg, sc_prog_set_w_keep(pg, num_field(L, t, "w_keep", 1)));
    sc_lua_set_vocab(L, t, pg);   /* vocab_par, and the model's costs (vocab.c) */
    sc_lua_apply_costs(L, t, pg); /* a cost file overrides tf, tb, tw, tcomm */
    sc_lua_set_mem(L, t, pg);     /* in bytes: by the model's or the cost file's unit */
    sc_lua_set_lengths(L, t, pg); /* microbatches of different lengths (lengths.c) */
}

int sc_lua_size_range(lua_State *L, const char *name, lua_Integer x)
{
    static const struct {
        const char *name, *text;
        lua_Integer max;
    } sizes[] = {{"p", "devices p", SC_MAX_DEVICES},
                 {"m", "microbatches m", SC_MAX_MICROBATCHES},
                 {"v", "program: 'v' (chunks per device)", SC_MAX_STAGES}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(name, sizes[i].name) == 0) {
            if (x >= 1 && x <= sizes[i].max)
                return 0;
            lua_pushfstring(L, "%s = %I is out of range (1..%I)", sizes[i].text, x, sizes[i].max);
            return 1;
        }
    return 0;
}

static void check_size(lua_State *L, const char *name, lua_Integer x)
{
    if (sc_lua_size_range(L, name, x))
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

/* P, S, m of the table at t, checked; m_dflt when m is optional (-1: it
 * is required). A negative or zero size is out of range, not missing. */
void sc_lua_shape_sizes(lua_State *L, int t, lua_Integer m_dflt, lua_Integer *P, lua_Integer *S,
                        lua_Integer *m)
{
    const lua_Integer absent = LUA_MININTEGER;
    *P = int_field(L, t, "p", "devices", absent);
    *m = int_field(L, t, "m", "microbatches", m_dflt == -1 ? absent : m_dflt);
    if (*P == absent || *m == absent)
        sc_lua_raise(L, SC_ERR_ARG, "program: 'p' (devices) and 'm' (microbatches) are required");
    /* Each size is checked before it takes part in a product. */
    check_size(L, "p", *P);
    int vplace = lua_getfield(L, t, "placement") == LUA_TSTRING &&
                 (strcmp(lua_tostring(L, -1), "v") == 0 || strcmp(lua_tostring(L, -1), "wave") == 0);
    lua_pop(L, 1);
    lua_Integer v = int_field(L, t, "v", NULL, vplace ? 2 : 1);
    check_size(L, "v", v);
    *S = int_field(L, t, "stages", NULL, *P * v);
    check_size(L, "m", *m);
    if (*S < *P || *S > SC_MAX_STAGES) {
        lua_pushfstring(L, "stages = %I is out of range (p..%d)", *S, SC_MAX_STAGES);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
}


void sc_lua_check_st(lua_State *L, sc_prog *pg, sc_status st) { check_st(L, pg, st); }

double sc_lua_num_field(lua_State *L, int t, const char *what, const char *name, double dflt)
{
    return num_field_of(L, t, what, name, dflt);
}

const char *sc_lua_got(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        return lua_pushfstring(L, "'%s'", lua_tostring(L, idx));
    case LUA_TNUMBER:
        if (isnan(lua_tonumber(L, idx))) /* 0/0 prints "-nan" on some C libraries */
            return lua_pushliteral(L, "nan");
        lua_pushvalue(L, idx);
        return lua_tostring(L, -1);
    default:
        return lua_pushfstring(L, "a %s", luaL_typename(L, idx));
    }
}
