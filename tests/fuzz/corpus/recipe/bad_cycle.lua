return sc.program { p = 2, m = 2, order = { "F0 BW0 F1 BW1", "F1 BW1 F0 BW0" } }
