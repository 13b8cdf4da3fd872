/**
 * Declarative spec schemas of the networking kinds that scope proxies and describe VMs —
 * `Sidecar`, `WorkloadEntry`, `WorkloadGroup` (networking.istio.io `v1alpha3`, `v1beta1`, `v1`;
 * ours `networking.mesh.io`) — and Istio's `RbacConfig`/`ClusterRbacConfig`. Field names as in the
 * reference system's protos (lowerCamelCase JSON form).
 * @module
 */
import { any, arr, enumOf, int, labels, map, obj, type ObjectSchema, port, str } from "./dsl.ts";
import { checkHost, checkNamespace, isIp, quote } from "./values.ts";

/** Protocols of a Sidecar listener port (case-insensitive, as ServiceEntry ports). */
const SIDECAR_PROTOCOLS = [
  "HTTP",
  "HTTPS",
  "GRPC",
  "GRPC-WEB",
  "HTTP2",
  "MONGO",
  "REDIS",
  "MYSQL",
  "TCP",
  "TLS",
  "UDP",
] as const;

const sidecarPort = obj({
  number: port(),
  protocol: enumOf(SIDECAR_PROTOCOLS, { caseInsensitive: true }),
  name: str(),
  targetPort: port(),
}, { required: ["number"] });

/** `captureMode` of a Sidecar listener. */
const captureMode = enumOf(["DEFAULT", "IPTABLES", "NONE"]);

/**
 * Reason why a Sidecar egress host is not `<namespace>/<dnsName>` (namespace `*`, `.`, `~` or a
 * namespace; dnsName `*`, `*.<suffix>` or a host name), or undefined.
 */
export function checkSidecarEgressHost(s: string): string | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) {
    return `invalid egress host ${quote(s)}: want <namespace>/<dnsName> ` +
      `("./*", "*/*", "mesh-system/*", "~/*")`;
  }
  const ns = s.slice(0, slash);
  const dns = s.slice(slash + 1);
  if (ns !== "*" && ns !== "." && ns !== "~" && checkNamespace(ns)) {
    return `invalid egress host ${quote(s)}: namespace ${quote(ns)} must be "*", "." , "~" or ` +
      "a namespace";
  }
  const bad = checkHost(dns, true);
  return bad ? `invalid egress host ${quote(s)}: ${bad}` : undefined;
}

/** Reason why a Sidecar ingress `defaultEndpoint` is not `127.0.0.1:<port>`, `0.0.0.0:<port>`, `[::1]:<port>` or `unix://<path>`. */
function checkDefaultEndpoint(s: string): string | undefined {
  if (s.startsWith("unix://") && s.length > "unix://".length) return undefined;
  const m = /^(127\.0\.0\.1|0\.0\.0\.0|\[::1\]|\[::\]):(\d+)$/.exec(s);
  if (m && Number(m[2]) >= 1 && Number(m[2]) <= 65535) return undefined;
  return `invalid defaultEndpoint ${quote(s)}: want 127.0.0.1:<port>, 0.0.0.0:<port>, ` +
    "[::1]:<port> or unix://<path>";
}

const ingressListener = obj({
  port: sidecarPort,
  bind: str(),
  captureMode,
  defaultEndpoint: str({ check: checkDefaultEndpoint }),
  tls: any({ object: true }),
  connectionPool: any({ object: true }),
}, { required: ["port"] });

const egressListener = obj({
  port: sidecarPort,
  bind: str(),
  captureMode,
  hosts: arr(str({ check: checkSidecarEgressHost }), { minItems: 1 }),
}, { required: ["hosts"] });

/** networking.mesh.io/v1alpha3 Sidecar: what the selected proxies see and accept. */
export const sidecarSpec: ObjectSchema = obj({
  workloadSelector: obj({ labels: labels() }),
  ingress: arr(ingressListener, {
    check: (list, path, out) => {
      const seen = new Set<number>();
      (list as { port?: { number?: number } }[]).forEach((l, i) => {
        const n = l.port?.number;
        if (typeof n !== "number") return;
        if (seen.has(n)) {
          out.push({ path: `${path}[${i}].port.number`, reason: `port ${n} is given twice` });
        }
        seen.add(n);
      });
    },
  }),
  egress: arr(egressListener, {
    check: (list, path, out) => {
      const items = list as { port?: unknown }[];
      const catchAll = items.filter((l) => l.port === undefined).length;
      if (catchAll > 1) {
        out.push({ path, reason: "at most one egress listener may have no port" });
      } else if (catchAll === 1 && items.at(-1)?.port !== undefined) {
        out.push({ path, reason: "the egress listener without a port must be the last one" });
      }
    },
  }),
  inboundConnectionPool: any({ object: true }),
  outboundTrafficPolicy: obj({
    mode: enumOf(["REGISTRY_ONLY", "ALLOW_ANY"]),
    egressProxy: any({ object: true }),
  }, {
    check: (v, path, out) => {
      if (v.egressProxy !== undefined && v.mode !== "ALLOW_ANY") {
        out.push({ path: `${path}.egressProxy`, reason: "needs mode ALLOW_ANY" });
      }
    },
  }),
});

function checkPortName(k: string): string | undefined {
  return /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(k) && k.length <= 63
    ? undefined
    : `invalid port name ${quote(k)}: must be a DNS-1123 label`;
}

const workloadEntryFields = {
  address: str(),
  ports: map(port(), { checkKey: checkPortName }),
  labels: labels(),
  network: str(),
  locality: str(),
  weight: int({ min: 0, format: "uint32" }),
  serviceAccount: str(),
};

function checkAddress(a: unknown): string | undefined {
  if (typeof a !== "string" || a === "") return undefined;
  if (isIp(a) || (a.startsWith("unix://") && a.length > 7)) return undefined;
  const bad = checkHost(a, false);
  return bad && `invalid address ${quote(a)}: want an IP address, a host name or unix://<path>`;
}

/** networking.mesh.io/v1alpha3 WorkloadEntry: one VM or other non-orchestrator workload. */
export const workloadEntrySpec: ObjectSchema = obj(workloadEntryFields, {
  check: (v, path, out) => {
    if (v.address === undefined || v.address === "") {
      // Istio allows an empty address only with a network (reached through its gateway)
      if (v.network === undefined || v.network === "") {
        out.push({ path: `${path}.address`, reason: "is required (unless a network is given)" });
      }
      return;
    }
    const bad = checkAddress(v.address);
    if (bad) out.push({ path: `${path}.address`, reason: bad });
    if (typeof v.address === "string" && v.address.startsWith("unix://") && v.ports) {
      out.push({ path: `${path}.ports`, reason: "must be empty for a unix:// address" });
    }
  },
});

const probeFields = {
  initialDelaySeconds: int({ min: 0 }),
  timeoutSeconds: int({ min: 0 }),
  periodSeconds: int({ min: 0 }),
  successThreshold: int({ min: 0 }),
  failureThreshold: int({ min: 0 }),
  httpGet: obj({
    path: str(),
    port: port(),
    host: str(),
    scheme: str(),
    httpHeaders: arr(obj({ name: str(), value: str() })),
  }, { required: ["port"] }),
  tcpSocket: obj({ host: str(), port: port() }, { required: ["port"] }),
  exec: obj({ command: arr(str(), { minItems: 1 }) }, { required: ["command"] }),
  grpc: obj({ port: port(), service: str() }, { required: ["port"] }),
};

/** networking.mesh.io/v1alpha3 WorkloadGroup: the template of WorkloadEntries (auto-registration). */
export const workloadGroupSpec: ObjectSchema = obj({
  metadata: obj({ labels: labels(), annotations: map(str()) }),
  template: obj(workloadEntryFields, {
    check: (v, path, out) => {
      if (v.address !== undefined && v.address !== "") {
        out.push({
          path: `${path}.address`,
          reason: "must be empty (each registered workload has its own)",
        });
      }
    },
  }),
  probe: obj(probeFields, {
    oneofs: [{ fields: ["httpGet", "tcpSocket", "exec", "grpc"], required: true }],
  }),
}, { required: ["template"] });

const rbacTarget = obj({
  services: arr(str()),
  namespaces: arr(str()),
  workloadSelectors: arr(any({ object: true })),
});

/**
 * `RbacConfig` (Istio 0.8's proto, served from 1.0 as `rbac.istio.io/v1alpha1`) and
 * `ClusterRbacConfig` (1.1): whether the RBAC of ServiceRoles and bindings is on, and where.
 */
export const rbacConfigSpec: ObjectSchema = obj({
  mode: enumOf(["OFF", "ON", "ON_WITH_INCLUSION", "ON_WITH_EXCLUSION"]),
  inclusion: rbacTarget,
  exclusion: rbacTarget,
  enforcementMode: enumOf(["ENFORCED", "PERMISSIVE"]),
}, {
  check: (v, path, out) => {
    if (v.mode === "ON_WITH_INCLUSION" && v.inclusion === undefined) {
      out.push({ path: `${path}.inclusion`, reason: "is required when mode is ON_WITH_INCLUSION" });
    }
    if (v.mode === "ON_WITH_EXCLUSION" && v.exclusion === undefined) {
      out.push({ path: `${path}.exclusion`, reason: "is required when mode is ON_WITH_EXCLUSION" });
    }
  },
});
