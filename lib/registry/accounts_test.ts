import assert from "node:assert/strict";
import { annotatedServiceAccounts, SERVICE_ACCOUNT_ANNOTATION } from "./accounts.ts";

Deno.test("annotatedServiceAccounts() reads all four spellings, trims, skips blanks, sorts", () => {
  assert.deepEqual(
    annotatedServiceAccounts(
      {
        [SERVICE_ACCOUNT_ANNOTATION]: " web , ,api",
        "alpha.istio.io/kubernetes-serviceaccounts": "legacy, web",
        "alpha.mesh.io/canonical-serviceaccounts": " other.domain/ns/x/sa/y ,  ",
        "alpha.istio.io/canonical-serviceaccounts": "a.b/ns/c/sa/d",
        "unrelated": "nope",
      },
      "cluster.local",
      "team",
    ),
    [
      "spiffe://a.b/ns/c/sa/d",
      "spiffe://cluster.local/ns/team/sa/api",
      "spiffe://cluster.local/ns/team/sa/legacy",
      "spiffe://cluster.local/ns/team/sa/web",
      "spiffe://other.domain/ns/x/sa/y",
    ],
  );
  // Blank values name nobody.
  assert.deepEqual(
    annotatedServiceAccounts(
      { [SERVICE_ACCOUNT_ANNOTATION]: "  ", "alpha.mesh.io/canonical-serviceaccounts": " , " },
      "cluster.local",
      "team",
    ),
    [],
  );
  assert.deepEqual(annotatedServiceAccounts(undefined, "cluster.local", "team"), []);
});
