return sc.program { p = 3, m = 4, tf = {1, 1, 2}, tb = 1, tw = 1, block = { interval = 4, F = {0, 1, 2}, BW = {8, 6, 4} } }
