/*
 * bound_out.c — the lower bound on the makespan and the gap (docs/bound.md)
 * as `sim` prints them: a text line, or members of the --json object.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>

#include "bound/bound.h"

void sc_cli_print_bound(const sc_prog *pg, double makespan, sc_jw *w)
{
    sc_bound b;
    if (sc_bound_prog(pg, &b) != SC_OK)
        return;
    double gap = sc_bound_gap(makespan, b.bound);
    if (w) {
        static const char *const keys[] = {
#define X(name, text) #name,
            SC_BOUND_TERMS(X)
#undef X
        };
        sc_jw_num(w, "lower_bound", b.bound);
        sc_jw_num(w, "bound_gap", gap);
        sc_jw_str(w, "bound_binding", sc_bound_term_name(b.binding));
        sc_jw_str(w, "bound_why", b.why);
        sc_jw_object(w, "bound_terms");
        for (int t = 0; t < SC_BOUND_TERM_COUNT; t++) {
            char key[16];
            int n = 0;
            for (const char *k = keys[t]; *k && n < 15; k++)
                key[n++] = (char)(*k >= 'A' && *k <= 'Z' ? *k - 'A' + 'a' : *k);
            key[n] = 0;
            sc_jw_num(w, key, b.term[t]);
        }
        sc_jw_end(w);
        return;
    }
    printf("lower bound   %.6g%s, within %.2f %% (%s)\n", b.bound, sc_prog_seconds(pg) ? " s" : "",
           100 * gap, b.why);
}
