-- _prelude.lua — the Lua half of the stagecraft module: parameters and
-- loading recipes. Loaded once into the module table by luaopen_stagecraft.
local sc = ...

-- The standard cost and memory parameters, to splice into sc.params.
-- Float defaults: -D tf=1.5 is a number; integer defaults (p, m) take integers.
sc.COSTS = {
  {"tf", 1.0, "forward time of one microbatch on a device's share of the model"},
  {"tb", 1.0, "backward time for the input gradient (B)"},
  {"tw", 1.0, "backward time for the weight gradient (W)"},
  {"tcomm", 0.0, "time of one point-to-point transfer"},
  {"w_keep", 1.0, "fraction of F's activation still held after B (W frees it)"},
  {"costs", "", "cost file of 'run --profile' (JSON, seconds): overrides tf tb tw tcomm"},
}

-- The reader of cost files for the recipe being evaluated: its sandbox's
-- sc.costs (files in its folder, or named on the command line), set by
-- sc._evaluate; sc.costs itself outside recipes.
local function read_costs(path)
  return (sc._costs_reader or sc.costs)(path)
end

-- The cost table of the parameter `costs` (docs/costs.md), or nil when it is
-- absent or empty. With S, its per-stage lists are of S stages: a file of
-- other stages (used under --force-costs) gives each stage its share.
function sc.costs_of(P, S)
  if P == nil or P.costs == nil or P.costs == "" then return nil end
  local C = read_costs(P.costs)
  if S == nil or C.stages == S then return C end
  local R = {}
  for k, v in pairs(C) do R[k] = v end
  for _, k in ipairs{"tf", "tb", "tw", "tbw", "optim", "tfb"} do
    if type(C[k]) == "table" then R[k] = sc._costs_resample(C[k], S) end
  end
  return R
end

-- The memory limit, for recipes that take one (0: no limit): units, bytes
-- ("40GiB", with a model or a cost file) or a list per device ("[6,6,8,8]").
sc.MEM = {"mem", 0.0, "memory limit per device: units, bytes (40GiB) or [a,b,...] per device (0: none)",
          memory = true}

-- Where the caller of a prelude function stands ("file:line: "), and a call
-- of f(t) whose error is reported there with its exit code, for the
-- prelude's functions that build through the module's C functions.
local function caller_where()
  local level, info = 3, debug.getinfo(3, "Sl")
  while info and (info.what == "C" or info.short_src:find("^stdlib/_%a+%.lua$")) do
    level = level + 1
    info = debug.getinfo(level, "Sl")  -- past the prelude's own helpers (sc.fields)
  end
  return info and info.currentline > 0 and (info.short_src .. ":" .. info.currentline .. ": ") or ""
end
local function call_at(where, f, t)
  local ok, res = pcall(f, t)
  if ok then return res end
  local code = sc._errcode(res)
  local msg = tostring(res):gsub("^stdlib/_%a+%.lua:%d+: ", "")
  if code == 0 then error(where .. msg, 0) end
  sc._raise(code, where .. msg)
end
sc._caller_where, sc._call_at = caller_where, call_at -- for _shapes.lua

-- Activation offload (PipeOffload; docs/offload.md): the policy and the host
-- link. With link_gbps > 0 the ratio comes from the model and the device
-- (sc.offload_ratio); hidden and seq also size the model of `run`.
-- Each but `offload` is read only when there is an offload policy (`when`).
local WITH_OFFLOAD = "offload is not none"
sc.OFFLOAD = {
  {"offload", "none", "activation offload: none, all, selective, budget (needs mem)"},
  {"offload_chunks", 1.0, "selective: chunks per device to offload, longest lifespans first",
   when = "offload is selective"},
  {"offload_ratio", 0.25, "host-link time of one unit of activation relative to tf+tb+tw",
   when = WITH_OFFLOAD},
  {"link_gbps", 0.0, "host link GB/s (> 0: the ratio from hidden, seq and tflops)",
   when = WITH_OFFLOAD},
  {"tflops", 400.0, "device TFLOP/s, with link_gbps or layers > 0",
   when = "layers > 0, or offload is not none and link_gbps > 0"},
  {"hidden", 64, "model hidden size, with link_gbps or layers > 0 (and the model of run)",
   when = "layers > 0, or offload is not none and link_gbps > 0"},
  {"seq", 16, "sequence length, with link_gbps or layers > 0 (and the model of run)",
   when = "layers > 0, or offload is not none and link_gbps > 0"},
  {"link_shared", false, "devices 2k and 2k+1 share one host link", when = WITH_OFFLOAD},
  {"offload_margin", 0.0, "a copy back ends this many B durations before B (PipeOffload's: 1)",
   when = WITH_OFFLOAD},
  -- Recomputation (docs/recompute.md), beside offload: each record is kept,
  -- offloaded or recomputed.
  {"recompute", "none", "activation recomputation: none, all, selective, budget (needs mem)"},
  {"recompute_chunks", 1.0, "selective: chunks per device to recompute, longest lifespans first",
   when = "recompute is selective"},
  {"recompute_frac", 1.0, "the part of a record dropped and recomputed (< 1: partial)",
   when = "recompute is not none"},
  {"recompute_time", 0.0, "a recomputation's time as a fraction of F's (0: recompute_frac)",
   when = "recompute is not none"},
}

-- PipeOffload's transfer-to-compute ratio of a transformer layer:
-- k = 10 / (3 (6h + s)) * TFLOPS * 1000 / GBps, the time to move a
-- microbatch's activations over the host link relative to its F+B+W.
-- Full offload is sustainable when each direction of the link keeps up:
-- k <= 1, or k <= 1/2 when two devices share the link. Returns k, whether
-- full offload is sustainable, and that bound.
function sc.offload_ratio(t)
  local where = caller_where()
  if type(t) ~= "table" then
    sc._raise(sc._exits.arg, where .. "offload_ratio: expected a table {hidden=, seq=, tflops=, gbps=}")
  end
  local function num(k)
    local v = tonumber(t[k])
    if v == nil or v ~= v or v <= 0 or v == math.huge then
      sc._raise(sc._exits.arg, where .. ("offload_ratio: '%s' must be a number > 0 (got %s)"):format(k,
        tostring(t[k])))
    end
    return v
  end
  local h, s, tflops, gbps = num("hidden"), num("seq"), num("tflops"), num("gbps")
  local k = 10 / (3 * (6 * h + s)) * tflops * 1000 / gbps
  local bound = t.shared and 0.5 or 1
  return k, k <= bound, bound
end

-- The `offload` field of sc.program from the parameters of sc.OFFLOAD (and
-- mem, the target of budget), or nil for none.
function sc.offload_of(P)
  if P.offload == nil or P.offload == "none" then return nil end
  local ratio = P.offload_ratio
  if P.link_gbps and P.link_gbps > 0 then
    for _, k in ipairs{"hidden", "seq", "tflops"} do
      if not (tonumber(P[k]) and P[k] > 0) then
        sc._raise(sc._exits.arg, caller_where() ..
          ("offload: link_gbps needs %s > 0 (got %s)"):format(k, tostring(P[k])))
      end
    end
    ratio = sc.offload_ratio{hidden = P.hidden, seq = P.seq, tflops = P.tflops, gbps = P.link_gbps}
  end
  local chunks = 1
  if P.offload == "selective" then chunks = P.offload_chunks end
  local mem = sc.mem_of(P)
  return {policy = P.offload, chunks = chunks, ratio = ratio, shared = P.link_shared,
          mem = mem, margin = P.offload_margin}
end

-- The `recompute` field of sc.program from the parameters of sc.OFFLOAD's
-- recomputation (and mem, the target of budget), or nil for none.
function sc.recompute_of(P)
  if P.recompute == nil or P.recompute == "none" then return nil end
  local chunks = 1
  if P.recompute == "selective" then chunks = P.recompute_chunks end
  local time = P.recompute_time
  return {policy = P.recompute, chunks = chunks, frac = P.recompute_frac,
          time = (time and time > 0) and time or nil,
          mem = sc.mem_of(P)}
end

-- The memory limit parameter `mem` (0: none): its value, or `none` when it
-- is 0 or absent; a negative or NaN value is refused at the recipe's line.
function sc.mem_of(P, none)
  local mem = P.mem
  if mem == nil or mem == 0 then return none end
  if type(mem) == "string" then return mem end  -- bytes or a list: sc.program converts it
  if not (mem > 0) then
    sc._raise(sc._exits.arg, caller_where() .. ("parameter 'mem': must be >= 0 (0: %s), got %s"):format(
      none and "the default" or "no limit", tostring(mem)))
  end
  return mem
end

-- The fields of sc.program that come straight from parameters: p, m, the
-- costs, the memory limit and the offload policy (when P has them), merged
-- into t. With offload = "budget", mem is the peak offload reaches, not a
-- limit on the schedule. (Those copied as they are: lang/lua/fields.h.)
function sc.fields(P, t)
  t = t or {}
  for _, k in ipairs(sc._fields("from_params")) do
    if t[k] == nil then t[k] = P[k] end
  end
  if t.costs == nil then t.costs = sc.costs_of(P) end
  if t.vocab_par == nil and P.vocab_par ~= nil then t.vocab_par = sc.vocab_of(P) end
  if t.model == nil then t.model = sc.model_of(P) end
  if t.offload == nil then t.offload = sc.offload_of(P) end
  if t.recompute == nil then t.recompute = sc.recompute_of(P) end
  local mem = sc.mem_of(P)
  if t.mem == nil and P.offload ~= "budget" and P.recompute ~= "budget" then t.mem = mem end
  return t
end

-- Exit codes (docs/errors.md): sc._exits, of SC_EXITS in C.
local USAGE, BADARG, RECIPE = sc._exits.usage, sc._exits.arg, sc._exits.recipe

-- The state of the recipe being evaluated.
-- _read: the names the recipe read from what sc.params returned;
-- _external: names the command itself uses (run's model sizes), so that a
-- recipe need not read them.
sc._overrides, sc._declared, sc._doc, sc._listing, sc._read = {}, {}, nil, false, {}
sc._external = {}
local LISTING = setmetatable({}, {__tostring = function() return "listing parameters" end,
  __metatable = false})

-- A memory value given as text (a parameter declared with memory = true):
-- a size in bytes ("40GiB") or a list per device ("[6,6,8,8]"), kept as
-- text for sc.program, which converts it (docs/language.md#fields).
local function memory_text(v)
  if type(v) ~= "string" then return false end
  if v:match("^%[.*%]$") then return true end
  local num, unit = v:match("^%s*([%d%.eE+-]+)%s*(%a+)%s*$")
  return num ~= nil and tonumber(num) ~= nil and
    ({b = 1, kb = 1, mb = 1, gb = 1, tb = 1, kib = 1, mib = 1, gib = 1, tib = 1})[unit:lower()] ~= nil
end

local function convert(name, default, value, memory)
  if memory and type(value) == "string" and tonumber(value) == nil then
    if memory_text(value) then return value end
    sc._raise(USAGE, ("parameter '%s': expected units, bytes (40GiB) or a list per device "
      .. "([6,6,8,8]), got '%s'"):format(name, value))
  end
  local want = type(default)
  if want == "number" and math.type(default) == "integer" and type(value) == "number" then
    local i = math.tointeger(value)
    if i == nil then
      sc._raise(USAGE, ("parameter '%s': expected an integer, got %s"):format(name, value))
    end
    return i
  end
  if type(value) == want then return value end
  if type(value) ~= "string" then
    sc._raise(USAGE, ("parameter '%s': expected a %s, got a %s"):format(name, want, type(value)))
  end
  if want == "number" then
    local n = tonumber(value)
    if n == nil then
      -- A list or range of values is a sweep, which only sim and compare run.
      local sweep = value:find("^[%d.eE+-]+[,:][%d.eE+-,:]*$") and
        " (a sweep of values, like 4,8 or 2:8:2, runs in sim and compare only)" or ""
      sc._raise(USAGE, ("parameter '%s': expected a number, got '%s'%s"):format(name, value, sweep))
    end
    if math.type(default) == "integer" then
      local i = math.tointeger(n)
      if i == nil then
        sc._raise(USAGE, ("parameter '%s': expected an integer, got '%s'"):format(name, value))
      end
      return i
    end
    return n
  elseif want == "boolean" then
    if value == "true" or value == "1" then return true end
    if value == "false" or value == "0" then return false end
    sc._raise(USAGE, ("parameter '%s': expected true or false, got '%s'"):format(name, value))
  end
  return value
end

-- sc.params{ doc = "...", {name, default, description}, ..., sc.COSTS }
-- Declares the recipe's parameters and returns their values (defaults,
-- or what -D / sc.load gave).
function sc.params(spec)
  if type(spec) ~= "table" then
    error("params: expected a table of {name, default, description}", 2)
  end
  if spec.doc ~= nil then sc._doc = tostring(spec.doc) end
  local out = {}
  local function add(e)
    if type(e) ~= "table" then
      error("params: each entry must be {name, default, description}", 3)
    end
    if type(e[1]) == "table" then
      for _, x in ipairs(e) do add(x) end
      return
    end
    local name, default, desc = e[1], e[2], e[3]
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      error("params: a parameter name must be an identifier (got " .. tostring(name) .. ")", 3)
    end
    local t = type(default)
    if t ~= "number" and t ~= "string" and t ~= "boolean" then
      error(("params: default of '%s' must be a number, string or boolean"):format(name), 3)
    end
    for _, d in ipairs(sc._declared) do
      if d.name == name then error(("params: '%s' is declared twice"):format(name), 3) end
    end
    if e.when ~= nil and type(e.when) ~= "string" then
      error(("params: 'when' of '%s' must be a string"):format(name), 3)
    end
    sc._declared[#sc._declared + 1] = {name = name, default = default, desc = desc or "",
                                       when = e.when}
    local v = default
    if e.table and type(sc._overrides[name]) == "table" then
      v = sc._overrides[name] -- a description of sc.model's from a script
    elseif sc._overrides[name] ~= nil then
      v = convert(name, default, sc._overrides[name], e.memory)
      -- p, m and v given out of range are refused as sc.program refuses
      -- them, before the recipe's own arithmetic meets them (m % p).
      local bad = math.type(v) == "integer" and sc._size_range(name, v)
      if bad then sc._raise(BADARG, caller_where() .. bad) end
    end
    out[name] = v
  end
  for _, e in ipairs(spec) do add(e) end
  if sc._listing then error(LISTING, 0) end
  -- The values, through a view that records which names the recipe reads:
  -- a parameter that is set but never read would change nothing.
  local read = sc._read
  -- A cost file sets the scalar costs too: the largest stage's time times
  -- the stages per device (a slot every device's share fits in), so that a
  -- recipe's own arithmetic with P.tf (block offsets) is in seconds and its
  -- blocks stay valid; the per-stage lists reach sc.program through
  -- sc.fields (or costs = sc.costs_of(P)). So `costs` is read here.
  sc._pcosts = nil
  if out.costs ~= nil then
    read.costs = true
    local C = sc.costs_of(out)
    sc._pcosts = C -- every program of this recipe takes it (costs.c)
    if C then
      local stages = tonumber(C.stages) or 1
      local per_device = stages / (tonumber(C.devices) or tonumber(out.p) or stages)
      for _, k in ipairs{"tf", "tb", "tw"} do
        if out[k] ~= nil and type(C[k]) == "table" then
          local most = 0
          for _, x in ipairs(C[k]) do most = math.max(most, tonumber(x) or 0) end
          out[k] = most * per_device
        end
      end
      if out.tcomm ~= nil then out.tcomm = tonumber(C.tcomm) or 0 end
    end
  end
  -- A name the recipe did not declare reads as nil (P.x or default), except
  -- one near a declared name: that is a typo (P.tcom for P.tcomm), which
  -- would otherwise be a silent nil. The prelude's helpers (sc.fields,
  -- sc.offload_of) probe names freely.
  local names = {}
  for _, d in ipairs(sc._declared) do names[#names + 1] = d.name end
  local function undeclared(k)
    if type(k) ~= "string" then return nil end
    local info = debug.getinfo(3, "Sl")
    if not info or info.what == "C" or info.short_src:find("^stdlib/_%a+%.lua$") then return nil end
    local near = sc._near(k, names)
    if not near then return nil end
    local where = info.currentline > 0 and (info.short_src .. ":" .. info.currentline .. ": ") or ""
    sc._raise(BADARG, ("%sthe recipe reads parameter '%s', which it does not declare: %s"):format(
      where, k, near))
  end
  return setmetatable({}, {
    __index = function(_, k)
      read[k] = true
      local v = out[k]
      if v == nil then undeclared(k) end
      return v
    end,
    __newindex = function(_, k, v) read[k] = true; out[k] = v end,
    __pairs = function()
      for k in pairs(out) do read[k] = true end
      return next, out, nil
    end,
    __len = function() return #out end,
  })
end

-- sc.need(cond, fmt, ...): a recipe's precondition on its parameters.
function sc.need(cond, fmt, ...)
  if not cond then
    local where = ""
    local info = debug.getinfo(2, "Sl")
    if info and info.currentline and info.currentline > 0 then
      where = info.short_src .. ":" .. info.currentline .. ": "
    end
    sc._raise(BADARG, where .. fmt:format(...))
  end
end


-- Evaluates a recipe (stdlib name or path) with overrides (name -> value).
-- Returns program (nil when listing), declared parameters, doc.
-- Parameters every recipe takes (docs/steps.md): the training steps, how
-- their optimizer steps synchronize and the expert-parallel degree `ep`
-- (docs/semantics.md#expert-parallelism). A recipe that declares one of them
-- gets it as its own parameter; otherwise a value given with -D (or to
-- sc.load) is set on the program the recipe returns.
sc.STEPS = {
  {"steps", 1, "training steps back to back"},
  {"optim_sync", "none", "optimizer synchronization: none, sync, post-validation"},
}
local UNIVERSAL = {steps = sc.STEPS[1][2], optim_sync = sc.STEPS[2][2], ep = 1}

-- Declared parameters the recipe never read, warned about once per recipe.
local warned = {}

-- After the recipe ran: every override must name a declared parameter
-- (else a usage error, with the near names), and every parameter given must
-- have been read (else it would change nothing: a usage error too). A
-- declared parameter never read, without a `when`, is the recipe's own
-- mistake: a warning on stderr.
local function check_names(recipe, overrides, declared, read)
  local known, names = {}, {}
  for _, d in ipairs(declared) do known[d.name] = d; names[#names + 1] = d.name end
  local given = {}
  for k in pairs(overrides) do given[#given + 1] = tostring(k) end
  table.sort(given)
  for _, k in ipairs(given) do
    if not known[k] then
      local cands = {table.unpack(names)}  -- and the parameters every recipe takes
      for u in pairs(UNIVERSAL) do cands[#cands + 1] = u end
      local near = sc._near(k, cands)
      sc._raise(USAGE, ("unknown parameter '%s' for recipe '%s'%s (%s)"):format(k, recipe,
        near and (": " .. near) or "",
        #names > 0 and "its parameters: " .. table.concat(names, ", ") or "it declares none"))
    end
  end
  for _, k in ipairs(given) do
    local d = known[k]
    if not read[k] and not sc._external[k] then
      sc._raise(USAGE, ("parameter '%s' is given (%s) but recipe '%s' %s, so it would change "
        .. "nothing"):format(k, tostring(overrides[k]), recipe,
        d.when and ("reads it only when " .. d.when) or "does not read it"))
    end
  end
  for _, d in ipairs(declared) do
    if not read[d.name] and not d.when and not sc._external[d.name]
       and overrides[d.name] == nil and not warned[recipe .. "\0" .. d.name] then
      warned[recipe .. "\0" .. d.name] = true
      sc._say("warning", ("recipe '%s' declares parameter '%s' but does not read it: a value "
        .. "given for it would change nothing"):format(recipe, d.name))
    end
  end
end

function sc._evaluate(recipe, overrides, listing)
  local chunk = sc._chunk(recipe)
  -- The recipe's own sc.costs (its sandbox's: its folder's files and those
  -- named on the command line) reads the cost file of its parameters.
  local _, env = debug.getupvalue(chunk, 1)
  local reader = type(env) == "table" and type(rawget(env, "sc")) == "table" and
    rawget(rawget(env, "sc"), "costs") or sc.costs
  local saved = {sc._overrides, sc._declared, sc._doc, sc._listing, sc._read, sc._costs_reader,
                 sc._pcosts, sc._plengths}
  -- -D lengths=FILE (docs/lengths.md), when the recipe does not declare
  -- it: read once, set on the recipe's programs of its m (sc.program), and
  -- on the program it returns; a recipe loaded from it inherits them.
  local lengths, lname = overrides and overrides.lengths, "-D lengths"
  if lengths ~= nil and not listing then
    local rest = {}
    for k, v in pairs(overrides) do if k ~= "lengths" then rest[k] = v end end
    overrides = rest
    if type(lengths) == "string" then
      lname = "lengths " .. lengths
      local read, got = pcall(sc._lengths_read, lengths)
      if not read then  -- the user's -D, not a line of the prelude
        sc._raise(sc._errcode(got), (tostring(got):gsub("^stdlib/_%a+%.lua:%d+: ", "")))
      end
      lengths = got
    end
    sc._plengths = lengths
  elseif listing and overrides and overrides.lengths ~= nil then
    local rest = {}
    for k, v in pairs(overrides) do if k ~= "lengths" then rest[k] = v end end
    overrides = rest
  end
  sc._overrides, sc._declared, sc._doc, sc._listing, sc._read =
    overrides or {}, {}, nil, listing, {}
  sc._costs_reader, sc._pcosts = reader, nil
  sc._enter(recipe)
  local ok, res = pcall(chunk)
  local listed = rawequal(res, LISTING)
  if not ok and type(res) ~= "string" and type(res) ~= "number" and not listed then
    -- error(value) with a value that is not a message: the recipe's name,
    -- and the value's __tostring text when it has one that works (one that
    -- fails or loops gives none). Its __tostring is the recipe's code: it
    -- runs here, inside the recipe's window (its rule on files, its limits),
    -- never after it (docs/sandbox.md#callbacks).
    local mt, text = debug.getmetatable(res), nil
    if type(mt) == "table" and rawget(mt, "__tostring") ~= nil then
      local told, t = pcall(tostring, res)
      if told and type(t) == "string" then text = t end
    end
    res = text and ("%s: the recipe raised an error object: %s"):format(recipe, text)
      or ("%s: the recipe raised an error that is not a message (a %s)"):format(recipe, type(res))
  end
  sc._leave()
  local declared, doc, read = sc._declared, sc._doc, sc._read
  sc._overrides, sc._declared, sc._doc, sc._listing, sc._read =
    saved[1], saved[2], saved[3], saved[4], saved[5]
  sc._costs_reader, sc._pcosts, sc._plengths = saved[6], saved[7], saved[8]
  if listing and (listed or ok) then return nil, declared, doc end
  if not ok then error(res, 0) end
  -- steps and optim_sync, when the recipe does not declare them, are set on
  -- its program (docs/steps.md#steps): not the recipe's parameters to check.
  local given, universal = overrides or {}, {}
  for k, default in pairs(UNIVERSAL) do
    local mine = false
    for _, d in ipairs(declared) do mine = mine or d.name == k end
    if not mine and given[k] ~= nil then
      universal[k] = convert(k, default, given[k])
      if given == overrides then
        given = {}
        for kk, vv in pairs(overrides) do given[kk] = vv end
      end
      given[k] = nil
    end
  end
  check_names(recipe, given, declared, read)
  if not sc.isprogram(res) then
    sc._raise(RECIPE, ("recipe '%s' did not return a program (it returned %s)"):format(
      recipe, type(res)))
  end
  if sc._closed(res) then
    sc._raise(RECIPE, ("recipe '%s' returned a closed program (a <close> variable closes "
      .. "it when the recipe returns: drop <close>)"):format(recipe))
  end
  if lengths ~= nil then
    local set, why = pcall(sc._lengths, res, lengths, lname)
    if not set then
      sc._raise(sc._errcode(why), (tostring(why):gsub("^stdlib/_%a+%.lua:%d+: ", "")))
    end
  end
  if next(universal) ~= nil then
    local set, why = pcall(sc._steps, res, universal.steps, universal.optim_sync, universal.ep)
    if not set then  -- a value out of range: the user's -D, not a line of the prelude
      sc._raise(sc._errcode(why), (tostring(why):gsub("^stdlib/_%a+%.lua:%d+: ", "")))
    end
  end
  return res, declared, doc
end

-- sc.load(recipe, {name = value, ...}) -> program: a recipe from a script.
function sc.load(recipe, overrides)
  return (sc._evaluate(recipe, overrides, false))
end

-- sc.fastest(prog, names, P, spec, skip, extra) -> program: prog, or the
-- fastest of the stdlib recipes `names` when one is faster (by makespan)
-- under the same parameters: those of P that differ from their defaults in
-- spec (the recipe's sc.params table), less the names in skip, plus extra
-- (e.g. the memory cap a default of 0 stands for). zb-auto and zbv-auto
-- end with it, so that they never lose to a stdlib recipe of their
-- placement that meets the same cap with the same costs (issue 29;
-- docs/blocks.md#automatic-schedules). A recipe that fails (refused by the
-- cap, or m too small for it) is passed over. When prog already ends at
-- the proven lower bound of its passes, devices, costs and caps
-- (docs/bound.md: it holds for every recipe of the same shape), no recipe
-- can be faster and none is built; the bound's memory term is not used
-- (a recipe's cap is its own). Nor is a recipe simulated whose dataflow
-- timing (sc._sim_floor, a floor under its simulated makespan) already
-- reaches prog's.
function sc.fastest(prog, names, P, spec, skip, extra)
  local over = {}
  local function walk(t)
    if type(t[1]) == "string" then
      if not (skip and skip[t[1]]) and P[t[1]] ~= t[2] then over[t[1]] = P[t[1]] end
    else
      for _, e in ipairs(t) do if type(e) == "table" then walk(e) end end
    end
  end
  walk(spec)
  for k, v in pairs(extra or {}) do over[k] = v end
  local fig0 = prog:sim()
  local best, mk = prog, fig0.makespan
  -- A recipe wins by 1e-9 of mk; at half of that above the bound, none can.
  if fig0.lower_bound and fig0.bound_binding ~= "memory cap"
      and mk - fig0.lower_bound <= 0.5e-9 * math.max(1, mk) then
    return prog
  end
  local refused = sc._cap_refused
  for _, name in ipairs(names) do
    local ok, alt = pcall(sc.load, name, over)
    local fig
    -- Its dataflow timing is a floor under its makespan: at half the
    -- margin below mk or above, it cannot win and is not simulated.
    local floor = ok and sc._sim_floor(alt)
    if floor and floor >= mk - 0.5e-9 * math.max(1, mk) then ok = false end
    if ok then ok, fig = pcall(alt.sim, alt) end -- the cap refuses at compile time
    if ok and fig.makespan < mk - 1e-9 * math.max(1, mk) then best, mk = alt, fig.makespan end
  end
  sc._cap_refused = refused
  return best
end

-- sc.autoschedule{ p, m, [v, stages, placement], tf, tb, tw, tcomm, w_keep,
--   [units], mem, [seed, time_limit, objective, max_evals] } -> program, figures
-- The automatic scheduler (docs/blocks.md#automatic-schedules): the fields of sc.program, with
-- `mem` the memory limit in units per device and `units` the activation
-- units per microbatch, as in sc.program.
-- Its fields, and those that go to the `auto` table: from the one table of
-- fields (lang/lua/fields.h).
local AUTO_FIELDS, AUTO = sc._fields("autoschedule"), {}
for _, k in ipairs(sc._fields("auto")) do AUTO[k] = true end
function sc.autoschedule(t)
  if type(t) ~= "table" then error("autoschedule: expected a table of fields", 2) end
  local where = caller_where()
  local bad = sc._unknown_fields(t, "autoschedule", AUTO_FIELDS)
  if bad then sc._raise(BADARG, where .. bad) end
  local spec, auto = {}, {where = where}
  for k, v in pairs(t) do
    if AUTO[k] then auto[k] = v elseif k ~= "units" then spec[k] = v end
  end
  spec.units, spec.auto = t.units, auto
  local prog = call_at(where, sc.program, spec)
  return prog, sc._autoinfo(prog)
end

-- sc.need_version "X.Y[.Z]": the recipe needs this stagecraft or a later one of
-- the same major version (docs/language.md#the-program-type-and-the-module).
local function version_parts(v)
  local a, b, c = tostring(v):match("^(%d+)%.(%d+)%.?(%d*)$")
  if not a then return nil end
  return {tonumber(a), tonumber(b), tonumber(c) or 0}
end
-- Through sc._at, a C function: the position is the recipe's line even for
-- `return sc.need_version "0.3"`, a tail call that leaves no Lua frame of
-- the recipe for caller_where to find.
sc.need_version = sc._at(function(where, v)
  local want, have = version_parts(v), version_parts(sc.version)
  if not want then
    sc._raise(BADARG, where .. ("need_version: expected a version like \"0.2\" (got %s)")
      :format(tostring(v)))
  end
  local older = want[1] ~= have[1]
  for i = 1, 3 do
    if not older and have[i] ~= want[i] then older = have[i] < want[i]; break end
  end
  if older then
    sc._raise(BADARG, where .. ("this recipe needs stagecraft %s%s (this is %s)")
      :format(v, want[1] == have[1] and " or later" or (" (major version %d)"):format(want[1]),
        sc.version))
  end
  return true
end)

-- sc.note(fmt, ...): a line on stderr ("stagecraft: note: ..."), for what a
-- recipe wants to tell the person who runs it without touching the
-- command's output.
function sc.note(fmt, ...)
  sc._say("note", tostring(fmt):format(...))
end

-- A misspelled name of the module (sc.porgram) is a typo: an error with the
-- near names at the caller's line, rather than "attempt to call a nil
-- value". Any other missing name reads as nil, so that a recipe may still
-- test for something newer (if sc.x then); sc.version is the better test.
-- The sandbox's copy of the module gets this metatable too.
setmetatable(sc, {
  __metatable = false,
  __index = function(t, k)
    if type(k) ~= "string" or k:sub(1, 1) == "_" then return nil end
    local names = {}
    for name in pairs(t) do
      if type(name) == "string" and name:sub(1, 1) ~= "_" then names[#names + 1] = name end
    end
    table.sort(names)
    local near = sc._near(k, names)
    if near then error(("module 'sc' has no field '%s': %s"):format(k, near), 2) end
    return nil
  end,
})
