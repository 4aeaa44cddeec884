return sc.program { p = 2, m = 2, tcomm = 0.5, order = { {"F0", "F1", "B0", "W0", "B1", "W1"}, "F0 B0 F1 B1 W0 W1" } }
