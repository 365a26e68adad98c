--! Hand-written part of the dissector written by `uet wireshark` (uet/wireshark/lua.py), copied
--! verbatim after uet_chain.lua: the RoCEv2 additions (every header from the schema, ICRC check,
--! AETH syndrome in words) run after Wireshark's own RoCEv2 dissector on UDP 4791. Lines starting
--! with "--!" are notes about this file and are not copied into the output.
-- RoCEv2 additions ----------------------------------------------------------------------------

local function aeth_syndrome_name(s)
  local kind, low = floor(s / 32), s % 32
  if kind == 0 then
    if low == 0x1F then return "ACK(credits=unlimited)" end
    return fmt("ACK(credits=%d)", low)
  elseif kind == 1 then
    return fmt("RNR_NAK(timer=%d)", low)
  elseif kind == 3 then
    local c = VS.aeth_nak[low]
    if c then return "NAK(" .. c .. ")" end
    return fmt("NAK(0x%02X)", low)
  end
  return fmt("RESERVED(0x%02X)", s)
end

-- ICRC over the IP packet (IP header to the end of the pad), facts G.6 / uet.native.roce_icrc
local function roce_icrc(s)
  if #s == 0 then return nil, "ICRC: empty packet" end
  local b0 = sbyte(s, 1)
  local version = floor(b0 / 16)
  local head
  local udp
  if version == 4 then
    local ihl = (b0 % 16) * 4
    if ihl < 20 then return nil, fmt("ICRC: IPv4 IHL %d is below 5", floor(ihl / 4)) end
    if #s < ihl + 8 + 12 then return nil, "ICRC: packet too short for IPv4+UDP+BTH" end
    udp = ihl
    head = { sbyte(s, 1, udp + 20) }
    head[2] = 0xFF; head[9] = 0xFF; head[11] = 0xFF; head[12] = 0xFF
  elseif version == 6 then
    if #s < 40 + 8 + 12 then return nil, "ICRC: packet too short for IPv6+UDP+BTH" end
    udp = 40
    head = { sbyte(s, 1, udp + 20) }
    head[1] = head[1] - head[1] % 16 + 15
    head[2] = 0xFF; head[3] = 0xFF; head[4] = 0xFF; head[8] = 0xFF
  else
    return nil, fmt("ICRC: unknown IP version %d", version)
  end
  head[udp + 7] = 0xFF; head[udp + 8] = 0xFF
  head[udp + 13] = 0xFF
  local hs = {}
  for i = 1, #head do hs[i] = schar(head[i]) end
  local crc = crc_update(T32, 0, "\255\255\255\255\255\255\255\255" .. table.concat(hs))
  return crc_update(T32, crc, s:sub(udp + 21)), nil
end

local builtin_roce = udp_table:get_dissector(ROCE_UDP_PORT)

local function dissect_roce_additions(tvb, pinfo, root)
  local n = tvb:len()
  local top = root:add(proto_roce, tvb())
  top:set_text("RoCEv2 (uet schema): headers, CNP, ICRC")
  local probs = {}
  local endp = n - 4
  local icrc_value, icrc_ok, icrc_computed = nil, nil, nil
  if endp >= 0 then
    icrc_value = tvb(endp, 4):le_uint()
    local lim = tvb:offset()
    local i4, i6 = last_before(fx.ip, lim), last_before(fx.ipv6, lim)
    local ipfi = i4
    if i6 and (i4 == nil or i6.offset > i4.offset) then ipfi = i6 end
    local fr = fx.frame()
    -- the IP packet from the frame's bytes (not for reassembled data, whose offsets differ)
    if ipfi and fr and lim + endp <= fr.len and ipfi.offset < lim then
      local s = fr.range:raw(ipfi.offset, lim + endp - ipfi.offset)
      local c, err = roce_icrc(s)
      if c then
        icrc_computed = c
        icrc_ok = (c == icrc_value)
      else
        report(top, REF.icrc, nil, "icrc: not computed: " .. err, probs)
      end
    end
  end
  local body = max(endp, 0)
  local off = 0
  local bth, sz = add_header(H["roce.bth"], tvb, 0, body, top, REF, probs)
  local text = nil
  if bth then
    off = sz
    local exts = ROCE_EXT[bth.opcode]
    if exts == nil then
      report(top, REF.protocol, nil, fmt("roce.bth: opcode 0x%02x: extension headers not decoded", bth.opcode), probs)
      exts = {}
    end
    local ok = true
    for _, eh in ipairs(exts) do
      local v, esz, esub = add_header(eh, tvb, off, body, top, REF, probs)
      if v == nil then ok = false break end
      if eh.key == "roce.aeth" then
        esub:add(F["roce:aeth.syndrome_name"], tvb(off, 1), aeth_syndrome_name(v.syndrome)):set_generated()
      end
      off = off + esz
    end
    if ok then
      local payload_len = body - off
      top:add(F["roce:payload_len"], tvb(off, 0), payload_len):set_generated()
      if bth.pad_cnt > payload_len then
        report(top, REF.protocol, nil, fmt("roce.bth: pad_cnt %d exceeds the %d bytes left", bth.pad_cnt, payload_len), probs)
      end
    end
    if bth.opcode == CNP_OPCODE then
      text = fmt("RoCEv2 CNP QP=0x%06X%s", bth.dest_qp or 0, bth.becn == 1 and " BECN" or "")
    end
  end
  if icrc_value ~= nil then
    local ii = top:add_le(F["roce:icrc.value"], tvb(endp, 4))
    if icrc_ok ~= nil then
      top:add(F["roce:icrc.ok"], tvb(endp, 4), icrc_ok):set_generated()
      if not icrc_ok then
        report(ii, REF.bad_icrc, nil, fmt("icrc: mismatch: carries 0x%08x, computed 0x%08x", icrc_value, icrc_computed), probs)
      end
    end
  end
  if text then pinfo.cols.info = text end
  if icrc_ok == false then pinfo.cols.info:append(" [bad ICRC]") end
end

function proto_roce.dissector(tvb, pinfo, tree)
  local ok, err = true, nil
  local dport = pinfo.dst_port  -- read first: the InfiniBand dissector sets the ports to QPs
  if builtin_roce then
    ok, err = pcall(function() builtin_roce:call(tvb, pinfo, tree) end)
  end
  if dport == ROCE_UDP_PORT then
    dissect_roce_additions(tvb, pinfo, tree)
  end
  if not ok then
    tree:add_proto_expert_info(REF.builtin, "built-in RoCEv2 dissector: " .. tostring(err))
  end
  return tvb:len()
end
udp_table:add(ROCE_UDP_PORT, proto_roce)
