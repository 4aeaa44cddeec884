local p = sc.program { p = 2, m = 2, v = 2, placement = "v", w_keep = 0.5,
  order = { "F0 F1 F0.1 F1.1 B0.1 B1.1 B0 W0 B1 W1 W0.1 W1.1", "F0 F0.1 F1 F1.1 B0 W0 B0.1 W0.1 B1 W1 B1.1 W1.1" } }
local ok, err = p:valid()
return p
