/*
 * commands.c — the usage text and the names of the commands, made from
 * their table (commands.h).
 */
#include "commands.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name, *synopsis, *summary, *note;
} commands[] = {
#define X(id, synopsis, summary, note) {#id, synopsis, summary, note},
    SC_COMMANDS(X)
#undef X
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

const char *sc_command_name(int i)
{
    return i >= 0 && (size_t)i < NCOMMANDS ? commands[i].name : NULL;
}

/* Summaries start at this column, or 3 spaces after a longer synopsis;
 * continuation lines are indented to the first word after the command. */
enum { SUMMARY_COL = 38, LONG_GAP = 3, CONT_INDENT = 19 };

typedef struct text {
    char s[4096];
    size_t n; /* bytes written; the text is cut at the buffer's end */
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
    va_end(ap);
    t->n += k > 0 ? (size_t)k : 0;
    if (t->n >= sizeof t->s)
        t->n = sizeof t->s - 1;
}

/* "  stagecraft SYNOPSIS   SUMMARY", continuation lines indented. */
static void line(text *t, const char *synopsis, const char *summary)
{
    add(t, "  stagecraft%s", synopsis[0] ? " " : "");
    size_t col = synopsis[0] ? 13 : 12;
    for (const char *s = synopsis; *s; s++)
        if (*s == '\n') {
            add(t, "\n%*s", CONT_INDENT, "");
            col = CONT_INDENT;
        } else {
            add(t, "%c", *s);
            col++;
        }
    if (summary)
        add(t, "%*s%s", (int)(col < SUMMARY_COL ? SUMMARY_COL - col : LONG_GAP), "", summary);
    add(t, "\n");
}

const char *sc_usage_text(void)
{
    static text t;
    if (t.n)
        return t.s;
    add(&t, "usage: stagecraft [COMMAND] ...\n");
    line(&t, "", "interactive REPL (stdin as a script if not a TTY)");
    line(&t, "FILE.lua [args...]", "run a script (the module is the global 'sc')");
    line(&t, "--version", "print the version");
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const struct command *c = &commands[i];
        if (c->synopsis)
            line(&t, c->synopsis, c->summary);
        if (c->note)
            add(&t, "  %s\n", c->note);
    }
    add(&t, "%s",
        "RECIPE is a stdlib name (see 'stagecraft list') or a path to a .lua file.\n"
        "Recipes and scripts run in a sandbox; the REPL and stdin do not. Options (before\n"
        "FILE.lua, or anywhere after a command):\n"
        "  --trust             lift the sandbox (for your own recipes and scripts)\n"
        "  --allow-write DIR   the folder a recipe or script may write files in (else none)\n"
        "  --max-steps N       Lua instructions per evaluation (default 1e9; 0: no limit)\n"
        "  --max-mem BYTES     Lua heap, programs, files read, like 512M (default 1G; 0: no limit)\n"
        "  --max-time SECONDS  wall clock per evaluation or reading (default 60; 0: no limit)\n"
        "  --force-costs       use a cost file measured on another model anyway\n");
    return t.s;
}
