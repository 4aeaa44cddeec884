/*
 * commands.h — the commands of the command line, one row each
 * (docs/cli.md). Everything that names them comes from this table: the
 * dispatch in main.c (the handler of command `id` is cmd_<id> there), the
 * usage text of `stagecraft --help` and the REPL's ":help commands"
 * (sc_usage_text), the "unknown command" error and its "did you mean"
 * (sc_command_name). tests/py/lists.py compares the names with the
 * documentation's synopsis.
 *
 * X(id, synopsis, summary, note):
 *   id        the word typed (and the handler's name, cmd_<id>);
 *   synopsis  its usage after "stagecraft ", "\n" before a continuation
 *             line; NULL: no line of its own (help);
 *   summary   what it does, printed after the synopsis's last line (NULL:
 *             nothing);
 *   note      a line printed after the command's, in parentheses (NULL:
 *             none).
 * A new command is one row here and its handler cmd_<id> in main.c.
 *
 * Tested by: tests/ux.sh, tests/py/lists.py.
 */
#ifndef SC_COMMANDS_H
#define SC_COMMANDS_H

#define SC_COMMANDS(X)                                                                           \
    X(list, "list [RECIPE]", "recipes, their parameters and defaults", NULL)                     \
    X(check, "check RECIPE [-D k=v]...", "unroll, lower, verify; exit 0 only if valid", NULL)    \
    X(sim, "sim   RECIPE [-D k=v]... [--json] [--optimal[=SECONDS]]", NULL, NULL)              \
    X(show,                                                                                      \
      "show  RECIPE [-D k=v]... [--ascii | --dump | --svg FILE | --trace FILE] [--width N]\n"    \
      "[--from T0 --to T1]",                                                                     \
      NULL, NULL)                                                                                \
    X(compare, "compare RECIPE... [-D k=v]... [--json] [--fit] [--svg FILE]",                    \
      "one table of them all (--fit: only the rows within mem)",                                 \
      "(sim, compare: -D m=16,32,64 or -D link_gbps=10:100:10 sweeps, a row per value)")         \
    X(plan, "plan  -D p=N -D m=N [-D k=v]... [--cap UNITS|BYTES] [--costs FILE] [--layers SPEC]\n"   \
      "[--json] [--svg FILE]",                                                                  \
      "what to run: the front of time against memory, the pick", NULL)                     \
    X(export,                                                                                    \
      "export RECIPE [-D k=v]... --format torch-csv|torch-csv-comms|json|trace|svg [-o FILE]\n"  \
      "[--torch VERSION] [--torchtitan]",                                                        \
      "(torch-csv*: PyTorch's dialect; torchtitan's)",                                           \
      "(check, sim, show, export, import: --comm nccl|gloo|per-link, the runtime's P2P semantics)") \
    X(import,                                                                                    \
      "import FILE.csv [-D k=v]... [--comm MODE] [--eager-bytes N]\n"                            \
      "[--json | --dump | --format FORMAT [-o FILE]]",                                           \
      "verify and simulate a PyTorch schedule", NULL)                                            \
    X(costs, "costs --from-trace|--check TRACE.json... [-o FILE] [--json]",                     \
      "a cost file from torch.profiler traces (--check: their steps against the prediction)",    \
      NULL)                                                                                      \
    X(run, "run   RECIPE [-D k=v]... [--backend cpu|cuda] [--check] [--json] [--trace FILE]",    \
      NULL, "(check, sim, show: --time-limit SECONDS caps automatic scheduling, e.g. zb-auto)")  \
    X(help, NULL, NULL, NULL)

/* The i-th command's name, in the table's order; NULL past the end. */
const char *sc_command_name(int i);

/* The command line's usage text, made from the table once: `stagecraft
 * --help` and the REPL's ":help commands" print it, so the two cannot
 * differ. Not thread-safe on its first call. */
const char *sc_usage_text(void);

#endif
