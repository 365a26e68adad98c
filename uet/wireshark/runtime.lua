--! Hand-written part of the dissector written by `uet wireshark` (uet/wireshark/lua.py), copied
--! verbatim after the generated value strings (VS), fields (F), header layouts (H) and chain tables:
--! the fixed extra fields, expert infos, preferences, add_header() (which reads any schema header
--! through its H table) and lookups of the IP/UDP layers below. Lines starting with "--!" are notes
--! about this file and are not copied into the output.
-- extra fields
F["uet:note"] = ProtoField.string(PN .. ".note", "note")
F["uet:payload_len"] = ProtoField.uint32(PN .. ".payload_len", "payload_len", base.DEC, nil, nil,
  "bytes after the last header, trailer excluded")
F["uet:payload"] = ProtoField.bytes(PN .. ".payload", "payload")
F["uet:crc.value"] = ProtoField.uint32(PN .. ".crc.value", "crc.value", base.HEX, nil, nil,
  "CRC-32C trailer [facts A.3]")
F["uet:crc.ok"] = ProtoField.bool(PN .. ".crc.ok", "crc.ok", base.NONE, nil, nil, "CRC-32C trailer verifies")
-- the names and numbers of Wireshark's own checksum status (proto_checksum_vals, PROTO_CHECKSUM_E_*)
local CRC_BAD, CRC_GOOD, CRC_UNVERIFIED = 0, 1, 2
F["uet:crc.status"] = ProtoField.uint8(PN .. ".crc.status", "crc.status", base.DEC,
  { [CRC_BAD] = "Bad", [CRC_GOOD] = "Good", [CRC_UNVERIFIED] = "Unverified" }, nil,
  "CRC-32C trailer status: Unverified unless the preference check_crc is on")
-- trailer auto with check_crc off: the packets of a source verified to learn whether it sends
-- CRC-32C trailers (uet_chain.lua, "Trailer presence learned per sender")
local LEARN_PACKETS = 8
F["uet:crc.learned"] = ProtoField.bool(PN .. ".crc.learned",
  fmt("Trailer presence learned from this source's first %d packets (not computed)", LEARN_PACKETS), base.NONE,
  nil, nil, "CRC-32C trailer present or not as this source's first packets agreed (trailer auto, check_crc off)")
F["uet:encrypted"] = ProtoField.bytes(PN .. ".encrypted", "encrypted", base.NONE,
  "PDS, SES and payload encrypted by TSS [facts F]")
F["uet:icv"] = ProtoField.bytes(PN .. ".icv", "icv", base.NONE, "TSS integrity check value (GCM tag) [facts F]")
F["uet:pds.sack_bitmap.psn"] = ProtoField.uint32(PN .. ".pds.sack_bitmap.psn", "received PSN", base.DEC, nil, nil,
  "PSN sack_base_psn + i for every set bit i of the SACK bitmap [facts B.8]")
F["roce:payload_len"] = ProtoField.uint32(RN .. ".payload_len", "payload_len", base.DEC, nil, nil,
  "bytes after the last header (pad included, ICRC excluded)")
F["roce:icrc.value"] = ProtoField.uint32(RN .. ".icrc.value", "icrc.value", base.HEX, nil, nil,
  "invariant CRC, least-significant byte first [facts G.6]")
F["roce:icrc.ok"] = ProtoField.bool(RN .. ".icrc.ok", "icrc.ok", base.NONE, nil, nil, "ICRC verifies")
F["roce:aeth.syndrome_name"] = ProtoField.string(RN .. ".aeth.syndrome_name", "syndrome_name")

-- every field goes to the protocol its key names ("uet:", "roce:", "csig:")
local proto_fields = { uet = {}, roce = {}, csig = {} }
local fkeys = {}
for k in pairs(F) do fkeys[#fkeys + 1] = k end
table.sort(fkeys)
for _, k in ipairs(fkeys) do
  local list = proto_fields[k:match("^(%a+):")]
  list[#list + 1] = F[k]
end
proto.fields = proto_fields.uet
proto_roce.fields = proto_fields.roce
proto_csig.fields = proto_fields.csig

-- Expert infos of one protocol from {key, field suffix, text, group, severity} rows: the table
-- by key and the list for proto.experts, in the rows' order.
local function experts(prefix, rows)
  local by_key, list = {}, {}
  for i, r in ipairs(rows) do
    by_key[r[1]] = ProtoExpert.new(prefix .. ".expert." .. r[2], r[3], expert.group[r[4]], expert.severity[r[5]])
    list[i] = by_key[r[1]]
  end
  return by_key, list
end

local EF, REF
EF, proto.experts = experts(PN, {
  {"bad_crc", "bad_crc", "bad CRC", "CHECKSUM", "ERROR"},
  {"crc", "crc", "CRC-32C trailer", "CHECKSUM", "WARN"},
  {"truncated", "truncated", "truncated header", "MALFORMED", "ERROR"},
  {"reserved", "reserved", "reserved bits set", "PROTOCOL", "WARN"},
  {"unknown", "unknown_value", "unknown value", "PROTOCOL", "WARN"},
  {"protocol", "protocol", "protocol violation", "PROTOCOL", "WARN"},
  {"malformed", "malformed", "not decodable", "MALFORMED", "ERROR"},
  {"trimmed", "trimmed", "trimmed packet (DSCP 11)", "SEQUENCE", "NOTE"},
})
REF, proto_roce.experts = experts(RN, {
  {"bad_icrc", "bad_icrc", "bad ICRC", "CHECKSUM", "ERROR"},
  {"icrc", "icrc", "ICRC not computed", "CHECKSUM", "WARN"},
  {"truncated", "truncated", "truncated header", "MALFORMED", "ERROR"},
  {"reserved", "reserved", "reserved bits set", "PROTOCOL", "WARN"},
  {"unknown", "unknown_value", "unknown value", "PROTOCOL", "WARN"},
  {"protocol", "protocol", "protocol note", "PROTOCOL", "WARN"},
  {"builtin", "builtin", "built-in RoCEv2 dissector failed", "MALFORMED", "WARN"},
})

-- preferences
proto.prefs.udp_port = Pref.uint("UDP port", GEN_PORT, "UDP destination (or source) port that carries UET")
proto.prefs.trailer = Pref.enum("CRC-32C trailer", 1,
  "auto: present exactly when the last 4 bytes verify (as uet decode); without check_crc verified on " ..
  "a source's first 8 packets only, then taken from them when they agree (facts A.3); crc: always present; none",
  { { 1, "auto", 1 }, { 2, "crc", 2 }, { 3, "none", 3 } }, true)
local TRAILER_MODES = { "auto", "crc", "none" }
-- Off by default, as Wireshark's own "Validate the checksum if possible" of TCP and UDP: computing
-- the CRC in Lua costs more than the rest of the dissection (some 1.2 million instructions for a
-- 4 KiB frame, against about 0.5 million for all the rest).
proto.prefs.check_crc = Pref.bool("Validate the CRC-32C trailer if possible", false,
  "Compute the CRC-32C trailer (facts A.3) and report a bad one. Off (as Wireshark's TCP and UDP " ..
  "checksum validation): a trailer not computed is shown with the status Unverified; in auto mode " ..
  "a source's first 8 packets are computed to learn whether it sends trailers")
proto.prefs.ccx_layout = Pref.enum("ACK_CCX/NACK_CCX layout", 1,
  "1.0: 40/32 bytes (facts H.1 #2-3); xdp2: 32/24 bytes as XDP2 writes them", OPTIONS.ccx_layout.enum, true)
proto.prefs.rsv_pdc_bit = Pref.enum("use_rsv_pdc bit", 1,
  "bit of use_rsv_pdc in the SYN form: 80 (Wireshark/XDP2) or 83 (reference provider), facts H.1 #4",
  OPTIONS.rsv_pdc_bit.enum, true)
proto.prefs.mswap_cswap_ext = Pref.bool("MSWAP carries the compare-swap extension", false,
  "decode AMO MSWAP (0x13) with the 36-byte compare-swap extension (facts H.2)")

local function read_prefs()
  OPT.trailer = TRAILER_MODES[proto.prefs.trailer] or "auto"
  OPT.check_crc = proto.prefs.check_crc and true or false
  OPT.ccx_layout = OPTIONS.ccx_layout.values[proto.prefs.ccx_layout] or OPTIONS.ccx_layout.values[1]
  OPT.rsv_pdc_bit = OPTIONS.rsv_pdc_bit.values[proto.prefs.rsv_pdc_bit] or OPTIONS.rsv_pdc_bit.values[1]
  OPT.mswap_cswap_ext = proto.prefs.mswap_cswap_ext and true or false
end
read_prefs()

-- Wireshark's classes are global tables of their methods (TreeItem.add, TvbRange.range, ...): calling
-- them directly skips the userdata's __index lookup, about a sixth of what an add costs. Elsewhere
-- (a mock, a future Wireshark without those tables) the method is looked up on the object.
local function method(class, name)
  local f = type(class) == "table" and rawget(class, name)
  if type(f) == "function" then return f end
  return function(o, ...) return o[name](o, ...) end
end
local t_add, t_set_text = method(TreeItem, "add"), method(TreeItem, "set_text")
local t_set_generated = method(TreeItem, "set_generated")
local tvb_range, tvb_raw = method(Tvb, "range"), method(Tvb, "raw")
local r_range = method(TvbRange, "range")

-- add a generated item: field f over range r with value x
local function add_generated(parent, f, r, x)
  local it = t_add(parent, f, r, x)
  t_set_generated(it)
  return it
end

local function report(item, ef, range, msg, probs)
  if range then item:add_tvb_expert_info(ef, range, msg) else item:add_proto_expert_info(ef, msg) end
  if probs then probs[#probs + 1] = msg end
end

-- Per-packet work is kept flat: what depends only on the layout is computed here, once, at load
-- time: each header's title text (text) and the value table of each field name (enum_of, for the
-- Info column); each variant's reserved and enum fields in lists of their own (rsvd, enums); each
-- numeric field's divisor and modulus (q = 2^pad, m = 2^width) and whether it covers the same
-- bytes as the field added before it (same: that field's TvbRange is reused).
for _, h in pairs(H) do
  h.text = h.title .. " [facts " .. h.ref .. "]"
  h.enum_of = {}
  for _, var in ipairs(h.vars) do
    var.rsvd, var.enums = {}, {}
    local prev = nil
    for _, d in ipairs(var.fields) do
      if d.w <= 32 then d.q, d.m = POW2[d.p], POW2[d.w] end
      if d.k == K_RSVD then
        d.zero = string.rep("\0", d.l)  -- reserved bits are clear when their bytes are all zero
        var.rsvd[#var.rsvd + 1] = d
      else
        d.same = prev ~= nil and prev.b == d.b and prev.l == d.l
        prev = d
      end
      if d.e then
        var.enums[#var.enums + 1] = d
        if h.enum_of[d.n] == nil then h.enum_of[d.n] = d.e end
      end
      if d.n == "sack_bitmap" and var == h.vars[1] then h.sack = d end  -- the SACK bitmap as PSNs
    end
  end
end

-- the value of numeric field d (width <= 32) of a header whose bytes are the numbers in by
-- (table lookups: no call to string.byte per field; math.floor keeps the value an integer on Lua 5.4)
local function field_value(by, d)
  local b, l = d.b, d.l
  local acc = by[b + 1]
  for i = b + 2, b + l do acc = acc * 256 + by[i] end
  acc = floor(acc / d.q) % d.m
  if d.s and acc >= d.m / 2 then acc = acc - d.m end
  return acc
end

-- the derived values (clear_psn = psn + offset, ...) of header h, added below its item sub
local function add_derived(h, sub, v, items, pos)
  local ds = h.derived
  for i = 1, #ds do
    local dv = ds[i]
    local a, b = v[dv.a], v[dv.b]
    if a ~= nil and b ~= nil then
      local x
      if dv.neg then x = (a - b) % dv.m else x = (a + b) % dv.m end
      v[dv.n] = x
      items[dv.n] = add_generated(sub, dv.f, pos[dv.b], x)
    end
  end
end

-- Add one header at off, reading no further than limit. Returns values (nil when truncated),
-- the header's size, its tree item, the values read, the field items by name. unknown (optional):
-- function(header key, field, value) that words an undefined enum value more precisely (a
-- protocol violation), or returns nil for the generic note (uet/wire/codec.py Variant.problems).
-- praw (optional): the packet's first bytes as a string (tvb:raw(0, ...)), to cut the header's
-- bytes from without another call into Wireshark.
-- Each call into Wireshark costs thousands of instructions (a TvbRange or TreeItem userdata, its
-- argument checks, its garbage collection): one range for the header, sub-ranges of it (cheaper
-- than tvb(off, len)) shared by the fields that cover the same bytes, and one add per field.
local function add_header(h, tvb, off, limit, parent, E, probs, unknown, praw)
  local have = max(limit - off, 0)
  local take = min(have, h.max)
  local raw
  if praw and off + take <= #praw then
    raw = ssub(praw, off + 1, off + take)
  else
    raw = take > 0 and tvb_raw(tvb, off, take) or ""
  end
  local var = h.choose(raw, have)
  local size = var.size
  local ilen = min(size, have)
  local hr = tvb_range(tvb, off, ilen)
  local sub = t_add(parent, h.hf, hr)
  t_set_text(sub, h.text)
  local v, items, pos = {}, {}, {}
  local by = { sbyte(raw, 1, take) }
  local fields = var.fields
  local r = nil
  for i = 1, #fields do
    local d = fields[i]
    local b, l, k = d.b, d.l, d.k
    if b + l > have then break end
    if k ~= K_RSVD then
      if not d.same then r = r_range(hr, b, l) end
      local n = d.n
      pos[n] = r
      if k == K_UINT or k == K_FLAG or k == K_INT then
        v[n] = field_value(by, d)
        items[n] = t_add(sub, d.f, r)
      elseif k == K_NUMX then
        local x = field_value(by, d)
        v[n] = x
        items[n] = t_add(sub, d.f, r, x)
      elseif k == K_U64 or k == K_BYTES then
        items[n] = t_add(sub, d.f, r)
      elseif k == K_U64X then
        items[n] = t_add(sub, d.f, r, r:uint64():band(UInt64.new(d.mlo, d.mhi)):rshift(d.p))
      elseif k == K_BYTESX then
        items[n] = t_add(sub, d.f, r, masked_bytes(raw, b, l, d.p, d.w))
      end
    end
  end
  if have < size then
    add_derived(h, sub, v, items, pos)
    report(sub, E.truncated, tvb(off, ilen), fmt("%s: truncated: needs %d bytes, %d left", h.key, size, have), probs)
    return nil, size, sub, v, items
  end
  local rsvd = var.rsvd
  for i = 1, #rsvd do
    local d = rsvd[i]
    local hx = ssub(raw, d.b + 1, d.b + d.l) ~= d.zero and bits_hex(raw, d.b, d.l, d.p, d.w)
    if hx then
      report(sub, E.reserved, tvb(off + d.b, d.l),
             fmt("%s: reserved bits %d-%d are set (0x%s)", h.key, d.o, d.o + d.w - 1, hx), probs)
    end
  end
  local enums = var.enums
  for i = 1, #enums do
    local d = enums[i]
    local x = v[d.n]
    if x ~= nil and d.e[x] == nil then
      local better = unknown and unknown(h.key, d.n, x)
      if better then
        report(sub, E.protocol or E.unknown, pos[d.n], better, probs)
      else
        report(sub, E.unknown, pos[d.n], fmt("%s: %s = %d (0x%X) is not a known %s value", h.key, d.n, x, x, d.en), probs)
      end
    end
  end
  add_derived(h, sub, v, items, pos)
  return v, size, sub, v, items, pos
end

-- the innermost instance of a field that lies before the given data-source offset
local fx = {
  ip = Field.new("ip"), ipv6 = Field.new("ipv6"), udp = Field.new("udp"), frame = Field.new("frame"),
}
local function pick_last(limit, best, fi, ...)
  if fi == nil then return best end
  if fi.offset < limit and (best == nil or fi.offset > best.offset) then best = fi end
  return pick_last(limit, best, ...)
end
local function last_before(f, limit)
  return pick_last(limit, nil, f())
end

-- The innermost IP header before the data-source offset lim: its item and version (4 or 6), or
-- nil. Its source and destination addresses and DSCP are read from its bytes, so one packet needs
-- two field extractors here instead of six (ip.src, ip.dst, ipv6.src, ... each cost a lookup).
local function innermost_ip(lim)
  local i4, i6 = last_before(fx.ip, lim), last_before(fx.ipv6, lim)
  if i4 and (i6 == nil or i4.offset > i6.offset) then
    if i4.len >= 20 then return i4, 4 end
  elseif i6 and i6.len >= 40 then
    return i6, 6
  end
  return nil
end

-- CRC-32C seed of the trailer context (uet/wire/trailer.py: source and destination address, then
-- in UDP mode the UDP header with its checksum zeroed), nil if unknown
local function crc_seed(tvb, ip_mode, ipfi, ipv)
  if ipfi == nil then return nil end
  local addrs
  if ipv == 4 then addrs = ipfi.range:raw(12, 8) else addrs = ipfi.range:raw(8, 32) end
  if ip_mode then return crc_update(T32C, 0, addrs) end
  local u = last_before(fx.udp, tvb:offset())
  if u == nil or u.len < 8 then return nil end
  return crc_update(T32C, 0, addrs .. u.range:raw(0, 6) .. "\0\0")
end

-- the DSCP of IP header ipfi (version ipv), nil without one
local function dscp_of(ipfi, ipv)
  if ipfi == nil then return nil end
  local b0, b1 = sbyte(ipfi.range:raw(0, 2), 1, 2)
  if ipv == 4 then return floor(b1 / 4) end
  return floor(((b0 % 16) * 16 + floor(b1 / 16)) / 4)
end

-- the symbol of value x of field `field` of header h (its first declaration's value table)
local function sym(h, field, x)
  local t = h.enum_of[field]
  return t and t[x]
end

local function name_or_num(tbl, x)
  if x == nil then return "?" end
  return (tbl and tbl[x]) or fmt("0x%02X", x)
end

-- One dissector in one table under the key a preference holds (the CSIG EtherType): re-registered
-- when the preference changes, so the caller keeps no state of its own.
local function preference_registrar(table_name, p, key)
  local tbl = DissectorTable.get(table_name)
  local current = 0
  return function()
    local k = key()
    if k == current then return end
    if current ~= 0 then tbl:remove(current, p) end
    current = k
    if k ~= 0 then tbl:add(k, p) end
  end
end
