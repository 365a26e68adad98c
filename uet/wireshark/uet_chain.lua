--! Hand-written part of the dissector written by `uet wireshark` (uet/wireshark/lua.py), copied
--! verbatim after runtime.lua: the UET packet chain (mirrors uet/wire/packet.py), the Info column
--! summary and the UDP / IP protocol registration. Lines starting with "--!" are notes about this
--! file and are not copied into the output.
-- D.7: a SES response header's opcode that is a request opcode (D.1) and no response opcode;
-- mirrors response_opcode_problem() in uet/wire/packet.py (called only for undefined values)
local function response_opcode_problem(key, name, x)
  if name ~= "opcode" or VS.rsp_opcode[x] ~= nil or REQUEST_OPCODE_NAMES[x] == nil then return nil end
  return fmt("%s: opcode = %d (0x%X) is the request opcode %s (D.1), not a response opcode (D.7)",
             key, x, x, REQUEST_OPCODE_NAMES[x])
end

-- Info column summary of a UET packet
local function uet_summary(ptype, pds, ses, sesh, ext, exth)
  local t = {}
  t[#t + 1] = VS.pds_type[ptype] or fmt("TYPE_%d", ptype)
  if pds then
    if ptype == 2 or ptype == 3 or ptype == 13 or ptype == 14 then
      if pds.psn then t[#t + 1] = fmt("PSN=%d", pds.psn) end
      if pds.syn == 1 then t[#t + 1] = "SYN" end
    elseif ptype == 4 or ptype == 5 then
      if pds.pkt_id then t[#t + 1] = fmt("PKT_ID=0x%08X", pds.pkt_id) end
    elseif ptype == 7 or ptype == 8 or ptype == 9 then
      if pds.cack_psn then t[#t + 1] = fmt("CACK=%d", pds.cack_psn) end
      if pds.p == 1 then t[#t + 1] = "PROBE" elseif pds.ack_psn then t[#t + 1] = fmt("ACK=%d", pds.ack_psn) end
      if pds.sack_base_psn then t[#t + 1] = fmt("SACK base=%d", pds.sack_base_psn) end
      if pds.req and pds.req ~= 0 then t[#t + 1] = "REQ=" .. name_or_num(VS.ack_req, pds.req) end
    elseif ptype == 10 or ptype == 12 then
      if pds.nack_code then t[#t + 1] = name_or_num(VS.nack_code, pds.nack_code) end
      if pds.nt == 1 and pds.pkt_id then t[#t + 1] = fmt("PKT_ID=0x%08X", pds.pkt_id)
      elseif pds.nack_psn then t[#t + 1] = fmt("PSN=%d", pds.nack_psn) end
    elseif ptype == 11 then
      if pds.ctl_type then t[#t + 1] = name_or_num(VS.ctl_type, pds.ctl_type) end
      if pds.psn then t[#t + 1] = fmt("PSN=%d", pds.psn) end
      if pds.syn == 1 then t[#t + 1] = "SYN" end
    end
    if pds.retx == 1 then t[#t + 1] = "RETX" end
  end
  if ses and ses.opcode then
    t[#t + 1] = sym(sesh, "opcode", ses.opcode) or fmt("OP_0x%02X", ses.opcode)
    if ses.return_code then t[#t + 1] = name_or_num(VS.return_code, ses.return_code) end
    if ses.som == 1 then t[#t + 1] = "SOM" end
    if ses.eom == 1 then t[#t + 1] = "EOM" end
  end
  if ext and ext.atomic_opcode then t[#t + 1] = "AMO=" .. name_or_num(VS.amo_opcode, ext.atomic_opcode) end
  return table.concat(t, " ")
end

-- The UET packet chain: [entropy] -> TSS | PDS -> SES (by next_hdr) -> SES extension (by opcode)
-- -> payload -> CRC-32C trailer; mirrors uet/wire/packet.py decode_uet().
-- The options (OPT) are read at load time and again by proto.prefs_changed, which Wireshark calls
-- after `-o` settings and every change in the preferences dialog: not once per packet.
local PROTOCOL_COLUMN = PN:upper()
-- the packet's bytes read into one string: more than the longest header chain (entropy, PDS, SES
-- and an extension: 4 + 40 + 44 + 36), less than a data packet
local RAW_HEAD = 256
local F_PAYLOAD_LEN, F_PAYLOAD, F_SACK_PSN = F["uet:payload_len"], F["uet:payload"], F["uet:pds.sack_bitmap.psn"]
local F_CRC_VALUE, F_CRC_OK, F_CRC_STATUS = F["uet:crc.value"], F["uet:crc.ok"], F["uet:crc.status"]

-- Trailer presence learned per sender (the preference trailer auto with check_crc off). A.3: a packet
-- without TSS ends with a CRC-32C trailer or with nothing, as its sender is set up: `uet` and the
-- reference provider send one, XDP2 sends none unless told to. Computing the CRC to tell costs more
-- than the rest of the dissection, so the first LEARN_PACKETS (8, runtime.lua) packets of a sender
-- are verified as with check_crc on (present exactly when the last 4 bytes verify, as `uet decode`);
-- once they all agree, its later packets take that verdict without a CRC (a trailer shown
-- Unverified, or none; both marked crc.learned), and a sender whose first packets disagree is
-- verified on every packet. A sender is its IP source address only: the UDP source port is the
-- entropy value (A.1), which changes from flow to flow (and with every path the sender sprays
-- onto), while the trailer setting is the sender's.
-- The verdict of each frame is kept by frame number: a revisit (pinfo.visited: the GUI's clicks,
-- tshark's second pass) reuses it, so no verdict depends on the order of visits.
-- Both tables are emptied by proto.init, which Wireshark calls before it reads a capture file (and
-- before it dissects them all again after a preference change).
local V_COMPUTED_YES, V_COMPUTED_NO, V_LEARNED_YES, V_LEARNED_NO = 1, 2, 3, 4
local F_CRC_LEARNED = F["uet:crc.learned"]
local senders, frame_verdicts = {}, {}  -- source address -> { n, yes, v }; frame number -> V_*
function proto.init()
  senders, frame_verdicts = {}, {}
end

-- the verdict this frame takes without a CRC (nil: compute it), its sender's state to count a
-- computed verdict in (nil when the sender is learnt or its first packets disagreed), and the frame
-- number to keep that verdict under (nil without an IP header: no CRC, and nothing kept, as in
-- tshark -2's first pass, which builds no tree for the field extractors; the verdict is then taken
-- when the frame is first dissected with its IP header, in order in the second pass).
local function known_verdict(pinfo, ipfi, ipv)
  local num = pinfo.number
  local v = frame_verdicts[num]
  if v ~= nil then return v, nil, nil end
  if ipfi == nil then return nil, nil, nil end
  local src
  if ipv == 4 then src = ipfi.range:raw(12, 4) else src = ipfi.range:raw(8, 16) end
  local st = senders[src]
  if st == nil then
    st = { n = 0, yes = 0, v = nil }
    senders[src] = st
  end
  if st.v ~= nil then
    frame_verdicts[num] = st.v
    return st.v, nil, nil
  end
  if st.n >= LEARN_PACKETS then return nil, nil, num end
  return nil, st, num
end

-- keep the computed verdict of frame num and count it for its sender st
local function record_verdict(num, st, present)
  if num == nil then return end
  frame_verdicts[num] = present and V_COMPUTED_YES or V_COMPUTED_NO
  if st == nil then return end
  st.n = st.n + 1
  if present then st.yes = st.yes + 1 end
  if st.n == LEARN_PACKETS then
    if st.yes == st.n then st.v = V_LEARNED_YES elseif st.yes == 0 then st.v = V_LEARNED_NO end
  end
end

local function dissect_uet(tvb, pinfo, root, ip_mode)
  local n = tvb:len()
  local cols = pinfo.cols
  cols.protocol = PROTOCOL_COLUMN
  local top = t_add(root, proto, tvb_range(tvb, 0, n))
  if REG_NOTE then add_generated(top, F["uet:note"], tvb(0, 0), REG_NOTE) end
  local praw = n > 0 and tvb_raw(tvb, 0, min(n, RAW_HEAD)) or ""
  local probs = {}
  local info = {}
  local off = 0
  if ip_mode then
    local ent, sz = add_header(H["entropy"], tvb, 0, n, top, EF, probs, nil, praw)
    if ent == nil then
      cols.info = "UET entropy header [truncated]"
      return n
    end
    off = sz
  end
  local endp = n
  local ipfi, ipv = innermost_ip(tvb:offset())
  local crc_value, crc_ok, crc_have, crc_msg = nil, nil, false, nil
  local crc_computed = nil
  local is_tss = off < n and floor(sbyte(praw, off + 1) / 8) == 1
  local mode = OPT.trailer
  local learn = mode == "auto" and not OPT.check_crc
  -- auto without check_crc: this frame's verdict (V_*), its sender's state, its number to keep a verdict under
  local verdict, sender, num = nil, nil, nil
  if is_tss then
    -- F: the 16-byte GCM tag replaces the CRC trailer; cut after the TSS header is read
  elseif mode ~= "none" and endp - off >= CRC_TRAILER_LEN then
    local carried = nil  -- read only to compute: the crc.value item reads its own bytes
    if learn then verdict, sender, num = known_verdict(pinfo, ipfi, ipv) end
    if verdict == V_LEARNED_YES or verdict == V_COMPUTED_YES then
      crc_have, crc_value = true, carried
      if verdict == V_COMPUTED_YES then crc_ok = true end
      endp = endp - CRC_TRAILER_LEN
    elseif verdict ~= nil then
      -- V_LEARNED_NO or V_COMPUTED_NO: no trailer
    elseif mode == "crc" and not OPT.check_crc then
      -- A.3: a trailer is expected; not computed unless check_crc is on
      crc_have, crc_value = true, carried
      endp = endp - CRC_TRAILER_LEN
    else
      carried = tvb(n - CRC_TRAILER_LEN, CRC_TRAILER_LEN):uint()
      local seed = crc_seed(tvb, ip_mode, ipfi, ipv)
      if seed ~= nil then crc_computed = crc_update(T32C, seed, tvb:raw(0, n - CRC_TRAILER_LEN)) end
      if mode == "crc" then
        crc_have, crc_value = true, carried
        endp = endp - CRC_TRAILER_LEN
        if crc_computed == nil then
          crc_msg = "crc: no IP context, trailer not verified"
        else
          crc_ok = (crc_computed == carried)
          if not crc_ok then
            crc_msg = fmt("crc: CRC-32C trailer mismatch: carries 0x%08x, computed 0x%08x", carried, crc_computed)
          end
        end
      elseif crc_computed == carried then
        crc_have, crc_value, crc_ok = true, carried, true
        endp = endp - CRC_TRAILER_LEN
      end
      record_verdict(num, sender, crc_have)
    end
  elseif mode == "crc" then
    crc_msg = "crc: packet too short to carry a CRC-32C trailer"
  end
  if crc_msg and not crc_have then report(top, EF.crc, nil, crc_msg, probs) end

  local payload_len = 0
  local ptype, pds, ses, sesh, ext, exth = nil, nil, nil, nil, nil, nil
  local tss = nil
  local pds_off, pds_items, pds_pos, pds_vals, ses_vals = 0, nil, nil, nil, nil
  local truncated, malformed = false, false
  repeat
    if off >= endp then
      report(top, EF.malformed, nil, "pds: empty UET packet", probs)
      malformed = true
      payload_len = 0
      break
    end
    ptype = floor(sbyte(praw, off + 1) / 8)
    if ptype == 1 then
      local v, sz, _, tv = add_header(H["tss"], tvb, off, endp, top, EF, probs, nil, praw)
      tss = tv
      truncated = (v == nil)
      if v then
        local after = endp - off - sz
        payload_len = max(after - TSS_ICV_LEN, 0)
        endp = n - min(after, TSS_ICV_LEN)
        if after < TSS_ICV_LEN then
          report(top, EF.malformed, nil,
                 fmt("tss: %d bytes after the header, fewer than the %d-byte ICV (F)", after, TSS_ICV_LEN), probs)
        end
        if payload_len > 0 then top:add(F["uet:encrypted"], tvb(off + sz, payload_len)) end
      else
        payload_len = 0
      end
      break
    end
    local h = PDS_BY_TYPE[ptype]
    if h == nil then
      top:add(F["uet:pds.type"], tvb(off, 1))
      local what = (ptype == 0) and "reserved" or "not assigned"
      report(top, EF.malformed, tvb(off, 1), fmt("pds: type %d is %s (B.1)", ptype, what), probs)
      malformed = true
      payload_len = endp - off
      break
    end
    local sz
    pds_off = off
    pds, sz, _, pds_vals, pds_items, pds_pos = add_header(h, tvb, off, endp, top, EF, probs, nil, praw)
    if pds == nil then
      payload_len = 0
      truncated = true
      break
    end
    off = off + sz
    if ptype == 4 and pds.m == 1 then
      report(top, EF.protocol, nil, "pds: M flag set on a RUDI request (defined for responses only, B.13)", probs)
    end
    local nh = 0
    if ptype ~= 11 then nh = pds.next_hdr or 0 end
    if nh ~= 0 then
      sesh = SES_BY_NEXT_HDR[nh]
      if sesh == nil then
        report(top, EF.malformed, nil, fmt("pds: next_hdr %d is reserved (B.2); the rest is not decoded", nh), probs)
        malformed = true
      else
        local ssz, ssub
        -- responses (next_hdr 4-6) are decoded here and nowhere else: the D.7 opcode check
        local unknown = nil
        if nh > 3 then unknown = response_opcode_problem end
        ses, ssz, ssub, ses_vals = add_header(sesh, tvb, off, endp, top, EF, probs, unknown, praw)
        if ses == nil then
          off = endp
          truncated = true
        else
          off = off + ssz
          if nh == 1 or nh == 2 or nh == 3 then
            local op = ses.opcode
            if (nh == 1 or nh == 2) and not (ses.som == 1 and ses.eom == 1) then
              report(ssub, EF.protocol, nil, sesh.key .. ": single-packet header without both SOM and EOM (D.4)", probs)
            end
            if op == 7 and ptype ~= 6 then
              report(ssub, EF.protocol, nil, "ses: DATAGRAM_SEND is only legal with UUD (C.8)", probs)
            end
            if ATOMIC_OPCODES[op] then
              local amo = nil
              if off < endp then amo = sbyte(praw, off + 1) or tvb(off, 1):uint() end
              local cswap = amo ~= nil and (CSWAP_AMO_OPCODES[amo] or (OPT.mswap_cswap_ext and amo == MSWAP_AMO_OPCODE))
              exth = cswap and H["ses.cswap"] or H["ses.atomic"]
            elseif RENDEZVOUS_OPCODES[op] and nh == 3 then
              exth = H["ses.rendezvous"]
            end
            if exth then
              local esz
              ext, esz = add_header(exth, tvb, off, endp, ssub, EF, probs, nil, praw)
              if ext == nil then off = endp; truncated = true else off = off + esz end
            end
          end
        end
      end
    end
    payload_len = max(endp - off, 0)
  until true

  -- SACK bitmap as PSNs (bit i = PSN sack_base_psn + i, bit 0 = LSB of the 64-bit field)
  local sack = pds and pds.sack_base_psn ~= nil and PDS_BY_TYPE[ptype].sack
  local r = sack and pds_pos.sack_bitmap
  if r then
    local base = pds.sack_base_psn
    local hi, lo = 0, 0
    for i = 1, 4 do hi = hi * 256 + sbyte(praw, pds_off + sack.b + i) end
    for i = 5, 8 do lo = lo * 256 + sbyte(praw, pds_off + sack.b + i) end
    local psns, count = {}, 0
    for i = 0, 63 do
      if i == 32 then lo = hi end
      local bit = lo % 2
      if bit == 1 then count = count + 1; psns[count] = (base + i) % 4294967296 end
      lo = (lo - bit) / 2  -- a float on Lua 5.4, exact: only its parity is read
    end
    local st = add_generated(pds_items.sack_bitmap, F_SACK_PSN, r, count)
    t_set_text(st, fmt("SACK bitmap: %d PSNs received", count))
    for i = 1, count do add_generated(st, F_SACK_PSN, r, psns[i]) end
  end

  local end_range = tvb_range(tvb, off < n and off or n, 0)  -- where the headers end
  add_generated(top, F_PAYLOAD_LEN, end_range, payload_len)
  if payload_len > 0 and off < endp and not tss then t_add(top, F_PAYLOAD, tvb_range(tvb, off, payload_len)) end
  if is_tss and n - endp > 0 then top:add(F["uet:icv"], tvb(endp, n - endp)) end
  if crc_have then
    local cr = tvb_range(tvb, n - CRC_TRAILER_LEN, CRC_TRAILER_LEN)
    local ci = t_add(top, F_CRC_VALUE, cr)
    local status = CRC_UNVERIFIED
    if crc_ok ~= nil then
      add_generated(top, F_CRC_OK, cr, crc_ok)
      status = crc_ok and CRC_GOOD or CRC_BAD
    end
    add_generated(top, F_CRC_STATUS, cr, status)
    if crc_ok == false then
      report(ci, EF.bad_crc, nil, crc_msg, probs)
      info[#info + 1] = "[bad CRC]"
    elseif crc_msg then
      report(ci, EF.crc, nil, crc_msg, probs)
    end
  end
  if verdict == V_LEARNED_YES or verdict == V_LEARNED_NO then
    -- one item for both: the trailer's items tell whether there is one
    add_generated(top, F_CRC_LEARNED, end_range, true)
  end
  local dscp = dscp_of(ipfi, ipv)
  if dscp == 11 then
    report(top, EF.trimmed, nil, "DSCP 11: packet trimmed by the fabric (C.6)", nil)
    info[#info + 1] = "[trimmed]"
  end

  local text
  if tss then
    text = fmt("TSS SDI=0x%06X AN=%d [encrypted]", tss.sdi or 0, tss.an or 0)
  elseif ptype ~= nil then
    text = uet_summary(ptype, pds_vals, ses_vals, sesh, ext, exth)
  else
    text = "UET (empty)"
  end
  if truncated then
    text = text .. " [truncated]"
  elseif malformed then
    text = text .. " [malformed]"
  end
  if #info > 0 then text = text .. " " .. table.concat(info, " ") end
  cols.info = text
  top:append_text(", " .. text)
  return n
end

function proto.dissector(tvb, pinfo, tree)
  return dissect_uet(tvb, pinfo, tree, false)
end

function proto_ip.dissector(tvb, pinfo, tree)
  return dissect_uet(tvb, pinfo, tree, true)
end

local udp_table = DissectorTable.get("udp.port")
local current_port = 0
local function register_port()
  local p = proto.prefs.udp_port
  if p == current_port then return end
  if current_port ~= 0 then udp_table:remove(current_port, proto) end
  current_port = p
  if p ~= 0 then udp_table:add(p, proto) end
end
function proto.prefs_changed()
  read_prefs()
  register_port()
end
register_port()
pcall(function() udp_table:add_for_decode_as(proto) end)
-- UDP gives a frame to the lower port's dissector first, and the UET entropy (the source port) can
-- be any port: a heuristic that claims frames to or from the UET port lets the preference
-- udp.try_heuristic_first:TRUE win those back.
proto:register_heuristic("udp", function(tvb, pinfo, tree)
  if current_port ~= 0 and (pinfo.dst_port == current_port or pinfo.src_port == current_port) then
    dissect_uet(tvb, pinfo, tree, false)
    return true
  end
  return false
end)
DissectorTable.get("ip.proto"):add(UET_IP_PROTO, proto_ip)
