-- _pretty.lua — the Lua half of the module, third part: sc.pretty, how
-- the REPL and recipes print a value. Loaded by luaopen_stagecraft after
-- _prelude.lua, into the same module table.
local sc = ...

-- sc.pretty(value [, width]): a value as people read it (the REPL prints
-- every result this way): tables nested, the list part first, then the
-- other keys sorted (numbers, then strings), at most 4 levels deep and 40
-- items a table, the whole at most 16000 characters; on one line when it
-- fits in `width` (100) columns and holds no table, else one item a line.
local PRETTY_DEPTH, PRETTY_ITEMS, PRETTY_CHARS = 4, 40, 16000
local LUA_KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do LUA_KEYWORDS[w] = true end

local function pretty_scalar(v)
  local t = type(v)
  if t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c)
      if c == "\n" then return "\\n" elseif c == '"' or c == "\\" then return "\\" .. c end
      return "\\" .. c:byte()
    end) .. '"'
  elseif t == "function" then return "<function>"
  elseif t == "thread" then return "<coroutine>"
  end
  return tostring(v)
end

local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    local rank = {number = 0, string = 1, boolean = 2}
    return (rank[ta] or 3) < (rank[tb] or 3)
  end
  if ta == "number" or ta == "string" then return a < b end
  return false
end

function sc.pretty(v, width)
  width = math.max(20, math.tointeger(tonumber(width)) or 100)
  local out, n, cut, path = {}, 0, false, {}
  local function put(s)
    if cut then return end
    if n + #s > PRETTY_CHARS then cut = true; out[#out + 1] = " ... (cut)"; return end
    out[#out + 1] = s
    n = n + #s
  end
  local function plain(x)
    if type(x) ~= "table" then return true end
    local mt = getmetatable(x)
    return type(mt) == "table" and mt.__tostring ~= nil
  end
  local render
  -- The items of table t: {key text or nil, value}, list part first.
  local function items(t)
    local list, len = {}, 0
    while len < 1000000 and rawget(t, len + 1) ~= nil do len = len + 1 end
    local keys = {}
    for k in next, t do
      if not (math.type(k) == "integer" and k >= 1 and k <= len) then keys[#keys + 1] = k end
    end
    table.sort(keys, key_less)
    for i = 1, len do list[#list + 1] = {nil, rawget(t, i)} end
    for _, k in ipairs(keys) do
      local kt = (type(k) == "string" and k:match("^[%a_][%w_]*$") and not LUA_KEYWORDS[k])
        and k or ("[" .. pretty_scalar(k) .. "]")
      list[#list + 1] = {kt, rawget(t, k)}
    end
    return list
  end
  local function oneline(t, depth)
    local parts, size = {}, 2
    for i, it in ipairs(items(t)) do
      if i > PRETTY_ITEMS or not plain(it[2]) then return nil end
      local s = (it[1] and (it[1] .. " = ") or "") .. pretty_scalar(it[2])
      parts[#parts + 1] = s
      size = size + #s + 2
      if size > width then return nil end
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  render = function(x, depth, indent)
    if plain(x) then put(pretty_scalar(x)); return end
    if depth >= PRETTY_DEPTH then put("{...}"); return end
    if path[x] then put("<cycle>"); return end
    local line = oneline(x, depth)
    if line and #line + indent <= width then put(line); return end
    path[x] = true
    local list = items(x)
    local pad = string.rep(" ", indent + 2)
    put("{")
    local run = nil -- list items that are scalars share lines
    for i, it in ipairs(list) do
      if i > PRETTY_ITEMS then
        if run then put("\n" .. pad .. run); run = nil end
        put("\n" .. pad .. ("... (%d more)"):format(#list - PRETTY_ITEMS))
        break
      end
      if not it[1] and plain(it[2]) then
        local s = pretty_scalar(it[2]) .. ","
        if run and #pad + #run + 1 + #s > width then put("\n" .. pad .. run); run = nil end
        run = run and (run .. " " .. s) or s
      else
        if run then put("\n" .. pad .. run); run = nil end
        put("\n" .. pad .. (it[1] and (it[1] .. " = ") or ""))
        render(it[2], depth + 1, indent + 2)
        put(",")
      end
    end
    if run then put("\n" .. pad .. run) end
    put("\n" .. string.rep(" ", indent) .. "}")
    path[x] = nil
  end
  render(v, 0, 0)
  return table.concat(out)
end
