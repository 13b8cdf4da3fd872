/**
 * Declarative spec schemas of the configuration types (field names as in the reference
 * system's protos, lowerCamelCase JSON form).
 * @module
 */
import {
  any,
  arr,
  bool,
  type Check,
  duration,
  enumOf,
  host,
  int,
  isUnset,
  keyPath,
  labels,
  map,
  num,
  obj,
  type ObjectSchema,
  percent,
  port,
  type Schema,
  str,
  stringMap,
} from "./dsl.ts";
import { checkHost, checkIpOrCidr, checkNamespace, isDns1123Label, isIp, quote } from "./values.ts";

const MS = 1;

function checkRegex(s: string): string | undefined {
  try {
    new RegExp(s);
    return undefined;
  } catch (e) {
    return `invalid regular expression ${quote(s)}: ${(e as Error).message}`;
  }
}

function checkDnsLabel(what: string) {
  return (s: string): string | undefined =>
    isDns1123Label(s)
      ? undefined
      : `invalid ${what} ${
        quote(s)
      }: must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)`;
}

const regex = () => str({ check: checkRegex });

/** StringMatch: oneof exact | prefix | regex. */
export const stringMatch: ObjectSchema = obj(
  { exact: str(), prefix: str(), regex: regex() },
  { oneofs: [{ fields: ["exact", "prefix", "regex"], required: true }] },
);

/** PortSelector: oneof number | name. */
export const portSelector: ObjectSchema = obj(
  { number: port(), name: str() },
  { oneofs: [{ fields: ["number", "name"], required: true }] },
);

/** A weight list check: with more than one destination, weights must sum to 100. */
function weightsSumTo100(what: string): Check<unknown[]> {
  return (routes, path, out) => {
    if (routes.length <= 1) return;
    const sum = routes.reduce<number>(
      (acc, r) => acc + (Number((r as Record<string, unknown>).weight) || 0),
      0,
    );
    if (sum !== 100) {
      out.push({
        path,
        reason:
          `${what} weights must sum to 100 when there is more than one destination, got ${sum}`,
      });
    }
  };
}

function uniqueBy(field: string, what: string): Check<unknown[]> {
  return (items, path, out) => {
    const seen = new Map<string, number>();
    items.forEach((it, i) => {
      const v = (it as Record<string, unknown>)[field];
      if (v === undefined || v === null) return;
      const key = String(v);
      if (seen.has(key)) {
        out.push({
          path: `${path}[${i}].${field}`,
          reason: `duplicate ${what} ${quote(v)} (also at index ${seen.get(key)})`,
        });
      } else seen.set(key, i);
    });
  };
}

// ---- networking v1alpha3 ------------------------------------------------------------------------

const destination = obj(
  { host: host(), subset: str({ check: checkDnsLabel("subset name") }), port: portSelector },
  { required: ["host"] },
);

/** `headers`: request and response header manipulation (set, add, remove). */
const headerOperations = obj({ set: stringMap(), add: stringMap(), remove: arr(str()) });
const headers = obj({ request: headerOperations, response: headerOperations });

const destinationWeight = obj(
  { destination, weight: percent(), headers },
  { required: ["destination"] },
);

/** A namespace part (`ns/`) of a reference: a namespace name, `.` (the same) or `*` (any). */
function checkNamespacePart(ns: string, what: string): string | undefined {
  if (ns === "." || ns === "*") return undefined;
  return checkNamespace(ns) &&
    `invalid ${what} namespace ${quote(ns)}: want a namespace, "." or "*"`;
}

/** `mesh`, a Gateway name (short or FQDN), or `<namespace>/<name>`. */
const gatewayName = str({
  check: (s) => {
    if (s === "mesh") return undefined;
    const slash = s.indexOf("/");
    if (slash >= 0) {
      const bad = checkNamespace(s.slice(0, slash));
      if (bad) return `invalid gateway name ${quote(s)}: ${bad}`;
      s = s.slice(slash + 1);
    }
    return checkHost(s, false)?.replace("invalid host", "invalid gateway name");
  },
});

/** `exportTo`: namespaces a config is visible in (`.` its own, `*` all). */
const exportTo = () =>
  arr(str({
    check: (s) =>
      s === "." || s === "*" || s === "~" ? undefined : checkNamespace(s) &&
        `invalid exportTo ${quote(s)}: want a namespace, "." or "*"`,
  }));

/** `workloadSelector`: the workloads a config applies to. */
const workloadSelector = obj({ matchLabels: labels() });

const httpMatchRequest = obj({
  name: str(),
  uri: stringMatch,
  scheme: stringMatch,
  method: stringMatch,
  authority: stringMatch,
  headers: map(stringMatch),
  port: port(),
  sourceLabels: labels(),
  gateways: arr(gatewayName),
});

const uriAuthority = (what: string) =>
  obj({ uri: str(), authority: str() }, {
    check: (v, path, out) => {
      if (isUnset(v.uri) && isUnset(v.authority)) {
        out.push({ path, reason: `${what} must set uri, authority, or both` });
      }
    },
  });

const corsPolicy = obj({
  allowOrigin: arr(str()),
  allowOrigins: arr(stringMatch),
  allowMethods: arr(str()),
  allowHeaders: arr(str()),
  exposeHeaders: arr(str()),
  maxAge: duration({ min: 1 * MS }),
  allowCredentials: bool(),
});

/** `Percent`: a percentage 0-100, fractions allowed (`{value: 0.1}`). */
const fraction = obj({ value: num({ min: 0, max: 100 }) });

const httpFault = obj({
  delay: obj(
    {
      percent: percent(),
      percentage: fraction,
      fixedDelay: duration({ min: 1 * MS }),
      exponentialDelay: duration({ min: 1 * MS }),
    },
    { oneofs: [{ fields: ["fixedDelay", "exponentialDelay"], required: true }] },
  ),
  abort: obj(
    {
      percent: percent(),
      percentage: fraction,
      httpStatus: int({ min: 200, max: 599 }),
      grpcStatus: str(),
      http2Error: str(),
    },
    { oneofs: [{ fields: ["httpStatus", "grpcStatus", "http2Error"], required: true }] },
  ),
}, {
  check: (v, path, out) => {
    if (isUnset(v.delay) && isUnset(v.abort)) {
      out.push({ path, reason: "fault must set delay, abort, or both" });
    }
  },
});

const httpRoute = obj({
  name: str(),
  match: arr(httpMatchRequest),
  route: arr(destinationWeight, { check: weightsSumTo100("route") }),
  redirect: uriAuthority("redirect"),
  rewrite: uriAuthority("rewrite"),
  websocketUpgrade: bool(),
  timeout: duration({ min: 1 * MS }),
  retries: obj({
    attempts: int({ min: 0 }),
    perTryTimeout: duration({ min: 1 * MS }),
    retryOn: str(),
  }),
  fault: httpFault,
  mirror: destination,
  mirrorPercentage: fraction,
  corsPolicy,
  appendHeaders: stringMap(),
  headers,
  delegate: obj({ name: str(), namespace: str() }, { required: ["name"] }),
}, {
  check: (v, path, out) => {
    const has = (k: string) => !isUnset(v[k]);
    if (!has("route") && !has("redirect") && !has("delegate")) {
      out.push({ path, reason: "an HTTP route must set route, redirect or delegate" });
    }
    if (has("redirect")) {
      for (const k of ["route", "rewrite", "fault", "mirror"]) {
        if (has(k)) out.push({ path, reason: `an HTTP route cannot set both redirect and ${k}` });
      }
    }
  },
});

const l4Match = obj({
  destinationSubnet: str({ check: checkIpOrCidr }),
  port: port(),
  sourceSubnet: str({ check: checkIpOrCidr }),
  sourceLabels: labels(),
  gateways: arr(gatewayName),
});

const tcpRoute = obj({
  match: arr(l4Match),
  route: arr(destinationWeight, { check: weightsSumTo100("route") }),
}, { required: ["route"] });

const tlsRoute = obj({
  match: arr(
    obj({
      sniHosts: arr(host()),
      destinationSubnets: arr(str({ check: checkIpOrCidr })),
      port: port(),
      sourceLabels: labels(),
      gateways: arr(gatewayName),
    }, { required: ["sniHosts"] }),
  ),
  route: arr(destinationWeight, { check: weightsSumTo100("route") }),
}, { required: ["match"] });

/** networking.mesh.io/v1alpha3 VirtualService (also read as v1beta1 and v1). */
export const virtualServiceSpec: ObjectSchema = obj({
  hosts: arr(host()),
  gateways: arr(gatewayName),
  http: arr(httpRoute),
  tls: arr(tlsRoute),
  tcp: arr(tcpRoute),
  exportTo: exportTo(),
}, {
  check: (v, path, out) => {
    if (isUnset(v.http) && isUnset(v.tcp) && isUnset(v.tls)) {
      out.push({ path, reason: "a virtual service must set http, tls or tcp routes" });
    }
    const gateways = (v.gateways as string[] | undefined) ?? [];
    const hosts = (v.hosts as string[] | undefined) ?? [];
    // without hosts, a VirtualService is a delegate: http routes only, reached by `delegate`
    if (hosts.length === 0) {
      const delegates = ((v.http as Record<string, unknown>[] | undefined) ?? []).some((r) =>
        !isUnset(r.delegate)
      );
      if (gateways.length || !isUnset(v.tcp) || !isUnset(v.tls) || delegates) {
        out.push({
          path: `${path}.hosts`,
          reason: "is required (a VirtualService without hosts is a delegate: http routes " +
            "only, no gateways, no further delegate)",
        });
      }
    }
    const boundToMesh = gateways.length === 0 || gateways.includes("mesh");
    hosts.forEach((h, i) => {
      if (h === "*" && boundToMesh) {
        out.push({
          path: `${path}.hosts[${i}]`,
          reason: `wildcard host "*" is not allowed for virtual services bound to the mesh gateway`,
        });
      }
    });
  },
});

/** Port protocols both Gateway servers and ServiceEntry ports accept. */
const PORT_PROTOCOLS = ["HTTP", "HTTPS", "GRPC", "HTTP2", "MONGO", "REDIS", "TCP", "TLS"] as const;
/** Port protocols accepted by Gateway servers (case-insensitive). */
export const GATEWAY_PROTOCOLS = [...PORT_PROTOCOLS, "TCP-TLS"] as const;
/** Port protocols accepted by ServiceEntry ports (case-insensitive). */
export const SERVICE_PROTOCOLS = [...PORT_PROTOCOLS, "UDP"] as const;

const serverTls = obj({
  httpsRedirect: bool(),
  // not ISTIO_MUTUAL: a gateway cannot terminate it yet, and must not answer in plain text
  mode: enumOf(["PASSTHROUGH", "SIMPLE", "MUTUAL", "AUTO_PASSTHROUGH"]),
  serverCertificate: str(),
  privateKey: str(),
  caCertificates: str(),
  credentialName: str(),
  subjectAltNames: arr(str()),
  minProtocolVersion: enumOf(["TLS_AUTO", "TLSV1_0", "TLSV1_1", "TLSV1_2", "TLSV1_3"]),
  maxProtocolVersion: enumOf(["TLS_AUTO", "TLSV1_0", "TLSV1_1", "TLSV1_2", "TLSV1_3"]),
  cipherSuites: arr(str()),
}, {
  check: (v, path, out) => {
    // a credentialName names a secret holding the key, certificate (and CA) instead
    if ((v.mode === "SIMPLE" || v.mode === "MUTUAL") && isUnset(v.credentialName)) {
      for (const k of ["serverCertificate", "privateKey"]) {
        if (isUnset(v[k])) {
          out.push({ path: `${path}.${k}`, reason: `is required when mode is ${v.mode}` });
        }
      }
    }
    if (v.mode === "MUTUAL" && isUnset(v.caCertificates) && isUnset(v.credentialName)) {
      out.push({ path: `${path}.caCertificates`, reason: "is required when mode is MUTUAL" });
    }
  },
});

/** A Gateway server host: `host`, or `<namespace>/host` (the namespace may be `.` or `*`). */
const gatewayHost = str({
  check: (s) => {
    const slash = s.indexOf("/");
    if (slash < 0) return checkHost(s, true);
    return checkNamespacePart(s.slice(0, slash), "host") ?? checkHost(s.slice(slash + 1), true);
  },
});

const gatewayServer = obj({
  port: obj({
    number: port(),
    protocol: enumOf(GATEWAY_PROTOCOLS, { caseInsensitive: true }),
    name: str(),
    targetPort: port(),
  }, { required: ["number", "protocol"] }),
  hosts: arr(gatewayHost),
  tls: serverTls,
  name: str(),
  bind: str(),
}, { required: ["port", "hosts"] });

/** networking.mesh.io/v1alpha3 Gateway. */
export const gatewaySpec: ObjectSchema = obj({
  servers: arr(gatewayServer),
  selector: labels(),
}, { required: ["servers"] });

const loadBalancer = obj({
  simple: enumOf(["ROUND_ROBIN", "LEAST_CONN", "RANDOM", "PASSTHROUGH", "LEAST_REQUEST"]),
  consistentHash: obj({
    httpHeader: str(),
    httpHeaderName: str(),
    httpCookie: obj({ name: str(), path: str(), ttl: duration() }, { required: ["name"] }),
    useSourceIp: bool(),
    httpQueryParameterName: str(),
    minimumRingSize: int({ min: 0, max: 8_388_608, format: "uint32" }),
  }, {
    oneofs: [{
      fields: [
        "httpHeader",
        "httpHeaderName",
        "httpCookie",
        "useSourceIp",
        "httpQueryParameterName",
      ],
      required: true,
    }],
  }),
  localityLbSetting: any({ object: true }),
  warmupDurationSecs: duration(),
}, { oneofs: [{ fields: ["simple", "consistentHash"], required: false }] });

const nonNegative = () => int({ min: 0 });

const connectionPool = obj({
  tcp: obj({ maxConnections: nonNegative(), connectTimeout: duration({ min: 1 * MS }) }),
  http: obj({
    http1MaxPendingRequests: nonNegative(),
    http2MaxRequests: nonNegative(),
    maxRequestsPerConnection: nonNegative(),
    maxRetries: nonNegative(),
    idleTimeout: duration({ min: 1 * MS }),
    h2UpgradePolicy: enumOf(["DEFAULT", "DO_NOT_UPGRADE", "UPGRADE"]),
    useClientProtocol: bool(),
  }),
});

/**
 * Outlier detection: Istio 0.8's `http: {consecutiveErrors...}`, and today's fields at the top
 * level (`consecutive5xxErrors`, `consecutiveGatewayErrors`, `minHealthPercent`...).
 */
const outlierDetection = obj({
  http: obj({
    consecutiveErrors: nonNegative(),
    interval: duration({ min: 1 * MS }),
    baseEjectionTime: duration({ min: 1 * MS }),
    maxEjectionPercent: percent(),
  }),
  consecutiveErrors: nonNegative(),
  consecutive5xxErrors: nonNegative(),
  consecutiveGatewayErrors: nonNegative(),
  splitExternalLocalOriginErrors: bool(),
  consecutiveLocalOriginFailures: nonNegative(),
  interval: duration({ min: 1 * MS }),
  baseEjectionTime: duration({ min: 1 * MS }),
  maxEjectionPercent: percent(),
  minHealthPercent: percent(),
});

const clientTls = obj({
  mode: enumOf(["DISABLE", "SIMPLE", "MUTUAL", "ISTIO_MUTUAL"]),
  clientCertificate: str(),
  privateKey: str(),
  caCertificates: str(),
  subjectAltNames: arr(str()),
  sni: str(),
  credentialName: str(),
  insecureSkipVerify: bool(),
}, {
  check: (v, path, out) => {
    // with a credentialName, the files of the mounted Secret (lib/xds/generate/credentials.ts)
    if (v.mode === "MUTUAL" && isUnset(v.credentialName)) {
      for (const k of ["clientCertificate", "privateKey"]) {
        if (isUnset(v[k])) {
          out.push({ path: `${path}.${k}`, reason: "is required when mode is MUTUAL" });
        }
      }
    }
  },
});

const portTrafficPolicy = obj({
  port: portSelector,
  loadBalancer,
  connectionPool,
  outlierDetection,
  tls: clientTls,
}, { required: ["port"] });

const trafficPolicy = obj({
  loadBalancer,
  connectionPool,
  outlierDetection,
  tls: clientTls,
  portLevelSettings: arr(portTrafficPolicy),
});

const subset = obj({
  name: str({ check: checkDnsLabel("subset name") }),
  labels: labels(),
  trafficPolicy,
}, { required: ["name"] });

/** networking.mesh.io/v1alpha3 DestinationRule (also read as v1beta1 and v1). */
export const destinationRuleSpec: ObjectSchema = obj({
  host: host(),
  trafficPolicy,
  subsets: arr(subset, { check: uniqueBy("name", "subset name") }),
  exportTo: exportTo(),
  workloadSelector,
}, { required: ["host"] });

const servicePort = obj({
  number: port(),
  protocol: enumOf(SERVICE_PROTOCOLS, { caseInsensitive: true }),
  name: str({ check: checkDnsLabel("port name") }),
  targetPort: port(),
}, { required: ["number", "protocol", "name"] });

const endpoint = obj({
  address: str(),
  ports: map(port()),
  labels: labels(),
  network: str(),
  locality: str(),
  weight: int({ min: 0, format: "uint32" }),
  serviceAccount: str(),
}, { required: ["address"] });

/** networking.mesh.io/v1alpha3 ServiceEntry. */
export const serviceEntrySpec: ObjectSchema = obj({
  hosts: arr(host()),
  addresses: arr(str({ check: checkIpOrCidr })),
  ports: arr(servicePort, {
    check: (ports, path, out) => {
      uniqueBy("number", "port number")(ports, path, out);
      uniqueBy("name", "port name")(ports, path, out);
    },
  }),
  location: enumOf(["MESH_EXTERNAL", "MESH_INTERNAL"]),
  resolution: enumOf(["NONE", "STATIC", "DNS"]),
  endpoints: arr(endpoint),
  exportTo: exportTo(),
  // ServiceEntry's selector is `{labels}` (networking WorkloadSelector); `matchLabels` read too
  workloadSelector: obj({ labels: labels(), matchLabels: labels() }),
  subjectAltNames: arr(str()),
}, {
  required: ["hosts", "ports"],
  check: (v, path, out) => {
    const endpoints = (v.endpoints as Record<string, unknown>[] | undefined) ?? [];
    const resolution = (v.resolution as string | undefined) ?? "NONE";
    const portNames = new Set((v.ports as Record<string, unknown>[]).map((p) => p.name));
    if (resolution === "NONE" && endpoints.length > 0) {
      out.push({ path: `${path}.endpoints`, reason: "must be empty when resolution is NONE" });
    }
    if (v.workloadSelector !== undefined && endpoints.length > 0) {
      out.push({
        path: `${path}.workloadSelector`,
        reason: "only one of workloadSelector and endpoints may be given",
      });
    }
    if (resolution === "STATIC" && endpoints.length === 0 && v.workloadSelector === undefined) {
      out.push({ path: `${path}.endpoints`, reason: "is required when resolution is STATIC" });
    }
    if (resolution === "DNS" && endpoints.length === 0) {
      (v.hosts as string[]).forEach((h, i) => {
        if (h.startsWith("*")) {
          out.push({
            path: `${path}.hosts[${i}]`,
            reason: `wildcard host ${quote(h)} needs endpoints when resolution is DNS`,
          });
        }
      });
    }
    endpoints.forEach((e, i) => {
      const p = `${path}.endpoints[${i}]`;
      const addr = e.address as string;
      if (resolution === "STATIC" && !isIp(addr) && !addr.startsWith("unix://")) {
        out.push({
          path: `${p}.address`,
          reason: `must be an IP address when resolution is STATIC, got ${quote(addr)}`,
        });
      } else if (resolution === "DNS" && !isIp(addr)) {
        const bad = checkHost(addr, false);
        if (bad) out.push({ path: `${p}.address`, reason: bad });
      }
      for (const name of Object.keys((e.ports as Record<string, unknown> | undefined) ?? {})) {
        if (!portNames.has(name)) {
          out.push({
            path: keyPath(`${p}.ports`, name),
            reason: `port name ${quote(name)} is not declared in ports`,
          });
        }
      }
    });
  },
});

// ---- legacy routing v1alpha1 ----------------------------------------------------------------------

function istioServiceSchema(serviceCheck: (s: string) => string | undefined): ObjectSchema {
  return obj({
    name: str({ check: checkDnsLabel("service name") }),
    namespace: str({ check: checkNamespace }),
    domain: str({ check: (s) => checkHost(s, false)?.replace("invalid host", "invalid domain") }),
    service: str({ check: serviceCheck }),
    labels: labels(),
  }, {
    check: (v, path, out) => {
      if (isUnset(v.name) && isUnset(v.service)) {
        out.push({ path, reason: "one of name, service is required" });
      }
    },
  });
}

/** IstioService reference (`name[.namespace][.domain]` or `service` FQDN). */
export const istioService: ObjectSchema = istioServiceSchema((s) => checkHost(s, true));

const l4MatchV1 = obj({
  sourceSubnet: arr(str({ check: checkIpOrCidr })),
  destinationSubnet: arr(str({ check: checkIpOrCidr })),
});

const percentFloat = () => num({ min: 0, max: 100 });

/** config.mesh.io/v1alpha2 RouteRule (routing v1alpha1). */
export const routeRuleSpec: ObjectSchema = obj({
  destination: istioService,
  precedence: int(),
  match: obj({
    source: istioService,
    tcp: l4MatchV1,
    udp: l4MatchV1,
    request: obj({ headers: map(stringMatch) }),
  }),
  route: arr(
    obj({ destination: istioService, labels: labels(), weight: percent() }),
    { check: weightsSumTo100("route") },
  ),
  redirect: uriAuthority("redirect"),
  rewrite: uriAuthority("rewrite"),
  websocketUpgrade: bool(),
  httpReqTimeout: obj({
    simpleTimeout: obj({ timeout: duration({ min: 1 * MS }), overrideHeaderName: str() }),
    custom: any(),
  }, { oneofs: [{ fields: ["simpleTimeout", "custom"] }] }),
  httpReqRetries: obj({
    simpleRetry: obj({
      attempts: int({ min: 0 }),
      perTryTimeout: duration({ min: 1 * MS }),
      overrideHeaderName: str(),
    }),
    custom: any(),
  }, { oneofs: [{ fields: ["simpleRetry", "custom"] }] }),
  httpFault: obj({
    delay: obj({
      percent: percentFloat(),
      fixedDelay: duration({ min: 1 * MS }),
      exponentialDelay: duration({ min: 1 * MS }),
      overrideHeaderName: str(),
    }, { oneofs: [{ fields: ["fixedDelay", "exponentialDelay"], required: true }] }),
    abort: obj({
      percent: percentFloat(),
      httpStatus: int({ min: 200, max: 599 }),
      grpcStatus: str(),
      http2Error: str(),
      overrideHeaderName: str(),
    }, { oneofs: [{ fields: ["httpStatus", "grpcStatus", "http2Error"], required: true }] }),
  }),
  l4Fault: obj({
    throttle: obj({
      percent: percentFloat(),
      downstreamLimitBps: int({ min: 0, format: "int64" }),
      upstreamLimitBps: int({ min: 0, format: "int64" }),
      throttleAfterPeriod: duration(),
      throttleAfterBytes: num({ min: 0 }),
    }, { oneofs: [{ fields: ["throttleAfterPeriod", "throttleAfterBytes"] }] }),
    terminate: obj({ percent: percentFloat(), terminateAfterPeriod: duration() }),
  }),
  mirror: istioService,
  corsPolicy,
  appendHeaders: stringMap(),
}, {
  required: ["destination"],
  check: (v, path, out) => {
    if (!isUnset(v.redirect)) {
      for (const k of ["route", "rewrite", "httpFault", "mirror"]) {
        if (!isUnset(v[k])) {
          out.push({ path, reason: `a route rule cannot set both redirect and ${k}` });
        }
      }
    }
  },
});

/** config.mesh.io/v1alpha2 DestinationPolicy (routing v1alpha1). */
export const destinationPolicySpec: ObjectSchema = obj({
  destination: istioService,
  source: istioService,
  loadBalancing: obj({
    name: enumOf(["ROUND_ROBIN", "LEAST_CONN", "RANDOM"]),
    custom: any(),
  }, { oneofs: [{ fields: ["name", "custom"], required: true }] }),
  circuitBreaker: obj({
    simpleCb: obj({
      maxConnections: nonNegative(),
      httpMaxPendingRequests: nonNegative(),
      httpMaxRequests: nonNegative(),
      sleepWindow: duration({ min: 1 * MS }),
      httpConsecutiveErrors: nonNegative(),
      httpDetectionInterval: duration({ min: 1 * MS }),
      httpMaxRequestsPerConnection: nonNegative(),
      httpMaxEjectionPercent: percent(),
      httpMaxRetries: nonNegative(),
    }),
    custom: any(),
  }, { oneofs: [{ fields: ["simpleCb", "custom"], required: true }] }),
  custom: any(),
}, { required: ["destination"] });

/** config.mesh.io/v1alpha2 EgressRule (routing v1alpha1). */
/**
 * An EgressRule domain as Istio 0.8 validated it: `*` may prefix the first label, whole
 * (`*.foo.com`) or in part (`*foo.com`, `*-bar.foo.com`).
 */
export function checkEgressDomain(s: string): string | undefined {
  if (!s.startsWith("*") || s === "*" || s.startsWith("*.")) return checkHost(s, true);
  // the rest of a partly wildcarded first label must still make a label: try it with a letter
  const problem = checkHost("a" + s.slice(1), false);
  return problem && `invalid host ${quote(s)}: ${problem.replace(/^invalid host "[^"]*": /, "")}`;
}

export const egressRuleSpec: ObjectSchema = obj({
  destination: istioServiceSchema((s) => {
    if (s.includes("/") || isIp(s)) return checkIpOrCidr(s);
    return checkEgressDomain(s);
  }),
  ports: arr(
    obj({
      port: port(),
      protocol: enumOf(["HTTP", "HTTPS", "HTTP2", "GRPC", "TCP", "MONGO"], {
        caseInsensitive: true,
      }),
    }, { required: ["port", "protocol"] }),
    { check: uniqueBy("port", "port") },
  ),
  useEgressProxy: bool(),
}, {
  required: ["destination", "ports"],
  check: (v, path, out) => {
    const d = v.destination as Record<string, unknown>;
    if (isUnset(d.service)) {
      out.push({
        path: `${path}.destination.service`,
        reason: "is required (egress rules name the external service by service)",
      });
    }
  },
});

// ---- authentication v1alpha1 --------------------------------------------------------------------

const jwt = obj({
  issuer: str(),
  audiences: arr(str()),
  jwksUri: str(),
  jwtHeaders: arr(str()),
  jwtParams: arr(str()),
}, { required: ["issuer"] });

/** authentication.mesh.io/v1alpha1 Policy. */
export const authPolicySpec: ObjectSchema = obj({
  targets: arr(obj({
    name: str({ check: checkDnsLabel("target name") }),
    subset: str(),
    ports: arr(portSelector),
  }, { required: ["name"] })),
  peers: arr(obj({
    mtls: obj({
      allowTls: bool(),
      mode: enumOf(["STRICT", "TLS_PERMISSIVE", "PERMISSIVE"], { enumBase: false }),
    }),
    jwt,
  }, { oneofs: [{ fields: ["mtls", "jwt"], required: true }] })),
  peerIsOptional: bool(),
  origins: arr(obj({ jwt }, { required: ["jwt"] })),
  originIsOptional: bool(),
  principalBinding: enumOf(["USE_PEER", "USE_ORIGIN"]),
});

// ---- RBAC ---------------------------------------------------------------------------------------

/** config.mesh.io/v1alpha2 ServiceRole. */
export const serviceRoleSpec: ObjectSchema = obj({
  rules: arr(obj({
    services: arr(str()),
    paths: arr(str()),
    methods: arr(str()),
    constraints: arr(obj({ key: str(), values: arr(str()) }, { required: ["key", "values"] })),
  }, { required: ["services"] })),
}, { required: ["rules"] });

/** config.mesh.io/v1alpha2 ServiceRoleBinding. */
export const serviceRoleBindingSpec: ObjectSchema = obj({
  subjects: arr(obj({ user: str(), group: str(), properties: stringMap() }, {
    check: (v, path, out) => {
      if (
        isUnset(v.user) && isUnset(v.group) &&
        Object.keys((v.properties as object) ?? {}).length === 0
      ) {
        out.push({ path, reason: "a subject must set user, group or properties" });
      }
    },
  })),
  roleRef: obj({
    kind: str({
      check: (s) => s === "ServiceRole" ? undefined : `must be "ServiceRole", got ${quote(s)}`,
    }),
    name: str(),
  }, { required: ["kind", "name"] }),
}, { required: ["subjects", "roleRef"] });

// ---- policy-server client config ------------------------------------------------------------------

const attributeValue = obj({
  stringValue: str(),
  int64Value: int({ format: "int64" }),
  doubleValue: num(),
  boolValue: bool(),
  bytesValue: str(),
  timestampValue: str(),
  durationValue: duration(),
  stringMapValue: obj({ entries: stringMap() }),
}, {
  oneofs: [{
    fields: [
      "stringValue",
      "int64Value",
      "doubleValue",
      "boolValue",
      "bytesValue",
      "timestampValue",
      "durationValue",
      "stringMapValue",
    ],
    required: true,
  }],
});

const attributes = obj({ attributes: map(attributeValue) });

/** config.mesh.io/v1alpha2 HTTPAPISpec. */
export const httpApiSpecSpec: ObjectSchema = obj({
  attributes,
  patterns: arr(obj({
    attributes,
    httpMethod: str(),
    uriTemplate: str(),
    regex: regex(),
  }, { required: ["httpMethod"], oneofs: [{ fields: ["uriTemplate", "regex"], required: true }] })),
  apiKeys: arr(obj(
    { query: str(), header: str(), cookie: str() },
    { oneofs: [{ fields: ["query", "header", "cookie"], required: true }] },
  )),
});

const specReference = obj({
  name: str({ check: checkDnsLabel("name") }),
  namespace: str({ check: checkNamespace }),
}, {
  required: ["name"],
});

/** config.mesh.io/v1alpha2 HTTPAPISpecBinding. */
export const httpApiSpecBindingSpec: ObjectSchema = obj({
  services: arr(istioService),
  apiSpecs: arr(specReference),
}, { required: ["services", "apiSpecs"] });

/** config.mesh.io/v1alpha2 QuotaSpec. */
export const quotaSpecSpec: ObjectSchema = obj({
  rules: arr(obj({
    match: arr(obj({ clause: map(stringMatch) })),
    quotas: arr(obj({ quota: str(), charge: int({ min: 1 }) }, { required: ["quota", "charge"] })),
  }, { required: ["quotas"] })),
}, { required: ["rules"] });

/** config.mesh.io/v1alpha2 QuotaSpecBinding. */
export const quotaSpecBindingSpec: ObjectSchema = obj({
  services: arr(istioService),
  quotaSpecs: arr(specReference),
}, { required: ["services", "quotaSpecs"] });

// ---- policy-server (mesh-policy) kinds --------------------------------------------------------------

const ref = (what: string) =>
  str({
    check: (s) =>
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s)
        ? undefined
        : `invalid ${what} reference ${quote(s)}: expected <name>.<kind>[.<namespace>]`,
  });

/** config.mesh.io/v1alpha2 `rule` (policy server). */
export const ruleSpec: ObjectSchema = obj({
  match: str(),
  selector: str({ description: "deprecated alias of match" }),
  actions: arr(obj({
    handler: ref("handler"),
    instances: arr(ref("instance")),
    name: str(),
  }, { required: ["handler", "instances"] })),
  requestHeaderOperations: arr(any()),
  responseHeaderOperations: arr(any()),
  sampling: any(),
});

/** Attribute value types of attribute manifests. */
export const VALUE_TYPES = [
  "STRING",
  "INT64",
  "DOUBLE",
  "BOOL",
  "TIMESTAMP",
  "IP_ADDRESS",
  "EMAIL_ADDRESS",
  "URI",
  "DNS_NAME",
  "DURATION",
  "STRING_MAP",
] as const;

/** config.mesh.io/v1alpha2 `attributemanifest`. */
export const attributeManifestSpec: ObjectSchema = obj({
  revision: str(),
  name: str(),
  attributes: map(obj({ valueType: enumOf(VALUE_TYPES, { enumBase: 1 }), description: str() })),
});

/** Handler, instance, adapter and template kinds: any object (adapter/template specific). */
export const freeformSpec: Schema = any({ object: true });
