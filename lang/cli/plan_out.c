/*
 * plan_out.c — what `stagecraft plan` prints (cmd_plan.h, docs/plan.md) of the
 * engine's plan (engine/plan.h):
 * the search in one line, the pick and why, the front; with --layers the
 * split and its gain over the even split, as Megatron's layout string and
 * torchtitan's names; --json the same as one object; --svg the front.
 */
#include "cli.h"
#include "cmd_plan.h"
#include "engine/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "formats/jsonw.h"
#include "ir/alloc.h"

/* The split of --layers, as text lines (the --json member: engine_json.c). */
static void print_partition(const sc_plan_run *r, const sc_plan_split *sp)
{
    char lay[4096], even[4096];
    sc_part_layout(r->layers, sp->S, sp->first, lay, sizeof lay);
    if (sp->even_w >= 0)
        sc_part_layout(r->layers, sp->S, sp->even, even, sizeof even);
    double best = sc_plan_cand_at(r->plan, sc_plan_pick(r->plan))->makespan;
    double ev = r->even_row.error ? NAN : r->even_row.makespan;
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
    if (sc_plan_pick_is_loop(r))
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
    sc_eng_plan_json(r, &w);
    putchar('\n');
}

static void print_text(const sc_plan_run *r)
{
    int n = sc_plan_count(r->plan), ok = 0, fit = 0;
    for (int i = 0; i < n; i++) {
        ok += !sc_plan_cand_at(r->plan, i)->error[0];
        fit += sc_plan_cand_at(r->plan, i)->fits;
    }
    char cap[96] = "no cap", left[96] = "";
    if (r->cap > 0)
        snprintf(cap, sizeof cap, "cap %s%s", sc_plan_cap_text(r->plan), r->bytes_cap ? "" : " units");
    if (r->fw)
        snprintf(cap + strlen(cap), sizeof cap - strlen(cap), ", for %s", sc_plan_fw_name(r->fw));
    if (r->fw && r->left_out)
        snprintf(left, sizeof left, " (%d more that %s does not run left out)", r->left_out,
                 sc_plan_fw_name(r->fw));
    printf("plan: p %d, m %d, %s; searched %d candidates%s in %.1f s: %d verified, %d within the cap\n",
           r->P, r->m, cap, r->evaluated, left, r->seconds, ok, fit);
    char why[640], name[200], peak[48];
    sc_plan_why(r->plan, why, sizeof why);
    int *front = sc_calloc((size_t)(n ? n : 1), sizeof *front);
    if (!front)
        return;
    int nf = sc_plan_front(r->plan, front), wide = 9, lean = sc_plan_lean(r->plan);
    if (sc_plan_pick(r->plan) >= 0) {
        printf("%s\n", why); /* else the error says it, after the front */
        sc_plan_for_print(r); /* the commands that reproduce it, who runs it */
        sc_plan_order_print(stdout, r); /* -D lengths: the order of the microbatches */
    }
    if (nf)
        printf("\nfront (makespan against peak memory; * the pick%s):\n",
               lean >= 0 ? ", ~ the least memory within 1 % of its time" : "");
    for (int j = 0; j < nf; j++) {
        sc_plan_name(sc_plan_cand_at(r->plan, front[j]), name, sizeof name);
        wide = (int)strlen(name) > wide ? (int)strlen(name) : wide;
    }
    if (nf)
        printf("  %-*s  makespan    bubble   lower bound  gap      peak\n", wide, "candidate");
    for (int j = 0; j < nf; j++) {
        const sc_plan_cand *c = sc_plan_cand_at(r->plan, front[j]);
        sc_plan_name(c, name, sizeof name);
        sc_plan_mem_text(r->plan, c->peak, peak, sizeof peak);
        char lb[32] = "-", gap[32] = "-";
        if (c->bound > 0) {
            snprintf(lb, sizeof lb, "%g", c->bound);
            snprintf(gap, sizeof gap, "%.2f%%", sc_plan_pct(sc_plan_gap(c)));
        }
        printf("%c %-*s  %-10g  %6.2f%%  %-11s  %-7s  %s%s\n",
               front[j] == sc_plan_pick(r->plan) ? '*' : front[j] == lean ? '~' : ' ', wide, name,
               c->makespan,
               100 * c->bubble, lb, gap, peak, c->fits ? "" : "  (over the cap)");
    }
    sc_free(front);
    const sc_plan_split *sp = sc_plan_pick_split(r);
    if (sp)
        print_partition(r, sp);
}

static int write_svg(const sc_plan_run *r, const char *svg)
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
                 : sc_write_atomic(svg, buf, len, err, sizeof err) ? sc_cli_fail(SC_EXIT_USAGE, err)
                                                                      : 0;
    free(buf);
    return rc;
}

int sc_plan_print(const sc_plan_run *r, int json, const char *svg)
{
    sc_plan_for_notes(r);
    int rc = sc_plan_for_write(r); /* --costs-out, before the lines that name it */
    if (rc)
        return rc;
    if (json)
        print_json(r);
    else
        print_text(r);
    fflush(stdout);
    rc = svg ? write_svg(r, svg) : 0;
    if (!rc && sc_plan_pick(r->plan) < 0) { /* an answer, but not a plan */
        char why[640];
        sc_plan_why(r->plan, why, sizeof why);
        rc = sc_cli_fail(SC_EXIT_LIMIT, why);
    }
    return rc;
}
