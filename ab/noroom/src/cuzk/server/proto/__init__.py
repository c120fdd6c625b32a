"""Generated protobuf and gRPC stubs for cuzk.v1 (see cuzk.server.gen_proto)."""
