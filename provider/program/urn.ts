// Program side: the URN the engine will give a resource, computed in the user's program and handed
// to the provider as the input `__resourceUrn`. The provider is told only inputs, never the URN,
// and a move into a component keeps the name: only the URN tells two declarations apart.
import * as pulumi from "@pulumi/pulumi";

/**
 * The URN of a resource of `type` named `name` with `opts.parent`, as the engine makes it. A
 * Promise rather than an Output: an input that depended on the parent would make the resource
 * wait on its parent's children, itself among them.
 */
export function expectedUrn(name: string, type: string, opts: pulumi.CustomResourceOptions | undefined): Promise<string> {
  return new Promise((resolve) => {
    pulumi.createUrn(name, type, opts?.parent).apply((urn) => resolve(urn));
  });
}
