/*
 * plan_order.c — `plan -D lengths=FILE`: the order in which the pick's
 * microbatches enter (docs/lengths.md#planning-the-order). The orders and
 * their simulation are interp's (plan/order.h); here the pick's program is
 * taken from the registry and the result kept in the run.
 */
#include "plan.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>

#include "engine.h"
#include "lua/sc_lua.h"

int sc_plan_order(lua_State *L, sc_plan_run *r, int ref)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    sc_lprog *lp = sc_lua_toprog(L, -1);
    int rc = 0;
    if (lp && lp->pg && sc_prog_lengths(lp->pg)) {
        sc_sim_free(lp->sim); /* its figures are of the order it had */
        lp->sim = NULL;
        sc_status st = sc_len_order_plan(lp->pg, &r->order);
        if (st != SC_OK)
            rc = sc_eng_status_fail(L, st, "plan: ordering the lengths of %s: %s",
                                    sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->recipe,
                                    sc_errmsg(lp->pg));
        else
            r->have_order = 1;
    }
    lua_pop(L, 1);
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return rc;
}

/* x in the fewest digits that read back as x: `sim -D lengths=[...]` with
 * the list printed reproduces the plan's figure. */
static const char *exact(double x, char *buf, size_t len)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

void sc_plan_order_print(FILE *out, const sc_plan_run *r)
{
    if (!r->have_order)
        return;
    const sc_len_order *o = &r->order;
    double best = o->final, given = o->makespan[SC_LORDER_GIVEN];
    char how[96];
    snprintf(how, sizeof how, "%s%s", sc_len_order_name(o->best), "");
    if (o->swaps)
        snprintf(how, sizeof how, "%s, then %d swap%s of neighbours", sc_len_order_name(o->best),
                 o->swaps, o->swaps == 1 ? "" : "s");
    fprintf(out, "\norder of the microbatches (the pick's lengths, docs/lengths.md):\n");
    if ((o->best == SC_LORDER_GIVEN && !o->swaps) || !isfinite(given))
        fprintf(out, "  best        %s, makespan %g%s\n", how, best,
                o->best == SC_LORDER_GIVEN && !o->swaps ? ": no order tried is faster" : "");
    else
        fprintf(out, "  best        %s, makespan %g against %g in the given order: %.2f %% "
                "shorter\n", how, best, given, 100 * (1 - best / given));
    fprintf(out, "  tried      ");
    for (int k = 0; k < SC_LORDER_COUNT; k++) {
        if (isfinite(o->makespan[k]))
            fprintf(out, " %s %g%s", sc_len_order_name(k), o->makespan[k],
                    k + 1 < SC_LORDER_COUNT ? "," : "");
        else
            fprintf(out, " %s refused by the cap%s", sc_len_order_name(k),
                    k + 1 < SC_LORDER_COUNT ? "," : "");
    }
    char num[32];
    fprintf(out, "\n  lengths     [");
    for (int i = 0; i < o->m; i++)
        fprintf(out, "%s%s", i ? "," : "", exact(o->lengths[i], num, sizeof num));
    fprintf(out, "]\n");
}

void sc_plan_order_json(const sc_plan_run *r, sc_jw *w)
{
    if (!r->have_order)
        return;
    const sc_len_order *o = &r->order;
    double best = o->final, given = o->makespan[SC_LORDER_GIVEN];
    sc_jw_object(w, "order");
    sc_jw_str(w, "best", sc_len_order_name(o->best));
    sc_jw_int(w, "swaps", o->swaps);
    sc_jw_num(w, "makespan", best);
    sc_jw_num(w, "given_makespan", given);
    sc_jw_num(w, "gain", isfinite(given) && given > 0 ? 1 - best / given : NAN);
    sc_jw_object(w, "tried");
    for (int k = 0; k < SC_LORDER_COUNT; k++)
        if (isfinite(o->makespan[k]))
            sc_jw_num(w, sc_len_order_name(k), o->makespan[k]);
        else
            sc_jw_null(w, sc_len_order_name(k));
    sc_jw_end(w);
    sc_jw_nums(w, "lengths", o->lengths, o->m);
    sc_jw_end(w);
}

void sc_plan_order_push(lua_State *L, const sc_plan_run *r)
{
    if (!r->have_order)
        return;
    const sc_len_order *o = &r->order;
    double given = o->makespan[SC_LORDER_GIVEN];
    lua_createtable(L, 0, 7);
    lua_pushstring(L, sc_len_order_name(o->best));
    lua_setfield(L, -2, "best");
    lua_pushinteger(L, o->swaps);
    lua_setfield(L, -2, "swaps");
    lua_pushnumber(L, o->final);
    lua_setfield(L, -2, "makespan");
    lua_pushnumber(L, given);
    lua_setfield(L, -2, "given_makespan");
    lua_pushnumber(L, isfinite(given) && given > 0 ? 1 - o->final / given : NAN);
    lua_setfield(L, -2, "gain");
    lua_createtable(L, 0, SC_LORDER_COUNT);
    for (int k = 0; k < SC_LORDER_COUNT; k++) {
        if (isfinite(o->makespan[k]))
            lua_pushnumber(L, o->makespan[k]);
        else
            lua_pushboolean(L, 0);
        lua_setfield(L, -2, sc_len_order_name(k));
    }
    lua_setfield(L, -2, "tried");
    lua_createtable(L, o->m, 0);
    for (int i = 0; i < o->m; i++) {
        lua_pushnumber(L, o->lengths[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "lengths");
    lua_setfield(L, -2, "order");
}
