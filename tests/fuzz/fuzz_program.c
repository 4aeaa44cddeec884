/*
 * fuzz_program.c — libFuzzer harness for sc.program's fields: the input
 * bytes choose a recipe (shape, placement, costs, and a rule, a block or
 * orders) from palettes rich in edge values (0, 1e-300, 1e307, -1, NaN,
 * inf, 2^53) and an offload policy (a name, a table with edge numbers, a
 * function), which random Lua text rarely reaches; the recipe is then
 * evaluated as fuzz_recipe does, its methods called, and the program
 * verified, simulated and rendered.
 *
 * Invariant checked (abort when broken): a program that verifies also
 * simulates.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_limit.h"
#include "formats/render.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"
#include "lua/sc_lua.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct gen {
    const uint8_t *p, *end;
    char src[8192];
    size_t n;
} gen;

static unsigned byte(gen *g) { return g->p < g->end ? *g->p++ : 0; }

static void emit(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(g->src + g->n, sizeof g->src - g->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        g->n = g->n + (size_t)k < sizeof g->src ? g->n + (size_t)k : sizeof g->src - 1;
}

static const char *const numbers[] = {
    "0", "1", "2", "3", "0.5", "4", "1e-300", "1e307", "-1", "0/0", "math.huge", "2^31",
    "2^53", "7", "1.5", "1e6", "4096", "65536", "-0.0", "1e-9",
};
#define NNUM (sizeof numbers / sizeof numbers[0])

static const char *num(gen *g) { return numbers[byte(g) % NNUM]; }
/* Mostly small integers, sometimes an edge value. */
static void small(gen *g)
{
    unsigned b = byte(g);
    if (b < 200)
        emit(g, "%u", 1 + b % 5);
    else
        emit(g, "%s", num(g));
}

/* A number or a list of n of them. */
static void numbers_field(gen *g, const char *name, int n)
{
    unsigned b = byte(g);
    if (b % 4 == 0)
        return;
    emit(g, "%s = ", name);
    if (b % 4 == 1) {
        emit(g, "%s, ", num(g));
        return;
    }
    emit(g, "{");
    for (int i = 0; i < n + (b % 4 == 3 ? (int)(byte(g) % 3) - 1 : 0); i++)
        emit(g, "%s%s", i ? ", " : "", b & 16 ? num(g) : (byte(g) & 1 ? "1" : "2"));
    emit(g, "}, ");
}

static void order_text(gen *g, int m, int v)
{
    static const char *const kinds[] = {"F", "B", "W", "BW"};
    int n = (int)(byte(g) % 24);
    emit(g, "\"");
    for (int i = 0; i < n; i++) {
        unsigned b = byte(g);
        emit(g, "%s%s%u", i ? " " : "", kinds[b & 3], (b >> 2) % (unsigned)(m + 1));
        if (v > 1 && (b & 64))
            emit(g, ".%u", byte(g) % (unsigned)v);
    }
    emit(g, "\"");
}

static void generate(gen *g)
{
    int p = 1 + (int)(byte(g) % 4), m = 1 + (int)(byte(g) % 6), v = 1 + (int)(byte(g) % 2);
    int S = p * v;
    emit(g, "local p = sc.program { p = ");
    if (byte(g) < 240)
        emit(g, "%d", p);
    else
        small(g);
    emit(g, ", m = ");
    if (byte(g) < 240)
        emit(g, "%d", m);
    else
        small(g);
    emit(g, ", v = %d, ", v);
    unsigned pl = byte(g) % 5;
    if (pl == 1)
        emit(g, "placement = \"v\", ");
    else if (pl == 2) {
        emit(g, "placement = {");
        for (int s = 0; s < S; s++)
            emit(g, "%s%u", s ? ", " : "", byte(g) % (unsigned)(p + 1));
        emit(g, "}, ");
    }
    numbers_field(g, "tf", S);
    numbers_field(g, "tb", S);
    numbers_field(g, "tw", S);
    numbers_field(g, "mem", S);
    if (byte(g) & 1)
        emit(g, "tcomm = %s, ", num(g));
    if (byte(g) & 1)
        emit(g, "w_keep = %s, ", num(g));
    unsigned off = byte(g);
    if (off & 1) {
        static const char *const names[] = {"none", "all", "selective", "budget", "most"};
        switch ((off >> 1) % 4) {
        case 0:
            emit(g, "offload = \"%s\", ", names[byte(g) % 5]);
            break;
        case 1:
            emit(g, "offload = {policy = \"%s\", chunks = %s, ratio = %s, mem = %s, shared = %s}, ",
                 names[byte(g) % 5], num(g), byte(g) & 1 ? num(g) : "0.05", num(g),
                 byte(g) & 1 ? "true" : "false");
            break;
        case 2:
            emit(g, "offload = function(ls) return ls.chunk == 0 and %s or %s end, ", num(g),
                 byte(g) & 1 ? "0" : "false");
            break;
        default:
            emit(g, "offload = {policy = function(ls) return ls.window > 3 * ls.transfer end, "
                    "ratio = %s}, ", num(g));
        }
    }
    unsigned src = byte(g) % 3;
    if (src == 0) {
        static const char *const rules[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2"};
        emit(g, "rule = \"%s\" }\n", rules[byte(g) % 5]);
    } else if (src == 1) {
        unsigned b = byte(g);
        emit(g, "block = { interval = %s", b & 1 ? num(g) : "3");
        static const char *const kinds[] = {"F", "B", "W", "BW"};
        for (int k = 0; k < 4; k++) {
            if (k == 3 ? !(b & 2) : k > 0 && (b & 2))
                continue;
            emit(g, ", %s = {", kinds[k]);
            for (int s = 0; s < S; s++)
                emit(g, "%s%s", s ? ", " : "", b & 4 ? num(g) : numbers[byte(g) % 6]);
            emit(g, "}");
        }
        emit(g, " } }\n");
    } else {
        emit(g, "order = {");
        for (int d = 0; d < p; d++) {
            emit(g, "%s", d ? ", " : "");
            order_text(g, m, v);
        }
        emit(g, "} }\n");
    }
    unsigned calls = byte(g);
    if (calls & 1)
        emit(g, "pcall(p.sim, p)\n");
    if (calls & 2)
        emit(g, "pcall(p.timeline, p, %s)\n", num(g));
    if (calls & 4)
        emit(g, "pcall(p.dump, p)\n");
    if (calls & 8)
        emit(g, "pcall(p.order, p, %s)\n", num(g));
    if (calls & 16)
        emit(g, "local ok = p:valid()\n");
    emit(g, "return p\n");
}

static const char *source;

static int gen_chunk(lua_State *L)
{
    if (luaL_loadbufferx(L, source, strlen(source), "@program.lua", "t") != LUA_OK)
        return lua_error(L);
    sc_sandbox_apply(L, -1, NULL);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_fuzz_cpu_limit();
    static gen g;
    g.p = data;
    g.end = data + size;
    g.n = 0;
    g.src[0] = 0;
    generate(&g);
    source = g.src;
    if (getenv("FUZZ_PROGRAM_PRINT"))
        fputs(g.src, stderr);

    sc_limits lim = SC_LIMITS_DEFAULT;
    lim.max_steps = 200000;
    lim.max_mem = (size_t)32 << 20;
    lim.max_time = 0;
    lua_State *L = sc_limits_newstate(&lim);
    if (!L)
        return 0;
    sc_lua_setup(L);
    lua_getglobal(L, "sc");
    lua_pushcfunction(L, gen_chunk);
    lua_setfield(L, -2, "_chunk");
    lua_getfield(L, -1, "_evaluate");
    lua_pushliteral(L, "program.lua");
    lua_newtable(L);
    lua_pushboolean(L, 0);
    sc_limits_arm(L);
    if (lua_pcall(L, 3, 3, 0) != LUA_OK) {
        sc_limits_error(L);
    } else if (!sc_limits_hit(L)) {
        sc_lprog *lp = sc_lua_toprog(L, -3);
        if (lp && lp->pg && sc_lua_check(lp) == SC_OK) {
            free(sc_render_dump(lp->pg));
            sc_status st;
            const sc_sim *sim = sc_lua_sim(lp, &st);
            if (!sim && st != SC_ERR_ARG) /* verified, yet not simulated (ARG: overflow) */
                abort();
            if (sim)
                free(sc_render_timeline(lp->pg, sim, 50, 1));
        }
    }
    sc_limits_close(L); /* also takes the allocator hook (on lim) away */
    return 0;
}
