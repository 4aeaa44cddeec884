/*
 * help.c — the REPL's ":help [TOPIC]" (repl.h). What can drift is not
 * written here but read from where it is defined: the stdlib recipes and
 * their docs (the embedded stdlib, as `stagecraft list` reads them), the
 * rules (sc.rules()), the methods and fields of Programs and Blocks (their
 * metatables), the command line (sc_usage_text, as `stagecraft --help`).
 * tests/py/repl_pty.py compares each with its source.
 */
#include "repl.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/commands.h"
#include "core/core.h"
#include "lua/sc_lua.h"

/* A list generated from Lua (pushed as a string); NULL when it fails. */
typedef void (*gen_fn)(lua_State *L, luaL_Buffer *b);

typedef struct help_topic {
    const char *name, *text;
    gen_fn gen; /* printed after the text */
} help_topic;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every stdlib recipe, sorted, with its doc (listing mode of sc._evaluate). */
static void gen_recipes(lua_State *L, luaL_Buffer *b)
{
    const char *names[128];
    int n = 0;
    for (int i = 0; sc_stdlib_name(i) && n < 128; i++)
        if (sc_stdlib_name(i)[0] != '_')
            names[n++] = sc_stdlib_name(i);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_getfield(L, -1, "stagecraft");
        lua_getfield(L, -1, "_evaluate");
        lua_pushstring(L, names[i]);
        lua_newtable(L);
        lua_pushboolean(L, 1);
        int ok = lua_pcall(L, 3, 3, 0) == LUA_OK;
        char line[256];
        snprintf(line, sizeof line, "  %-12s %s\n", names[i],
                 ok && lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
        lua_settop(L, lua_gettop(L) - (ok ? 5 : 3));
        luaL_addstring(b, line);
    }
}

/* The keys of a metatable's __methods (":name") and __fields, sorted. */
static void gen_members(lua_State *L, luaL_Buffer *b, const char *mt, const char *var)
{
    const char *v[64];
    int n = 0;
    luaL_getmetatable(L, mt);
    if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2) && n < 64) {
            lua_pop(L, 1);
            if (lua_type(L, -1) == LUA_TSTRING)
                v[n++] = lua_tostring(L, -1); /* anchored in the metatable */
        }
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    luaL_addstring(b, "methods:");
    for (int i = 0; i < n; i++) {
        luaL_addstring(b, i % 6 == 0 ? "\n  " : " ");
        luaL_addstring(b, var);
        luaL_addchar(b, ':');
        luaL_addstring(b, v[i]);
        luaL_addstring(b, "()");
    }
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "__fields") == LUA_TTABLE) {
        luaL_addstring(b, "\nfields:");
        for (lua_Integer i = 1; lua_geti(L, -1, i) == LUA_TSTRING; i++) {
            luaL_addstring(b, " ");
            luaL_addstring(b, var);
            luaL_addchar(b, '.');
            luaL_addstring(b, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    luaL_addchar(b, '\n');
}

static void gen_program(lua_State *L, luaL_Buffer *b) { gen_members(L, b, SC_PROGRAM_MT, "p"); }
static void gen_block(lua_State *L, luaL_Buffer *b) { gen_members(L, b, "stagecraft.Block", "b"); }

static void gen_rules(lua_State *L, luaL_Buffer *b)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "stagecraft");
    lua_getfield(L, -1, "rules");
    if (lua_pcall(L, 0, 1, 0) == LUA_OK && lua_istable(L, -1)) {
        luaL_addstring(b, "rules:");
        for (lua_Integer i = 1; lua_geti(L, -1, i) == LUA_TSTRING; i++) {
            luaL_addchar(b, ' ');
            luaL_addstring(b, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        luaL_addchar(b, '\n');
    }
    lua_pop(L, 3);
}

static void gen_commands(lua_State *L, luaL_Buffer *b)
{
    (void)L;
    luaL_addstring(b, sc_usage_text());
}

static const help_topic topics[] = {
    {"recipes",
     "A recipe is a Lua chunk that declares its parameters and returns a Program:\n"
     "  local P = sc.params { doc = \"my schedule\", {\"p\", 4, \"devices\"}, {\"m\", 8, \"microbatches\"}, sc.COSTS }\n"
     "  return sc.program(sc.fields(P, {rule = \"1f1b\"}))   -- p, m, costs from P\n"
     "sc.load(\"zb-h1\", {p = 4, m = 8}) evaluates a stdlib recipe or a file. The stdlib:",
     gen_recipes},
    {"program",
     "sc.program { p = P, m = M [, v = V] [, placement = ...] [, tf/tb/tw/tcomm/mem/w_keep/units]\n"
     "             [, offload = ...] and exactly one of order = ..., rule = \"name\",\n"
     "             block = {...} or auto = {mem = ...} }   (an unknown field is an error)\n"
     "Typing p at the prompt prints its summary; p:sim() its figures; p:svg(\"p.svg\") draws it.",
     gen_program},
    {"order",
     "An ordered program gives each device's passes in order, as a function(d) or a list:\n"
     "  order = function(d) return \"F0 F1 B0 W0 F2 B1 W1 B2 W2\" end\n"
     "Tokens: F, B (input gradient), W (weight gradient), BW (both fused), then the\n"
     "microbatch, then .CHUNK for a device's later stages (F3.1). '#' starts a comment.",
     NULL},
    {"block",
     "A building block gives the start offset of each pass of microbatch 0 per stage and an\n"
     "interval T; microbatch i is the block shifted by i*T, then squeezed:\n"
     "  block = { interval = 3, F = {0, 1, 2, 3}, B = {...}, W = {...} }   (or BW = {...})\n"
     "or in the paper's compact form: first = {F = {...}, B = {...}}, delta = {...}, slots = true.\n"
     "Two passes of one device must not collide modulo T; dependencies must hold in the block.\n"
     "Blocks are values: b = sc.block{p = 4, interval = 3, F = ..., B = ...} (b:peak() before\n"
     "unrolling), sc.v_block(\"half\" | \"min\", {p = 4}), sc.block_search{p = 8, mem = 8},\n"
     "sc.tradeoff{p = 8}; b:program{m = 16} unrolls it.",
     gen_block},
    {"rules",
     "rule = NAME fills every device's order with a handcrafted schedule computed in C for\n"
     "the program's p, m and v (sc.rules() lists them).",
     gen_rules},
    {"placement",
     "Stages 0..S-1 (S = p*v) sit on devices: placement = \"loop\" (s mod p, the default),\n"
     "\"v\" (chunk 0 goes down 0..p-1, chunk 1 comes back; needs v = 2), or a list of devices.",
     NULL},
    {"costs",
     "Costs are per device share of the model: tf, tb, tw (numbers, or lists of S per-stage\n"
     "values), tcomm the time of one transfer. Compute and communication overlap.\n"
     "sc.COSTS declares tf tb tw tcomm w_keep as recipe parameters (-D tf=1.5).",
     NULL},
    {"memory",
     "Memory is in units: one microbatch's activations of a device's share of the model.\n"
     "F adds its stage's units, B frees (1 - w_keep) of them, W frees the rest, BW frees all.\n"
     "p:sim().peak_memory lists the peak of each device; mem = N caps blocks and auto.",
     NULL},
    {"offload",
     "Offload moves records to the host and back: sc.program{..., offload = \"all\"} (or\n"
     "{policy = \"selective\", chunks = 1, ratio = 0.25}, or function(life) return q end);\n"
     "p:sim().offload has the peaks without it, host memory and link usage (docs/offload.md).\n"
     "From the command line: -D offload=all|selective|budget -D offload_ratio=0.1.",
     NULL},
    {"auto",
     "prog, fig = sc.autoschedule{p = 8, m = 24, mem = 16, time_limit = 1}: the Zero Bubble\n"
     "paper's heuristic, then a search, under the memory limit; fig has its figures.",
     NULL},
    {"sim",
     "p:sim() verifies, then replays the streams with the costs: makespan, bubble_rate\n"
     "= 1 - max busy / max span, peak_memory, busy, start, finish, instructions.\n"
     "p:timeline(width) draws it as text; p:svg(file), p:trace(file), p:export(format, file).",
     NULL},
    {"plan",
     "rows = sc.compare{\"1f1b\", \"zb-h1\", \"my.lua\", p = 4, m = \"8,16\"}: a row of\n"
     "figures per recipe and value, as stagecraft compare --json (other fields are -D).\n"
     "r = sc.plan{p = 8, m = 32, cap = 6, time_limit = 0}: what to run, as stagecraft\n"
     "plan --json; r.candidates[r.pick] is the pick (recipe, knobs, makespan,\n"
     "peak_memory_max). With model = \"config.json\", cap = \"80GiB\" caps bytes\n"
     "(docs/plan.md, docs/embed.md#the-engine).",
     NULL},
    {"run",
     "stagecraft run RECIPE [-D k=v]... [--backend cpu|cuda] [--check] [--json] trains one step\n"
     "of a built-in MLP through the schedule's streams (devices as threads, or mpirun -np P)\n"
     "and checks loss, gradients and peak activation bytes against a single-device reference\n"
     "and the prediction. Model sizes: -D hidden=64 -D layers=.. -D vocab=128 -D seq=16\n"
     "-D batch=2 -D seed=1 (docs/run.md).",
     NULL},
    {"commands", "", gen_commands},
    {"repl",
     "Type an expression to see its value (tables print nested and sorted: sc.pretty), or a\n"
     "statement; an unfinished chunk continues on the next line (>>). TAB completes globals\n"
     "and fields (sc.<TAB>, p:<TAB>). Ctrl-C interrupts a running evaluation or drops the\n"
     "line; Ctrl-D or :quit leaves. History (a multi-line chunk as one entry) is kept in\n"
     "~/.stagecraft_history.",
     NULL},
};

static void print_topic(lua_State *L, const help_topic *t)
{
    if (t->text[0])
        puts(t->text);
    if (t->gen) {
        int top = lua_gettop(L);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        t->gen(L, &b);
        luaL_pushresult(&b);
        fputs(lua_tostring(L, -1), stdout);
        lua_settop(L, top);
    }
}

/* Runs in protected mode: the generators call Lua. */
static int help_p(lua_State *L)
{
    const char *name = lua_tostring(L, 1);
    size_t nt = sizeof topics / sizeof topics[0];
    for (size_t i = 0; *name && i < nt; i++)
        if (strcmp(topics[i].name, name) == 0) {
            print_topic(L, &topics[i]);
            return 0;
        }
    if (*name)
        printf("no help on '%s'.\n", name);
    puts("stagecraft: a language for pipeline-parallel training schedules; the module is 'sc'.\n"
         "  p = sc.load(\"zb-h1\", {p = 4, m = 8})   then type p, p:sim(), p:svg(\"p.svg\")\n"
         ":help TOPIC for more, TOPIC one of:");
    for (size_t i = 0; i < nt; i++)
        printf("%s%s", i ? ", " : "  ", topics[i].name);
    puts("\n:quit leaves (or Ctrl-D).");
    return 0;
}

void sc_repl_help(lua_State *L, const char *name)
{
    while (*name == ' ')
        name++;
    int top = lua_gettop(L);
    lua_pushcfunction(L, help_p);
    lua_pushstring(L, name);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK)
        printf("(help failed: %s)\n", lua_tostring(L, -1));
    lua_settop(L, top);
    fflush(stdout);
}
