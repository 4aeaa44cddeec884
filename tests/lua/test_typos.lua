-- test_typos.lua — a typo is never silent (docs/guide.md#a-worked-example,
-- docs/language.md#parameters, docs/language.md#fields): unknown fields of
-- sc.program, sc.block, sc.autoschedule, block, auto and offload tables are
-- errors with the near names; a parameter given but never read is an error;
-- reading an undeclared name near a declared one is an error, as is a name
-- near one of the module, a Program or a Block; sc.version and
-- sc.need_version. Run: ./stagecraft --trust tests/lua/test_typos.lua
local T = dofile("tests/lua/harness.lua")

local base = {p = 2, m = 2, rule = "1f1b"}
local function with(extra)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra) do t[k] = v end
  return t
end

-- The issue's own example: four misspelled fields, each named with its
-- near name, sorted, in one message (exit code 3).
local ok, err = pcall(function()
  return sc.program(with {offlod = "all", tcom = 5, w_kep = 0.5, mem_limit = 2})
end)
T.ok(not ok, "misspelled program fields are refused")
T.ok(tostring(err):find("program: unknown fields 'mem_limit' (did you mean 'mem'?), 'offlod' "
  .. "(did you mean 'offload'?), 'tcom' (did you mean 'tcomm'?), 'w_kep' (did you mean "
  .. "'w_keep'?)", 1, true), "all four named with near names: " .. tostring(err))
T.eq(sc._errcode(err), 3, "unknown field: exit code 3")
T.ok(tostring(err):find("test_typos.lua:%d+:") ~= nil, "at the caller's line")
-- A field with no near name lists the known ones.
T.fails(function() sc.program(with {zzzz = 1}) end,
  "program: unknown field 'zzzz' (known: p, devices, m, microbatches", "no near name: known fields")
T.fails(function() sc.program(with {[1] = "x"}) end, "program: unknown field '[1]'", "positional entry")
-- Every correct field still works (a program that uses most of them).
T.ok(sc.program {p = 2, m = 2, v = 1, stages = 2, placement = "loop", tf = 1, tb = 1, tw = 1,
  tcomm = 0, w_keep = 1, units = 1, mem = 9, rule = "1f1b", offload = "none"}:valid(),
  "all fields known")

-- sc.block and the block table of sc.program, with first/delta.
local blk = {interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3}}
T.fails(function() sc.program {p = 2, m = 2, block = {interval = 3, F = {0, 1}, B = {4, 2},
  W = {5, 3}, intervall = 4}} end, "block: unknown field 'intervall' (did you mean 'interval'?)",
  "block table typo")
T.fails(function() sc.block {p = 2, interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3}, slot = true} end,
  "block: unknown field 'slot' (did you mean 'slots'?)", "sc.block typo")
T.fails(function() sc.block {p = 2, placement = "v", interval = 6, slots = true,
  first = {F = {0, 3}, b = {7, 4}}} end, "block: first: unknown field 'b' (did you mean 'B'?)",
  "first typo")
T.fails(function() sc.block {p = 2, placement = "v", interval = 6, slots = true,
  first = {F = {0, 3}, B = {7, 4}}, delta = {FF = {1, -1}}} end,
  "block: delta: unknown field 'FF'", "delta typo")
T.ok(sc.program {p = 2, m = 2, block = blk}:valid(), "block table accepted")
local b = sc.block {p = 2, m = 4, interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3}, tcomm = 0,
  offload = "none", reorder = true}
T.ok(b:program{m = 6}:valid(), "blk:program with the block's fields")
T.ok(sc.v_block("half", {p = 4, m = 8}):program():valid(), "v_block program")
T.fails(function() sc.block_search {p = 4, kmaxx = 3} end,
  "block_search: unknown field 'kmaxx' (did you mean 'kmax'?)", "block_search typo")
T.ok(sc.block_search {p = 4, kmax = 3}:program{m = 8}:valid(), "block_search kmax")
T.fails(function() sc.tradeoff {p = 4, mm = 8} end, "tradeoff: unknown field 'mm'", "tradeoff typo")

-- sc.autoschedule and the auto table.
T.fails(function() sc.autoschedule {p = 2, m = 4, mem = 2, time_limt = 0} end,
  "autoschedule: unknown field 'time_limt' (did you mean 'time_limit'?)", "autoschedule typo")
ok, err = pcall(sc.autoschedule, {p = 2, m = 4, mem = 2, seeed = 1})
T.eq(sc._errcode(err), 3, "autoschedule typo: exit code 3")
T.ok(tostring(err):find("test_typos.lua:%d+: autoschedule") ~= nil, "at the line: " .. tostring(err))
T.fails(function() sc.program {p = 2, m = 4, auto = {mem = 2, time_limit = 0, objectve = "sim"}} end,
  "auto: unknown field 'objectve' (did you mean 'objective'?)", "auto table typo")
T.ok(sc.autoschedule {p = 2, m = 4, mem = 2, time_limit = 0, seed = 3, objective = "flow",
  max_evals = 10, tcomm = 0, w_keep = 0.5, units = 1}:valid(), "autoschedule fields known")

-- Offload tables.
T.fails(function() sc.program(with {offload = {policy = "all", ration = 0.1}}) end,
  "offload: unknown field 'ration' (did you mean 'ratio'?)", "offload typo")
T.fails(function() sc.program(with {offload = {polcy = "all"}}) end,
  "offload: unknown field 'polcy' (did you mean 'policy'?)", "offload policy typo")
T.ok(sc.program(with {offload = {policy = "selective", chunks = 1, ratio = 0.1, shared = true,
  mem = 3}}):valid(), "offload fields known")

-- Parameters: unknown names get near names; a name given but never read
-- is an error (it would change nothing); `when` says when it is read.
ok, err = pcall(sc.load, "1f1b", {tcom = 1})
T.ok(tostring(err):find("unknown parameter 'tcom' for recipe '1f1b': did you mean 'tcomm'?", 1, true),
  "-D near name: " .. tostring(err))
T.eq(sc._errcode(err), 2, "unknown parameter: exit code 2")
T.fails(function() sc.load("1f1b", {offload_chunks = 2}) end,
  "parameter 'offload_chunks' is given (2) but recipe '1f1b' reads it only when offload is "
  .. "selective, so it would change nothing", "given, read only under a condition")
T.ok(sc.load("1f1b", {offload_chunks = 0.5, offload = "selective", offload_ratio = 0.01}):valid(),
  "read under its condition")
local dir = os.getenv("TMPDIR") or "/tmp"
local path = dir .. "/sc_typos_" .. tostring(os.time()) .. tostring(math.random(1e9)) .. ".lua"
local f = assert(io.open(path, "w"))
f:write([[
local P = sc.params { {"p", 2, "devices"}, {"m", 2, "microbatches"}, sc.COSTS }
return sc.program { p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, rule = "1f1b" }
]])
f:close()
T.fails(function() sc.load(path, {w_keep = 0}) end, "parameter 'w_keep' is given (0) but recipe '"
  .. path .. "' does not read it, so it would change nothing", "given, never read")
T.ok(sc.load(path, {tf = 2}), "a read parameter is fine")
-- A view: pairs and # still work on what sc.params returns.
local f2 = assert(io.open(path, "w"))
f2:write([[
local P = sc.params { {"p", 2, "devices"}, {"m", 2, "microbatches"} }
local n = 0
for k, v in pairs(P) do n = n + 1 end
assert(n == 2, "pairs over the parameters")
return sc.program { p = P.p, m = P.m, rule = "1f1b" }
]])
f2:close()
T.ok(sc.load(path, {m = 3}), "pairs reads every parameter")
-- Reading an undeclared name: nil, unless it is near a declared one (a
-- typo); the prelude's helpers probe names freely (sc.fields on a recipe
-- that declares 'mems', near 'mem', and no costs).
local f3 = assert(io.open(path, "w"))
f3:write([[
local P = sc.params { {"p", 2, "devices"}, {"m", 2, "microbatches"}, {"mems", 0, "x"}, sc.COSTS }
assert(P.head == nil and P.mems == 0, "an undeclared name far from all reads as nil")
local t = sc.fields(P, {rule = "1f1b"})
if MODE == "typo" then t.tcomm = P.tcom end
return sc.program(t)
]])
f3:close()
T.ok(sc.load(path), "P.head reads as nil; sc.fields probes 'mem' without a typo error")
MODE = "typo"
ok, err = pcall(sc.load, path)
MODE = nil
T.ok(not ok and tostring(err):find(":4: the recipe reads parameter 'tcom', which it does not "
  .. "declare: did you mean 'tcomm'?", 1, true) ~= nil, "P.tcom: a typo, at its line: " .. tostring(err))
T.eq(sc._errcode(err), 3, "undeclared near name: exit code 3")
os.remove(path)
T.fails(function() sc.params { {"x", 1, "d", when = 3} } end, "'when' of 'x' must be a string",
  "when must be a string")

-- Names of the module, a Program and a Block: a near name is a typo, at
-- the caller's line; any other missing name reads as nil.
local prog = sc.program(with {})
T.fails(function() return sc.porgram end, "module 'sc' has no field 'porgram': did you mean 'program'?",
  "sc.porgram")
T.fails(function() return prog:simm() end, "Program has no field or method 'simm': did you mean 'sim'?",
  "p:simm()")
T.fails(function() return prog.devicez end, "did you mean 'devices'?", "p.devicez")
local vb = sc.v_block("half", {p = 4})
T.fails(function() return vb:peek() end, "Block has no field or method 'peek': did you mean 'peak'?",
  "b:peek()")
T.ok(sc.zzzz == nil and prog.zzzz == nil and vb.zzzz == nil and sc._nothing == nil,
  "a name near none reads as nil")
T.ok(sc.program == rawget(sc, "program") and prog.devices == 2, "known names unchanged")

-- sc.version and sc.need_version.
T.ok(sc.version:match("^%d+%.%d+%.%d+$") ~= nil, "sc.version is X.Y.Z")
local maj, min = sc.version:match("^(%d+)%.(%d+)")
T.ok(sc.need_version(maj .. "." .. min), "the running version satisfies itself")
T.ok(sc.need_version("0.1"), "an older minor version is satisfied")
T.fails(function() sc.need_version(maj .. "." .. (tonumber(min) + 1)) end,
  "this recipe needs stagecraft " .. maj .. "." .. (tonumber(min) + 1) .. " or later (this is "
  .. sc.version .. ")", "a later version is refused")
T.fails(function() sc.need_version((tonumber(maj) + 1) .. ".0") end, "(major version", "another major")
T.fails(function() sc.need_version("one") end, "need_version: expected a version like", "malformed")
ok, err = pcall(sc.need_version, "99.0")
T.eq(sc._errcode(err), 3, "need_version: exit code 3")
-- The recipe's line, also when the recipe tail-calls it (no Lua frame of the
-- recipe is left then; the position used to be its caller's, here this file's).
local tail = os.tmpname() .. "_tail.lua"
local f = assert(io.open(tail, "w"))
f:write("-- needs a later one\nreturn sc.need_version(\"99.0\")\n")
f:close()
ok, err = pcall(sc.load, tail)
T.ok(not ok and tostring(err):find("_tail.lua:2: this recipe needs stagecraft 99.0", 1, true) ~= nil,
  "need_version tail-called: the recipe's line (" .. tostring(err) .. ")")
os.remove(tail)

os.exit(T.done("typos"))
