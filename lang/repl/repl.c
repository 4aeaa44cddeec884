/*
 * repl.c — the interactive REPL (repl.h), on lua.c's skeleton: "return
 * LINE" first, "<eof>" means the chunk continues, a message handler adds
 * the traceback (only through a function of the user's), and SIGINT sets a count hook that raises "interrupted".
 */
#include "repl.h"
#include "sandbox/sc_limits.h"

#include <errno.h>
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lua/sc_lua.h"

#ifdef SC_HAVE_READLINE
#include <readline/history.h>
#include <readline/readline.h>
#include <sys/select.h>
#endif

#define PROMPT "> "
#define PROMPT2 ">> "
#define HISTORY_FILE ".stagecraft_history"
#define HISTORY_MAX 1000

/* ---- Ctrl-C --------------------------------------------------------------- */

enum { MODE_IDLE, MODE_READING, MODE_EVAL };

static lua_State *g_L;
static volatile sig_atomic_t g_mode, g_sigint;

/* Raised from the hook that SIGINT sets while Lua runs. The hook stays
 * until the evaluation ends (docall removes it): every later instruction
 * raises too, so that a pcall inside the line (or the printer's own, around
 * sc.pretty) cannot swallow the interrupt and go on looping. */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    luaL_error(L, "interrupted");
}

static void on_sigint(int sig)
{
    (void)sig;
    g_sigint = 1;
    if (g_mode == MODE_EVAL) /* lua_sethook is safe here: lua.c does the same */
        lua_sethook(g_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* ---- reading lines ---------------------------------------------------------- */

#ifdef SC_HAVE_READLINE

static char *history_path;

static void history_open(void)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return;
    size_t n = strlen(home) + sizeof HISTORY_FILE + 2;
    history_path = malloc(n);
    if (!history_path)
        return;
    snprintf(history_path, n, "%s/%s", home, HISTORY_FILE);
    using_history();
    /* A multi-line chunk stays one entry: each entry is written after a
     * timestamp line, and the lines up to the next timestamp are read back
     * as one entry. */
    history_comment_char = '#'; /* timestamps are "#SECONDS" lines */
    history_write_timestamps = 1;
    history_multiline_entries = 1;
    if (read_history(history_path) != 0)
        write_history(history_path); /* create it, so that appending works */
}

static void history_add(const char *chunk)
{
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (!*chunk || (last && strcmp(last->line, chunk) == 0))
        return;
    add_history(chunk);
    if (history_path)
        append_history(1, history_path);
}

/* Keeps the file to its last HISTORY_MAX entries, whole entries (the
 * file's lines are not entries: history_truncate_file would cut one). The
 * file is read again, so entries other sessions appended are kept. */
static void history_close(void)
{
    if (history_path) {
        clear_history();
        if (read_history(history_path) == 0 && history_length > HISTORY_MAX) {
            stifle_history(HISTORY_MAX);
            write_history(history_path);
            unstifle_history();
        }
        clear_history();
    }
    free(history_path);
    history_path = NULL;
}

static char *cb_line;
static int cb_done;

static void on_line(char *line)
{
    cb_line = line;
    cb_done = 1;
    rl_callback_handler_remove();
}

/* One line (malloc'd, without newline), NULL at end of input; *intr when
 * Ctrl-C dropped the line. The callback interface lets a SIGINT end the
 * wait cleanly (select returns EINTR). */
static char *read_line(const char *prompt, int *intr)
{
    *intr = 0;
    cb_done = 0;
    cb_line = NULL;
    g_sigint = 0;
    g_mode = MODE_READING;
    rl_callback_handler_install(prompt, on_line);
    int fd = fileno(rl_instream ? rl_instream : stdin);
    while (!cb_done) {
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        int r = select(fd + 1, &fds, NULL, NULL, NULL);
        if (r < 0 && errno == EINTR && g_sigint) {
            g_sigint = 0;
            rl_free_line_state();
            rl_callback_sigcleanup();
            rl_cleanup_after_signal();
            rl_callback_handler_remove();
            fputc('\n', stdout);
            *intr = 1;
            break;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rl_callback_handler_remove();
            break;
        }
        rl_callback_read_char();
    }
    g_mode = MODE_IDLE;
    return cb_line;
}

#else /* without readline: fgets */

static void history_open(void) {}
static void history_add(const char *chunk) { (void)chunk; }
static void history_close(void) {}

static char *read_line(const char *prompt, int *intr)
{
    static char buf[8192];
    *intr = 0;
    fputs(prompt, stdout);
    fflush(stdout);
    g_sigint = 0;
    g_mode = MODE_READING;
    char *s = fgets(buf, sizeof buf, stdin);
    g_mode = MODE_IDLE;
    if (!s) {
        if (g_sigint && ferror(stdin)) {
            clearerr(stdin);
            fputc('\n', stdout);
            *intr = 1;
        }
        return NULL;
    }
    size_t n = strlen(s);
    if (n && s[n - 1] == '\n')
        s[n - 1] = 0;
    return strdup(s);
}

#endif

/* ---- completion ---------------------------------------------------------- */

#ifdef SC_HAVE_READLINE

static const char *const lua_keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
    "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", NULL,
};

typedef struct names {
    char **v;
    size_t n, cap;
} names;

static void names_add(names *ns, const char *prefix, size_t plen, const char *name)
{
    if (ns->n + 1 >= ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 64;
        char **v = realloc(ns->v, cap * sizeof *v);
        if (!v)
            return;
        ns->v = v;
        ns->cap = cap;
    }
    size_t n = strlen(name);
    char *s = malloc(plen + n + 1);
    if (!s)
        return;
    memcpy(s, prefix, plen);
    memcpy(s + plen, name, n + 1);
    ns->v[ns->n++] = s;
}

static int is_ident(const char *s)
{
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

typedef struct query {
    const char *text;   /* the word being completed */
    size_t plen;        /* length of "a.b." or "a:" before the partial name */
    int methods;        /* after ':': functions only */
    names *out;
} query;

/* Adds the identifier keys of the table at idx that start with the partial
 * name (functions only for methods). */
static void add_keys(lua_State *L, int idx, const query *q)
{
    const char *part = q->text + q->plen;
    size_t pl = strlen(part);
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -2);
            if (is_ident(k) && strncmp(k, part, pl) == 0 && (k[0] != '_' || part[0] == '_') &&
                (!q->methods || lua_type(L, -1) == LUA_TFUNCTION))
                names_add(q->out, q->text, q->plen, k);
        }
        lua_pop(L, 1);
    }
}

/* Names of the value at idx: its keys (tables), and through its metatable
 * the __index table chain, __methods and __fields (stagecraft objects). */
static void add_names(lua_State *L, int idx, const query *q, int depth)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE)
        add_keys(L, idx, q);
    if (depth > 4 || !lua_getmetatable(L, idx))
        return;
    int mt = lua_gettop(L);
    if (lua_getfield(L, mt, "__methods") == LUA_TTABLE)
        add_keys(L, -1, q);
    lua_pop(L, 1);
    if (!q->methods && lua_getfield(L, mt, "__fields") == LUA_TTABLE) {
        const char *part = q->text + q->plen;
        for (lua_Integer i = 1; lua_geti(L, -1, i) == LUA_TSTRING; i++) {
            if (strncmp(lua_tostring(L, -1), part, strlen(part)) == 0)
                names_add(q->out, q->text, q->plen, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, mt, "__index") == LUA_TTABLE)
        add_names(L, -1, q, depth + 1);
    lua_settop(L, mt - 1);
}

/* Protected: resolves the chain before the last '.' or ':' and collects
 * the names. Upvalue-free; arguments are light userdata (query). */
static int collect(lua_State *L)
{
    const query *q = lua_touserdata(L, 1);
    if (q->plen == 0) {
        lua_pushglobaltable(L);
        add_names(L, -1, q, 0);
        for (int i = 0; lua_keywords[i]; i++)
            if (strncmp(lua_keywords[i], q->text, strlen(q->text)) == 0)
                names_add(q->out, "", 0, lua_keywords[i]);
        return 0;
    }
    lua_pushglobaltable(L);
    const char *p = q->text, *end = q->text + q->plen - 1; /* the separator */
    while (p < end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        const char *e = dot ? dot : end;
        lua_pushlstring(L, p, (size_t)(e - p));
        if (!is_ident(lua_tostring(L, -1)))
            return 0;
        lua_gettable(L, -2); /* may run __index: protected */
        lua_remove(L, -2);
        if (lua_isnil(L, -1))
            return 0;
        p = e + 1;
    }
    add_names(L, -1, q, 0);
    return 0;
}

static names g_names;
static size_t g_next;

static char *generator(const char *text, int state)
{
    (void)text;
    if (state == 0)
        g_next = 0;
    return g_next < g_names.n ? strdup(g_names.v[g_next++]) : NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    rl_attempted_completion_over = 1; /* never file names */
    rl_completion_append_character = '\0';
    for (size_t i = 0; i < g_names.n; i++)
        free(g_names.v[i]);
    g_names.n = 0;
    const char *dot = strrchr(text, '.'), *colon = strrchr(text, ':');
    const char *sep = dot > colon ? dot : colon;
    query q = {text, sep ? (size_t)(sep - text) + 1 : 0, sep && *sep == ':', &g_names};
    int top = lua_gettop(g_L);
    lua_pushcfunction(g_L, collect);
    lua_pushlightuserdata(g_L, &q);
    lua_pcall(g_L, 1, 0, 0);
    lua_settop(g_L, top);
    return g_names.n ? rl_completion_matches(text, generator) : NULL;
}

static void completion_setup(void)
{
    rl_readline_name = "stagecraft";
    rl_catch_signals = 0; /* SIGINT is ours (read_line) */
    /* '.' and ':' belong to the word: "sc.pro" completes as one. */
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]";
    rl_attempted_completion_function = complete;
}

static void completion_free(void)
{
    for (size_t i = 0; i < g_names.n; i++)
        free(g_names.v[i]);
    free(g_names.v);
    g_names = (names){0};
}

#else
static void completion_setup(void) {}
static void completion_free(void) {}
#endif

/* ---- evaluation -------------------------------------------------------------- */

/* A frame of the traceback worth showing: one in code typed at the prompt
 * or loaded from a file, but for the main chunk itself (the message
 * already names its line), C functions and the stdlib's Lua half. */
static int frame_shown(const char *line, size_t n)
{
    static const char *const skip[] = {"[C]:", "stdlib/", "in main chunk", "(...tail calls...)"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) {
        size_t k = strlen(skip[i]);
        for (size_t j = 0; j + k <= n; j++)
            if (memcmp(line + j, skip[i], k) == 0)
                return 0;
    }
    return 1;
}

/* The message, and the traceback only when a frame in it is shown
 * (docs/repl.md): a typo at the prompt is one line. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg)
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    if (strstr(msg, "interrupted"))
        return 1;
    luaL_traceback(L, L, NULL, 1);
    const char *tb = lua_tostring(L, -1), *nl = strchr(tb, '\n');
    int shown = 0;
    while (nl && !shown) {
        const char *next = strchr(nl + 1, '\n');
        size_t n = next ? (size_t)(next - nl - 1) : strlen(nl + 1);
        shown = frame_shown(nl + 1, n);
        nl = next;
    }
    if (shown)
        lua_pushfstring(L, "%s\n%s", msg, tb);
    else
        lua_pushstring(L, msg);
    return 1;
}

/* Runs the function at base + 1 with the nargs values above it, under the
 * limits (docs/sandbox.md#limits-on-evaluation: one line of the REPL) and
 * Ctrl-C; leaves its results above base, or the error (the limit's when
 * one was hit, caught or not). */
static int docall(lua_State *L, int base, int nargs)
{
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base + 1);
    sc_limits_arm(L);
    g_mode = MODE_EVAL;
    if (g_sigint) /* Ctrl-C between the end of the line and now */
        lua_sethook(L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    int st = lua_pcall(L, nargs, LUA_MULTRET, base + 1);
    g_mode = MODE_IDLE;
    sc_limits_disarm(L);
    lua_sethook(L, NULL, 0, 0); /* a late Ctrl-C */
    lua_remove(L, base + 1);
    if (st == LUA_OK && sc_limits_hit(L)) { /* hit, and caught by the line */
        lua_settop(L, base);
        lua_pushliteral(L, "limit");
        st = LUA_ERRRUN;
    }
    if (st != LUA_OK)
        sc_limits_error(L);
    return st;
}

static void print_value(lua_State *L, int i, int color)
{
    if (sc_lua_toprog(L, i)) {
        lua_getfield(L, i, "summary");
        lua_pushvalue(L, i);
        lua_pushinteger(L, 100);
        lua_pushboolean(L, color);
        if (lua_pcall(L, 3, 1, 0) == LUA_OK) {
            fputs(lua_tostring(L, -1), stdout);
            lua_pop(L, 1);
            return;
        }
        lua_pop(L, 1);
    }
    if (lua_type(L, i) == LUA_TTABLE) { /* sc.pretty: nested, sorted, bounded */
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_getfield(L, -1, "stagecraft");
        lua_getfield(L, -1, "pretty");
        lua_pushvalue(L, i);
        lua_pushinteger(L, 100);
        int ok = lua_pcall(L, 2, 1, 0) == LUA_OK && lua_isstring(L, -1);
        if (ok)
            fputs(lua_tostring(L, -1), stdout);
        lua_pop(L, 3);
        if (ok)
            return;
    }
    fputs(luaL_tolstring(L, i, NULL), stdout);
    lua_pop(L, 1);
}

/* Prints its arguments, tab-separated, and a line break: called through
 * docall, so that a __tostring (or __index, __pairs) that loops or fails
 * is stopped by Ctrl-C and the limits, as the line itself is. Upvalue:
 * color. */
static int print_all(lua_State *L)
{
    int n = lua_gettop(L), color = lua_toboolean(L, lua_upvalueindex(1));
    for (int i = 1; i <= n; i++) {
        print_value(L, i, color);
        fputs(i < n ? "\t" : "\n", stdout);
    }
    return 0;
}

/* Compiles the chunk: "return CHUNK" first when it is one line. Returns
 * the load status; 1 more when the chunk is incomplete. */
static int compile(lua_State *L, const char *chunk, int first)
{
    if (first) { /* lua.c's trick: an expression prints its value */
        lua_pushfstring(L, "return %s;", chunk);
        int st = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
        lua_remove(L, -2);
        if (st == LUA_OK)
            return LUA_OK;
        lua_pop(L, 1);
    }
    int st = luaL_loadbuffer(L, chunk, strlen(chunk), "=stdin");
    if (st == LUA_ERRSYNTAX) {
        size_t len;
        const char *msg = lua_tolstring(L, -1, &len);
        if (len >= 5 && strcmp(msg + len - 5, "<eof>") == 0) {
            lua_pop(L, 1);
            return -1; /* incomplete: read more */
        }
    }
    return st;
}

/* A line of the REPL's own (":help [NAME]", ":quit"); 1 to quit. */
static int repl_command(lua_State *L, const char *line)
{
    history_add(line);
    if (strncmp(line, ":help", 5) == 0 && (line[5] == 0 || line[5] == ' '))
        sc_repl_help(L, line + 5);
    else if (strcmp(line, ":quit") == 0 || strcmp(line, ":q") == 0)
        return 1;
    else
        printf("unknown command '%s' (:help, :quit)\n", line);
    return 0;
}

/* Runs the chunk compiled above base (st: how its compile went), prints
 * what it returned, or its error on stderr; the stack back to base. */
static void run_chunk(lua_State *L, int base, int st, int color)
{
    if (st == LUA_OK)
        st = docall(L, base, 0);
    if (st == LUA_OK && lua_gettop(L) > base) {
        lua_pushboolean(L, color);
        lua_pushcclosure(L, print_all, 1);
        lua_insert(L, base + 1);
        st = docall(L, base, lua_gettop(L) - base - 1);
        if (st != LUA_OK)
            fputc('\n', stdout); /* after what was printed */
    }
    fflush(stdout);
    if (st != LUA_OK) {
        const char *msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)";
        fprintf(stderr, "%s%s\n", strstr(msg, "interrupted") ? "\n" : "", msg);
        lua_settop(L, base);
        sc_lua_clear_status(L);
        return;
    }
    lua_settop(L, base);
}

int sc_repl(lua_State *L)
{
    g_L = L;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old); /* no SA_RESTART: a read is interrupted */
    int color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    history_open();
    completion_setup();
    printf("stagecraft %s (%s) - the module is 'sc'; :help for help, Ctrl-D to quit\n", SC_VERSION,
           LUA_RELEASE);
    char *chunk = NULL;
    for (;;) {
        int intr;
        char *line = read_line(chunk ? PROMPT2 : PROMPT, &intr);
        if (intr) { /* Ctrl-C while typing: drop the chunk */
            free(chunk);
            chunk = NULL;
            continue;
        }
        if (!line)
            break;
        if (!chunk && line[0] == ':') {
            int quit = repl_command(L, line);
            free(line);
            if (quit)
                break;
            continue;
        }
        if (chunk) {
            size_t n = strlen(chunk) + strlen(line) + 2;
            char *c = malloc(n);
            if (c)
                snprintf(c, n, "%s\n%s", chunk, line);
            free(chunk);
            free(line);
            chunk = c;
            if (!chunk)
                break;
        } else {
            chunk = line;
        }
        int first = strchr(chunk, '\n') == NULL;
        int base = lua_gettop(L);
        int st = compile(L, chunk, first);
        if (st == -1)
            continue; /* ">> " */
        history_add(chunk);
        free(chunk);
        chunk = NULL;
        run_chunk(L, base, st, color);
    }
    free(chunk);
    fputc('\n', stdout);
    history_close();
    completion_free();
    sigaction(SIGINT, &old, NULL);
    return 0;
}
