return sc.program { p = 2, m = 3, tf = 1, tb = 1, tw = 1, block = { interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3} } }
