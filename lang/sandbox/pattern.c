/*
 * pattern.c — string.find, string.match, string.gmatch and string.gsub on
 * a matcher of stagecraft's own that counts its steps (sc_limits.h).
 *
 * Why: Lua's own matcher backtracks inside one C call that no hook sees;
 * `s:find(string.rep("a*", 40) .. "b")` runs for hours. The time limit
 * once ended such a call with a signal and _exit, which a library cannot
 * do to its host. Here every step of the matcher (each attempt of a
 * pattern item, each character a repetition takes) counts as an
 * instruction; every TICK steps the count goes to sc_limits_charge, which
 * also reads the clock, and raises the limit's error when the steps or the
 * time are spent. The matcher holds nothing but its C stack and Lua values,
 * so the error's longjmp leaks nothing.
 *
 * The patterns and the four functions are those of Lua 5.4's manual
 * (its section "Patterns"): classes %a %c %d %g %l %p %s %u %w %x and their complements,
 * sets, `.`, the quantifiers * + - ?, anchors ^ and $, captures and
 * position captures, %1-%9, %bxy and %f[set]; the same errors; find's
 * plain search (glibc's memmem: linear, where a naive search is m·n).
 * tests/sandbox.sh holds them against stock lua5.4 on generated patterns.
 */
#define _GNU_SOURCE /* memmem */
#include "sc_limits.h"

#include <ctype.h>
#include <lauxlib.h>
#include <string.h>

#define MAXCAP 32    /* LUA_MAXCAPTURES */
#define MAXDEPTH 200 /* nested match calls: Lua's MAXCCALLS */
#define TICK 4096    /* steps between charges */
#define CAP_OPEN (-1)
#define CAP_POS (-2)

typedef struct mstate {
    const char *init, *end; /* the subject */
    const char *pend;       /* the pattern's end */
    lua_State *L;
    int depth, level;
    unsigned spent;         /* steps since the last charge */
    struct {
        const char *at;
        ptrdiff_t len; /* CAP_OPEN, CAP_POS or a length */
    } cap[MAXCAP];
} mstate;

static void step(mstate *ms)
{
    if (++ms->spent == TICK) {
        ms->spent = 0;
        sc_limits_charge(ms->L, TICK);
    }
}

/* The steps not yet charged, at the end of a call. */
static void settle(mstate *ms)
{
    sc_limits_charge(ms->L, ms->spent);
    ms->spent = 0;
}

static void reset(mstate *ms)
{
    ms->level = 0;
    ms->depth = MAXDEPTH;
}

static void prepare(mstate *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp)
{
    ms->L = L;
    ms->init = s;
    ms->end = s + ls;
    ms->pend = p + lp;
    ms->spent = 0;
    reset(ms);
}

/* ---- single characters ------------------------------------------------- */

/* Whether c is in class letter cl (%a ...); an upper-case letter is the
 * complement; any other character stands for itself. */
static int in_class(int c, int cl)
{
    int r;
    switch (tolower(cl)) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    default: return cl == c;
    }
    return isupper(cl) ? !r : r != 0;
}

/* The end of the single-character class at p ('.', %x, [set] or a
 * character). */
static const char *item_end(mstate *ms, const char *p)
{
    char c = *p++;
    if (c == '%') {
        if (p >= ms->pend)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (*p == '^')
            p++;
        do { /* the first character is in the set even when it is ']' */
            if (p >= ms->pend)
                luaL_error(ms->L, "malformed pattern (missing ']')");
            if (*p++ == '%' && p < ms->pend)
                p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

/* Whether c is in the set [p .. close] (p at '[', close at its ']'). */
static int in_set(int c, const char *p, const char *close)
{
    int yes = 1;
    if (p[1] == '^') {
        yes = 0;
        p++;
    }
    while (++p < close) {
        if (*p == '%') {
            p++;
            if (in_class(c, (unsigned char)*p))
                return yes;
        } else if (p[1] == '-' && p + 2 < close) {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return yes;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return yes;
        }
    }
    return !yes;
}

/* Whether the subject character at s matches the class p .. ep. */
static int one(const mstate *ms, const char *s, const char *p, const char *ep)
{
    if (s >= ms->end)
        return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case '%': return in_class(c, (unsigned char)p[1]);
    case '[': return in_set(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

/* ---- the matcher ----------------------------------------------------------- */

static const char *match(mstate *ms, const char *s, const char *p);

/* %bxy at p (p after "%b"). */
static const char *balance(mstate *ms, const char *s, const char *p)
{
    if (p >= ms->pend - 1)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->end || *s != p[0])
        return NULL;
    int open = p[0], close = p[1], depth = 1;
    while (++s < ms->end) {
        step(ms);
        if (*s == close) {
            if (--depth == 0)
                return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return NULL;
}

/* The longest run of the class that lets the rest match, then shorter. */
static const char *greedy(mstate *ms, const char *s, const char *p, const char *ep)
{
    ptrdiff_t n = 0;
    while (one(ms, s + n, p, ep)) {
        n++;
        step(ms);
    }
    for (; n >= 0; n--) {
        const char *r = match(ms, s + n, ep + 1);
        if (r)
            return r;
    }
    return NULL;
}

/* The shortest run of the class that lets the rest match. */
static const char *lazy(mstate *ms, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = match(ms, s, ep + 1);
        if (r)
            return r;
        if (!one(ms, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *open_capture(mstate *ms, const char *s, const char *p, ptrdiff_t what)
{
    if (ms->level >= MAXCAP)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].at = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    const char *r = match(ms, s, p);
    if (!r)
        ms->level--;
    return r;
}

static const char *close_capture(mstate *ms, const char *s, const char *p)
{
    int l = ms->level - 1;
    while (l >= 0 && ms->cap[l].len != CAP_OPEN)
        l--;
    if (l < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[l].len = s - ms->cap[l].at;
    const char *r = match(ms, s, p);
    if (!r)
        ms->cap[l].len = CAP_OPEN;
    return r;
}

/* The index of capture %c (c a digit), checked. */
static int capture_index(mstate *ms, int c)
{
    int l = c - '1';
    if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_OPEN)
        luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    return l;
}

/* %1 .. %9: the text of a closed capture again. */
static const char *backref(mstate *ms, const char *s, int c)
{
    int l = capture_index(ms, c);
    ptrdiff_t len = ms->cap[l].len;
    if (len < 0 || ms->end - s < len || memcmp(ms->cap[l].at, s, (size_t)len) != 0)
        return NULL;
    return s + len;
}

/* The end of the match of p at s, or NULL. Recursion is bounded by
 * MAXDEPTH; loops and repetitions count their steps. */
static const char *match(mstate *ms, const char *s, const char *p)
{
    if (ms->depth-- == 0)
        luaL_error(ms->L, "pattern too complex");
    for (;;) {
        step(ms);
        if (p == ms->pend)
            break;
        if (*p == '(') {
            s = p[1] == ')' ? open_capture(ms, s, p + 2, CAP_POS) : open_capture(ms, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            s = close_capture(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->pend) {
            s = s == ms->end ? s : NULL;
            break;
        }
        if (*p == '%' && p[1] == 'b') {
            if ((s = balance(ms, s, p + 2)) == NULL)
                break;
            p += 4;
            continue;
        }
        if (*p == '%' && p[1] == 'f') {
            p += 2;
            if (*p != '[')
                luaL_error(ms->L, "missing '[' after '%%f' in pattern");
            const char *ep = item_end(ms, p);
            int before = s == ms->init ? 0 : (unsigned char)s[-1];
            int at = s < ms->end ? (unsigned char)*s : 0;
            if (in_set(before, p, ep - 1) || !in_set(at, p, ep - 1)) {
                s = NULL;
                break;
            }
            p = ep;
            continue;
        }
        if (*p == '%' && isdigit((unsigned char)p[1])) {
            if ((s = backref(ms, s, (unsigned char)p[1])) == NULL)
                break;
            p += 2;
            continue;
        }
        const char *ep = item_end(ms, p);
        if (!one(ms, s, p, ep)) {
            if (*ep == '*' || *ep == '?' || *ep == '-') { /* zero of them will do */
                p = ep + 1;
                continue;
            }
            s = NULL;
            break;
        }
        if (*ep == '?') {
            const char *r = match(ms, s + 1, ep + 1);
            if (r) {
                s = r;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (*ep == '+' || *ep == '*') {
            s = greedy(ms, *ep == '+' ? s + 1 : s, p, ep);
            break;
        }
        if (*ep == '-') {
            s = lazy(ms, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    ms->depth++;
    return s;
}

/* ---- captures to Lua ----------------------------------------------------------- */

/* Pushes capture i (the whole match s..e when the pattern has none). */
static void push_capture(mstate *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t len = ms->cap[i].len;
    if (len == CAP_OPEN)
        luaL_error(ms->L, "unfinished capture");
    if (len == CAP_POS)
        lua_pushinteger(ms->L, (lua_Integer)(ms->cap[i].at - ms->init) + 1);
    else
        lua_pushlstring(ms->L, ms->cap[i].at, (size_t)len);
}

/* Pushes the captures (the whole match when none and s is given). */
static int push_captures(mstate *ms, const char *s, const char *e)
{
    int n = ms->level == 0 && s ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        push_capture(ms, i, s, e);
    return n;
}

/* ---- the four functions ---------------------------------------------------------- */

/* A position argument as an offset from 1 (negative counts from the end). */
static size_t position(lua_Integer pos, size_t len)
{
    if (pos > 0)
        return (size_t)pos;
    if (pos == 0 || pos < -(lua_Integer)len)
        return 1;
    return len + (size_t)pos + 1;
}

static int plain(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (p[i] && strchr("^$*+?.([%-", p[i]))
            return 0;
    return 1;
}

static int find_or_match(lua_State *L, int find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = position(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) {
        lua_pushnil(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || plain(p, lp))) {
        const char *at = memmem(s + init, ls - init, p, lp);
        if (at) {
            lua_pushinteger(L, (lua_Integer)(at - s) + 1);
            lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
            return 2;
        }
        lua_pushnil(L);
        return 1;
    }
    mstate ms;
    int anchor = *p == '^';
    if (anchor)
        p++, lp--;
    prepare(&ms, L, s, ls, p, lp);
    const char *at = s + init;
    do {
        reset(&ms);
        const char *e = match(&ms, at, p);
        if (e) {
            settle(&ms);
            if (!find)
                return push_captures(&ms, at, e);
            lua_pushinteger(L, (lua_Integer)(at - s) + 1);
            lua_pushinteger(L, (lua_Integer)(e - s));
            return push_captures(&ms, NULL, NULL) + 2;
        }
    } while (at++ < ms.end && !anchor);
    settle(&ms);
    lua_pushnil(L);
    return 1;
}

static int p_find(lua_State *L) { return find_or_match(L, 1); }
static int p_match(lua_State *L) { return find_or_match(L, 0); }

/* gmatch's state (a userdata upvalue of the iterator; the subject and the
 * pattern are upvalues too, so its pointers stay valid). */
typedef struct gstate {
    const char *at, *last, *p;
    mstate ms;
} gstate;

static int gmatch_next(lua_State *L)
{
    gstate *g = lua_touserdata(L, lua_upvalueindex(3));
    g->ms.L = L; /* the iterator may run in another coroutine */
    for (const char *at = g->at; at <= g->ms.end; at++) {
        reset(&g->ms);
        const char *e = match(&g->ms, at, g->p);
        if (e && e != g->last) {
            g->at = g->last = e;
            settle(&g->ms);
            return push_captures(&g->ms, at, e);
        }
    }
    settle(&g->ms);
    g->at = g->ms.end + 1; /* done: later calls find nothing at once */
    return 0;
}

static int p_gmatch(lua_State *L)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = position(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls)
        init = ls + 1; /* past the end: nothing */
    lua_settop(L, 2);
    gstate *g = lua_newuserdatauv(L, sizeof *g, 0);
    prepare(&g->ms, L, s, ls, p, lp);
    g->at = s + init;
    g->last = NULL;
    g->p = p;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* The replacement string (argument 3) for the match s..e into b. */
static void add_string(mstate *ms, luaL_Buffer *b, const char *s, const char *e)
{
    lua_State *L = ms->L;
    size_t l;
    const char *r = lua_tolstring(L, 3, &l), *pc;
    while ((pc = memchr(r, '%', l)) != NULL) {
        luaL_addlstring(b, r, (size_t)(pc - r));
        pc++; /* the character after '%' ('\0' at the end of the string) */
        if (*pc == '%') {
            luaL_addchar(b, '%');
        } else if (*pc == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit((unsigned char)*pc)) {
            push_capture(ms, *pc - '1', s, e);
            luaL_addvalue(b); /* a position capture's number as text */
        } else {
            luaL_error(L, "invalid use of '%%' in replacement string");
        }
        l -= (size_t)(pc + 1 - r);
        r = pc + 1;
        step(ms);
    }
    luaL_addlstring(b, r, l);
}

/* Adds the replacement of the match s..e (argument 3 of type tr); 1 when
 * it changed the text. */
static int add_value(mstate *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
    lua_State *L = ms->L;
    if (tr == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = push_captures(ms, s, e);
        lua_call(L, n, 1);
    } else if (tr == LUA_TTABLE) {
        push_capture(ms, 0, s, e);
        lua_gettable(L, 3);
    } else {
        add_string(ms, b, s, e);
        return 1;
    }
    if (!lua_toboolean(L, -1)) { /* nil or false: the match stays */
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
        return 0;
    }
    if (!lua_isstring(L, -1))
        return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    luaL_addvalue(b);
    return 1;
}

static int p_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *src = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int tr = lua_type(L, 3);
    lua_Integer most = luaL_optinteger(L, 4, (lua_Integer)ls + 1), n = 0;
    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE,
                     3, "string/function/table");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int anchor = *p == '^', changed = 0;
    if (anchor)
        p++, lp--;
    mstate ms;
    prepare(&ms, L, src, ls, p, lp);
    const char *last = NULL;
    while (n < most) {
        reset(&ms);
        const char *e = match(&ms, src, p);
        if (e && e != last) {
            n++;
            changed |= add_value(&ms, &b, src, e, tr);
            src = last = e;
        } else if (src < ms.end) {
            luaL_addchar(&b, *src++);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    settle(&ms);
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, src, (size_t)(ms.end - src));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

lua_CFunction sc_pattern_function(const char *name)
{
    static const luaL_Reg fns[] = {
        {"find", p_find}, {"match", p_match}, {"gmatch", p_gmatch}, {"gsub", p_gsub}, {NULL, NULL}};
    for (const luaL_Reg *f = fns; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f->func;
    return NULL;
}
