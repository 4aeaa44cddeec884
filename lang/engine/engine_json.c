/*
 * engine_json.c — the --json objects of `compare` and `plan`, written once
 * for the command line (compare_out.c, plan_out.c) and the C library
 * (stagecraft_compare_json, stagecraft_plan_json): the Python package's
 * Comparison.rows and Plan.raw are the command's, by construction.
 */
#include "compare.h"
#include "plan.h"

#include <math.h>

#include "bound/bound.h"

/* Per-device numbers; scaled (scale > 0) to whole bytes. */
static void json_nums(sc_jw *w, const char *key, const double *v, int n, double scale)
{
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++)
        if (scale > 0)
            sc_jw_whole(w, NULL, v[i] * scale);
        else
            sc_jw_num(w, NULL, v[i]);
    sc_jw_end(w);
}

void sc_eng_compare_json(const cmp *c, sc_jw *jw)
{
    sc_jw_object(jw, NULL);
    sc_jw_array(jw, "rows"); /* a row a line */
    sc_jw_layout(jw, "\n  ", ",\n  ", "\n");
    for (int i = 0; i < c->nrows; i++) {
        const row *r = &c->rows[i];
        if (c->fit && r->over_mem)
            continue;
        sc_jw_object(jw, NULL);
        sc_jw_str(jw, "recipe", c->recipes[r->recipe]);
        sc_jw_object(jw, "parameters");
        for (int k = 0; k < c->ndefs; k++) {
            const char *v = c->defs[k].values[sc_eng_compare_value_of(c, r->combo, k)];
            double x;
            if (sc_eng_compare_number(v, &x))
                sc_jw_num(jw, c->defs[k].name, x);
            else
                sc_jw_str(jw, c->defs[k].name, v);
        }
        sc_jw_end(jw);
        if (r->error) {
            sc_jw_str(jw, "error", r->error);
            sc_jw_int(jw, "exit_code", r->code);
            if (r->over_mem)
                sc_jw_bool(jw, "over_mem", 1);
            sc_jw_end(jw);
            continue;
        }
        sc_jw_int(jw, "devices", r->P);
        sc_jw_int(jw, "stages", r->S);
        sc_jw_int(jw, "microbatches", r->m);
        sc_jw_int(jw, "instructions", (long long)r->instructions);
        sc_jw_num(jw, "makespan", r->makespan);
        sc_jw_num(jw, "lower_bound", r->bound);
        sc_jw_num(jw, "bound_gap", sc_bound_gap(r->makespan, r->bound));
        sc_jw_num(jw, "bubble_rate", r->bubble);
        json_nums(jw, "idle", r->idle, r->P, 0);
        if (r->bneck >= 0)
            sc_jw_int(jw, "bottleneck", r->bneck);
        else
            sc_jw_null(jw, "bottleneck");
        json_nums(jw, "peak_memory", r->peak, r->P, 0);
        sc_jw_num(jw, "peak_memory_max", r->peak_max);
        if (c->bytes || r->own_model) {
            sc_jw_num(jw, "unit_bytes", r->unit_bytes);
            json_nums(jw, "peak_bytes", r->peak, r->P, r->unit_bytes);
            sc_jw_whole(jw, "peak_bytes_max", r->peak_max * r->unit_bytes);
        }
        if (r->own_model) { /* the whole device (docs/model.md#bytes) */
            json_nums(jw, "total_bytes", r->total, r->P, 1);
            sc_jw_whole(jw, "total_bytes_max", r->total_max);
        }
        sc_jw_end(jw);
    }
    sc_jw_end(jw);
    sc_jw_end(jw);
}

static void json_partition(const sc_plan_run *r, const sc_plan_split *sp, sc_jw *w)
{
    char lay[4096], even[4096];
    sc_part_layout(r->layers, sp->S, sp->first, lay, sizeof lay);
    if (sp->even_w >= 0)
        sc_part_layout(r->layers, sp->S, sp->even, even, sizeof even);
    double best = sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->makespan;
    double ev = r->even_row.error ? NAN : r->even_row.makespan;
    sc_jw_object(w, "partition");
    sc_jw_str(w, "layers", r->layers_spec);
    sc_jw_int(w, "stages", sp->S);
    sc_jw_ints(w, "first_layer", sp->first, sp->S);
    sc_jw_num(w, "heaviest_stage", sp->best_w);
    sc_jw_str(w, "layout", lay);
    if (sc_plan_pick_is_loop(r))
        sc_jw_str(w, "megatron_layout", lay);
    else
        sc_jw_null(w, "megatron_layout");
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
}

void sc_eng_plan_json(const sc_plan_run *r, sc_jw *jw)
{
    sc_jw_object(jw, NULL);
    sc_jw_int(jw, "devices", r->P);
    sc_jw_int(jw, "microbatches", r->m);
    sc_jw_str(jw, "memory_unit", r->bytes_cap ? "bytes" : "units");
    sc_jw_int(jw, "searched", r->evaluated);
    sc_jw_num_g(jw, "seconds", r->seconds, 3);
    sc_plan_json(r->plan, jw);
    sc_plan_for_json(r, jw);
    sc_plan_order_json(r, jw);
    const sc_plan_split *sp = sc_plan_pick_split(r);
    if (sp)
        json_partition(r, sp, jw);
    sc_jw_end(jw);
}

