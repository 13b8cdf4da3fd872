/** .proto loading for gRPC (load lazily). */
export * from "npm:@grpc/proto-loader@0.8.1";
