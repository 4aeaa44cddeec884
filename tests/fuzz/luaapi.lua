-- luaapi.lua — the driver of fuzz_luaapi.c: the fuzzer's bytes, read as a
-- program of calls against the recipe API (sc, Program, block, costs), run
-- as a recipe inside the sandbox. The harness puts three locals before this
-- text: DATA (the bytes), TOKEN (the secret of the canary files outside the
-- recipe's folder) and OUT (that folder's path). A value that carries TOKEN
-- is a read outside the grant: the driver raises LEAK and the harness aborts.
-- sc.plan is called too (the harness registers it as the command line does).
local pos, steps = 1, 0
local function byte()
  local b = DATA:byte(pos) or 0
  pos = pos + 1
  return b
end
local function more() return pos <= #DATA and steps < 48 end

local fields = {}
pcall(function() for k in pairs(sc.fields and sc.fields() or {}) do fields[#fields + 1] = k end end)
for _, k in ipairs { "p", "m", "rule", "v", "mem", "offload", "recompute", "costs", "steps",
  "optim_sync", "vocab_par", "placement", "order", "tf", "tb", "tw", "tcomm", "policy", "chunks",
  "frac", "ratio", "shared", "name", "passes", "__index", "__tostring" } do
  fields[#fields + 1] = k
end
local methods = { "check", "valid", "sim", "dump", "timeline", "order", "summary", "export",
  "svg", "trace", "lifespans", "peak", "offsets", "program", "costs" }
local funcs = {}
for k, v in pairs(sc) do if type(v) == "function" then funcs[#funcs + 1] = k end end
table.sort(funcs)

local seen = setmetatable({}, { __mode = "k" })
local function scan(v, depth)
  local t = type(v)
  if t == "string" then
    if v:find(TOKEN, 1, true) then error("LEAK " .. TOKEN .. ": " .. v:sub(1, 200), 0) end
  elseif t == "table" and depth < 4 and not seen[v] then
    seen[v] = true
    local n = 0
    for k, x in next, v do
      scan(k, depth + 1)
      scan(x, depth + 1)
      n = n + 1
      if n > 64 then break end
    end
  end
end

local pool = { 0, 1, 2, 3, 4, 8, -1, 0.5, 1e308, -1e308, 0 / 0, 1 / 0, math.maxinteger,
  math.mininteger, "", "1f1b", "zb-h1", "zb-v", "v-half", "gpipe", "interleaved", "dualpipe",
  "all", "none", "selective", "budget", "json", "torch-csv", "torch-csv-comms", "chrome", "svg",
  "costs.json", "helper.lua", "helper", "out/new.json", "out/keep.json", "out/x.lua",
  "out/../costs.json", "out/.hidden", "out/sub/new.svg", "out.json", "out.csv", "../x.json", "x.lua", "x.lua/.",
  "X.LUA", "sub/../out.svg", OUT .. "/secret.json", OUT .. "/secret.lua", OUT .. "/new.json",
  "../outside/secret.lua", "../outside/secret.json", "/dev/stdout", "/proc/self/environ",
  true, false, {}, { p = 2, m = 2, rule = "1f1b" }, { p = 4, m = 8, rule = "zb-h1" },
  { p = 2, m = 4, v = 2, rule = "zb-v" }, { policy = "all" }, { p = 2, m = 2 },
  -- sc.plan's fields: a cost file inside, one outside (its keys are the canary's token)
  { p = 2, m = 4, cap = 2 }, { p = 2, m = 2, costs = "costs.json" },
  { p = 2, m = 2, costs = OUT .. "/secret.json" }, { p = 2, m = 2, costs = "../outside/secret.json" },
  { p = 2, m = 4, time_limit = 0 }, { p = 3, m = 3, tw = 0 / 0, cap = "1GiB" } }
local function pick()
  return pool[byte() % #pool + 1]
end
local function push(v)
  if v ~= nil and #pool < 96 then pool[#pool + 1] = v end
end

local call -- forward: a function value that calls back into the API
local function args()
  local a, n = {}, byte() % 5
  for i = 1, n do a[i] = pick() end
  return a, n
end
local function run(f, ...)
  steps = steps + 1
  local r = table.pack(pcall(f, ...))
  for i = 1, r.n do
    scan(r[i], 0)
    if i > 1 or not r[1] then push(r[i]) end
  end
end

call = function(depth)
  local op = byte() % 11
  if op <= 2 then -- sc.f(args)
    local f = sc[funcs[byte() % #funcs + 1]]
    local a, n = args()
    run(f, table.unpack(a, 1, n))
  elseif op == 3 then -- obj:method(args)
    local o, name = pick(), methods[byte() % #methods + 1]
    local a, n = args()
    run(function() return o[name](o, table.unpack(a, 1, n)) end)
  elseif op == 4 then -- obj.field
    local o, k = pick(), fields[byte() % #fields + 1]
    run(function() return o[k] end)
  elseif op == 5 then -- a table of fields
    local t = {}
    for _ = 1, byte() % 6 do t[fields[byte() % #fields + 1]] = pick() end
    push(t)
  elseif op == 6 then -- metamethods that call back into the API, or raise
    local kind, d = byte() % 4, depth
    local cb = function(...)
      if kind == 0 then error("callback error") end
      if kind == 1 and d < 2 then call(d + 1) end
      if kind == 2 then return pick() end
      return ...
    end
    local mm = { "__index", "__tostring", "__gc", "__close", "__lt", "__le", "__eq",
      "__call", "__len", "__concat", "__name", "__pairs" }
    local t = setmetatable({}, { [mm[byte() % #mm + 1]] = cb, [mm[byte() % #mm + 1]] = cb })
    push(t)
    push(cb)
  elseif op == 7 then -- what a recipe may ask of any value
    local o = pick()
    run(function() return tostring(o), getmetatable(o), type(o) end)
  elseif op == 8 then -- a string from the bytes
    local n, s = byte() % 24, {}
    for i = 1, n do s[i] = string.char(byte()) end
    push(table.concat(s))
  elseif op == 9 then -- table.sort with a comparator from the pool, over pool values
    local cmp, t = pick(), { pick(), pick(), pick() }
    run(table.sort, t, type(cmp) == "function" and cmp or nil)
  elseif sc.plan then -- the planner, whose candidates are evaluations nested in this one
    local t = pick()
    if type(t) == "table" and byte() % 2 == 0 then t[fields[byte() % #fields + 1]] = pick() end
    run(sc.plan, t)
  end
end

while more() do call(0) end
collectgarbage()
return sc.program { p = 2, m = 2, rule = "1f1b" }
