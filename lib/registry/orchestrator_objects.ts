/**
 * The orchestrator objects the Orchestrator registry reads (only the fields it reads).
 * @module
 */

/** A Meta as read. */
export interface Meta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
}
/** A ObjectRef as read. */
export interface ObjectRef {
  kind?: string;
  name?: string;
  namespace?: string;
}
/** A KService as read. */
export interface KService {
  metadata?: Meta;
  spec?: {
    type?: string;
    clusterIP?: string;
    externalName?: string;
    ports?: { name?: string; port?: number; protocol?: string; targetPort?: number | string }[];
    selector?: Record<string, string>;
  };
}
/** A EndpointPort as read. */
export interface EndpointPort {
  name?: string;
  port?: number;
  protocol?: string;
}
/** A KEndpoints as read. */
export interface KEndpoints {
  metadata?: Meta;
  subsets?: {
    addresses?: { ip?: string; nodeName?: string; targetRef?: ObjectRef }[];
    ports?: EndpointPort[];
  }[];
}
/** A KSlice as read. */
export interface KSlice {
  metadata?: Meta;
  addressType?: string;
  endpoints?: {
    addresses?: string[];
    conditions?: { ready?: boolean | null };
    nodeName?: string;
    zone?: string;
    targetRef?: ObjectRef;
  }[];
  ports?: EndpointPort[];
}
/** A Probe as read. */
export interface Probe {
  httpGet?: { port?: number | string };
  tcpSocket?: { port?: number | string };
}
/** A KPod as read. */
export interface KPod {
  metadata?: Meta;
  spec?: {
    serviceAccountName?: string;
    nodeName?: string;
    containers?: {
      ports?: { name?: string; containerPort?: number }[];
      livenessProbe?: Probe;
      readinessProbe?: Probe;
    }[];
  };
  status?: { podIP?: string; podIPs?: { ip?: string }[] };
}
/** A KNode as read. */
export interface KNode {
  metadata?: Meta;
}

/** The label linking an EndpointSlice to its service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** `<namespace>/<name>` of an object. */
export const keyOf = (m: Meta | undefined): string => `${m?.namespace ?? ""}/${m?.name ?? ""}`;
