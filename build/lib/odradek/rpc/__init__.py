"""gRPC contracts between controllers and brokers: the `.proto` files and, generated from
them by the build (see codegen.py), their protobuf and gRPC modules."""
