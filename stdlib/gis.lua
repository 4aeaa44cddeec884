-- gis.lua — PipeOffload's grouped interleaved 1F1B: v chunks per device on
-- the loop placement, B and W split, microbatches taken in groups of g
-- (p/2 <= g <= p). Device d's forward virtual microbatch k is microbatch
-- (k // (g v)) g + k % g on chunk (k // g) % v, its backward the same
-- microbatch on chunk v-1-((k // g) % v). The device runs (v-1) g + p-1-d
-- warm-up forwards, then rounds of one F, one B and one W, then the
-- remaining B and W. Chunk 0 holds p microbatches, the others g each: the
-- peak is g + (p-g)/v units on device 0 (m >= 2g), and the earliest chunks
-- live longest, which is what selective offload moves first.
-- PipeOffload's figures assume pairs of devices sharing a host link (its
-- planner pairs ranks 2k and 2k+1): gis shares it by default.
local OFFLOAD = {}
for i, x in ipairs(sc.OFFLOAD) do
  local y = {}
  for k, v in pairs(x) do y[k] = v end
  if y[1] == "link_shared" then y[2], y[3] = true, y[3] .. " (PipeOffload's pairs)" end
  OFFLOAD[i] = y
end
local P = sc.params {
  doc = "PipeOffload's grouped interleaved 1F1B: peak g + (p-g)/v (group g, p/2 <= g <= p)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches (a multiple of g)"},
  {"v", 2, "chunks (virtual stages) per device"},
  {"g", 0, "group size, p/2 <= g <= p (0: the least, ceil(p/2))"},
  sc.COSTS,
  sc.MEM,
  OFFLOAD, sc.MODEL,
}
local p, m, v = P.p, P.m, P.v
local g = P.g > 0 and P.g or (p + 1) // 2
sc.need(p >= 1 and v >= 1, "gis needs p >= 1 and v >= 1 (p = %d, v = %d)", p, v)
sc.need(2 * g >= p and g <= p, "gis needs p/2 <= g <= p (g = %d, p = %d)", g, p)
sc.need(m % g == 0, "gis needs m to be a multiple of the group size g (m = %d, g = %d)", m, g)
local function chunk_of(k) return (k // (g * v)) * g + k % g, (k // g) % v end
return sc.program(sc.fields(P, {
  v = v, placement = "loop", fit = true,
  order = function(d)
    local n, t = m * v, {}
    local function F(k) local mb, c = chunk_of(k); t[#t + 1] = "F" .. mb .. "." .. c end
    local function BW(k) -- B then W of backward virtual microbatch k
      local mb, c = chunk_of(k)
      t[#t + 1] = "B" .. mb .. "." .. (v - 1 - c)
      t[#t + 1] = "W" .. mb .. "." .. (v - 1 - c)
    end
    local warm = math.min((v - 1) * g + p - 1 - d, n)
    for k = 0, warm - 1 do F(k) end
    for j = 0, n - warm - 1 do F(warm + j); BW(j) end
    for j = n - warm, n - 1 do BW(j) end
    return t
  end,
}))
