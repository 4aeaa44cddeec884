return sc.program { p = 2, m = 1, order = { "F0 BW0 F0", "F0 BW0" } }
