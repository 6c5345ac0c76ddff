// A database for one pull request, as a TypeScript program for a pipeline of your own (the PR
// database action, .github/ beside this file, needs no program): a fork of production as it is now,
// small and tagged DEV. `pulumi destroy` of the PR's stack deletes the fork and its data
// (onDestroy: "delete"): a closed PR leaves nothing running or billed.
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();
  const pr = config.requireNumber("prNumber");
  // The PR's repository, owner/name (GITHUB_REPOSITORY), goes into the fork's name: a running
  // fork with the same source and name is adopted, so two repositories forking one service as
  // pr-12 would take, and on close delete, each other's fork. pr-12.acme.shop reads back: a
  // GitHub owner has no ".".
  const repository = config.require("repository");
  if (!/^[A-Za-z0-9_-]+\/[A-Za-z0-9._-]+$/.test(repository))
    throw new Error(`config repository must be owner/name, as GITHUB_REPOSITORY is (acme/shop); got ${JSON.stringify(repository)}`);
  const name = `pr-${pr}.${repository.replace("/", ".")}`;
  const sourceServiceId = config.require("sourceServiceId");
  // A fork made for this PR in the console or with the tiger CLI: manage it instead of forking.
  const adoptServiceId = config.get("adoptServiceId");

  // Still called pr-<number>: the stack's name already makes its URN unique, and a stack of an
  // earlier copy (pr-12) renamed to pr-12.acme.shop keeps its fork, renamed in place.
  const db = new ServiceFork(`pr-${pr}`, {
    sourceServiceId,
    forkStrategy: "NOW",
    name,
    cpuMillis: 1000,
    memoryGbs: 4,
    environmentTag: "DEV",
    createTimeout: "45m",
    // Stopped at night (config paused: true, then `pulumi up`), data kept; `up` with false starts it.
    paused: config.getBoolean("paused") ?? false,
    // The PR's data goes with the PR: a stopped fork would still be billed for its storage.
    onDestroy: "delete",
    ...(adoptServiceId ? { adoptServiceId } : {}),
  });

  return {
    serviceId: db.serviceId,
    // Read back by a pipeline, so that a pause in a fresh checkout keeps the fork's source.
    sourceServiceId,
    // postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require, secret; `up` returns once
    // a login works. Read it with `pulumi stack output --show-secrets databaseUrl`, or hand it to
    // an app as a secret (see the README).
    databaseUrl: db.connectionUri,
  };
};
