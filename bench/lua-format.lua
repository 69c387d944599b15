-- bench/lua-format.lua: a string.format loop, for bench/lines.
--   lua lua-format.lua N    formats N strings (N = 1,000,000: some 0.35 s)
local n = tonumber(arg[1]) or 1000000
local t = {}
for i = 1, n do
  t[i % 100 + 1] = string.format("%d:%s:%5.2f", i, "item", i / 3)
end
print(#t, t[1])
