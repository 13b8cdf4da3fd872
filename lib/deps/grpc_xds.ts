/** The grpc-js xDS client (tests, demo). Load lazily. */
export * from "npm:@grpc/grpc-js-xds@1.14.1";
