--! Hand-written part of the dissector written by `uet wireshark` (uet/wireshark/lua.py), copied
--! verbatim after roce_additions.lua: the CSIG congestion-signalling tag (facts E.4, layout
--! uet/cms/csig.py C1) on its EtherType, mirroring the CSIG step of uet/capture/frame.py. The tag's
--! fields come from the schema (H["csig"], read by add_header); what follows the tag goes to
--! Wireshark's "ethertype" table, as after an 802.1Q tag. Lines starting with "--!" are notes about
--! this file and are not copied into the output.
-- CSIG tag -------------------------------------------------------------------------------------

local CEF = {
  truncated = ProtoExpert.new(CN .. ".expert.truncated", "truncated tag", expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new(CN .. ".expert.reserved", "reserved bit set", expert.group.PROTOCOL, expert.severity.WARN),
  unknown = ProtoExpert.new(CN .. ".expert.unknown_value", "unknown value", expert.group.PROTOCOL, expert.severity.WARN),
}
proto_csig.experts = { CEF.truncated, CEF.reserved, CEF.unknown }

-- E.4 fixes no EtherType for the tag: the default is the generator's (uet/cms/csig.py), and a
-- preference, like `uet decode --csig-ethertype`.
proto_csig.prefs.ethertype = Pref.uint("EtherType", CSIG_ETHERTYPE,
  "EtherType (TPID) of the CSIG compact tag; facts E.4 fixes none (uet decode --csig-ethertype)")

local ethertype_table = DissectorTable.get("ethertype")

function proto_csig.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  -- the tag's problems are the ones uet decode reports (uet/capture/frame.py)
  local v, sz, sub = add_header(H["csig"], tvb, 0, n, tree, CEF, nil)
  if v == nil then
    pinfo.cols.protocol = "CSIG"
    pinfo.cols.info = "CSIG tag [truncated]"
    return n
  end
  if v.r ~= 0 then
    -- C1: r is reserved; a receiver counts a tag with r set and ignores it, the decoder shows it
    report(sub, CEF.reserved, tvb(1, 1), "csig: reserved bit r is set (E.4): a receiver ignores this tag", nil)
  end
  sub:append_text(fmt(": %s s=%d lm=%d%s", name_or_num(VS.csig_type, v.t), v.s, v.lm,
                      v.d == 1 and " do-not-update" or ""))
  if n > sz then
    -- DissectorTable:try hands an EtherType nobody registered to the data dissector
    ethertype_table:try(v.ethertype, tvb(sz):tvb(), pinfo, tree)
  end
  return n
end

local register_csig = preference_registrar("ethertype", proto_csig,
  function() return proto_csig.prefs.ethertype end)
function proto_csig.prefs_changed()
  register_csig()
end
register_csig()
