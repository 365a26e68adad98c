--! Hand-written part of the dissector written by `uet wireshark` (uet/wireshark/lua.py), copied
--! verbatim after the generated constants (GEN_NAME, GEN_PORT, UET_IP_PROTO, ROCE_UDP_PORT, K_*):
--! bit operations for Lua 5.2-5.4, CRC-32C / CRC-32, readers of bit fields in raw header bytes, and
--! the registration of the four protocols. Lines starting with "--!" are notes about this file and
--! are not copied into the output.
-- bit operations: bit32 on Lua 5.2 (Wireshark 4.0-4.2), native operators on Lua 5.3/5.4
local band, bxor, rshift
if bit32 then
  band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
  band, bxor, rshift = load("return function(a, b) return a & b end, " ..
    "function(a, b) return a ~ b end, function(a, n) return (a & 0xFFFFFFFF) >> n end")()
end
local POW2 = { [0] = 1 }
for i = 1, 53 do POW2[i] = POW2[i - 1] * 2 end
local floor, min, max, sbyte, schar, ssub, fmt = math.floor, math.min, math.max, string.byte, string.char,
  string.sub, string.format
local OPT = {}  -- decoder options, read from the preferences

-- CRC-32C (Castagnoli, reflected 0x82F63B78) and CRC-32 (IEEE, reflected 0xEDB88320), sliced by
-- CRC_SLICE bytes: T[k][b] is the CRC register after byte b and k zero bytes, so one block of
-- CRC_SLICE bytes costs one string.byte call, one table lookup per byte and one XOR of them all
-- (bit32.bxor takes any number of arguments; Lua 5.3+ has the ~ operator). The block function is
-- unrolled once at load time (load() of generated text; 64 bytes keep the call within Lua 5.2's
-- register limit): 12 ns a byte on Lua 5.2 and 6 on Lua 5.4, 8-10 times faster than a loop over
-- single bytes. The interpreter is the limit: a 4 KiB packet still costs about 50 us.
local CRC_SLICE = 64
local function crc_table(poly)
  local t = { [0] = {} }
  local t0 = t[0]
  for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
      if c % 2 == 1 then c = bxor(rshift(c, 1), poly) else c = rshift(c, 1) end
    end
    t0[i] = c
  end
  for k = 1, CRC_SLICE - 1 do
    local prev, cur = t[k - 1], {}
    for i = 0, 255 do
      local c = prev[i]
      cur[i] = bxor(t0[c % 256], rshift(c, 8))
    end
    t[k] = cur
  end
  return t
end
-- T32C and T32 name the two CRCs; their 64 tables of 256 entries are built on first use: a
-- dissector that never computes a CRC (the default: the preference check_crc is off) neither
-- spends the 40 million instructions nor keeps the 32768 entries.
local T32C, T32 = { poly = 0x82F63B78 }, { poly = 0xEDB88320 }
local function crc_tables(c)
  local t = c.t
  if t == nil then t = crc_table(c.poly); c.t = t end
  return t
end

-- crc_update(c, crc, s): continue a finished CRC value over the bytes of string s
-- (crc(b, crc(a)) == crc(a .. b)); c is T32C or T32.
local crc_update
do
  local N, native = CRC_SLICE, not bit32
  local tl, bl, terms = {}, {}, {}
  for k = 0, N - 1 do tl[#tl + 1] = "t" .. k end
  for i = 1, N do bl[#bl + 1] = "b" .. i end
  for i = 1, 4 do terms[i] = "t" .. (N - i) .. "[c" .. (i - 1) .. "]" end
  for i = 5, N do terms[i] = "t" .. (N - i) .. "[b" .. i .. "]" end
  local mix, split, fold, tail
  if native then
    mix = "local x = c ~ (b1 | b2 << 8 | b3 << 16 | b4 << 24)"
    split = "local c0, c1, c2, c3 = x & 255, (x >> 8) & 255, (x >> 16) & 255, x >> 24"
    fold = "c = " .. table.concat(terms, " ~ ")
    tail = "c = t0[(c ~ sbyte(s, i)) & 255] ~ (c >> 8)"
  else
    mix = "local x = bxor(c, ((b4 * 256 + b3) * 256 + b2) * 256 + b1)"
    split = "local c0 = x % 256; x = (x - c0) / 256; local c1 = x % 256; x = (x - c1) / 256; " ..
            "local c2 = x % 256; local c3 = (x - c2) / 256"
    fold = "c = bxor(" .. table.concat(terms, ", ") .. ")"
    tail = "c = bxor(t0[bxor(c, sbyte(s, i)) % 256], rshift(c, 8))"
  end
  local src = table.concat({
    "local bxor, rshift, sbyte, unpack, crc_tables = ...",
    "return function(c, crc, s)",
    "  local " .. table.concat(tl, ", ") .. " = unpack(crc_tables(c), 0, " .. (N - 1) .. ")",
    "  local c = bxor(crc, 0xFFFFFFFF)",
    "  local n, i = #s, 1",
    "  while i + " .. (N - 1) .. " <= n do",
    "    local " .. table.concat(bl, ", ") .. " = sbyte(s, i, i + " .. (N - 1) .. ")",
    "    " .. mix, "    " .. split, "    " .. fold,
    "    i = i + " .. N,
    "  end",
    "  while i <= n do " .. tail .. "; i = i + 1 end",
    "  return bxor(c, 0xFFFFFFFF)",
    "end" }, "\n")
  crc_update = load(src, "=crc_update", "t")(bxor, rshift, sbyte, table.unpack or unpack, crc_tables)
end

-- bits of a header held in the Lua string raw: b = first byte (0-based), nb bytes, pad = bits
-- after the field in its last byte, w = width (<= 32)
local function getv(raw, b, nb, pad, w)
  local acc = 0
  for i = b + 1, b + nb do acc = acc * 256 + sbyte(raw, i) end
  return floor(acc / POW2[pad]) % POW2[w]
end

local function field_bits(raw, b, nb, pad, w)
  local bits = {}
  for i = b + 1, b + nb do
    local byte = sbyte(raw, i)
    for j = 7, 0, -1 do bits[#bits + 1] = floor(byte / POW2[j]) % 2 end
  end
  local first = nb * 8 - pad - w + 1
  local out = {}
  for i = first, first + w - 1 do out[#out + 1] = bits[i] end
  return out
end

-- upper-case hex of any field without leading zeros, nil when zero
local function bits_hex(raw, b, nb, pad, w)
  if w <= 32 and nb <= 5 then
    local x = getv(raw, b, nb, pad, w)
    if x == 0 then return nil end
    return fmt("%X", x)
  end
  local bits = field_bits(raw, b, nb, pad, w)
  local digits = {}
  local i = #bits
  while i >= 1 do
    local nib = 0
    for k = 0, 3 do
      if i - k >= 1 then nib = nib + bits[i - k] * POW2[k] end
    end
    table.insert(digits, 1, fmt("%X", nib))
    i = i - 4
  end
  local hex = (table.concat(digits):gsub("^0+", ""))
  if hex == "" then return nil end
  return hex
end

-- a field wider than 64 bits that is not byte aligned, right-aligned into its nb container bytes
-- (Wireshark copies exactly as many value bytes as the item covers)
local function masked_bytes(raw, b, nb, pad, w)
  local bits = field_bits(raw, b, nb, pad, w)
  local lead = nb * 8 - w
  local out = {}
  local acc, cnt = 0, lead
  for _, bit in ipairs(bits) do
    acc = acc * 2 + bit
    cnt = cnt + 1
    if cnt == 8 then out[#out + 1] = schar(acc); acc, cnt = 0, 0 end
  end
  return table.concat(out)
end


-- Register a protocol under the first free name: Proto() raises when the name is taken.
local function new_proto(names, desc)
  local last
  for _, n in ipairs(names) do
    local ok, p = pcall(Proto, n, desc .. " (" .. n .. ")")
    if ok then return p, n end
    last = p
  end
  error(last)
end

local proto, PN = new_proto({ GEN_NAME, GEN_NAME .. "ref" }, "Ultra Ethernet Transport, uet reference dissector")
local proto_ip = new_proto({ PN .. "ip", PN .. "ipref" }, "UET over IP, uet reference dissector")
local proto_roce, RN = new_proto({ GEN_NAME .. "roce", GEN_NAME .. "refroce" }, "RoCEv2 additions, uet reference dissector")
local proto_csig, CN = new_proto({ GEN_NAME .. "csig", GEN_NAME .. "refcsig" }, "CSIG congestion-signalling tag, uet reference dissector")
local REG_NOTE = nil
if PN ~= GEN_NAME then
  REG_NOTE = "registered as '" .. PN .. "' (fields " .. PN .. ".*): the name '" .. GEN_NAME ..
             "' is taken by another dissector"
end
