/**
 * Text shown at the end of the help of meshctl's configuration commands: the accepted type
 * names and examples. The names are written out here, not read from the model's table, so that
 * every meshctl start (`version` included) does not load lib/model; `_help_test.ts` checks them
 * against the table.
 * @module
 */

/** The 14 types with their short names, as the model's `meshctlSchemas` gives them. */
export const TYPE_WORDS: readonly string[] = [
  "routerule",
  "virtualservice (vs)",
  "gateway (gw)",
  "egressrule",
  "serviceentry (se)",
  "destinationpolicy",
  "destinationrule (dr)",
  "httpapispec",
  "httpapispecbinding",
  "quotaspec",
  "quotaspecbinding",
  "policy",
  "servicerole",
  "servicerolebinding",
];

/** Joins `words` with ", " into lines of at most `width` columns, each prefixed by `indent`. */
function wrapList(words: readonly string[], indent: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const [i, w] of words.entries()) {
    const item = i < words.length - 1 ? `${w},` : w;
    if (line && indent.length + line.length + 1 + item.length > width) {
      lines.push(indent + line);
      line = item;
    } else line = line ? `${line} ${item}` : item;
  }
  if (line) lines.push(indent + line);
  return lines.join("\n");
}

const TYPES = `Types (singular or plural, any case; short names in parentheses):
${wrapList(TYPE_WORDS, "  ", 96)}
  Also ingress (ing), and the policy-server kinds files may hold: rule, attributemanifest,
  handlers such as denier, instances such as checknothing.
`;

/** After `meshctl get --help`. */
export const GET_HELP = `
${TYPES}
Without a name, get lists every namespace unless -n is given. A name that does not exist is an
error (exit 1); a list with nothing in it prints "No resources found." (exit 0).

Examples:
  meshctl get virtualservices                       # every namespace
  meshctl get vs reviews ratings -n team -o yaml    # two objects, in full
  meshctl -p fs --configDir ./config get rules      # a local directory, no cluster
`;

/** After `meshctl delete --help`. */
export const DELETE_HELP = `
${TYPES}
Examples:
  meshctl delete virtualservice reviews ratings     # by names, in -n or the default namespace
  meshctl delete -f routes.yaml                     # every object the file names
  cat routes.yaml | meshctl delete -f -
`;

/** After `meshctl create --help` and `meshctl replace --help`. */
export function writeHelp(op: "create" | "replace"): string {
  const piped = op === "create"
    ? "  cat routes.yaml | meshctl create                  # standard input, when piped"
    : "  meshctl get vs reviews -o yaml > r.yaml; (edit r.yaml); meshctl replace -f r.yaml";
  return `
Every document is checked before anything is written: one bad document writes nothing.

Examples:
  meshctl ${op} -f routes.yaml
${piped}
  meshctl -p fs --configDir ./config ${op} -f routes.yaml
`;
}

/** After `meshctl kube-inject --help`. */
export const KUBE_INJECT_HELP = `
Injects the pod templates of Deployment, DaemonSet, ReplicaSet, StatefulSet, Job, CronJob,
ReplicationController, Pod and List items; other documents pass through unchanged, in order.
The configuration comes from --injectConfigFile/--meshConfigFile, else the built-in template and
default mesh configuration with --hub and --tag (no cluster needed), else the config maps of -i
read through -c. See docs/meshctl.md and docs/sidecar-injector.md.

Examples:
  meshctl kube-inject -f deployment.yaml | kubectl apply -f -
  meshctl kube-inject --hub docker.io/mesh --tag 0.1.0 -f app.yaml -o app-injected.yaml
  kubectl get deploy web -o yaml | meshctl kube-inject -f - --injectConfigFile inject-config \\
    --meshConfigFile mesh.yaml
  meshctl kube-inject --emitTemplate --hub docker.io/mesh --tag 0.1.0 > inject-config
`;
