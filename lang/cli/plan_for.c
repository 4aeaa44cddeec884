/*
 * plan_for.c — what `stagecraft plan` says after the pick (cmd_plan.h,
 * docs/plan.md#for-a-framework): the lines the engine words
 * (engine/plan_for.c: the commands that reproduce the pick, the frameworks
 * that run it), the notes, and --costs-out written.
 */
#include "cli.h"
#include "cmd_plan.h"

#include <stdio.h>
#include <string.h>

#include "formats/atomic.h"
#include "ir/alloc.h"

#define CMD_MAX 2048 /* a reproducing command: -D are short, paths up to 600 */

int sc_plan_for_option(sc_plan_settings *s, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (*i + 1 >= argc)
        return sc_cli_failf(SC_EXIT_USAGE, "%s needs a value", a);
    const char *v = argv[++*i];
    char err[512];
    if (sc_atomic_check(v, err, sizeof err) != 0)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    s->costs_out = v;
    return 0;
}

void sc_plan_for_notes(const sc_plan_run *r)
{
    if (r->notes & (SC_PLAN_NOTE_P | SC_PLAN_NOTE_M))
        fprintf(stderr, "stagecraft: note: plan: %s%s%s: planning for %d devices and %d microbatches "
                "(give -D p=N -D m=N)\n", r->notes & SC_PLAN_NOTE_P ? "no -D p given" : "",
                (r->notes & SC_PLAN_NOTE_P) && (r->notes & SC_PLAN_NOTE_M) ? ", " : "",
                r->notes & SC_PLAN_NOTE_M ? "no -D m given" : "", r->P, r->m);
    const char *tf = sc_plan_def(r, "tf"), *tb = sc_plan_def(r, "tb"), *tw = sc_plan_def(r, "tw");
    if (r->notes & SC_PLAN_NOTE_LAYERS_UNITS)
        fprintf(stderr, "stagecraft: note: plan: --layers times each stage from -D tf, tb, tw "
                "(%s, %s, %s), not from the model's seconds: the makespans are in those units "
                "(give -D tf, tb, tw in seconds for seconds)\n",
                tf ? tf : "1", tb ? tb : "1", tw ? tw : "1");
}

void sc_plan_for_print(const sc_plan_run *r)
{
    const sc_plan_cand *c = sc_plan_the_pick(r);
    if (!c)
        return;
    char *s = sc_calloc(1, CMD_MAX);
    if (!s)
        return;
    sc_plan_command(r, c, SC_PLAN_CMD_SIM, s, CMD_MAX);
    printf("  %-10s  %s\n", "sim", s);
    unsigned on = c->shape.runs_on;
    if (on & SC_FW_BIT(SC_FW_PYTORCH)) {
        sc_plan_command(r, c, SC_PLAN_CMD_EXPORT, s, CMD_MAX);
        printf("  %-10s  %s\n", "export", s);
    }
    if (sc_plan_split_of(r, c) && !r->costs_out)
        printf("  %-10s  SPLIT.json: the split's stage costs (--costs-out SPLIT.json writes them)\n",
               "costs");
    if (r->fw) {
        sc_plan_command(r, c, r->fw, s, CMD_MAX);
        printf("  %-10s  %s\n", sc_plan_fw_name(r->fw), s);
    } else { /* which run it, and why not the others */
        size_t at = 0;
        s[0] = 0;
#define PUT(...) (at < CMD_MAX ? (void)(at += (size_t)snprintf(s + at, CMD_MAX - at, __VA_ARGS__)) : (void)0)
        for (int fw = 1; fw < SC_FW_COUNT; fw++)
            if (on & SC_FW_BIT(fw))
                PUT("%s%s", at ? ", " : "", sc_plan_fw_name(fw));
        if (on)
            PUT(" (plan --for NAME prints the settings)");
        else /* what none runs: ours alone (offload, recomputation, ...) */
            PUT("no framework: %s", sc_plan_fw_why_not(&c->shape, SC_FW_PYTORCH));
        for (int fw = 1; fw < SC_FW_COUNT && on; fw++)
            if (!(on & SC_FW_BIT(fw)))
                PUT("; not %s: %s", sc_plan_fw_name(fw), sc_plan_fw_why_not(&c->shape, fw));
#undef PUT
        printf("  %-10s  %s\n", "runs on", s);
    }
    sc_free(s);
}

int sc_plan_for_write(const sc_plan_run *r)
{
    const sc_plan_cand *c = sc_plan_the_pick(r);
    const sc_plan_split *sp = c && r->costs_out ? sc_plan_split_of(r, c) : NULL;
    if (!sp)
        return 0;
    char err[700];
    sc_read rd = {.format = SC_READ_JSON};
    if (sc_read_file(sp->path, &rd, err, sizeof err) != SC_OK)
        return sc_cli_failf(SC_EXIT_ARG, "plan: the split's cost file: %s", err);
    int bad = sc_write_atomic(r->costs_out, rd.text, rd.len, err, sizeof err);
    sc_free(rd.text);
    return bad ? sc_cli_fail(SC_EXIT_USAGE, err) : 0;
}
