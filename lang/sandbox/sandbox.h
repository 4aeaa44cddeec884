/*
 * sandbox.h — the sandbox in which recipes run (docs/interchange.md#svg-pictures).
 *
 * A recipe may describe a schedule and nothing else. A sandboxed chunk gets
 * a fresh global table of its own instead of _G:
 *
 *   base       assert error ipairs next pairs pcall print rawequal rawget
 *              rawlen rawset select tonumber tostring type xpcall _VERSION
 *              _G (the sandbox itself)
 *   getmetatable   of tables only (strings' and programs' are hidden)
 *   setmetatable   without __gc (finalizers run with hooks off: no limit
 *              could stop one)
 *   load       text chunks only; their globals default to the sandbox
 *   dofile loadfile  files inside the recipe's folder only, text only, no
 *              dotfile or dot-folder below it (.env, .ssh, .git)
 *   require    Lua files inside the recipe's folder (as dofile), the
 *              stdlib, stagecraft
 *   collectgarbage  "count" and "isrunning" only
 *   string table math utf8 coroutine   copies (string without dump)
 *   os         clock date time difftime
 *   sc         a copy of the module (sc.load: stdlib names and files in
 *              the recipe's folder)
 *   arg        a copy of the script's arguments, if any
 *
 * Anything else (io, debug, package, os.execute, string.dump, binary
 * chunks, files outside the folder, C modules) raises a "sandbox: ..."
 * error with exit code 10. The recipe's folder is the real path of the
 * directory that holds it; a stdlib recipe has none.
 *
 *   sc_sandbox_init(L);                  // once, after the libraries
 *   luaL_loadfilex(L, "x/recipe.lua", "t");
 *   sc_sandbox_apply(L, -1, "x/recipe.lua");   // _ENV := new sandbox
 *
 * Sandboxes share nothing writable with each other or with trusted code.
 * `--trust` (sc_sandbox_trust) makes sc_sandbox_apply a no-op.
 *
 * Tested by: tests/sandbox.sh.
 */
#ifndef SC_SANDBOX_H
#define SC_SANDBOX_H

#include <lua.h>

#include "ir/ir.h" /* SC_EXIT_SANDBOX: the exit code of what it refuses */

/* Records the pristine libraries the sandboxes copy. Call once, after the
 * standard libraries are open. The strings' metatable is left as it is:
 * there is one per Lua state, and in a host's Lua (luaopen_stagecraft) it
 * is the host's. */
void sc_sandbox_init(lua_State *L);
/* In a state stagecraft made (sc_lua_setup: the command line, the REPL,
 * libstagecraft's contexts), after sc_sandbox_init: string methods
 * (("x"):rep(3)) reached while a rule of the sandbox is in force come from
 * the snapshot's string library, without dump; other code finds the
 * state's string library as before (what the REPL adds to it, dump). In a
 * host's Lua a recipe's string methods are the host's, dump included:
 * harmless, since no loader of the sandbox takes bytecode (docs/embed.md). */
void sc_sandbox_own_strings(lua_State *L);
/* Whether sc_sandbox_init ran on this state (a host's Lua that requires
 * the module: lang/lua/module.c). */
int sc_sandbox_ready(lua_State *L);
/* Trusted (1): recipes and scripts run with the full standard library. */
void sc_sandbox_trust(lua_State *L, int trusted);
int sc_sandbox_trusted(lua_State *L);
/* Gives the Lua function at idx a new sandbox as its _ENV (first upvalue),
 * rooted at the folder of `file` (NULL: no folder), unless trusted.
 * Raises a Lua error on out of memory. */
void sc_sandbox_apply(lua_State *L, int idx, const char *file);

/* Files a program's methods write (p:svg(file), p:trace(file),
 * p:export(fmt, file)) follow the sandbox's rule for files: while sandboxed
 * code is being evaluated (between sc_sandbox_enter and sc_sandbox_leave),
 * the path (relative to the recipe's folder) must lie inside the folder
 * the user granted (lexically and with links resolved, as for reading)
 * and must not name a ".lua" file (a recipe never rewrites recipes); a
 * stdlib recipe writes no files. Outside any sandboxed evaluation (the REPL, stdin,
 * --trust), any path. The window, not the caller's _ENV, decides: code that
 * has no _ENV of its own (a coroutine, a local function) is covered too.
 *
 *   sc_sandbox_enter(L, "x/recipe.lua");   // NULL: a stdlib recipe
 *   ... run the chunk under lua_pcall ...
 *   sc_sandbox_leave(L);
 *
 * sc_sandbox_write_path raises a "sandbox: ..." error (exit code 10) when
 * the path is refused; else it returns the path to write relative to
 * *dirfd, pushed on the stack: under the rule, the normalized path below
 * the granted folder and *dirfd that folder's descriptor, opened once by
 * sc_sandbox_grant_write (owned by the state: not to be closed); outside
 * it, `path` itself and AT_FDCWD. Write it with sc_write_atomic_at
 * (interp/formats/atomic.h), which walks the folders from *dirfd following
 * no link: nothing lands outside the granted folder whatever happens to
 * its path meanwhile (renamed, swapped for a link to another folder). */
void sc_sandbox_enter(lua_State *L, const char *file);
/* Writes need the user's grant (docs/sandbox.md#files-written): with
 * `--allow-write DIR` (sc_sandbox_grant_write opens DIR's real path once,
 * O_DIRECTORY | O_NOFOLLOW, and keeps the descriptor; -1 when DIR does not
 * exist or cannot be opened)
 * sandboxed code writes inside DIR, never a .lua file or a dotfile, and
 * never replaces a file this run did not write; without it, nothing.
 * sc_sandbox_seal: this process runs strangers' code (every command and
 * FILE.lua; not the REPL or stdin), so that Lua code run by C outside any
 * evaluation (code a recipe left behind: an error object's __tostring)
 * reads and writes no files. */
int sc_sandbox_grant_write(lua_State *L, const char *dir);
/* sc_sandbox_enter for a script (stagecraft FILE.lua): the same rule; its
 * refusals say "a script" where a recipe's say "a recipe". */
void sc_sandbox_enter_script(lua_State *L, const char *file);
void sc_sandbox_seal(lua_State *L);
/* The rule for files read (sc.costs and the prelude's readers): inside the
 * recipe's folder as for dofile; pushes the path to open, or returns NULL
 * with a message pushed when the file does not exist; raises when refused. */
const char *sc_sandbox_read_path(lua_State *L, const char *path, const char *what);
void sc_sandbox_leave(lua_State *L);
const char *sc_sandbox_write_path(lua_State *L, const char *path, const char *what, int *dirfd);

#endif
