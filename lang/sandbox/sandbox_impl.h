/*
 * sandbox_impl.h — what the sandbox's files share (lang/sandbox only).
 *
 * Tested by: tests/sandbox.sh.
 */
#ifndef SC_SANDBOX_IMPL_H
#define SC_SANDBOX_IMPL_H

#include <lua.h>

#define SNAPSHOT_KEY "stagecraft.sandbox_snapshot" /* the libraries sandboxes copy */
#define WINDOW_KEY "stagecraft.sandbox_window" /* a list: the folders, innermost last */
#define SCRIPT_KEY "stagecraft.sandbox_script" /* the window's depth of a script (FILE.lua) */

/* What the innermost evaluation runs, for refusals: "script" (the window's
 * depth that sc_sandbox_enter_script recorded) or "recipe" (also a recipe a
 * script loads: a deeper window). */
const char *sc_sandbox_noun(lua_State *L);

/* Raises "FILE:LINE: sandbox: ..." (printf-like fmt, Lua's %s %d %f) with
 * the sandbox's exit code and the hint that --trust lifts it. */
int sc_sandbox_violation(lua_State *L, const char *fmt, ...);
/* Whether the normalized absolute path lies inside root (or is root). */
int sc_sandbox_inside(const char *path, const char *root);
/* Whether a name below root in path (a path inside root) starts with a
 * dot: .env, .git/config, .ssh/id_rsa. Dotfiles hold secrets and settings
 * that other programs run: recipes neither read nor write them. */
int sc_sandbox_dotted(const char *path, const char *root);
/* Normalizes an absolute path in place: no ".", "..", or double slashes. */
void sc_sandbox_normalize(char *p);

/* The real path of `path` (relative to root) for reading, when it lies
 * inside the folder root (NULL: a stdlib recipe, which reads nothing) and
 * no name below root starts with a dot; raises a sandbox error when it
 * does not. Returns NULL, with a message pushed, when the file does not
 * exist; else the real path, pushed. */
const char *sc_sandbox_resolve(lua_State *L, const char *root, const char *path, const char *what);

#endif
