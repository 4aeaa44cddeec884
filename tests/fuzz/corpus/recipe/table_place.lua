local P = sc.params { {"p", 2, "devices"}, {"m", 2, "mb"}, sc.COSTS }
return sc.program { p = P.p, m = P.m, stages = 3, placement = {0, 1, 0}, rule = "gpipe" }
