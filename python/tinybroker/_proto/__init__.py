"""Generated from proto/tinybroker.proto at build time (gen_proto.py)."""
