-- A minimal stand-in for Wireshark's Lua API, enough to run the generated dissector under a plain
-- Lua interpreter (lua5.2 or lua5.4) over a pcap: it checks that the script's bit arithmetic, CRCs
-- and formatting behave the same on Lua 5.2 (Wireshark 4.0) and Lua 5.4 (Wireshark 4.4+).
--
--   lua5.4 mock_wireshark.lua uet.lua capture.pcap [proto.pref:VALUE ...]
--
-- Arguments after the capture set preferences as tshark's -o does (TRUE, FALSE or a number).
--
-- For every frame it prints one line: the Info column, then every item added with an explicit
-- value (abbr=value) and every expert message, tab-separated.

local script, pcap = arg[1], arg[2]

local function u32(s, i) -- big-endian
  local a, b, c, d = s:byte(i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function le32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return ((d * 256 + c) * 256 + b) * 256 + a
end

-- values -----------------------------------------------------------------------------------------
local function show(v)
  if type(v) == "table" and v.hi then return string.format("0x%08X%08X", v.hi, v.lo) end
  if type(v) == "string" then return (v:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
  return tostring(v)
end

UInt64 = {}
local U64 = {}
U64.__index = U64
function UInt64.new(lo, hi) return setmetatable({ lo = lo, hi = hi or 0 }, U64) end
local function band32(a, b)
  local r, bit = 0, 1
  for _ = 1, 32 do
    if a % 2 == 1 and b % 2 == 1 then r = r + bit end
    a, b, bit = (a - a % 2) / 2, (b - b % 2) / 2, bit * 2
  end
  return r
end
function U64:band(o) return UInt64.new(band32(self.lo, o.lo), band32(self.hi, o.hi)) end
function U64:rshift(n)
  local p = 2 ^ n
  local lo = math.floor(self.lo / p) + (self.hi % p) * 2 ^ (32 - n)
  return UInt64.new(math.floor(lo), math.floor(self.hi / p))
end

-- tvb ------------------------------------------------------------------------------------------
local Range, Tvb = {}, {}
Range.__index = Range
Tvb.__index = Tvb
local function new_tvb(data, raw_off) return setmetatable({ data = data, raw_off = raw_off }, Tvb) end
local function new_range(tvb, o, l) return setmetatable({ tvb = tvb, o = o, l = l }, Range) end
Tvb.__call = function(self, o, l)
  o = o or 0
  l = l or (#self.data - o)
  assert(o >= 0 and l >= 0 and o + l <= #self.data, "tvb range out of bounds")
  return new_range(self, o, l)
end
Tvb.range = Tvb.__call
function Tvb:len() return #self.data end
function Tvb:offset() return self.raw_off end
function Tvb:raw(o, l) return self.data:sub(o + 1, o + l) end
function Range:bytes_() return self.tvb.data:sub(self.o + 1, self.o + self.l) end
function Range:raw(o, l)
  o = o or 0
  l = l or (self.l - o)
  assert(o + l <= self.l, "range raw out of bounds")
  return self.tvb.data:sub(self.o + o + 1, self.o + o + l)
end
function Range:uint()
  assert(self.l <= 4)
  local v = 0
  for i = 1, self.l do v = v * 256 + self.tvb.data:byte(self.o + i) end
  return v
end
function Range:le_uint()
  assert(self.l == 4)
  return le32(self.tvb.data, self.o + 1)
end
function Range:uint64()
  local s = string.rep("\0", 8 - self.l) .. self:bytes_()
  return UInt64.new(u32(s, 5), u32(s, 1))
end
function Range:range(o, l)
  assert(o >= 0 and l >= 0 and o + l <= self.l, "range out of bounds")  -- as Wireshark's TvbRange:range
  return new_range(self.tvb, self.o + o, l)
end

-- tree -----------------------------------------------------------------------------------------
local out = {}
local Item = {}
Item.__index = Item
local function new_item() return setmetatable({}, Item) end
function Item:add(f, r, v)
  if v ~= nil and type(f) == "table" and f.abbr then out[#out + 1] = f.abbr .. "=" .. show(v) end
  return new_item()
end
Item.add_le = Item.add
function Item:set_text() return self end
function Item:append_text() return self end
function Item:set_generated() return self end
function Item:add_tvb_expert_info(_, _, msg) out[#out + 1] = "!" .. msg; return self end
function Item:add_proto_expert_info(_, msg) out[#out + 1] = "!" .. msg; return self end
-- as in Wireshark, the classes are global tables of their methods
TreeItem, Tvb, TvbRange = Item, Tvb, Range

-- registration API -----------------------------------------------------------------------------
local protos = {}
function Proto(name, desc)
  for _, p in pairs(protos) do
    if p.name == name then error("Proto_new: there cannot be two protocols with the same name") end
  end
  local prefs = setmetatable({}, { __newindex = function(t, k, pref) rawset(t, k, pref.value) end })
  local p = { name = name, desc = desc, prefs = prefs }
  function p.register_heuristic() end
  protos[#protos + 1] = p
  return p
end
ProtoField = setmetatable({}, { __index = function(_, kind)
  return function(abbr) return { abbr = abbr, kind = kind } end
end })
ProtoExpert = { new = function(abbr) return { abbr = abbr } end }
Pref = {
  uint = function(_, d) return { value = d } end,
  bool = function(_, d) return { value = d } end,
  enum = function(_, d) return { value = d } end,
}
base = setmetatable({}, { __index = function(_, k) return k end })
expert = { group = setmetatable({}, { __index = function(_, k) return k end }),
           severity = setmetatable({}, { __index = function(_, k) return k end }) }
local tables = {}
DissectorTable = { get = function(name)
  local t = tables[name]
  if not t then
    t = { entries = {} }
    function t:add(k, p) self.entries[k] = p end
    function t:remove(k) self.entries[k] = nil end
    function t:get_dissector(k) return nil end
    function t:add_for_decode_as() end
    tables[name] = t
  end
  return t
end }

local current = {} -- field name -> list of FieldInfo of the current frame
Field = { new = function(name) return function()
  return (table.unpack or unpack)(current[name] or {})
end end }

-- run --------------------------------------------------------------------------------------------
dofile(script)
for i = 3, #arg do
  local pname, key, value = arg[i]:match("^([%w_]+)%.([%w_]+):(.*)$")
  local v = (value == "TRUE") or (value ~= "FALSE" and (tonumber(value) or value))
  for _, p in pairs(protos) do
    if p.name == pname then
      rawset(p.prefs, key, v)
      if p.prefs_changed then p.prefs_changed() end
    end
  end
end

-- as Wireshark does before it reads a capture file
for _, p in pairs(protos) do
  if p.init then p.init() end
end

local fh = assert(io.open(pcap, "rb"))
local data = fh:read("*a")
fh:close()
local pos = 25
local frame_tvb
local number = 0
while pos + 16 <= #data do
  number = number + 1
  local incl = le32(data, pos + 8)
  local frame = data:sub(pos + 16, pos + 15 + incl)
  pos = pos + 16 + incl
  out = {}
  current = {}
  frame_tvb = new_tvb(frame, 0)
  local function fi(name, o, l, value)
    current[name] = current[name] or {}
    table.insert(current[name], { offset = o, len = l, range = new_range(frame_tvb, o, l), value = value })
  end
  fi("frame", 0, #frame)
  local ip = 14
  local ver = math.floor(frame:byte(ip + 1) / 16)
  local hl, proto, total, udp
  if ver == 4 then
    hl = (frame:byte(ip + 1) % 16) * 4
    total = frame:byte(ip + 3) * 256 + frame:byte(ip + 4)
    proto = frame:byte(ip + 10)
    fi("ip", ip, hl); fi("ip.src", ip + 12, 4); fi("ip.dst", ip + 16, 4)
    fi("ip.dsfield.dscp", ip + 1, 1, math.floor(frame:byte(ip + 2) / 4))
  else
    hl = 40
    total = 40 + frame:byte(ip + 5) * 256 + frame:byte(ip + 6)
    proto = frame:byte(ip + 7)
    fi("ipv6", ip, 40); fi("ipv6.src", ip + 8, 16); fi("ipv6.dst", ip + 24, 16)
    fi("ipv6.tclass.dscp", ip, 2, math.floor((frame:byte(ip + 1) % 16 * 16 + math.floor(frame:byte(ip + 2) / 16)) / 4))
  end
  local l4 = ip + hl
  local pinfo_cols = { protocol = "", info = "" }
  local info_col = { text = "" }
  function info_col.append(self, s) self.text = self.text .. s end
  local cols = setmetatable({}, {
    __index = function(_, k) if k == "info" then return info_col end return pinfo_cols[k] end,
    __newindex = function(_, k, v) if k == "info" then info_col.text = v else pinfo_cols[k] = v end end,
  })
  local pinfo = { cols = cols, number = number, visited = false }
  local ok, err
  local root = new_item()
  if proto == 17 then
    fi("udp", l4, 8)
    local sport = frame:byte(l4 + 1) * 256 + frame:byte(l4 + 2)
    local dport = frame:byte(l4 + 3) * 256 + frame:byte(l4 + 4)
    local ulen = frame:byte(l4 + 5) * 256 + frame:byte(l4 + 6)
    pinfo.src_port, pinfo.dst_port = sport, dport
    local t = tables["udp.port"].entries
    local p = t[math.min(sport, dport)] or t[math.max(sport, dport)]
    local tvb = new_tvb(frame:sub(l4 + 9, l4 + ulen), l4 + 8)
    if p and #tvb.data > 0 then ok, err = pcall(p.dissector, tvb, pinfo, root) else ok = true end
  elseif proto == 253 then
    local tvb = new_tvb(frame:sub(l4 + 1, ip + total), l4)
    ok, err = pcall(tables["ip.proto"].entries[253].dissector, tvb, pinfo, root)
  end
  if not ok then out[#out + 1] = "ERROR " .. tostring(err) end
  print(info_col.text .. "\t" .. table.concat(out, "\t"))
end
