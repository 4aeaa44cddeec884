-- bench_pattern.lua — the pattern functions on a 1 MB text: seconds per
-- workload. bench/bench_pattern.sh runs it under stock lua5.4 (Lua's own
-- matcher) and under stagecraft (lang/sandbox/pattern.c, which counts its
-- steps for the limits) and prints the ratio. Run: lua5.4 bench_pattern.lua
local words = { "alpha", "beta", "gamma", "delta", "F0", "B12", "W3", "key=value;", "  ", "\n" }
local t, seed = {}, 7
for i = 1, 120000 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = words[seed % #words + 1]
end
local text = table.concat(t, " ")
local function time(name, f)
    local t0 = os.clock()
    local r = f()
    print(string.format("%-34s %8.4f s  (%s)", name, os.clock() - t0, tostring(r)))
end
time("find plain x50", function() local n = 0 for _ = 1, 50 do n = n + (text:find("zzz", 1, true) or 0) end return n end)
time("gmatch %a+", function() local n = 0 for _ in text:gmatch("%a+") do n = n + 1 end return n end)
time("gsub (%w+)=(%w+) -> %2=%1", function() local _, n = text:gsub("(%w+)=(%w+)", "%2=%1") return n end)
time("gsub %s+ -> ' '", function() local _, n = text:gsub("%s+", " ") return n end)
time("match ^.-(B%d+) x200", function() local r for _ = 1, 200 do r = text:match("^.-(B%d+)") end return r end)
time("find [FBW]%d+$ (fails at each)", function() return text:find("[FBW]%d+$") end)
