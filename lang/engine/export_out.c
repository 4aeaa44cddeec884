/*
 * export_out.c — the checks and the writing of one program's export
 * (export_out.h), moved from the command line so that the library's
 * export is the command's.
 */
#include "export_out.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "formats/export.h"
#include "formats/json.h"
#include "formats/torchcsv.h"
#include "formats/trace.h"
#include "ir/p2p.h"

int sc_eng_torch_version(const char *s, int *v)
{
    char *end;
    long major = strtol(s, &end, 10), minor = -1;
    if (end != s && *end == '.')
        minor = strtol(end + 1, &end, 10);
    if (*end == '.') /* a patch release: 2.14.1 */
        strtol(end + 1, &end, 10);
    if (*end || major < 0 || minor < 0 || minor > 99)
        return sc_eng_failf(SC_EXIT_USAGE, "--torch '%.40s': expected a PyTorch version like 2.15 or 2.14.1", s);
    if (major < 2 || (major == 2 && minor < 4))
        return sc_eng_failf(SC_EXIT_USAGE, "--torch %.40s: torch.distributed.pipelining reads schedule CSV "
                            "files from PyTorch 2.4 on", s);
    *v = major > 2 ? 299 : (int)(100 * major + minor);
    return 0;
}

int sc_eng_placement_kind(const sc_prog *pg)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), loop = S % P == 0, v = S == 2 * P;
    for (int s = 0; s < S; s++) {
        int d = sc_prog_stage_device(pg, s);
        loop &= d == s % P;
        v &= d == (s < P ? s : 2 * P - 1 - s);
    }
    return loop ? 1 : v ? 2 : 0;
}

int sc_eng_torch_check(const sc_prog *pg, int comms, int titan)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    if (sc_vocab_split(sc_prog_vocab(pg)))
        return sc_eng_failf(SC_EXIT_ARG, "PyTorch's pipelining schedules have no vocabulary passes or "
                            "collectives (vocab_par = %s): export json, trace or svg",
                            sc_vocab_name(sc_prog_vocab(pg)));
    if (titan && comms)
        return sc_eng_fail(SC_EXIT_USAGE, "--torchtitan: torchtitan loads compute_only files "
                           "(--format torch-csv); PyTorch then adds the communication itself");
    if (titan && sc_eng_placement_kind(pg) == 0)
        return sc_eng_failf(SC_EXIT_ARG, "--torchtitan: torchtitan places stages by its schedule class "
                            "(loop: stage s on rank s mod %d, or V: rank d holds d and %d-d), and this "
                            "placement is neither (stage %d on rank %d); run it with the Python package "
                            "(docs/interchange.md#python)", P, 2 * P - 1, S - 1,
                            sc_prog_stage_device(pg, S - 1));
    return 0;
}

int sc_eng_export_prepare(lua_State *L, sc_lprog *lp, const char *format, const char *torch,
                          int titan, int *version, const sc_sim **sim)
{
    *version = SC_TORCH_CURRENT;
    *sim = NULL;
    if (!format)
        return sc_eng_failf(SC_EXIT_USAGE, "export needs --format (%s)", sc_export_format_list());
    if (sc_export_format_named(format) < 0)
        return sc_eng_failf(SC_EXIT_USAGE, "unknown format '%s' (%s)", format, sc_export_format_list());
    int csv = strncmp(format, "torch-csv", 9) == 0, rc;
    if ((torch || titan) && !csv)
        return sc_eng_failf(SC_EXIT_USAGE, "%s applies to --format torch-csv and torch-csv-comms only",
                            torch ? "--torch" : "--torchtitan");
    if (torch && (rc = sc_eng_torch_version(torch, version)))
        return rc;
    /* A compute_comms file is lowered for its own reading
     * (docs/semantics.md#lowering-per-mode). The simulation verifies the
     * program in the replay that times it, so no check before it (issue
     * 34: export cost about 2x sim). */
    int comms = strcmp(format, "torch-csv-comms") == 0;
    sc_status st = comms ? sc_lua_set_lower_target(lp, SC_LOWER_FILE) : SC_OK;
    if (!st)
        *sim = sc_lua_sim(lp, &st);
    if (st)
        return L ? sc_eng_status_fail(L, st, "%s%s", lp->where, sc_errmsg(lp->pg))
                 : sc_eng_failf(sc_status_exit_code(st), "%s%s", lp->where, sc_errmsg(lp->pg));
    int steps = sc_prog_steps(lp->pg), sync = sc_prog_optim_sync(lp->pg);
    if (csv && (steps > 1 || sync != SC_SYNC_NONE))
        return sc_eng_failf(SC_EXIT_ARG, "cannot write %s: a PyTorch schedule holds one training step without "
                            "optimizer synchronization: export with -D steps=1 -D optim_sync=none "
                            "(this program has %d steps, optim_sync %s)", format, steps,
                            sc_sync_name(sync));
    return csv ? sc_eng_torch_check(lp->pg, comms, titan) : 0;
}

sc_status sc_eng_export_write(FILE *f, sc_prog *pg, const sc_sim *sim, const char *format,
                              const char *name, int version, const sc_svg_opts *svg)
{
    if (strcmp(format, "torch-csv") == 0)
        return sc_torchcsv_write(f, pg, SC_TORCH_COMPUTE_ONLY, version);
    if (strcmp(format, "torch-csv-comms") == 0)
        return sc_torchcsv_write(f, pg, SC_TORCH_COMPUTE_COMMS, version);
    if (strcmp(format, "json") == 0)
        return sc_json_write(f, pg, sim, name);
    if (strcmp(format, "svg") == 0)
        return sc_svg_write_opts(f, pg, sim, name, svg);
    sc_timing t = {sim, "simulated", sc_prog_seconds(pg) ? 1e6 : 0}; /* seconds: as is */
    return sc_trace_write(f, pg, &t, 1);
}
