-- dualpipe.lua — DualPipe (DeepSeek-V3): bidirectional, two copies of the
-- model (copies = 2, docs/guide.md#copies). Device r holds layer group r of
-- the forward copy (stage r, the first half of the microbatches, from d0 to
-- d(p-1)) and layer group p-1-r of the reverse copy (stage 2p-1-r, the
-- second half, from d(p-1) back to d0): the V placement. Forwards of one
-- direction overlap full backwards of the other (F+BW pairs,
-- docs/guide.md#overlapped-pairs). Each half of the devices runs
-- DualPipe.step's actions for its half rank (sc.dualpipe_actions, the
-- devices of the second half with the directions swapped); the copies'
-- gradients are summed at the end of the step. Needs p even, m even and
-- m >= 2p.
local P = sc.params {
  doc = "DualPipe: bidirectional, 2 copies of the model, F+BW pairs (p even, m even, m >= 2p)",
  {"p", 4, "pipeline devices (even)"},
  {"m", 20, "microbatches, half in each direction (even, at least 2p)"},
  sc.COSTS,
  {"tfb", 0.0, "time of an overlapped F+B pair on a device's share (0: tf + tb, no gain)"},
  {"ta", 0.0, "all-to-all part of F, B and BW, exposed alone, hidden in a pair"},
  {"pairs", true, "overlap F with BW (false: each pair's two passes in turn)"},
  sc.MEM,
  sc.OFFLOAD, sc.MODEL, sc.STEPS[1], sc.STEPS[2],
}
sc.need(P.p % 2 == 0 and P.m % 2 == 0, "dualpipe needs p and m even (p = %d, m = %d)", P.p, P.m)
sc.need(P.m >= 2 * P.p, "dualpipe needs m >= 2p (m = %d, p = %d)", P.m, P.p)
sc.need(P.vocab_par ~= "vocab-1" and P.vocab_par ~= "vocab-2",
        "dualpipe's two copies of the model do not go with a split vocabulary (vocab_par = %s)",
        P.vocab_par)
sc.need(P.optim_sync ~= "post-validation",
        "dualpipe's two copies of the model do not go with optim_sync = post-validation yet")
local half = P.m // 2
-- Offload and a split vocabulary place their instructions around single
-- passes: with either, each pair runs as its two passes in turn.
local pairs = P.pairs
if pairs and (P.offload ~= "none" or P.vocab_par == "vocab-1" or P.vocab_par == "vocab-2") then
  sc.note("dualpipe: with offload or a split vocabulary each F+BW pair runs as its two passes in turn")
  pairs = false
end
return sc.program(sc.fields(P, {
  placement = "v", copies = 2,
  order = function(r)
    local second = r >= P.p // 2 -- its phase 0 is the reverse direction
    local hr = second and P.p - 1 - r or r
    -- phase -> direction (= chunk on the V placement: chunk 0 is stage r of
    -- the forward copy, chunk 1 stage 2p-1-r of the reverse one)
    local function dir(ph) return second and 1 - ph or ph end
    return sc.dualpipe_order(sc.dualpipe_actions(P.p // 2, hr, half, pairs), dir,
                             function(ph, i) return dir(ph) * half + i end)
  end,
  tfb = P.tfb > 0 and P.tfb or nil, ta = P.ta,
  steps = P.steps, optim_sync = P.optim_sync,
}))
