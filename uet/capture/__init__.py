"""Capture files: reading pcap/pcapng frames and decoding them into the ``uet decode`` JSON."""
