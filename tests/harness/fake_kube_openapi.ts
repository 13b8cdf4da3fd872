/**
 * OpenAPI documents of the fake Kubernetes API server: just enough v3 and v2 for kubectl (its
 * PATCH operations and the parameters they accept).
 * @module
 */
import type { JsonObject } from "./_patch.ts";
import { encodeOpenApiV2, OPENAPI_V2_PROTOBUF_TYPES } from "./_protobuf.ts";
import { groupVersion, jsonResponse, KubeStatusError, statusResponse } from "./fake_kube_common.ts";
import type { KubeState } from "./fake_kube_state.ts";

export function openapiV3(s: KubeState, rest: string[]): JsonObject | undefined {
  const gvs = new Map<string, { group: string; version: string }>();
  for (const t of s.types.values()) {
    gvs.set(groupVersion(t), { group: t.group, version: t.version });
  }
  const apiPath = (gv: { group: string; version: string }) =>
    gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
  if (rest.length === 0) {
    const paths: JsonObject = {};
    for (const gv of gvs.values()) {
      paths[apiPath(gv)] = { serverRelativeURL: `/openapi/v3/${apiPath(gv)}?hash=${s.rv}` };
    }
    return { paths };
  }
  const gv = [...gvs.values()].find((x) => apiPath(x) === rest.join("/"));
  if (!gv) return undefined;
  const paths: JsonObject = {};
  const schemas: JsonObject = {};
  for (const t of s.typesOf(gv.group, gv.version)) {
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    const prefix = `/${apiPath(gv)}${t.namespaced ? "/namespaces/{namespace}" : ""}/${t.resource}`;
    paths[`${prefix}/{name}`] = {
      patch: {
        operationId: `patch${t.kind}`,
        parameters: [
          { name: "fieldValidation", in: "query", schema: { type: "string", uniqueItems: true } },
          { name: "fieldManager", in: "query", schema: { type: "string", uniqueItems: true } },
          { name: "dryRun", in: "query", schema: { type: "string", uniqueItems: true } },
        ],
        responses: { "200": { description: "OK" } },
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
      },
    };
    schemas[`${t.group || "core"}.${t.version}.${t.kind}`] = {
      type: "object",
      "x-kubernetes-group-version-kind": [gvk],
      "x-kubernetes-preserve-unknown-fields": true,
    };
  }
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.32.0-fake" },
    paths,
    components: { schemas },
  };
}

export function openapiV2(s: KubeState): JsonObject {
  const paths: JsonObject = {};
  const sorted = [...s.types.values()].sort((a, b) =>
    groupVersion(a).localeCompare(groupVersion(b)) || a.resource.localeCompare(b.resource)
  );
  const query = (name: string, description: string): JsonObject => ({
    name,
    in: "query",
    description,
    type: "string",
    uniqueItems: true,
  });
  for (const t of sorted) {
    const base = t.group === "" ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`;
    const prefix = `${base}${t.namespaced ? "/namespaces/{namespace}" : ""}/${t.resource}`;
    const title = (w: string) => w === "" ? "Core" : w[0].toUpperCase() + w.slice(1);
    const opGv = `${title(t.group.split(".")[0])}${title(t.version)}`; // patchCoreV1...
    paths[`${prefix}/{name}`] = {
      patch: {
        operationId: `patch${opGv}${t.namespaced ? "Namespaced" : ""}${t.kind}`,
        consumes: [
          "application/json-patch+json",
          "application/merge-patch+json",
          "application/strategic-merge-patch+json",
          "application/apply-patch+yaml",
        ],
        produces: ["application/json", "application/yaml"],
        parameters: [
          query("dryRun", "When present, indicates that modifications should not be persisted."),
          query(
            "fieldManager",
            "fieldManager is a name associated with the actor making changes.",
          ),
          query("fieldValidation", "Strict, Warn or Ignore: how to treat unknown fields."),
        ],
        responses: { "200": { description: "OK" } },
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": { group: t.group, version: t.version, kind: t.kind },
      },
    };
  }
  return {
    swagger: "2.0",
    info: { title: "Kubernetes", version: "v1.32.0-fake" },
    paths,
  };
}

/**
 * `/openapi/v2` as protobuf or JSON, whichever comes first in `Accept` (kubectl asks only for
 * protobuf); 406 when neither is acceptable, like kube-openapi's handler.
 */
export function openapiV2Response(s: KubeState, req: Request): Response {
  const accepted = (req.headers.get("accept") ?? "*/*").split(",")
    .map((a) => a.split(";")[0].trim().toLowerCase()).filter((a) => a !== "");
  for (const a of accepted.length > 0 ? accepted : ["*/*"]) {
    if ((OPENAPI_V2_PROTOBUF_TYPES as readonly string[]).includes(a)) {
      return new Response(encodeOpenApiV2(openapiV2(s)), {
        headers: {
          "content-type": OPENAPI_V2_PROTOBUF_TYPES[1],
          "cache-control": "no-cache, private",
          vary: "Accept",
        },
      });
    }
    if (a === "application/json" || a === "application/*" || a === "*/*") {
      return jsonResponse(openapiV2(s));
    }
  }
  return statusResponse(
    new KubeStatusError(
      406,
      "NotAcceptable",
      `only the following media types are accepted: application/json, ${
        OPENAPI_V2_PROTOBUF_TYPES.join(", ")
      }`,
    ),
  );
}
