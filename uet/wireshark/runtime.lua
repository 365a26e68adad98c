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
  "CRC-32C trailer [uet-facts A.3]")
F["uet:crc.ok"] = ProtoField.bool(PN .. ".crc.ok", "crc.ok", base.NONE, nil, nil, "CRC-32C trailer verifies")
F["uet:encrypted"] = ProtoField.bytes(PN .. ".encrypted", "encrypted", base.NONE,
  "PDS, SES and payload encrypted by TSS [uet-facts F]")
F["uet:icv"] = ProtoField.bytes(PN .. ".icv", "icv", base.NONE, "TSS integrity check value (GCM tag) [uet-facts F]")
F["uet:pds.sack_bitmap.psn"] = ProtoField.uint32(PN .. ".pds.sack_bitmap.psn", "received PSN", base.DEC, nil, nil,
  "PSN sack_base_psn + i for every set bit i of the SACK bitmap [uet-facts B.8]")
F["roce:payload_len"] = ProtoField.uint32(RN .. ".payload_len", "payload_len", base.DEC, nil, nil,
  "bytes after the last header (pad included, ICRC excluded)")
F["roce:icrc.value"] = ProtoField.uint32(RN .. ".icrc.value", "icrc.value", base.HEX, nil, nil,
  "invariant CRC, least-significant byte first [uet-facts G.6]")
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

local EF = {
  bad_crc = ProtoExpert.new(PN .. ".expert.bad_crc", "bad CRC", expert.group.CHECKSUM, expert.severity.ERROR),
  crc = ProtoExpert.new(PN .. ".expert.crc", "CRC-32C trailer", expert.group.CHECKSUM, expert.severity.WARN),
  truncated = ProtoExpert.new(PN .. ".expert.truncated", "truncated header", expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new(PN .. ".expert.reserved", "reserved bits set", expert.group.PROTOCOL, expert.severity.WARN),
  unknown = ProtoExpert.new(PN .. ".expert.unknown_value", "unknown value", expert.group.PROTOCOL, expert.severity.WARN),
  protocol = ProtoExpert.new(PN .. ".expert.protocol", "protocol violation", expert.group.PROTOCOL, expert.severity.WARN),
  malformed = ProtoExpert.new(PN .. ".expert.malformed", "not decodable", expert.group.MALFORMED, expert.severity.ERROR),
  trimmed = ProtoExpert.new(PN .. ".expert.trimmed", "trimmed packet (DSCP 11)", expert.group.SEQUENCE, expert.severity.NOTE),
}
proto.experts = { EF.bad_crc, EF.crc, EF.truncated, EF.reserved, EF.unknown, EF.protocol, EF.malformed, EF.trimmed }
local REF = {
  bad_icrc = ProtoExpert.new(RN .. ".expert.bad_icrc", "bad ICRC", expert.group.CHECKSUM, expert.severity.ERROR),
  icrc = ProtoExpert.new(RN .. ".expert.icrc", "ICRC not computed", expert.group.CHECKSUM, expert.severity.WARN),
  truncated = ProtoExpert.new(RN .. ".expert.truncated", "truncated header", expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new(RN .. ".expert.reserved", "reserved bits set", expert.group.PROTOCOL, expert.severity.WARN),
  unknown = ProtoExpert.new(RN .. ".expert.unknown_value", "unknown value", expert.group.PROTOCOL, expert.severity.WARN),
  protocol = ProtoExpert.new(RN .. ".expert.protocol", "protocol note", expert.group.PROTOCOL, expert.severity.WARN),
  builtin = ProtoExpert.new(RN .. ".expert.builtin", "built-in RoCEv2 dissector failed", expert.group.MALFORMED, expert.severity.WARN),
}
proto_roce.experts = { REF.bad_icrc, REF.icrc, REF.truncated, REF.reserved, REF.unknown, REF.protocol, REF.builtin }

-- preferences
proto.prefs.udp_port = Pref.uint("UDP port", GEN_PORT, "UDP destination (or source) port that carries UET")
proto.prefs.trailer = Pref.enum("CRC-32C trailer", 1,
  "auto: present exactly when the last 4 bytes verify (as uet decode); crc: always present; none",
  { { 1, "auto", 1 }, { 2, "crc", 2 }, { 3, "none", 3 } }, true)
local TRAILER_MODES = { "auto", "crc", "none" }
proto.prefs.ccx_layout = Pref.enum("ACK_CCX/NACK_CCX layout", 1,
  "1.0: 40/32 bytes (uet-facts H.1 #2-3); xdp2: 32/24 bytes as XDP2 writes them", OPTIONS.ccx_layout.enum, true)
proto.prefs.rsv_pdc_bit = Pref.enum("use_rsv_pdc bit", 1,
  "bit of use_rsv_pdc in the SYN form: 80 (Wireshark/XDP2) or 83 (reference provider), uet-facts H.1 #4",
  OPTIONS.rsv_pdc_bit.enum, true)
proto.prefs.mswap_cswap_ext = Pref.bool("MSWAP carries the compare-swap extension", false,
  "decode AMO MSWAP (0x13) with the 36-byte compare-swap extension (uet-facts H.2)")

local function read_prefs()
  OPT.trailer = TRAILER_MODES[proto.prefs.trailer] or "auto"
  OPT.ccx_layout = OPTIONS.ccx_layout.values[proto.prefs.ccx_layout] or OPTIONS.ccx_layout.values[1]
  OPT.rsv_pdc_bit = OPTIONS.rsv_pdc_bit.values[proto.prefs.rsv_pdc_bit] or OPTIONS.rsv_pdc_bit.values[1]
  OPT.mswap_cswap_ext = proto.prefs.mswap_cswap_ext and true or false
end
read_prefs()

local function report(item, ef, range, msg, probs)
  if range then item:add_tvb_expert_info(ef, range, msg) else item:add_proto_expert_info(ef, msg) end
  if probs then probs[#probs + 1] = msg end
end

-- Add one header at off, reading no further than limit. Returns values (nil when truncated),
-- the header's size, its tree item, the values read, the field items by name. unknown (optional):
-- function(header key, field, value) that words an undefined enum value more precisely (a
-- protocol violation), or returns nil for the generic note (uet/wire/codec.py Variant.problems).
local function add_header(h, tvb, off, limit, parent, E, probs, unknown)
  local have = max(limit - off, 0)
  local raw = have > 0 and tvb:raw(off, min(have, h.max)) or ""
  local var = h.choose(raw, have)
  local size = var.size
  local ilen = min(size, have)
  local sub = parent:add(h.hf, tvb(off, ilen))
  sub:set_text(h.title .. " [uet-facts " .. h.ref .. "]")
  local v, items, pos = {}, {}, {}
  for _, d in ipairs(var.fields) do
    if d.b + d.l > have then break end
    local k = d.k
    if k ~= K_RSVD then
      local r = tvb(off + d.b, d.l)
      pos[d.n] = r
      if k == K_UINT or k == K_FLAG then
        v[d.n] = getv(raw, d.b, d.l, d.p, d.w)
        items[d.n] = sub:add(d.f, r)
      elseif k == K_INT or k == K_NUMX then
        local x = getv(raw, d.b, d.l, d.p, d.w)
        if d.s and x >= POW2[d.w - 1] then x = x - POW2[d.w] end
        v[d.n] = x
        if k == K_INT then items[d.n] = sub:add(d.f, r) else items[d.n] = sub:add(d.f, r, x) end
      elseif k == K_U64 or k == K_BYTES then
        items[d.n] = sub:add(d.f, r)
      elseif k == K_U64X then
        local x = r:uint64():band(UInt64.new(d.mlo, d.mhi)):rshift(d.p)
        items[d.n] = sub:add(d.f, r, x)
      elseif k == K_BYTESX then
        items[d.n] = sub:add(d.f, r, masked_bytes(raw, d.b, d.l, d.p, d.w))
      end
    end
  end
  local function derive()
    for _, dv in ipairs(h.derived) do
      local a, b = v[dv.a], v[dv.b]
      if a ~= nil and b ~= nil then
        local x
        if dv.neg then x = (a - b) % dv.m else x = (a + b) % dv.m end
        v[dv.n] = x
        local it = sub:add(dv.f, pos[dv.b], x)
        it:set_generated()
        items[dv.n] = it
      end
    end
  end
  if have < size then
    derive()
    report(sub, E.truncated, tvb(off, ilen), fmt("%s: truncated: needs %d bytes, %d left", h.key, size, have), probs)
    return nil, size, sub, v, items
  end
  for _, d in ipairs(var.fields) do
    if d.k == K_RSVD then
      local hx = bits_hex(raw, d.b, d.l, d.p, d.w)
      if hx then
        report(sub, E.reserved, tvb(off + d.b, d.l),
               fmt("%s: reserved bits %d-%d are set (0x%s)", h.key, d.o, d.o + d.w - 1, hx), probs)
      end
    end
  end
  for _, d in ipairs(var.fields) do
    if d.e then
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
  end
  derive()
  return v, size, sub, v, items
end

-- the innermost instance of a field that lies before the given data-source offset
local fx = {
  ip = Field.new("ip"), ipv6 = Field.new("ipv6"), udp = Field.new("udp"), frame = Field.new("frame"),
  ip_src = Field.new("ip.src"), ip_dst = Field.new("ip.dst"),
  ip6_src = Field.new("ipv6.src"), ip6_dst = Field.new("ipv6.dst"),
  dscp4 = Field.new("ip.dsfield.dscp"), dscp6 = Field.new("ipv6.tclass.dscp"),
}
local function last_before(f, limit)
  local best
  for _, fi in ipairs({ f() }) do
    if fi.offset < limit and (best == nil or fi.offset > best.offset) then best = fi end
  end
  return best
end

-- CRC-32C seed of the trailer context (design.md "Defaults", uet/wire/trailer.py), nil if unknown
local function crc_seed(tvb, ip_mode)
  local lim = tvb:offset()
  local s4, s6 = last_before(fx.ip_src, lim), last_before(fx.ip6_src, lim)
  local src, dst
  if s4 and (s6 == nil or s4.offset > s6.offset) then
    src, dst = s4, last_before(fx.ip_dst, lim)
  elseif s6 then
    src, dst = s6, last_before(fx.ip6_dst, lim)
  end
  if src == nil or dst == nil then return nil end
  local crc = crc_update(T32C, 0, src.range:raw() .. dst.range:raw())
  if not ip_mode then
    local u = last_before(fx.udp, lim)
    if u == nil or u.len < 8 then return nil end
    crc = crc_update(T32C, crc, u.range:raw(0, 6) .. "\0\0")
  end
  return crc
end

local function dscp_of(tvb)
  local lim = tvb:offset()
  local d4, d6 = last_before(fx.dscp4, lim), last_before(fx.dscp6, lim)
  if d4 and (d6 == nil or d4.offset > d6.offset) then return d4.value end
  if d6 then return d6.value end
  return nil
end

local function sym(h, field, x)
  for _, var in ipairs(h.vars) do
    for _, d in ipairs(var.fields) do
      if d.n == field and d.e then return d.e[x] end
    end
  end
  return nil
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
