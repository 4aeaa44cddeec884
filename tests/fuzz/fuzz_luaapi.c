/*
 * fuzz_luaapi.c — libFuzzer harness for the recipe API itself: the input
 * is read by tests/fuzz/luaapi.lua as a program of calls (sc's functions,
 * Program and block methods, fields, tables of fields, metamethods that call
 * back into the API or raise, tostring/getmetatable, sort comparators), run
 * as a recipe inside the sandbox, sealed as every command runs strangers'
 * code. Half the inputs (the first byte's low bit) run with a write grant
 * for the recipe's folder's out/ (--allow-write out), the others with none.
 *
 * Bugs it looks for, besides crashes, leaks and undefined behaviour:
 *   - a read outside the recipe's folder: canary files beside it hold a
 *     random token; a value the API returns that carries it aborts;
 *   - a write outside the grant: after each input, every file under the
 *     harness's folder must be as before, except new files inside out/
 *     when the grant is on (removed again), and out/keep.json is never
 *     replaced;
 *   - limits overrun: the evaluation runs under a 3 s time limit (a
 *     deadline, no signal) and 400000 steps; sc.plan's candidates nest in
 *     it, so an evaluation that takes more than LIMIT_SLACK_S seconds of CPU
 *     past its time limit has escaped its limits;
 *   - memory past the limit: the C heap (the sanitizer's count of what is
 *     allocated) may not grow past the memory limit plus MEM_SLACK during
 *     an evaluation: memory a recipe causes is counted, or freed.
 *
 *   make fuzz                                         # every harness
 *   build-fuzz/fuzz_luaapi tests/fuzz/corpus/luaapi   # by hand, from the repository root
 */
#define _GNU_SOURCE /* CLOCK_PROCESS_CPUTIME_ID, open_memstream */
#include <dirent.h>
#include <sanitizer/allocator_interface.h>
#include <time.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "fuzz_eval.h"
#include "sandbox/sandbox.h"

#define TIME_LIMIT_S 3.0
#define LIMIT_SLACK_S 30.0            /* CPU seconds past the time limit */
#define MEM_SLACK ((size_t)32 << 20) /* messages, the allocator's own slack */

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64], token[40], *driver;
static char name[96], rec[80], outdir[80]; /* ROOT/rec/fuzz.lua, ROOT/rec, ROOT/rec/out */
static const uint8_t *input;
static size_t input_len;

/* The files under a folder: path, size and modification time, one line
 * each, sorted by the walk (a string, compared whole). */
static void walk(const char *dir, FILE *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char *names[256];
    int n = 0;
    while ((e = readdir(d)) && n < 256)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (int i = 0; i < n; i++) {
        char path[1024];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fprintf(out, "%s/\n", path); /* its mtime: out/ changes under the grant */
            walk(path, out);
        } else if (lstat(path, &sb) == 0) {
            fprintf(out, "%s %lld %lld.%09ld\n", path, (long long)sb.st_size,
                    (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
        }
        free(names[i]);
    }
}

static char *snapshot(const char *dir)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    walk(dir, f);
    fclose(f);
    return buf;
}

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
        abort();
    s[n] = '\0';
    fclose(f);
    return s;
}

static void remove_root(void)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_luaapi: could not remove %s\n", root);
}

/* Once: the folders, the canaries, the driver (beside this binary's
 * build folder, or from the current directory). */
static char *before_in, *before_out;

static void setup(void)
{
    FILE *u = fopen("/dev/urandom", "rb");
    unsigned char r[16];
    if (!u || fread(r, 1, sizeof r, u) != sizeof r)
        abort();
    fclose(u);
    for (int i = 0; i < 16; i++)
        snprintf(token + 2 * i, 3, "%02x", r[i]);
    char exe[512] = "", path[600];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(path, sizeof path, "%s/../tests/fuzz/luaapi.lua", exe);
    if (!(driver = slurp(path)) && !(driver = slurp("tests/fuzz/luaapi.lua"))) {
        fprintf(stderr, "fuzz_luaapi: cannot read tests/fuzz/luaapi.lua\n");
        exit(1);
    }
    snprintf(root, sizeof root, "/tmp/sc_fuzz_luaapi_XXXXXX");
    if (!mkdtemp(root))
        abort();
    atexit(remove_root);
    char d[128];
    snprintf(d, sizeof d, "%s/rec", root);
    mkdir(d, 0700);
    snprintf(d, sizeof d, "%s/rec/out", root);
    mkdir(d, 0700);
    snprintf(d, sizeof d, "%s/outside", root);
    mkdir(d, 0700);
    char text[128];
    snprintf(text, sizeof text, "{\"%s\": 1}\n", token);
    put("outside/secret.json", text);
    snprintf(text, sizeof text, "return \"%s\"\n", token);
    put("outside/secret.lua", text);
    put("rec/helper.lua", "return {x = 1}\n");
    put("rec/fuzz.lua", "-- the recipe's folder is where this file is (sc._chunk reads the input)\n");
    put("rec/costs.json", "{\"stages\": 2, \"tf\": [1, 1], \"tb\": [1, 1], \"tw\": [1, 1]}\n");
    put("rec/out/keep.json", "{\"keep\": true}\n");
    snprintf(rec, sizeof rec, "%s/rec", root);
    snprintf(outdir, sizeof outdir, "%s/rec/out", root);
    snprintf(name, sizeof name, "%s/rec/fuzz.lua", root);
    before_in = snapshot(rec);
    snprintf(d, sizeof d, "%s/outside", root);
    before_out = snapshot(d);
}

/* sc._chunk: the driver with the input for the recipe's name, the original loader
 * (upvalue 1) for anything else. */
static int fuzz_chunk(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    if (strcmp(r, name) != 0) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, lua_gettop(L) - 1, 1);
        return 1;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "local DATA, TOKEN, OUT = \"");
    for (size_t i = 0; i < input_len; i++) {
        char e[8];
        snprintf(e, sizeof e, "\\%03u", input[i]);
        luaL_addstring(&b, e);
    }
    lua_pushfstring(L, "\", \"%s\", \"%s/outside\" ", token, root);
    luaL_addvalue(&b);
    luaL_addstring(&b, driver);
    luaL_pushresult(&b);
    size_t n;
    const char *src = lua_tolstring(L, -1, &n);
    if (luaL_loadbufferx(L, src, n, "@fuzz.lua", "t") != LUA_OK)
        return lua_error(L);
    sc_sandbox_apply(L, -1, name);
    return 1;
}

/* The out/ files this input made (allowed under the grant), removed. */
static void clean_out(void)
{
    DIR *d = opendir(outdir);
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            strcmp(e->d_name, "keep.json")) {
            snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
            if (remove(path) != 0) {
                snprintf(path, sizeof path, "rm -rf '%s/%s'", outdir, e->d_name);
                if (system(path) != 0)
                    abort();
            }
        }
    if (d)
        closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!driver)
        setup();
    sc_limits lim = SC_LIMITS_DEFAULT;
    lim.max_steps = 400000;
    lim.max_mem = (size_t)64 << 20;
    lim.max_time = TIME_LIMIT_S;
    lua_State *L = sc_limits_newstate(&lim);
    if (!L)
        return 0;
    sc_eng_setup(L); /* sc.plan and sc.compare, as the command line has them */
    int grant = size > 0 && (data[0] & 1);
    if (grant && sc_sandbox_grant_write(L, outdir) != 0)
        abort();
    sc_sandbox_seal(L);
    input = data;
    input_len = size;
    size_t heap0 = __sanitizer_get_current_allocated_bytes();
    double cpu0 = cpu_seconds();
    int ok = fuzz_evaluate(L, name, fuzz_chunk);
    double cpu = cpu_seconds() - cpu0;
    size_t heap = __sanitizer_get_current_allocated_bytes();
    if (cpu > TIME_LIMIT_S + LIMIT_SLACK_S) {
        fprintf(stderr, "fuzz_luaapi: limits overrun: the evaluation used %.1f s of CPU under a %g s "
                "time limit\n", cpu, TIME_LIMIT_S);
        abort();
    }
    if (heap > heap0 && heap - heap0 > lim.max_mem + MEM_SLACK) {
        fprintf(stderr, "fuzz_luaapi: memory past the limit: the heap grew %zu bytes under a limit of "
                "%zu\n", heap - heap0, lim.max_mem);
        abort();
    }
    if (!ok) {
        const char *m = lua_tostring(L, -1);
        if (m && strstr(m, token)) {
            fprintf(stderr, "fuzz_luaapi: a read outside the recipe's folder: %s\n", m);
            abort();
        }
    }
    sc_limits_close(L);
    char kp[128];
    snprintf(kp, sizeof kp, "%s/keep.json", outdir);
    char *keep = slurp(kp);
    if (!keep || strcmp(keep, "{\"keep\": true}\n") != 0) {
        fprintf(stderr, "fuzz_luaapi: out/keep.json was replaced (grant %d)\n", grant);
        abort();
    }
    free(keep);
    if (grant)
        clean_out();
    char d[128];
    snprintf(d, sizeof d, "%s/outside", root);
    char *now_in = snapshot(rec), *now_out = snapshot(d);
    if (strcmp(now_in, before_in) != 0 || strcmp(now_out, before_out) != 0) {
        fprintf(stderr, "fuzz_luaapi: a write outside the grant (grant %d):\nbefore:\n%s%s"
                "after:\n%s%s", grant, before_in, before_out, now_in, now_out);
        abort();
    }
    free(now_in);
    free(now_out);
    return 0;
}
