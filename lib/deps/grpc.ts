/** gRPC (load lazily: it is heavy). */
export * from "npm:@grpc/grpc-js@1.14.7";
