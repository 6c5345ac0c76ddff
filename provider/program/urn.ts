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

/**
 * The names of the inputs the program made secret (`pulumi.secret`, config read as secret), or
 * nothing: handed to the provider as `__secretInputs`, since the engine tells a dynamic provider
 * no secret, so that its messages never print those values. A Promise, for the reason above.
 */
export function secretInputNames(args: object): Promise<string[] | undefined> {
  const checks = Object.entries(args).map(async ([name, value]) =>
    pulumi.Output.isInstance(value) && (await pulumi.isSecret(value as pulumi.Output<unknown>)) ? name : undefined,
  );
  return Promise.all(checks).then((names) => {
    const secret = names.filter((n): n is string => n !== undefined);
    return secret.length > 0 ? secret : undefined;
  });
}
