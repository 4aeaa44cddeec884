-- _model.lua — the Lua half of the module, third part: the model's
-- parameters (sc.MODEL) and the `vocab_par` and `model` fields of
-- sc.program made from them (docs/model.md). Loaded by luaopen_stagecraft
-- after _prelude.lua, into the same module table.
local sc = ...
local caller_where = sc._caller_where

-- The model and where its vocabulary layers go (Vocabulary Parallelism;
-- docs/vocab.md, docs/model.md): with a model -- a Hugging Face config.json
-- (`model`, --model FILE) or the shorthand layers > 0 (with hidden, vocab) --
-- the costs, memory and bytes come from the model's FLOPs and bytes (seq and
-- tflops are sc.OFFLOAD's); vocab_par places the input embedding and the
-- output layer (auto: baseline with a model, none without). layers, vocab
-- and batch also size the model of run (layers 0: two per stage there).
local WITH_MODEL = "a model (model or layers > 0)"
sc.MODEL = {
  {"vocab_par", "auto", "vocabulary layers: auto (baseline with a model), none, baseline, redis, "
   .. "vocab-1, vocab-2"},
  {"model", "", "a Hugging Face config.json: the model (--model FILE; docs/model.md)",
   table = true},
  {"layers", 0, "transformer layers (> 0: the shorthand model; run: 0 is 2 per stage)"},
  {"vocab", 128, "vocabulary size (with layers > 0, and the model of run)", when = WITH_MODEL},
  {"batch", 2, "sequences per microbatch (with a model, and the model of run)",
   when = WITH_MODEL},
  {"coll_gbps", 100.0, "collectives' bandwidth, GB/s (with a model)", when = WITH_MODEL},
  {"coll_us", 10.0, "collectives' latency, microseconds (with a model)", when = WITH_MODEL},
  {"dtype", "", "parameters' dtype: bf16, fp16, fp32 (default: the config's)", when = WITH_MODEL},
  {"precision", "mixed", "mixed (fp32 grads, master weights, states) or pure (all in dtype)",
   when = WITH_MODEL},
  {"optimizer", "adamw", "adamw, sgd or none", when = WITH_MODEL},
  {"zero", 0, "ZeRO over dp: 1 optimizer states, 2 and grads, 3 and params (FSDP)",
   when = WITH_MODEL},
  {"dp", 1, "data-parallel ranks (with zero > 0)", when = WITH_MODEL},
  {"workspace", "1GiB", "bytes per device besides: CUDA context, cuBLAS, NCCL (with a model)",
   when = WITH_MODEL, memory = true},
  {"split", "even", "decoder layers per stage: even, best (by cost), [4,4,...] or a Megatron "
   .. "layout Et*4|...|t*4L (--layers)", when = WITH_MODEL},
}

local BYTE_UNITS = {b = 1, kb = 1e3, mb = 1e6, gb = 1e9, tb = 1e12, kib = 1024, mib = 1024^2,
                    gib = 1024^3, tib = 1024^4}

-- A size in bytes: a number, or text "1GiB".
local function bytes_of(name, v)
  if type(v) == "number" then return v end
  local num, unit = tostring(v):match("^%s*([%d%.eE+-]+)%s*(%a*)%s*$")
  local x = tonumber(num)
  local scale = unit == "" and 1 or (unit and BYTE_UNITS[unit:lower()])
  if x == nil or scale == nil or x < 0 then
    sc._raise(sc._exits.arg, caller_where() ..
      ("parameter '%s': expected bytes (\"1GiB\", 0), got '%s'"):format(name, tostring(v)))
  end
  return x * scale
end

-- Whether P describes a model: a config.json or the shorthand's layers.
function sc.has_model(P)
  return (P.model ~= nil and P.model ~= "") or (P.layers ~= nil and P.layers > 0)
end

-- The description of P.model: a path (read by sc.model under the rules in
-- force) or a table of sc.model's (a script reads the file, a recipe takes it).
local function config_of(P)
  if type(P.model) == "table" then return sc.model(P.model) end
  return sc.model(P.model)
end

-- The `vocab_par` field of sc.program from P: nil for none; auto is
-- baseline with a model (the embedding on the first stage, the head on the
-- last), none without.
function sc.vocab_of(P)
  local v = P.vocab_par
  if v == "auto" then v = sc.has_model(P) and "baseline" or nil end
  if v == "none" then v = nil end
  return v
end

-- The `model` field of sc.program from the parameters of sc.MODEL (and seq,
-- tflops): nil without a model.
function sc.model_of(P)
  if not sc.has_model(P) then return nil end
  local t = {seq = P.seq, batch = P.batch, tflops = P.tflops, coll_gbps = P.coll_gbps,
             coll_us = P.coll_us, precision = P.precision, optimizer = P.optimizer,
             zero = P.zero, dp = P.dp, workspace = bytes_of("workspace", P.workspace),
             split = P.split}
  if P.dtype ~= nil and P.dtype ~= "" then t.dtype = P.dtype end
  if P.model ~= nil and P.model ~= "" then
    t.config = config_of(P)
    if sc._overrides.seq == nil then
      sc._raise(sc._exits.arg, caller_where() .. ("model %s: give the sequence length trained " ..
        "(-D seq=N; the default %s is the toy model's)"):format(t.config.file or t.config.family,
        tostring(P.seq)))
    end
    -- the shorthand's sizes only when given: they must then agree with the config's
    for _, k in ipairs{"layers", "hidden", "vocab"} do
      local v = P[k] -- read: a -D of it is not "set but never read"
      if sc._overrides[k] ~= nil then t[k] = v end
    end
  else
    t.layers, t.hidden, t.vocab = P.layers, P.hidden, P.vocab
  end
  return t
end
