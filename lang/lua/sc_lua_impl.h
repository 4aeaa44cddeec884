/*
 * sc_lua_impl.h — what the files of the Lua module share (lang/ only):
 * reading recipe tables and raising errors with their exit codes.
 *
 * Tested by: tests/lua/test_dsl.lua, tests/lua/test_steps.lua,
 * tests/lua/test_offload.lua, tests/lua/test_vocab.lua.
 */
#ifndef SC_LUA_IMPL_H
#define SC_LUA_IMPL_H

#include <lua.h>

#include "core/core.h"
#include "ir/ir.h"
#include "sim/sim.h"

/* Raises the program's message unless st is SC_OK. */
void sc_lua_check_st(lua_State *L, sc_prog *pg, sc_status st);
/* The error about to be raised is a refusal by the memory cap
 * (sc._cap_refused: the command line then names what fits). */
void sc_lua_mark_cap_refused(lua_State *L);
/* The number field `name` of the table at t, dflt when absent; raises
 * "WHAT: 'name' must be a number (got ...)" for anything else, NaN too. */
double sc_lua_num_field(lua_State *L, int t, const char *what, const char *name, double dflt);
/* Whether x is out of range for the size `name` ("p", "m" or "v"; any
 * other name is in range): 1 with "devices p = 0 is out of range (1..4096)"
 * pushed, else 0 and nothing. sc._size_range gives the prelude the same
 * check for the parameters p, m and v. */
int sc_lua_size_range(lua_State *L, const char *name, lua_Integer x);
/* P, S, m of the table at t, checked (m_dflt when m may be absent). */
void sc_lua_shape_sizes(lua_State *L, int t, lua_Integer m_dflt, lua_Integer *P, lua_Integer *S,
                        lua_Integer *m);
/* A new program with the shape, costs and memory model of the table at t,
 * stored at *slot (a userdata field, freed by its __gc on error). */
void sc_lua_build_shape(lua_State *L, int t, lua_Integer P, lua_Integer S, lua_Integer m,
                        sc_prog **slot);

/* Raises "WHAT: unknown field 'x' (did you mean 'y'?)" (exit code 3, at
 * the caller's line) when the table at t has a key that `known` (a
 * NULL-terminated list, of fields.h: sc_fields_of) lacks: a misspelled field is never ignored. Every
 * unknown key is named, in sorted order. */
void sc_lua_check_fields(lua_State *L, int t, const char *what, const char *const *known);
/* The message sc_lua_check_fields raises, pushed, or nothing and 0. */
int sc_lua_unknown_fields(lua_State *L, int t, const char *what, const char *const *known);

/* The fields a Program or Block reads (p.devices): one table, ended by
 * {NULL}, in the order the REPL's ":help" lists them, gives __index, the
 * metatable's __fields (completion, :help) and the typos' near names. */
typedef struct sc_lua_getter {
    const char *name;
    void (*push)(lua_State *L, const void *obj); /* pushes obj's value */
} sc_lua_getter;
/* __index of the userdata at 1 (obj) for the key at 2: a field, else a
 * method (its metatable's __methods); a name near one of them is a typo,
 * raised at the caller's line, "Program has no field or method 'simm': did
 * you mean 'sim'?"; any other name reads as nil (p.x == nil still works). */
int sc_lua_index(lua_State *L, const char *what, const void *obj, const sc_lua_getter *g);
/* Sets __fields (the names of g) in the metatable on the stack top. */
void sc_lua_set_getters(lua_State *L, const sc_lua_getter *g);

/* program_export.c: adds p:export, p:svg, p:trace to the Program's methods
 * (after sc_lua_open_program). */
void sc_lua_open_export(lua_State *L);

/* program.c: sc.program{...}, and the Program type's metatable. */
int sc_lua_program(lua_State *L);
void sc_lua_open_program(lua_State *L);
/* block.c: the `block` field of the table at t (a Block or a block
 * table) unrolled into pg; and the Block type with sc.block,
 * sc.block_search and sc.tradeoff added to the module on the stack top. */
void sc_lua_fill_block(lua_State *L, int t, sc_prog *pg);
void sc_lua_open_block(lua_State *L);
/* block.c: sc.block (a Block from the table at 1); the fields of the
 * table at src set in the one at dst; a new userdata on the stack that
 * frees the program put in its slot when collected. */
int sc_lua_block_new(lua_State *L);
void sc_lua_merge(lua_State *L, int dst, int src);
sc_prog **sc_lua_block_holder(lua_State *L);
/* The slot of the Block (or holder) at idx for the orders handed with it
 * (schedule/block_hand.h): freed with it, installed by its program when
 * every input of the unroll is equal. */
struct sc_block_hand **sc_lua_block_hand(lua_State *L, int idx);
/* search.c: sc.block_search and sc.tradeoff into the module at mod. */
void sc_lua_open_search(lua_State *L, int mod);

/* vocab.c: the fields vocab_par, vocab_costs and model of the table at
 * t, into pg (after its placement and costs, before a cost file). */
void sc_lua_set_vocab(lua_State *L, int t, sc_prog *pg);

/* steps.c: the `steps` and `optim_sync` fields of the table at t,
 * into pg; and sc._steps(prog, steps, optim_sync) for -D. */
void sc_lua_set_steps(lua_State *L, int t, sc_prog *pg);
/* The fsdp field of table t (fsdp.c, docs/fsdp.md). */
void sc_lua_set_fsdp(lua_State *L, int t, sc_prog *pg);
int sc_lua_steps(lua_State *L);
/* lengths.c: the `lengths` field of the table at t (else -D lengths:
 * sc._plengths) set on pg; sc._lengths(prog, value). */
void sc_lua_set_lengths(lua_State *L, int t, sc_prog *pg);
int sc_lua_lengths(lua_State *L);
int sc_lua_lengths_read(lua_State *L);
int sc_lua_order_lengths(lua_State *L);
/* The figures of every step (docs/steps.md#simulation) into the table on the stack
 * top, for several steps or a synchronization. */
void sc_lua_set_step_figures(lua_State *L, const sc_prog *pg, const sc_sim *sim);
/* offload.c: the `offload` field of the table at t, into pg (after
 * its orders are built); and the table of offload figures of a simulation
 * (pushes it and returns 1, or returns 0 without offload). */
void sc_lua_set_offload(lua_State *L, int t, sc_prog *pg);
int sc_lua_push_offload(lua_State *L, const sc_prog *pg, const sc_sim *sim);

/* mem.c: the `mem` field of the table at t (units, bytes, per device)
 * into pg's caps (after its model and cost file, which give bytes per unit). */
void sc_lua_set_mem(lua_State *L, int t, sc_prog *pg);
/* The same for the value at idx (nil: nothing), set into pg only when
 * `set`; returns the smallest cap, in units (INFINITY: none). */
double sc_lua_set_mem_at(lua_State *L, int idx, sc_prog *pg, int set);
/* The `mem` field of the table at t (a memory policy's budget) in units, as
 * sc_lua_set_mem_at reads it (bytes too: the least device's cap); dflt when absent. */
double sc_lua_mem_field(lua_State *L, int t, sc_prog *pg, double dflt);
/* recompute.c: the `recompute` field of the table at t, into pg
 * (after its offload); and the figures of the last compilation's
 * recomputation as a table (pushed; 0 without one). */
void sc_lua_set_recompute(lua_State *L, int t, sc_prog *pg);
int sc_lua_push_recompute(lua_State *L, const sc_prog *pg);
/* policy.c: what `offload` and `recompute` share. A policy field:
 * its name, its policy names (index = the enum's value; the first `count`
 * may be given by name) and the fields of its table form. */
typedef struct {
    const char *field;
    const char *const *names;
    int count;
    const char *const *known;
} sc_lua_policy_field;
/* Reads t[pf->field]: 0 when absent (stack unchanged); else pushes the value
 * and returns its stack index, with *policy set when a name is given, *fn the
 * index of a policy function (0: none) and *tab that of the table form (0:
 * not a table). Bad values raise one line naming the field. */
int sc_lua_read_policy(lua_State *L, int t, const sc_lua_policy_field *pf, int *policy,
                        int *fn, int *tab);
/* Calls the function at fn once per record with its life (docs/offload.md):
 * a fraction in [0, 1], true (= yes) or false/nil (= 0), handed to set. The
 * life carries `transfer` only when transfer is non-zero. */
typedef sc_status (*sc_lua_fraction_set)(sc_prog *pg, int s, int mb, double frac);
void sc_lua_record_fractions(lua_State *L, int fn, sc_prog *pg, const char *field, double yes,
                             int transfer, sc_lua_fraction_set set);
/* Pushes x[0..n) as a Lua list. */
void sc_lua_push_numbers(lua_State *L, const double *x, int n);
/* t[k] = v, t the table on top of the stack: a number, an integer, a
 * string (the figures' tables of prog:sim(), autoinfo, the searches). */
void sc_lua_set_num(lua_State *L, const char *k, double v);
void sc_lua_set_int(lua_State *L, const char *k, lua_Integer v);
void sc_lua_set_str(lua_State *L, const char *k, const char *v);
/* costs.c: the `costs` field of the table at t (a table of sc.costs) into
 * pg: per-stage tf, tb, tw (tbw, optim, tfb when given), tcomm, in
 * seconds; 'stages' must equal the program's (else exit 3 naming the file
 * and the field), unless --force-costs (each stage its share of the
 * file's, sc_costs_resample, with a warning). It overrides every other source of the costs. And sc.costs,
 * sc._costs_read and sc._granted added to the module on the stack top. */
void sc_lua_apply_costs(lua_State *L, int t, sc_prog *pg);
/* The cost table's FSDP times (fsdp_time, reduce_time: a trace's UNSHARD
 * and REDUCE_GRAD) into a program with FSDP, after its fsdp field: a
 * measurement beats the recipe's times (costs.c). */
void sc_lua_apply_costs_fsdp(lua_State *L, int t, sc_prog *pg);

/* What a wrong value at idx was, for a message's "(got ...)": a string in
 * quotes, a number as written, else "a" and its type name; pushed, and returned
 * (tables.c). */
const char *sc_lua_got(lua_State *L, int idx);
void sc_lua_open_costs(lua_State *L);
/* Reads path as JSON text into *rd (the caller frees rd->text: sc_free)
 * under the evaluation's --max-time, at most max bytes; or raises, naming
 * `label` ("cost file x.json"): the time limit (SC_ERR_LIMIT), "larger
 * than N MiB: not a KIND" or why it cannot be read (SC_ERR_ARG), not enough
 * memory (costs.c). */
struct sc_read;
void sc_lua_read_json(lua_State *L, const char *path, const char *label, size_t max,
                      const char *kind, struct sc_read *rd);

/* model.c: sc.model and sc._model_read added to the module on the stack
 * top; the description of the table at t (sc.model's: its sizes), checked,
 * or a raised error (the caller frees it: sc_mdesc_free); an unknown key of
 * the table at t raised as "WHAT: unknown field 'k' (did you mean ...)". */
struct sc_mdesc;
void sc_lua_open_model(lua_State *L);
struct sc_mdesc *sc_lua_to_mdesc(lua_State *L, int t);
void sc_lua_known_fields(lua_State *L, int t, const char *what, const char *const *known);

#endif
