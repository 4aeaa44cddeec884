/*
 * plan_push.c — the engine's plan as a Lua table (plan.h): the --json
 * object's members, for sc.plan and the library (indices from 1).
 */
#include "plan.h"

#include <lauxlib.h>
#include <string.h>

#include "ir/alloc.h"

/* The split of the pick's stages, or NULL. */
const sc_plan_split *sc_plan_pick_split(const sc_plan_run *r)
{
    int pk = sc_plan_pick(r->plan);
    if (!r->layers || pk < 0 || !r->have_even)
        return NULL;
    for (int k = 0; k < r->nsplit; k++)
        if (r->split[k].S == r->even_row.S)
            return &r->split[k];
    return NULL;
}

/* Whether the pick places its stages in a loop: Megatron's layout string
 * places them so, and a V pick must never get one. */
int sc_plan_pick_is_loop(const sc_plan_run *r)
{
    int pk = sc_plan_pick(r->plan);
    return pk >= 0 && sc_plan_cand_at(r->plan, pk)->shape.placement == SC_PLAN_PLACE_LOOP;
}

static void set_num(lua_State *L, const char *k, double x)
{
    lua_pushnumber(L, x);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *s)
{
    lua_pushstring(L, s);
    lua_setfield(L, -2, k);
}

void sc_plan_push(lua_State *L, const sc_plan_run *r)
{
    int n = sc_plan_count(r->plan), *front = sc_calloc((size_t)(n ? n : 1), sizeof *front);
    char why[640];
    lua_createtable(L, 0, 12);
    set_num(L, "devices", r->P);
    set_num(L, "microbatches", r->m);
    set_str(L, "memory_unit", r->bytes_cap ? "bytes" : "units");
    set_num(L, "searched", r->evaluated);
    set_num(L, "seconds", r->seconds);
    if (r->cap > 0)
        set_num(L, "cap", r->cap);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        const sc_plan_cand *c = sc_plan_cand_at(r->plan, i);
        lua_createtable(L, 0, 9);
        set_str(L, "recipe", c->recipe);
        set_str(L, "knobs", c->knobs);
        if (c->error[0]) {
            set_str(L, "error", c->error);
        } else {
            set_num(L, "makespan", c->makespan);
            set_num(L, "bubble_rate", c->bubble);
            set_num(L, "peak_memory_max", c->peak);
            if (c->peak_bytes > 0)
                set_num(L, "peak_bytes", c->peak_bytes);
            if (c->total_bytes > 0)
                set_num(L, "total_bytes_max", c->total_bytes);
            if (c->bound > 0) {
                set_num(L, "lower_bound", c->bound);
                set_num(L, "gap", sc_plan_gap(c));
            }
        }
        lua_pushboolean(L, c->fits);
        lua_setfield(L, -2, "fits");
        lua_pushboolean(L, c->front);
        lua_setfield(L, -2, "front");
        if (c->shape.placement != SC_PLAN_PLACE_NONE) {
            set_str(L, "placement", sc_plan_place_name(c->shape.placement));
            set_num(L, "stages_per_device", c->shape.chunks);
            lua_createtable(L, SC_FW_COUNT, 0);
            for (int fw = 1, k = 0; fw < SC_FW_COUNT; fw++)
                if (c->shape.runs_on & SC_FW_BIT(fw)) {
                    lua_pushstring(L, sc_plan_fw_name(fw));
                    lua_seti(L, -2, ++k);
                }
            lua_setfield(L, -2, "frameworks");
        }
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "candidates");
    int nf = front ? sc_plan_front(r->plan, front) : 0;
    lua_createtable(L, nf, 0);
    for (int j = 0; j < nf; j++) {
        lua_pushinteger(L, front[j] + 1);
        lua_seti(L, -2, j + 1);
    }
    lua_setfield(L, -2, "front");
    sc_free(front);
    if (sc_plan_pick(r->plan) >= 0) {
        lua_pushinteger(L, sc_plan_pick(r->plan) + 1);
        lua_setfield(L, -2, "pick");
    }
    if (sc_plan_lean(r->plan) >= 0) {
        lua_pushinteger(L, sc_plan_lean(r->plan) + 1);
        lua_setfield(L, -2, "lean");
    }
    sc_plan_for_push(L, r);
    sc_plan_order_push(L, r); /* -D lengths: the order of the microbatches */
    sc_plan_why(r->plan, why, sizeof why);
    set_str(L, "why", why);
    const sc_plan_split *sp = sc_plan_pick_split(r);
    if (sp) {
        char lay[4096];
        lua_createtable(L, 0, 10);
        set_str(L, "layers", r->layers_spec);
        set_num(L, "stages", sp->S);
        lua_createtable(L, sp->S, 0);
        for (int s = 0; s < sp->S; s++) {
            lua_pushinteger(L, sp->first[s]);
            lua_seti(L, -2, s + 1);
        }
        lua_setfield(L, -2, "first_layer");
        set_num(L, "heaviest_stage", sp->best_w);
        sc_part_layout(r->layers, sp->S, sp->first, lay, sizeof lay);
        set_str(L, "layout", lay);
        if (sc_plan_pick_is_loop(r))
            set_str(L, "megatron_layout", lay);
        set_num(L, "makespan", sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->makespan);
        if (sp->even_w >= 0) {
            sc_part_layout(r->layers, sp->S, sp->even, lay, sizeof lay);
            set_str(L, "even_layout", lay);
            set_num(L, "even_heaviest_stage", sp->even_w);
            if (!r->even_row.error) {
                set_num(L, "even_makespan", r->even_row.makespan);
                set_num(L, "gain", 1 - sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->makespan /
                                           r->even_row.makespan);
            }
        }
        lua_setfield(L, -2, "partition");
    }
}
