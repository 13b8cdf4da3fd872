/**
 * Sidecar injection, shared by sidecar-injector (the admission webhook) and
 * `meshctl kube-inject`: the policy, the `[[ ]]` template language, the built-in template, the
 * JSON patch that injects a pod, and kube-inject over YAML streams. See docs/sidecar-injector.md.
 *
 * @example
 * ```ts
 * import { builtinTemplate, defaultTemplateParams, Injector } from "./mod.ts";
 * import { defaultMeshConfig } from "../model/meshconfig.ts";
 * const injector = new Injector({
 *   policy: "enabled",
 *   template: builtinTemplate(defaultTemplateParams()),
 *   meshConfig: defaultMeshConfig(),
 * });
 * const pod = { metadata: { name: "web" }, spec: { containers: [{ name: "web", image: "nginx" }] } };
 * console.log(injector.inject(pod).spec.containers.length); // 2
 * ```
 * @module
 */

export {
  builtinTemplate,
  defaultTemplateParams,
  INJECTED_NAMES,
  type TemplateParams,
} from "./default_template.ts";
export {
  builtinGrpcAgentTemplate,
  GRPC_AGENT_TEMPLATE,
  SIDECAR_TEMPLATE,
} from "./grpc_agent_template.ts";
export {
  type AppContainerPatch,
  applyPatch,
  checkPod,
  escapePointer,
  InjectError,
  Injector,
  type InjectorConfig,
  type PatchOp,
  type PodLike,
  SIDECAR_FIELDS,
  type SidecarSpec,
  type SidecarStatus,
  TEMPLATES_ANNOTATION,
} from "./injector.ts";
export {
  AnnotationError,
  cidrProblem,
  type Decision,
  IGNORED_NAMESPACES,
  INJECT_ANNOTATION,
  injectionRequired,
  INTERCEPTION_MODE_ANNOTATION,
  ipRangesProblem,
  type Policy,
  portsProblem,
  PROXY_IMAGE_ANNOTATION,
  STATUS_ANNOTATION,
  TRAFFIC_ANNOTATIONS,
  validateAnnotations,
} from "./policy.ts";
export {
  FUNCTIONS,
  parseTemplate,
  type RenderLimits,
  type Template,
  TemplateError,
} from "./template.ts";
export { injectStream, type StreamResult, WORKLOADS } from "./workloads.ts";
