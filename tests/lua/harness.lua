-- harness.lua — a tiny test harness for the Lua tests of the DSL.
--   local T = dofile("tests/lua/harness.lua")
--   T.eq(a, b, what); T.near(a, b, tol, what); T.ok(cond, what)
--   T.fails(fn, "substring", what)   -- fn must raise an error containing it
--   os.exit(T.done("dsl"))
local T = {pass = 0, fail = 0}

local function report(ok, what, detail)
  if ok then
    T.pass = T.pass + 1
  else
    T.fail = T.fail + 1
    io.stderr:write(("FAIL %s: %s\n"):format(what or "?", detail or ""))
  end
end

function T.ok(cond, what) report(cond, what, "condition is false") end
function T.eq(a, b, what) report(a == b, what, ("got %s, expected %s"):format(tostring(a), tostring(b))) end
function T.near(a, b, tol, what)
  report(math.abs(a - b) <= tol, what, ("got %.12g, expected %.12g"):format(a, b))
end
function T.fails(fn, sub, what)
  local ok, err = pcall(fn)
  if ok then return report(false, what, "no error raised") end
  err = tostring(err)
  report(err:find(sub, 1, true) ~= nil, what, ("error '%s' lacks '%s'"):format(err, sub))
end
function T.done(suite)
  print(("%s: %d passed, %d failed"):format(suite, T.pass, T.fail))
  return T.fail == 0 and 0 or 1
end
return T
