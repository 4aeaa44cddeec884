-- pattern_diff.lua — string.find, match, gmatch and gsub on generated
-- patterns and subjects, printed one result a line. tests/sandbox.sh runs
-- it under stock lua5.4 and under stagecraft (whose matcher is its own:
-- lang/sandbox/pattern.c) and compares the two outputs line by line.
-- Deterministic: its own generator, no clock. Run: lua5.4 pattern_diff.lua [N]
local n = tonumber(arg and arg[1]) or 3000
local seed = 12345
local function rnd(k) -- 1..k
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % k + 1
end
local function pick(t) return t[rnd(#t)] end

local atoms = { "a", "b", ".", "%a", "%d", "%s", "%w", "%A", "%p", "%x", "%u", "%l", "%c", "%g",
    "[ab]", "[^a]", "[a-c]", "[%d_]", "[]]", "[^]a]", "%%", "%.", "%]", "x", "1", " ",
    "%b()", "%f[%w]", "%f[%W]", "%1", "%2", "%0", "$", "^", "(", ")", "()", "[", "%", "%b", "%f",
    "-", "*", "+", "?" }
local quants = { "", "", "", "*", "+", "-", "?" }
local subjects = { "", "a", "ab", "aab", "hello world", "a1b2c3", "x = (a + (b)) - c", "  trim  ",
    "key=value; k2=v2", "aaa", "ABC def", "1.5e10", "[x]", "%d", "a\0b", "é", "tab\there",
    "((()))", "abcabc", "THE (quick) fox" }
local function pattern()
    local k, out = rnd(5), {}
    for i = 1, k do
        local a = pick(atoms)
        local r = rnd(5)
        if r == 1 then out[#out + 1] = "(" .. a .. pick(quants) .. ")"
        else out[#out + 1] = a .. ((a:sub(1, 1) ~= "%" or #a == 2) and pick(quants) or "") end
    end
    return table.concat(out)
end
local function show(...)
    local t = table.pack(...)
    for i = 1, t.n do
        local v = t[i]
        if type(v) == "string" then
            v = v:gsub("^[^:]*:%d+: ", "") -- a position differs with the chunk's name
            t[i] = string.format("%q", v)
        else t[i] = tostring(v) end
    end
    -- bytes past ASCII as numbers (stagecraft's print shows them as '?')
    return (table.concat(t, ","):gsub("[\128-\255]", function(c) return "\\" .. c:byte() end))
end
local reps = { "<%0>", "%1", "%%", "x", "%2", "%", "[%1|%0]" }
for i = 1, n do
    local s, p = pick(subjects), pattern()
    local init = pick({ 1, 1, 2, -1, -3, 0, 100 })
    local line = { i, string.format("%q", p), string.format("%q", s) }
    line[#line + 1] = show(pcall(string.find, s, p, init))
    line[#line + 1] = show(pcall(string.find, s, p, init, true))
    line[#line + 1] = show(pcall(string.match, s, p, init))
    line[#line + 1] = show(pcall(function()
        local r, k = {}, 0
        for a, b in string.gmatch(s, p, init) do
            k = k + 1
            r[#r + 1] = show(a, b)
            if k > 50 then break end
        end
        return table.concat(r, ";")
    end))
    line[#line + 1] = show(pcall(string.gsub, s, p, pick(reps), pick({ nil, 1, 2 })))
    line[#line + 1] = show(pcall(string.gsub, s, p, { a = "A", b = false, ["1"] = 7 }))
    line[#line + 1] = show(pcall(string.gsub, s, p, function(a) if a == "a" then return {} end return a and #tostring(a) end))
    line[#line + 1] = show(pcall(string.gsub, s, p, 42))
    print((table.concat(line, " | "):gsub("[\128-\255]", function(c) return "\\" .. c:byte() end)))
end
-- Methods through the string metatable, and anchors of gmatch.
print(show(("abc"):find("b", 1, true)), show(("x=1, y=2"):gsub("(%w+)=(%w+)", "%2=%1")))
for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do print(k, v) end
for w in string.gmatch("^a^b", "^%a") do print(w) end
print(show(pcall(string.rep)), show(pcall(string.find)), show(pcall(string.gsub, "x", "x")))
