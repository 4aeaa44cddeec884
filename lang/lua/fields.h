/*
 * fields.h — the fields of every table a recipe gives stagecraft, one row
 * each (docs/language.md#fields, docs/blocks.md, docs/offload.md,
 * docs/vocab.md#the-model-flops-and-bytes). Everything that names them
 * comes from here: the unknown-field checks and their "did you mean" (in
 * the table's order), the Lua side (sc._fields(name): the prelude's
 * sc.autoschedule and sc.fields); tests/py/lists.py compares them with the
 * documentation, tests/py/repl_pty.py with the REPL's ":help program".
 *
 * X(name, tables, type, doc): the field, the tables that accept it (SC_IN(T)
 * for each table T of SC_FIELD_TABLES), its type and what it means, as the
 * documentation has them. A table lists its fields in the order of the
 * rows; a name may have a row per meaning (mem is the memory limit of a
 * program, and the target peak of an offload budget). A new field is one
 * row here (and its reading where the table is read).
 *
 *     const char *const *f = sc_fields_of(SC_FT_OFFLOAD);  // policy, chunks, ..., NULL
 *     sc_lua_check_fields(L, t, "offload", f);
 *
 * Tested by: tests/lua/test_typos.lua, tests/py/lists.py.
 */
#ifndef SC_FIELDS_H
#define SC_FIELDS_H

/* The tables: X(ID, name) with the name sc._fields takes. */
#define SC_FIELD_TABLES(X)                                                                        \
    X(PROGRAM, "program")           /* sc.program */                                              \
    X(BLOCK, "block")               /* sc.block: the program's fields a Block carries, its own */ \
    X(BLOCK_SPEC, "block_spec")     /* the `block` table of sc.program */                         \
    X(OFFSETS, "offsets")           /* a block's `first` and `delta` */                           \
    X(SEARCH, "block_search")       /* sc.block_search and sc.tradeoff */                         \
    X(AUTOSCHEDULE, "autoschedule") /* sc.autoschedule */                                         \
    X(AUTO, "auto")                 /* the `auto` table of sc.program */                          \
    X(OFFLOAD, "offload")           /* the `offload` table */                                     \
    X(RECOMPUTE, "recompute")       /* the `recompute` table */                                   \
    X(MODEL, "model")               /* the `model` table */                                       \
    X(VOCAB_COSTS, "vocab_costs")   /* the `vocab_costs` table */                                 \
    X(EXPORT, "export")             /* the options of p:export and p:svg */                       \
    X(ONE_OF, "one_of")             /* of these, a program gives exactly one */                   \
    X(FROM_PARAMS, "from_params")   /* sc.fields copies them from the parameters */           \
    X(FSDP, "fsdp")                 /* the `fsdp` table */

typedef enum sc_field_table {
#define X(id, name) SC_FT_##id,
    SC_FIELD_TABLES(X)
#undef X
    SC_FT_COUNT
} sc_field_table;

#define SC_IN(t) (1u << SC_FT_##t)
/* The shape, costs and memory model that sc.program, sc.block,
 * sc.block_search and sc.autoschedule share. */
#define SC_SHAPE (SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(SEARCH) | SC_IN(AUTOSCHEDULE))
#define SC_COSTS (SC_SHAPE | SC_IN(FROM_PARAMS))
/* A block's own fields: sc.block's and the `block` table's. */
#define SC_OWN (SC_IN(BLOCK) | SC_IN(BLOCK_SPEC))

#define SC_FIELDS(X)                                                                              \
    X("p", SC_COSTS, "integer", "devices, 1..4096")                                               \
    X("devices", SC_SHAPE, "integer", "p")                                                        \
    X("m", SC_COSTS, "integer", "microbatches, 1..1000000")                                       \
    X("microbatches", SC_SHAPE, "integer", "m")                                                   \
    X("v", SC_SHAPE, "integer", "stages per device; only used for the default of stages")         \
    X("stages", SC_SHAPE, "integer", "virtual stages, p..65536")                                  \
    X("placement", SC_SHAPE, "\"loop\", \"v\", \"wave\" or list of S devices",                      \
      "the device of each stage")                                                                 \
    X("tf", SC_COSTS, "number or list of S numbers", "forward time; finite and >= 0")             \
    X("tb", SC_COSTS, "number or list of S numbers", "input-gradient time; finite and >= 0")      \
    X("tw", SC_COSTS, "number or list of S numbers", "weight-gradient time; finite and >= 0")     \
    X("tcomm", SC_COSTS, "number", "time of one transfer; finite and >= 0")                       \
    X("w_keep", SC_COSTS, "number", "share of F's activation still held after B; within [0, 1]")  \
    X("units", SC_SHAPE, "number or list of S numbers", "activation units per microbatch")        \
    X("lengths", SC_SHAPE, "list of m numbers or file name",                                      \
      "tokens of each microbatch: costs and bytes scale with them")                               \
    X("mem", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(SEARCH), "number, string or list",             \
      "memory limit: the peak no device may pass, in units, bytes or per device")                 \
    X("order", SC_IN(PROGRAM) | SC_IN(ONE_OF), "list or function", "an ordered program")          \
    X("rule", SC_IN(PROGRAM) | SC_IN(ONE_OF), "string", "a rule")                                 \
    X("block", SC_IN(PROGRAM) | SC_IN(ONE_OF), "table or Block", "a building block")              \
    X("auto", SC_IN(PROGRAM) | SC_IN(ONE_OF), "table", "the automatic scheduler")                 \
    X("offload", SC_SHAPE, "name, table or function", "the offload policy")                       \
    X("recompute", SC_SHAPE, "name, table or function", "the recompute policy")                   \
    X("fit", SC_IN(PROGRAM), "boolean", "an ordered program under mem: its forwards wait for memory") \
    X("mem", SC_IN(AUTO) | SC_IN(AUTOSCHEDULE), "number",                                         \
      "memory limit per device, in units (required)")                                             \
    X("reorder", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(SEARCH), "boolean",                        \
      "reorder the passes after unrolling; overrides a Block's own choice")                       \
    X("interval", SC_OWN, "number", "the interval T of the block")                                \
    X("slots", SC_OWN, "boolean", "offsets are slots of one pass (the compact form)")             \
    X("reorder", SC_IN(BLOCK_SPEC), "boolean", "the block's choice: reorder after unrolling")     \
    X("overlap", SC_OWN, "boolean",                                                               \
      "an F and a backward of one device at offsets equal modulo the interval are a pair")        \
    X("F", SC_OWN | SC_IN(OFFSETS), "list of numbers", "offsets of the forward passes")           \
    X("B", SC_OWN | SC_IN(OFFSETS), "list of numbers", "offsets of the input-gradient passes")    \
    X("W", SC_OWN | SC_IN(OFFSETS), "list of numbers", "offsets of the weight-gradient passes")   \
    X("BW", SC_OWN | SC_IN(OFFSETS), "list of numbers", "offsets of the fused backward passes")   \
    X("first", SC_OWN, "table", "the compact form: the first offsets of each kind")               \
    X("delta", SC_OWN, "table", "the compact form: the step between a kind's offsets")            \
    X("kmax", SC_IN(SEARCH), "integer", "the largest k enumerated")                               \
    X("seed", SC_IN(AUTO) | SC_IN(AUTOSCHEDULE), "integer", "seed of the search")                 \
    X("time_limit", SC_IN(AUTO) | SC_IN(AUTOSCHEDULE), "number",                                  \
      "seconds for the whole call; 0: the heuristic only")                                        \
    X("objective", SC_IN(AUTO) | SC_IN(AUTOSCHEDULE), "\"sim\" or \"flow\"",                      \
      "what the search's schedules are judged by")                                                \
    X("max_evals", SC_IN(AUTO) | SC_IN(AUTOSCHEDULE), "integer", "most candidates timed")         \
    X("where", SC_IN(AUTO), "string", "the caller's position (set by sc.autoschedule)")           \
    X("costs", SC_SHAPE, "cost table", "measured per-stage costs (sc.costs(FILE))")               \
    X("vocab_par", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(AUTOSCHEDULE),                           \
      "\"none\", \"baseline\", \"redis\", \"vocab-1\", \"vocab-2\"",                              \
      "where the vocabulary layers go")                                                           \
    X("model", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(AUTOSCHEDULE), "table",                      \
      "the model whose FLOPs and bytes give costs, memory and parameter bytes")                   \
    X("vocab_costs", SC_IN(PROGRAM) | SC_IN(BLOCK), "table", "times of the vocabulary passes")    \
    X("vocab_lag", SC_IN(PROGRAM) | SC_IN(BLOCK), "number",                                       \
      "lookahead allowance of the vocabulary placement")                                          \
    X("S", SC_OWN, "list of P numbers", "offsets of the output layer's passes")                   \
    X("T", SC_OWN, "list of P numbers", "offsets of its weight gradients")                        \
    X("E", SC_OWN, "list of P numbers", "offsets of the input embedding's passes")                \
    X("EW", SC_OWN, "list of P numbers", "offsets of its weight gradients")                       \
    X("steps", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(AUTOSCHEDULE), "integer",                    \
      "training steps back to back, 1..100000")                                                   \
    X("optim_sync", SC_IN(PROGRAM) | SC_IN(BLOCK) | SC_IN(AUTOSCHEDULE),                          \
      "\"none\", \"sync\" or \"post-validation\"",                                                \
      "how the devices agree on each optimizer step")                                             \
    X("tfb", SC_SHAPE, "number or list of S numbers",                                           \
      "time of an overlapped pair of F and B (none: tf + tb)")                                    \
    X("ta", SC_SHAPE, "number or list of S numbers",                                            \
      "all-to-all part of F, B and BW: exposed alone, hidden in a pair")                          \
    X("copies", SC_IN(PROGRAM), "integer", "copies of the model, each microbatch through one")    \
    X("ep", SC_IN(PROGRAM), "integer", "expert-parallel degree: each device stands for E")       \
    X("forward_only", SC_IN(PROGRAM), "boolean", "F passes only: no backward, no optimizer step") \
    X("slices", SC_IN(PROGRAM), "integer",                                                        \
      "causal slices per microbatch (Seq1F1B); m then counts slices")                            \
    X("slice_split", SC_IN(PROGRAM), "\"even\" or \"compute\"",                              \
      "slices of equal tokens, or of equal F cost (Seq1F1B's partition)")                        \
    X("comm", SC_IN(PROGRAM), "\"nccl\", \"gloo\" or \"per-link\"",                                  \
      "the runtime's point-to-point semantics it is verified and simulated in")                  \
    X("pairs", SC_IN(PROGRAM) | SC_IN(BLOCK), "boolean",                                                       \
      "join neighbouring F and B into overlapped pairs where the costs gain")                     \
    X("fsdp", SC_IN(PROGRAM), "true or table", "FSDP: stages sharded over a data-parallel group") \
    X("policy", SC_IN(OFFLOAD), "string", "none, all, selective or budget")                       \
    X("chunks", SC_IN(OFFLOAD), "number", "selective: chunks moved per device")                   \
    X("ratio", SC_IN(OFFLOAD), "number", "host-link time of one unit relative to tf+tb+tw")       \
    X("shared", SC_IN(OFFLOAD), "boolean", "devices 2k, 2k+1 share a host link")                  \
    X("mem", SC_IN(OFFLOAD), "number", "budget: the peak to reach, in units")                     \
    X("margin", SC_IN(OFFLOAD), "number", "a copy back ends this many durations of its B before it") \
    X("policy", SC_IN(RECOMPUTE), "string", "none, all, selective or budget")                     \
    X("chunks", SC_IN(RECOMPUTE), "number", "selective: chunks recomputed per device")            \
    X("frac", SC_IN(RECOMPUTE), "number", "the part of a record dropped and recomputed")          \
    X("time", SC_IN(RECOMPUTE), "number", "a recomputation's time as a fraction of F's")          \
    X("mem", SC_IN(RECOMPUTE), "number", "budget: the peak to reach, in units")                   \
    X("layers", SC_IN(MODEL), "integer", "transformer layers, at least S")                        \
    X("hidden", SC_IN(MODEL), "integer", "hidden size")                                           \
    X("seq", SC_IN(MODEL), "integer", "sequence length")                                          \
    X("vocab", SC_IN(MODEL), "integer", "vocabulary size")                                        \
    X("batch", SC_IN(MODEL), "integer", "sequences per microbatch")                               \
    X("heads", SC_IN(MODEL), "integer", "attention heads")                                        \
    X("tflops", SC_IN(MODEL), "number", "a device's achieved TFLOP/s")                            \
    X("coll_gbps", SC_IN(MODEL), "number", "collectives: bandwidth (GB/s)")                       \
    X("coll_us", SC_IN(MODEL), "number", "collectives: latency (us)")                             \
    X("p2p_gbps", SC_IN(MODEL), "number", "> 0: a transfer's time from its bytes")                \
    X("config", SC_IN(MODEL), "table", "the description: sc.model(\"config.json\")")            \
    X("dtype", SC_IN(MODEL), "string", "parameters: bf16, fp16 or fp32 (default: the config's)") \
    X("precision", SC_IN(MODEL), "string", "mixed (fp32 gradients, master, states) or pure")     \
    X("optimizer", SC_IN(MODEL), "string", "adamw, sgd or none")                                 \
    X("zero", SC_IN(MODEL), "integer", "ZeRO stage over dp: 1 states, 2 gradients, 3 params")    \
    X("dp", SC_IN(MODEL), "integer", "data-parallel ranks the ZeRO shards spread over")           \
    X("workspace", SC_IN(MODEL), "number", "bytes per device besides (CUDA, cuBLAS, NCCL)")      \
    X("split", SC_IN(MODEL), "string or list", "decoder layers per stage: even, best, counts, a layout") \
    X("s", SC_IN(VOCAB_COSTS), "number", "time of a device's S")                                  \
    X("t", SC_IN(VOCAB_COSTS), "number", "time of a device's T")                                  \
    X("e", SC_IN(VOCAB_COSTS), "number", "time of a device's E")                                  \
    X("ew", SC_IN(VOCAB_COSTS), "number", "time of a device's EW")                                \
    X("coll", SC_IN(VOCAB_COSTS), "number", "latency of a collective (bandwidth unlimited)")      \
    X("units", SC_IN(VOCAB_COSTS), "number", "S's activation units")                              \
    X("title", SC_IN(EXPORT), "string", "the picture's title")                                    \
    X("width", SC_IN(EXPORT), "number", "the picture's width in pixels")                          \
    X("from", SC_IN(EXPORT), "number", "the start of the time window")                            \
    X("to", SC_IN(EXPORT), "number", "the end of the time window")                                \
    X("dp", SC_IN(FSDP), "integer", "replicas in the data-parallel group, >= 1")                  \
    X("units", SC_IN(FSDP), "number", "memory units of one stage's unsharded parameters")         \
    X("bytes", SC_IN(FSDP), "number", "one stage's parameter bytes, for the all-gather's time")   \
    X("time", SC_IN(FSDP), "number", "the all-gather's time (default: from bytes)")               \
    X("reduce_time", SC_IN(FSDP), "number", "the reduce-scatter's time (default: the gather's)")  \
    X("policy", SC_IN(FSDP), "string", "full, auto or derived: where UNSHARD and RESHARD go")    \
    X("max_active", SC_IN(FSDP), "integer", "the most stages unsharded at once on a device")

/* The fields table t accepts, in order, NULL-terminated (they live as
 * long as the program). */
const char *const *sc_fields_of(sc_field_table t);
/* Whether table t accepts the field. */
int sc_field_in(const char *name, sc_field_table t);
/* The table named `name` (sc._fields), or -1; the name of table t. */
int sc_field_table_named(const char *name);
const char *sc_field_table_name(sc_field_table t);
/* The i-th row: its name, tables (a mask of 1 << sc_field_table), type
 * and doc; 0 past the end. */
int sc_field_row(int i, const char **name, unsigned *tables, const char **type,
                 const char **doc);

#endif
