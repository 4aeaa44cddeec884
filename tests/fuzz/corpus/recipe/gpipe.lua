-- gpipe.lua — GPipe: all forwards, then all (fused) backwards.
local P = sc.params {
  doc = "GPipe: all F then all BW; peak m on every device",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
}
return sc.program {
  p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, tcomm = P.tcomm, w_keep = P.w_keep,
  rule = "gpipe",
}
