/*
 * fuzz_recipe.c — libFuzzer harness for the recipe entry point: the input
 * is the Lua source of a recipe, evaluated exactly as `stagecraft check`
 * does (sc._evaluate, sandboxed, with tight step and memory limits), then
 * lowered, verified, simulated and rendered.
 *
 * Bugs it looks for: crashes, leaks and undefined behaviour anywhere in
 * lang/ and interp/ (AddressSanitizer, UBSan), and one invariant: a program
 * that verifies also simulates (the simulation replays the same streams),
 * unless its times overflow (SC_ERR_ARG).
 *
 *   make fuzz                  # every harness, FUZZ_TIME seconds each
 *   build-fuzz/fuzz_recipe tests/fuzz/corpus/recipe   # by hand
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/render.h"
#include "fuzz_eval.h"
#include "sandbox/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz.lua"

static const uint8_t *input;
static size_t input_len;

/* sc._chunk for the harness: the input when asked for FUZZ_NAME, the
 * original loader (upvalue 1) for anything else (sc.load("1f1b")). */
static int fuzz_chunk(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    if (strcmp(r, FUZZ_NAME) != 0) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, lua_gettop(L) - 1, 1);
        return 1;
    }
    if (luaL_loadbufferx(L, (const char *)input, input_len, "@" FUZZ_NAME, "t") != LUA_OK)
        return lua_error(L);
    sc_sandbox_apply(L, -1, NULL);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_limits lim = SC_LIMITS_DEFAULT;
    lim.max_steps = 200000;
    lim.max_mem = (size_t)32 << 20;
    lim.max_time = 0; /* libFuzzer's -timeout does it */
    lua_State *L = sc_limits_newstate(&lim);
    if (!L)
        return 0;
    sc_lua_setup(L);
    input = data;
    input_len = size;
    if (fuzz_evaluate(L, FUZZ_NAME, fuzz_chunk)) {
        sc_lprog *lp = sc_lua_toprog(L, -3);
        /* sc._evaluate returns an open Program or raises: no guard here,
         * so that a closed one (NULL pg) crashes the harness. */
        if (sc_lua_check(lp) == SC_OK) {
            char *dump = sc_render_dump(lp->pg);
            free(dump);
            sc_status st;
            const sc_sim *sim = sc_lua_sim(lp, &st);
            if (!sim && st != SC_ERR_ARG) /* verified, yet not simulated (ARG: overflow) */
                abort();
            if (sim)
                free(sc_render_timeline(lp->pg, sim, 60, 0));
        }
    }
    sc_limits_close(L); /* also takes the allocator hook (on lim) away */
    return 0;
}
