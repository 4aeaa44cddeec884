/*
 * cli.h — what the commands of the command line share (common.c: errors,
 * limits, evaluating a recipe), their file outputs and the import command
 * (cli_export.c; docs/cli.md): export, show --svg/--trace, import.
 *
 * Every function prints its own one-line error ("stagecraft: error: ...")
 * and returns the exit code (0 on success). Files are written through
 * formats/atomic.h (a temporary file renamed into place; links followed,
 * FIFOs and devices written directly, modes kept), several files all or
 * none, so a failed export leaves nothing half-written; "-" is standard
 * output.
 *
 * Tested by: tests/cli.sh, tests/errors.sh.
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include "formats/jsonw.h"
#include "formats/readfile.h"
#include "formats/svg.h"
#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"
#include "engine/engine.h"

/* export: format torch-csv, torch-csv-comms, json, trace or svg; out is a
 * path, or NULL / "-" for standard output. torch: the PyTorch version of
 * --torch (NULL: the current one); titan: --torchtitan; svg: width and
 * window of an svg (NULL: the defaults). */
int sc_cli_export(const char *recipe, const char *format, const char *out, const char *torch,
                  int titan, sc_lprog *lp, const sc_svg_opts *svg);

/* sim --optimal --export-optimal FILE: writes lua (the best schedule as a
 * recipe, engine/sim_out.h's sc_eng_optimal) to path, whole or not at all
 * (formats/atomic.h); lua NULL (no schedule found) is an error. 0, or the
 * exit code of the error printed. */
int sc_cli_write_optimal(const char *path, const char *lua);

/* The program's digest (engine/sim_out.h: sc_eng_program_digest, also the
 * library's stagecraft_digest), 16 hex digits into hex: sim --json
 * --with-program gives it, and --expect-digest holds a later command to it,
 * so that several commands on one recipe never mix two evaluations of a
 * recipe that depends on the clock or on a file that changed. 0, or the
 * exit code of the error printed. */
int sc_cli_program_digest(sc_lprog *lp, char hex[17]);
/* --expect-digest HEX: 0 when the program's digest is hex, else the error
 * (exit code 8: the recipe gave another program). */
int sc_cli_expect_digest(sc_lprog *lp, const char *recipe, const char *hex);

/* cli_torch.c. --torch VERSION ("2.15", "2.14.1") as 100 * major + minor
 * in *v; on a bad one prints the error and returns its exit code. */
int sc_cli_torch_version(const char *s, int *v);
/* Prints on stderr, for a torch-csv export to `out`, the stage -> rank
 * placement, how PyTorch loads the file and, for compute_only, the
 * torchtitan settings. With titan, a program torchtitan cannot run (a
 * compute_comms file, a placement it cannot express) is refused: prints
 * the error and returns its exit code; else 0. */
int sc_cli_torch_note(sc_prog *pg, const char *out, int comms, int version, int titan);

/* show --svg FILE and/or --trace FILE; text (--ascii or --dump given too)
 * is refused: they print to the terminal, these write files. */
int sc_cli_show_files(const char *recipe, const char *svg, const char *trace, int text,
                      sc_lprog *lp, const sc_svg_opts *so);
/* compare --svg FILE: n programs stacked on one time axis. */
int sc_cli_svg_stack(const char *path, int n, const sc_prog *const *pgs,
                     const sc_sim *const *sims, const char *const *titles, const sc_svg_opts *o);

/* run --trace FILE: the measured timeline (seconds) beside the simulated
 * one: in seconds too when `seconds` (costs from a cost file or a
 * profile), else scaled to the same span. */
int sc_cli_run_trace(const char *path, sc_prog *pg, const sc_sim *sim, const sc_sim *measured,
                     int seconds);

/* A failure of interp (status st) after the evaluation: the memory
 * limit's message and exit code 7 when the failure is a C allocation the
 * limit refused, else the formatted message and st's exit code. */
int sc_cli_status_fail(sc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "stagecraft: error: msg" on stderr, control bytes other than
 * newline and tab as \xNN; returns code. */
int sc_cli_fail(int code, const char *msg);

/* An option that check, sim, show and export do not know: the message,
 * with the nearest of theirs ("did you mean '--json'?"), exit code 2. */
int sc_cli_unknown_option(const char *opt, const char *cmd);
/* The same with the message formatted (up to 1 KiB). */
int sc_cli_failf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The limits of every evaluation of this process (--max-steps, ...). */
sc_limits *sc_cli_limits(void);
/* Prints the error on the stack top (one line; a limit named as such), pops
 * it, returns its exit code. */
int sc_cli_lua_fail(lua_State *L);
/* The output files of one command (names[i] the option, paths[i] its
 * file or NULL): 0 when no two land in one file (sc_atomic_same), else
 * "--trace and --profile name the same file 'x.json': ..." and exit
 * code 2, before anything runs: the second write would replace the
 * first and one output would be lost. */
int sc_cli_outputs_apart(const char *const *names, const char *const *paths, int n);
/* --trust and the limits options at argv[i]: the arguments used (0: not one
 * of them; < 0: an error, message in msg). */
int sc_cli_option(lua_State *L, int argc, char **argv, int i, char *msg, size_t len);

/* cli_fit.c: sc_cli_lua_fail, and sc_cli_status_fail of pg's error after
 * `where`, with the engine's hint (sc_eng_fit_hint) when the failure is a
 * refusal by the cap (t: the overrides; 0: none). */
int sc_cli_lua_fail_fit(lua_State *L, const char *recipe, int t);
int sc_cli_status_fail_fit(lua_State *L, sc_status st, const char *recipe, int t,
                           const char *where, sc_prog *pg);

/* The options the commands share, at argv[*i]; each moves *i past its
 * value and returns 0, or prints the usage error and returns its exit code
 * (2). sc_cli_define: -D NAME=VALUE (or -DNAME=VALUE): the name (*nlen
 * bytes) and the value; sc_cli_define_into also grants the value (above)
 * and sets overrides[name] = value in the table at index t.
 * sc_cli_time_limit: --time-limit S, seconds 0..1e9, into sc._time_limit
 * (read by the automatic schedules) and *out when not NULL. sc_cli_time:
 * --from or --to T, a finite time >= 0. */
int sc_cli_define(int argc, char **argv, int *i, const char **name, size_t *nlen,
                  const char **value);
int sc_cli_define_into(lua_State *L, int argc, char **argv, int *i, int t);
int sc_cli_time_limit(lua_State *L, int argc, char **argv, int *i, double *out);
int sc_cli_time(int argc, char **argv, int *i, double *out);

/* `--model FILE` (--model=FILE) of every command as -D model=FILE, and
 * `--layers SPEC` of every command but plan as -D split=SPEC
 * (docs/model.md), rewritten in argv in place; usage errors printed, their
 * exit code returned. _free: the texts made, after the command. */
int sc_cli_model_options(int argc, char **argv);
void sc_cli_model_options_free(void);

/* cmd_list.c: stagecraft list [RECIPE] (one line per stdlib recipe; a
 * recipe's doc and parameters). */
int sc_cli_list(lua_State *L, const char *recipe);

/* stagecraft import FILE.csv [-D k=v]... [--json | --dump] */
int sc_cli_import(int argc, char **argv);

/* The mode a CSV file's name states (docs/modes.md#files): NAME.nccl.csv,
 * NAME.gloo.csv or NAME.per-link.csv give SC_P2P_NCCL, _GLOO, _LINK (p2p.h);
 * any other name (or NULL) -1. import reads a file in its stated mode
 * unless --comm names one. */
int sc_cli_comm_of_name(const char *path);

/* A compute_comms export to a file whose name states a mode other than the
 * program's: the usage error, printed (its exit code); else 0. */
int sc_cli_export_name_check(const sc_prog *pg, const char *out, const char *format);
/* The readers' bounds (common.c; docs/sandbox.md#files-read): the deadline
 * of a command that reads files a user names (import, costs), now plus
 * --max-time (0: none), taken when the command starts. */
double sc_cli_deadline(void);
/* Reads the file at path (readfile.h) as `format`, at most --max-mem
 * bytes, until deadline, into rd (rd->text: sc_free). 0, or the exit code
 * after the error line: cannot read (2), not of its format (3), larger
 * than --max-mem or past the deadline (7), the memory limit (7). what:
 * how messages name it ("trace"; NULL: the path in quotes). */
int sc_cli_read(const char *path, const char *what, int format, double deadline, sc_read *rd);
/* The time limit's error line for `doing` ("reading trace t.json"): exit 7. */
int sc_cli_time_fail(const char *doing);

/* cli_costs.c: stagecraft costs --from-trace TRACE.json... [-o FILE]
 * (docs/costs.md#costs-from-a-pytorch-trace). */
int sc_cli_costs(int argc, char **argv);
/* cli_costs.c: the cost file at path into pg's costs (sc_costs_apply;
 * import -D costs=FILE): 0, or the exit code after the error line ("cost
 * file FILE: ..."); force: --force-costs (a file of other stages, with a
 * warning). */
int sc_cli_apply_cost_file(sc_prog *pg, const char *path, int force, double deadline);

#endif
