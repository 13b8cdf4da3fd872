import assert from "node:assert/strict";
import { parse } from "../deps/yaml.ts";
import {
  defaultMeshConfig,
  formatIssues,
  type Ingress,
  ingressClassMatches,
  normalizeIngress,
} from "./mod.ts";

const V1BETA1 = `
apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: echo
  annotations:
    kubernetes.io/ingress.class: mesh
spec:
  backend:
    serviceName: default-http
    servicePort: 80
  tls:
  - hosts: [echo.example.com]
    secretName: mesh-ingress-certs
  rules:
  - http:
      paths:
      - path: /echo
        backend:
          serviceName: echo
          servicePort: 80
  - host: echo.example.com
    http:
      paths:
      - path: /api/.*
        backend:
          serviceName: echo
          servicePort: http
`;

const V1 = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: echo
  namespace: apps
spec:
  ingressClassName: mesh
  defaultBackend:
    service:
      name: default-http
      port:
        number: 80
  rules:
  - host: echo.example.com
    http:
      paths:
      - path: /echo
        pathType: Prefix
        backend:
          service:
            name: echo
            port:
              name: http
`;

Deno.test("normalizeIngress() reads extensions/v1beta1 backends (serviceName/servicePort)", () => {
  const { ingress, issues } = normalizeIngress(parse(V1BETA1), "ingress.yaml");
  assert.deepEqual(issues, []);
  assert.deepEqual(ingress, {
    apiVersion: "extensions/v1beta1",
    name: "echo",
    namespace: "default",
    annotations: { "kubernetes.io/ingress.class": "mesh" },
    rules: [
      {
        host: "",
        paths: [{
          path: "/echo",
          pathType: "ImplementationSpecific",
          serviceName: "echo",
          servicePort: 80,
        }],
      },
      {
        host: "echo.example.com",
        paths: [{
          path: "/api/.*",
          pathType: "ImplementationSpecific",
          serviceName: "echo",
          servicePort: "http",
        }],
      },
    ],
    tls: [{ hosts: ["echo.example.com"], secretName: "mesh-ingress-certs" }],
    defaultBackend: { serviceName: "default-http", servicePort: 80 },
  });
});

Deno.test("normalizeIngress() reads networking.k8s.io/v1 backends (service.name/port) and the class name", () => {
  const { ingress, issues } = normalizeIngress(parse(V1), "ingress.yaml");
  assert.deepEqual(issues, []);
  assert.deepEqual(ingress, {
    apiVersion: "networking.k8s.io/v1",
    name: "echo",
    namespace: "apps",
    annotations: {},
    ingressClassName: "mesh",
    rules: [{
      host: "echo.example.com",
      paths: [{ path: "/echo", pathType: "Prefix", serviceName: "echo", servicePort: "http" }],
    }],
    tls: [],
    defaultBackend: { serviceName: "default-http", servicePort: 80 },
  });
});

Deno.test("normalizeIngress() reports every bad field with its path", () => {
  const raw = parse(V1);
  raw.spec.rules[0].http.paths[0].backend.service.port = { number: 0 };
  delete raw.spec.rules[0].http.paths[0].pathType;
  raw.spec.rules[0].http.paths.push({
    path: "/x",
    pathType: "Regex",
    backend: { service: { name: "x", port: { number: 1 } } },
  });
  raw.spec.defaultBackend = { resource: { kind: "Bucket", name: "b" } };
  assert.equal(
    formatIssues(normalizeIngress(raw, "ingress.yaml").issues),
    [
      "ingress.yaml: spec.rules[0].http.paths[0].pathType: is required",
      'ingress.yaml: spec.rules[0].http.paths[1].pathType: must be one of Exact, Prefix, ImplementationSpecific, got string "Regex"',
      "ingress.yaml: spec.defaultBackend.resource: resource backends are not supported; use service",
    ].join("\n"),
  );
  const old = parse(V1BETA1);
  old.spec.rules[0].http.paths[0].backend = { servicePort: 70000 };
  old.apiVersion = "extensions/v1beta1";
  assert.equal(
    formatIssues(normalizeIngress(old, "ingress.yaml").issues),
    [
      "ingress.yaml: spec.rules[0].http.paths[0].backend.serviceName: is required",
      "ingress.yaml: spec.rules[0].http.paths[0].backend.servicePort: must be between 1 and 65535, got 70000",
    ].join("\n"),
  );
  assert.equal(
    formatIssues(normalizeIngress({ ...old, apiVersion: "v1" }, "i").issues),
    'i: apiVersion: must be one of extensions/v1beta1, networking.k8s.io/v1beta1, networking.k8s.io/v1, got string "v1"',
  );
});

Deno.test("ingressClassMatches() follows the OFF / STRICT / DEFAULT modes", () => {
  const ing = (
    cls?: string,
    className?: string,
  ): Pick<Ingress, "annotations" | "ingressClassName"> => ({
    annotations: cls === undefined ? {} : { "kubernetes.io/ingress.class": cls },
    ...(className === undefined ? {} : { ingressClassName: className }),
  });
  const mc = (mode: "OFF" | "STRICT" | "DEFAULT") => ({
    ...defaultMeshConfig(),
    ingressControllerMode: mode,
  });
  assert.equal(ingressClassMatches(ing("mesh"), mc("OFF")), false);
  assert.equal(ingressClassMatches(ing("mesh"), mc("STRICT")), true);
  assert.equal(ingressClassMatches(ing(), mc("STRICT")), false);
  assert.equal(ingressClassMatches(ing("nginx"), mc("STRICT")), false);
  assert.equal(ingressClassMatches(ing(), mc("DEFAULT")), true);
  assert.equal(ingressClassMatches(ing("mesh"), mc("DEFAULT")), true);
  assert.equal(ingressClassMatches(ing("nginx"), mc("DEFAULT")), false);
  assert.equal(ingressClassMatches(ing(undefined, "mesh"), mc("STRICT")), true);
  assert.equal(ingressClassMatches(ing(undefined, "nginx"), mc("DEFAULT")), false);
  assert.equal(ingressClassMatches(ing("nginx", "mesh"), mc("STRICT")), false);
});

Deno.test("ingressClassMatches() selects the reference system's class istio as well as ours", () => {
  const ing = (cls: string) => ({ annotations: { "kubernetes.io/ingress.class": cls } });
  const mc = (mode: "OFF" | "STRICT" | "DEFAULT") => ({
    ingressClass: "mesh",
    ingressControllerMode: mode,
  });
  assert.equal(ingressClassMatches(ing("istio"), mc("STRICT")), true);
  assert.equal(ingressClassMatches(ing("istio"), mc("DEFAULT")), true);
  assert.equal(ingressClassMatches(ing("istio"), mc("OFF")), false);
  assert.equal(
    ingressClassMatches({ annotations: {}, ingressClassName: "istio" }, mc("STRICT")),
    true,
  );
});
