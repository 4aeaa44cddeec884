-- dualpipev.lua — DualPipeV (DeepSeek's DualPipe "cut in half", Sea AI
-- Lab): the V placement, device r holding stage r (phase 0) and stage
-- 2p-1-r (phase 1), with the forward of one phase overlapped with the full
-- backward of the other (F+BW pairs, docs/guide.md#overlapped-pairs) in
-- the steady state and B/W split at both ends. The order is
-- deepseek-ai/DualPipe's DualPipeV.step action for action
-- (sc.dualpipe_actions); needs m >= 2p. With best = true, also DualPipeV's
-- order with every pair split and stagecraft's pairs joined where the
-- dataflow timing gains, within DualPipeV's own peak (pairs = true of
-- sc.program, docs/blocks.md#pairing): the faster of the two by the
-- simulator.
local P = sc.params {
  doc = "DualPipeV: V placement, F overlapped with BW (F+BW pairs), m >= 2p",
  {"p", 4, "pipeline devices (2p stages)"},
  {"m", 10, "microbatches (at least 2p)"},
  sc.COSTS,
  {"tfb", 0.0, "time of an overlapped F+B pair on a device's share (0: tf + tb, no gain)"},
  {"ta", 0.0, "all-to-all part of F, B and BW, exposed alone, hidden in a pair"},
  {"pairs", true, "overlap F with BW (false: each pair's two passes in turn)"},
  {"best", false, "also try the order with pairs chosen by stagecraft; keep the faster"},
  sc.MEM,
  sc.OFFLOAD, sc.MODEL, sc.STEPS[1], sc.STEPS[2],
}
sc.need(P.m >= 2 * P.p, "dualpipev needs m >= 2p (m = %d, p = %d)", P.m, P.p)
-- Offload, a split vocabulary and post-validation's rollback place their
-- instructions around single passes: with any, each pair runs as its two
-- passes in turn.
local pairs = P.pairs
if pairs and (P.offload ~= "none" or P.vocab_par == "vocab-1" or P.vocab_par == "vocab-2" or
              P.optim_sync == "post-validation") then
  sc.note("dualpipev: with offload, a split vocabulary or post-validation each F+BW pair runs as its two passes in turn")
  pairs = false
end
local function program(with_pairs, choose)
  local t = sc.fields(P, {
    placement = "v",
    order = function(r)
      return sc.dualpipe_order(sc.dualpipe_actions(P.p, r, P.m, with_pairs),
                               function(ph) return ph end, function(_, i) return i end)
    end,
    tfb = P.tfb > 0 and P.tfb or nil, ta = P.ta, pairs = choose,
    steps = P.steps, optim_sync = P.optim_sync,
  })
  if choose and t.mem == nil then t.mem = choose end
  return sc.program(t)
end
local prog = program(pairs, nil)
if P.best and pairs then -- stagecraft's pairs, within DualPipeV's peak
  local own = prog:sim()
  local other = program(false, own.peak_memory_max)
  local r = other:sim()
  if r.makespan < own.makespan - 1e-12 then
    sc.note("dualpipev: stagecraft's pairs: makespan %g against DualPipeV's %g", r.makespan,
            own.makespan)
    return other
  end
end
return prog
