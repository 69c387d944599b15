-- bench/lua-work.lua: the workload of bench/lua, a Lua program doing what
-- Lua programs do: string formatting, table building and sorting, pattern
-- matching, closures, string building (and the garbage collection of all
-- that).
local n = tonumber(arg and arg[1]) or 30000
local t = {}
for i = 1, n do
  t[#t + 1] = string.format("%05d:%s:%.3f", (i * 7919) % n, tostring(i), i / 7)
end
table.sort(t)
local words = {}
for i = 1, #t, 3 do
  for w in t[i]:gmatch("[^:]+") do words[#words + 1] = w:upper() end
end
local acc = 0
local function add(x) acc = acc + #x end
for _, w in ipairs(words) do add(w) end
local parts = {}
for i = 1, n // 10 do parts[i] = string.rep("ab", i % 13) .. i end
print(#t, #words, acc, #table.concat(parts, ","))
