-- interleaved.lua — Megatron's interleaved 1F1B: v chunks per device on the
-- loop placement (stage = chunk*p + device); bubble (p-1)/(v*m+p-1).
local P = sc.params {
  doc = "Megatron's interleaved 1F1B with v chunks per device (m a multiple of p)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches (a multiple of p, at least p)"},
  {"v", 2, "chunks (virtual stages) per device"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
sc.need(P.m >= P.p and P.m % P.p == 0,
  "interleaved needs m to be a multiple of p and m >= p (m = %d, p = %d)", P.m, P.p)
return sc.program(sc.fields(P, {v = P.v, placement = "loop", rule = "interleaved"}))
