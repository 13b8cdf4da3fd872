/**
 * Today's security API objects behind the security golden files (test fixture, not a public
 * API): PeerAuthentication at mesh, namespace and workload scope, AuthorizationPolicy with
 * every action, RequestAuthentication.
 * @module
 */

import type { ConfigObject } from "../../model/types.ts";
import { configObject } from "./model.ts";

const sec = (kind: string, name: string, spec: unknown, namespace = "default"): ConfigObject =>
  configObject("security.mesh.io/v1beta1", kind, name, spec, namespace);

/** Mesh-wide STRICT (root namespace, no selector). */
export const PA_MESH_STRICT = sec("PeerAuthentication", "default", {
  mtls: { mode: "STRICT" },
}, "mesh-system");

/** Namespace default: PERMISSIVE. */
export const PA_NS_PERMISSIVE = sec("PeerAuthentication", "default", {
  mtls: { mode: "PERMISSIVE" },
});

/** world v1: DISABLE, but its TCP port 9000 STRICT and grpc 7070 UNSET (inherits PERMISSIVE). */
export const PA_WORLD_V1 = sec("PeerAuthentication", "world-v1", {
  selector: { matchLabels: { app: "world", version: "v1" } },
  mtls: { mode: "DISABLE" },
  portLevelMtls: { "9000": { mode: "STRICT" }, "7070": { mode: "UNSET" } },
});

/** hello: STRICT for the workload (wins over the namespace's PERMISSIVE). */
export const PA_HELLO_STRICT = sec("PeerAuthentication", "hello", {
  selector: { matchLabels: { app: "hello" } },
  mtls: { mode: "STRICT" },
});

/** A PeerAuthentication of another namespace: applies to nothing here. */
export const PA_OTHER_NS = sec("PeerAuthentication", "other", {
  mtls: { mode: "DISABLE" },
}, "other");

/** DENY `/admin*` to callers outside namespace default, and any call with header x-debug. */
export const AP_DENY_ADMIN = sec("AuthorizationPolicy", "deny-admin", {
  action: "DENY",
  rules: [
    {
      from: [{ source: { notNamespaces: ["default"] } }],
      to: [{ operation: { paths: ["/admin*"] } }],
    },
    { when: [{ key: "request.headers[X-Debug]", values: ["*"] }] },
  ],
});

/**
 * ALLOW hello: world's service account GET/HEAD `/api/*` on port 8080 when tenant acme; any
 * caller from 10.0.0.0/8 to `/healthz`; a JWT of issuer `https://issuer.example.com` with group
 * `admins` to anything but DELETE.
 */
export const AP_ALLOW_HELLO = sec("AuthorizationPolicy", "hello-allow", {
  selector: { matchLabels: { app: "hello" } },
  action: "ALLOW",
  rules: [
    {
      from: [{ source: { principals: ["cluster.local/ns/default/sa/world"] } }],
      to: [{ operation: { methods: ["GET", "HEAD"], paths: ["/api/*"], ports: ["8080"] } }],
      when: [{ key: "request.headers[x-tenant]", values: ["acme"] }],
    },
    {
      from: [{ source: { ipBlocks: ["10.0.0.0/8"] } }],
      to: [{ operation: { paths: ["/healthz"] } }],
    },
    {
      from: [{ source: { requestPrincipals: ["https://issuer.example.com/*"] } }],
      to: [{ operation: { notMethods: ["DELETE"] } }],
      when: [{ key: "request.auth.claims[groups]", values: ["admins"] }],
    },
  ],
});

/** ALLOW on the gRPC port: world may call `/mesh.demo.WhoAmI/Get`, `/mesh.demo.Admin/*` nobody. */
export const AP_ALLOW_GRPC = sec("AuthorizationPolicy", "whoami-callers", {
  selector: { matchLabels: { app: "hello" } },
  rules: [{
    from: [{ source: { principals: ["cluster.local/ns/default/sa/world"] } }],
    to: [{ operation: { paths: ["/mesh.demo.WhoAmI/Get"] } }],
  }],
});

/** AUDIT every POST (mesh-wide, root namespace). */
export const AP_AUDIT_POSTS = sec("AuthorizationPolicy", "audit-posts", {
  action: "AUDIT",
  rules: [{ to: [{ operation: { methods: ["POST"] } }] }],
}, "mesh-system");

/** An ALLOW policy for world only: not applied to hello. */
export const AP_WORLD_ONLY = sec("AuthorizationPolicy", "world-only", {
  selector: { matchLabels: { app: "world" } },
  rules: [{}],
});

/** JWTs of `https://issuer.example.com` (inline key set) read from `x-jwt`, forwarded. */
export const RA_HELLO = sec("RequestAuthentication", "hello-jwt", {
  selector: { matchLabels: { app: "hello" } },
  jwtRules: [
    {
      issuer: "https://issuer.example.com",
      audiences: ["hello"],
      jwks: '{"keys":[{"kty":"RSA","e":"AQAB","n":"xyz","kid":"k1"}]}',
      fromHeaders: [{ name: "x-jwt", prefix: "Bearer " }],
      forwardOriginalToken: true,
    },
    { issuer: "accounts.example.org", jwksUri: "https://keys.example.org/jwks.json" },
  ],
});

/** Every other source, operation and condition field, on hello (a corpus for the encoders). */
export const AP_EVERY_FIELD = sec("AuthorizationPolicy", "every-field", {
  selector: { matchLabels: { app: "hello" } },
  action: "DENY",
  rules: [{
    from: [
      {
        source: {
          notPrincipals: ["*/sa/hello"],
          notRequestPrincipals: ["https://bad.example.com/*"],
          namespaces: ["prod-*"],
          notIpBlocks: ["192.168.0.0/16"],
          remoteIpBlocks: ["203.0.113.7", "2001:db8::/32"],
          notRemoteIpBlocks: ["203.0.113.0/24"],
        },
      },
      { source: { notNamespaces: ["*"] } },
    ],
    to: [{
      operation: {
        hosts: ["*.example.com", "hello"],
        notHosts: ["admin.example.com"],
        notPorts: ["9000"],
        notPaths: ["/public*"],
        methods: ["*"],
      },
    }],
    when: [
      { key: "destination.ip", values: ["10.0.1.1/32"] },
      { key: "connection.sni", values: ["*.svc.cluster.local"] },
      { key: "destination.port", notValues: ["15000"] },
      { key: "remote.ip", values: ["10.9.0.0/16"] },
      { key: "source.namespace", values: ["default"] },
      { key: "source.ip", notValues: ["10.0.0.1"] },
      { key: "request.auth.audiences", values: ["hello"] },
      { key: "request.auth.presenter", values: ["web-*"] },
      { key: "request.auth.principal", values: ["https://issuer.example.com/alice"] },
      { key: "request.auth.claims[realm][roles]", values: ["admin"] },
    ],
  }],
});

/** The remaining jwtRules fields. */
export const RA_EVERY_FIELD = sec("RequestAuthentication", "every-field", {
  jwtRules: [{
    issuer: "https://other.example.com",
    jwksUri: "http://keys.default.svc.cluster.local:8080/jwks",
    fromParams: ["access_token"],
    fromCookies: ["session-jwt"],
    outputPayloadToHeader: "x-jwt-payload",
    outputClaimToHeaders: [{ header: "x-sub", claim: "sub" }],
    timeout: "1.5s",
  }],
});
