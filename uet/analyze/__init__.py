"""``uet analyze``: a capture read as a conversation (issue 17).

:mod:`.intake` finds the UET frames of a pcap/pcapng file (any UDP port) with the decoder of
``uet decode``; :mod:`.conversation` groups them into PDCs and follows each PDC through what the
capture shows (retransmissions judged needed or spurious, NACKs and the requests they answer, trims,
ACKs that claim what never arrived, ECN, rule violations with their facts rows);
:mod:`.report` renders that as text or one JSON object; :mod:`.ladder` draws one PDC as a ladder
diagram (text or SVG); :mod:`.command` is the subcommand.
"""
