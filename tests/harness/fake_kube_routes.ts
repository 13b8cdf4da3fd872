/**
 * Paths of the fake Kubernetes API server: discovery documents (`/api`, `/apis`, group
 * versions) and the route of a resource request.
 * @module
 */
import { isObject, type JsonObject } from "./_patch.ts";
import {
  ALL_VERBS,
  groupVersion,
  jsonResponse,
  KubeStatusError,
  objKey,
  type ResourceType,
  type Route,
  statusResponse,
  str,
} from "./fake_kube_common.ts";
import type { KubeState } from "./fake_kube_state.ts";

export function route(s: KubeState, parts: string[]): Route | Response {
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === "api") {
    group = "";
    version = parts[1];
    rest = parts.slice(2);
  } else {
    group = parts[1];
    version = parts[2];
    rest = parts.slice(3);
  }
  const gvTypes = s.typesOf(group, version);
  const byName = (r: string) => gvTypes.find((x) => x.resource === r);
  let type: ResourceType | undefined;
  let namespace: string | undefined;
  let name: string | undefined;
  let subresource: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3 && byName(rest[2])?.namespaced) {
    namespace = rest[1];
    type = byName(rest[2]);
    name = rest[3];
    subresource = rest[4];
    if (rest.length > 5) type = undefined;
  } else {
    type = byName(rest[0]);
    name = rest[1];
    subresource = rest[2];
    if (rest.length > 3) type = undefined;
  }
  if (!type || (subresource !== undefined && !(subresource === "status" && type.hasStatus))) {
    return statusResponse(
      new KubeStatusError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        {},
      ),
    );
  }
  return { type, namespace, name, subresource };
}

export function discoveryResources(s: KubeState, group: string, version: string): JsonObject[] {
  const out: JsonObject[] = [];
  for (const t of s.typesOf(group, version).sort((a, b) => a.resource.localeCompare(b.resource))) {
    const r: JsonObject = {
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: ALL_VERBS,
    };
    if (t.shortNames.length > 0) r.shortNames = t.shortNames;
    if (t.crd === undefined && t.group === "") r.storageVersionHash = btoa(t.kind).slice(0, 11);
    out.push(r);
    if (t.hasStatus) {
      out.push({
        name: `${t.resource}/status`,
        singularName: "",
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ["get", "patch", "update"],
      });
    }
  }
  return out;
}

export function groups(s: KubeState): JsonObject[] {
  const byGroup = new Map<string, string[]>();
  for (const t of s.types.values()) {
    if (t.group === "") continue;
    const vs = byGroup.get(t.group) ?? [];
    if (!vs.includes(t.version)) vs.push(t.version);
    byGroup.set(t.group, vs);
  }
  return [...byGroup.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => {
    const crd = [...s.types.values()].find((t) => t.group === name && t.crd !== undefined);
    let preferred = versions[0];
    if (crd) {
      const crdObj = s.bucket(s.findType("customresourcedefinitions")!).get(
        objKey(undefined, crd.crd!),
      );
      const vs = isObject(crdObj?.spec) && Array.isArray(crdObj.spec.versions)
        ? crdObj.spec.versions.filter(isObject)
        : [];
      preferred = str(vs.find((v) => v.storage === true)?.name) || preferred;
    }
    return {
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${preferred}`, version: preferred },
    };
  });
}

export function discovery(s: KubeState, parts: string[], port: number): Response | undefined {
  if (parts.length === 1 && parts[0] === "api") {
    return jsonResponse({
      kind: "APIVersions",
      versions: ["v1"],
      serverAddressByClientCIDRs: [{
        clientCIDR: "0.0.0.0/0",
        serverAddress: `127.0.0.1:${port}`,
      }],
    });
  }
  if (parts.length === 1 && parts[0] === "apis") {
    return jsonResponse({ kind: "APIGroupList", apiVersion: "v1", groups: groups(s) });
  }
  if (parts.length === 2 && parts[0] === "apis") {
    const g = groups(s).find((x) => x.name === parts[1]);
    if (!g) return undefined;
    return jsonResponse({ kind: "APIGroup", apiVersion: "v1", ...g });
  }
  const gv = parts[0] === "api" && parts.length === 2
    ? { group: "", version: parts[1] }
    : parts[0] === "apis" && parts.length === 3
    ? { group: parts[1], version: parts[2] }
    : undefined;
  if (!gv) return undefined;
  if (s.typesOf(gv.group, gv.version).length === 0) return undefined;
  return jsonResponse({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: groupVersion(gv),
    resources: discoveryResources(s, gv.group, gv.version),
  });
}
