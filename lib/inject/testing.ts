/** Test helpers for the injector (not exported from mod.ts). @module */

import { defaultMeshConfig } from "../model/meshconfig.ts";
import { builtinTemplate, defaultTemplateParams } from "./default_template.ts";
import { builtinGrpcAgentTemplate, GRPC_AGENT_TEMPLATE } from "./grpc_agent_template.ts";
import { Injector } from "./injector.ts";

/** The injector of the golden files: built-in templates, fixed tag (no version in the output). */
export function testInjector(policy = "enabled"): Injector {
  return new Injector({
    policy,
    template: builtinTemplate({ ...defaultTemplateParams(), tag: "test" }),
    meshConfig: defaultMeshConfig(),
    templates: {
      [GRPC_AGENT_TEMPLATE]: builtinGrpcAgentTemplate({ ...defaultTemplateParams(), tag: "test" }),
    },
  });
}
