/** X.509 certificates. reflect-metadata must load first. Load lazily. */
import "npm:reflect-metadata@0.2.2";
export * from "npm:@peculiar/x509@2.2.0";
