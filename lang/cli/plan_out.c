/*
 * plan_out.c — what `stagecraft plan` prints (cmd_plan.h, docs/plan.md):
 * the search in one line, the pick and why, the front; with --layers the
 * split and its gain over the even split, as Megatron's layout string and
 * torchtitan's names; --json the same as one object; --svg the front.
 */
#include "cli.h"
#include "cmd_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "formats/jsonw.h"
#include "ir/alloc.h"

/* The split of the pick's stages, or NULL. */
static const sc_plan_split *pick_split(const sc_plan_run *r)
{
    int pk = sc_plan_pick(r->plan);
    if (!r->layers || pk < 0 || !r->have_even)
        return NULL;
    for (int k = 0; k < r->nsplit; k++)
        if (r->split[k].S == r->even_row.S)
            return &r->split[k];
    return NULL;
}

static void mem_text(const sc_plan_run *r, double x, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    if (!r->bytes_cap) {
        snprintf(buf, len, "%g", x);
        return;
    }
    while (x >= 1024 && u < 5)
        x /= 1024, u++;
    snprintf(buf, len, u ? "%.4g %s" : "%.0f %s", x, unit[u]);
}

static void print_partition(const sc_plan_run *r, const sc_plan_split *sp, sc_jw *w)
{
    char lay[4096], even[4096];
    sc_part_layout(r->layers, sp->S, sp->first, lay, sizeof lay);
    if (sp->even_w >= 0)
        sc_part_layout(r->layers, sp->S, sp->even, even, sizeof even);
    double best = sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->makespan;
    double ev = r->even_row.error ? NAN : r->even_row.makespan;
    if (w) {
        sc_jw_object(w, "partition");
        sc_jw_str(w, "layers", r->layers_spec);
        sc_jw_int(w, "stages", sp->S);
        sc_jw_ints(w, "first_layer", sp->first, sp->S);
        sc_jw_num(w, "heaviest_stage", sp->best_w);
        sc_jw_str(w, "megatron_layout", lay);
        sc_part_torchtitan(r->layers, sp->S, sp->first, w, "torchtitan_module_fqns_per_model_part",
                           "split_points");
        sc_jw_num(w, "makespan", best);
        if (sp->even_w >= 0) {
            sc_jw_str(w, "even_layout", even);
            sc_jw_num(w, "even_heaviest_stage", sp->even_w);
            sc_jw_num(w, "even_makespan", ev);
            sc_jw_num(w, "gain", isfinite(ev) && ev > 0 ? 1 - best / ev : NAN);
        }
        sc_jw_end(w);
        return;
    }
    printf("\nlayers %s: %d layers into %d stages (the pick's)\n", r->layers_spec, r->layers->n,
           sp->S);
    printf("  split       %s   heaviest stage %g\n", lay, sp->best_w);
    if (sp->even_w >= 0) {
        printf("  even split  %s   heaviest stage %g\n", even, sp->even_w);
        if (isfinite(ev))
            printf("  makespan %g on this split, %g on the even split: %.2f %% shorter\n", best, ev,
                   100 * (1 - best / ev));
        else
            printf("  the even split: %s\n", r->even_row.error);
    }
    printf("  megatron    --pipeline-model-parallel-layout \"%s\"\n", lay);
    sc_jw jw;
    sc_jw_init(&jw, stdout);
    fputs("  torchtitan  ", stdout);
    sc_jw_object(&jw, NULL);
    sc_part_torchtitan(r->layers, sp->S, sp->first, &jw, "module_fqns_per_model_part",
                       "pipeline_parallel_split_points");
    sc_jw_end(&jw);
    putchar('\n');
}

static void print_json(const sc_plan_run *r)
{
    sc_jw w;
    sc_jw_init(&w, stdout);
    sc_jw_object(&w, NULL);
    sc_jw_int(&w, "devices", r->P);
    sc_jw_int(&w, "microbatches", r->m);
    sc_jw_str(&w, "memory_unit", r->bytes_cap ? "bytes" : "units");
    sc_jw_int(&w, "searched", r->evaluated);
    sc_jw_num_g(&w, "seconds", r->seconds, 3);
    sc_plan_json(r->plan, &w);
    const sc_plan_split *sp = pick_split(r);
    if (sp)
        print_partition(r, sp, &w);
    sc_jw_end(&w);
    putchar('\n');
}

static void print_text(const sc_plan_run *r)
{
    int n = sc_plan_count(r->plan), ok = 0, fit = 0;
    for (int i = 0; i < n; i++) {
        ok += !sc_plan_cand_at(r->plan, i)->error[0];
        fit += sc_plan_cand_at(r->plan, i)->fits;
    }
    char cap[64] = "no cap";
    if (r->cap > 0) {
        mem_text(r, r->cap, cap + 4, sizeof cap - 4);
        memcpy(cap, "cap ", 4);
        if (!r->bytes_cap)
            strncat(cap, " units", sizeof cap - strlen(cap) - 1);
    }
    printf("plan: p %d, m %d, %s; searched %d candidates in %.1f s: %d verified, %d within the cap\n",
           r->P, r->m, cap, r->evaluated, r->seconds, ok, fit);
    char why[640], name[200], peak[48];
    sc_plan_why(r->plan, why, sizeof why);
    int *front = sc_calloc((size_t)(n ? n : 1), sizeof *front);
    if (!front)
        return;
    int nf = sc_plan_front(r->plan, front), wide = 9;
    if (sc_plan_pick(r->plan) >= 0)
        printf("%s\n", why); /* else the error says it, after the front */
    if (nf)
        printf("\nfront (makespan against peak memory; * the pick):\n");
    for (int j = 0; j < nf; j++) {
        sc_plan_name(sc_plan_cand_at(r->plan, front[j]), name, sizeof name);
        wide = (int)strlen(name) > wide ? (int)strlen(name) : wide;
    }
    if (nf)
        printf("  %-*s  makespan    bubble   lower bound  gap      peak\n", wide, "candidate");
    for (int j = 0; j < nf; j++) {
        const sc_plan_cand *c = sc_plan_cand_at(r->plan, front[j]);
        sc_plan_name(c, name, sizeof name);
        mem_text(r, c->peak, peak, sizeof peak);
        char lb[32] = "-", gap[32] = "-";
        if (c->bound > 0) {
            snprintf(lb, sizeof lb, "%g", c->bound);
            snprintf(gap, sizeof gap, "%.2f%%", 100 * sc_plan_gap(c));
        }
        printf("%c %-*s  %-10g  %6.2f%%  %-11s  %-7s  %s%s\n",
               front[j] == sc_plan_pick(r->plan) ? '*' : ' ', wide, name, c->makespan,
               100 * c->bubble, lb, gap, peak, c->fits ? "" : "  (over the cap)");
    }
    sc_free(front);
    const sc_plan_split *sp = pick_split(r);
    if (sp)
        print_partition(r, sp, NULL);
}

static int write_svg(const sc_plan_run *r)
{
    char *buf = NULL, title[160], err[300];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
    snprintf(title, sizeof title, "stagecraft plan: p %d, m %d, %d candidates", r->P, r->m,
             r->evaluated);
    int bad = sc_plan_svg(f, r->plan, title, r->bytes_cap ? "bytes" : "units");
    bad |= fclose(f) != 0;
    int rc = bad ? sc_cli_fail(SC_EXIT_NOMEM, "out of memory")
                 : sc_write_atomic(r->svg, buf, len, err, sizeof err) ? sc_cli_fail(SC_EXIT_USAGE, err)
                                                                      : 0;
    free(buf);
    return rc;
}

int sc_plan_print(lua_State *L, const sc_plan_run *r)
{
    (void)L;
    if (r->c.json)
        print_json(r);
    else
        print_text(r);
    fflush(stdout);
    int rc = r->svg ? write_svg(r) : 0;
    if (!rc && sc_plan_pick(r->plan) < 0) { /* an answer, but not a plan */
        char why[640];
        sc_plan_why(r->plan, why, sizeof why);
        rc = sc_cli_fail(SC_EXIT_LIMIT, why);
    }
    return rc;
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
    sc_plan_why(r->plan, why, sizeof why);
    set_str(L, "why", why);
    const sc_plan_split *sp = pick_split(r);
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
