local p = sc.load("zb-h1", {p = 3, m = 4})
local s = p:sim()
local t = p:timeline(40)
local d = p:dump()
local o = p:order(1)
sc.need(s.makespan > 0, "makespan %g", s.makespan)
return sc.program { p = 3, m = 4, order = function(d) return p:order(d) end }
