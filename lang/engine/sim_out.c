/*
 * sim_out.c — the --json object of `sim` and the program's digest
 * (sim_out.h): one writer for the command line and the library.
 */
#include "sim_out.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/json.h"
#include "ir/p2p.h"

void sc_eng_print_auto(FILE *out, lua_State *L, int info, sc_jw *w)
{
    static const char *const keys[] = {"makespan", "bubble_rate", "flow_bubble_rate", "seconds"};
    if (!info)
        return;
    lua_getfield(L, info, "method");
    lua_getfield(L, info, "heuristic");
    int h = lua_gettop(L);
    if (w) {
        sc_jw_object(w, "auto");
        sc_jw_str(w, "method", lua_tostring(L, h - 1));
        for (int k = 0; k < 4; k++) {
            lua_getfield(L, info, keys[k]);
            sc_jw_num(w, keys[k], lua_tonumber(L, -1));
            lua_pop(L, 1);
        }
        for (int k = 0; k < 3 && lua_istable(L, h); k++) {
            char key[64];
            snprintf(key, sizeof key, "heuristic_%s", keys[k]);
            lua_getfield(L, h, keys[k]);
            sc_jw_num(w, key, lua_tonumber(L, -1));
            lua_pop(L, 1);
        }
        sc_jw_end(w);
    } else {
        fprintf(out, "schedule      %s won", lua_tostring(L, h - 1));
        if (lua_istable(L, h)) {
            lua_getfield(L, h, "bubble_rate");
            lua_getfield(L, h, "makespan");
            fprintf(out, " (heuristic: bubble %.4f%%, makespan %.6g)", 100 * lua_tonumber(L, -2),
                    lua_tonumber(L, -1));
            lua_pop(L, 2);
        }
        lua_getfield(L, info, "seconds");
        fprintf(out, " in %.3g s\n", lua_tonumber(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
}

sc_status sc_eng_sim_json(sc_jw *w, lua_State *L, const sc_limits *lim, sc_lprog *lp,
                          const sc_sim *sim, const char *recipe, int info, sc_eng_optimal *opt)
{
    sc_prog *pg = lp->pg;
    int P = sc_prog_devices(pg);
    double *idle = calloc((size_t)P, sizeof *idle);
    if (!idle)
        return SC_ERR_NOMEM;
    int bneck = sc_lua_balance(sim, idle);
    double peak = 0;
    for (int d = 0; d < P; d++)
        peak = fmax(peak, sim->peak_mem[d]);
    sc_jw_str(w, "recipe", recipe);
    sc_jw_int(w, "devices", P);
    sc_jw_int(w, "stages", sc_prog_stages(pg));
    sc_jw_int(w, "microbatches", sc_prog_microbatches(pg) / sc_prog_slices(pg));
    if (sc_prog_slices(pg) > 1) /* docs/slices.md */
        sc_jw_int(w, "slices", sc_prog_slices(pg));
    sc_jw_int(w, "instructions", (long long)sc_prog_total_instructions(pg));
    sc_eng_print_lengths(NULL, pg, w);
    sc_jw_num(w, "makespan", sim->makespan);
    sc_jw_num(w, "bubble_rate", sim->bubble_rate);
    sc_eng_print_bound(NULL, lim, pg, sim->makespan, opt, w);
    sc_jw_nums(w, "peak_memory", sim->peak_mem, P);
    sc_jw_num(w, "peak_memory_max", peak);
    sc_jw_nums(w, "busy", sim->busy, P);
    sc_jw_nums(w, "idle", idle, P);
    free(idle);
    if (bneck >= 0)
        sc_jw_int(w, "bottleneck", bneck);
    else
        sc_jw_null(w, "bottleneck");
    if (sc_prog_copies(pg) > 1) { /* docs/guide.md#copies: parameters per device */
        sc_jw_int(w, "copies", sc_prog_copies(pg));
        sc_jw_array(w, "param_share");
        for (int d = 0; d < P; d++)
            sc_jw_num(w, NULL, sc_prog_param_share(pg, d));
        sc_jw_end(w);
    }
    if (sc_prog_ep(pg) > 1) { /* docs/semantics.md#expert-parallelism */
        sc_jw_int(w, "ep", sc_prog_ep(pg));
        sc_jw_array(w, "ep_time"); /* each stage's all-to-alls per pass */
        for (int s = 0; s < sc_prog_stages(pg); s++)
            sc_jw_num(w, NULL, sc_prog_ep_time(pg, s));
        sc_jw_end(w);
    }
    sc_eng_print_auto(NULL, L, info, w);
    sc_eng_print_offload(NULL, pg, sim, w);
    sc_eng_print_recompute(NULL, pg, w);
    sc_eng_print_vocab(NULL, pg, sim, w);
    if (sc_prog_seconds(pg)) { /* a cost file: the step in seconds (docs/costs.md) */
        sc_jw_str(w, "time_unit", "s");
        sc_jw_num(w, "predicted_step_time_s", sim->step);
    }
    sc_eng_print_steps(NULL, pg, sim, w);
    return SC_OK;
}

sc_status sc_eng_program_digest(sc_lprog *lp, char hex[17])
{
    int was = sc_prog_lower_target(lp->pg);
    sc_status st = was != SC_LOWER_STREAMS ? sc_lua_set_lower_target(lp, SC_LOWER_STREAMS) : SC_OK;
    const sc_sim *sim = st ? NULL : sc_lua_sim(lp, &st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = sim ? open_memstream(&buf, &len) : NULL;
    if (f) {
        st = sc_json_write(f, lp->pg, sim, "program"); /* the name as the package gives it: not hashed */
        if (fclose(f) != 0 && !st)
            st = SC_ERR_NOMEM;
    } else if (sim) {
        st = SC_ERR_NOMEM;
    }
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; !st && i < len; i++)
        h = (h ^ (unsigned char)buf[i]) * 0x100000001b3u;
    free(buf);
    if (!st && was != SC_LOWER_STREAMS)
        st = sc_lua_set_lower_target(lp, was);
    if (!st)
        snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return st;
}
