-- 1f1b-v.lua — 1F1B with the V placement: two chunks per device (chunk 0
-- on stage d, chunk 1 on stage 2p-1-d), fused backward. ZB-V's order with
-- each B fused with its W: 2(p-d)-1 warm-up F of chunk 0, then the
-- V-shaped one-forward-one-backward rhythm. Peak p on every device; the
-- bubble of 1F1B on half-size stages. (Fused passes of two lengths do not
-- fit the six-slot V block, so this is a rule.)
local P = sc.params {
  doc = "1F1B on the V placement (fused backward): peak p on every device",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches (at least 2p-1)"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
sc.need(P.m >= 2 * P.p - 1, "1f1b-v needs m >= 2p-1 (m = %d, p = %d)", P.m, P.p)
return sc.program(sc.fields(P, {placement = "v", rule = "1f1b-v"}))
