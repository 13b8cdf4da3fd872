/**
 * Declarative spec schemas of today's security API (`security.istio.io/v1beta1` and `/v1`, ours
 * `security.mesh.io/...`): PeerAuthentication, AuthorizationPolicy and RequestAuthentication.
 * Field names as in the reference system's protos (lowerCamelCase JSON form).
 * @module
 */
import {
  any,
  arr,
  bool,
  duration,
  enumOf,
  labels,
  map,
  obj,
  type ObjectSchema,
  str,
} from "./dsl.ts";
import { checkIpOrCidr, quote } from "./values.ts";

/** `selector: {matchLabels}` (the reference system's WorkloadSelector). */
const workloadSelector = obj({ matchLabels: labels() });

/** Peer mTLS modes of a PeerAuthentication (`UNSET` inherits from the parent scope). */
export const PEER_MTLS_MODES: readonly string[] = Object.freeze([
  "UNSET",
  "DISABLE",
  "PERMISSIVE",
  "STRICT",
]);

const peerMtls = obj({ mode: enumOf(PEER_MTLS_MODES) });

function checkPortKey(k: string): string | undefined {
  const n = Number(k);
  return /^\d+$/.test(k) && n >= 1 && n <= 65535
    ? undefined
    : `invalid port ${quote(k)}: must be a number between 1 and 65535`;
}

/** security.mesh.io/v1beta1 PeerAuthentication. */
export const peerAuthenticationSpec: ObjectSchema = obj({
  selector: workloadSelector,
  mtls: peerMtls,
  portLevelMtls: map(peerMtls, { checkKey: checkPortKey }),
}, {
  check: (v, path, out) => {
    const ports = v.portLevelMtls as Record<string, unknown> | undefined;
    const sel = v.selector as { matchLabels?: Record<string, unknown> } | undefined;
    if (
      ports && Object.keys(ports).length > 0 &&
      Object.keys(sel?.matchLabels ?? {}).length === 0
    ) {
      out.push({
        path: `${path}.portLevelMtls`,
        reason: "needs a workload selector (selector.matchLabels)",
      });
    }
  },
});

const cidrList = arr(str({ check: checkIpOrCidr }));

function checkPortString(s: string): string | undefined {
  return checkPortKey(s);
}

function checkMethod(s: string): string | undefined {
  return s.length ? undefined : "must not be empty";
}

const source = obj({
  principals: arr(str()),
  notPrincipals: arr(str()),
  requestPrincipals: arr(str()),
  notRequestPrincipals: arr(str()),
  namespaces: arr(str()),
  notNamespaces: arr(str()),
  ipBlocks: cidrList,
  notIpBlocks: cidrList,
  remoteIpBlocks: cidrList,
  notRemoteIpBlocks: cidrList,
});

const operation = obj({
  hosts: arr(str()),
  notHosts: arr(str()),
  ports: arr(str({ check: checkPortString })),
  notPorts: arr(str({ check: checkPortString })),
  methods: arr(str({ check: checkMethod })),
  notMethods: arr(str({ check: checkMethod })),
  paths: arr(str()),
  notPaths: arr(str()),
});

/** Condition keys of an AuthorizationPolicy `when` (a `[name]` suffix where one is shown). */
export const CONDITION_KEYS: readonly string[] = Object.freeze([
  "request.headers[]",
  "source.ip",
  "remote.ip",
  "source.namespace",
  "source.principal",
  "request.auth.principal",
  "request.auth.audiences",
  "request.auth.presenter",
  "request.auth.claims[]",
  "destination.ip",
  "destination.port",
  "connection.sni",
]);

function checkConditionKey(k: string): string | undefined {
  const bracket = /^(request\.headers|request\.auth\.claims)\[(.+)\]$/.exec(k);
  if (bracket) return undefined;
  if (CONDITION_KEYS.includes(k) && !k.endsWith("[]")) return undefined;
  return `unknown condition key ${quote(k)}: use one of ${
    CONDITION_KEYS.map((c) => c.endsWith("[]") ? c.slice(0, -2) + "[<name>]" : c).join(", ")
  }`;
}

const condition = obj({
  key: str({ check: checkConditionKey }),
  values: arr(str()),
  notValues: arr(str()),
}, {
  required: ["key"],
  check: (v, path, out) => {
    const n = (x: unknown) => Array.isArray(x) ? x.length : 0;
    if (n(v.values) === 0 && n(v.notValues) === 0) {
      out.push({ path, reason: "a condition needs values or notValues" });
    }
  },
});

const rule = obj({
  from: arr(obj({ source }, { required: ["source"] })),
  to: arr(obj({ operation }, { required: ["operation"] })),
  when: arr(condition),
});

/** Actions of an AuthorizationPolicy. `CUSTOM` (an external authorizer) is not served. */
export const AUTHZ_ACTIONS: readonly string[] = Object.freeze(["ALLOW", "DENY", "AUDIT"]);

/** security.mesh.io/v1beta1 AuthorizationPolicy. */
export const authorizationPolicySpec: ObjectSchema = obj({
  selector: workloadSelector,
  targetRef: any({ object: true }),
  targetRefs: arr(any({ object: true })),
  action: enumOf([...AUTHZ_ACTIONS, "CUSTOM"]),
  rules: arr(rule),
  provider: obj({ name: str() }),
}, {
  check: (v, path, out) => {
    if (v.action === "CUSTOM") {
      out.push({
        path: `${path}.action`,
        reason:
          "CUSTOM (an external authorizer) is not supported by mesh: use ALLOW, DENY or AUDIT",
      });
    } else if (v.provider !== undefined) {
      out.push({
        path: `${path}.provider`,
        reason: "CUSTOM authorization (an external authorizer) is not supported by mesh",
      });
    }
    for (const f of ["targetRef", "targetRefs"]) {
      if (v[f] !== undefined) {
        out.push({
          path: `${path}.${f}`,
          reason: "is not supported by mesh (select workloads with selector.matchLabels)",
        });
      }
    }
  },
});

const jwtHeader = obj({ name: str(), prefix: str() }, { required: ["name"] });

function checkJwksUri(s: string): string | undefined {
  return /^https?:\/\/[^/]+/.test(s) ? undefined : `invalid URI ${quote(s)}: must be http(s)://`;
}

function checkJwks(s: string): string | undefined {
  try {
    const v = JSON.parse(s);
    return v && typeof v === "object" && Array.isArray(v.keys)
      ? undefined
      : 'must be a JSON Web Key Set ({"keys": [...]})';
  } catch {
    return "must be a JSON Web Key Set (not valid JSON)";
  }
}

/** One `jwtRules` entry. */
const jwtRule = obj({
  issuer: str({ check: (s) => s.length ? undefined : "must not be empty" }),
  audiences: arr(str()),
  jwksUri: str({ check: checkJwksUri }),
  jwks: str({ check: checkJwks }),
  fromHeaders: arr(jwtHeader),
  fromParams: arr(str()),
  fromCookies: arr(str()),
  outputPayloadToHeader: str(),
  forwardOriginalToken: bool(),
  outputClaimToHeaders: arr(obj({ header: str(), claim: str() }, {
    required: ["header", "claim"],
  })),
  timeout: duration(),
}, { required: ["issuer"], oneofs: [{ fields: ["jwksUri", "jwks"] }] });

/** security.mesh.io/v1beta1 RequestAuthentication. */
export const requestAuthenticationSpec: ObjectSchema = obj({
  selector: workloadSelector,
  jwtRules: arr(jwtRule),
});
